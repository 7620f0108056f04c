//! Where the last frame put things, for the keys that depend on what is on screen (a
//! page is the height of what shows) and, later, mouse clicks. Drawing stays a function
//! of the state: the view only notes here what it drew, and the state reads it on the
//! next key. Before the first frame every area is empty and the keys fall back to a
//! fixed page.

use std::cell::Cell;

use ratatui::layout::Rect;

#[derive(Debug, Default)]
pub struct Drawn {
    /// The help overlay inside its borders.
    pub help: Cell<Rect>,
}
