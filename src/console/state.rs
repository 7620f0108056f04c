//! The console as plain data, and the router that changes it. Keys, snapshots and
//! resizes all become an [`Action`]; [`update`] applies it: what concerns the whole
//! console (the snapshot, the link, quitting) here, the rest to the overlay that is open
//! and then the screen on top, each of which owns its state and handles its own keys
//! (`screens/`, `overlays/`, `help.rs`). Commands for the engine are
//! queued in `outbox` rather than sent from here, so this does no I/O and tests can
//! drive it directly.

use crate::console::help::Help;
use crate::console::incoming::{self, Prepared, PreparedChange};
use crate::console::overlays::alerts::{self, Alerts};
use crate::console::overlays::prompt::{self, Histories, Prompt, PromptKind};
use crate::console::overlays::reason::{self, ReasonModal};
use crate::console::screens::detail::{self, Detail};
use crate::console::screens::list::{self, ListScreen};
use crate::console::theme::{Theme, ThemeFile};
use crate::engine::api::{self, Command, IncidentStatus, IncidentView, ProposalView, Snapshot};

pub use crate::console::action::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    List,
    Detail,
}

/// What is open over the screen, if anything: it takes the keys first.
#[derive(Debug, Clone)]
pub enum Overlay {
    None,
    /// The key help (`help.rs`).
    Help(Help),
    /// The alert outbox, per destination (`overlays/alerts.rs`).
    AlertOutbox(Alerts),
    /// The migration waves (`overlays/waves.rs`).
    Waves(crate::console::overlays::Scroll),
    /// The access requests (`overlays/access.rs`).
    Access(crate::console::overlays::Scroll),
    /// The box a decision's reason is typed in (`overlays/reason.rs`).
    Reason(Box<ReasonModal>),
    /// The `:` command line or the `/` filter (`overlays/prompt.rs`).
    Prompt(Prompt),
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
    pub(crate) user_theme: Option<ThemeFile>,
    pub(crate) no_color: bool,
    pub screen: Screen,
    pub overlay: Overlay,
    /// The incident selected on the list, by id, so the selection survives incidents
    /// being added: the list moves it, Enter and `:open` open it, presence tells it.
    pub selected_incident: Option<String>,
    /// The list screen: the incidents and the monitors pane.
    pub list: ListScreen,
    /// The detail screen, while an incident is open.
    pub detail: Option<Detail>,
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
    /// The snapshot the last one replaced: the console's loop hands it back to the link
    /// thread, which frees it there, off the input path.
    retired: Option<Box<Prepared>>,
    /// How many times the engine's state came whole (attaching, or asking again after a
    /// missed version): each change is applied in place, so this stays put while the
    /// engine changes.
    pub wholes_taken: u64,
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
            selected_incident: None,
            list: ListScreen::default(),
            detail: None,
            message: None,
            outbox: Vec::new(),
            link: Default::default(),
            quit: false,
            suspend: false,
            full_redraw: false,
            drawn: Default::default(),
            histories: Default::default(),
            retired: None,
            wholes_taken: 0,
            clipboard: None,
            mouse: false,
            keymap: Default::default(),
        }
    }

    /// The snapshot replaced by the last one that arrived, to be freed elsewhere.
    pub fn take_retired(&mut self) -> Option<Box<Prepared>> {
        self.retired.take()
    }

    /// Whole seconds since the snapshot arrived (0 before any did).
    pub fn snapshot_age_secs(&self) -> u64 {
        self.snapshot_received
            .map_or(0, |at| at.elapsed().as_secs())
    }

    /// Something on screen counts down (the outbox's next try): the console redraws it
    /// once a second, and only then.
    pub fn counting_down(&self) -> bool {
        matches!(self.overlay, Overlay::AlertOutbox(_))
            && self
                .snapshot
                .outbox
                .iter()
                .any(|d| d.next_attempt_in_secs.is_some())
    }

    /// The incidents the list shows, after the filter.
    pub fn visible_incidents(&self) -> Vec<&IncidentView> {
        self.list.visible(&self.snapshot)
    }

    /// Where the selected incident is among those the list shows.
    pub fn selected_index(&self) -> Option<usize> {
        let id = self.selected_incident.as_ref()?;
        self.list.position(&self.snapshot, id)
    }

    /// The incident the detail screen shows, if it is still in the snapshot.
    pub fn open_incident(&self) -> Option<&IncidentView> {
        let id = &self.detail.as_ref()?.incident;
        find_incident(&self.snapshot, self.list.by_id(), id)
    }

    pub fn selected_proposal(&self) -> Option<&ProposalView> {
        let index = self.detail.as_ref()?.proposal;
        self.open_incident()?.proposals.get(index)
    }
}

/// Incident `id` of `snapshot`, found by its index (`by_id`) when that is the
/// snapshot's, else by a look through.
pub(crate) fn find_incident<'a>(
    snapshot: &'a Snapshot,
    by_id: &std::collections::HashMap<String, usize>,
    id: &str,
) -> Option<&'a IncidentView> {
    match by_id.get(id).and_then(|&at| snapshot.incidents.get(at)) {
        Some(incident) if incident.id == id => Some(incident),
        _ => snapshot.incidents.iter().find(|i| i.id == id),
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
    if !action.keeps_message() {
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
        Action::ChangeReady(change) => {
            let PreparedChange {
                incidents,
                removed,
                order,
                fields,
            } = *change;
            for field in fields {
                field.apply(&mut app.snapshot);
            }
            app.list
                .apply_incidents(&mut app.snapshot.incidents, incidents, &removed, order);
            followed(app);
        }
        Action::PresenceArrived(attached) => {
            app.snapshot.attached = attached;
            followed(app);
        }
        Action::DetailArrived(detail) => {
            put_detail(app, &detail);
            followed(app);
        }
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
        // What opens over any screen, and what acts wherever the person is.
        Action::Help => app.overlay = Overlay::Help(Help::default()),
        Action::AlertOutbox => app.overlay = Overlay::AlertOutbox(Alerts::default()),
        Action::Waves => app.overlay = Overlay::Waves(Default::default()),
        Action::AccessRequests => app.overlay = Overlay::Access(Default::default()),
        Action::CommandLine => prompt::open(app, PromptKind::Command),
        Action::Filter => prompt::open(app, PromptKind::Filter),
        Action::Mouse(event) => crate::console::mouse::handle(app, event),
        Action::Copy => {
            let found = crate::console::clipboard::what_shows(app);
            crate::console::commands::copy(app, found);
        }
        Action::SortNext | Action::SortReverse | Action::ToggleOpenOnly => {
            list::handle(app, &action);
        }
        action => {
            if !detail::decide::handle(app, &action) {
                route(app, &action);
            }
        }
    }
    // However an action changed the filter or the list view, the list follows it.
    if !app.list.is_current(&app.snapshot) {
        refresh_derived(app);
    }
}

/// The open overlay takes an action first; Esc closes it when it does not take Esc
/// itself. What it leaves goes to the screen on top.
fn route(app: &mut App, action: &Action) {
    let taken = crate::console::help::handle(app, action)
        || prompt::handle(app, action)
        || reason::handle(app, action)
        || alerts::handle(app, action)
        || crate::console::overlays::decide::handle_moves(app, action);
    if taken {
        return;
    }
    if *action == Action::Back && !matches!(app.overlay, Overlay::None) {
        app.overlay = Overlay::None;
        return;
    }
    match app.screen {
        Screen::List => list::handle(app, action),
        Screen::Detail => detail::handle(app, action),
    };
}

/// Moves a prepared snapshot in: no text is cleaned or lowercased here, and the one it
/// replaces is kept for the loop to free elsewhere, so this costs next to nothing
/// however many incidents there are.
fn install(app: &mut App, mut prepared: Box<Prepared>) {
    // Swapped in place: the box that brought the new one takes the old one away, so the
    // input path allocates nothing here either.
    std::mem::swap(&mut app.snapshot, &mut prepared.snapshot);
    app.list.take_index(&mut prepared);
    app.retired = Some(prepared);
    app.wholes_taken += 1;
    app.snapshot_received = Some(std::time::Instant::now());
    app.connected = true;
    refresh_derived(app);
}

/// The state held followed one message from the engine in place.
fn followed(app: &mut App) {
    app.snapshot_received = Some(std::time::Instant::now());
    refresh_derived(app);
}

/// The viewed incident gets its timeline and receipt; any other incident that had them
/// (the one viewed before) goes without, as the engine sends incidents.
fn put_detail(app: &mut App, detail: &api::Detail) {
    for incident in &mut app.snapshot.incidents {
        if incident.id != detail.incident
            && (!incident.timeline.is_empty() || incident.receipt.is_some())
        {
            drop(api::Detail::take(incident));
        }
    }
    let at = app.list.by_id().get(&detail.incident).copied();
    if let Some(incident) = at.and_then(|at| app.snapshot.incidents.get_mut(at)) {
        if incident.id == detail.incident {
            detail.merge_into(incident);
        }
    }
}

/// Recompute what depends on the snapshot, the filter and the list view: the incidents
/// shown, selections that may have gone, the tree and the diffs of the open incident.
/// Cheap when nothing relevant changed.
pub(crate) fn refresh_derived(app: &mut App) {
    app.list.refresh(&app.snapshot);
    if app.selected_index().is_none() {
        app.selected_incident = app.list.at(&app.snapshot, 0).map(|i| i.id.clone());
    }
    let App {
        detail: Some(detail),
        snapshot,
        list,
        ..
    } = app
    else {
        return;
    };
    if let Some(incident) = find_incident(snapshot, list.by_id(), &detail.incident) {
        detail.refresh(incident);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::test_support::sample_app;

    #[test]
    fn snapshots_are_sanitized_on_arrival() {
        let mut snapshot = sample_snapshot();
        snapshot.incidents[0].title = "rows\u{1b}[2J\u{202e}gone".into();
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        assert_eq!(app.snapshot.incidents[0].title, "rows\\x1b[2J\\u{202e}gone");
    }

    #[test]
    fn engine_stopping_keeps_the_ui_until_quit() {
        let mut app = sample_app(false);
        update(&mut app, Action::EngineStopped);
        assert!(app.engine_stopped);
        assert!(!app.quit);
        assert_eq!(app.snapshot.incidents.len(), 2);
    }
}
