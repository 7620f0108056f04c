//! A key press, read in the registry: the context it lands in, the action it is bound
//! to there, and, when it does nothing, the words that say why. The footer's hints are
//! read from the same table.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{available, Context, Key};
use crate::console::keymap::Bound;
use crate::console::overlays::{self, reason::Decision};
use crate::console::screens::{detail, list};
use crate::console::state::{update, Action, App, Overlay, Screen};

/// The context the next key is read in: an open overlay wins over the screen.
pub fn context(app: &App) -> Context {
    match app.overlay {
        // Typing a search over the help: its keys are the line's.
        Overlay::Help(ref help) if help.search.typing.is_some() => Context::Prompt,
        Overlay::Help(_) => Context::Help,
        Overlay::AlertOutbox(_) => Context::Outbox,
        Overlay::Waves(_) | Overlay::Access(_) => Context::Waves,
        Overlay::Reason(_) => Context::Reason,
        Overlay::Prompt(_) => Context::Prompt,
        Overlay::None => match app.screen {
            Screen::List => Context::List,
            Screen::Detail => Context::Detail,
        },
    }
}

/// Terminals disagree about Shift on characters (`R` may come with or without it) and
/// on Shift-Tab; compare without it, the character already says it.
fn normalise(key: KeyEvent) -> Key {
    let mut modifiers = key.modifiers;
    if matches!(key.code, KeyCode::Char(_) | KeyCode::BackTab) {
        modifiers.remove(KeyModifiers::SHIFT);
    }
    Key {
        code: key.code,
        modifiers,
    }
}

/// The action a binding gives this key here and now, if any (typing excluded).
fn bound(app: &App, key: KeyEvent) -> Option<Action> {
    let here = context(app);
    let pressed = normalise(key);
    let applies = |binding: &&Bound| {
        binding.context == here
            || binding.context == Context::Always
            || (binding.context == Context::Global && !here.takes_text())
    };
    // A binding for this context wins over a global one on the same key (`?` closes
    // the help rather than opening it again).
    available(&app.keymap, app.read_only)
        .filter(|binding| binding.context == here)
        .chain(available(&app.keymap, app.read_only).filter(applies))
        .find(|binding| binding.keys.contains(&pressed))
        .map(|binding| binding.action.clone())
}

/// What a key press means here and now, if anything.
pub fn action_for(app: &App, key: KeyEvent) -> Option<Action> {
    match bound(app, key) {
        Some(action) => Some(action),
        None if context(app).takes_text() => Some(Action::Edit(key)),
        None => None,
    }
}

/// Applies a key press to the console; true when it did something (said why not
/// included).
///
/// A terminal sends Alt-x as Esc then x, and so does a person who presses Esc and then
/// x quickly: inside tmux, any key within its escape time arrives glued to the Esc and
/// is read as Alt-x. No binding but Alt-Enter uses Alt, so an Alt-key nothing binds is
/// taken for what it almost always is: Esc, then the key, each where it lands.
///
/// No key does nothing in silence: one bound here that changed nothing a person sees
/// says why ([`why_nothing`]), and one not bound here says what it does elsewhere, or
/// that an observer's console has no such key ([`not_here`]).
pub fn press(app: &mut App, key: KeyEvent) -> bool {
    if let Some(action) = bound(app, key) {
        let typing = context(app).takes_text();
        let before = Footprint::of(app);
        update(app, action.clone());
        if !typing && app.message.is_none() && Footprint::of(app) == before {
            app.message = Some(why_nothing(app, &action));
        }
        return true;
    }
    if key.modifiers.contains(KeyModifiers::ALT) {
        let escape = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
        let mut alone = key;
        alone.modifiers.remove(KeyModifiers::ALT);
        let escaped = press(app, escape);
        return press(app, alone) || escaped;
    }
    match action_for(app, key) {
        Some(action) => {
            update(app, action);
            true
        }
        None => {
            app.message = Some(not_here(app, key));
            true
        }
    }
}

/// What a key can change that a person sees, or that leaves the console: the same
/// before and after a key means the key did nothing.
#[derive(Debug, PartialEq)]
struct Footprint {
    screen: Screen,
    /// Which overlay, how far it is scrolled, and what it has selected.
    overlay: Option<(&'static str, usize, usize)>,
    selected_incident: Option<String>,
    list_pane: list::ListPane,
    monitor_selected: usize,
    detail: Option<String>,
    filter: String,
    list: crate::console::listing::ListView,
    help_search: (String, Option<usize>),
    outbox: usize,
    clipboard: bool,
    flags: [bool; 4],
    theme: String,
}

impl Footprint {
    fn of(app: &App) -> Footprint {
        Footprint {
            screen: app.screen,
            overlay: match &app.overlay {
                Overlay::None => None,
                Overlay::Help(help) => Some(("help", help.scroll, 0)),
                Overlay::AlertOutbox(outbox) => Some(("outbox", outbox.scroll, 0)),
                Overlay::Waves(scrolled) => Some(("waves", scrolled.scroll, scrolled.selected)),
                Overlay::Access(scrolled) => Some(("access", scrolled.scroll, scrolled.selected)),
                Overlay::Reason(_) => Some(("reason", 0, 0)),
                Overlay::Prompt(_) => Some(("prompt", 0, 0)),
            },
            selected_incident: app.selected_incident.clone(),
            list_pane: app.list.pane,
            monitor_selected: app.list.monitors.selected,
            // Its scroll offsets, focus, selection, tree and what is open over it.
            detail: app.detail.as_ref().map(detail::Detail::footprint),
            filter: app.list.filter.clone(),
            list: app.list.view,
            help_search: match &app.overlay {
                Overlay::Help(help) => (help.search.query.clone(), help.search.at),
                _ => Default::default(),
            },
            outbox: app.outbox.len(),
            clipboard: app.clipboard.is_some(),
            flags: [app.quit, app.suspend, app.full_redraw, app.mouse],
            theme: app.theme.name.clone(),
        }
    }
}

/// Why `action` changed nothing here: at the end of what it moves through, or not the
/// place for it.
fn why_nothing(app: &App, action: &Action) -> String {
    let towards_top = matches!(
        action,
        Action::Up | Action::PageUp | Action::HalfPageUp | Action::Top
    );
    let over_panes = app.detail.as_ref().is_some_and(detail::Detail::over_panes);
    let focus = app.detail.as_ref().map(|d| d.focus);
    match action {
        _ if action.distance(0).is_some() => {
            // What the movement went through: the overlay's, or the screen's.
            let what = match (&app.overlay, app.screen, &app.detail) {
                (Overlay::Help(_), ..) => "the help",
                (Overlay::AlertOutbox(_), ..) => "the outbox",
                (Overlay::Waves(_), ..) => "the waves",
                (Overlay::Access(_), ..) => "the requests",
                (_, Screen::List, _) => match list::moves_through(app) {
                    Some(what) => what,
                    None => return "no incidents to move through".into(),
                },
                (_, Screen::Detail, Some(detail)) => detail.moves_through(),
                (_, Screen::Detail, None) => "the proposal",
            };
            let end = if towards_top { "top" } else { "bottom" };
            format!("already at the {end} of {what}")
        }
        Action::Collapse | Action::Expand if over_panes => {
            "close the receipt or timeline first (Esc): h and l open and close the blast radius"
                .into()
        }
        Action::Collapse | Action::Expand if focus != Some(detail::Pane::Tree) => {
            "h and l open and close the blast-radius tree: Tab to it first".into()
        }
        Action::Collapse | Action::Expand => {
            "nothing to open or close at this node of the blast radius".into()
        }
        Action::Open if app.list.pane == list::ListPane::Monitors => {
            "Enter opens an incident: Tab back to the incidents".into()
        }
        Action::Open => "no incident to open".into(),
        Action::NextPane | Action::PreviousPane => "no monitors to move to: only incidents".into(),
        Action::Back => "nothing to go back from here (q quits)".into(),
        Action::SearchNext | Action::SearchPrevious => {
            "no search to go through: / searches the help".into()
        }
        _ => format!(
            "{} does nothing here",
            crate::console::keymap::action_name(action).unwrap_or("this key")
        ),
    }
}

/// Why a key nothing binds here did nothing: an observer's console has no deciding
/// key, a key of another place says where it works, any other key says so.
fn not_here(app: &App, key: KeyEvent) -> String {
    let here = context(app);
    let pressed = normalise(key);
    let label = crate::console::keymap::key_label(pressed);
    let applies_here = |b: &&Bound| {
        b.context == here
            || b.context == Context::Always
            || (b.context == Context::Global && !here.takes_text())
    };
    let mut with_key = app
        .keymap
        .all()
        .filter(|b| b.keys.contains(&pressed))
        .collect::<Vec<_>>();
    if let Some(dangerous) = with_key.iter().find(|b| applies_here(b) && b.dangerous) {
        if app.read_only {
            return format!(
                "read-only console: {label} ({}) is for those who decide; an observer only looks",
                dangerous.description
            );
        }
    }
    with_key.retain(|b| !(applies_here(b) || app.read_only && b.dangerous));
    match with_key.first() {
        Some(elsewhere) => format!(
            "{label} is for the {}: {}",
            elsewhere.context.title().to_lowercase(),
            elsewhere.description
        ),
        None if app.read_only && app.keymap.all().any(|b| b.keys.contains(&pressed)) => {
            format!("read-only console: {label} decides, and an observer only looks")
        }
        None => format!("{label} does nothing here (? lists every key)"),
    }
}

/// Footer hints for the current context, from the same table. Help comes first so it
/// survives a narrow terminal cutting the rest.
pub fn hints(app: &App) -> Vec<(&str, &'static str)> {
    let here = context(app);
    let shown_here = |binding: &&Bound| {
        binding.context == here || (binding.context == Context::Global && !here.takes_text())
    };
    let taken_here = |key: &Key| {
        available(&app.keymap, app.read_only).any(|b| b.context == here && b.keys.contains(key))
    };
    let mut bindings: Vec<&Bound> = available(&app.keymap, app.read_only)
        .filter(shown_here)
        .filter(|b| b.context == here || !b.keys.iter().any(taken_here))
        .collect();
    bindings.sort_by_key(|binding| binding.context != Context::Global);
    bindings
        .into_iter()
        .filter(|binding| !acts_on_left_out(app, &binding.action))
        .filter_map(|binding| Some((binding.label.as_str(), binding.hint?)))
        .collect()
}

/// Whether `action` acts on what the frame being drawn left out, or would be refused
/// before it asks anything (`screens::detail::refused_up_front`): such a key would only refuse,
/// so its hint is not offered. (The hints are drawn after the screen.)
fn acts_on_left_out(app: &App, action: &Action) -> bool {
    let drawn = &app.drawn;
    let refused = |decision| {
        app.selected_proposal()
            .is_some_and(|p| detail::refused_up_front(app, p, decision).is_some())
    };
    let decision = match action {
        Action::Approve => Some(Decision::Approve),
        Action::Reject => Some(Decision::Reject),
        Action::RollBack => Some(Decision::RollBack),
        _ => None,
    };
    if let (Some(decision), true) = (decision, overlays::decide::is_open(app)) {
        return overlays::decide::refused(app, decision).is_some();
    }
    match action {
        Action::Open => drawn.left_out(&drawn.incident_shown),
        Action::Forward => {
            drawn.left_out(&drawn.proposal_shown)
                || !app.selected_proposal().is_some_and(|p| {
                    p.kind == crate::engine::api::ProposalKind::Note
                        && p.state == crate::engine::api::ProposalState::Pending
                })
        }
        Action::Resolve | Action::AcceptLevel | Action::Expected | Action::Reopen => {
            let resolved = app
                .open_incident()
                .is_some_and(|i| i.status == crate::engine::api::IncidentStatus::Resolved);
            resolved != (*action == Action::Reopen)
        }
        Action::Approve => drawn.left_out(&drawn.proposal_shown) || refused(Decision::Approve),
        Action::Reject => drawn.left_out(&drawn.proposal_shown) || refused(Decision::Reject),
        Action::RollBack => drawn.left_out(&drawn.proposal_shown) || refused(Decision::RollBack),
        _ => false,
    }
}
