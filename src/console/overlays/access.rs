//! The access requests overlay (`A`): every request with where it stands (waiting for
//! review, proposed, approved, granted, expiring within a week, revoking, revoked,
//! rejected, unanswered), what it asks for whom, and the grant's expiry. It draws the
//! snapshot's requests, cleaned with the rest as it arrived. A request waiting for
//! review, or its grant, is selected and decided here (`decide.rs`).

use chrono::TimeDelta;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::console::overlays::decide::{mark, Decidable, Listing};
use crate::console::overlays::{render_scrolled, Scroll};
use crate::console::state::{App, Overlay};
use crate::engine::api::AccessView;

/// A grant this close to its expiry shows as expiring.
const EXPIRING_WITHIN_DAYS: i64 = 7;

/// Where a request stands, as a glyph and a word (never by colour alone).
fn standing(app: &App, request: &AccessView) -> (&'static str, String, ratatui::style::Style) {
    let theme = &app.theme;
    let expiring = request.status == "granted"
        && request.expires_at.is_some_and(|at| {
            at.naive() - app.snapshot.now.naive() <= TimeDelta::days(EXPIRING_WITHIN_DAYS)
        });
    match request.status.as_str() {
        _ if expiring => ("!", "expiring".to_string(), theme.warn),
        "review" => ("?", "review".to_string(), theme.warn),
        "proposed" | "approved" => ("…", request.status.clone(), theme.accent),
        "granted" => ("✓", "granted".to_string(), theme.ok),
        "revoking" => ("…", "revoking".to_string(), theme.warn),
        "revoked" => ("·", "revoked".to_string(), theme.muted),
        other => ("✗", other.to_string(), theme.crit),
    }
}

/// A request as decided: while it waits for review, the review (on its hash, by the
/// domain's owner); once proposed, its grant (on the grant's content hash), which is
/// rolled back (its revoke proposed) once approved.
fn decidable(request: &AccessView) -> Decidable {
    let id = &request.id;
    let status = request.status.as_str();
    let what = format!(
        "{} on {} for {}",
        request.privilege,
        request.tables.join(", "),
        request.grantee
    );
    match (status, &request.proposal) {
        ("review", _) => Decidable {
            id: id.clone(),
            title: format!("the review of {id}: {what}"),
            hash: request.review_hash.clone(),
            not_decided: None,
            not_rolled_back: Some(format!(
                "{id} waits for review: approve or reject it; nothing is granted yet"
            )),
        },
        (_, Some(proposal)) => Decidable {
            id: proposal.clone(),
            title: format!("the grant of {id}: {what}"),
            hash: request.proposal_hash.clone(),
            not_decided: (status != "proposed")
                .then(|| format!("{proposal} is {status}: there is nothing left to decide")),
            not_rolled_back: (!matches!(status, "approved" | "granted")).then(|| {
                format!("{proposal} is {status}: only an approved or seen grant is rolled back")
            }),
        },
        (_, None) => Decidable {
            id: id.clone(),
            title: what,
            hash: None,
            not_decided: Some(format!("{id} is {status}: there is nothing left to decide")),
            not_rolled_back: Some(format!(
                "{id} is {status}: nothing was granted to roll back"
            )),
        },
    }
}

/// Each request, in the order they are listed.
pub fn decidables(app: &App) -> Vec<Decidable> {
    app.snapshot.access.iter().map(decidable).collect()
}

/// The overlay's lines, one request after another.
pub fn listing(app: &App) -> Listing<'static> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    let mut starts = Vec::new();
    if app.snapshot.access.is_empty() {
        lines.push(Line::styled(
            "no access requests (`:request` or `dataward request-access` files one)",
            theme.muted,
        ));
        return Listing { lines, starts };
    }
    for request in &app.snapshot.access {
        let (glyph, word, style) = standing(app, request);
        starts.push(lines.len());
        lines.push(Line::from(vec![
            mark(app, starts.len() - 1, theme),
            Span::styled(format!("{glyph} "), style),
            Span::styled(request.id.clone(), theme.title.add_modifier(Modifier::BOLD)),
            Span::styled(format!("  {word:<9}"), style),
            Span::raw(format!(
                " {} on {} for {}, asked by {}",
                request.privilege,
                request.tables.join(", "),
                request.grantee,
                request.asked_by
            )),
        ]));
        let mut detail = Vec::new();
        if let Some(proposal) = &request.proposal {
            detail.push(format!("proposal {proposal}"));
        }
        if let Some(at) = request.expires_at {
            detail.push(format!("expires {}", at.naive().format("%Y-%m-%d %H:%M")));
        }
        if !detail.is_empty() {
            lines.push(Line::styled(
                format!("      {}", detail.join(", ")),
                theme.muted,
            ));
        }
    }
    Listing { lines, starts }
}

pub fn render(frame: &mut Frame, app: &App, scroll: &Scroll) {
    render_scrolled(
        frame,
        app,
        "Access requests (Esc closes)",
        listing(app).lines,
        scroll.scroll,
    );
}

/// Whether this overlay is open.
pub fn is_open(app: &App) -> bool {
    matches!(app.overlay, Overlay::Access(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action};
    use crate::console::theme::Theme;

    #[test]
    fn the_requests_show_where_each_stands_and_an_expiring_grant_says_so() {
        let mut snapshot = sample_snapshot();
        let now = snapshot.now.naive();
        let request = |id: &str, status: &str, days: Option<i64>| AccessView {
            id: id.into(),
            status: status.into(),
            privilege: "select".into(),
            tables: vec!["sales.orders".into()],
            grantee: "analyst_ann".into(),
            asked_by: "ann (uid 5001)".into(),
            proposal: (status != "review").then(|| format!("{id}-P1")),
            expires_at: days.map(|d| crate::clock::Timestamp::from_naive(now + TimeDelta::days(d))),
            review_hash: (status == "review").then(|| format!("{id}-review-hash")),
            proposal_hash: (status != "review").then(|| format!("{id}-P1-hash")),
        };
        snapshot.access = vec![
            request("ACC-0001", "review", None),
            request("ACC-0002", "proposed", None),
            request("ACC-0003", "granted", Some(30)),
            request("ACC-0004", "granted", Some(2)),
            request("ACC-0005", "revoked", Some(-1)),
        ];
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        update(&mut app, Action::AccessRequests);
        assert!(is_open(&app));
        let wide = crate::console::test_support::draw(&app, 120, 40);
        for expected in [
            "? ACC-0001  review",
            "… ACC-0002  proposed",
            "✓ ACC-0003  granted",
            "! ACC-0004  expiring",
            "· ACC-0005  revoked",
            "select on sales.orders for analyst_ann, asked by ann (uid 5001)",
        ] {
            assert!(wide.contains(expected), "{expected}\n{wide}");
        }
        insta::assert_snapshot!("access_120x40", wide);
        insta::assert_snapshot!(
            "access_80x24",
            crate::console::test_support::draw(&app, 80, 24)
        );
        update(&mut app, Action::Back);
        assert!(!is_open(&app));
    }

    /// A review is approved or rejected on its review hash, a proposed grant on its
    /// content hash, and a granted one rolled back; what cannot be is said up front.
    #[test]
    fn the_selected_review_or_grant_is_decided_on_the_hash_the_cli_binds_to() {
        use crate::console::test_support::{press, type_text};
        use crate::engine::api::Command;
        use crossterm::event::KeyCode;
        let mut snapshot = sample_snapshot();
        let request = |id: &str, status: &str| AccessView {
            id: id.into(),
            status: status.into(),
            privilege: "select".into(),
            tables: vec!["sales.orders".into()],
            grantee: "analyst_ann".into(),
            asked_by: "ann (uid 5001)".into(),
            proposal: (status != "review").then(|| format!("{id}-P1")),
            review_hash: (status == "review").then(|| format!("{id}-review-hash")),
            proposal_hash: (status != "review").then(|| format!("{id}-P1-hash")),
            ..AccessView::default()
        };
        snapshot.access = vec![
            request("ACC-0001", "review"),
            request("ACC-0002", "proposed"),
            request("ACC-0003", "granted"),
        ];
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        update(&mut app, Action::AccessRequests);
        let shown = crate::console::test_support::draw(&app, 120, 40);
        assert!(shown.contains("a approve  r reject"), "{shown}");
        press(&mut app, KeyCode::Char('u'));
        assert!(app.message.as_deref().unwrap().contains("waits for review"));
        press(&mut app, KeyCode::Char('r'));
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "a rejection needs its reason");
        type_text(&mut app, "too wide for an analyst");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox.pop(),
            Some(Command::Reject {
                proposal: "ACC-0001".into(),
                content_hash: "ACC-0001-review-hash".into(),
                reason: "too wide for an analyst".into(),
            })
        );
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('a'));
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox.pop(),
            Some(Command::Approve {
                proposal: "ACC-0002-P1".into(),
                content_hash: "ACC-0002-P1-hash".into(),
                reason: String::new(),
            })
        );
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('a'));
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .contains("nothing left to decide"));
        press(&mut app, KeyCode::Char('u'));
        type_text(&mut app, "the audit is over");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox.pop(),
            Some(Command::RollBack {
                proposal: "ACC-0003-P1".into(),
                reason: "the audit is over".into(),
            })
        );
        assert!(is_open(&app));
    }
}
