//! The `:` command line and the `/` filter: one line edited like a shell's (see
//! `line.rs`), Up and Down through what was typed before in this console, and Tab
//! completing `:` commands and their arguments from the registry (theme names,
//! incident ids from the snapshot).

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crossterm::event::{KeyCode, KeyModifiers};

use crate::console::action::Action;
use crate::console::keys::{self, Completes};
use crate::console::line::{History, LineEditor, LineOp};
use crate::console::listing::SortColumn;
use crate::console::state::{refresh_derived, App, Overlay};
use crate::console::theme;
use crate::sanitize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Command,
    Filter,
    /// `/` in the help.
    HelpSearch,
}

#[derive(Debug, Clone)]
pub struct Prompt {
    pub kind: PromptKind,
    pub line: LineEditor,
    /// How far back Up has gone in the history (0: the line being typed).
    back: usize,
    /// The line being typed, kept while Up shows older ones.
    draft: String,
}

impl Prompt {
    pub fn new(kind: PromptKind, text: &str) -> Prompt {
        Prompt {
            kind,
            line: LineEditor::new(text),
            back: 0,
            draft: String::new(),
        }
    }

    pub fn text(&self) -> &str {
        self.line.text()
    }
}

/// What each prompt has had typed into it in this console.
#[derive(Debug, Clone, Default)]
pub struct Histories {
    pub command: History,
    pub filter: History,
    pub help: History,
}

impl Histories {
    fn of(&mut self, kind: PromptKind) -> &mut History {
        match kind {
            PromptKind::Command => &mut self.command,
            PromptKind::Filter => &mut self.filter,
            PromptKind::HelpSearch => &mut self.help,
        }
    }
}

/// Opens the command line, or the filter with the filter as it stands.
pub fn open(app: &mut App, kind: PromptKind) {
    match kind {
        PromptKind::Command => app.overlay = Overlay::Prompt(Prompt::new(kind, "")),
        PromptKind::Filter => app.overlay = Overlay::Prompt(Prompt::new(kind, &app.list.filter)),
        // Over the help, which stays open beneath it.
        PromptKind::HelpSearch => {
            if let Overlay::Help(help) = &mut app.overlay {
                help.search.typing = Some(Prompt::new(kind, ""));
            }
        }
    }
}

/// The prompt being typed in: the command line or filter, or the help's search.
pub fn open_prompt(app: &App) -> Option<&Prompt> {
    match &app.overlay {
        Overlay::Prompt(prompt) => Some(prompt),
        Overlay::Help(help) => help.search.typing.as_ref(),
        _ => None,
    }
}

/// What a line being typed does with `action`: edits, typing, a paste; Enter runs the
/// command line or keeps the filter, Esc cancels (and clears the filter). Nothing moves
/// under the command line or the filter. False for any other action, and when no line
/// is open (the help's search is typed here too; the help keeps its own Enter and Esc).
pub fn handle(app: &mut App, action: &Action) -> bool {
    let over_help = match &app.overlay {
        Overlay::Prompt(_) => false,
        Overlay::Help(_) => true,
        _ => return false,
    };
    match action {
        Action::Line(op) => apply(app, *op),
        Action::Edit(key) => {
            // Keys with Ctrl are the registry's or nothing: never typed as text.
            if let KeyCode::Char(c) = key.code {
                if !c.is_control() && !key.modifiers.contains(KeyModifiers::CONTROL) {
                    insert(app, c.encode_utf8(&mut [0; 4]));
                }
            }
        }
        // Pasted text is as untrusted as anything else that reaches the screen.
        Action::Paste(text) => insert(app, &sanitize::for_terminal(text)),
        _ if over_help => return false,
        Action::Submit => submit(app),
        Action::Back => {
            if let Overlay::Prompt(Prompt {
                kind: PromptKind::Filter,
                ..
            }) = app.overlay
            {
                app.list.filter.clear();
                refresh_derived(app);
            }
            app.overlay = Overlay::None;
        }
        _ if action.distance(0).is_some() => {}
        _ => return false,
    }
    true
}

/// Enter: the line goes into its history, and a command line runs.
fn submit(app: &mut App) {
    let line = match std::mem::replace(&mut app.overlay, Overlay::None) {
        Overlay::Prompt(line) => line,
        other => {
            app.overlay = other;
            return;
        }
    };
    remember(app, &line);
    match line.kind {
        PromptKind::Command => crate::console::commands::run(app, line.text()),
        // The filter already applies as it is typed, and Enter just keeps it. (The
        // help's search is never this overlay.)
        PromptKind::Filter | PromptKind::HelpSearch => {}
    }
}

/// Enter: the line goes into its history; the caller runs it.
pub fn remember(app: &mut App, prompt: &Prompt) {
    app.histories.of(prompt.kind).push(prompt.text());
}

fn with_prompt(app: &mut App, change: impl FnOnce(&mut Prompt, &mut Histories)) {
    let prompt = match &mut app.overlay {
        Overlay::Prompt(prompt) => prompt,
        Overlay::Help(help) => match &mut help.search.typing {
            Some(prompt) => prompt,
            None => return,
        },
        _ => return,
    };
    let before = prompt.text().to_string();
    change(prompt, &mut app.histories);
    if prompt.text() == before {
        return;
    }
    // The filter applies as it is typed, and the help's search finds as it is typed.
    let (kind, text) = (prompt.kind, prompt.text().to_string());
    match kind {
        PromptKind::Filter => {
            app.list.filter = text;
            refresh_derived(app);
        }
        PromptKind::HelpSearch => crate::console::help::search_typed(app, &text),
        PromptKind::Command => {}
    }
}

/// Typed text at the cursor (a key, or a bracketed paste already made safe).
pub fn insert(app: &mut App, text: &str) {
    with_prompt(app, |prompt, _| prompt.line.insert(text));
}

pub fn apply(app: &mut App, op: LineOp) {
    match op {
        LineOp::Complete => complete(app),
        LineOp::Older | LineOp::Newer => with_prompt(app, |prompt, histories| {
            let history = histories.of(prompt.kind);
            let back = match op {
                LineOp::Older if prompt.back < history.len() => prompt.back + 1,
                LineOp::Newer if prompt.back > 0 => prompt.back - 1,
                _ => return,
            };
            if prompt.back == 0 {
                prompt.draft = prompt.text().to_string();
            }
            prompt.back = back;
            let text = match back {
                0 => prompt.draft.clone(),
                n => history.back(n).unwrap_or_default().to_string(),
            };
            prompt.line.set(&text);
        }),
        edit => with_prompt(app, |prompt, _| {
            prompt.line.apply(edit);
        }),
    }
}

/// Tab on the command line: the word at the cursor completed from what fits there (a
/// command or an incident id first; then the argument the command takes). One match is
/// filled in; several are filled in as far as they agree, and listed on the status line.
fn complete(app: &mut App) {
    let Overlay::Prompt(prompt) = &app.overlay else {
        return;
    };
    if prompt.kind != PromptKind::Command {
        return;
    }
    let before = prompt.line.split().0.to_string();
    let start = before.rfind(' ').map_or(0, |at| at + 1);
    let word = &before[start..];
    let earlier: Vec<&str> = before[..start].split_whitespace().collect();
    let (candidates, first_word) = match earlier.as_slice() {
        [] => (first_words(app), true),
        [command] => (arguments(app, command), false),
        _ => (Vec::new(), false),
    };
    let matching: Vec<String> = candidates
        .into_iter()
        .filter(|c| c.to_lowercase().starts_with(&word.to_lowercase()))
        .collect();
    let fill = match matching.as_slice() {
        [] => {
            app.message = Some(format!(
                "nothing to complete for {:?}",
                sanitize::for_terminal(word)
            ));
            return;
        }
        [only] => {
            // A command that takes an argument is followed by a space, ready for it.
            let takes_more =
                first_word && keys::find_command(only).is_some_and(|c| !c.args.is_empty());
            if takes_more {
                format!("{only} ")
            } else {
                only.clone()
            }
        }
        several => {
            app.message = Some(format!("Tab: {}", several.join("  ")));
            common_prefix(several)
        }
    };
    if fill.chars().count() < word.chars().count() {
        return;
    }
    if let Overlay::Prompt(prompt) = &mut app.overlay {
        prompt.line.replace_before_cursor(start, &fill);
    }
}

/// What may stand first on the command line: the commands this console has, and the
/// ids of the incidents it shows.
fn first_words(app: &App) -> Vec<String> {
    keys::commands(app.read_only)
        .map(|command| command.name.to_string())
        .chain(app.snapshot.incidents.iter().map(|i| i.id.clone()))
        .collect()
}

fn arguments(app: &App, command: &str) -> Vec<String> {
    let Some(spec) =
        keys::commands(app.read_only).find(|c| c.name == command || c.aliases.contains(&command))
    else {
        return Vec::new();
    };
    match spec.completes {
        Completes::Nothing => Vec::new(),
        Completes::Themes => theme::builtin_names()
            .into_iter()
            .map(str::to_string)
            .collect(),
        Completes::Incidents => app
            .snapshot
            .incidents
            .iter()
            .map(|i| i.id.clone())
            .collect(),
        Completes::Columns => SortColumn::ALL
            .iter()
            .map(|c| c.name().to_string())
            .collect(),
        Completes::Statuses => vec!["open".into(), "all".into()],
        Completes::OnOff => vec!["on".into(), "off".into()],
        Completes::CopyTargets => crate::console::clipboard::Target::NAMES
            .iter()
            .map(|name| name.to_string())
            .collect(),
    }
}

/// The longest start all of `words` share, ignoring case (written as the first has it).
fn common_prefix(words: &[String]) -> String {
    let first = &words[0];
    let mut end = first.len();
    for word in &words[1..] {
        let shared = first
            .char_indices()
            .zip(word.chars())
            .take_while(|((_, a), b)| a.to_lowercase().eq(b.to_lowercase()))
            .last()
            .map_or(0, |((at, a), _)| at + a.len_utf8());
        end = end.min(shared);
    }
    first[..end].to_string()
}

/// The prompt on the bottom line: its lead, the text, the cursor where it is.
pub fn render(frame: &mut Frame, area: Rect, app: &App, prompt: &Prompt) {
    frame.render_widget(line(app, prompt), area);
}

/// The prompt as one line: its lead, the text, the cursor where it is.
pub fn line(app: &App, prompt: &Prompt) -> Line<'static> {
    let theme = &app.theme;
    let lead = match prompt.kind {
        PromptKind::Command => ":",
        PromptKind::Filter | PromptKind::HelpSearch => "/",
    };
    let (before, after) = prompt.line.split();
    let mut rest = after.chars();
    let under_cursor = rest.next().map(String::from);
    let cursor_style = theme.accent.add_modifier(Modifier::REVERSED);
    // Typed by the person, but still never passed raw to the terminal.
    let clean = |text: &str| sanitize::for_terminal(text).into_owned();
    let mut spans = vec![Span::styled(lead, theme.accent), Span::raw(clean(before))];
    match under_cursor {
        Some(c) => {
            spans.push(Span::styled(clean(&c), cursor_style));
            spans.push(Span::raw(clean(rest.as_str())));
        }
        None => spans.push(Span::styled("█", theme.accent)),
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::test_support::{ctrl, press, prompt_text, sample_app, type_text};
    use crossterm::event::KeyCode;

    #[test]
    fn common_prefix_ignores_case() {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(common_prefix(&words(&["INC-0041", "inc-0042"])), "INC-004");
        assert_eq!(common_prefix(&words(&["reopen", "resolve"])), "re");
        assert_eq!(common_prefix(&words(&["dark"])), "dark");
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
        assert!(matches!(app.overlay, Overlay::Help(_)));
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "q");
        press(&mut app, KeyCode::Enter);
        assert!(app.quit);
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
        assert_eq!(app.list.filter, "CUSTOMERS ");
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
        assert!(app.list.filter.is_empty());
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

        // Three commands share "re"; a read-only console has none of them.
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "re");
        press(&mut app, KeyCode::Tab);
        assert_eq!(
            app.message.as_deref(),
            Some("Tab: resolve  reopen  request")
        );
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
}
