//! The incident detail screen: one incident's header, cause, blast radius, proposals
//! and the selected proposal's body, or the receipt or the timeline over the panes.
//! Its state and what its keys do are here, the deciding keys in `decide.rs`, the
//! drawing in `draw.rs`.

pub mod decide;
mod draw;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use tui_tree_widget::TreeItem;

pub use decide::refused_up_front;
pub(crate) use draw::render;

use crate::console::action::{self, step, Action};
use crate::console::diff::DiffRows;
use crate::console::drawn::Drawn;
use crate::console::state::{App, Screen};
use crate::console::symptoms;
use crate::console::tree::{self, TreeRow};
use crate::engine::api::{BlastNode, IncidentView, ProposalBody};

/// The panes of the incident detail, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Cause,
    Tree,
    Proposals,
    Body,
}

impl Pane {
    pub const ORDER: [Pane; 4] = [Pane::Cause, Pane::Tree, Pane::Proposals, Pane::Body];

    /// Its place in the Tab order.
    pub fn index(self) -> usize {
        Pane::ORDER
            .iter()
            .position(|pane| *pane == self)
            .unwrap_or(0)
    }

    fn step(self, forward: bool) -> Pane {
        let len = Pane::ORDER.len();
        let next = if forward {
            self.index() + 1
        } else {
            self.index() + len - 1
        };
        Pane::ORDER[next % len]
    }
}

/// The blast-radius tree of the open incident, rebuilt only when its nodes change.
#[derive(Debug, Clone, Default)]
pub struct TreeView {
    pub source: Vec<BlastNode>,
    pub rows: Vec<TreeRow>,
    /// The rows styled and cut to a width: made by the view when it first draws the
    /// rows at that width, and dropped here when the rows or the theme change.
    pub items: RefCell<Option<(u16, Vec<TreeItem<'static, String>>)>>,
    pub opened: HashSet<Vec<String>>,
    pub selected: Vec<String>,
}

impl TreeView {
    /// Follows the incident's blast radius when it changed: every node open the first
    /// time, the selection kept when it still shows.
    fn follow(&mut self, blast: &[BlastNode]) {
        let first_build = self.rows.is_empty() && self.source.is_empty();
        if !first_build && self.source == blast {
            return;
        }
        self.rows = tree::build(blast);
        self.items = Default::default();
        self.source = blast.to_vec();
        if first_build {
            self.opened = tree::all_parent_paths(&self.rows);
        }
        let visible = tree::visible_paths(&self.rows, &self.opened);
        if !visible.contains(&self.selected) {
            self.selected = visible.first().cloned().unwrap_or_default();
        }
    }

    fn move_by(&mut self, delta: isize) {
        let visible = tree::visible_paths(&self.rows, &self.opened);
        let at = visible
            .iter()
            .position(|path| *path == self.selected)
            .unwrap_or(0);
        if let Some(path) = visible.get(step(at, delta, visible.len())) {
            self.selected = path.clone();
        }
    }

    /// Left closes the selected node, or moves to its parent when it is already
    /// closed; right opens it. The same keys as a file tree.
    fn fold(&mut self, open: bool) {
        let path = self.selected.clone();
        if path.is_empty() {
            return;
        }
        let can_open = tree::has_children(&self.rows, &path);
        if open {
            if can_open {
                self.opened.insert(path);
            }
        } else if can_open && self.opened.contains(&path) {
            self.opened.remove(&path);
        } else if path.len() > 1 {
            self.selected.pop();
        }
    }
}

#[derive(Debug, Clone)]
pub struct Detail {
    pub incident: String,
    pub focus: Pane,
    pub cause_scroll: usize,
    pub proposal: usize,
    pub body_scroll: usize,
    pub receipt_open: bool,
    pub receipt_scroll: usize,
    pub tree: TreeView,
    /// The focused pane takes the whole of the detail (`z`).
    pub zoomed: bool,
    /// The incident's timeline in place of the panes (`T`), and how far it is scrolled.
    pub timeline_open: bool,
    pub timeline_scroll: usize,
    /// Side-by-side and unified rows per proposal content hash.
    pub diffs: HashMap<String, DiffRows>,
}

/// Logical lines (before wrapping) of what each scrollable pane shows.
struct ContentLengths {
    cause: usize,
    body: usize,
    receipt: usize,
    timeline: usize,
}

impl Detail {
    /// The incident's detail as it opens: on its proposals, nothing scrolled.
    pub fn new(incident: String) -> Detail {
        Detail {
            incident,
            focus: Pane::Proposals,
            cause_scroll: 0,
            proposal: 0,
            body_scroll: 0,
            receipt_open: false,
            receipt_scroll: 0,
            tree: TreeView::default(),
            zoomed: false,
            timeline_open: false,
            timeline_scroll: 0,
            diffs: HashMap::new(),
        }
    }

    /// The receipt or the timeline is over the panes.
    pub fn over_panes(&self) -> bool {
        self.receipt_open || self.timeline_open
    }

    /// Follows a new snapshot of the incident: its diffs, its proposals, its tree.
    pub fn refresh(&mut self, incident: &IncidentView) {
        for proposal in &incident.proposals {
            if let ProposalBody::Diff { old, new, .. } = &proposal.body {
                self.diffs
                    .entry(proposal.content_hash.clone())
                    .or_insert_with(|| DiffRows::compute(old, new));
            }
        }
        // Forget diffs no proposal of this incident has any more.
        let live: HashSet<&str> = incident
            .proposals
            .iter()
            .map(|proposal| proposal.content_hash.as_str())
            .collect();
        self.diffs.retain(|hash, _| live.contains(hash.as_str()));
        self.proposal = self
            .proposal
            .min(incident.proposals.len().saturating_sub(1));
        self.tree.follow(&incident.blast);
    }

    fn content_lengths(&self, incident: &IncidentView) -> ContentLengths {
        // The undo and verify lines and the blank line before them.
        const TRAILER: usize = 3;
        let body =
            incident
                .proposals
                .get(self.proposal)
                .map_or(0, |proposal| match &proposal.body {
                    ProposalBody::Diff { .. } => self
                        .diffs
                        .get(&proposal.content_hash)
                        .map_or(0, |rows| rows.side_by_side.len().max(rows.unified.len())),
                    ProposalBody::Hold { plan, .. } => 1 + plan.lines().count(),
                    ProposalBody::Note { text, .. } => text.lines().count(),
                    ProposalBody::Backfill { tables, .. } => 3 + tables.len(),
                })
                + TRAILER;
        ContentLengths {
            cause: 1 + incident.evidence.len() + symptoms::line_count(incident),
            body,
            receipt: incident.receipt.as_deref().map_or(0, |r| r.lines().count()),
            timeline: incident.timeline.len(),
        }
    }

    /// A page: the focused pane's height, or what is open over the panes.
    pub fn page(&self, drawn: &Drawn) -> usize {
        action::page(if self.over_panes() {
            drawn.receipt.get()
        } else {
            drawn.pane(self.focus)
        })
    }

    /// Moves in the focused pane, or in what is open over the panes. Without the
    /// incident (gone from the snapshot) there is nothing to scroll through.
    fn move_by(&mut self, incident: Option<&IncidentView>, delta: isize) {
        let lengths = incident.map_or(
            ContentLengths {
                cause: 0,
                body: 0,
                receipt: 0,
                timeline: 0,
            },
            |incident| self.content_lengths(incident),
        );
        let proposals = incident.map_or(0, |incident| incident.proposals.len());
        if self.timeline_open {
            self.timeline_scroll = step(self.timeline_scroll, delta, lengths.timeline);
            return;
        }
        if self.receipt_open {
            self.receipt_scroll = step(self.receipt_scroll, delta, lengths.receipt);
            return;
        }
        match self.focus {
            Pane::Cause => self.cause_scroll = step(self.cause_scroll, delta, lengths.cause),
            Pane::Body => self.body_scroll = step(self.body_scroll, delta, lengths.body),
            Pane::Proposals => {
                let next = step(self.proposal, delta, proposals);
                if next != self.proposal {
                    self.proposal = next;
                    self.body_scroll = 0;
                }
            }
            Pane::Tree => self.tree.move_by(delta),
        }
    }

    /// The timeline takes the panes' place, as the receipt does (and closes it).
    pub fn toggle_timeline(&mut self) {
        self.timeline_open = !self.timeline_open;
        self.timeline_scroll = 0;
        self.receipt_open = false;
    }

    /// What the movement keys go through here, as "already at the top of …" says it.
    pub fn moves_through(&self) -> &'static str {
        match self.focus {
            _ if self.over_panes() => "what is open",
            Pane::Cause => "the cause",
            Pane::Tree => "the blast radius",
            Pane::Proposals => "the proposals",
            Pane::Body => "the proposal",
        }
    }

    /// Everything a key can change here, to tell a key that did nothing.
    pub fn footprint(&self) -> String {
        format!(
            "{} {:?} {} {} {} {} {} {:?} {} {} {} {}",
            self.incident,
            self.focus,
            self.cause_scroll,
            self.proposal,
            self.body_scroll,
            self.receipt_open,
            self.receipt_scroll,
            self.tree.selected,
            self.tree.opened.len(),
            self.zoomed,
            self.timeline_open,
            self.timeline_scroll
        )
    }
}

/// What the detail screen does with `action`; false when it is not one of its own.
pub fn handle(app: &mut App, action: &Action) -> bool {
    let page = app.detail.as_ref().map_or(0, |d| d.page(&app.drawn));
    if let Some(delta) = action.distance(page) {
        let App {
            detail: Some(detail),
            ..
        } = app
        else {
            return true;
        };
        let incident =
            crate::console::state::find_incident(&app.snapshot, app.list.by_id(), &detail.incident);
        detail.move_by(incident, delta);
        return true;
    }
    let Some(detail) = &mut app.detail else {
        return false;
    };
    match action {
        Action::NextPane | Action::PreviousPane if detail.over_panes() => {
            app.message = Some(
                "Tab moves between the panes: close the receipt or timeline first (Esc)".into(),
            );
        }
        Action::NextPane | Action::PreviousPane => {
            detail.focus = detail.focus.step(*action == Action::NextPane);
        }
        Action::Collapse | Action::Expand => {
            if detail.focus == Pane::Tree && !detail.over_panes() {
                detail.tree.fold(*action == Action::Expand);
            }
        }
        Action::ToggleReceipt => toggle_receipt(app),
        Action::ToggleTimeline => detail.toggle_timeline(),
        // Zooming under the receipt or timeline would change nothing on screen.
        Action::Zoom if detail.over_panes() => {
            app.message = Some("z zooms a pane: close the receipt or timeline first (Esc)".into());
        }
        Action::Zoom => detail.zoomed = !detail.zoomed,
        Action::Back if detail.over_panes() => {
            detail.receipt_open = false;
            detail.timeline_open = false;
        }
        Action::Back => {
            app.screen = Screen::List;
            app.detail = None;
        }
        _ => return false,
    }
    true
}

/// The receipt, whenever the engine sent one: the final one of a resolved incident, or
/// the draft the chain holds so far for an open one.
fn toggle_receipt(app: &mut App) {
    let Some((id, has_receipt)) = app
        .open_incident()
        .map(|incident| (incident.id.clone(), incident.receipt.is_some()))
    else {
        return;
    };
    let Some(detail) = &mut app.detail else {
        return;
    };
    if has_receipt {
        detail.receipt_open = !detail.receipt_open;
        detail.receipt_scroll = 0;
        detail.timeline_open = false;
    } else {
        app.message = Some(format!(
            "no receipt yet: nothing about {id} is on the chain so far"
        ));
    }
}
