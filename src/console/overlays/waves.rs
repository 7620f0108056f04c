//! The migration waves overlay (`W`): each `[[migration]]` wave with its gate (open and
//! who signed it off, or every reason it is closed), each table's parity (rows, or
//! what differs between its old and new side), and its repoint proposals with their
//! state. It draws the snapshot's waves, cleaned with the rest as it arrived. A wave
//! (its sign-off) or a repoint is selected and decided here (`decide.rs`).

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::console::overlays::decide::{mark, Decidable, Listing};
use crate::console::overlays::{render_scrolled, Scroll};
use crate::console::state::{App, Overlay};
use crate::engine::api::{WaveRepointView, WaveView};

/// A wave's sign-off, as decided: approving signs it off on its parity hash,
/// rejecting refuses that reading, rolling back puts back every applied repoint.
fn wave_decidable(wave: &WaveView) -> Decidable {
    let id = &wave.id;
    let applied = wave.repoints.iter().any(|r| r.state == "approved");
    Decidable {
        id: id.clone(),
        title: format!("the sign-off of {id} on its parity"),
        hash: wave.parity_hash.clone(),
        not_decided: match (&wave.parity_hash, wave.open) {
            (None, _) => Some(format!("{id}: parity is not read yet: nothing to sign off")),
            (Some(_), true) => Some(format!("{id} is signed off: u rolls it back")),
            (Some(_), false) => None,
        },
        not_rolled_back: (!applied && !wave.open).then(|| {
            format!(
                "{id}: no repoint stands applied and it is not signed off: nothing to roll back"
            )
        }),
    }
}

/// A repoint of a dbt file, decided as any proposal on its content hash.
fn repoint_decidable(repoint: &WaveRepointView) -> Decidable {
    let id = &repoint.id;
    let state = repoint.state.replace('_', " ");
    Decidable {
        id: id.clone(),
        title: format!("repoint {}", repoint.file),
        hash: Some(repoint.content_hash.clone()),
        not_decided: (repoint.state != "pending")
            .then(|| format!("{id} is {state}: there is nothing left to decide")),
        not_rolled_back: (repoint.state != "approved")
            .then(|| format!("{id} is {state}: only an approved repoint is rolled back")),
    }
}

/// Each wave and then its repoints, in the order they are listed.
pub fn decidables(app: &App) -> Vec<Decidable> {
    let mut found = Vec::new();
    for wave in &app.snapshot.waves {
        found.push(wave_decidable(wave));
        found.extend(wave.repoints.iter().map(repoint_decidable));
    }
    found
}

/// The overlay's lines, one wave after another.
pub fn listing(app: &App) -> Listing<'static> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    let mut starts = Vec::new();
    if app.snapshot.waves.is_empty() {
        lines.push(Line::styled(
            "no [[migration]] in the config: no waves to show",
            theme.muted,
        ));
        return Listing { lines, starts };
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
        starts.push(lines.len());
        lines.push(Line::from(vec![
            mark(app, starts.len() - 1, theme),
            Span::styled(format!("{glyph} "), style),
            Span::styled(wave.id.clone(), theme.title.add_modifier(Modifier::BOLD)),
            Span::styled(format!("  {word}"), style),
        ]));
        for reason in &wave.gate {
            lines.push(Line::raw(format!("    · {reason}")));
        }
        if let Some(hash) = &wave.parity_hash {
            lines.push(Line::styled(format!("    parity hash {hash}"), theme.muted));
        }
        for table in &wave.tables {
            let (glyph, said, style) = match (table.read, table.differences.is_empty()) {
                (false, _) => ("…", "not read yet".to_string(), theme.muted),
                (true, true) => (
                    "✓",
                    format!("parity holds, {} rows", table.rows.unwrap_or_default()),
                    theme.ok,
                ),
                (true, false) => ("✗", table.differences.join("; "), theme.crit),
            };
            lines.push(Line::from(vec![
                Span::styled(format!("    {glyph} "), style),
                Span::raw(format!("{} → {}: ", table.old, table.new)),
                Span::styled(said, style),
            ]));
        }
        for repoint in &wave.repoints {
            starts.push(lines.len());
            lines.push(Line::from(vec![
                mark(app, starts.len() - 1, theme),
                Span::raw(format!(
                    "  repoint {} {} ({}), hash {}",
                    repoint.id,
                    repoint.file,
                    repoint.state.replace('_', " "),
                    repoint
                        .content_hash
                        .get(..12)
                        .unwrap_or(&repoint.content_hash)
                )),
            ]));
        }
    }
    Listing { lines, starts }
}

pub fn render(frame: &mut Frame, app: &App, scroll: &Scroll) {
    render_scrolled(
        frame,
        app,
        "Migration waves (Esc closes)",
        listing(app).lines,
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

    /// The keys of the registry select a wave or a repoint and decide it in the reason
    /// box, bound to the hash the CLI binds to; the box comes back to the waves.
    #[test]
    fn a_selected_repoint_is_approved_on_its_hash_and_a_wave_refused_before_parity_holds() {
        use crate::console::test_support::{press, type_text};
        use crate::engine::api::Command;
        use crossterm::event::KeyCode;
        let mut app = app_with_waves();
        assert!(screen(&app, 120, 40).contains("▶ ✗ MIG-orders-to-core-first"));
        // The wave's parity is read: rejecting that reading is bound to its hash.
        press(&mut app, KeyCode::Char('r'));
        type_text(&mut app, "the note column must move too");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox.pop(),
            Some(Command::Reject {
                proposal: "MIG-orders-to-core-first".into(),
                content_hash: "9f2c4e1a".repeat(8),
                reason: "the note column must move too".into(),
            })
        );
        assert!(is_open(&app), "sending comes back to the waves");
        // Nothing applied and not signed off: a roll back is refused up front.
        press(&mut app, KeyCode::Char('u'));
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .contains("nothing to roll back"));
        press(&mut app, KeyCode::Char('j'));
        let shown = screen(&app, 120, 40);
        assert!(
            shown.contains("▶   repoint MIG-orders-to-core-first-R1"),
            "{shown}"
        );
        press(&mut app, KeyCode::Char('u'));
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .contains("only an approved repoint"));
        press(&mut app, KeyCode::Char('a'));
        let boxed = screen(&app, 120, 40);
        assert!(
            boxed.contains("Approve MIG-orders-to-core-first-R1"),
            "{boxed}"
        );
        assert!(boxed.contains(&"a1b2c3d4e5f6".repeat(5)), "{boxed}");
        // Esc cancels back to the waves, with nothing sent.
        press(&mut app, KeyCode::Esc);
        assert!(is_open(&app) && app.outbox.is_empty());
        press(&mut app, KeyCode::Char('a'));
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox.pop(),
            Some(Command::Approve {
                proposal: "MIG-orders-to-core-first-R1".into(),
                content_hash: "a1b2c3d4e5f6".repeat(5),
                reason: String::new(),
            })
        );
        // At the last thing, j says so.
        press(&mut app, KeyCode::Char('j'));
        assert_eq!(
            app.message.as_deref(),
            Some("already at the bottom of the waves")
        );
    }

    #[test]
    fn a_read_only_console_has_no_deciding_key_over_the_waves() {
        use crate::console::test_support::press;
        use crossterm::event::KeyCode;
        let mut app = app_with_waves();
        app.read_only = true;
        press(&mut app, KeyCode::Char('a'));
        assert!(app.outbox.is_empty() && is_open(&app));
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .contains("read-only console"));
    }
}
