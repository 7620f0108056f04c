//! The migration waves overlay (`W`): each `[[migration]]` wave with its gate (open and
//! who signed it off, or every reason it is closed), each table's parity (rows, or
//! what differs between its old and new side), and its repoint proposals with their
//! state. It draws the snapshot's waves, cleaned with the rest as it arrived.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::console::overlays::{render_scrolled, Scroll};
use crate::console::state::{App, Overlay};

/// The overlay's lines, one wave after another.
pub fn lines<'a>(app: &App) -> Vec<Line<'a>> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    if app.snapshot.waves.is_empty() {
        lines.push(Line::styled(
            "no [[migration]] in the config: no waves to show",
            theme.muted,
        ));
        return lines;
    }
    for wave in &app.snapshot.waves {
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        // The gate by glyph and word, never by colour alone.
        let (glyph, word, style) = match wave.open {
            true => ("✓", "gate open", theme.ok),
            false => ("✗", "gate closed", theme.crit),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{glyph} "), style),
            Span::styled(wave.id.clone(), theme.title.add_modifier(Modifier::BOLD)),
            Span::styled(format!("  {word}"), style),
        ]));
        for reason in &wave.gate {
            lines.push(Line::raw(format!("  · {reason}")));
        }
        if let Some(hash) = &wave.parity_hash {
            lines.push(Line::styled(format!("  parity hash {hash}"), theme.muted));
        }
        for table in &wave.tables {
            let (mark, said, style) = match (table.read, table.differences.is_empty()) {
                (false, _) => ("…", "not read yet".to_string(), theme.muted),
                (true, true) => (
                    "✓",
                    format!("parity holds, {} rows", table.rows.unwrap_or_default()),
                    theme.ok,
                ),
                (true, false) => ("✗", table.differences.join("; "), theme.crit),
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  {mark} "), style),
                Span::raw(format!("{} → {}: ", table.old, table.new)),
                Span::styled(said, style),
            ]));
        }
        for repoint in &wave.repoints {
            lines.push(Line::raw(format!(
                "  repoint {} {} ({}), hash {}",
                repoint.id,
                repoint.file,
                repoint.state.replace('_', " "),
                repoint
                    .content_hash
                    .get(..12)
                    .unwrap_or(&repoint.content_hash)
            )));
        }
    }
    lines
}

pub fn render(frame: &mut Frame, app: &App, scroll: &Scroll) {
    render_scrolled(
        frame,
        app,
        "Migration waves (Esc closes)",
        lines(app),
        scroll.scroll,
    );
}

/// Whether this overlay is open.
pub fn is_open(app: &App) -> bool {
    matches!(app.overlay, Overlay::Waves(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action};
    use crate::console::theme::Theme;
    use crate::engine::api::{WaveRepointView, WaveTableView, WaveView};

    fn app_with_waves() -> App {
        let mut snapshot = sample_snapshot();
        snapshot.waves = vec![WaveView {
            id: "MIG-orders-to-core-first".into(),
            open: false,
            gate: vec![
                "legacy.orders → core.orders: column note is dropped on the new side".into(),
                "no owner has signed off".into(),
            ],
            parity_hash: Some("9f2c4e1a".repeat(8)),
            tables: vec![
                WaveTableView {
                    old: "legacy.orders".into(),
                    new: "core.orders".into(),
                    read: true,
                    rows: Some(60),
                    differences: vec!["column note is dropped on the new side".into()],
                },
                WaveTableView {
                    old: "legacy.refunds".into(),
                    new: "core.refunds".into(),
                    read: true,
                    rows: Some(10),
                    differences: Vec::new(),
                },
            ],
            repoints: vec![WaveRepointView {
                id: "MIG-orders-to-core-first-R1".into(),
                state: "pending".into(),
                file: "models/staging/stg_orders.sql".into(),
                content_hash: "a1b2c3d4e5f6".repeat(5),
            }],
        }];
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        update(&mut app, Action::Waves);
        app
    }

    fn screen(app: &App, width: u16, height: u16) -> String {
        crate::console::test_support::draw(app, width, height)
    }

    #[test]
    fn the_waves_show_the_gate_parity_per_table_and_the_repoints() {
        let app = app_with_waves();
        assert!(is_open(&app));
        let wide = screen(&app, 120, 40);
        assert!(
            wide.contains("✗ MIG-orders-to-core-first  gate closed"),
            "{wide}"
        );
        assert!(
            wide.contains("✗ legacy.orders → core.orders: column note is dropped"),
            "{wide}"
        );
        assert!(
            wide.contains("✓ legacy.refunds → core.refunds: parity holds, 10 rows"),
            "{wide}"
        );
        assert!(
            wide.contains("repoint MIG-orders-to-core-first-R1"),
            "{wide}"
        );
        insta::assert_snapshot!("waves_120x40", wide);
        insta::assert_snapshot!("waves_80x24", screen(&app, 80, 24));
        let mut app = app;
        update(&mut app, Action::Back);
        assert!(!is_open(&app));
    }
}
