//! The timeline pane (`T`): an incident's chain records in order, one line each, as
//! the engine reads them from the chain: when, which record, what happened, who, and
//! what. `y` copies it as Markdown, the start of a postmortem.

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::console::help::wrap;
use crate::console::screens::detail::Detail;
use crate::console::state::App;
use crate::console::widgets::{cut, cut_spans, fit, pane_block, width_of};
use crate::engine::api::{IncidentView, TimelineEntry};

/// Widest a `who` column gets; longer names are cut with … (whole in the Markdown).
const WHO_WIDTH: usize = 22;
/// The widest step word ("dispatched", "diagnosed", "withdrawn").
const STEP_WIDTH: usize = 10;

/// When, as people read it: the time, with the day when the timeline spans days.
fn when(entry: &TimelineEntry, span_days: bool) -> String {
    let at = entry.at.naive();
    if span_days {
        at.format("%a %H:%M").to_string()
    } else {
        at.format("%H:%M").to_string()
    }
}

fn spans_days(timeline: &[TimelineEntry]) -> bool {
    let day = |e: &TimelineEntry| e.at.naive().date();
    timeline.first().map(day) != timeline.last().map(day)
}

/// Each record as lines `width` columns wide: when, which record, the step and who,
/// then what happened, wrapped under itself (under them all when the screen is narrow).
pub fn entries(app: &App, incident: &IncidentView, width: usize) -> Vec<Vec<Line<'static>>> {
    let theme = &app.theme;
    let days = spans_days(&incident.timeline);
    let who_width = incident
        .timeline
        .iter()
        .map(|e| width_of(&e.who))
        .max()
        .unwrap_or(0)
        .min(WHO_WIDTH);
    // A column's text cut with … to its width and padded to it.
    let column = |text: &str, width: usize| fit(&cut(text, width), width);
    incident
        .timeline
        .iter()
        .map(|entry| {
            let head = vec![
                Span::styled(format!("{} ", when(entry, days)), theme.muted),
                Span::styled(format!("#{:<4} ", entry.seq), theme.muted),
                Span::styled(
                    format!("{} ", column(&entry.step, STEP_WIDTH)),
                    theme.accent.add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!("{}  ", column(&entry.who, who_width)), theme.title),
            ];
            let indent = Line::from(head.clone()).width();
            let (room, hang) = if width >= indent + 24 {
                (width - indent, indent)
            } else {
                (width.saturating_sub(4).max(1), 4)
            };
            let mut pieces = wrap(&entry.what, room).into_iter();
            let mut lines = Vec::new();
            if hang == indent {
                let mut first = head;
                first.push(Span::raw(pieces.next().unwrap_or_default()));
                lines.push(Line::from(first));
            } else {
                // Narrow: the head alone, its columns unpadded, cut with … to the width.
                let step = theme.accent.add_modifier(Modifier::BOLD);
                let head = vec![
                    Span::styled(
                        format!("{} #{} ", when(entry, days), entry.seq),
                        theme.muted,
                    ),
                    Span::styled(format!("{} ", entry.step), step),
                    Span::styled(entry.who.clone(), theme.title),
                ];
                lines.push(Line::from(cut_spans(head, width)));
            }
            lines.extend(pieces.map(|piece| Line::raw(format!("{:hang$}{piece}", ""))));
            lines
        })
        .collect()
}

pub fn render(frame: &mut Frame, area: Rect, app: &App, incident: &IncidentView, detail: &Detail) {
    let theme = &app.theme;
    let title = format!(
        "Timeline: {}, {} chain records (T or Esc closes, y copies)",
        incident.id,
        incident.timeline.len()
    );
    // The borders, and the focus marker and spaces around the title, take six columns.
    let title = cut(&title, usize::from(area.width.saturating_sub(6)));
    let block = pane_block(&title, true, theme);
    if incident.timeline.is_empty() {
        let empty = Paragraph::new(Span::styled(
            "Nothing about this incident is on the chain yet.",
            theme.muted,
        ))
        .wrap(Wrap { trim: true });
        frame.render_widget(empty.block(block), area);
        return;
    }
    let inner = block.inner(area);
    // Scrolled by record, as the receipt is by line.
    let entries = entries(app, incident, inner.width as usize);
    let start = detail.timeline_scroll.min(entries.len().saturating_sub(1));
    let shown: Vec<Line> = entries
        .into_iter()
        .skip(start)
        .flatten()
        .take(inner.height as usize)
        .collect();
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(shown), inner);
}

/// The timeline as Markdown, for a postmortem: a heading and one item per record.
pub fn markdown(incident: &IncidentView) -> String {
    let mut md = format!("## Timeline of {}: {}\n\n", incident.id, incident.title);
    for entry in &incident.timeline {
        md.push_str(&format!(
            "- {} (chain #{}) **{}**, {}: {}\n",
            entry.at, entry.seq, entry.step, entry.who, entry.what
        ));
    }
    md
}
