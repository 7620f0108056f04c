//! What the console's unit tests share: the sample console, and keys pressed on it as a
//! person would (through the registry).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::console::fixtures::sample_snapshot;
use crate::console::keys;
use crate::console::state::{update, Action, App, Overlay};
use crate::console::theme::Theme;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// The content hash of the sample's diff proposal (P-2).
pub const DIFF_HASH: &str = "3f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4";

/// A console with the sample snapshot in, on the list.
pub fn sample_app(read_only: bool) -> App {
    let mut app = App::new(read_only, Theme::fallback(), None, false);
    update(
        &mut app,
        Action::SnapshotArrived(Box::new(sample_snapshot())),
    );
    app
}

pub fn press(app: &mut App, code: KeyCode) {
    press_with(app, code, KeyModifiers::NONE);
}

pub fn press_with(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    keys::press(app, KeyEvent::new(code, modifiers));
}

pub fn ctrl(app: &mut App, c: char) {
    press_with(app, KeyCode::Char(c), KeyModifiers::CONTROL);
}

pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// Open INC-7 and select the diff proposal (P-2).
pub fn detail_on_diff(read_only: bool) -> App {
    let mut app = sample_app(read_only);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('j'));
    app
}

/// What the open command line or filter holds.
pub fn prompt_text(app: &App) -> String {
    match &app.overlay {
        Overlay::Prompt(prompt) => prompt.text().to_string(),
        _ => panic!("no prompt open"),
    }
}

/// INC-7 open, the diff proposal selected.
pub fn detail_app() -> App {
    let mut app = sample_app(false);
    update(&mut app, Action::Open);
    update(&mut app, Action::Down);
    app
}

/// The whole console drawn on a terminal of this size, as text.
pub fn draw(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| crate::console::view::render(frame, app))
        .unwrap();
    terminal.backend().to_string()
}

/// The style of the cell where `text` starts on the screen.
pub fn style_of(app: &App, width: u16, height: u16, text: &str) -> ratatui::style::Style {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| crate::console::view::render(frame, app))
        .unwrap();
    let buffer = terminal.backend().buffer();
    let first = text.chars().next().unwrap().to_string();
    for y in 0..height {
        let row: String = (0..width).map(|x| buffer[(x, y)].symbol()).collect();
        if let Some(at) = row.find(text) {
            let x = row[..at].chars().count() as u16;
            assert_eq!(buffer[(x, y)].symbol(), first);
            return buffer[(x, y)].style();
        }
    }
    panic!("{text:?} is not on the screen");
}

/// Drawn in `role`: its colour and its emphasis.
pub fn drawn_in(style: ratatui::style::Style, role: ratatui::style::Style) -> bool {
    style.fg == role.fg && style.add_modifier.contains(role.add_modifier)
}

pub fn type_into(app: &mut App, text: &str) {
    for c in text.chars() {
        let key = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        );
        update(app, Action::Edit(key));
    }
}

/// Alice's console, attached to a hub (snapshots carry no actor) with Bob deciding
/// P-2 and an observer looking at INC-6.
pub fn paired_app() -> App {
    use crate::engine::api::PresenceView;
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(
        &mut app,
        Action::Hello {
            started_at: "2026-11-24T13:58:00Z".parse().unwrap(),
            you: "alice (uid 1001)".into(),
            read_only: false,
        },
    );
    let mut snapshot = sample_snapshot();
    snapshot.actor = String::new();
    snapshot.notices.clear();
    snapshot.attached = vec![
        PresenceView {
            who: "Alice (alice)".into(),
            read_only: false,
            viewing: Some("INC-7".into()),
            deciding: None,
        },
        PresenceView {
            who: "Bob (bob)".into(),
            read_only: false,
            viewing: Some("INC-7".into()),
            deciding: Some("P-2".into()),
        },
        PresenceView {
            who: "uid 1003".into(),
            read_only: true,
            viewing: Some("INC-6".into()),
            deciding: None,
        },
    ];
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    app
}
