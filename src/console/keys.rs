//! The one key registry. Every binding is listed once, here, with its description and
//! context; the `?` help, the footer hints and read-only mode all read this table, so
//! they cannot drift from what the keys actually do. A key press is read in it by
//! `keys/press.rs`; the screens and overlays get the action, never the key.

use crossterm::event::{KeyCode, KeyModifiers};

use crate::console::keymap::{Bound, Keymap};
use crate::console::line::LineOp;
use crate::console::state::Action;

mod press;
#[cfg(test)]
mod tests;

pub use press::{action_for, context, hints, press};

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
    /// The migration waves and access requests overlays, where their things are decided.
    Waves,
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
            Context::Waves => "Migration waves and access requests",
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

use Context::{Always, Detail, Global, Help, List, Outbox, Prompt, Reason, Waves};
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
    bind(&[ch('W')], "W", Action::Waves, "migration waves: parity per table, the gate, repoints", Global),
    bind(&[ch('A')], "A", Action::AccessRequests, "access requests: review, granted, expiring, revoked", Global),
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
    binding(&[ch('Z')], "Z", Action::Snooze, "snooze the selected monitor (monitors pane): no alert, no new incident until it ends (duration up to 7d, then the reason)", List, true, None),
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
    // In help, not in the footer: it has no room left at 120 columns.
    binding(&[ch('E')], "E", Action::Expected, "this was fine: close the incident as expected; its breach leaves the baselines (reason required)", Detail, true, None),
    binding(&[ch('Z')], "Z", Action::Snooze, "snooze the incident's monitor: no alert, no new incident until it ends (duration up to 7d, then the reason)", Detail, true, None),
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
    hint(&[plain(Esc), ch('o'), ch('q')], "Esc o q", Action::Back, "close the overlay", "close", Outbox),
    bind(&[ch('j'), plain(Down)], "j ↓", Action::Down, "select the next wave, repoint or request", Waves),
    bind(&[ch('k'), plain(Up)], "k ↑", Action::Up, "select the one before", Waves),
    bind(&[ctrl('d')], "Ctrl-D", Action::HalfPageDown, "half a screen down", Waves),
    bind(&[ctrl('u')], "Ctrl-U", Action::HalfPageUp, "half a screen up", Waves),
    bind(&[plain(PageDown), ctrl('f')], "PgDn Ctrl-F", Action::PageDown, "a screen down", Waves),
    bind(&[plain(PageUp), ctrl('b')], "PgUp Ctrl-B", Action::PageUp, "a screen up", Waves),
    bind(&[ch('g'), plain(Home)], "g Home", Action::Top, "the first", Waves),
    bind(&[ch('G'), plain(End)], "G End", Action::Bottom, "the last", Waves),
    dangerous(&[ch('a')], "a", Action::Approve, "approve the selected: a wave is signed off on its parity hash, a repoint, a review or a grant on theirs (reason optional)", "approve", Waves),
    dangerous(&[ch('r')], "r", Action::Reject, "reject the selected wave's parity, repoint, review or grant (reason required)", "reject", Waves),
    dangerous(&[ch('u')], "u", Action::RollBack, "roll back the selected: a whole wave's applied repoints, a repoint, or a grant (its revoke is proposed) (reason required)", "roll back", Waves),
    hint(&[plain(Esc), ch('q')], "Esc q", Action::Back, "close the overlay", "close", Waves),
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

/// What a `:` command does; `commands::run` carries it out.
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
    Expected,
    Snooze,
    Request,
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
    command("expected", &[], "REASON", Completes::Nothing, Verb::Expected, "the open incident was fine: it closes as expected, out of the baselines", true),
    command("snooze", &[], "DURATION REASON", Completes::Nothing, Verb::Snooze, "snooze the open incident's monitor (at most 7d): breaches recorded, nobody paged", true),
    command("request", &[], "TABLE|SCHEMA PRIVILEGE ROLE [DAYSd] REASON", Completes::Nothing, Verb::Request, "ask for access (default 90d): the policy judges it, then the GRANT goes to the domain's owners", true),
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

/// The help overlay's contents: every available binding, grouped by context.
pub fn help_sections(keymap: &Keymap, read_only: bool) -> Vec<(Context, Vec<&Bound>)> {
    let order = [
        Always, Global, List, Detail, Outbox, Waves, Reason, Prompt, Help,
    ];
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
