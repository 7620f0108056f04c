//! The monitors pane under the incident list: each check's verdict, figure, band and
//! health.

use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row, Table};
use ratatui::Frame;

use crate::console::state::App;
use crate::console::widgets::{health, pane_block, verdict};

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let height = area.height.saturating_sub(3) as usize;
    let rows = app.snapshot.monitors.iter().take(height).map(|monitor| {
        Row::new(vec![
            Cell::from(monitor.name.as_str()),
            Cell::from(monitor.check.as_str()),
            Cell::from(verdict(monitor.verdict, theme)),
            Cell::from(monitor.observed.as_str()),
            Cell::from(monitor.expected.as_str()),
            Cell::from(health(monitor.health, theme)),
        ])
    });
    let header = Row::new([
        "monitor", "check", "verdict", "observed", "expected", "health",
    ])
    .style(theme.muted);
    let table = Table::new(
        rows,
        [
            Constraint::Fill(2),
            Constraint::Length(10),
            // "· learning", "✗ changed": the longest verdicts with their glyph.
            Constraint::Length(11),
            Constraint::Fill(2),
            Constraint::Fill(2),
            Constraint::Length(14),
        ],
    )
    .header(header)
    .block(pane_block("Monitors", false, theme));
    frame.render_widget(table, area);
}
