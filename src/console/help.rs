//! The `?` help: every key and `:` command this console has, from the one registry
//! (`keys.rs`), grouped by where it applies. A read-only console's help lists nothing
//! that decides. Descriptions wrap under themselves, so every line fits the overlay,
//! however narrow the terminal. `/` searches it as it is typed, `n` and `N` go to the
//! next and previous match.

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use crate::console::action::{self, step, Action};
use crate::console::keys;
use crate::console::overlays::prompt::{self, Prompt, PromptKind};
use crate::console::state::{App, Overlay};
use crate::console::widgets::{centered, cut, cut_spans, pane_block, width_of};

/// The help's search: the line while it is typed, what was last searched for (for `n`
/// and `N`), and which of the matches is the one in view. Kept as the match's place
/// among the matches rather than as a line, so a resize that wraps the help anew keeps
/// the same match.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub typing: Option<Prompt>,
    pub query: String,
    pub at: Option<usize>,
}

/// The help overlay: how far it is scrolled, and its search.
#[derive(Debug, Clone, Default)]
pub struct Help {
    pub scroll: usize,
    pub search: Search,
}

/// The open help, if it is open.
fn open(app: &App) -> Option<&Help> {
    match &app.overlay {
        Overlay::Help(help) => Some(help),
        _ => None,
    }
}

fn open_mut(app: &mut App) -> Option<&mut Help> {
    match &mut app.overlay {
        Overlay::Help(help) => Some(help),
        _ => None,
    }
}

/// What the help does with `action`: it scrolls and searches; Enter keeps the search
/// being typed, Esc drops it. False for any other action, and when the help is shut.
pub fn handle(app: &mut App, action: &Action) -> bool {
    let Some(help) = open(app) else {
        return false;
    };
    let typing = help.search.typing.is_some();
    if let Some(delta) = action.distance(action::page(app.drawn.help.get())) {
        let furthest = max_scroll(app);
        if let Some(help) = open_mut(app) {
            help.scroll = step(help.scroll, delta, furthest + 1);
        }
        return true;
    }
    match action {
        // `/` in the help: typed on a line over it, which stays open beneath.
        Action::Search => prompt::open(app, PromptKind::HelpSearch),
        Action::SearchNext => next_match(app, true),
        Action::SearchPrevious => next_match(app, false),
        Action::Submit if typing => finish_search(app),
        Action::Back if typing => cancel_search(app),
        _ => return false,
    }
    true
}

/// Each key typed into the search: the first match from the top of the view on.
pub fn search_typed(app: &mut App, text: &str) {
    let Some(help) = open_mut(app) else {
        return;
    };
    help.search.query = text.to_string();
    let from = help.scroll;
    let found = matches(app);
    let at = found
        .iter()
        .position(|line| *line >= from)
        .or((!found.is_empty()).then_some(0));
    go_to_match(app, &found, at);
}

/// Enter: keep the search for `n` and `N`.
fn finish_search(app: &mut App) {
    if let Some(line) = open_mut(app).and_then(|help| help.search.typing.take()) {
        prompt::remember(app, &line);
    }
}

/// Esc while typing: no search, nothing marked.
fn cancel_search(app: &mut App) {
    if let Some(help) = open_mut(app) {
        help.search = Search::default();
    }
}

/// `n` (forward) and `N`: the match after the one in view (before it), round the end;
/// with none in view, the first from the top of the view on (before it).
fn next_match(app: &mut App, forward: bool) {
    let Some(help) = open(app) else {
        return;
    };
    if help.search.query.is_empty() {
        app.message = Some("nothing searched yet: / searches the help".into());
        return;
    }
    let (from, at) = (help.scroll, help.search.at);
    let found = matches(app);
    let len = found.len();
    let at = match at {
        _ if len == 0 => None,
        Some(at) if forward => Some((at + 1) % len),
        Some(at) => Some((at + len - 1) % len),
        None if forward => found.iter().position(|line| *line >= from).or(Some(0)),
        None => found
            .iter()
            .rposition(|line| *line <= from)
            .or(Some(len - 1)),
    };
    go_to_match(app, &found, at);
}

/// The lines holding what is searched for, in order.
fn matches(app: &App) -> Vec<usize> {
    let Some(help) = open(app) else {
        return Vec::new();
    };
    let query = help.search.query.to_lowercase();
    if query.is_empty() {
        return Vec::new();
    }
    lines(app, inner_width(app))
        .iter()
        .enumerate()
        .filter(|(_, line)| line.to_string().to_lowercase().contains(&query))
        .map(|(at, _)| at)
        .collect()
}

/// Makes match `at` (of those `found`) the one in view: the help scrolls to show it.
fn go_to_match(app: &mut App, found: &[usize], at: Option<usize>) {
    let furthest = max_scroll(app);
    let Some(help) = open_mut(app) else {
        return;
    };
    help.search.at = at;
    // The match near the top, a line of context above it, as far as the help scrolls.
    if let Some(line) = at.and_then(|at| found.get(at)) {
        help.scroll = line.saturating_sub(1).min(furthest);
    }
}

/// The overlay's widest, borders included.
pub const WIDTH: u16 = 76;
/// Columns for a key or command before its description.
const KEY_COLUMN: usize = 18;
/// Below this inner width the key goes on a line of its own, the description under it.
const TWO_COLUMNS_MIN: usize = 44;

/// Where the help goes on a screen of `screen`.
pub fn area(screen: Rect) -> Rect {
    centered(screen, WIDTH, screen.height.saturating_sub(2))
}

/// One entry: the key or command, whether it decides, what it does.
struct Entry {
    label: String,
    dangerous: bool,
    description: String,
}

/// The help's lines for an overlay `width` columns wide inside its borders.
pub fn lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    let lead = if app.read_only {
        (
            "read-only console: every key and command that decides is gone",
            theme.warn,
        )
    } else {
        (
            "⚠ marks what sends a decision to the engine (gone in read-only mode)",
            theme.muted,
        )
    };
    for piece in wrap(lead.0, width) {
        lines.push(Line::styled(piece, lead.1));
    }
    let heading = theme.accent.add_modifier(Modifier::BOLD);
    for (context, bindings) in keys::help_sections(&app.keymap, app.read_only) {
        if bindings.is_empty() {
            continue;
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(context.title(), heading));
        for binding in bindings {
            let entry = Entry {
                label: binding.label.to_string(),
                dangerous: binding.dangerous,
                description: binding.description.to_string(),
            };
            push_entry(&mut lines, &entry, width, app);
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Commands (after :)", heading));
    for command in keys::commands(app.read_only) {
        let entry = Entry {
            label: command.label(),
            dangerous: command.dangerous,
            description: command.described(),
        };
        push_entry(&mut lines, &entry, width, app);
    }
    lines
}

fn push_entry(lines: &mut Vec<Line<'static>>, entry: &Entry, width: usize, app: &App) {
    let theme = &app.theme;
    // Keys that send a decision are marked by a glyph, not only a colour.
    let marker = if entry.dangerous { "⚠ " } else { "  " };
    let two_columns = width >= TWO_COLUMNS_MIN && entry.label.chars().count() <= KEY_COLUMN;
    if two_columns {
        let indent = 2 + KEY_COLUMN + 2;
        for (i, piece) in wrap(&entry.description, width - indent)
            .into_iter()
            .enumerate()
        {
            let (label, marker) = if i == 0 {
                (format!("  {:<KEY_COLUMN$}", entry.label), marker)
            } else {
                (" ".repeat(2 + KEY_COLUMN), "  ")
            };
            lines.push(Line::from(vec![
                Span::styled(label, theme.title),
                Span::styled(marker, theme.warn),
                Span::raw(piece),
            ]));
        }
    } else {
        lines.push(Line::from(vec![
            Span::styled(format!("  {}", entry.label), theme.title),
            Span::styled(format!(" {}", marker.trim_end()), theme.warn),
        ]));
        for piece in wrap(&entry.description, width.saturating_sub(4)) {
            lines.push(Line::from(vec![Span::raw("    "), Span::raw(piece)]));
        }
    }
}

/// `text` in pieces of at most `width` columns, broken between words (a word longer
/// than the width is cut).
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let columns = |s: &str| Span::raw(s).width();
    let mut pieces = Vec::new();
    let mut current = String::new();
    for word in text.split(' ') {
        let mut word = word.to_string();
        loop {
            let needed = if current.is_empty() {
                columns(&word)
            } else {
                columns(&current) + 1 + columns(&word)
            };
            if needed <= width {
                if !current.is_empty() {
                    current.push(' ');
                }
                current.push_str(&word);
                break;
            }
            if !current.is_empty() {
                pieces.push(std::mem::take(&mut current));
                continue;
            }
            // A word wider than the whole line: cut it.
            let cut: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            pieces.push(cut);
            if word.is_empty() {
                break;
            }
        }
    }
    if !current.is_empty() || pieces.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// The inner width the help was last drawn at (the widest before the first frame).
fn inner_width(app: &App) -> usize {
    match app.drawn.help.get() {
        area if area.width > 0 => area.width as usize,
        _ => WIDTH as usize - 2,
    }
}

/// The furthest the help can scroll: its last line at the bottom of the overlay.
pub fn max_scroll(app: &App) -> usize {
    let height = app.drawn.help.get().height as usize;
    lines(app, inner_width(app))
        .len()
        .saturating_sub(height.max(1))
}

pub fn render(frame: &mut Frame, app: &App, help: &Help) {
    let (scroll, search) = (help.scroll, &help.search);
    let theme = &app.theme;
    let area = area(frame.area());
    let mut block = pane_block("Keys (Esc closes)", true, theme);
    let inner = block.inner(area);
    app.drawn.help.set(inner);
    let mut lines = lines(app, inner.width as usize);
    let height = inner.height as usize;
    let scroll = scroll.min(lines.len().saturating_sub(height));
    // Matches underlined, the one in view in the selection's style and marked.
    let found = matches(app);
    let current = search.at.and_then(|at| found.get(at)).copied();
    for at in &found {
        let line = &mut lines[*at];
        if Some(*at) == current {
            line.style = line.style.patch(theme.selection);
            if let Some(first) = line.spans.first_mut() {
                let text = first.content.to_string();
                first.content = match text.strip_prefix(' ') {
                    Some(rest) => format!("▶{rest}"),
                    None => format!("▶{text}"),
                }
                .into();
            }
        } else {
            line.style = line.style.add_modifier(Modifier::UNDERLINED);
        }
    }
    // The search on the bottom border comes first, cut with … to the border; the hint
    // that there is more goes beside it only when it fits whole.
    let room = inner.width as usize;
    let search = if let Some(typing) = &search.typing {
        Some(Line::from(cut_spans(prompt::line(app, typing).spans, room)))
    } else if !search.query.is_empty() {
        let query = crate::sanitize::for_terminal(&search.query).into_owned();
        let told = match search.at.filter(|at| *at < found.len()) {
            Some(n) => format!(" /{query}: {} of {} (n N) ", n + 1, found.len()),
            None => format!(" /{query}: no match "),
        };
        Some(Line::styled(cut(&told, room), theme.accent))
    } else {
        None
    };
    let used = search.as_ref().map_or(0, |line| line.width() + 1);
    if let Some(search) = search {
        block = block.title_bottom(search);
    }
    const MORE: &str = " ↓ more: j or PgDn ";
    if scroll + height < lines.len() && used + width_of(MORE) <= room {
        block = block
            .title_bottom(Line::styled(MORE, theme.muted.patch(Style::default())).right_aligned());
    }
    let help = Paragraph::new(lines)
        .scroll((scroll as u16, 0))
        .block(block);
    frame.render_widget(Clear, area);
    frame.render_widget(help, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::keys::press;
    use crate::console::state::{update, Action};
    use crate::console::test_support::sample_app;
    use crate::console::theme::Theme;
    use crate::console::widgets::pane_block;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::backend::TestBackend;
    use ratatui::layout::Rect;
    use ratatui::Terminal;

    fn draw(app: &App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| crate::console::view::render(frame, app))
            .unwrap();
        terminal.backend().to_string()
    }

    fn keys(app: &mut App, text: &str) {
        for c in text.chars() {
            press(app, KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }

    /// `/` searches the help as it is typed and scrolls to the first match; `n` and
    /// `N` go through the others, round the end; the bottom border says where.
    #[test]
    fn the_help_searches_with_slash_n_and_n() {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        keys(&mut app, "?");
        draw(&app, 80, 24);
        keys(&mut app, "/tree");
        let screen = draw(&app, 80, 24);
        assert!(screen.contains("/tree█"), "{screen}");
        assert!(
            screen.contains("▶ Tab "),
            "the first match is in view:\n{screen}"
        );
        press(&mut app, KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        let first = draw(&app, 80, 24);
        assert!(first.contains("/tree: 1 of 3 (n N)"), "{first}");
        insta::assert_snapshot!("help_search_80x24", first);
        // n, typed now, searches on rather than into the line.
        keys(&mut app, "n");
        let second = draw(&app, 80, 24);
        assert!(second.contains("/tree: 2 of 3 (n N)"), "{second}");
        assert!(second.contains("▶ h ←"), "{second}");
        for (key, told) in [("N", "1 of 3"), ("N", "3 of 3"), ("n", "1 of 3")] {
            keys(&mut app, key);
            let screen = draw(&app, 80, 24);
            assert!(
                screen.contains(&format!("/tree: {told}")),
                "{key}: {screen}"
            );
        }
        // On a narrow terminal the search keeps the bottom border, cut with … rather
        // than under the hint that there is more.
        draw(&app, 40, 12);
        let narrow = draw(&app, 40, 12);
        assert!(narrow.contains(" /tree: 1 of 3 (n N) "), "{narrow}");
        assert!(!narrow.contains("↓ more"), "{narrow}");
        let query = |app: &mut App, text: &str| match &mut app.overlay {
            Overlay::Help(help) => help.search.query = text.into(),
            _ => panic!("the help is open"),
        };
        query(&mut app, "a much longer search than fits");
        let narrow = draw(&app, 30, 12);
        assert!(narrow.contains(" /a much longer search than…┛"), "{narrow}");
        query(&mut app, "tree");
        // Nothing found says so; Esc while typing drops the search.
        keys(&mut app, "/zzz");
        assert!(matches!(app.overlay, Overlay::Help(_)));
        press(&mut app, KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert!(matches!(app.overlay, Overlay::Help(_)), "the help stays");
        assert!(matches!(&app.overlay, Overlay::Help(help) if help.search.query.is_empty()));
        keys(&mut app, "q");
        assert!(matches!(app.overlay, Overlay::None));
        assert!(!app.quit);
    }

    #[test]
    fn wrap_breaks_between_words_and_cuts_only_what_cannot_fit() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
        for piece in wrap(&"word ".repeat(30), 17) {
            assert!(piece.chars().count() <= 17, "{piece:?}");
        }
    }

    #[test]
    fn help_lists_close_and_reopen_except_read_only() {
        let mut app = sample_app(false);
        update(&mut app, Action::Help);
        let help = draw(&app, 120, 80);
        for line in [
            "C                 ⚠ close the incident by hand (reason required)",
            "O                 ⚠ reopen the resolved incident (reason required)",
        ] {
            assert!(help.contains(line), "{line:?} in\n{help}");
        }
        app.read_only = true;
        let help = draw(&app, 120, 80);
        assert!(help.contains("read-only console"), "{help}");
        assert!(!help.contains("close the incident by hand"), "{help}");
        assert!(!help.contains("reopen the resolved incident"), "{help}");
    }

    /// The help as one text: borders gone, wrapped lines joined, spaces collapsed.
    fn help_text(app: &App, width: u16) -> String {
        let height = 500;
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| crate::console::view::render(frame, app))
            .unwrap();
        let inner = pane_block("", true, &app.theme)
            .inner(crate::console::help::area(Rect::new(0, 0, width, height)));
        let buffer = terminal.backend().buffer();
        let mut text = String::new();
        for y in inner.top()..inner.bottom() {
            for x in inner.left()..inner.right() {
                text.push_str(buffer[(x, y)].symbol());
            }
            text.push(' ');
        }
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// A read-only console's help lists no key and no command that decides: `:stop`,
    /// `:lift` and the rest are gone with the keys.
    #[test]
    fn read_only_help_lists_no_dangerous_command() {
        let mut app = sample_app(false);
        update(&mut app, Action::Help);
        let help = help_text(&app, 120);
        for command in [":stop", ":lift", ":resolve", ":reopen", ":accept"] {
            assert!(help.contains(command), "{command} in\n{help}");
        }
        app.read_only = true;
        let help = help_text(&app, 120);
        for command in [":stop", ":lift", ":resolve", ":reopen", ":accept"] {
            assert!(!help.contains(command), "{command} in\n{help}");
        }
        assert!(!help.contains('⚠'), "{help}");
        assert!(help.contains(":theme"), "{help}");
    }

    /// Every line of help fits: a description too long for the overlay wraps under
    /// itself instead of being cut, at any width.
    #[test]
    fn every_line_of_help_fits() {
        let mut app = sample_app(false);
        update(&mut app, Action::Help);
        for width in [120, 80, 60, 40] {
            let help = help_text(&app, width);
            for binding in keys::available(&app.keymap, false) {
                assert!(
                    help.contains(binding.description),
                    "{width} columns: {:?} is cut in\n{help}",
                    binding.description
                );
            }
            for command in keys::commands(false) {
                assert!(
                    help.contains(&command.described()),
                    "{width} columns: {:?} is cut in\n{help}",
                    command.described()
                );
            }
        }
    }
}
