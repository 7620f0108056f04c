//! The `?` overlay: every key the registry has for this console, by context, with the
//! ones that send a decision marked, then the `:` commands.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use crate::console::keys;
use crate::console::state::App;
use crate::console::widgets::{centered, pane_block};

pub(crate) fn render(frame: &mut Frame, app: &App, scroll: usize) {
    let theme = &app.theme;
    let area = centered(frame.area(), 76, frame.area().height.saturating_sub(2));
    let mut lines = Vec::new();
    if app.read_only {
        lines.push(Line::styled(
            "read-only console: every key that sends a decision is gone",
            theme.warn,
        ));
    } else {
        lines.push(Line::styled(
            "⚠ marks keys that send a decision to the engine (gone in read-only mode)",
            theme.muted,
        ));
    }
    for (context, bindings) in keys::help_sections(app.read_only) {
        if bindings.is_empty() {
            continue;
        }
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        lines.push(Line::styled(
            context.title(),
            theme.accent.add_modifier(Modifier::BOLD),
        ));
        for binding in bindings {
            // Keys that send a decision are marked by a glyph, not only a colour.
            let marker = if binding.dangerous { "⚠ " } else { "  " };
            let spans = vec![
                Span::styled(format!("  {:<18}", binding.label), theme.title),
                Span::styled(marker, theme.warn),
                Span::raw(binding.description),
            ];
            lines.push(Line::from(spans));
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Commands (after :)",
        theme.accent.add_modifier(Modifier::BOLD),
    ));
    for (command, description) in keys::COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {command:<18}"), theme.title),
            Span::raw(*description),
        ]));
    }
    let height = area.height.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(height));
    let more_below = scroll + height < lines.len();
    let mut block = pane_block("Keys (Esc closes)", true, theme);
    if more_below {
        block =
            block.title_bottom(Line::styled(" ↓ more: j or PgDn ", theme.muted).right_aligned());
    }
    let help = Paragraph::new(lines)
        .scroll((scroll as u16, 0))
        .block(block);
    frame.render_widget(Clear, area);
    frame.render_widget(help, area);
}
