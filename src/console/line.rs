//! The one-line editor behind `:` and `/`: the keys a shell has taught everyone.
//! Ctrl-A and Ctrl-E (or Home and End) to the ends, arrows by character, Ctrl-U and
//! Ctrl-K cut to the start or the end, Ctrl-W the word before the cursor. The cursor is
//! a byte offset kept on a character boundary.

/// An edit the registry binds to a key in the command line and the filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOp {
    Left,
    Right,
    Start,
    End,
    Backspace,
    Delete,
    /// Ctrl-U: everything before the cursor.
    CutToStart,
    /// Ctrl-K: everything from the cursor on.
    CutToEnd,
    /// Ctrl-W: the word before the cursor, and the spaces after it.
    CutWord,
    /// Up: the line typed before this one.
    Older,
    /// Down: back towards what was being typed.
    Newer,
    /// Tab: complete the word at the cursor.
    Complete,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineEditor {
    text: String,
    cursor: usize,
}

impl LineEditor {
    /// `text` with the cursor at its end.
    pub fn new(text: &str) -> LineEditor {
        LineEditor {
            text: text.to_string(),
            cursor: text.len(),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// What comes before the cursor, and what from it on.
    pub fn split(&self) -> (&str, &str) {
        self.text.split_at(self.cursor)
    }

    pub fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    /// Replaces the whole line, the cursor at its end.
    pub fn set(&mut self, text: &str) {
        *self = LineEditor::new(text);
    }

    /// Replaces `start..self.cursor` (the word being completed) with `text`.
    pub fn replace_before_cursor(&mut self, start: usize, text: &str) {
        self.text.replace_range(start..self.cursor, text);
        self.cursor = start + text.len();
    }

    /// Applies an edit; false for the ones that are not edits of the line (history,
    /// completion), which the prompt handles.
    pub fn apply(&mut self, op: LineOp) -> bool {
        match op {
            LineOp::Left => self.cursor = self.previous(self.cursor),
            LineOp::Right => self.cursor = self.next(self.cursor),
            LineOp::Start => self.cursor = 0,
            LineOp::End => self.cursor = self.text.len(),
            LineOp::Backspace => {
                let from = self.previous(self.cursor);
                self.text.replace_range(from..self.cursor, "");
                self.cursor = from;
            }
            LineOp::Delete => {
                let to = self.next(self.cursor);
                self.text.replace_range(self.cursor..to, "");
            }
            LineOp::CutToStart => {
                self.text.replace_range(..self.cursor, "");
                self.cursor = 0;
            }
            LineOp::CutToEnd => self.text.truncate(self.cursor),
            LineOp::CutWord => {
                let before = &self.text[..self.cursor];
                let trimmed = before.trim_end_matches(' ');
                let from = trimmed.rfind(' ').map_or(0, |at| at + 1);
                self.text.replace_range(from..self.cursor, "");
                self.cursor = from;
            }
            LineOp::Older | LineOp::Newer | LineOp::Complete => return false,
        }
        true
    }

    fn previous(&self, at: usize) -> usize {
        self.text[..at].char_indices().last().map_or(0, |(i, _)| i)
    }

    fn next(&self, at: usize) -> usize {
        self.text[at..]
            .chars()
            .next()
            .map_or(at, |c| at + c.len_utf8())
    }
}

/// Lines typed before, oldest first, and where Up and Down have got to in them.
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: Vec<String>,
}

/// How many lines each history keeps.
const HISTORY_LIMIT: usize = 100;

impl History {
    /// Remembers `line` as the newest (a repeat of the newest is kept once).
    pub fn push(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() || self.entries.last().is_some_and(|last| last == line) {
            return;
        }
        self.entries.push(line.to_string());
        if self.entries.len() > HISTORY_LIMIT {
            self.entries.remove(0);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `back`-th line from the newest (1 is the newest).
    pub fn back(&self, back: usize) -> Option<&str> {
        let at = self.entries.len().checked_sub(back)?;
        self.entries.get(at).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(text: &str, cursor_back: usize, ops: &[LineOp]) -> (String, usize) {
        let mut line = LineEditor::new(text);
        for _ in 0..cursor_back {
            line.apply(LineOp::Left);
        }
        for op in ops {
            line.apply(*op);
        }
        (line.text().to_string(), line.split().0.chars().count())
    }

    #[test]
    fn shell_keys_edit_the_line() {
        use LineOp::*;
        assert_eq!(edited("theme dark", 0, &[CutWord]), ("theme ".into(), 6));
        assert_eq!(edited("theme dark  ", 0, &[CutWord]), ("theme ".into(), 6));
        assert_eq!(edited("theme dark", 4, &[CutToStart]), ("dark".into(), 0));
        assert_eq!(edited("theme dark", 4, &[CutToEnd]), ("theme ".into(), 6));
        assert_eq!(
            edited("theme dark", 0, &[Start, Delete]),
            ("heme dark".into(), 0)
        );
        assert_eq!(edited("tema", 1, &[Backspace]), ("tea".into(), 2));
        assert_eq!(
            edited("abc", 0, &[Start, Right, End, Left]),
            ("abc".into(), 2)
        );
        // Characters, not bytes.
        assert_eq!(edited("zé✓", 1, &[Backspace]), ("z✓".into(), 1));
        assert_eq!(
            edited("", 0, &[Backspace, Delete, Left, CutWord]),
            ("".into(), 0)
        );
    }

    #[test]
    fn text_goes_in_at_the_cursor() {
        let mut line = LineEditor::new("thme");
        line.apply(LineOp::Start);
        line.apply(LineOp::Right);
        line.apply(LineOp::Right);
        line.insert("e");
        assert_eq!(line.text(), "theme");
        assert_eq!(line.split(), ("the", "me"));
    }

    #[test]
    fn history_keeps_the_newest_last_once() {
        let mut history = History::default();
        for line in ["theme light", "q", "q", " ", "help"] {
            history.push(line);
        }
        assert_eq!(history.len(), 3);
        assert_eq!(history.back(1), Some("help"));
        assert_eq!(history.back(3), Some("theme light"));
        assert_eq!(history.back(4), None);
    }
}
