//! The access requests overlay (`A`): every request with where it stands (waiting for
//! review, proposed, approved, granted, expiring within a week, revoking, revoked,
//! rejected, unanswered), what it asks for whom, and the grant's expiry. It draws the
//! snapshot's requests, cleaned with the rest as it arrived.

use chrono::TimeDelta;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::Frame;

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

/// The overlay's lines, one request after another.
pub fn lines<'a>(app: &App) -> Vec<Line<'a>> {
    let theme = &app.theme;
    let mut lines = Vec::new();
    if app.snapshot.access.is_empty() {
        lines.push(Line::styled(
            "no access requests (`:request` or `dataward request-access` files one)",
            theme.muted,
        ));
        return lines;
    }
    for request in &app.snapshot.access {
        let (glyph, word, style) = standing(app, request);
        lines.push(Line::from(vec![
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
                format!("    {}", detail.join(", ")),
                theme.muted,
            ));
        }
    }
    lines
}

pub fn render(frame: &mut Frame, app: &App, scroll: &Scroll) {
    render_scrolled(
        frame,
        app,
        "Access requests (Esc closes)",
        lines(app),
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
}
