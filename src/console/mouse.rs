//! The mouse, for those who want it: off unless `[console] mouse = true` or `:mouse on`,
//! everything works from the keyboard. Clicks and the wheel only (no motion reports,
//! which would stream over SSH while the pointer moves): a click selects an incident
//! (again: opens it) or a monitor and focuses its pane, sorts the list by the column
//! whose header it lands on, focuses a detail pane, selects a proposal; the wheel
//! scrolls what is under the pointer.

use std::io::{self, Write};

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::console::listing::SortColumn;
use crate::console::screens::detail::Pane;
use crate::console::screens::list::{self, ListPane};
use crate::console::state::{self, Action, App, Overlay, Screen};
use crate::console::widgets::window_start;

/// Rows a turn of the wheel moves.
const WHEEL: usize = 3;

/// Button presses and the wheel (1000), in SGR coordinates (1006), and no more.
const ENABLE: &str = "\u{1b}[?1000h\u{1b}[?1006h";
const DISABLE: &str = "\u{1b}[?1006l\u{1b}[?1000l";

/// Turns the terminal's mouse reports on or off when `wanted` differs from `on`.
pub fn sync(wanted: bool, on: &mut bool) -> io::Result<()> {
    if wanted != *on {
        let mut out = io::stdout();
        out.write_all(if wanted { ENABLE } else { DISABLE }.as_bytes())?;
        out.flush()?;
        *on = wanted;
    }
    Ok(())
}

/// A mouse report worth a redraw: a press or the wheel, while the mouse is on.
pub fn matters(app: &App, event: &MouseEvent) -> bool {
    app.mouse
        && matches!(
            event.kind,
            MouseEventKind::Down(MouseButton::Left)
                | MouseEventKind::ScrollUp
                | MouseEventKind::ScrollDown
        )
}

/// What a click or a turn of the wheel does where it lands, as the last frame drew it.
pub fn handle(app: &mut App, event: MouseEvent) {
    if !matters(app, &event) {
        return;
    }
    let at = Position::new(event.column, event.row);
    let wheel = match event.kind {
        MouseEventKind::ScrollUp => Some(Action::Up),
        MouseEventKind::ScrollDown => Some(Action::Down),
        _ => None,
    };
    if let Some(direction) = wheel {
        // The wheel moves in the pane under it (an overlay scrolls itself).
        if matches!(app.overlay, Overlay::None) {
            match app.screen {
                Screen::List => {
                    list_pane_at(app, at);
                }
                Screen::Detail => {
                    focus_pane_at(app, at);
                }
            }
        }
        for _ in 0..WHEEL {
            state::update(app, direction.clone());
        }
        return;
    }
    if !matches!(app.overlay, Overlay::None) {
        return;
    }
    match app.screen {
        Screen::List => click_list(app, at),
        Screen::Detail => click_detail(app, at),
    }
}

/// Focuses the list's pane under `at` (the incidents or the monitors), if one is.
fn list_pane_at(app: &mut App, at: Position) -> Option<ListPane> {
    let drawn = &app.drawn;
    let pane = if grown(drawn.monitor_rows.get()).contains(at) {
        ListPane::Monitors
    } else if grown(drawn.list_rows.get()).contains(at) {
        ListPane::Incidents
    } else {
        return None;
    };
    app.list.pane = pane;
    Some(pane)
}

fn click_list(app: &mut App, at: Position) {
    if app.drawn.list_header.get().contains(at) {
        if let Some(column) = header_column(app, at.x) {
            app.list.pane = ListPane::Incidents;
            list::sort_by(app, column);
        }
        return;
    }
    let Some(pane) = list_pane_at(app, at) else {
        return;
    };
    match pane {
        ListPane::Monitors => {
            let rows = app.drawn.monitor_rows.get();
            if !rows.contains(at) {
                return;
            }
            let index = app.drawn.monitor_start.get() + usize::from(at.y - rows.y);
            if index < app.list.monitors.order.len() {
                app.list.monitors.selected = index;
            }
        }
        ListPane::Incidents => {
            let rows = app.drawn.list_rows.get();
            if !rows.contains(at) {
                return;
            }
            let index = app.drawn.list_start.get() + usize::from(at.y - rows.y);
            let Some(id) = app.visible_incidents().get(index).map(|i| i.id.clone()) else {
                return;
            };
            if app.selected_incident.as_deref() == Some(id.as_str()) {
                state::update(app, Action::Open);
            } else {
                app.selected_incident = Some(id);
            }
        }
    }
}

/// The sort column whose header is at column `x` of the screen: the list's columns as
/// the last frame laid them out, one apart, the marker's first.
fn header_column(app: &App, x: u16) -> Option<SortColumn> {
    let mut left = app.drawn.list_header.get().x;
    for (i, width) in app.drawn.list_columns.get().into_iter().enumerate() {
        if width == 0 {
            continue;
        }
        if x >= left && x < left + width {
            return i.checked_sub(1).map(|i| SortColumn::ALL[i]);
        }
        left += width + 1;
    }
    None
}

/// Focuses the pane under `at`, if one is; its area inside the borders.
fn focus_pane_at(app: &mut App, at: Position) -> Option<(Pane, Rect)> {
    let detail = app.detail.as_mut()?;
    if detail.receipt_open || detail.timeline_open {
        return None;
    }
    let (pane, area) = [Pane::Cause, Pane::Tree, Pane::Proposals, Pane::Body]
        .into_iter()
        .map(|pane| (pane, app.drawn.pane(pane)))
        .find(|(pane, area)| {
            // A zoomed detail shows one pane (the others are noted as not drawn).
            (!detail.zoomed || *pane == detail.focus) && grown(*area).contains(at)
        })?;
    detail.focus = pane;
    Some((pane, area))
}

fn click_detail(app: &mut App, at: Position) {
    let Some((pane, area)) = focus_pane_at(app, at) else {
        return;
    };
    if pane != Pane::Proposals || !area.contains(at) {
        return;
    }
    let count = app.open_incident().map_or(0, |i| i.proposals.len());
    let Some(detail) = app.detail.as_mut() else {
        return;
    };
    // The proposals list keeps the selection in view the way the view draws it.
    let start = window_start(detail.proposal, usize::from(area.height));
    let index = start + usize::from(at.y - area.y);
    if index < count && index != detail.proposal {
        detail.proposal = index;
        detail.body_scroll = 0;
    }
}

/// An area with its borders again: a click on a pane's border focuses it too.
fn grown(inner: Rect) -> Rect {
    if inner.width == 0 && inner.height == 0 {
        return inner;
    }
    Rect {
        x: inner.x.saturating_sub(1),
        y: inner.y.saturating_sub(1),
        width: inner.width + 2,
        height: inner.height + 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::update;
    use crate::console::theme::Theme;
    use crossterm::event::KeyModifiers;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn draw(app: &App) {
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
        terminal
            .draw(|frame| crate::console::view::render(frame, app))
            .unwrap();
    }

    fn at(kind: MouseEventKind, column: u16, row: u16) -> Action {
        Action::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    }

    fn click(column: u16, row: u16) -> Action {
        at(MouseEventKind::Down(MouseButton::Left), column, row)
    }

    /// Off by default; on, a click selects an incident and a second opens it, a click
    /// focuses a pane and picks a proposal, the wheel scrolls the pane under it.
    #[test]
    fn clicks_and_the_wheel_once_the_mouse_is_on() {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        draw(&app);
        // Rows: the title, the list's border and its header, then INC-7 and INC-6.
        update(&mut app, click(10, 4));
        assert_eq!(app.selected_incident.as_deref(), Some("INC-7"), "off");
        app.mouse = true;
        update(&mut app, click(10, 4));
        assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));
        update(&mut app, click(10, 3));
        assert_eq!(app.selected_incident.as_deref(), Some("INC-7"));
        assert_eq!(app.screen, Screen::List);
        update(&mut app, click(10, 3));
        assert_eq!(app.screen, Screen::Detail);
        assert_eq!(app.open_incident().unwrap().id, "INC-7");

        draw(&app);
        let detail = || app.detail.as_ref().unwrap();
        assert_eq!(detail().focus, Pane::Proposals);
        let proposals = app.drawn.pane(Pane::Proposals);
        update(&mut app, click(proposals.x + 5, proposals.y + 1));
        assert_eq!(app.detail.as_ref().unwrap().proposal, 1);
        let cause = app.drawn.pane(Pane::Cause);
        update(
            &mut app,
            at(MouseEventKind::ScrollDown, cause.x + 2, cause.y + 2),
        );
        let detail = app.detail.as_ref().unwrap();
        assert_eq!(detail.focus, Pane::Cause);
        assert_eq!(detail.cause_scroll, WHEEL);

        // Zoomed, only the pane drawn takes clicks: where the tree was is the cause.
        update(&mut app, Action::Zoom);
        let tree = app.drawn.pane(Pane::Tree);
        draw(&app);
        update(&mut app, click(tree.x + 2, tree.y + 1));
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
    }

    /// On the list, a click on a monitor selects it and focuses the monitors pane; one
    /// on an incident focuses the incidents again; the wheel moves in the pane under it;
    /// a click on a column's header sorts by it, again the other way round.
    #[test]
    fn the_list_panes_and_headers_take_clicks() {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        app.mouse = true;
        draw(&app);
        let monitors = app.drawn.monitor_rows.get();
        assert!(monitors.height >= 2, "{monitors:?}");
        update(&mut app, click(monitors.x + 3, monitors.y + 1));
        assert_eq!(app.list.pane, ListPane::Monitors);
        assert_eq!(app.list.monitors.selected, 1);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-7"));
        draw(&app);
        update(
            &mut app,
            at(MouseEventKind::ScrollUp, monitors.x + 3, monitors.y),
        );
        assert_eq!(app.list.monitors.selected, 0);
        // The wheel over the incidents moves there, and Enter then opens from there.
        let rows = app.drawn.list_rows.get();
        update(&mut app, at(MouseEventKind::ScrollDown, rows.x + 3, rows.y));
        assert_eq!(app.list.pane, ListPane::Incidents);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));
        assert_eq!(app.list.monitors.selected, 0);
        update(&mut app, click(monitors.x + 3, monitors.y));
        assert_eq!(app.list.pane, ListPane::Monitors);
        update(&mut app, click(rows.x + 3, rows.y));
        assert_eq!(app.list.pane, ListPane::Incidents);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-7"));
        assert_eq!(app.screen, Screen::List);

        // The header: past the marker's column and a gap, the id's.
        let header = app.drawn.list_header.get();
        assert_eq!(header.y + 1, rows.y);
        update(&mut app, click(header.x + 2, header.y));
        assert_eq!(app.list.view.sort, Some((SortColumn::Id, false)));
        assert_eq!(app.selected_incident.as_deref(), Some("INC-7"), "kept");
        draw(&app);
        update(&mut app, click(header.x + 2, header.y));
        assert_eq!(app.list.view.sort, Some((SortColumn::Id, true)));
        let title = header.x
            + 2
            + app.drawn.list_columns.get()[1..6]
                .iter()
                .map(|w| w + 1)
                .sum::<u16>();
        update(&mut app, click(title, header.y));
        assert_eq!(app.list.view.sort, Some((SortColumn::Title, false)));
        // The marker's column sorts nothing.
        update(&mut app, click(header.x, header.y));
        assert_eq!(app.list.view.sort, Some((SortColumn::Title, false)));
        assert_eq!(app.screen, Screen::List);
    }
}
