//! Small drawing pieces every screen and overlay shares: the pane frame, the glyph and
//! word for each state, cutting text to a width, centring a box, and the window of rows
//! that keeps a selection in view.

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use crate::console::state::status_word;
use crate::console::theme::Theme;
use crate::engine::api::{IncidentStatus, ProposalKind, ProposalState};

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

/// Pipeline and monitor words come from the engine as text; unknown words still show,
/// with a neutral glyph.
pub(crate) fn word_with_glyph(word: &str, theme: &Theme) -> Span<'static> {
    let (glyph, style) = match word {
        "running" => ("●", theme.ok),
        "paused" => ("⏸", theme.warn),
        "idle" => ("○", theme.muted),
        "success" | "ok" | "pass" | "passed" => ("✓", theme.ok),
        "failed" | "fail" | "breach" | "error" | "unreachable" => ("✗", theme.crit),
        "warn" | "warning" | "degraded" => ("▲", theme.warn),
        "stale" => ("◌", theme.warn),
        _ => ("·", theme.muted),
    };
    Span::styled(format!("{glyph} {word}"), style)
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
