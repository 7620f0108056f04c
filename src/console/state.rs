//! Everything the console knows, as plain data, and the one function that changes it.
//! Keys, snapshots and resizes all become an [`Action`]; [`update`] applies it. Commands
//! for the engine are queued in `outbox` rather than sent from here, so this module does
//! no I/O and tests can drive it directly.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use crossterm::event::KeyEvent;
use ratatui::style::Style;
use ratatui::widgets::Block;
use ratatui_textarea::TextArea;
use tui_tree_widget::TreeItem;

use crate::console::diff::DiffRows;
use crate::console::incoming::{self, Needle, Prepared};
use crate::console::keys::{self, Verb};
use crate::console::line::LineOp;
use crate::console::listing::{ListView, Orders, SortColumn};
use crate::console::prompt::{self, Histories, Prompt};
use crate::console::symptoms;
use crate::console::theme::{self, Theme, ThemeFile};
use crate::console::tree::{self, TreeRow};
use crate::engine::api::{
    BlastNode, Command, IncidentStatus, IncidentView, ProposalBody, ProposalKind, ProposalState,
    ProposalView, Reply, Snapshot,
};
use crate::sanitize;

/// Rows PgUp/PgDn move before anything was drawn; after, a page is what shows.
pub const PAGE: usize = 10;

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A new snapshot from the engine (the whole world, replacing the last one).
    SnapshotArrived(Box<Snapshot>),
    /// The same, already sanitized and indexed off the input path (`incoming::prepare`):
    /// what the console's loop receives.
    SnapshotReady(Box<Prepared>),
    /// The engine's channel closed: keep showing the last snapshot until `q`.
    EngineStopped,
    /// The engine's hello: who it says we are, whether we may decide, when it started.
    Hello {
        started_at: String,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    List,
    Detail,
}

/// The list screen's two panes; Tab goes from one to the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPane {
    Incidents,
    Monitors,
}

/// The panes of the incident detail, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Cause,
    Tree,
    Proposals,
    Body,
}

impl Pane {
    const ORDER: [Pane; 4] = [Pane::Cause, Pane::Tree, Pane::Proposals, Pane::Body];

    /// Its place in the Tab order.
    pub fn index(self) -> usize {
        Pane::ORDER
            .iter()
            .position(|pane| *pane == self)
            .unwrap_or(0)
    }

    fn step(self, forward: bool) -> Pane {
        let at = Pane::ORDER
            .iter()
            .position(|pane| *pane == self)
            .unwrap_or(0);
        let len = Pane::ORDER.len();
        let next = if forward { at + 1 } else { at + len - 1 };
        Pane::ORDER[next % len]
    }
}

/// The decisions that need a reason typed first: three on the selected proposal, three
/// on the incident as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
    RollBack,
    /// Close the incident by hand.
    Resolve,
    /// Open a resolved incident again.
    Reopen,
    /// Accept the incident's new level as the normal.
    AcceptLevel,
}

impl Decision {
    pub fn verb(self) -> &'static str {
        match self {
            Decision::Approve => "Approve",
            Decision::Reject => "Reject",
            Decision::RollBack => "Roll back",
            Decision::Resolve => "Resolve",
            Decision::Reopen => "Reopen",
            Decision::AcceptLevel => "Accept the new level of",
        }
    }

    /// A rejection is final, a roll back undoes work, and closing, reopening or
    /// accepting a new level goes in the receipt: all of them must say why.
    pub fn reason_required(self) -> bool {
        !matches!(self, Decision::Approve)
    }
}

/// The reason modal. For a proposal it keeps the content hash the person was looking at
/// when they pressed the key, so a proposal that changes underneath is never approved
/// unseen.
#[derive(Debug, Clone)]
pub struct ReasonModal {
    pub decision: Decision,
    /// The proposal decided, or the incident for resolve and reopen.
    pub target: String,
    pub target_title: String,
    /// The content hash shown, for a proposal; `None` for an incident.
    pub content_hash: Option<String>,
    pub text: TextArea<'static>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Command,
    Filter,
    /// `/` in the help.
    HelpSearch,
}

#[derive(Debug, Clone)]
pub enum Overlay {
    None,
    Help {
        scroll: usize,
    },
    /// The alert outbox, per destination (`console/overlays/alerts.rs`).
    AlertOutbox {
        scroll: usize,
    },
    Reason(Box<ReasonModal>),
    /// The `:` command line or the `/` filter (`console/prompt.rs`).
    Prompt(Prompt),
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
}

pub struct App {
    pub snapshot: Snapshot,
    /// When the snapshot arrived: a countdown in it is counted on from there.
    pub snapshot_received: Option<std::time::Instant>,
    /// False until the engine sends its first snapshot.
    pub connected: bool,
    pub engine_stopped: bool,
    pub read_only: bool,
    pub theme: Theme,
    user_theme: Option<ThemeFile>,
    no_color: bool,
    pub screen: Screen,
    pub overlay: Overlay,
    /// The incident list filter: a substring, or `!substring` to hide matches.
    pub filter: String,
    /// Selected incident by id, so the selection survives incidents being added.
    pub selected_incident: Option<String>,
    /// The list screen's pane in focus.
    pub list_pane: ListPane,
    /// The monitors in the order the pane shows them (indices into the snapshot's),
    /// breaches first; built when a snapshot arrives.
    pub monitor_order: Vec<usize>,
    /// The selected monitor, as a position in `monitor_order`.
    pub monitor_selected: usize,
    pub detail: Option<Detail>,
    /// Side-by-side and unified rows per proposal content hash.
    pub diffs: HashMap<String, DiffRows>,
    /// Feedback from the console itself (not the engine), shown until the next key.
    pub message: Option<String>,
    /// Commands waiting to be sent to the engine (numbered as they leave, see `link`).
    pub outbox: Vec<Command>,
    /// What the engine says about this console, from its hello.
    pub link: crate::console::link::LinkState,
    pub quit: bool,
    pub suspend: bool,
    /// Clear the terminal before the next draw (resize, tmux re-attach, Ctrl-L).
    pub full_redraw: bool,
    /// Where the last frame put things (written by the view as it draws).
    pub drawn: crate::console::drawn::Drawn,
    /// What the command line and the filter have had typed into them.
    pub histories: Histories,
    /// The list's order and whether it shows resolved incidents.
    pub list: ListView,
    /// Per incident of `snapshot`, in its order: what the filter searches, lowercased.
    search: Vec<String>,
    /// Where each incident of `snapshot` is, by id.
    by_id: HashMap<String, usize>,
    /// The widest text of each list column in `snapshot` (`incoming::Prepared`).
    list_widths: [usize; 6],
    /// Every column's order of `snapshot`'s incidents (`incoming::Prepared`).
    orders: Orders,
    /// The incidents the list shows, as positions in `snapshot.incidents` in the order
    /// shown, and the filter and list view they were found for: computed when the
    /// snapshot, the filter, the sort or the open/all toggle changes, never per frame.
    shown: Vec<usize>,
    shown_for: Option<(String, ListView)>,
    /// The snapshot the last one replaced: the console's loop hands it back to the link
    /// thread, which frees it there, off the input path.
    retired: Option<Box<Prepared>>,
    /// The help's search (`/`, `n`, `N`).
    pub help_search: crate::console::help::Search,
    /// Text to put on the terminal's clipboard (OSC 52) once this key is handled.
    pub clipboard: Option<String>,
    /// Clicks and the wheel are read (off unless asked for).
    pub mouse: bool,
    /// The key registry with the person's `[keys]` over it.
    pub keymap: crate::console::keymap::Keymap,
}

impl App {
    pub fn new(
        read_only: bool,
        theme: Theme,
        user_theme: Option<ThemeFile>,
        no_color: bool,
    ) -> App {
        App {
            snapshot: Snapshot::default(),
            snapshot_received: None,
            connected: false,
            engine_stopped: false,
            read_only,
            theme,
            user_theme,
            no_color,
            screen: Screen::List,
            overlay: Overlay::None,
            filter: String::new(),
            selected_incident: None,
            list_pane: ListPane::Incidents,
            monitor_order: Vec::new(),
            monitor_selected: 0,
            detail: None,
            diffs: HashMap::new(),
            message: None,
            outbox: Vec::new(),
            link: Default::default(),
            quit: false,
            suspend: false,
            full_redraw: false,
            drawn: Default::default(),
            histories: Default::default(),
            list: ListView::default(),
            help_search: Default::default(),
            clipboard: None,
            mouse: false,
            keymap: Default::default(),
            search: Vec::new(),
            by_id: HashMap::new(),
            list_widths: [0; 6],
            orders: Orders::default(),
            shown: Vec::new(),
            shown_for: None,
            retired: None,
        }
    }

    /// The widest text of each of the list's columns but the mark, over the snapshot.
    pub fn list_widths(&self) -> [usize; 6] {
        self.list_widths
    }

    /// The snapshot replaced by the last one that arrived, to be freed elsewhere.
    pub fn take_retired(&mut self) -> Option<Box<Prepared>> {
        self.retired.take()
    }

    /// Whether `shown` was found for this filter, this list view and this snapshot.
    fn shown_is_current(&self) -> bool {
        self.shown_for
            .as_ref()
            .is_some_and(|(filter, list)| filter == &self.filter && list == &self.list)
            && self.search.len() == self.snapshot.incidents.len()
    }

    /// The positions the list shows, when they are current; `None` sends the callers
    /// the slow way (the snapshot, the filter or the list view was changed without
    /// `update`, as a test may).
    fn shown(&self) -> Option<&[usize]> {
        self.shown_is_current().then_some(self.shown.as_slice())
    }

    fn visible_count(&self) -> usize {
        match self.shown() {
            Some(shown) => shown.len(),
            None => self.visible_incidents().len(),
        }
    }

    /// The `position`th incident the list shows.
    fn visible_at(&self, position: usize) -> Option<&IncidentView> {
        match self.shown() {
            Some(shown) => shown
                .get(position)
                .and_then(|&at| self.snapshot.incidents.get(at)),
            None => self.visible_incidents().get(position).copied(),
        }
    }

    /// Whole seconds since the snapshot arrived (0 before any did).
    pub fn snapshot_age_secs(&self) -> u64 {
        self.snapshot_received
            .map_or(0, |at| at.elapsed().as_secs())
    }

    /// Something on screen counts down (the outbox's next try): the console redraws it
    /// once a second, and only then.
    pub fn counting_down(&self) -> bool {
        matches!(self.overlay, Overlay::AlertOutbox { .. })
            && self
                .snapshot
                .outbox
                .iter()
                .any(|d| d.next_attempt_in_secs.is_some())
    }

    /// The incidents the list shows, after the filter.
    pub fn visible_incidents(&self) -> Vec<&IncidentView> {
        match self.shown() {
            Some(shown) => shown
                .iter()
                .map(|&at| &self.snapshot.incidents[at])
                .collect(),
            None => {
                let incidents = &self.snapshot.incidents;
                let search: Vec<String> = incidents.iter().map(incoming::searchable).collect();
                let orders = Orders::new(incidents, &search);
                let mut shown = Vec::new();
                find_shown(
                    &mut shown,
                    incidents,
                    &search,
                    &orders,
                    &self.filter,
                    self.list,
                );
                shown.iter().map(|&at| &incidents[at]).collect()
            }
        }
    }

    pub fn selected_index(&self) -> Option<usize> {
        let id = self.selected_incident.as_ref()?;
        if let Some(shown) = self.shown() {
            match self.by_id.get(id) {
                None => return None,
                Some(&at) if self.snapshot.incidents.get(at).is_some_and(|i| &i.id == id) => {
                    // Sorted, the positions are in no order: a scan of plain numbers.
                    return match self.list.sort {
                        None => shown.binary_search(&at).ok(),
                        Some(_) => shown.iter().position(|&p| p == at),
                    };
                }
                // The index is not this snapshot's: look the slow way.
                Some(_) => {}
            }
        }
        self.visible_incidents()
            .iter()
            .position(|incident| &incident.id == id)
    }

    /// The incident the detail screen shows, if it is still in the snapshot.
    pub fn open_incident(&self) -> Option<&IncidentView> {
        let id = &self.detail.as_ref()?.incident;
        match self
            .by_id
            .get(id)
            .and_then(|&at| self.snapshot.incidents.get(at))
        {
            Some(incident) if &incident.id == id => Some(incident),
            _ => self.snapshot.incidents.iter().find(|i| &i.id == id),
        }
    }

    pub fn selected_proposal(&self) -> Option<&ProposalView> {
        let index = self.detail.as_ref()?.proposal;
        self.open_incident()?.proposals.get(index)
    }
}

pub fn status_word(status: IncidentStatus) -> &'static str {
    match status {
        IncidentStatus::Open => "open",
        IncidentStatus::Verifying => "verifying",
        IncidentStatus::Resolved => "resolved",
    }
}

pub fn update(app: &mut App, action: Action) {
    // A console message answers the last key; the next key replaces it.
    if !matches!(
        action,
        Action::SnapshotArrived(_)
            | Action::SnapshotReady(_)
            | Action::EngineStopped
            | Action::Resized
            | Action::Hello { .. }
            | Action::ReplyArrived(_)
            | Action::ConnectionLost(_)
    ) {
        app.message = None;
    }
    match action {
        // Raw engine text enters only through `incoming::prepare`, which cleans it before
        // anything can draw it. (The answer to a request comes in its own reply, never
        // from the snapshot.)
        Action::SnapshotArrived(snapshot) => {
            install(app, Box::new(incoming::prepare(*snapshot, None)))
        }
        Action::SnapshotReady(prepared) => install(app, prepared),
        Action::EngineStopped => app.engine_stopped = true,
        Action::Hello {
            started_at,
            you,
            read_only,
        } => crate::console::link::hello(app, started_at, you, read_only),
        Action::ReplyArrived(reply) => crate::console::link::reply(app, reply),
        Action::ConnectionLost(reason) => crate::console::link::lost(app, reason),
        Action::Resized | Action::Redraw => app.full_redraw = true,
        Action::Suspend => app.suspend = true,
        Action::Quit => app.quit = true,
        Action::Back => back(app),
        Action::Help => open_help(app),
        Action::Search => crate::console::help::start_search(app),
        Action::SearchNext => crate::console::help::next_match(app, true),
        Action::SearchPrevious => crate::console::help::next_match(app, false),
        Action::AlertOutbox => app.overlay = Overlay::AlertOutbox { scroll: 0 },
        Action::CommandLine => prompt::open(app, PromptKind::Command),
        Action::Filter => prompt::open(app, PromptKind::Filter),
        Action::Line(op) => prompt::apply(app, op),
        Action::Submit => submit(app),
        Action::NewLine => {
            if let Overlay::Reason(modal) = &mut app.overlay {
                modal.text.insert_newline();
            }
        }
        Action::Edit(key) => edit(app, key),
        Action::Paste(text) => paste(app, &text),
        Action::Mouse(event) => crate::console::mouse::handle(app, event),
        Action::Up => move_by(app, -1),
        Action::Down => move_by(app, 1),
        Action::PageUp => move_by(app, -(page(app) as isize)),
        Action::PageDown => move_by(app, page(app) as isize),
        Action::HalfPageUp => move_by(app, -(page(app) as isize / 2).max(1)),
        Action::HalfPageDown => move_by(app, (page(app) as isize / 2).max(1)),
        Action::Top => move_by(app, isize::MIN / 2),
        Action::Bottom => move_by(app, isize::MAX / 2),
        Action::Open => open_detail(app),
        Action::NextPane | Action::PreviousPane => match (app.screen, &mut app.detail) {
            (Screen::Detail, Some(detail)) if detail.receipt_open || detail.timeline_open => {
                app.message = Some(
                    "Tab moves between the panes: close the receipt or timeline first (Esc)".into(),
                );
            }
            (Screen::Detail, Some(detail)) => {
                detail.focus = detail.focus.step(action == Action::NextPane);
            }
            (Screen::List, _) => {
                app.list_pane = match app.list_pane {
                    ListPane::Incidents if !app.monitor_order.is_empty() => ListPane::Monitors,
                    _ => ListPane::Incidents,
                };
            }
            _ => {}
        },
        Action::Collapse => open_tree_node(app, false),
        Action::Expand => open_tree_node(app, true),
        Action::ToggleReceipt => toggle_receipt(app),
        Action::Copy => copy(app, crate::console::clipboard::what_shows(app)),
        Action::ToggleTimeline => toggle_timeline(app),
        Action::Zoom => match &mut app.detail {
            // Zooming under the receipt or timeline would change nothing on screen.
            Some(detail) if detail.receipt_open || detail.timeline_open => {
                app.message =
                    Some("z zooms a pane: close the receipt or timeline first (Esc)".into());
            }
            Some(detail) => detail.zoomed = !detail.zoomed,
            None => {}
        },
        Action::SortNext => change_list(app, ListView::next_column),
        Action::SortReverse => change_list(app, ListView::reverse),
        Action::ToggleOpenOnly => change_list(app, |list| list.open_only = !list.open_only),
        Action::Approve => start_decision(app, Decision::Approve),
        Action::Reject => start_decision(app, Decision::Reject),
        Action::RollBack => start_decision(app, Decision::RollBack),
        Action::Resolve => start_incident_decision(app, Decision::Resolve),
        Action::AcceptLevel => start_incident_decision(app, Decision::AcceptLevel),
        Action::Reopen => start_incident_decision(app, Decision::Reopen),
        Action::Forward => forward(app),
        Action::QueueRun => queue_run(app),
    }
    // However an action changed the filter or the list view, the list follows it.
    if !app.shown_is_current() {
        refresh_derived(app);
    }
}

/// Moves a prepared snapshot in: no text is cleaned or lowercased here, and the one it
/// replaces is kept for the loop to free elsewhere, so this costs next to nothing
/// however many incidents there are.
fn install(app: &mut App, mut prepared: Box<Prepared>) {
    // Swapped in place: the box that brought the new one takes the old one away, so the
    // input path allocates nothing here either.
    std::mem::swap(&mut app.snapshot, &mut prepared.snapshot);
    std::mem::swap(&mut app.search, &mut prepared.search);
    std::mem::swap(&mut app.by_id, &mut prepared.by_id);
    std::mem::swap(&mut app.list_widths, &mut prepared.list_widths);
    std::mem::swap(&mut app.orders, &mut prepared.orders);
    app.retired = Some(prepared);
    app.snapshot_received = Some(std::time::Instant::now());
    app.connected = true;
    app.shown_for = None;
    refresh_derived(app);
}

/// Finds the incidents the list shows, in the precomputed search texts, in the order
/// the list view asks for.
fn refresh_shown(app: &mut App) {
    find_shown(
        &mut app.shown,
        &app.snapshot.incidents,
        &app.search,
        &app.orders,
        &app.filter,
        app.list,
    );
    app.shown_for = Some((app.filter.clone(), app.list));
}

/// The positions in `incidents` (whose search texts are `search` and whose column
/// orders are `orders`) that `filter` and `list` show, in the order shown, into `shown`:
/// one pass, whatever the sort.
fn find_shown(
    shown: &mut Vec<usize>,
    incidents: &[IncidentView],
    search: &[String],
    orders: &Orders,
    filter: &str,
    list: ListView,
) {
    let needle = Needle::new(filter);
    shown.clear();
    shown.extend(
        orders
            .positions(list.sort, incidents.len())
            .filter(|&at| needle.shows(&search[at]) && list.shows(&incidents[at])),
    );
}

/// Recompute what depends on the snapshot, the filter and the list view: the incidents
/// shown, selections that may have gone, the tree and the diffs of the open incident.
/// Cheap when nothing relevant changed.
pub(crate) fn refresh_derived(app: &mut App) {
    app.monitor_order = crate::console::screens::monitors::order(&app.snapshot.monitors);
    app.monitor_selected = app
        .monitor_selected
        .min(app.monitor_order.len().saturating_sub(1));
    if app.shown().is_none() {
        refresh_shown(app);
    }
    if app.selected_index().is_none() {
        app.selected_incident = app.visible_at(0).map(|incident| incident.id.clone());
    }

    let Some(incident) = app.open_incident().cloned() else {
        return;
    };
    for proposal in &incident.proposals {
        if let ProposalBody::Diff { old, new, .. } = &proposal.body {
            app.diffs
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
    app.diffs.retain(|hash, _| live.contains(hash.as_str()));

    if let Some(detail) = &mut app.detail {
        detail.proposal = detail
            .proposal
            .min(incident.proposals.len().saturating_sub(1));
        let view = &mut detail.tree;
        let first_build = view.rows.is_empty() && view.source.is_empty();
        if first_build || view.source != incident.blast {
            view.rows = tree::build(&incident.blast);
            view.items = Default::default();
            view.source = incident.blast.clone();
            if first_build {
                view.opened = tree::all_parent_paths(&view.rows);
            }
            let visible = tree::visible_paths(&view.rows, &view.opened);
            if !visible.contains(&view.selected) {
                view.selected = visible.first().cloned().unwrap_or_default();
            }
        }
    }
}

/// The help opens at its top, with no search from last time.
fn open_help(app: &mut App) {
    app.overlay = Overlay::Help { scroll: 0 };
    app.help_search = Default::default();
}

fn back(app: &mut App) {
    if app.help_search.typing.is_some() {
        crate::console::help::cancel_search(app);
        return;
    }
    if !matches!(app.overlay, Overlay::None) {
        if let Overlay::Prompt(Prompt {
            kind: PromptKind::Filter,
            ..
        }) = app.overlay
        {
            app.filter.clear();
            refresh_derived(app);
        }
        app.overlay = Overlay::None;
        return;
    }
    match app.screen {
        Screen::Detail => {
            let over_panes = app
                .detail
                .as_ref()
                .is_some_and(|d| d.receipt_open || d.timeline_open);
            if let (true, Some(detail)) = (over_panes, &mut app.detail) {
                detail.receipt_open = false;
                detail.timeline_open = false;
            } else {
                app.screen = Screen::List;
                app.detail = None;
            }
        }
        Screen::List if app.list_pane == ListPane::Monitors => {
            app.list_pane = ListPane::Incidents;
        }
        Screen::List => {
            if !app.filter.is_empty() {
                app.filter.clear();
                refresh_derived(app);
            }
        }
    }
}

fn open_detail(app: &mut App) {
    if app.screen != Screen::List || app.list_pane != ListPane::Incidents {
        return;
    }
    let Some(id) = app.selected_incident.clone() else {
        return;
    };
    if app.drawn.left_out(&app.drawn.incident_shown) {
        app.message = Some(format!(
            "{id} is not on screen: make the terminal taller to open it"
        ));
        return;
    }
    app.detail = Some(Detail {
        incident: id,
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
    });
    app.screen = Screen::Detail;
    refresh_derived(app);
}

fn step(value: usize, delta: isize, len: usize) -> usize {
    let last = len.saturating_sub(1) as isize;
    (value as isize).saturating_add(delta).clamp(0, last.max(0)) as usize
}

/// Move a scroll offset within `lines` lines of content. The view clamps again to its
/// height; clamping here too keeps End followed by k from scrolling through nothing.
fn scroll(value: usize, delta: isize, lines: usize) -> usize {
    step(value, delta, lines)
}

/// Logical lines (before wrapping) of what each scrollable pane shows.
struct ContentLengths {
    cause: usize,
    body: usize,
    receipt: usize,
    timeline: usize,
}

fn content_lengths(app: &App) -> ContentLengths {
    let Some(incident) = app.open_incident() else {
        return ContentLengths {
            cause: 0,
            body: 0,
            receipt: 0,
            timeline: 0,
        };
    };
    // The undo and verify lines and the blank line before them.
    const TRAILER: usize = 3;
    let body = app
        .selected_proposal()
        .map_or(0, |proposal| match &proposal.body {
            ProposalBody::Diff { .. } => app
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

/// A page: the rows of what the keys move in, as the last frame drew it (the list's
/// rows, the focused pane, the overlay).
fn page(app: &App) -> usize {
    let drawn = &app.drawn;
    let area = match (&app.overlay, app.screen) {
        (Overlay::Help { .. }, _) => drawn.help.get(),
        (Overlay::AlertOutbox { .. }, _) => drawn.outbox.get(),
        (_, Screen::List) if app.list_pane == ListPane::Monitors => drawn.monitor_rows.get(),
        (_, Screen::List) => drawn.list_rows.get(),
        (_, Screen::Detail) => match &app.detail {
            Some(detail) if detail.receipt_open || detail.timeline_open => drawn.receipt.get(),
            Some(detail) => drawn.pane(detail.focus),
            None => Default::default(),
        },
    };
    match area.height as usize {
        0 => PAGE,
        rows => rows,
    }
}

fn move_by(app: &mut App, delta: isize) {
    if let Overlay::Help { scroll: _ } = app.overlay {
        let furthest = crate::console::help::max_scroll(app);
        if let Overlay::Help { scroll: offset } = &mut app.overlay {
            *offset = step(*offset, delta, furthest + 1);
        }
        return;
    }
    if let Overlay::AlertOutbox { scroll: _ } = app.overlay {
        let lines = crate::console::overlays::alerts::line_count(app);
        if let Overlay::AlertOutbox { scroll: offset } = &mut app.overlay {
            *offset = scroll(*offset, delta, lines);
        }
        return;
    }
    if !matches!(app.overlay, Overlay::None) {
        return;
    }
    match app.screen {
        Screen::List if app.list_pane == ListPane::Monitors => {
            app.monitor_selected = step(app.monitor_selected, delta, app.monitor_order.len());
        }
        Screen::List => {
            let at = app.selected_index().unwrap_or(0);
            let to = step(at, delta, app.visible_count());
            app.selected_incident = app.visible_at(to).map(|incident| incident.id.clone());
        }
        Screen::Detail => {
            let proposals = app.open_incident().map_or(0, |i| i.proposals.len());
            let lengths = content_lengths(app);
            let Some(detail) = &mut app.detail else {
                return;
            };
            if detail.timeline_open {
                detail.timeline_scroll = scroll(detail.timeline_scroll, delta, lengths.timeline);
                return;
            }
            if detail.receipt_open {
                detail.receipt_scroll = scroll(detail.receipt_scroll, delta, lengths.receipt);
                return;
            }
            match detail.focus {
                Pane::Cause => {
                    detail.cause_scroll = scroll(detail.cause_scroll, delta, lengths.cause)
                }
                Pane::Body => detail.body_scroll = scroll(detail.body_scroll, delta, lengths.body),
                Pane::Proposals => {
                    let next = step(detail.proposal, delta, proposals);
                    if next != detail.proposal {
                        detail.proposal = next;
                        detail.body_scroll = 0;
                    }
                }
                Pane::Tree => {
                    let tree = &mut detail.tree;
                    let visible = tree::visible_paths(&tree.rows, &tree.opened);
                    let at = visible
                        .iter()
                        .position(|path| *path == tree.selected)
                        .unwrap_or(0);
                    if let Some(path) = visible.get(step(at, delta, visible.len())) {
                        tree.selected = path.clone();
                    }
                }
            }
        }
    }
}

/// Left closes the selected node, or moves to its parent when it is already closed;
/// right opens it. The same keys as a file tree.
fn open_tree_node(app: &mut App, open: bool) {
    let Some(detail) = &mut app.detail else {
        return;
    };
    if detail.focus != Pane::Tree || detail.receipt_open || detail.timeline_open {
        return;
    }
    let tree = &mut detail.tree;
    let path = tree.selected.clone();
    if path.is_empty() {
        return;
    }
    let can_open = tree::has_children(&tree.rows, &path);
    if open {
        if can_open {
            tree.opened.insert(path);
        }
    } else if can_open && tree.opened.contains(&path) {
        tree.opened.remove(&path);
    } else if path.len() > 1 {
        tree.selected.pop();
    }
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

/// The timeline takes the panes' place, as the receipt does (and closes it).
fn toggle_timeline(app: &mut App) {
    let Some(detail) = &mut app.detail else {
        return;
    };
    detail.timeline_open = !detail.timeline_open;
    detail.timeline_scroll = 0;
    detail.receipt_open = false;
}

/// Dangerous keys are removed in read-only mode; this is the second lock on the door.
fn refuse_if_read_only(app: &mut App) -> bool {
    if app.read_only {
        app.message = Some("read-only console: decisions are disabled".into());
    }
    app.read_only
}

fn start_decision(app: &mut App, decision: Decision) {
    if refuse_if_read_only(app) {
        return;
    }
    let Some(proposal) = app.selected_proposal().cloned() else {
        app.message = Some("open an incident and select a proposal first".into());
        return;
    };
    if refuse_if_proposal_not_shown(app, &proposal.id) {
        return;
    }
    if let Some(why) = refused_up_front(app, &proposal, decision) {
        app.message = Some(why);
        return;
    }
    open_reason(
        app,
        decision,
        proposal.id,
        proposal.title,
        Some(proposal.content_hash),
    );
}

/// What the engine would refuse, known before anyone types a reason: a proposal
/// already decided (or not approved, for a roll back), a note (it is forwarded, not
/// decided), and a person the snapshot's deciders do not include. The engine checks
/// all of it again; without the policy at hand (`decider_accounts` absent) it alone
/// decides.
pub(crate) fn refused_up_front(
    app: &App,
    proposal: &ProposalView,
    decision: Decision,
) -> Option<String> {
    let id = &proposal.id;
    let state = crate::console::widgets::proposal_state(proposal.state, &app.theme).content;
    let state = state.split_once(' ').map_or(&*state, |(_, word)| word);
    if proposal.kind == ProposalKind::Note && decision != Decision::RollBack {
        return Some(format!(
            "{id} is a note: nobody approves or rejects it; f forwards it to its owner"
        ));
    }
    match (decision, proposal.state) {
        (Decision::Approve | Decision::Reject, ProposalState::Pending) => {}
        (Decision::Approve | Decision::Reject, _) => {
            return Some(format!("{id} is {state}: there is nothing left to decide"))
        }
        (Decision::RollBack, ProposalState::Approved) => {}
        (Decision::RollBack, _) => {
            return Some(format!(
                "{id} is {state}: only an approved proposal is rolled back"
            ))
        }
        _ => {}
    }
    let accounts = proposal.decider_accounts.as_ref()?;
    let me = crate::approve::account_in_display(app.link.you.as_deref()?)?;
    if accounts.iter().any(|account| account == me) {
        return None;
    }
    let roles = proposal.deciders.join(", ");
    Some(if accounts.is_empty() {
        format!("nobody may decide {id}: no one in the policy holds {roles}")
    } else {
        format!(
            "{me} may not decide {id}: {roles} decides it ({}); the engine would refuse",
            accounts.join(", ")
        )
    })
}

/// `C`, `O` and `N`: the same reason box, for the open incident. The engine decides whether
/// this person may; the console only keeps a key from asking what cannot be.
fn start_incident_decision(app: &mut App, decision: Decision) {
    if refuse_if_read_only(app) {
        return;
    }
    let Some(incident) = app.open_incident() else {
        app.message = Some("open an incident first".into());
        return;
    };
    let resolved = incident.status == IncidentStatus::Resolved;
    let (id, title) = (incident.id.clone(), incident.title.clone());
    let me = app
        .link
        .you
        .as_deref()
        .and_then(crate::approve::account_in_display);
    if let (Some(accounts), Some(me)) = (&incident.owner_accounts, me) {
        if !accounts.iter().any(|account| account == me) {
            app.message = Some(if accounts.is_empty() {
                format!(
                    "nobody may close or reopen {id} by hand: no domain in the policy covers {}",
                    incident.table
                )
            } else {
                format!(
                    "{me} may not close, reopen or accept a level of {id}: its table's owners do ({}); the engine would refuse",
                    accounts.join(", ")
                )
            });
            return;
        }
    }
    match decision {
        Decision::Resolve if resolved => {
            app.message = Some(format!("{id} is already resolved (O reopens it)"));
        }
        Decision::Reopen if !resolved => {
            app.message = Some(format!("{id} is not resolved (C closes it)"));
        }
        Decision::AcceptLevel if resolved => {
            app.message = Some(format!("{id} is resolved: there is no level to accept"));
        }
        _ => open_reason(app, decision, id, title, None),
    }
}

fn open_reason(
    app: &mut App,
    decision: Decision,
    target: String,
    target_title: String,
    content_hash: Option<String>,
) {
    let mut text = TextArea::default();
    text.set_block(Block::bordered().border_style(app.theme.border));
    text.set_cursor_line_style(Style::default());
    let requirement = if decision.reason_required() {
        "required"
    } else {
        "optional"
    };
    text.set_placeholder_text(format!("reason ({requirement})"));
    text.set_placeholder_style(app.theme.muted);
    app.overlay = Overlay::Reason(Box::new(ReasonModal {
        decision,
        target,
        target_title,
        content_hash,
        text,
        error: None,
    }));
}

/// A decision acts on the proposal the person sees selected: one the last frame left
/// out (a terminal too small, the receipt or the timeline over the panes) is refused.
fn refuse_if_proposal_not_shown(app: &mut App, id: &str) -> bool {
    let left_out = app.drawn.left_out(&app.drawn.proposal_shown);
    if left_out {
        app.message = Some(format!(
            "{id} is not on screen: close the receipt or timeline, or make the terminal larger"
        ));
    }
    left_out
}

fn forward(app: &mut App) {
    if refuse_if_read_only(app) {
        return;
    }
    match app.selected_proposal() {
        Some(proposal) if proposal.kind == ProposalKind::Note => {
            let id = proposal.id.clone();
            if refuse_if_proposal_not_shown(app, &id) {
                return;
            }
            app.message = Some(format!("forward {id} sent; the engine will confirm"));
            app.outbox.push(Command::Forward { proposal: id });
        }
        Some(_) => app.message = Some("only a note proposal can be forwarded".into()),
        None => app.message = Some("open an incident and select a note proposal first".into()),
    }
}

fn queue_run(app: &mut App) {
    if refuse_if_read_only(app) {
        return;
    }
    let Some(incident) = app.open_incident().map(|incident| incident.id.clone()) else {
        app.message = Some("open an incident first".into());
        return;
    };
    app.message = Some(format!(
        "run queued for {incident}; the engine will confirm"
    ));
    app.outbox.push(Command::QueueRun { incident });
}

fn submit(app: &mut App) {
    if app.help_search.typing.is_some() {
        crate::console::help::finish_search(app);
        return;
    }
    match std::mem::replace(&mut app.overlay, Overlay::None) {
        Overlay::Reason(mut modal) => {
            let reason = modal.text.lines().join("\n").trim().to_string();
            if reason.is_empty() && modal.decision.reason_required() {
                modal.error = Some(format!(
                    "{} needs a reason: say why, for the receipt",
                    modal.decision.verb()
                ));
                app.overlay = Overlay::Reason(modal);
                return;
            }
            let ReasonModal {
                decision,
                target,
                content_hash,
                ..
            } = *modal;
            let sent = format!(
                "{} {target} sent; the engine will confirm",
                decision.verb().to_lowercase()
            );
            let command = match (decision, content_hash) {
                (Decision::Approve, Some(content_hash)) => Command::Approve {
                    proposal: target,
                    content_hash,
                    reason,
                },
                (Decision::Reject, Some(content_hash)) => Command::Reject {
                    proposal: target,
                    content_hash,
                    reason,
                },
                (Decision::RollBack, _) => Command::RollBack {
                    proposal: target,
                    reason,
                },
                (Decision::Resolve, _) => Command::Resolve {
                    incident: target,
                    reason,
                },
                (Decision::Reopen, _) => Command::Reopen {
                    incident: target,
                    reason,
                },
                (Decision::AcceptLevel, _) => Command::Accept {
                    incident: target,
                    reason,
                },
                // Approve and reject are only opened on a proposal, with its hash.
                (Decision::Approve | Decision::Reject, None) => return,
            };
            app.message = Some(sent);
            app.outbox.push(command);
        }
        Overlay::Prompt(line) => {
            prompt::remember(app, &line);
            match line.kind {
                PromptKind::Command => run_command_line(app, line.text()),
                // The filter already applies as it is typed; Enter just keeps it. (The
                // help's search is never this overlay.)
                PromptKind::Filter | PromptKind::HelpSearch => {}
            }
        }
        other => app.overlay = other,
    }
}

/// Runs a `:` line. What each command is, and whether a read-only console has it, is
/// in the one table (`keys::COMMANDS`); `:ID` alone opens that incident.
fn run_command_line(app: &mut App, line: &str) {
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return;
    };
    let rest: Vec<&str> = words.collect();
    let Some(spec) = keys::find_command(first) else {
        if let Some(id) = incident_named(app, first) {
            open_incident_by_id(app, &id);
        } else {
            app.message = Some(format!(
                "unknown command :{} (try :help, :theme NAME, :q)",
                sanitize::for_terminal(first)
            ));
        }
        return;
    };
    // Dangerous commands are not offered in read-only mode; this is the second lock.
    if spec.dangerous && app.read_only {
        app.message = Some(format!(
            "read-only console: :{} is not available",
            spec.name
        ));
        return;
    }
    let reason = rest.join(" ");
    match spec.verb {
        Verb::Quit => app.quit = true,
        Verb::Help => open_help(app),
        // The org-wide stop: anyone may pull it; lifting takes two different people.
        Verb::Stop if reason.is_empty() => app.message = Some("say why: :stop REASON".into()),
        Verb::Stop => app.outbox.push(Command::OrgStop { reason }),
        Verb::Lift => app.outbox.push(Command::LiftStop),
        Verb::Run => queue_run(app),
        Verb::Timeline => match app.screen {
            Screen::Detail => toggle_timeline(app),
            Screen::List => app.message = Some("open an incident first, then :timeline".into()),
        },
        Verb::Mouse => {
            app.mouse = match rest.first().map(|word| word.to_lowercase()).as_deref() {
                None => !app.mouse,
                Some("on") => true,
                Some("off") => false,
                Some(other) => {
                    app.message = Some(format!(
                        "{} is not on or off",
                        sanitize::for_terminal(other)
                    ));
                    return;
                }
            };
            app.message = Some(if app.mouse {
                "mouse on: a click selects (again: opens) and focuses, the wheel scrolls".into()
            } else {
                "mouse off".into()
            });
        }
        Verb::Copy => {
            use crate::console::clipboard::{self, Target};
            match rest.first() {
                None => copy(app, clipboard::what_shows(app)),
                Some(name) => match Target::named(name) {
                    Some(target) => copy(app, clipboard::target(app, target)),
                    None => {
                        app.message = Some(format!(
                            "copy what? {} is not id, hash, command or sql",
                            sanitize::for_terminal(name)
                        ))
                    }
                },
            }
        }
        Verb::Sort => match rest.first() {
            None => change_list(app, |list| list.sort = None),
            Some(name) => match SortColumn::named(name) {
                Some(column) => sort_by(app, column),
                None => {
                    app.message = Some(format!(
                        "no column {} (id, status, sym, table, title, opened)",
                        sanitize::for_terminal(name)
                    ))
                }
            },
        },
        Verb::Status => match rest.first().map(|word| word.to_lowercase()).as_deref() {
            None => change_list(app, |list| list.open_only = !list.open_only),
            Some("open") => change_list(app, |list| list.open_only = true),
            Some("all") => change_list(app, |list| list.open_only = false),
            Some(other) => {
                app.message = Some(format!(
                    "{} is not open or all",
                    sanitize::for_terminal(other)
                ))
            }
        },
        // Closing an incident by hand, opening it again, accepting its new level: the
        // owner's, with a reason.
        Verb::Resolve | Verb::Reopen | Verb::Accept => {
            let name = spec.name;
            let Some(incident) = app.open_incident().map(|i| i.id.clone()) else {
                app.message = Some(format!("open an incident first, then :{name} REASON"));
                return;
            };
            if reason.is_empty() {
                app.message = Some(format!("say why: :{name} REASON"));
                return;
            }
            app.outbox.push(match spec.verb {
                Verb::Resolve => Command::Resolve { incident, reason },
                Verb::Reopen => Command::Reopen { incident, reason },
                _ => Command::Accept { incident, reason },
            });
        }
        Verb::Open => match rest.first() {
            None => app.message = Some("which incident? :open ID (Tab completes)".into()),
            Some(word) => match incident_named(app, word) {
                Some(id) => open_incident_by_id(app, &id),
                None => {
                    app.message = Some(format!(
                        "no incident {} in this console's snapshot",
                        sanitize::for_terminal(word)
                    ))
                }
            },
        },
        Verb::Theme => match rest.first() {
            None => {
                app.message = Some(format!(
                    "theme {} (available: {})",
                    app.theme.name,
                    theme::builtin_names().join(", ")
                ));
            }
            Some(name) => switch_theme(app, name),
        },
    }
}

/// The id of the incident `word` names: its id in any case (`inc-0042`), or its number
/// (`42`) when only one incident has it.
fn incident_named(app: &App, word: &str) -> Option<String> {
    let incidents = &app.snapshot.incidents;
    if let Some(found) = incidents.iter().find(|i| i.id.eq_ignore_ascii_case(word)) {
        return Some(found.id.clone());
    }
    let number: u64 = word.parse().ok()?;
    let mut by_number = incidents.iter().filter(|incident| {
        let digits: String = incident
            .id
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse::<u64>().ok() == Some(number)
    });
    match (by_number.next(), by_number.next()) {
        (Some(only), None) => Some(only.id.clone()),
        _ => None,
    }
}

/// Jumps to an incident wherever the console is: its detail opens, and it is selected
/// on the list when the list shows it.
fn open_incident_by_id(app: &mut App, id: &str) {
    app.overlay = Overlay::None;
    app.screen = Screen::List;
    app.detail = None;
    app.selected_incident = Some(id.to_string());
    open_detail(app);
}

/// Puts the text on the clipboard (the loop sends it) and says what it was.
fn copy(app: &mut App, found: Result<(String, &'static str), String>) {
    match found {
        Ok((text, what)) => {
            let shown: String = text
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(40)
                .collect();
            let more = if shown.len() < text.len() { "…" } else { "" };
            app.message = Some(format!("copied the {what}: {shown}{more}"));
            app.clipboard = Some(text);
        }
        Err(why) => app.message = Some(format!("nothing copied: {why}")),
    }
}

/// Sorts the list by `column`; the same column again turns it round (`:sort COLUMN`,
/// a click on the column's header).
pub(crate) fn sort_by(app: &mut App, column: SortColumn) {
    change_list(app, |list| {
        list.sort = match list.sort {
            Some((sorted, descending)) if sorted == column => Some((column, !descending)),
            _ => Some((column, false)),
        }
    });
}

/// Changes how the list is shown; the selection stays on its incident when it still
/// shows.
fn change_list(app: &mut App, change: impl FnOnce(&mut ListView)) {
    change(&mut app.list);
    refresh_derived(app);
}

fn switch_theme(app: &mut App, name: &str) {
    match Theme::load(name, app.user_theme.as_ref(), app.no_color) {
        Ok(theme) => {
            app.theme = theme;
            // Tree labels carry theme styles; the view restyles the same rows.
            if let Some(detail) = &mut app.detail {
                detail.tree.items = Default::default();
            }
            app.full_redraw = true;
        }
        Err(error) => app.message = Some(format!("{error:#}")),
    }
}

fn edit(app: &mut App, key: KeyEvent) {
    use crossterm::event::{KeyCode, KeyModifiers};
    match &mut app.overlay {
        Overlay::Reason(modal) => {
            modal.error = None;
            modal.text.input(key);
        }
        Overlay::Prompt(_) | Overlay::Help { .. } => {
            // Keys with Ctrl are the registry's or nothing: never typed as text.
            if let KeyCode::Char(c) = key.code {
                if !c.is_control() && !key.modifiers.contains(KeyModifiers::CONTROL) {
                    prompt::insert(app, c.encode_utf8(&mut [0; 4]));
                }
            }
        }
        Overlay::AlertOutbox { .. } | Overlay::None => {}
    }
}

fn paste(app: &mut App, text: &str) {
    // Pasted text is as untrusted as anything else that reaches the screen.
    match &mut app.overlay {
        Overlay::Reason(modal) => {
            modal
                .text
                .insert_str(sanitize::for_terminal_multiline(text));
        }
        Overlay::Prompt(_) | Overlay::Help { .. } => {
            prompt::insert(app, &sanitize::for_terminal(text))
        }
        Overlay::AlertOutbox { .. } | Overlay::None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::{sample_snapshot, DRAFT_RECEIPT};
    use crossterm::event::{KeyCode, KeyModifiers};

    pub fn sample_app(read_only: bool) -> App {
        let mut app = App::new(read_only, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        app
    }

    fn press(app: &mut App, code: KeyCode) {
        press_with(app, code, KeyModifiers::NONE);
    }

    fn press_with(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
        keys::press(app, KeyEvent::new(code, modifiers));
    }

    fn type_text(app: &mut App, text: &str) {
        for c in text.chars() {
            press(app, KeyCode::Char(c));
        }
    }

    /// Open INC-7 and select the diff proposal (P-2).
    fn detail_on_diff(read_only: bool) -> App {
        let mut app = sample_app(read_only);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('j'));
        app
    }

    /// The positions kept between snapshots must be the list as computed afresh, for
    /// every filter, sort and open/all the person can set, and moving follows them.
    #[test]
    fn the_list_kept_for_the_filter_sort_and_status_is_the_list_computed_afresh() {
        let mut snapshot = sample_snapshot();
        let template = snapshot.incidents[0].clone();
        snapshot.incidents = (0..40)
            .map(|n| {
                let mut incident = template.clone();
                incident.id = format!("INC-{}", (n * 7) % 40);
                incident.title =
                    format!("{} row count fell", ["Charges", "orders", "Users"][n % 3]);
                incident.status = [
                    IncidentStatus::Open,
                    IncidentStatus::Resolved,
                    IncidentStatus::Verifying,
                ][(n / 2) % 3];
                incident
            })
            .collect();
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let afresh = |app: &App| -> Vec<String> {
            let needle = Needle::new(&app.filter);
            let mut shown: Vec<&IncidentView> = app
                .snapshot
                .incidents
                .iter()
                .filter(|i| needle.shows(&incoming::searchable(i)) && app.list.shows(i))
                .collect();
            let urgency = |status| match status {
                IncidentStatus::Open => 0,
                IncidentStatus::Verifying => 1,
                IncidentStatus::Resolved => 2,
            };
            let number = |id: &str| id["INC-".len()..].parse::<u32>().unwrap();
            // Stable: ties keep the engine's order, whichever way round.
            shown.sort_by(|a, b| {
                let order = match app.list.sort.map(|(column, _)| column) {
                    None => std::cmp::Ordering::Equal,
                    Some(SortColumn::Title) => a.title.to_lowercase().cmp(&b.title.to_lowercase()),
                    Some(SortColumn::Status) => urgency(a.status).cmp(&urgency(b.status)),
                    Some(SortColumn::Id) => number(&a.id).cmp(&number(&b.id)),
                    Some(other) => unreachable!("{other:?}"),
                };
                match app.list.sort {
                    Some((_, true)) => order.reverse(),
                    _ => order,
                }
            });
            shown.iter().map(|i| i.id.clone()).collect()
        };
        for filter in ["", "orders", "!charges", "inc-1"] {
            for sort in [
                None,
                Some((SortColumn::Title, false)),
                Some((SortColumn::Status, true)),
                Some((SortColumn::Id, false)),
                Some((SortColumn::Title, true)),
            ] {
                for open_only in [false, true] {
                    update(&mut app, Action::CommandLine);
                    type_text(&mut app, "status ");
                    type_text(&mut app, if open_only { "open" } else { "all" });
                    update(&mut app, Action::Submit);
                    change_list(&mut app, |list| list.sort = sort);
                    app.filter = filter.to_string();
                    update(&mut app, Action::Resized);
                    assert!(app.shown().is_some(), "kept for {filter:?} {sort:?}");
                    let kept: Vec<String> = app
                        .visible_incidents()
                        .iter()
                        .map(|i| i.id.clone())
                        .collect();
                    assert_eq!(kept, afresh(&app), "{filter:?} {sort:?} {open_only}");
                    update(&mut app, Action::Top);
                    update(&mut app, Action::Down);
                    assert_eq!(app.selected_incident.as_ref(), kept.get(1).or(kept.first()));
                    assert_eq!(
                        app.selected_index(),
                        Some(kept.len().min(2).saturating_sub(1)).filter(|_| !kept.is_empty())
                    );
                }
            }
        }
    }

    const DIFF_HASH: &str = "3f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4";

    #[test]
    fn approve_sends_the_full_hash_that_was_shown() {
        let mut app = detail_on_diff(false);
        assert_eq!(app.selected_proposal().unwrap().id, "P-2");
        press(&mut app, KeyCode::Char('a'));
        assert!(matches!(app.overlay, Overlay::Reason(_)));
        // Keys typed into the reason are text, not commands ('q' does not quit).
        type_text(&mut app, "refill safe, quick");
        assert!(!app.quit);
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::Approve {
                proposal: "P-2".into(),
                content_hash: DIFF_HASH.into(),
                reason: "refill safe, quick".into(),
            }]
        );
        assert!(matches!(app.overlay, Overlay::None));
    }

    #[test]
    fn resolve_by_hand_needs_an_open_incident_and_a_reason() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve handled by the vendor");
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "no incident was open");
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve");
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "no reason given");
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve handled by the vendor");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::Resolve {
                incident: "INC-7".into(),
                reason: "handled by the vendor".into(),
            }]
        );
        let mut watcher = sample_app(true);
        press(&mut watcher, KeyCode::Enter);
        press(&mut watcher, KeyCode::Char(':'));
        type_text(&mut watcher, "resolve handled");
        press(&mut watcher, KeyCode::Enter);
        assert!(watcher.outbox.is_empty(), "read-only");
    }

    #[test]
    fn capital_n_accepts_the_open_incidents_new_level_with_a_reason() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press_with(&mut app, KeyCode::Char('N'), KeyModifiers::SHIFT);
        let Overlay::Reason(modal) = &app.overlay else {
            panic!("N opens the reason box");
        };
        assert_eq!(modal.decision, Decision::AcceptLevel);
        assert_eq!(modal.target, "INC-7");
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "a reason is required");
        type_text(&mut app, "new pricing page");
        press(&mut app, KeyCode::Enter);
        let typed = vec![Command::Accept {
            incident: "INC-7".into(),
            reason: "new pricing page".into(),
        }];
        assert_eq!(app.outbox, typed);
        // The command line says the same.
        app.outbox.clear();
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "accept new pricing page");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.outbox, typed);
        // A read-only console has neither.
        let mut watcher = sample_app(true);
        press(&mut watcher, KeyCode::Enter);
        press_with(&mut watcher, KeyCode::Char('N'), KeyModifiers::SHIFT);
        assert!(matches!(watcher.overlay, Overlay::None));
        press(&mut watcher, KeyCode::Char(':'));
        type_text(&mut watcher, "accept it");
        press(&mut watcher, KeyCode::Enter);
        assert!(watcher.outbox.is_empty(), "read-only");
    }

    #[test]
    fn capital_c_closes_the_open_incident_with_a_reason() {
        let mut app = sample_app(false);
        // Not on the list: there is no open incident to close.
        press(&mut app, KeyCode::Char('C'));
        assert!(matches!(app.overlay, Overlay::None));
        press(&mut app, KeyCode::Enter);
        press_with(&mut app, KeyCode::Char('C'), KeyModifiers::SHIFT);
        let Overlay::Reason(modal) = &app.overlay else {
            panic!("C opens the reason box");
        };
        assert_eq!(modal.decision, Decision::Resolve);
        assert_eq!(modal.target, "INC-7");
        assert_eq!(modal.content_hash, None);
        // The person is deciding the incident: the others see it.
        assert_eq!(
            crate::console::link::presence(&app).1.as_deref(),
            Some("INC-7")
        );
        // A reason is required; keys typed in it are text ('q' does not quit).
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty());
        let Overlay::Reason(modal) = &app.overlay else {
            panic!("the modal stays open");
        };
        assert!(modal
            .error
            .as_deref()
            .unwrap()
            .contains("Resolve needs a reason"));
        type_text(&mut app, "quiet refill; the vendor confirmed");
        assert!(!app.quit);
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::Resolve {
                incident: "INC-7".into(),
                reason: "quiet refill; the vendor confirmed".into(),
            }]
        );
        assert!(matches!(app.overlay, Overlay::None));
        assert_eq!(
            app.message.as_deref(),
            Some("resolve INC-7 sent; the engine will confirm")
        );
    }

    #[test]
    fn the_same_command_as_resolve_on_the_command_line() {
        let by_key = {
            let mut app = sample_app(false);
            press(&mut app, KeyCode::Enter);
            press(&mut app, KeyCode::Char('C'));
            type_text(&mut app, "handled");
            press(&mut app, KeyCode::Enter);
            app.outbox
        };
        let by_command = {
            let mut app = sample_app(false);
            press(&mut app, KeyCode::Enter);
            press(&mut app, KeyCode::Char(':'));
            type_text(&mut app, "resolve handled");
            press(&mut app, KeyCode::Enter);
            app.outbox
        };
        assert_eq!(by_key, by_command);
    }

    #[test]
    fn capital_o_reopens_only_a_resolved_incident() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        // INC-7 is open: O says so and opens nothing; C on INC-6 likewise.
        press(&mut app, KeyCode::Char('O'));
        assert!(matches!(app.overlay, Overlay::None));
        assert!(app.message.as_deref().unwrap().contains("not resolved"));
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('C'));
        assert!(matches!(app.overlay, Overlay::None));
        assert!(app.message.as_deref().unwrap().contains("already resolved"));
        press(&mut app, KeyCode::Char('O'));
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "a reason is required");
        type_text(&mut app, "nulls are back");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::Reopen {
                incident: "INC-6".into(),
                reason: "nulls are back".into(),
            }]
        );
    }

    #[test]
    fn escape_closes_the_incident_reason_box_and_sends_nothing() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('C'));
        type_text(&mut app, "never mind");
        press(&mut app, KeyCode::Esc);
        assert!(matches!(app.overlay, Overlay::None));
        assert!(app.outbox.is_empty());
        assert_eq!(app.screen, Screen::Detail);
    }

    #[test]
    fn approve_without_reason_is_allowed() {
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Char('a'));
        press(&mut app, KeyCode::Enter);
        assert!(matches!(
            app.outbox.as_slice(),
            [Command::Approve { reason, .. }] if reason.is_empty()
        ));
    }

    #[test]
    fn reject_and_roll_back_need_a_reason() {
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Char('r'));
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty());
        let Overlay::Reason(modal) = &app.overlay else {
            panic!("the modal stays open");
        };
        assert!(modal.error.is_some());
        type_text(&mut app, "casts break");
        press_with(&mut app, KeyCode::Char('j'), KeyModifiers::CONTROL);
        type_text(&mut app, "on A-3");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::Reject {
                proposal: "P-2".into(),
                content_hash: DIFF_HASH.into(),
                reason: "casts break\non A-3".into(),
            }]
        );

        // Only an approved proposal is rolled back: the hold, P-1.
        app.outbox.clear();
        press(&mut app, KeyCode::Char('k'));
        press(&mut app, KeyCode::Char('u'));
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty());
        type_text(&mut app, "wrong model");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::RollBack {
                proposal: "P-1".into(),
                reason: "wrong model".into(),
            }]
        );
    }

    #[test]
    fn a_hash_change_while_typing_does_not_retarget_the_decision() {
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Char('a'));
        let mut changed = sample_snapshot();
        changed.incidents[0].proposals[1].content_hash = "ffff".into();
        update(&mut app, Action::SnapshotArrived(Box::new(changed)));
        press(&mut app, KeyCode::Enter);
        assert!(matches!(
            app.outbox.as_slice(),
            [Command::Approve { content_hash, .. }] if content_hash == DIFF_HASH
        ));
    }

    #[test]
    fn escape_cancels_the_modal_then_backs_out_of_detail() {
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Char('r'));
        press(&mut app, KeyCode::Esc);
        assert!(matches!(app.overlay, Overlay::None));
        assert!(app.outbox.is_empty());
        assert_eq!(app.screen, Screen::Detail);
        press(&mut app, KeyCode::Esc);
        assert_eq!(app.screen, Screen::List);
        press(&mut app, KeyCode::Char('q'));
        assert!(app.quit);
    }

    #[test]
    fn forward_only_for_notes_and_queue_run_for_the_incident() {
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Char('f'));
        assert!(app.outbox.is_empty());
        assert!(app.message.is_some());
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('f'));
        press_with(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
        assert_eq!(
            app.outbox,
            vec![
                Command::Forward {
                    proposal: "P-3".into()
                },
                Command::QueueRun {
                    incident: "INC-7".into()
                },
            ]
        );
    }

    #[test]
    fn read_only_removes_every_dangerous_key() {
        let mut app = detail_on_diff(true);
        for key in ['a', 'r', 'u', 'f', 'C', 'O', 'N'] {
            assert_eq!(
                keys::action_for(&app, KeyEvent::new(KeyCode::Char(key), KeyModifiers::NONE)),
                None,
                "{key} should do nothing in read-only mode"
            );
        }
        assert_eq!(
            keys::action_for(
                &app,
                KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)
            ),
            None,
            "Ctrl-R should do nothing in read-only mode"
        );
        assert!(keys::available(&app.keymap, true).all(|binding| !binding.dangerous));
        assert!(keys::hints(&app).iter().all(|(label, _)| *label != "a"));
        // Even an action that slips through is refused.
        for action in [Action::Approve, Action::Resolve, Action::Reopen] {
            update(&mut app, action);
            assert!(app.outbox.is_empty());
            assert!(matches!(app.overlay, Overlay::None));
        }
    }

    #[test]
    fn filter_is_a_substring_and_bang_inverts() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('/'));
        type_text(&mut app, "CUSTOMERS");
        let ids: Vec<&str> = app
            .visible_incidents()
            .iter()
            .map(|i| i.id.as_str())
            .collect();
        assert_eq!(ids, ["INC-6"]);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.filter, "CUSTOMERS");
        press(&mut app, KeyCode::Char('/'));
        for _ in 0.."CUSTOMERS".len() {
            press(&mut app, KeyCode::Backspace);
        }
        type_text(&mut app, "!customers");
        let ids: Vec<&str> = app
            .visible_incidents()
            .iter()
            .map(|i| i.id.as_str())
            .collect();
        assert_eq!(ids, ["INC-7"]);
        press(&mut app, KeyCode::Esc);
        assert!(app.filter.is_empty());
        assert_eq!(app.visible_incidents().len(), 2);
    }

    #[test]
    fn a_symptoms_table_finds_the_incident_it_joined() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('/'));
        type_text(&mut app, "fct_daily");
        let ids: Vec<&str> = app
            .visible_incidents()
            .iter()
            .map(|i| i.id.as_str())
            .collect();
        assert_eq!(ids, ["INC-7"]);
    }

    #[test]
    fn the_cause_pane_scrolls_through_the_symptoms() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::BackTab);
        press(&mut app, KeyCode::BackTab);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
        press(&mut app, KeyCode::End);
        // The cause, four pieces of evidence, a blank line, the heading and two lines
        // for each of the three symptoms: the last line is the last one reached.
        assert_eq!(app.detail.as_ref().unwrap().cause_scroll, 1 + 4 + 2 + 6 - 1);
        press(&mut app, KeyCode::Char('k'));
        assert_eq!(app.detail.as_ref().unwrap().cause_scroll, 11);
    }

    #[test]
    fn command_line_quits_switches_theme_and_opens_help() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "theme light");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.theme.name, "light");
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "theme neon");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.theme.name, "light");
        assert!(app.message.as_deref().unwrap().contains("unknown theme"));
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "help");
        press(&mut app, KeyCode::Enter);
        assert!(matches!(app.overlay, Overlay::Help { .. }));
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "q");
        press(&mut app, KeyCode::Enter);
        assert!(app.quit);
    }

    fn prompt_text(app: &App) -> String {
        match &app.overlay {
            Overlay::Prompt(prompt) => prompt.text().to_string(),
            _ => panic!("no prompt open"),
        }
    }

    fn ctrl(app: &mut App, c: char) {
        press_with(app, KeyCode::Char(c), KeyModifiers::CONTROL);
    }

    /// The command line edits like a shell's: Ctrl-A, Ctrl-E, arrows, Ctrl-W, Ctrl-U.
    #[test]
    fn the_command_line_edits_like_a_shell() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "thme dark");
        ctrl(&mut app, 'a');
        press(&mut app, KeyCode::Right);
        press(&mut app, KeyCode::Right);
        type_text(&mut app, "e");
        assert_eq!(prompt_text(&app), "theme dark");
        ctrl(&mut app, 'e');
        ctrl(&mut app, 'w');
        assert_eq!(prompt_text(&app), "theme ");
        type_text(&mut app, "ligtx");
        press(&mut app, KeyCode::Backspace);
        press(&mut app, KeyCode::Left);
        type_text(&mut app, "h");
        assert_eq!(prompt_text(&app), "theme light");
        press(&mut app, KeyCode::End);
        press(&mut app, KeyCode::Home);
        ctrl(&mut app, 'u');
        assert_eq!(
            prompt_text(&app),
            "theme light",
            "nothing before the cursor"
        );
        press(&mut app, KeyCode::Delete);
        assert_eq!(prompt_text(&app), "heme light");
        ctrl(&mut app, 'e');
        ctrl(&mut app, 'u');
        assert_eq!(prompt_text(&app), "");
        type_text(&mut app, "theme light");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.theme.name, "light");
        // Ctrl-W is an edit here, never typed as a 'w'.
        press(&mut app, KeyCode::Char('/'));
        type_text(&mut app, "CUSTOMERS x");
        ctrl(&mut app, 'w');
        assert_eq!(app.filter, "CUSTOMERS ");
    }

    #[test]
    fn up_and_down_walk_the_lines_typed_before() {
        let mut app = sample_app(false);
        for line in ["theme light", "theme dark"] {
            press(&mut app, KeyCode::Char(':'));
            type_text(&mut app, line);
            press(&mut app, KeyCode::Enter);
        }
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "he");
        press(&mut app, KeyCode::Up);
        assert_eq!(prompt_text(&app), "theme dark");
        press(&mut app, KeyCode::Up);
        assert_eq!(prompt_text(&app), "theme light");
        press(&mut app, KeyCode::Up);
        assert_eq!(prompt_text(&app), "theme light", "the oldest stays");
        press(&mut app, KeyCode::Down);
        press(&mut app, KeyCode::Down);
        assert_eq!(prompt_text(&app), "he", "back to what was being typed");
        press(&mut app, KeyCode::Up);
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.theme.name, "dark");
        // The filter keeps its own.
        press(&mut app, KeyCode::Char('/'));
        type_text(&mut app, "CUSTOMERS");
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Esc);
        assert!(app.filter.is_empty());
        press(&mut app, KeyCode::Char('/'));
        press(&mut app, KeyCode::Up);
        assert_eq!(prompt_text(&app), "CUSTOMERS");
        assert_eq!(
            app.visible_incidents().len(),
            1,
            "a recalled filter applies"
        );
    }

    #[test]
    fn tab_completes_commands_and_their_arguments() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "th");
        press(&mut app, KeyCode::Tab);
        assert_eq!(prompt_text(&app), "theme ");
        press(&mut app, KeyCode::Tab);
        assert_eq!(
            app.message.as_deref(),
            Some("Tab: dark  light  ansi16  colorblind")
        );
        type_text(&mut app, "co");
        press(&mut app, KeyCode::Tab);
        assert_eq!(prompt_text(&app), "theme colorblind");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.theme.name, "colorblind");

        // Incident ids, in any case, complete as far as they agree.
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "inc");
        press(&mut app, KeyCode::Tab);
        assert_eq!(prompt_text(&app), "INC-");
        assert_eq!(app.message.as_deref(), Some("Tab: INC-7  INC-6"));
        type_text(&mut app, "6");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.open_incident().unwrap().id, "INC-6");
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "open i");
        press(&mut app, KeyCode::Tab);
        assert_eq!(prompt_text(&app), "open INC-");

        // Two commands share "re"; a read-only console has neither.
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "re");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.message.as_deref(), Some("Tab: resolve  reopen"));
        let mut watcher = sample_app(true);
        press(&mut watcher, KeyCode::Char(':'));
        type_text(&mut watcher, "re");
        press(&mut watcher, KeyCode::Tab);
        assert_eq!(prompt_text(&watcher), "re");
        assert!(watcher
            .message
            .as_deref()
            .unwrap()
            .starts_with("nothing to complete"));
    }

    /// `:INC-6`, `:inc-6`, `:6` and `:open INC-6` all jump to INC-6, from anywhere.
    #[test]
    fn a_command_jumps_to_an_incident_by_id() {
        for line in ["INC-6", "inc-6", "6", "open INC-6", "incident 6"] {
            let mut app = sample_app(false);
            press(&mut app, KeyCode::Enter);
            press(&mut app, KeyCode::Char('?'));
            press(&mut app, KeyCode::Esc);
            press(&mut app, KeyCode::Char(':'));
            type_text(&mut app, line);
            press(&mut app, KeyCode::Enter);
            assert_eq!(app.screen, Screen::Detail, "{line}");
            assert_eq!(app.open_incident().unwrap().id, "INC-6", "{line}");
            assert_eq!(app.selected_incident.as_deref(), Some("INC-6"), "{line}");
            // Esc goes back to the list, where it is selected.
            press(&mut app, KeyCode::Esc);
            assert_eq!(app.selected_incident.as_deref(), Some("INC-6"), "{line}");
        }
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "INC-99");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.screen, Screen::List);
        assert!(app.message.as_deref().unwrap().contains("unknown command"));
    }

    /// `y` copies what the focus shows; `:copy` names what.
    #[test]
    fn y_copies_an_id_a_hash_or_the_sql() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('y'));
        assert_eq!(app.clipboard.take().as_deref(), Some("INC-7"));
        assert_eq!(
            app.message.as_deref(),
            Some("copied the incident id: INC-7")
        );
        // With the monitors pane in focus, the selected monitor's name.
        press(&mut app, KeyCode::Tab);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('y'));
        let monitor = &app.snapshot.monitors[app.monitor_order[1]].name;
        assert_eq!(app.clipboard.take().as_ref(), Some(monitor));
        assert_eq!(
            app.message,
            Some(format!("copied the monitor's name: {monitor}"))
        );
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('y'));
        assert_eq!(app.clipboard.take().as_deref(), Some(DIFF_HASH));
        press(&mut app, KeyCode::Tab);
        press(&mut app, KeyCode::Char('y'));
        assert_eq!(
            app.clipboard.take().as_deref(),
            Some(crate::console::fixtures::NEW_STG_PAYMENTS)
        );
        assert_eq!(app.message.as_deref(), Some("copied the SQL: select…"));
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "copy command");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.clipboard, None);
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .starts_with("nothing copied"));
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "copy id");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.clipboard.take().as_deref(), Some("INC-7"));
    }

    #[test]
    fn snapshots_are_sanitized_on_arrival() {
        let mut snapshot = sample_snapshot();
        snapshot.incidents[0].title = "rows\u{1b}[2J\u{202e}gone".into();
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        assert_eq!(app.snapshot.incidents[0].title, "rows\\x1b[2J\\u{202e}gone");
    }

    #[test]
    fn tree_keys_move_and_fold() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::BackTab);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Tree);
        let selected = |app: &App| app.detail.as_ref().unwrap().tree.selected.clone();
        assert_eq!(selected(&app), ["model.payments.stg_payments"]);
        press(&mut app, KeyCode::Char('j'));
        assert_eq!(
            selected(&app),
            [
                "model.payments.stg_payments",
                "model.payments.int_payment_regions"
            ]
        );
        // Left on a leaf goes to its parent; left again folds it.
        press(&mut app, KeyCode::Left);
        assert_eq!(selected(&app), ["model.payments.stg_payments"]);
        press(&mut app, KeyCode::Char('h'));
        let tree = &app.detail.as_ref().unwrap().tree;
        assert_eq!(tree::visible_paths(&tree.rows, &tree.opened).len(), 1);
        press(&mut app, KeyCode::Char('l'));
        let tree = &app.detail.as_ref().unwrap().tree;
        // stg_payments, int_payment_regions, fct_daily_revenue, the dashboard and the job
        // under it, and the job again directly under stg_payments.
        assert_eq!(tree::visible_paths(&tree.rows, &tree.opened).len(), 6);
    }

    #[test]
    fn end_then_up_scrolls_back_at_once() {
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Body);
        press(&mut app, KeyCode::End);
        let bottom = app.detail.as_ref().unwrap().body_scroll;
        // 8 side-by-side rows (9 unified) and the undo/verify trailer.
        assert_eq!(bottom, 11);
        press(&mut app, KeyCode::Char('k'));
        assert_eq!(app.detail.as_ref().unwrap().body_scroll, 10);
    }

    /// Esc pressed just before another key arrives glued to it, as Alt-key (inside
    /// tmux, anything within its escape time): both keys still count.
    #[test]
    fn escape_glued_to_the_next_key_is_still_escape() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('?'));
        press_with(&mut app, KeyCode::Char('q'), KeyModifiers::ALT);
        assert!(matches!(app.overlay, Overlay::None));
        assert!(app.quit, "Esc closed the help, q quit");

        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press_with(&mut app, KeyCode::Char('j'), KeyModifiers::ALT);
        assert_eq!(app.screen, Screen::List);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));

        // In the filter, Esc cancels it and the key lands on the list.
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('/'));
        type_text(&mut app, "CUST");
        press_with(&mut app, KeyCode::Char('j'), KeyModifiers::ALT);
        assert!(matches!(app.overlay, Overlay::None));
        assert!(app.filter.is_empty());
        assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));

        // Alt-Enter is bound in the reason box: a new line, not Esc then Enter.
        let mut app = detail_on_diff(false);
        press(&mut app, KeyCode::Char('r'));
        type_text(&mut app, "one");
        press_with(&mut app, KeyCode::Enter, KeyModifiers::ALT);
        let Overlay::Reason(modal) = &app.overlay else {
            panic!("the reason box stays open");
        };
        assert_eq!(modal.text.lines().len(), 2);
    }

    #[test]
    fn question_mark_closes_the_help_it_opened() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('?'));
        assert!(matches!(app.overlay, Overlay::Help { .. }));
        press(&mut app, KeyCode::Char('?'));
        assert!(matches!(app.overlay, Overlay::None));
        assert!(!app.quit);
    }

    #[test]
    fn an_open_incidents_draft_receipt_opens_too() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        let mut snapshot = sample_snapshot();
        snapshot.incidents[0].receipt = Some(DRAFT_RECEIPT.into());
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        assert_eq!(app.open_incident().unwrap().status, IncidentStatus::Open);
        press(&mut app, KeyCode::Char('R'));
        let detail = app.detail.as_ref().unwrap();
        assert!(detail.receipt_open);
        assert!(app.message.is_none());
        // It scrolls like any receipt, and R closes it again.
        press(&mut app, KeyCode::End);
        assert_eq!(
            app.detail.as_ref().unwrap().receipt_scroll,
            DRAFT_RECEIPT.lines().count() - 1
        );
        press(&mut app, KeyCode::Char('R'));
        assert!(!app.detail.as_ref().unwrap().receipt_open);
    }

    #[test]
    fn engine_stopping_keeps_the_ui_until_quit() {
        let mut app = sample_app(false);
        update(&mut app, Action::EngineStopped);
        assert!(app.engine_stopped);
        assert!(!app.quit);
        assert_eq!(app.snapshot.incidents.len(), 2);
    }

    #[test]
    fn receipt_opens_only_when_there_is_one() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('R'));
        assert!(!app.detail.as_ref().unwrap().receipt_open);
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .starts_with("no receipt yet"));
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Enter);
        press_with(&mut app, KeyCode::Char('R'), KeyModifiers::SHIFT);
        assert!(app.detail.as_ref().unwrap().receipt_open);
        press(&mut app, KeyCode::Esc);
        assert!(!app.detail.as_ref().unwrap().receipt_open);
        assert_eq!(app.screen, Screen::Detail);
    }
}
