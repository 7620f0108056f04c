//! The one key registry. Every binding is listed once, here, with its description and
//! context; the `?` help, the footer hints and read-only mode all read this table, so
//! they cannot drift from what the keys actually do.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::console::state::{Action, App, Overlay, Screen};

/// Where a binding applies. Text contexts (reason, prompt) take every other key as
/// typing, so only `Always` bindings reach past them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Even while typing.
    Always,
    /// Any screen, when no text field is open.
    Global,
    List,
    Detail,
    Help,
    /// The alert outbox overlay.
    Outbox,
    Reason,
    Prompt,
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Always => "Everywhere",
            Context::Global => "Any screen",
            Context::List => "Incident list",
            Context::Detail => "Incident detail",
            Context::Help => "This help",
            Context::Outbox => "Alert outbox",
            Context::Reason => "Reason box",
            Context::Prompt => "Command line and filter",
        }
    }

    /// Contexts where keys not bound here are typed into a text field.
    fn takes_text(self) -> bool {
        matches!(self, Context::Reason | Context::Prompt)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

const fn plain(code: KeyCode) -> Key {
    Key {
        code,
        modifiers: KeyModifiers::NONE,
    }
}

const fn ch(c: char) -> Key {
    plain(KeyCode::Char(c))
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        modifiers: KeyModifiers::CONTROL,
    }
}

const fn alt(code: KeyCode) -> Key {
    Key {
        code,
        modifiers: KeyModifiers::ALT,
    }
}

pub struct Binding {
    pub keys: &'static [Key],
    /// How the keys are written in help and hints.
    pub label: &'static str,
    pub action: Action,
    pub description: &'static str,
    pub context: Context,
    /// Changes something outside the console; absent in read-only mode.
    pub dangerous: bool,
    /// Short text for the footer hints; `None` keeps the binding to the help only.
    pub hint: Option<&'static str>,
}

const fn binding(
    keys: &'static [Key],
    label: &'static str,
    action: Action,
    description: &'static str,
    context: Context,
    dangerous: bool,
    hint: Option<&'static str>,
) -> Binding {
    Binding {
        keys,
        label,
        action,
        description,
        context,
        dangerous,
        hint,
    }
}

/// A binding listed in help only.
const fn bind(
    keys: &'static [Key],
    label: &'static str,
    action: Action,
    description: &'static str,
    context: Context,
) -> Binding {
    binding(keys, label, action, description, context, false, None)
}

/// A binding also shown in the footer, as `footer`.
const fn hint(
    keys: &'static [Key],
    label: &'static str,
    action: Action,
    description: &'static str,
    footer: &'static str,
    context: Context,
) -> Binding {
    binding(
        keys,
        label,
        action,
        description,
        context,
        false,
        Some(footer),
    )
}

/// A binding that sends a decision to the engine: in the footer, gone in read-only.
const fn dangerous(
    keys: &'static [Key],
    label: &'static str,
    action: Action,
    description: &'static str,
    footer: &'static str,
    context: Context,
) -> Binding {
    binding(
        keys,
        label,
        action,
        description,
        context,
        true,
        Some(footer),
    )
}

use Context::{Always, Detail, Global, Help, List, Outbox, Prompt, Reason};
use KeyCode::{BackTab, Down, End, Enter, Esc, Home, Left, PageDown, PageUp, Right, Tab, Up};

/// Every key the console knows. One line per binding, kept as a table on purpose.
#[rustfmt::skip]
pub static BINDINGS: &[Binding] = &[
    bind(&[ctrl('c')], "Ctrl-C", Action::Quit, "quit", Always),
    bind(&[ctrl('l')], "Ctrl-L", Action::Redraw, "redraw the screen", Always),
    bind(&[ctrl('z')], "Ctrl-Z", Action::Suspend, "suspend to the shell (fg resumes)", Always),
    hint(&[ch('?')], "?", Action::Help, "help: this list", "help", Global),
    hint(&[ch(':')], ":", Action::CommandLine, "command line (see Commands)", "command", Global),
    bind(&[ch('o')], "o", Action::AlertOutbox, "alert outbox: pending alerts, retries, errors", Global),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "next incident (or monitor)", List),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "previous incident (or monitor)", List),
    bind(&[plain(PageDown)], "PgDn", Action::PageDown, "page down", List),
    bind(&[plain(PageUp)], "PgUp", Action::PageUp, "page up", List),
    bind(&[plain(Home)], "Home", Action::Top, "first incident", List),
    bind(&[plain(End)], "End", Action::Bottom, "last incident", List),
    hint(&[plain(Enter)], "Enter", Action::Open, "open the incident", "open", List),
    hint(&[ch('/')], "/", Action::Filter, "filter: text shows matches, !text hides them", "filter", List),
    hint(&[plain(Tab), plain(BackTab)], "Tab", Action::NextPane, "incidents or monitors: which pane the keys move in", "monitors", List),
    bind(&[plain(Esc)], "Esc", Action::Back, "back to the incidents, or clear the filter", List),
    hint(&[ch('q')], "q", Action::Quit, "quit", "quit", List),
    hint(&[plain(Tab)], "Tab", Action::NextPane, "next pane (cause, tree, proposals, body)", "pane", Detail),
    hint(&[plain(Esc), ch('q')], "Esc q", Action::Back, "back to the list", "back", Detail),
    hint(&[ch('R')], "R", Action::ToggleReceipt, "show or hide the receipt (so far, while open)", "receipt", Detail),
    bind(&[plain(BackTab)], "Shift-Tab", Action::PreviousPane, "previous pane", Detail),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "down in the focused pane", Detail),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "up in the focused pane", Detail),
    bind(&[ch('h'), plain(Left)], "h ←", Action::Collapse, "close a tree node (or go to its parent)", Detail),
    bind(&[ch('l'), plain(Right)], "l →", Action::Expand, "open a tree node", Detail),
    bind(&[plain(PageDown)], "PgDn", Action::PageDown, "scroll down a page", Detail),
    bind(&[plain(PageUp)], "PgUp", Action::PageUp, "scroll up a page", Detail),
    bind(&[plain(Home)], "Home", Action::Top, "to the top", Detail),
    bind(&[plain(End)], "End", Action::Bottom, "to the bottom", Detail),
    dangerous(&[ch('a')], "a", Action::Approve, "approve the selected proposal (reason optional)", "approve", Detail),
    dangerous(&[ch('r')], "r", Action::Reject, "reject the selected proposal (reason required)", "reject", Detail),
    dangerous(&[ch('u')], "u", Action::RollBack, "roll back the selected proposal (reason required)", "roll back", Detail),
    dangerous(&[ch('f')], "f", Action::Forward, "forward the selected note to its owner", "forward", Detail),
    dangerous(&[ch('g')], "g", Action::QueueRun, "queue the approved run for this incident", "run", Detail),
    dangerous(&[ch('C')], "C", Action::Resolve, "close the incident by hand (reason required)", "close", Detail),
    dangerous(&[ch('O')], "O", Action::Reopen, "reopen the resolved incident (reason required)", "reopen", Detail),
    dangerous(&[ch('N')], "N", Action::AcceptLevel, "accept the new volume level as normal: the baseline restarts from the shift (reason required)", "new level", Detail),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "scroll down", Help),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "scroll up", Help),
    bind(&[plain(PageDown)], "PgDn", Action::PageDown, "page down", Help),
    bind(&[plain(PageUp)], "PgUp", Action::PageUp, "page up", Help),
    hint(&[plain(Esc), ch('?'), ch('q')], "Esc ? q", Action::Back, "close the help", "close", Help),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "scroll down", Outbox),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "scroll up", Outbox),
    bind(&[plain(PageDown)], "PgDn", Action::PageDown, "page down", Outbox),
    bind(&[plain(PageUp)], "PgUp", Action::PageUp, "page up", Outbox),
    hint(&[plain(Esc), ch('o'), ch('q')], "Esc o q", Action::Back, "close the outbox", "close", Outbox),
    hint(&[plain(Enter)], "Enter", Action::Submit, "send the decision", "send", Reason),
    hint(&[ctrl('j'), alt(Enter)], "Ctrl-J Alt-Enter", Action::NewLine, "new line in the reason", "new line", Reason),
    hint(&[plain(Esc)], "Esc", Action::Back, "cancel: nothing is sent", "cancel", Reason),
    hint(&[plain(Enter)], "Enter", Action::Submit, "run the command, or keep the filter", "run", Prompt),
    hint(&[plain(Esc)], "Esc", Action::Back, "cancel (clears the filter)", "cancel", Prompt),
];

/// The `:` commands, for the help; `state::run_command_line` runs them.
pub const COMMANDS: &[(&str, &str)] = &[
    (":q  :quit", "quit"),
    (":help", "this help"),
    (
        ":theme NAME",
        "switch theme: dark, light, ansi16, colorblind",
    ),
    (":theme", "show the current theme"),
    (
        ":stop REASON",
        "org-wide stop: dataward dispatches nothing (dangerous)",
    ),
    (
        ":lift",
        "ask to lift the stop; a second person's :lift lifts it (dangerous)",
    ),
    (
        ":resolve REASON",
        "close the open incident by hand, as C (dangerous)",
    ),
    (
        ":reopen REASON",
        "reopen the open resolved incident, as O (dangerous)",
    ),
    (
        ":accept REASON",
        "accept the open incident's new volume level, as N (dangerous)",
    ),
];

/// The bindings a console may use: read-only consoles lose every dangerous one.
pub fn available(read_only: bool) -> impl Iterator<Item = &'static Binding> {
    BINDINGS
        .iter()
        .filter(move |binding| !(read_only && binding.dangerous))
}

/// The context the next key is read in: an open overlay wins over the screen.
pub fn context(app: &App) -> Context {
    match app.overlay {
        Overlay::Help { .. } => Context::Help,
        Overlay::AlertOutbox { .. } => Context::Outbox,
        Overlay::Reason(_) => Context::Reason,
        Overlay::Prompt { .. } => Context::Prompt,
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

/// What a key press means here and now, if anything.
pub fn action_for(app: &App, key: KeyEvent) -> Option<Action> {
    let here = context(app);
    let pressed = normalise(key);
    let applies = |binding: &&Binding| {
        binding.context == here
            || binding.context == Context::Always
            || (binding.context == Context::Global && !here.takes_text())
    };
    // A binding for this context wins over a global one on the same key (`?` closes
    // the help rather than opening it again).
    let bound = available(app.read_only)
        .filter(|binding| binding.context == here)
        .chain(available(app.read_only).filter(applies))
        .find(|binding| binding.keys.contains(&pressed))
        .map(|binding| binding.action.clone());
    match bound {
        Some(action) => Some(action),
        None if here.takes_text() => Some(Action::Edit(key)),
        None => None,
    }
}

/// Footer hints for the current context, from the same table. Help comes first so it
/// survives a narrow terminal cutting the rest.
pub fn hints(app: &App) -> Vec<(&'static str, &'static str)> {
    let here = context(app);
    let shown_here = |binding: &&Binding| {
        binding.context == here || (binding.context == Context::Global && !here.takes_text())
    };
    let taken_here =
        |key: &Key| available(app.read_only).any(|b| b.context == here && b.keys.contains(key));
    let mut bindings: Vec<&Binding> = available(app.read_only)
        .filter(shown_here)
        .filter(|b| b.context == here || !b.keys.iter().any(taken_here))
        .collect();
    bindings.sort_by_key(|binding| binding.context != Context::Global);
    bindings
        .into_iter()
        .filter_map(|binding| Some((binding.label, binding.hint?)))
        .collect()
}

/// The help overlay's contents: every available binding, grouped by context.
pub fn help_sections(read_only: bool) -> Vec<(Context, Vec<&'static Binding>)> {
    let order = [Always, Global, List, Detail, Outbox, Reason, Prompt, Help];
    order
        .iter()
        .map(|context| {
            let bindings = available(read_only)
                .filter(|binding| binding.context == *context)
                .collect();
            (*context, bindings)
        })
        .collect()
}
