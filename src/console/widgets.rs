//! Small drawing pieces every screen and overlay shares: the pane frame, the glyph and
//! word for each state, cutting text to a width, centring a box, and the window of rows
//! that keeps a selection in view.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use crate::console::state::status_word;
use crate::console::theme::Theme;
use crate::engine::api::{
    IncidentStatus, MonitorHealth, PipelineState, ProposalKind, ProposalState, RunStatus,
    VerdictKind,
};

pub(crate) const SELECTED: &str = "▶";
/// Hash characters shown in lists; the reason modal shows the whole hash.
pub(crate) const SHORT_HASH: usize = 12;

pub(crate) fn short(hash: &str) -> &str {
    hash.get(..SHORT_HASH).unwrap_or(hash)
}

/// Cut or pad `text` to exactly `width` terminal columns.
pub(crate) fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let mut buffer = [0u8; 4];
    for c in text.chars() {
        let c_width = Span::raw(&*c.encode_utf8(&mut buffer)).width();
        if used + c_width > width {
            break;
        }
        out.push(c);
        used += c_width;
    }
    out.extend(std::iter::repeat_n(' ', width - used));
    out
}

pub(crate) fn pane_block<'a>(title: &'a str, focused: bool, theme: &Theme) -> Block<'a> {
    // Focus shows as a marker in the title and a heavier border, not only a colour.
    let (marker, border) = if focused {
        ("▸ ", theme.accent.add_modifier(Modifier::BOLD))
    } else {
        ("", theme.border)
    };
    let title_style = if focused {
        theme.title.patch(theme.accent)
    } else {
        theme.title
    };
    let block = Block::bordered()
        .border_style(border)
        .title(Line::from(vec![Span::styled(
            format!(" {marker}{title} "),
            title_style,
        )]));
    if focused {
        block.border_type(ratatui::widgets::BorderType::Thick)
    } else {
        block
    }
}

pub(crate) fn incident_status(status: IncidentStatus, theme: &Theme) -> Span<'static> {
    let (glyph, style) = match status {
        IncidentStatus::Open => ("●", theme.crit),
        IncidentStatus::Verifying => ("◐", theme.warn),
        IncidentStatus::Resolved => ("✓", theme.ok),
    };
    Span::styled(format!("{glyph} {}", status_word(status)), style)
}

pub(crate) fn proposal_state(state: ProposalState, theme: &Theme) -> Span<'static> {
    let (text, style) = match state {
        ProposalState::Pending => ("○ pending", theme.warn),
        ProposalState::Approved => ("✓ approved", theme.ok),
        ProposalState::Rejected => ("✗ rejected", theme.crit),
        ProposalState::Forwarded => ("→ forwarded", theme.accent),
        ProposalState::RolledBack => ("↶ rolled back", theme.warn),
        ProposalState::Completed => ("✓ completed", theme.muted),
        ProposalState::Expired => ("⌛ expired", theme.crit),
        ProposalState::Withdrawn => ("– withdrawn", theme.muted),
    };
    Span::styled(text, style)
}

pub(crate) fn kind_word(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Hold => "hold",
        ProposalKind::Diff => "diff",
        ProposalKind::Note => "note",
        ProposalKind::Backfill => "backfill",
    }
}

/// A monitor's verdict on its latest figure. A breach (low, high, late, changed) is
/// drawn as one: the crit style and a ✗, beside the word that says which way.
pub(crate) fn verdict(verdict: VerdictKind, theme: &Theme) -> Span<'static> {
    let (glyph, style) = verdict_glyph(verdict, theme);
    Span::styled(format!("{glyph} {}", verdict.as_str()), style)
}

/// The glyph and style of a verdict, wherever it is drawn.
pub(crate) fn verdict_glyph(verdict: VerdictKind, theme: &Theme) -> (&'static str, Style) {
    match verdict {
        VerdictKind::Ok => ("✓", theme.ok),
        VerdictKind::Low | VerdictKind::High | VerdictKind::Late | VerdictKind::Changed => {
            ("✗", theme.crit)
        }
        VerdictKind::Warn => ("▲", theme.warn),
        VerdictKind::Learning => ("·", theme.muted),
        VerdictKind::Unknown => ("?", theme.muted),
    }
}

/// Whether a monitor's check could run at all: dataward's health, not the data's.
pub(crate) fn health(health: MonitorHealth, theme: &Theme) -> Span<'static> {
    let (glyph, style) = match health {
        MonitorHealth::Ok => ("✓", theme.ok),
        MonitorHealth::Unreachable | MonitorHealth::Error => ("✗", theme.crit),
        MonitorHealth::Stale => ("◌", theme.warn),
        MonitorHealth::Unknown => ("?", theme.muted),
    };
    Span::styled(format!("{glyph} {}", health.as_str()), style)
}

/// A pipeline's schedule, as its orchestrator reports it.
pub(crate) fn pipeline_state(state: PipelineState, theme: &Theme) -> Span<'static> {
    let (glyph, style) = match state {
        PipelineState::Running => ("●", theme.ok),
        PipelineState::Paused => ("⏸", theme.warn),
        PipelineState::Scheduled => ("○", theme.muted),
        PipelineState::Unknown => ("?", theme.muted),
    };
    Span::styled(format!("{glyph} {}", state.as_str()), style)
}

/// A run's outcome: a pipeline's last run, or the run queued for an incident.
pub(crate) fn run_status(status: RunStatus, theme: &Theme) -> Span<'static> {
    let (text, style) = match status {
        RunStatus::Success => ("✓ success", theme.ok),
        RunStatus::Failed => ("✗ failed", theme.crit),
        RunStatus::Queued => ("… queued", theme.accent),
        RunStatus::Cancelled => ("– cancelled", theme.warn),
        RunStatus::NeverRun => ("○ never run", theme.muted),
        RunStatus::Unknown => ("? unknown", theme.muted),
    };
    Span::styled(text, style)
}

pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// The lines from the `scroll`-th on (the last one at most). Wrapped panes scroll by
/// line, as the diff scrolls by row: counting wrapped rows would need the width the
/// state does not know, and a count that fell short would leave the end out of reach.
pub(crate) fn from_line(mut lines: Vec<Line<'static>>, scroll: usize) -> Vec<Line<'static>> {
    let start = scroll.min(lines.len().saturating_sub(1));
    lines.split_off(start)
}

/// The first row to show so that `selected` stays in a window of `height` rows.
pub(crate) fn window_start(selected: usize, height: usize) -> usize {
    if height == 0 {
        0
    } else {
        (selected + 1).saturating_sub(height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_cuts_and_pads_by_display_width() {
        assert_eq!(fit("abc", 5), "abc  ");
        assert_eq!(fit("abcdef", 3), "abc");
        assert_eq!(fit("✓ok", 2), "✓o");
    }
}
