//! What opens over a screen, a file each, each owning its state and taking the keys
//! before the screen does: the reason box a decision is typed in, the alert outbox, and
//! the `:` command line and `/` filter (drawn on the hints bar). The key help is one
//! too; it stays at `console/help.rs`, whose module path names its screen snapshot.

pub mod access;
pub mod alerts;
pub mod decide;
pub mod prompt;
pub mod reason;
pub mod waves;

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::console::state::App;
use crate::console::widgets::{centered, pane_block};

/// How far a scrolled overlay (the waves, the access requests) is scrolled, and which
/// of its decidable things is selected (`decide.rs`).
#[derive(Debug, Clone, Default)]
pub struct Scroll {
    pub scroll: usize,
    pub selected: usize,
}

/// Lines in a bordered box over the screen, from `scroll` on.
pub fn render_scrolled(frame: &mut Frame, app: &App, title: &str, lines: Vec<Line>, scroll: usize) {
    let area: Rect = centered(frame.area(), 100, frame.area().height.saturating_sub(2));
    let height = area.height.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(height));
    let mut block = pane_block(title, true, &app.theme);
    app.drawn.scrolled.set(block.inner(area));
    if scroll + height < lines.len() {
        block = block
            .title_bottom(Line::styled(" ↓ more: j or PgDn ", app.theme.muted).right_aligned());
    }
    let paragraph = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((scroll as u16, 0))
        .block(block);
    frame.render_widget(Clear, area);
    frame.render_widget(paragraph, area);
}
