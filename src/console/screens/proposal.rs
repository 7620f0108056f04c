//! The selected proposal's body in the detail screen: a diff (side by side when the pane
//! is wide enough), a hold's plan, a note, or a backfill's command; then who decides,
//! the undo and the verification. Only the rows in view are built.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use crate::console::diff::{Change, DiffRows, Sign, SIDE_BY_SIDE_MIN_WIDTH};
use crate::console::screens::detail::{Detail, Pane};
use crate::console::state::App;
use crate::console::theme::Theme;
use crate::console::widgets::{fit, from_line, kind_word, pane_block};
use crate::engine::api::{ProposalBody, ProposalView};

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App, detail: &Detail) {
    let theme = &app.theme;
    let focused = detail.focus == Pane::Body;
    let Some(proposal) = app.selected_proposal() else {
        let block = pane_block("Proposal", focused, theme);
        frame.render_widget(block, area);
        return;
    };
    let subject = match &proposal.body {
        ProposalBody::Hold { job, .. } => format!("job {job}"),
        ProposalBody::Diff { file, .. } => file.clone(),
        ProposalBody::Note { to, .. } => format!("to {to}"),
        ProposalBody::Backfill { job, .. } => format!("run by {job}"),
    };
    let title = format!("{} {} · {}", proposal.id, kind_word(proposal.kind), subject);
    // Its id is on the pane's top border: on screen whenever the pane has a line.
    if area.height > 0 && area.width > 0 {
        app.drawn.proposal_shown.set(true);
    }
    let block = pane_block(&title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    match &proposal.body {
        ProposalBody::Diff { .. } => match detail.diffs.get(&proposal.content_hash) {
            Some(rows) => render_diff(
                frame,
                inner,
                rows,
                proposal,
                detail.body_scroll,
                area.width,
                theme,
            ),
            None => frame.render_widget(Span::styled("diff not computed yet", theme.muted), inner),
        },
        ProposalBody::Hold { plan, .. } => {
            let mut lines = vec![Line::styled("plan", theme.muted)];
            lines.extend(plan.lines().map(|line| Line::raw(format!("  {line}"))));
            render_text_body(frame, inner, lines, proposal, detail.body_scroll, theme);
        }
        ProposalBody::Note { text, .. } => {
            let lines = text
                .lines()
                .map(|line| Line::raw(line.to_string()))
                .collect();
            render_text_body(frame, inner, lines, proposal, detail.body_scroll, theme);
        }
        ProposalBody::Backfill {
            command, tables, ..
        } => {
            render_text_body(
                frame,
                inner,
                backfill_lines(command, tables, theme),
                proposal,
                detail.body_scroll,
                theme,
            );
        }
    }
}

/// A backfill's body: the command as it will run, and what is copied before it does.
pub fn backfill_lines(command: &str, tables: &[String], theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled("command", theme.muted),
        Line::raw(format!("  {command}")),
        Line::styled(
            "copied just before it runs, restored by roll back",
            theme.muted,
        ),
    ];
    lines.extend(tables.iter().map(|t| Line::raw(format!("  {t}"))));
    lines
}

fn undo_and_verify(proposal: &ProposalView, theme: &Theme) -> [Line<'static>; 3] {
    [
        Line::from(vec![
            Span::styled("decide ", theme.muted),
            Span::raw(proposal.deciders.join(", ")),
        ]),
        Line::from(vec![
            Span::styled("undo   ", theme.muted),
            Span::raw(proposal.undo.clone()),
        ]),
        Line::from(vec![
            Span::styled("verify ", theme.muted),
            Span::raw(proposal.verify.clone()),
        ]),
    ]
}

/// Notes and plans are short prose: wrap them and let the paragraph scroll.
fn render_text_body(
    frame: &mut Frame,
    area: Rect,
    mut lines: Vec<Line<'static>>,
    proposal: &ProposalView,
    scroll: usize,
    theme: &Theme,
) {
    lines.push(Line::raw(""));
    lines.extend(undo_and_verify(proposal, theme));
    let paragraph = Paragraph::new(from_line(lines, scroll)).wrap(Wrap { trim: false });
    frame.render_widget(paragraph, area);
}

/// Only the rows in view are turned into lines; a long diff costs nothing off screen.
fn render_diff(
    frame: &mut Frame,
    area: Rect,
    rows: &DiffRows,
    proposal: &ProposalView,
    scroll: usize,
    pane_width: u16,
    theme: &Theme,
) {
    let side_by_side = pane_width >= SIDE_BY_SIDE_MIN_WIDTH;
    let diff_len = if side_by_side {
        rows.side_by_side.len()
    } else {
        rows.unified.len()
    };
    let trailer = undo_and_verify(proposal, theme);
    let total = diff_len + 1 + trailer.len();
    let height = area.height as usize;
    let start = scroll.min(total.saturating_sub(height));
    let width = area.width as usize;
    // Scrolling moves by diff row; a long row wraps onto as many lines as it needs, so
    // a change is never cut off at the edge of its half.
    let mut lines: Vec<Line> = Vec::with_capacity(height);
    for index in start..total {
        if lines.len() >= height {
            break;
        }
        if index < diff_len {
            if side_by_side {
                lines.extend(side_by_side_lines(&rows.side_by_side[index], width, theme));
            } else {
                lines.push(unified_line(&rows.unified[index], theme));
            }
        } else if index == diff_len {
            lines.push(Line::raw(""));
        } else {
            lines.push(trailer[index - diff_len - 1].clone());
        }
    }
    lines.truncate(height);
    frame.render_widget(Paragraph::new(lines), area);
}

fn diff_cell_text(number: Option<usize>, sign: char, text: &str) -> String {
    match number {
        Some(number) => format!("{number:>3} {sign} {text}"),
        None => String::new(),
    }
}

/// Columns a diff cell spends on its line number and sign: "  9 - ".
const DIFF_GUTTER: usize = 6;

fn side_by_side_lines(
    row: &crate::console::diff::SideBySideRow,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let half = width.saturating_sub(1) / 2;
    let right_width = width.saturating_sub(half + 1);
    let (old_sign, new_sign, old_style, new_style) = match row.change {
        Change::Same => (' ', ' ', Style::default(), Style::default()),
        Change::Removed => ('-', ' ', theme.crit, Style::default()),
        Change::Added => (' ', '+', Style::default(), theme.ok),
        Change::Changed => ('-', '+', theme.crit, theme.ok),
    };
    let left = wrap_cell(row.old.as_ref(), old_sign, half);
    let right = wrap_cell(row.new.as_ref(), new_sign, right_width);
    (0..left.len().max(right.len()))
        .map(|i| {
            Line::from(vec![
                Span::styled(fit(left.get(i).map_or("", String::as_str), half), old_style),
                Span::styled("│", theme.border),
                Span::styled(
                    fit(right.get(i).map_or("", String::as_str), right_width),
                    new_style,
                ),
            ])
        })
        .collect()
}

/// One side of a diff row as lines of at most `width` columns: the first carries the
/// line number and sign, the rest are indented under the text.
fn wrap_cell(cell: Option<&crate::console::diff::Cell>, sign: char, width: usize) -> Vec<String> {
    let Some(cell) = cell else {
        return vec![String::new()];
    };
    let room = width.saturating_sub(DIFF_GUTTER).max(1);
    let pieces = wrap_at_spaces(&cell.text, room);
    pieces
        .iter()
        .enumerate()
        .map(|(i, text)| {
            if i == 0 {
                diff_cell_text(Some(cell.number), sign, text)
            } else {
                format!("{:DIFF_GUTTER$}{text}", "")
            }
        })
        .collect()
}

/// Splits `text` into pieces of at most `room` characters, breaking after a space when
/// one falls in the second half of the piece, else mid-word. Always at least one piece.
fn wrap_at_spaces(text: &str, room: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while chars.len() - start > room {
        let window = &chars[start..start + room];
        let cut = window
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&at| at >= room / 2)
            .map_or(room, |at| at + 1);
        pieces.push(chars[start..start + cut].iter().collect());
        start += cut;
    }
    pieces.push(chars[start..].iter().collect());
    pieces
}

fn unified_line(row: &crate::console::diff::UnifiedRow, theme: &Theme) -> Line<'static> {
    let (sign, style) = match row.sign {
        Sign::Same => (' ', Style::default()),
        Sign::Removed => ('-', theme.crit),
        Sign::Added => ('+', theme.ok),
    };
    Line::styled(diff_cell_text(Some(row.number), sign, &row.text), style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_diff_lines_wrap_after_a_space() {
        let pieces = wrap_at_spaces(
            "    on pay.zip_code = cast(reg.postal_code as varchar(12))",
            40,
        );
        assert_eq!(
            pieces,
            [
                "    on pay.zip_code = ",
                "cast(reg.postal_code as varchar(12))"
            ]
        );
        assert_eq!(wrap_at_spaces("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_at_spaces("", 4), [""]);
        for piece in wrap_at_spaces(&"word ".repeat(40), 17) {
            assert!(piece.chars().count() <= 17);
        }
    }
}
