//! The key registry as this console has it: the table in `keys.rs`, with the person's
//! `[keys]` from the config laid over it. An override names an action (`run`) and gives
//! it other keys everywhere it is bound, or names it in one context (`[keys.list]`);
//! its danger, description and context stay the registry's, so help, hints and
//! read-only filtering follow the new keys.

use std::ops::Deref;

use crossterm::event::{KeyCode, KeyModifiers};

use crate::console::keys::{Binding, Context, Key, BINDINGS};
use crate::console::line::LineOp;
use crate::console::state::Action;

/// One binding with the keys it has here.
#[derive(Debug, Clone)]
pub struct Bound {
    pub binding: &'static Binding,
    pub keys: Vec<Key>,
    /// How the keys are written in help and hints.
    pub label: String,
}

impl Deref for Bound {
    type Target = Binding;

    fn deref(&self) -> &Binding {
        self.binding
    }
}

#[derive(Debug, Clone)]
pub struct Keymap {
    bound: Vec<Bound>,
}

impl Default for Keymap {
    fn default() -> Keymap {
        Keymap {
            bound: BINDINGS
                .iter()
                .map(|binding| Bound {
                    binding,
                    keys: binding.keys.to_vec(),
                    label: binding.label.to_string(),
                })
                .collect(),
        }
    }
}

impl Keymap {
    pub fn all(&self) -> impl Iterator<Item = &Bound> {
        self.bound.iter()
    }

    /// Gives the action `name` these keys, in `context` or wherever it is bound. The
    /// error says what is wrong, for the caller to place in its file.
    pub fn set(
        &mut self,
        context: Option<&str>,
        name: &str,
        specs: &[String],
    ) -> Result<(), String> {
        let context = match context {
            None => None,
            Some(word) => Some(context_named(word).ok_or_else(|| {
                format!(
                    "no context {word:?} (known: {})",
                    CONTEXTS
                        .iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?),
        };
        let keys = specs
            .iter()
            .map(|spec| parse_key(spec))
            .collect::<Result<Vec<Key>, String>>()?;
        let targets: Vec<usize> = self
            .bound
            .iter()
            .enumerate()
            .filter(|(_, b)| action_name(&b.action) == Some(name))
            .filter(|(_, b)| context.is_none_or(|c| b.context == c))
            .map(|(at, _)| at)
            .collect();
        if targets.is_empty() {
            let mut known: Vec<&str> = BINDINGS
                .iter()
                .filter_map(|b| action_name(&b.action))
                .collect();
            known.sort();
            known.dedup();
            return Err(match context {
                Some(c) => format!("{name:?} is not an action in {}", c.title()),
                None => format!("no action {name:?} (known: {})", known.join(", ")),
            });
        }
        let label = keys
            .iter()
            .map(|key| key_label(*key))
            .collect::<Vec<_>>()
            .join(" ");
        for at in &targets {
            let target = &self.bound[*at];
            // A key may mean one thing per context (and nothing else where it means
            // something everywhere).
            let clash = self.bound.iter().enumerate().find(|(other, b)| {
                !targets.contains(other)
                    && (b.context == target.context
                        || b.context == Context::Always
                        || target.context == Context::Always)
                    && b.keys.iter().any(|k| keys.contains(k))
            });
            if let Some((_, other)) = clash {
                let key = other.keys.iter().find(|k| keys.contains(k)).copied();
                return Err(format!(
                    "{} is already {} ({}) in {}",
                    key.map(key_label).unwrap_or_default(),
                    action_name(&other.action).unwrap_or("typing"),
                    other.description,
                    other.context.title()
                ));
            }
        }
        for at in targets {
            self.bound[at].keys = keys.clone();
            self.bound[at].label = label.clone();
        }
        Ok(())
    }
}

/// The contexts an override may name, as `[keys.NAME]`.
const CONTEXTS: [(&str, Context); 9] = [
    ("always", Context::Always),
    ("global", Context::Global),
    ("list", Context::List),
    ("detail", Context::Detail),
    ("help", Context::Help),
    ("outbox", Context::Outbox),
    ("waves", Context::Waves),
    ("reason", Context::Reason),
    ("prompt", Context::Prompt),
];

fn context_named(word: &str) -> Option<Context> {
    CONTEXTS
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, context)| *context)
}

/// The name `[keys]` knows an action by; `None` for what only the console makes.
pub fn action_name(action: &Action) -> Option<&'static str> {
    Some(match action {
        Action::Quit => "quit",
        Action::Redraw => "redraw",
        Action::Suspend => "suspend",
        Action::Help => "help",
        Action::CommandLine => "command",
        Action::AlertOutbox => "outbox",
        Action::Waves => "waves",
        Action::AccessRequests => "access",
        Action::Back => "back",
        Action::Up => "up",
        Action::Down => "down",
        Action::PageUp => "page_up",
        Action::PageDown => "page_down",
        Action::HalfPageUp => "half_page_up",
        Action::HalfPageDown => "half_page_down",
        Action::Top => "top",
        Action::Bottom => "bottom",
        Action::Open => "open",
        Action::NextPane => "next_pane",
        Action::PreviousPane => "previous_pane",
        Action::Collapse => "collapse",
        Action::Expand => "expand",
        Action::Approve => "approve",
        Action::Reject => "reject",
        Action::RollBack => "roll_back",
        Action::Forward => "forward",
        Action::QueueRun => "run",
        Action::Resolve => "close",
        Action::Reopen => "reopen",
        Action::AcceptLevel => "accept",
        Action::Expected => "expected",
        Action::Snooze => "snooze",
        Action::ToggleReceipt => "receipt",
        Action::Zoom => "zoom",
        Action::Copy => "copy",
        Action::SortNext => "sort",
        Action::SortReverse => "sort_reverse",
        Action::ToggleOpenOnly => "open_only",
        Action::Filter => "filter",
        Action::Search => "search",
        Action::SearchNext => "search_next",
        Action::SearchPrevious => "search_previous",
        Action::Submit => "submit",
        Action::NewLine => "new_line",
        Action::Line(op) => match op {
            LineOp::Left => "cursor_left",
            LineOp::Right => "cursor_right",
            LineOp::Start => "line_start",
            LineOp::End => "line_end",
            LineOp::Backspace => "delete_before",
            LineOp::Delete => "delete_under",
            LineOp::CutToStart => "cut_to_start",
            LineOp::CutToEnd => "cut_to_end",
            LineOp::CutWord => "cut_word",
            LineOp::Older => "history_older",
            LineOp::Newer => "history_newer",
            LineOp::Complete => "complete",
        },
        _ => return None,
    })
}

/// `q`, `G`, `ctrl-r`, `alt-enter`, `shift-tab`, `pgdn`, `f5`, `space`...
pub fn parse_key(spec: &str) -> Result<Key, String> {
    let bad = || {
        format!(
            "{spec:?} is not a key (like \"q\", \"G\", \"ctrl-r\", \"enter\", \"pgdn\", \"f5\")"
        )
    };
    let mut modifiers = KeyModifiers::NONE;
    let mut rest = spec;
    loop {
        let lower = rest.to_lowercase();
        let (modifier, len) = if lower.starts_with("ctrl-") {
            (KeyModifiers::CONTROL, 5)
        } else if lower.starts_with("alt-") {
            (KeyModifiers::ALT, 4)
        } else if lower.starts_with("shift-") && rest.len() > 6 {
            (KeyModifiers::SHIFT, 6)
        } else {
            break;
        };
        modifiers |= modifier;
        rest = &rest[len..];
    }
    let mut chars = rest.chars();
    let code = match (chars.next(), chars.next()) {
        (Some(c), None) => {
            // A character says its own case; Ctrl with a letter is the letter.
            if modifiers.contains(KeyModifiers::CONTROL) {
                KeyCode::Char(c.to_ascii_lowercase())
            } else {
                KeyCode::Char(c)
            }
        }
        _ => match rest.to_lowercase().as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" if modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "insert" => KeyCode::Insert,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pgup" | "pageup" => KeyCode::PageUp,
            "pgdn" | "pagedown" => KeyCode::PageDown,
            f if f.starts_with('f') => match f[1..].parse::<u8>() {
                Ok(n @ 1..=12) => KeyCode::F(n),
                _ => return Err(bad()),
            },
            _ => return Err(bad()),
        },
    };
    // Shift on a character or Shift-Tab is in the key itself (see `keys::normalise`).
    if matches!(code, KeyCode::Char(_) | KeyCode::BackTab) {
        modifiers.remove(KeyModifiers::SHIFT);
    }
    if modifiers.contains(KeyModifiers::ALT) && code != KeyCode::Enter {
        // An Alt-key is what a terminal sends for Esc then the key (`keys::press`).
        return Err(format!(
            "{spec:?}: Alt is read as Esc then the key; only alt-enter can be bound"
        ));
    }
    Ok(Key { code, modifiers })
}

/// How help writes a key: `Ctrl-R`, `Enter`, `PgDn`, `q`.
pub fn key_label(key: Key) -> String {
    let name = match key.code {
        KeyCode::Char(' ') => "Space".to_string(),
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => {
            c.to_ascii_uppercase().to_string()
        }
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::BackTab => "Shift-Tab".into(),
        KeyCode::Backspace => "Backspace".into(),
        KeyCode::Delete => "Delete".into(),
        KeyCode::Insert => "Insert".into(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::Left => "←".into(),
        KeyCode::Right => "→".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    };
    let mut label = String::new();
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        label.push_str("Ctrl-");
    }
    if key.modifiers.contains(KeyModifiers::ALT) {
        label.push_str("Alt-");
    }
    label.push_str(&name);
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of(map: &Keymap, name: &str) -> Vec<String> {
        map.all()
            .filter(|b| action_name(&b.action) == Some(name))
            .map(|b| b.label.clone())
            .collect()
    }

    #[test]
    fn keys_read_as_people_write_them() {
        for (spec, label) in [
            ("q", "q"),
            ("G", "G"),
            ("ctrl-r", "Ctrl-R"),
            ("Ctrl-R", "Ctrl-R"),
            ("shift-tab", "Shift-Tab"),
            ("alt-enter", "Alt-Enter"),
            ("pgdn", "PgDn"),
            ("f5", "F5"),
            ("space", "Space"),
            ("?", "?"),
        ] {
            assert_eq!(key_label(parse_key(spec).unwrap()), label, "{spec}");
        }
        for bad in ["ctrl-", "hyper-x", "f13", "alt-x", "qq"] {
            assert!(parse_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_override_moves_an_action_and_refuses_a_clash() {
        let mut map = Keymap::default();
        map.set(None, "run", &["ctrl-x".into()]).unwrap();
        assert_eq!(keys_of(&map, "run"), ["Ctrl-X"]);
        map.set(Some("list"), "quit", &["Q".into()]).unwrap();
        // Only the list's q moved; Ctrl-C still quits everywhere.
        assert_eq!(keys_of(&map, "quit"), ["Ctrl-C", "Q"]);
        let clash = map.set(None, "zoom", &["a".into()]).unwrap_err();
        assert!(clash.contains("a is already approve"), "{clash}");
        let clash = map
            .set(Some("list"), "top", &["ctrl-l".into()])
            .unwrap_err();
        assert!(clash.contains("already redraw"), "{clash}");
        assert!(map
            .set(None, "rnu", &["x".into()])
            .unwrap_err()
            .contains("no action \"rnu\""));
        assert!(map
            .set(Some("lst"), "quit", &["x".into()])
            .unwrap_err()
            .contains("no context"));
        // No keys at all: the action is gone from the keyboard (and the help).
        map.set(None, "zoom", &[]).unwrap();
        assert_eq!(keys_of(&map, "zoom"), [""]);
    }
}
