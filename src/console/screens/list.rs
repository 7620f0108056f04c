//! The incident list screen: the incidents (after the filter) over the monitors pane.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use crate::console::screens::monitors;
use crate::console::state::{App, ListPane};
use crate::console::symptoms;
use crate::console::theme::Theme;
use crate::console::widgets::{incident_status, pane_block, window_start, SELECTED};
use crate::engine::api::IncidentView;
use crate::sanitize;

/// A table pane's borders and header: a pane shorter than this plus one shows no row.
const TABLE_CHROME: u16 = 3;

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let monitor_rows = app.snapshot.monitors.len() as u16;
    let monitors_focused = app.list_pane == ListPane::Monitors;
    // The pane in focus gets the larger share; the incidents keep at least one row in
    // view whatever the size (Enter opens the selected one: it must be on screen), and a
    // monitors pane with no room for a row is not drawn.
    let share = if monitors_focused {
        area.height * 2 / 3
    } else {
        area.height / 3
    };
    let mut monitors_height = (monitor_rows + TABLE_CHROME)
        .min(share)
        .max(TABLE_CHROME + 1);
    if !monitors_focused {
        monitors_height = monitors_height.min(area.height.saturating_sub(TABLE_CHROME + 1));
    }
    if monitor_rows == 0 || monitors_height < TABLE_CHROME + 1 {
        monitors_height = 0;
    }
    let [incidents, monitors] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(monitors_height.min(area.height)),
    ])
    .areas(area);
    render_incident_list(frame, incidents, app);
    if monitors_height > 0 {
        monitors::render(frame, monitors, app);
    }
}

fn render_incident_list(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let incidents = app.visible_incidents();
    let mut title = format!("Incidents ({})", incidents.len());
    if !app.filter.is_empty() {
        title.push_str(&format!(
            " · filter {}",
            sanitize::for_terminal(&app.filter)
        ));
    }
    let block = pane_block(&title, app.list_pane == ListPane::Incidents, theme);
    if !app.connected {
        let waiting = Paragraph::new(Span::styled(
            "Waiting for the engine's first snapshot…",
            theme.muted,
        ))
        .block(block);
        frame.render_widget(waiting, area);
        return;
    }
    if incidents.is_empty() {
        let text = if app.snapshot.incidents.is_empty() {
            "✓ No incidents. Monitors are watching."
        } else {
            "No incident matches the filter (Esc clears it)."
        };
        frame.render_widget(
            Paragraph::new(Span::styled(text, theme.muted)).block(block),
            area,
        );
        return;
    }
    let height = area.height.saturating_sub(TABLE_CHROME) as usize;
    let selected = app.selected_index().unwrap_or(0);
    let start = window_start(selected, height);
    let rows = incidents
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(index, incident)| incident_row(incident, index == selected, theme));
    // `sym`: how many breaches downstream joined the incident rather than opening their own.
    let header =
        Row::new(["", "id", "status", "sym", "table", "title", "opened"]).style(theme.muted);
    let table = Table::new(
        rows,
        [
            Constraint::Length(1),
            Constraint::Length(8),
            Constraint::Length(11),
            Constraint::Length(4),
            Constraint::Length(18),
            Constraint::Fill(1),
            Constraint::Length(6),
        ],
    )
    .header(header)
    .block(block);
    frame.render_widget(table, area);
}

fn incident_row<'a>(incident: &'a IncidentView, selected: bool, theme: &Theme) -> Row<'a> {
    let marker = if selected { SELECTED } else { " " };
    let row = Row::new(vec![
        Cell::from(marker),
        Cell::from(incident.id.as_str()),
        Cell::from(incident_status(incident.status, theme)),
        Cell::from(symptoms::count(incident)),
        Cell::from(incident.table.as_str()),
        Cell::from(incident.title.as_str()),
        // The time of day is what matters on call; the date is in the detail.
        Cell::from(
            incident
                .opened_at
                .get(11..16)
                .unwrap_or(&incident.opened_at),
        ),
    ]);
    if selected {
        row.style(theme.selection)
    } else {
        row
    }
}
