//! Everything that can happen to the console, as one value: keys (through the registry,
//! `keys.rs`), snapshots and replies from the engine, resizes, the mouse. The router
//! (`state::update`) hands each to the screen or overlay it concerns.

use crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use crate::console::incoming::{Prepared, PreparedChange};
use crate::console::line::LineOp;
use crate::engine::api::{Detail, PresenceView, Reply, Snapshot};

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A new snapshot from the engine (the whole world, replacing the last one).
    SnapshotArrived(Box<Snapshot>),
    /// The same, already sanitized and indexed off the input path (`incoming::prepare`):
    /// what the console's loop receives.
    SnapshotReady(Box<Prepared>),
    /// One version's change, cleaned off the input path (`incoming::Feed`): applied to
    /// the snapshot held, in place.
    ChangeReady(Box<PreparedChange>),
    /// Who is attached now, cleaned: replaces who was.
    PresenceArrived(Vec<PresenceView>),
    /// The viewed incident's timeline and receipt, cleaned.
    DetailArrived(Box<Detail>),
    /// The engine's channel closed: keep showing the last snapshot until `q`.
    EngineStopped,
    /// The engine's hello: who it says we are, whether we may decide, when it started.
    Hello {
        started_at: crate::clock::Timestamp,
        you: String,
        read_only: bool,
    },
    /// The answer to one of this console's requests.
    ReplyArrived(Reply),
    /// The connection to the engine is gone (its reason); the link is trying again.
    ConnectionLost(String),
    /// The terminal was resized (or re-attached in tmux): redraw everything.
    Resized,
    /// Ctrl-L: redraw everything.
    Redraw,
    Suspend,
    Quit,
    /// Close the innermost thing open: overlay, receipt, detail, filter.
    Back,
    Up,
    Down,
    PageUp,
    PageDown,
    /// Ctrl-U and Ctrl-D: half of what shows.
    HalfPageUp,
    HalfPageDown,
    Top,
    Bottom,
    Open,
    NextPane,
    PreviousPane,
    Collapse,
    Expand,
    Approve,
    Reject,
    RollBack,
    Forward,
    QueueRun,
    /// Close the open incident by hand, with a reason (`C`).
    Resolve,
    /// Open a resolved incident again, with a reason (`O`).
    Reopen,
    /// Accept the open incident's new level as the normal, with a reason (`N`).
    AcceptLevel,
    /// "This was fine": the open incident closes as expected, out of the baselines (`E`).
    Expected,
    /// Snooze the open incident's monitor for a duration, with a reason (`Z`).
    Snooze,
    ToggleReceipt,
    /// `z`: the focused pane alone, or back among the others.
    Zoom,
    /// `T`: the incident's chain records as a timeline, or back to the panes.
    ToggleTimeline,
    /// `y`: copy what the focus shows (an id, a hash, a command, SQL) over OSC 52.
    Copy,
    /// `s`: sort the list by the next column; `S`: the other way round.
    SortNext,
    SortReverse,
    /// `t`: open incidents only, or all.
    ToggleOpenOnly,
    Help,
    /// The alert outbox overlay.
    AlertOutbox,
    /// `W`: the migration waves, their parity and gates.
    Waves,
    /// `A`: the access requests.
    AccessRequests,
    CommandLine,
    Filter,
    /// `/` in the help, and `n` and `N` through what it found.
    Search,
    SearchNext,
    SearchPrevious,
    /// Enter in a text field: send the reason, run the command line, keep the filter.
    Submit,
    /// A new line in the reason text.
    NewLine,
    /// A key typed into whichever text field is open.
    Edit(KeyEvent),
    /// An edit of the command line or filter (`console/line.rs`).
    Line(LineOp),
    /// Text pasted into whichever text field is open (bracketed paste).
    Paste(String),
    /// A click or a turn of the wheel, while the mouse is on (`console/mouse.rs`).
    Mouse(crossterm::event::MouseEvent),
}

impl Action {
    /// From the engine or the terminal, not from the person: the console's message
    /// (which answers the person's last key) stays.
    pub fn keeps_message(&self) -> bool {
        matches!(
            self,
            Action::SnapshotArrived(_)
                | Action::SnapshotReady(_)
                | Action::ChangeReady(_)
                | Action::PresenceArrived(_)
                | Action::DetailArrived(_)
                | Action::EngineStopped
                | Action::Resized
                | Action::Hello { .. }
                | Action::ReplyArrived(_)
                | Action::ConnectionLost(_)
        )
    }

    /// How far a movement goes, in rows, where a page is `page` rows; `None` for an
    /// action that moves nothing.
    pub fn distance(&self, page: usize) -> Option<isize> {
        let page = page as isize;
        Some(match self {
            Action::Up => -1,
            Action::Down => 1,
            Action::PageUp => -page,
            Action::PageDown => page,
            Action::HalfPageUp => -(page / 2).max(1),
            Action::HalfPageDown => (page / 2).max(1),
            Action::Top => isize::MIN / 2,
            Action::Bottom => isize::MAX / 2,
            _ => return None,
        })
    }
}

/// Rows PgUp/PgDn move before anything was drawn; after, a page is what shows.
pub const PAGE: usize = 10;

/// A page in what the last frame drew in `area`: its height, or [`PAGE`] before it
/// was drawn.
pub fn page(area: Rect) -> usize {
    match area.height as usize {
        0 => PAGE,
        rows => rows,
    }
}

/// `value` moved by `delta` within `len` places (a selection, or a scroll offset within
/// `len` lines: the view clamps again to its height; clamping here too keeps End
/// followed by k from scrolling through nothing).
pub fn step(value: usize, delta: isize, len: usize) -> usize {
    let last = len.saturating_sub(1) as isize;
    (value as isize).saturating_add(delta).clamp(0, last.max(0)) as usize
}
