//! The receipt in the detail screen (`R`): the final one of a resolved incident, or the
//! draft the chain holds so far for an open one.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::console::screens::detail::Detail;
use crate::console::state::status_word;
use crate::console::theme::Theme;
use crate::console::widgets::{from_line, pane_block};
use crate::engine::api::{IncidentStatus, IncidentView};

pub(crate) fn render(
    frame: &mut Frame,
    area: Rect,
    incident: &IncidentView,
    detail: &Detail,
    theme: &Theme,
) {
    let text = incident.receipt.as_deref().unwrap_or("");
    let lines = text
        .lines()
        .map(|line| Line::raw(line.to_string()))
        .collect();
    // An open incident's receipt is a draft: what the chain holds so far.
    let title = match incident.status {
        IncidentStatus::Resolved => "Receipt (R or Esc closes)".to_string(),
        status => format!(
            "Receipt so far: {} is {} (R or Esc closes)",
            incident.id,
            status_word(status)
        ),
    };
    let receipt = Paragraph::new(from_line(lines, detail.receipt_scroll))
        .wrap(Wrap { trim: false })
        .block(pane_block(&title, true, theme));
    frame.render_widget(receipt, area);
}
