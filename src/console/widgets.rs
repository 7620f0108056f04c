//! Small drawing pieces every screen and overlay shares: the pane frame, the glyph and
//! word for each state, cutting text to a width, centring a box, and the window of rows
//! that keeps a selection in view.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Row, Table};

use crate::console::state::status_word;
use crate::console::theme::Theme;
use crate::engine::api::{
    IncidentStatus, MonitorHealth, PipelineState, ProposalKind, ProposalState, RunStatus,
    Timestamp, VerdictKind,
};

pub(crate) const SELECTED: &str = "▶";
/// Hash characters shown in lists; the reason modal shows the whole hash.
pub(crate) const SHORT_HASH: usize = 12;

/// A time as people on call read it beside the engine's `now`: the time of day on the
/// same day, the date with it on any other.
pub(crate) fn time_of_day(at: Timestamp, now: Timestamp) -> String {
    if at.naive().date() == now.naive().date() {
        at.hour_minute()
    } else {
        at.naive().format("%Y-%m-%d %H:%M").to_string()
    }
}

/// The engine's time on the title bar: the day of the week and the time of day;
/// nothing before an engine's snapshot filled it in.
pub(crate) fn clock_face(now: Timestamp) -> String {
    if now == Timestamp::default() {
        return String::new();
    }
    now.naive().format("%a %H:%M").to_string()
}

pub(crate) fn short(hash: &str) -> &str {
    hash.get(..SHORT_HASH).unwrap_or(hash)
}

/// Display columns `text` takes.
pub(crate) fn width_of(text: &str) -> usize {
    Span::raw(text).width()
}

/// `text` in at most `width` columns: whole when it fits, else cut and ended with `…`,
/// so a cut name or number never reads as a whole one.
pub(crate) fn cut(text: &str, width: usize) -> String {
    if width_of(text) <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut buffer = [0u8; 4];
    for c in text.chars() {
        let c_width = Span::raw(&*c.encode_utf8(&mut buffer)).width();
        if used + c_width > width - 1 {
            break;
        }
        out.push(c);
        used += c_width;
    }
    out.push('…');
    out
}

/// Spans in at most `width` columns, cut as [`cut`] cuts text: the span where the room
/// ends keeps its style and ends with `…`; the ones after it go.
pub(crate) fn cut_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let total: usize = spans.iter().map(Span::width).sum();
    if total <= width {
        return spans;
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let span_width = span.width();
        // The last column is kept for the `…`.
        if used + span_width < width {
            used += span_width;
            out.push(span);
            continue;
        }
        let room = width - used;
        out.push(Span::styled(
            cut(&format!("{}…", span.content), room),
            span.style,
        ));
        break;
    }
    out
}

/// One table column: never narrower than `min`, as wide as its widest cell (`want`)
/// when there is room, and, for the one that `grow`s, whatever is left after that.
/// When even the minimums do not fit, the column with the highest `drop` goes first
/// (0: never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Column {
    pub min: u16,
    pub want: u16,
    pub grow: bool,
    pub drop: u8,
}

impl Column {
    /// A column `want` wide that gives way down to `min`.
    pub(crate) fn new(min: u16, want: usize) -> Column {
        let want = u16::try_from(want).unwrap_or(u16::MAX);
        Column {
            min: min.min(want),
            want,
            grow: false,
            drop: 0,
        }
    }

    /// Left out when the minimums do not fit, before any column with a lower `rank`.
    pub(crate) fn dropped(self, rank: u8) -> Column {
        Column { drop: rank, ..self }
    }

    /// A column sized to its content that also takes the room nobody else wants.
    pub(crate) fn growing(min: u16, want: usize) -> Column {
        Column {
            grow: true,
            ..Column::new(min, want)
        }
    }
}

/// The widths of a table's columns in `total` columns (one between each, as a table
/// draws them): each its minimum first, then the room shared out evenly among those
/// that want more (one that wants less than its share gets what it wants and the rest
/// is shared again), then what is left to the growing ones. A column is as wide as its
/// content when that fits, whatever the terminal.
/// A column left out gets 0: draw only the columns [`shown`] keeps.
pub(crate) fn column_widths(columns: &[Column], total: u16) -> Vec<u16> {
    let mut kept = vec![true; columns.len()];
    loop {
        let count = kept.iter().filter(|k| **k).count() as u16;
        let need: u16 = (0..columns.len())
            .filter(|&i| kept[i])
            .map(|i| columns[i].min)
            .sum::<u16>()
            + count.saturating_sub(1);
        let next = (0..columns.len())
            .filter(|&i| kept[i] && columns[i].drop > 0)
            .max_by_key(|&i| columns[i].drop);
        match next {
            Some(i) if need > total => kept[i] = false,
            _ => break,
        }
    }
    let gaps = (kept.iter().filter(|k| **k).count() as u16).saturating_sub(1);
    let mut widths: Vec<u16> = (0..columns.len())
        .map(|i| if kept[i] { columns[i].min } else { 0 })
        .collect();
    let mut room = total
        .saturating_sub(gaps)
        .saturating_sub(widths.iter().sum());
    let mut wanting: Vec<usize> = (0..columns.len())
        .filter(|&i| kept[i] && columns[i].want > widths[i])
        .collect();
    wanting.sort_by_key(|&i| columns[i].want - widths[i]);
    let mut left = wanting.len() as u16;
    for i in wanting {
        let share = room / left.max(1);
        let given = share.min(columns[i].want - widths[i]);
        widths[i] += given;
        room -= given;
        left -= 1;
    }
    let growing: Vec<usize> = (0..columns.len())
        .filter(|&i| kept[i] && columns[i].grow)
        .collect();
    let mut left = growing.len() as u16;
    for i in growing {
        let given = room / left;
        widths[i] += given;
        room -= given;
        left -= 1;
    }
    widths
}

/// The cells (or constraints) of the columns [`column_widths`] kept: those with room.
pub(crate) fn shown<T>(cells: impl IntoIterator<Item = T>, widths: &[u16]) -> Vec<T> {
    cells
        .into_iter()
        .zip(widths)
        .filter(|(_, width)| **width > 0)
        .map(|(cell, _)| cell)
        .collect()
}

/// A table of the columns [`column_widths`] kept, each as wide as it was given.
pub(crate) fn sized_table<'a>(
    rows: impl IntoIterator<Item = Row<'a>>,
    widths: &[u16],
) -> Table<'a> {
    Table::new(
        rows,
        shown(widths.iter().map(|w| Constraint::Length(*w)), widths),
    )
}

/// The header row of a [`sized_table`]: each column's name cut to its width.
pub(crate) fn header_row<S: AsRef<str>>(
    names: impl IntoIterator<Item = S>,
    widths: &[u16],
    theme: &Theme,
) -> Row<'static> {
    let cells = names
        .into_iter()
        .zip(widths)
        .map(|(name, width)| cut(name.as_ref(), *width as usize));
    Row::new(shown(cells, widths)).style(theme.muted)
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
        // Not paused: a hold dataward asked people to carry out, on a cron it cannot
        // pause. Never the paused glyph, which would say the schedule stopped.
        PipelineState::HoldAsked => {
            return Span::styled("✋ hold asked: stop the cron yourself", theme.warn)
        }
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

    #[test]
    fn cut_ends_in_an_ellipsis_only_when_it_cuts() {
        assert_eq!(cut("analytics-owner", 15), "analytics-owner");
        assert_eq!(cut("analytics-owner", 13), "analytics-ow…");
        assert_eq!(cut("1,210,000", 5), "1,21…");
        assert_eq!(cut("abc", 0), "");
        assert_eq!(cut("✓ ok", 1), "…");
        let spans = vec![
            Span::raw("now "),
            Span::raw("21,200"),
            Span::raw(" ✓ within"),
        ];
        let cut: Vec<String> = cut_spans(spans, 8)
            .iter()
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(cut, ["now ", "21,…"]);
    }

    #[test]
    fn columns_are_as_wide_as_their_content_when_it_fits() {
        let columns = [
            Column::new(1, 1),
            Column::new(4, 15),
            Column::growing(10, 60),
            Column::new(0, 12),
        ];
        // Wide: every column whole, the rest to the growing one.
        assert_eq!(column_widths(&columns, 200), [1, 15, 169, 12]);
        // Narrow: the room past the minimums is shared evenly.
        assert_eq!(column_widths(&columns, 40), [1, 11, 18, 7]);
        assert_eq!(column_widths(&columns, 20), [1, 4, 11, 1]);
        // Too narrow for every minimum: the highest `drop` goes first.
        let columns = [
            Column::new(1, 1),
            Column::new(5, 5),
            Column::new(3, 3).dropped(2),
            Column::growing(10, 60),
            Column::new(5, 5).dropped(1),
        ];
        assert_eq!(column_widths(&columns, 24), [1, 5, 0, 10, 5]);
        assert_eq!(column_widths(&columns, 18), [1, 5, 0, 10, 0]);
        assert_eq!(
            shown(["a", "b", "c", "d", "e"], &[1, 5, 0, 10, 0]),
            ["a", "b", "d"]
        );
    }
}
