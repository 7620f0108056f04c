//! The monitors pane under the incident list: each check's verdict, figure, band and
//! health, breaches first. Tab focuses it; it scrolls like the list and says how many
//! there are and which rows are in view, so a thousand monitors are all reachable.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row};
use ratatui::Frame;

use crate::console::action::step;
use crate::console::screens::list::ListPane;
use crate::console::state::App;
use crate::console::widgets::{
    column_widths, cut, cut_spans, header_row, health, pane_block, shown, sized_table, verdict,
    width_of, window_start, Column, SELECTED,
};
use crate::engine::api::{MonitorHealth, MonitorView, VerdictKind};

/// The pane's state: its order of the snapshot's monitors and the one selected.
#[derive(Debug, Clone, Default)]
pub struct MonitorsPane {
    /// The monitors in the order the pane shows them (indices into the snapshot's),
    /// breaches first; found when a snapshot arrives.
    pub order: Vec<usize>,
    /// The selected monitor, as a position in `order`.
    pub selected: usize,
}

impl MonitorsPane {
    /// Follows a new snapshot: the order anew, the selection kept in range.
    pub fn follow(&mut self, monitors: &[MonitorView]) {
        self.order = order(monitors);
        self.selected = self.selected.min(self.order.len().saturating_sub(1));
    }

    pub fn move_by(&mut self, delta: isize) {
        self.selected = step(self.selected, delta, self.order.len());
    }
}

/// The order the pane shows the monitors in, as indices into `monitors`: breaches
/// first, then checks that could not run, then warnings, then the rest; the engine's
/// order within each.
pub fn order(monitors: &[MonitorView]) -> Vec<usize> {
    let rank = |m: &MonitorView| {
        if m.verdict.is_breach() && m.verdict != VerdictKind::Warn {
            0
        } else if m.health != MonitorHealth::Ok {
            1
        } else if m.verdict == VerdictKind::Warn {
            2
        } else {
            3
        }
    };
    let mut order: Vec<usize> = (0..monitors.len()).collect();
    order.sort_by_key(|&i| rank(&monitors[i]));
    order
}

/// How many of `monitors` breach (a warning is not a breach here).
fn breaching(monitors: &[MonitorView]) -> usize {
    monitors
        .iter()
        .filter(|m| m.verdict.is_breach() && m.verdict != VerdictKind::Warn)
        .count()
}

const HEADER: [&str; 6] = [
    "monitor", "check", "verdict", "observed", "expected", "health",
];

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let monitors = &app.snapshot.monitors;
    let focused = app.list.pane == ListPane::Monitors;
    let height = area.height.saturating_sub(3) as usize;
    let selected = app.list.monitors.selected;
    let start = if focused {
        window_start(selected, height)
    } else {
        0
    };
    // Below the top border and the header: what a page is in this pane.
    let rows = crate::console::drawn::inner(area);
    app.drawn.monitor_rows.set(Rect {
        y: rows.y + 1,
        height: rows.height.saturating_sub(1),
        ..rows
    });
    app.drawn.monitor_start.set(start);
    let in_view: Vec<&MonitorView> = app
        .list
        .monitors
        .order
        .iter()
        .skip(start)
        .take(height)
        .filter_map(|&i| monitors.get(i))
        .collect();

    let title = match breaching(monitors) {
        0 => format!("Monitors ({})", monitors.len()),
        n => format!("Monitors ({} · {n} breaching)", monitors.len()),
    };
    let mut block = pane_block(&title, focused, theme);
    if in_view.len() < monitors.len() && !in_view.is_empty() {
        block = block.title_bottom(
            Line::styled(
                format!(
                    " {}–{} of {} (Tab, j k) ",
                    start + 1,
                    start + in_view.len(),
                    monitors.len()
                ),
                theme.muted,
            )
            .right_aligned(),
        );
    }

    // As the engine's poll counted it: nothing is worked out here.
    if !app.snapshot.poll_costs.is_empty() {
        let costs: Vec<String> = app
            .snapshot
            .poll_costs
            .iter()
            .map(|c| format!("{} {}", c.warehouse, c.summary))
            .collect();
        block = block.title_bottom(
            Line::styled(format!(" last poll: {} ", costs.join("; ")), theme.muted).left_aligned(),
        );
    }

    // Sized to every monitor, not just the rows in view, so the columns stay put as
    // the pane scrolls.
    let widest = |field: fn(&MonitorView) -> &str, header: &str| {
        monitors
            .iter()
            .map(|m| width_of(field(m)))
            .chain([width_of(header)])
            .max()
            .unwrap_or(0)
    };
    let inner = area.width.saturating_sub(2);
    let widths = column_widths(
        &[
            Column::new(1, 1),
            Column::new(8, widest(|m| &m.name, HEADER[0])),
            Column::new(5, widest(|m| &m.check, HEADER[1])).dropped(3),
            // "· learning", "✗ changed": the longest verdicts with their glyph.
            Column::new(9, 10),
            Column::growing(8, widest(|m| &m.observed, HEADER[3])),
            Column::new(8, widest(|m| &m.expected, HEADER[4])).dropped(2),
            // "✗ unreachable".
            Column::new(6, 13).dropped(4),
        ],
        inner,
    );
    let w = |i: usize| widths[i] as usize;

    let rows = in_view.iter().enumerate().map(|(at, monitor)| {
        let is_selected = focused && start + at == selected;
        let row = Row::new(shown(
            [
                Cell::from(if is_selected { SELECTED } else { " " }),
                Cell::from(cut(&monitor.name, w(1))),
                Cell::from(cut(&monitor.check, w(2))),
                Cell::from(Line::from(cut_spans(
                    vec![verdict(monitor.verdict, theme)],
                    w(3),
                ))),
                Cell::from(cut(&observed(monitor), w(4))),
                Cell::from(cut(&monitor.expected, w(5))),
                Cell::from(Line::from(cut_spans(
                    vec![health(monitor.health, theme)],
                    w(6),
                ))),
            ],
            &widths,
        ));
        if is_selected {
            row.style(theme.selection)
        } else {
            row
        }
    });
    if monitors.is_empty() {
        frame.render_widget(Paragraph::new("").block(block), area);
        return;
    }
    let header = header_row([""].into_iter().chain(HEADER), &widths, theme);
    let table = sized_table(rows, &widths).header(header).block(block);
    frame.render_widget(table, area);
}

/// The figure, after why the monitor pages nobody now and until when (a snooze, a
/// maintenance window), when it does not: a glyph and words, never colour alone.
fn observed(monitor: &MonitorView) -> String {
    let figure = crate::sanitize::for_terminal(&monitor.observed);
    match &monitor.quiet {
        Some(quiet) => format!(
            "{figure} ⏸ quiet until {} ({})",
            quiet.until.naive().format("%m-%d %H:%M"),
            crate::sanitize::for_terminal(&quiet.why)
        ),
        None => figure.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use crate::console::test_support::{draw, drawn_in, sample_app, style_of};

    /// What the engine's last poll cost each warehouse, as the engine says it.
    #[test]
    fn the_pane_says_what_the_last_poll_cost_each_warehouse() {
        use crate::engine::api::PollCost;
        let mut app = sample_app(false);
        app.snapshot.poll_costs = vec![PollCost {
            warehouse: "snow".into(),
            queries: 14,
            sessions: 1,
            scanned_bytes: None,
            max_queries_per_poll: Some(14),
            guard_reached: true,
            summary: "14 queries, 1 session, scanned not reported, stopped at \
                      max_queries_per_poll = 14"
                .into(),
        }];
        let screen = draw(&app, 120, 40);
        assert!(
            screen.contains(
                "last poll: snow 14 queries, 1 session, scanned not reported, stopped at max_queries_per_poll = 14"
            ),
            "{screen}"
        );
    }

    /// Low, high, late and changed are breaches: the crit style and a ✗, as the engine
    /// words them, where they used to get the neutral grey dot.
    #[test]
    fn a_breached_monitor_is_drawn_as_a_breach() {
        use crate::engine::api::VerdictKind;
        let mut app = sample_app(false);
        let theme = app.theme.clone();
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("✗ low"), "{screen}");
        assert!(screen.contains("✗ changed"), "{screen}");
        assert!(drawn_in(style_of(&app, 120, 40, "✗ low"), theme.crit));
        assert!(drawn_in(style_of(&app, 120, 40, "✗ changed"), theme.crit));
        assert!(drawn_in(style_of(&app, 120, 40, "✓ ok "), theme.ok));
        for (kind, word) in [(VerdictKind::High, "✗ high"), (VerdictKind::Late, "✗ late")] {
            app.snapshot.monitors[0].verdict = kind;
            assert!(
                drawn_in(style_of(&app, 120, 40, word), theme.crit),
                "{word}"
            );
        }
    }
}
