//! Where the last frame put things, for the keys that depend on what is on screen (a
//! page is the height of what shows) and mouse clicks (`mouse.rs`). Drawing stays a function
//! of the state: the view only notes here what it drew, and the state reads it on the
//! next key. Before the first frame every area is empty and the keys fall back to a
//! fixed page.

use std::cell::Cell;

use ratatui::layout::Rect;

use crate::console::screens::detail::Pane;

#[derive(Debug, Default)]
pub struct Drawn {
    /// The help overlay inside its borders.
    pub help: Cell<Rect>,
    /// The alert outbox overlay inside its borders.
    pub outbox: Cell<Rect>,
    /// The waves or the access requests overlay inside its borders.
    pub scrolled: Cell<Rect>,
    /// The incident list's rows (below its header), and the index of the first shown.
    pub list_rows: Cell<Rect>,
    pub list_start: Cell<usize>,
    /// The incident list's header row, and the width of each of its columns (the
    /// marker's first, 0 for a column left out), one column apart as a table draws them.
    pub list_header: Cell<Rect>,
    pub list_columns: Cell<[u16; 8]>,
    /// The monitors pane's rows (below its header) and the position (in the pane's
    /// order) of the first shown, when the list shows it.
    pub monitor_rows: Cell<Rect>,
    pub monitor_start: Cell<usize>,
    /// The detail's panes inside their borders, in `Pane::ORDER`.
    pub panes: Cell<[Rect; 4]>,
    /// The receipt or the timeline inside its borders, while one is open.
    pub receipt: Cell<Rect>,
    /// Whether a frame has been drawn: before one, nothing below is known.
    pub drew: Cell<bool>,
    /// Whether the last frame showed the selected incident's row, and the selected
    /// proposal: a key that acts on one of them refuses when it was not on screen.
    pub incident_shown: Cell<bool>,
    pub proposal_shown: Cell<bool>,
}

impl Drawn {
    /// Starts a frame: nothing is shown until the view says it drew it.
    pub fn begin_frame(&self) {
        self.drew.set(true);
        self.incident_shown.set(false);
        self.proposal_shown.set(false);
    }

    /// Whether the last frame left out what a key would act on (`shown` says whether
    /// it drew it). Before the first frame the key is let through.
    pub fn left_out(&self, shown: &Cell<bool>) -> bool {
        self.drew.get() && !shown.get()
    }

    pub fn pane(&self, pane: Pane) -> Rect {
        self.panes.get()[pane.index()]
    }

    /// Notes where a detail pane went (its outer area, borders included).
    pub fn set_pane(&self, pane: Pane, outer: Rect) {
        let mut panes = self.panes.get();
        panes[pane.index()] = inner(outer);
        self.panes.set(panes);
    }
}

/// A bordered area without its borders.
pub fn inner(outer: Rect) -> Rect {
    Rect {
        x: outer.x.saturating_add(1),
        y: outer.y.saturating_add(1),
        width: outer.width.saturating_sub(2),
        height: outer.height.saturating_sub(2),
    }
}
