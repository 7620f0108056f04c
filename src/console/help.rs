//! The `?` help: every key and `:` command this console has, from the one registry
//! (`keys.rs`), grouped by where it applies. A read-only console's help lists nothing
//! that decides. Descriptions wrap under themselves, so every line fits the overlay,
//! however narrow the terminal.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use crate::console::keys;
use crate::console::state::App;
use crate::console::widgets::{centered, pane_block};

/// The overlay's widest, borders included.
pub const WIDTH: u16 = 76;
/// Columns for a key or command before its description.
const KEY_COLUMN: usize = 18;
/// Below this inner width the key goes on a line of its own, the description under it.
const TWO_COLUMNS_MIN: usize = 44;

/// Where the help goes on a screen of `screen`.
pub fn area(screen: Rect) -> Rect {
    centered(screen, WIDTH, screen.height.saturating_sub(2))
}

/// One entry: the key or command, whether it decides, what it does.
struct Entry {
    label: String,
    dangerous: bool,
    description: String,
}

/// The help's lines for an overlay `width` columns wide inside its borders.
pub fn lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    let lead = if app.read_only {
        (
            "read-only console: every key and command that decides is gone",
            theme.warn,
        )
    } else {
        (
            "⚠ marks what sends a decision to the engine (gone in read-only mode)",
            theme.muted,
        )
    };
    for piece in wrap(lead.0, width) {
        lines.push(Line::styled(piece, lead.1));
    }
    let heading = theme.accent.add_modifier(Modifier::BOLD);
    for (context, bindings) in keys::help_sections(app.read_only) {
        if bindings.is_empty() {
            continue;
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(context.title(), heading));
        for binding in bindings {
            let entry = Entry {
                label: binding.label.to_string(),
                dangerous: binding.dangerous,
                description: binding.description.to_string(),
            };
            push_entry(&mut lines, &entry, width, app);
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Commands (after :)", heading));
    for command in keys::commands(app.read_only) {
        let entry = Entry {
            label: command.label(),
            dangerous: command.dangerous,
            description: command.described(),
        };
        push_entry(&mut lines, &entry, width, app);
    }
    lines
}

fn push_entry(lines: &mut Vec<Line<'static>>, entry: &Entry, width: usize, app: &App) {
    let theme = &app.theme;
    // Keys that send a decision are marked by a glyph, not only a colour.
    let marker = if entry.dangerous { "⚠ " } else { "  " };
    let two_columns = width >= TWO_COLUMNS_MIN && entry.label.chars().count() <= KEY_COLUMN;
    if two_columns {
        let indent = 2 + KEY_COLUMN + 2;
        for (i, piece) in wrap(&entry.description, width - indent)
            .into_iter()
            .enumerate()
        {
            let (label, marker) = if i == 0 {
                (format!("  {:<KEY_COLUMN$}", entry.label), marker)
            } else {
                (" ".repeat(2 + KEY_COLUMN), "  ")
            };
            lines.push(Line::from(vec![
                Span::styled(label, theme.title),
                Span::styled(marker, theme.warn),
                Span::raw(piece),
            ]));
        }
    } else {
        lines.push(Line::from(vec![
            Span::styled(format!("  {}", entry.label), theme.title),
            Span::styled(format!(" {}", marker.trim_end()), theme.warn),
        ]));
        for piece in wrap(&entry.description, width.saturating_sub(4)) {
            lines.push(Line::from(vec![Span::raw("    "), Span::raw(piece)]));
        }
    }
}

/// `text` in pieces of at most `width` columns, broken between words (a word longer
/// than the width is cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let columns = |s: &str| Span::raw(s).width();
    let mut pieces = Vec::new();
    let mut current = String::new();
    for word in text.split(' ') {
        let mut word = word.to_string();
        loop {
            let needed = if current.is_empty() {
                columns(&word)
            } else {
                columns(&current) + 1 + columns(&word)
            };
            if needed <= width {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(&word);
                break;
            }
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
                continue;
            }
            // A word wider than the whole line: cut it.
            let cut: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            pieces.push(cut);
            if word.is_empty() {
                break;
            }
        }
    }
    if !current.is_empty() || pieces.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// The inner width the help was last drawn at (the widest before the first frame).
fn inner_width(app: &App) -> usize {
    match app.drawn.help.get() {
        area if area.width > 0 => area.width as usize,
        _ => WIDTH as usize - 2,
    }
}

/// The furthest the help can scroll: its last line at the bottom of the overlay.
pub fn max_scroll(app: &App) -> usize {
    let height = app.drawn.help.get().height as usize;
    lines(app, inner_width(app))
        .len()
        .saturating_sub(height.max(1))
}

pub fn render(frame: &mut Frame, app: &App, scroll: usize) {
    let theme = &app.theme;
    let area = area(frame.area());
    let mut block = pane_block("Keys (Esc closes)", true, theme);
    let inner = block.inner(area);
    app.drawn.help.set(inner);
    let lines = lines(app, inner.width as usize);
    let height = inner.height as usize;
    let scroll = scroll.min(lines.len().saturating_sub(height));
    if scroll + height < lines.len() {
        block = block.title_bottom(
            Line::styled(" ↓ more: j or PgDn ", theme.muted.patch(Style::default()))
                .right_aligned(),
        );
    }
    let help = Paragraph::new(lines)
        .scroll((scroll as u16, 0))
        .block(block);
    frame.render_widget(Clear, area);
    frame.render_widget(help, area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_between_words_and_cuts_only_what_cannot_fit() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
        for piece in wrap(&"word ".repeat(30), 17) {
            assert!(piece.chars().count() <= 17, "{piece:?}");
        }
    }
}
