//! What the console's unit tests share: the sample console, and keys pressed on it as a
//! person would (through the registry).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::console::fixtures::sample_snapshot;
use crate::console::keys;
use crate::console::state::{update, Action, App, Overlay};
use crate::console::theme::Theme;

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
