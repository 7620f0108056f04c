//! Who else is attached to the engine, from `Snapshot.attached`: the status bar's list
//! (the person, or `uid N` for an observer, and the incident each looks at), and the
//! "alice is deciding P2" mark on a proposal someone has the reason box open for.

use ratatui::text::Span;

use crate::console::state::App;
use crate::console::theme::Theme;
use crate::engine::api::PresenceView;

/// "P2" for "INC-0001-P2": the incident is already on screen.
pub fn short_proposal(id: &str) -> &str {
    id.rsplit('-').next().unwrap_or(id)
}

fn one(view: &PresenceView) -> String {
    let mut text = view.who.clone();
    if view.read_only {
        text.push_str(" (observer)");
    }
    match (&view.deciding, &view.viewing) {
        (Some(proposal), _) => text.push_str(&format!(" deciding {}", proposal)),
        (None, Some(incident)) => text.push_str(&format!(" on {incident}")),
        (None, None) => {}
    }
    text
}

/// The status bar's list of everyone attached, or nothing when the engine sends none
/// (an engine in this process with no one else on it still lists this console).
pub fn status_spans(app: &App, theme: &Theme) -> Vec<Span<'static>> {
    let attached = &app.snapshot.attached;
    if attached.is_empty() {
        return Vec::new();
    }
    // People who can decide first: on a narrow terminal the line is cut at its end,
    // and an observer is the one to lose.
    let mut views: Vec<&PresenceView> = attached.iter().collect();
    views.sort_by_key(|view| view.read_only);
    let list: Vec<String> = views.into_iter().map(one).collect();
    vec![
        Span::styled(format!("{} attached: ", attached.len()), theme.muted),
        Span::raw(list.join(" · ")),
    ]
}

/// Who has the reason box open for `proposal`, as the others see it. This console's
/// own open box is left out: its modal is on screen already.
pub fn deciding(app: &App, proposal: &str) -> Option<String> {
    let mut who: Vec<&str> = app
        .snapshot
        .attached
        .iter()
        .filter(|view| view.deciding.as_deref() == Some(proposal))
        .map(|view| view.who.as_str())
        .collect();
    if crate::console::link::presence(app).1.as_deref() == Some(proposal) {
        // One of those is us.
        who.pop();
    }
    if who.is_empty() {
        return None;
    }
    Some(format!(
        "{} {} deciding {}",
        who.join(", "),
        if who.len() == 1 { "is" } else { "are" },
        short_proposal(proposal)
    ))
}

#[cfg(test)]
mod tests {
    use crate::console::state::{update, Action};
    use crate::console::test_support::{draw, paired_app};

    #[test]
    fn observers_come_after_the_people_who_decide() {
        let mut app = paired_app();
        let mut snapshot = app.snapshot.clone();
        snapshot.attached.rotate_right(1); // the observer attached first
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let screen = draw(&app, 120, 40);
        let status = screen.lines().nth(38).unwrap();
        let at = |text: &str| {
            status
                .find(text)
                .unwrap_or_else(|| panic!("{text}: {status}"))
        };
        assert!(at("Bob (bob)") < at("uid 1003"), "{status}");
        assert!(at("Alice (alice)") < at("uid 1003"), "{status}");
    }
}
