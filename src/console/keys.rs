//! The one key registry. Every binding is listed once, here, with its description and
//! context; the `?` help, the footer hints and read-only mode all read this table, so
//! they cannot drift from what the keys actually do.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::console::keymap::{Bound, Keymap};
use crate::console::line::LineOp;
use crate::console::state::{update, Action, App, Decision, ListPane, Overlay, Pane, Screen};

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

const fn ctrl_key(code: KeyCode) -> Key {
    Key {
        code,
        modifiers: KeyModifiers::CONTROL,
    }
}

const fn alt(code: KeyCode) -> Key {
    Key {
        code,
        modifiers: KeyModifiers::ALT,
    }
}

#[derive(Debug)]
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
use KeyCode::{
    BackTab, Backspace, Delete, Down, End, Enter, Esc, Home, Left, PageDown, PageUp, Right, Tab, Up,
};

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
    bind(&[ctrl('d')], "Ctrl-D", Action::HalfPageDown, "half a screen down", List),
    bind(&[ctrl('u')], "Ctrl-U", Action::HalfPageUp, "half a screen up", List),
    bind(&[plain(PageDown), ctrl('f')], "PgDn Ctrl-F", Action::PageDown, "a screen down", List),
    bind(&[plain(PageUp), ctrl('b')], "PgUp Ctrl-B", Action::PageUp, "a screen up", List),
    bind(&[ch('g'), plain(Home)], "g Home", Action::Top, "first incident", List),
    bind(&[ch('G'), plain(End)], "G End", Action::Bottom, "last incident", List),
    hint(&[plain(Enter)], "Enter", Action::Open, "open the incident", "open", List),
    hint(&[ch('/')], "/", Action::Filter, "filter: text shows matches, !text hides them", "filter", List),
    hint(&[ch('t')], "t", Action::ToggleOpenOnly, "open incidents only, or all", "open/all", List),
    hint(&[ch('s')], "s", Action::SortNext, "sort by the next column (the last: the engine's order)", "sort", List),
    bind(&[ch('S')], "S", Action::SortReverse, "sort the other way round", List),
    hint(&[plain(Tab), plain(BackTab)], "Tab", Action::NextPane, "incidents or monitors: which pane the keys move in", "monitors", List),
    bind(&[ch('y')], "y", Action::Copy, "copy the incident's id, or the monitor's name, to the clipboard (OSC 52)", List),
    bind(&[plain(Esc)], "Esc", Action::Back, "back to the incidents, or clear the filter", List),
    hint(&[ch('q')], "q", Action::Quit, "quit", "quit", List),
    hint(&[plain(Tab)], "Tab", Action::NextPane, "next pane (cause, tree, proposals, body)", "pane", Detail),
    hint(&[plain(Esc), ch('q')], "Esc q", Action::Back, "back to the list", "back", Detail),
    hint(&[ch('R')], "R", Action::ToggleReceipt, "show or hide the receipt (so far, while open)", "receipt", Detail),
    bind(&[ch('T')], "T", Action::ToggleTimeline, "show or hide the timeline: who saw, decided, ran, verified (y copies it)", Detail),
    bind(&[plain(BackTab)], "Shift-Tab", Action::PreviousPane, "previous pane", Detail),
    bind(&[ch('y')], "y", Action::Copy, "copy: the id, a node's name, the proposal's hash, or its SQL or command", Detail),
    bind(&[ch('z')], "z", Action::Zoom, "zoom: the focused pane alone (z again: all of them)", Detail),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "down in the focused pane", Detail),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "up in the focused pane", Detail),
    bind(&[ch('h'), plain(Left)], "h ←", Action::Collapse, "close a tree node (or go to its parent)", Detail),
    bind(&[ch('l'), plain(Right)], "l →", Action::Expand, "open a tree node", Detail),
    bind(&[ctrl('d')], "Ctrl-D", Action::HalfPageDown, "half the pane down", Detail),
    bind(&[ctrl('u')], "Ctrl-U", Action::HalfPageUp, "half the pane up", Detail),
    bind(&[plain(PageDown), ctrl('f')], "PgDn Ctrl-F", Action::PageDown, "the pane's height down", Detail),
    bind(&[plain(PageUp), ctrl('b')], "PgUp Ctrl-B", Action::PageUp, "the pane's height up", Detail),
    bind(&[ch('g'), plain(Home)], "g Home", Action::Top, "to the top", Detail),
    bind(&[ch('G'), plain(End)], "G End", Action::Bottom, "to the bottom", Detail),
    dangerous(&[ch('a')], "a", Action::Approve, "approve the selected proposal (reason optional)", "approve", Detail),
    dangerous(&[ch('r')], "r", Action::Reject, "reject the selected proposal (reason required)", "reject", Detail),
    dangerous(&[ch('u')], "u", Action::RollBack, "roll back the selected proposal (reason required)", "roll back", Detail),
    dangerous(&[ch('f')], "f", Action::Forward, "forward the selected note to its owner", "forward", Detail),
    // Off the letters on purpose: g is the top, and a run must not start by accident.
    dangerous(&[ctrl('r')], "Ctrl-R", Action::QueueRun, "queue the approved run for this incident", "run", Detail),
    dangerous(&[ch('C')], "C", Action::Resolve, "close the incident by hand (reason required)", "close", Detail),
    dangerous(&[ch('O')], "O", Action::Reopen, "reopen the resolved incident (reason required)", "reopen", Detail),
    dangerous(&[ch('N')], "N", Action::AcceptLevel, "accept the breach's new level as normal (volume, row count, null rate): its baseline restarts there (reason required)", "new level", Detail),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "scroll down", Help),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "scroll up", Help),
    bind(&[ctrl('d')], "Ctrl-D", Action::HalfPageDown, "half a screen down", Help),
    bind(&[ctrl('u')], "Ctrl-U", Action::HalfPageUp, "half a screen up", Help),
    bind(&[plain(PageDown), ctrl('f')], "PgDn Ctrl-F", Action::PageDown, "a screen down", Help),
    bind(&[plain(PageUp), ctrl('b')], "PgUp Ctrl-B", Action::PageUp, "a screen up", Help),
    bind(&[ch('g'), plain(Home)], "g Home", Action::Top, "to the top", Help),
    bind(&[ch('G'), plain(End)], "G End", Action::Bottom, "to the bottom", Help),
    hint(&[plain(Esc), ch('?'), ch('q')], "Esc ? q", Action::Back, "close the help", "close", Help),
    hint(&[ch('/')], "/", Action::Search, "search the help as you type (Enter keeps it)", "search", Help),
    hint(&[ch('n')], "n", Action::SearchNext, "the next match", "next", Help),
    bind(&[ch('N')], "N", Action::SearchPrevious, "the match before", Help),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "scroll down", Outbox),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "scroll up", Outbox),
    bind(&[ctrl('d')], "Ctrl-D", Action::HalfPageDown, "half a screen down", Outbox),
    bind(&[ctrl('u')], "Ctrl-U", Action::HalfPageUp, "half a screen up", Outbox),
    bind(&[plain(PageDown), ctrl('f')], "PgDn Ctrl-F", Action::PageDown, "a screen down", Outbox),
    bind(&[plain(PageUp), ctrl('b')], "PgUp Ctrl-B", Action::PageUp, "a screen up", Outbox),
    bind(&[ch('g'), plain(Home)], "g Home", Action::Top, "to the top", Outbox),
    bind(&[ch('G'), plain(End)], "G End", Action::Bottom, "to the bottom", Outbox),
    hint(&[plain(Esc), ch('o'), ch('q')], "Esc o q", Action::Back, "close the outbox", "close", Outbox),
    hint(&[plain(Enter)], "Enter", Action::Submit, "send the decision", "send", Reason),
    hint(&[ctrl('j'), alt(Enter)], "Ctrl-J Alt-Enter", Action::NewLine, "new line in the reason", "new line", Reason),
    hint(&[plain(Esc)], "Esc", Action::Back, "cancel: nothing is sent", "cancel", Reason),
    hint(&[plain(Enter)], "Enter", Action::Submit, "run the command, or keep the filter", "run", Prompt),
    hint(&[plain(Esc)], "Esc", Action::Back, "cancel (clears the filter)", "cancel", Prompt),
    hint(&[plain(Tab)], "Tab", Action::Line(LineOp::Complete), "complete a command, theme or incident id", "complete", Prompt),
    bind(&[plain(Up), ctrl('p')], "↑ Ctrl-P", Action::Line(LineOp::Older), "the line typed before (history)", Prompt),
    bind(&[plain(Down), ctrl('n')], "↓ Ctrl-N", Action::Line(LineOp::Newer), "the line typed after (history)", Prompt),
    bind(&[plain(Left), ctrl('b')], "← Ctrl-B", Action::Line(LineOp::Left), "cursor left", Prompt),
    bind(&[plain(Right), ctrl('f')], "→ Ctrl-F", Action::Line(LineOp::Right), "cursor right", Prompt),
    bind(&[plain(Home), ctrl('a')], "Home Ctrl-A", Action::Line(LineOp::Start), "to the start of the line", Prompt),
    bind(&[plain(End), ctrl('e')], "End Ctrl-E", Action::Line(LineOp::End), "to the end of the line", Prompt),
    bind(&[plain(Backspace), ctrl('h')], "Backspace", Action::Line(LineOp::Backspace), "delete the character before the cursor", Prompt),
    bind(&[plain(Delete), ctrl('d')], "Delete Ctrl-D", Action::Line(LineOp::Delete), "delete the character under the cursor", Prompt),
    bind(&[ctrl('u')], "Ctrl-U", Action::Line(LineOp::CutToStart), "delete to the start of the line", Prompt),
    bind(&[ctrl('k')], "Ctrl-K", Action::Line(LineOp::CutToEnd), "delete to the end of the line", Prompt),
    bind(&[ctrl('w'), ctrl_key(Backspace)], "Ctrl-W", Action::Line(LineOp::CutWord), "delete the word before the cursor", Prompt),
];

/// What a `:` command does; `state::run_command_line` carries it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Quit,
    Help,
    Theme,
    Open,
    Stop,
    Lift,
    Resolve,
    Reopen,
    Accept,
    Run,
    Sort,
    Status,
    Copy,
    Mouse,
    Timeline,
}

/// What Tab offers for a command's argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completes {
    Nothing,
    Themes,
    Incidents,
    Columns,
    Statuses,
    CopyTargets,
    OnOff,
}

/// One `:` command: its name and aliases, what it takes, and whether it changes
/// something outside the console (then a read-only console has no such command).
pub struct CommandSpec {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// How the argument is written in help: `REASON`, `[NAME]`, or empty.
    pub args: &'static str,
    pub completes: Completes,
    pub verb: Verb,
    pub description: &'static str,
    pub dangerous: bool,
}

const fn command(
    name: &'static str,
    aliases: &'static [&'static str],
    args: &'static str,
    completes: Completes,
    verb: Verb,
    description: &'static str,
    dangerous: bool,
) -> CommandSpec {
    CommandSpec {
        name,
        aliases,
        args,
        completes,
        verb,
        description,
        dangerous,
    }
}

/// Every `:` command, in the order help lists them. Like the keys, one line each.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    command("quit", &["q", "q!", "qa"], "", Completes::Nothing, Verb::Quit, "quit", false),
    command("help", &["h"], "", Completes::Nothing, Verb::Help, "this help", false),
    command("theme", &[], "[NAME]", Completes::Themes, Verb::Theme, "switch theme, or show the current one", false),
    command("open", &["incident"], "ID", Completes::Incidents, Verb::Open, "open an incident by id; :ID alone does too", false),
    command("sort", &[], "[COLUMN]", Completes::Columns, Verb::Sort, "sort the list by a column (again: the other way); none: the engine's order", false),
    command("timeline", &["tl"], "", Completes::Nothing, Verb::Timeline, "the open incident's chain records in order: who saw, decided, ran", false),
    command("copy", &["y"], "[id|hash|command|sql]", Completes::CopyTargets, Verb::Copy, "copy to the clipboard (OSC 52); none: what y copies", false),
    command("mouse", &[], "[on|off]", Completes::OnOff, Verb::Mouse, "clicks and the wheel (off unless asked for); none: switch", false),
    command("status", &[], "[open|all]", Completes::Statuses, Verb::Status, "list open incidents only, or all; none: switch", false),
    command("stop", &[], "REASON", Completes::Nothing, Verb::Stop, "org-wide stop: dataward dispatches nothing", true),
    command("lift", &[], "", Completes::Nothing, Verb::Lift, "ask to lift the stop; a second person's :lift lifts it", true),
    command("resolve", &[], "REASON", Completes::Nothing, Verb::Resolve, "close the open incident by hand", true),
    command("reopen", &[], "REASON", Completes::Nothing, Verb::Reopen, "reopen the open resolved incident", true),
    command("accept", &[], "REASON", Completes::Nothing, Verb::Accept, "accept the open incident's new level (volume, row count, null rate)", true),
    command("run", &[], "", Completes::Nothing, Verb::Run, "queue the approved run for the open incident", true),
];

impl CommandSpec {
    /// How help writes it: `:theme [NAME]`.
    pub fn label(&self) -> String {
        if self.args.is_empty() {
            format!(":{}", self.name)
        } else {
            format!(":{} {}", self.name, self.args)
        }
    }

    /// The description with the aliases, as help shows it.
    pub fn described(&self) -> String {
        if self.aliases.is_empty() {
            self.description.to_string()
        } else {
            let aliases: Vec<String> = self.aliases.iter().map(|a| format!(":{a}")).collect();
            format!("{} (also {})", self.description, aliases.join(" "))
        }
    }

    fn is_called(&self, word: &str) -> bool {
        self.name == word || self.aliases.contains(&word)
    }
}

/// The commands a console may run: read-only consoles lose every dangerous one.
pub fn commands(read_only: bool) -> impl Iterator<Item = &'static CommandSpec> {
    COMMANDS
        .iter()
        .filter(move |command| !(read_only && command.dangerous))
}

/// The command `word` names (by name or alias), whether or not this console may run it.
pub fn find_command(word: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|command| command.is_called(word))
}

/// The bindings a console may use: read-only consoles lose every dangerous one, and an
/// action the person's `[keys]` left without keys is gone too.
pub fn available(keymap: &Keymap, read_only: bool) -> impl Iterator<Item = &Bound> {
    keymap
        .all()
        .filter(move |binding| !(binding.keys.is_empty() || read_only && binding.dangerous))
}

/// The context the next key is read in: an open overlay wins over the screen.
pub fn context(app: &App) -> Context {
    match app.overlay {
        // Typing a search over the help: its keys are the line's.
        Overlay::Help { .. } if app.help_search.typing.is_some() => Context::Prompt,
        Overlay::Help { .. } => Context::Help,
        Overlay::AlertOutbox { .. } => Context::Outbox,
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
    overlay: Option<(&'static str, usize)>,
    selected_incident: Option<String>,
    list_pane: crate::console::state::ListPane,
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
                Overlay::Help { scroll } => Some(("help", *scroll)),
                Overlay::AlertOutbox { scroll } => Some(("outbox", *scroll)),
                Overlay::Reason(_) => Some(("reason", 0)),
                Overlay::Prompt(_) => Some(("prompt", 0)),
            },
            selected_incident: app.selected_incident.clone(),
            list_pane: app.list_pane,
            monitor_selected: app.monitor_selected,
            // Its scroll offsets, focus, selection, tree and what is open over it.
            detail: app.detail.as_ref().map(|d| {
                format!(
                    "{} {:?} {} {} {} {} {} {:?} {} {} {} {}",
                    d.incident,
                    d.focus,
                    d.cause_scroll,
                    d.proposal,
                    d.body_scroll,
                    d.receipt_open,
                    d.receipt_scroll,
                    d.tree.selected,
                    d.tree.opened.len(),
                    d.zoomed,
                    d.timeline_open,
                    d.timeline_scroll
                )
            }),
            filter: app.filter.clone(),
            list: app.list,
            help_search: (app.help_search.query.clone(), app.help_search.at),
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
    let over_panes = app
        .detail
        .as_ref()
        .is_some_and(|d| d.receipt_open || d.timeline_open);
    let focus = app.detail.as_ref().map(|d| d.focus);
    match action {
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::HalfPageUp
        | Action::HalfPageDown
        | Action::Top
        | Action::Bottom => {
            let what = match (&app.overlay, app.screen, focus) {
                (Overlay::Help { .. }, ..) => "the help",
                (Overlay::AlertOutbox { .. }, ..) => "the outbox",
                (_, Screen::List, _) if app.list_pane == ListPane::Monitors => "the monitors",
                (_, Screen::List, _) if app.visible_incidents().is_empty() => {
                    return "no incidents to move through".into()
                }
                (_, Screen::List, _) => "the incidents",
                (_, Screen::Detail, _) if over_panes => "what is open",
                (_, Screen::Detail, Some(Pane::Cause)) => "the cause",
                (_, Screen::Detail, Some(Pane::Tree)) => "the blast radius",
                (_, Screen::Detail, Some(Pane::Proposals)) => "the proposals",
                (_, Screen::Detail, _) => "the proposal",
            };
            let end = if towards_top { "top" } else { "bottom" };
            format!("already at the {end} of {what}")
        }
        Action::Collapse | Action::Expand if over_panes => {
            "close the receipt or timeline first (Esc): h and l open and close the blast radius"
                .into()
        }
        Action::Collapse | Action::Expand if focus != Some(Pane::Tree) => {
            "h and l open and close the blast-radius tree: Tab to it first".into()
        }
        Action::Collapse | Action::Expand => {
            "nothing to open or close at this node of the blast radius".into()
        }
        Action::Open if app.list_pane == ListPane::Monitors => {
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
/// before it asks anything (`state::refused_up_front`): such a key would only refuse,
/// so its hint is not offered. (The hints are drawn after the screen.)
fn acts_on_left_out(app: &App, action: &Action) -> bool {
    let drawn = &app.drawn;
    let refused = |decision| {
        app.selected_proposal()
            .is_some_and(|p| crate::console::state::refused_up_front(app, p, decision).is_some())
    };
    match action {
        Action::Open => drawn.left_out(&drawn.incident_shown),
        Action::Forward => {
            drawn.left_out(&drawn.proposal_shown)
                || !app.selected_proposal().is_some_and(|p| {
                    p.kind == crate::engine::api::ProposalKind::Note
                        && p.state == crate::engine::api::ProposalState::Pending
                })
        }
        Action::Resolve | Action::AcceptLevel | Action::Reopen => {
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

/// The help overlay's contents: every available binding, grouped by context.
pub fn help_sections(keymap: &Keymap, read_only: bool) -> Vec<(Context, Vec<&Bound>)> {
    let order = [Always, Global, List, Detail, Outbox, Reason, Prompt, Help];
    order
        .iter()
        .map(|context| {
            let bindings = available(keymap, read_only)
                .filter(|binding| binding.context == *context)
                .collect();
            (*context, bindings)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::{many_incidents, sample_snapshot};
    use crate::console::state::{Detail, Pane};
    use crate::console::theme::Theme;
    use crate::console::view;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn app_with(snapshot: crate::engine::api::Snapshot) -> App {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        app
    }

    fn draw(app: &App, size: (u16, u16)) -> String {
        let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
        terminal.draw(|frame| view::render(frame, app)).unwrap();
        terminal.backend().to_string()
    }

    fn key(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
        press(app, KeyEvent::new(code, modifiers));
    }

    fn selected(app: &App) -> usize {
        app.selected_index().unwrap()
    }

    /// PgDn and PgUp move by the rows the list shows, at whatever size the terminal
    /// is; Ctrl-D and Ctrl-U by half; g and G to the ends.
    #[test]
    fn pages_are_as_tall_as_the_screen_shows() {
        let mut app = app_with(many_incidents(200));
        let mut pages = Vec::new();
        for size in [(80, 24), (120, 40), (100, 60)] {
            key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
            assert_eq!(selected(&app), 0);
            draw(&app, size);
            let rows = app.drawn.list_rows.get().height;
            pages.push(rows);
            key(&mut app, KeyCode::PageDown, KeyModifiers::NONE);
            assert_eq!(selected(&app), rows as usize, "{size:?}");
            // The row a page down lands on is on screen, at the bottom.
            let screen = draw(&app, size);
            let id = format!("INC-{}", 200 - rows as usize);
            assert!(screen.contains(&format!("▶ {id} ")), "{id} in\n{screen}");
            key(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL);
            assert_eq!(selected(&app), rows as usize * 3 / 2, "{size:?}");
            key(&mut app, KeyCode::Char('u'), KeyModifiers::CONTROL);
            key(&mut app, KeyCode::PageUp, KeyModifiers::NONE);
            assert_eq!(selected(&app), 0, "{size:?}");
            key(&mut app, KeyCode::Char('G'), KeyModifiers::SHIFT);
            assert_eq!(selected(&app), 199);
        }
        // 24 rows show 12 incidents; the taller, the more.
        assert_eq!(pages[0], 12);
        assert!(pages[0] < pages[1] && pages[1] < pages[2], "{pages:?}");
    }

    /// In the detail, a page is the focused pane's height; the help pages by its own.
    #[test]
    fn panes_and_help_page_by_their_own_height() {
        let mut app = app_with(sample_snapshot());
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        key(&mut app, KeyCode::BackTab, KeyModifiers::NONE);
        key(&mut app, KeyCode::BackTab, KeyModifiers::NONE);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
        draw(&app, (120, 40));
        let rows = app.drawn.pane(Pane::Cause).height as usize;
        assert!(rows > 2);
        key(&mut app, KeyCode::PageDown, KeyModifiers::NONE);
        assert_eq!(app.detail.as_ref().unwrap().cause_scroll, rows);
        key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
        assert_eq!(app.detail.as_ref().unwrap().cause_scroll, 0);

        key(&mut app, KeyCode::Char('?'), KeyModifiers::NONE);
        let before = draw(&app, (80, 24));
        let height = app.drawn.help.get().height as usize;
        let first_below = crate::console::help::lines(&app, 74)[height].to_string();
        assert!(!before.contains(first_below.trim()), "{before}");
        key(&mut app, KeyCode::PageDown, KeyModifiers::NONE);
        let after = draw(&app, (80, 24));
        // The line just below the first page is now the top one.
        let top = after.lines().nth(2).unwrap();
        assert!(
            top.contains(first_below.trim()),
            "{first_below:?} at the top of\n{after}"
        );
        key(&mut app, KeyCode::Char('G'), KeyModifiers::NONE);
        let bottom = draw(&app, (80, 24));
        assert!(bottom.contains(":run"), "{bottom}");
        key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
        assert!(matches!(app.overlay, Overlay::Help { scroll: 0 }));
    }

    /// The run moved off g (now the top) to Ctrl-R, which nobody presses by accident.
    #[test]
    fn g_goes_to_the_top_and_the_run_is_on_ctrl_r() {
        let mut app = app_with(sample_snapshot());
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
        assert!(app.outbox.is_empty());
        assert_eq!(
            action_for(
                &app,
                KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)
            ),
            Some(Action::QueueRun)
        );
        key(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
        assert_eq!(
            app.outbox,
            vec![crate::engine::api::Command::QueueRun {
                incident: "INC-7".into()
            }]
        );
    }

    /// The console in each place a person can be, drawn once, with nothing said yet.
    fn places() -> Vec<(&'static str, App)> {
        let detail = |read_only: bool, focus: Pane, change: &dyn Fn(&mut Detail)| {
            let mut app = App::new(read_only, Theme::fallback(), None, false);
            update(
                &mut app,
                Action::SnapshotArrived(Box::new(sample_snapshot())),
            );
            key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
            let detail = app.detail.as_mut().unwrap();
            detail.focus = focus;
            change(detail);
            app
        };
        let none = |_: &mut Detail| {};
        let mut empty = App::new(false, Theme::fallback(), None, false);
        update(&mut empty, Action::SnapshotArrived(Box::default()));
        let mut monitors = app_with(sample_snapshot());
        key(&mut monitors, KeyCode::Tab, KeyModifiers::NONE);
        let mut help = app_with(sample_snapshot());
        key(&mut help, KeyCode::Char('?'), KeyModifiers::NONE);
        let mut outbox = app_with(sample_snapshot());
        key(&mut outbox, KeyCode::Char('o'), KeyModifiers::NONE);
        let mut read_only_list = App::new(true, Theme::fallback(), None, false);
        update(
            &mut read_only_list,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        vec![
            ("list, no incidents", empty),
            ("list", app_with(sample_snapshot())),
            ("list, read-only", read_only_list),
            ("monitors pane", monitors),
            ("detail, cause", detail(false, Pane::Cause, &none)),
            ("detail, tree", detail(false, Pane::Tree, &none)),
            ("detail, proposals", detail(false, Pane::Proposals, &none)),
            ("detail, body", detail(false, Pane::Body, &none)),
            ("detail, read-only", detail(true, Pane::Proposals, &none)),
            (
                "detail, zoomed",
                detail(false, Pane::Proposals, &|d| d.zoomed = true),
            ),
            (
                "detail, timeline",
                detail(false, Pane::Proposals, &|d| d.timeline_open = true),
            ),
            (
                "detail, receipt",
                detail(false, Pane::Proposals, &|d| d.receipt_open = true),
            ),
            ("help", help),
            ("outbox", outbox),
        ]
    }

    /// Every key of the registry, pressed wherever a person can be (where it is bound
    /// and where it is not), either changes what the console shows or does, or says on
    /// the status line why it does nothing. Keys that did nothing and said nothing: `C`
    /// in a read-only console, `a` on the list, `l` outside the tree.
    #[test]
    fn every_key_that_does_nothing_says_why() {
        let mut silent = Vec::new();
        let mut pressed: Vec<Key> = BINDINGS
            .iter()
            .flat_map(|b| b.keys.iter().copied())
            .collect();
        // And keys nothing binds anywhere.
        pressed.extend([ch('x'), ch('Q'), plain(KeyCode::F(5))]);
        for (place, _) in places() {
            for key_pressed in &pressed {
                let mut app = places().into_iter().find(|(p, _)| *p == place).unwrap().1;
                let before = draw(&app, (120, 40));
                app.message = None;
                app.full_redraw = false;
                let before_again = draw(&app, (120, 40));
                assert_eq!(
                    before, before_again,
                    "{place}: drawing twice draws the same"
                );
                press(
                    &mut app,
                    KeyEvent::new(key_pressed.code, key_pressed.modifiers),
                );
                let after = draw(&app, (120, 40));
                let acted = after != before
                    || app.quit
                    || app.suspend
                    || app.full_redraw
                    || app.clipboard.is_some()
                    || !app.outbox.is_empty();
                if !acted {
                    silent.push(format!(
                        "{place}: {:?} {:?}",
                        key_pressed.modifiers, key_pressed.code
                    ));
                }
            }
        }
        assert!(
            silent.is_empty(),
            "{} keys did nothing and said nothing:\n{}",
            silent.len(),
            silent.join("\n")
        );
    }

    /// One proposal on screen at 160x45 (and at every size a row fits): `a` opens the
    /// reason box for it. The view noted it as left out (a pane with room for one row
    /// was taken for a header and a row), so `a` said "is not on screen".
    #[test]
    fn the_one_proposal_on_screen_is_decided_at_any_size_it_shows() {
        for size in [(160, 45), (120, 40), (80, 24), (200, 60)] {
            let mut snapshot = sample_snapshot();
            let incident = &mut snapshot.incidents[0];
            incident.proposals.retain(|p| p.id == "P-2");
            let mut app = app_with(snapshot);
            key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
            let screen = draw(&app, size);
            assert!(screen.contains("P-2"), "{size:?}\n{screen}");
            key(&mut app, KeyCode::Char('a'), KeyModifiers::NONE);
            assert!(
                matches!(app.overlay, Overlay::Reason(_)),
                "{size:?}: {:?}\n{screen}",
                app.message
            );
            // Each pane zoomed shows it too (the body names it in its title).
            for focus in [Pane::Cause, Pane::Tree, Pane::Proposals, Pane::Body] {
                app.overlay = Overlay::None;
                let detail = app.detail.as_mut().unwrap();
                detail.zoomed = true;
                detail.focus = focus;
                draw(&app, size);
                key(&mut app, KeyCode::Char('a'), KeyModifiers::NONE);
                assert!(
                    matches!(app.overlay, Overlay::Reason(_)),
                    "{size:?} {focus:?} zoomed: {:?}",
                    app.message
                );
            }
        }
    }

    /// Someone the policy does not let decide a proposal is refused when they press the
    /// key, before typing a reason (they got the box and were refused only after), and
    /// told who decides; a decided proposal says so. The engine still checks.
    #[test]
    fn a_decision_this_person_may_not_take_is_refused_before_the_reason_box() {
        let mut snapshot = sample_snapshot();
        for proposal in &mut snapshot.incidents[0].proposals {
            proposal.decider_accounts = Some(vec!["alice".into()]);
        }
        let console = |you: &str, snapshot: &crate::engine::api::Snapshot| {
            let mut app = app_with(snapshot.clone());
            update(
                &mut app,
                Action::Hello {
                    started_at: "2026-11-24T14:00:00Z".into(),
                    you: you.into(),
                    read_only: false,
                },
            );
            key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
            // P-2, the pending diff.
            key(&mut app, KeyCode::Char('j'), KeyModifiers::NONE);
            draw(&app, (120, 40));
            app
        };
        let mut bob = console("bob (uid 1002)", &snapshot);
        for refused in ['a', 'r'] {
            key(&mut bob, KeyCode::Char(refused), KeyModifiers::NONE);
            assert!(matches!(bob.overlay, Overlay::None), "{refused}");
            let said = bob.message.clone().unwrap_or_default();
            assert!(
                said.contains("bob may not decide P-2")
                    && said.contains("analytics-eng")
                    && said.contains("alice"),
                "{said}"
            );
        }
        // Nothing approved to roll back; the approved hold has nothing left to decide.
        key(&mut bob, KeyCode::Char('u'), KeyModifiers::NONE);
        assert!(
            bob.message
                .clone()
                .unwrap_or_default()
                .contains("P-2 is pending"),
            "{:?}",
            bob.message
        );
        key(&mut bob, KeyCode::Char('k'), KeyModifiers::NONE);
        key(&mut bob, KeyCode::Char('a'), KeyModifiers::NONE);
        let said = bob.message.clone().unwrap_or_default();
        assert!(
            said.contains("P-1 is approved") && matches!(bob.overlay, Overlay::None),
            "{said}"
        );
        // The one who may decide gets the reason box.
        let mut alice = console("alice (uid 1001)", &snapshot);
        key(&mut alice, KeyCode::Char('a'), KeyModifiers::NONE);
        assert!(
            matches!(alice.overlay, Overlay::Reason(_)),
            "{:?}",
            alice.message
        );
        // Closing the incident by hand is its table's owners' too.
        let mut owned = snapshot.clone();
        owned.incidents[0].owner_accounts = Some(vec!["alice".into()]);
        let mut bob = console("bob (uid 1002)", &owned);
        key(&mut bob, KeyCode::Char('C'), KeyModifiers::NONE);
        let said = bob.message.clone().unwrap_or_default();
        assert!(
            matches!(bob.overlay, Overlay::None)
                && said.contains("bob may not close")
                && said.contains("alice"),
            "{said}"
        );
        let mut alice = console("alice (uid 1001)", &owned);
        key(&mut alice, KeyCode::Char('C'), KeyModifiers::NONE);
        assert!(
            matches!(alice.overlay, Overlay::Reason(_)),
            "{:?}",
            alice.message
        );
        // Without the policy at hand (an older engine), the engine decides alone.
        snapshot.incidents[0].proposals[1].decider_accounts = None;
        let mut unknown = console("bob (uid 1002)", &snapshot);
        key(&mut unknown, KeyCode::Char('a'), KeyModifiers::NONE);
        assert!(
            matches!(unknown.overlay, Overlay::Reason(_)),
            "{:?}",
            unknown.message
        );
    }
}
