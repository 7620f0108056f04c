//! The alert outbox overlay (`o`): per `[[alert]]` destination, what waits to be sent,
//! when it is next tried, the last error and the dedup key, then its rows. It draws the
//! snapshot's outbox (cleaned with the rest of the snapshot as it arrived); the
//! countdown is counted on from when that snapshot arrived, with the time of the next
//! try beside it, and the console redraws it once a second while the overlay is open.

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::console::action::{self, step, Action};
use crate::console::state::{App, Overlay};
use crate::console::widgets::{centered, pane_block};
use crate::engine::api::DestinationView;

/// The overlay's lines, one destination after another.
pub fn lines<'a>(app: &App) -> Vec<Line<'a>> {
    let theme = &app.theme;
    let outbox: &[DestinationView] = &app.snapshot.outbox;
    let mut lines = Vec::new();
    if outbox.is_empty() {
        lines.push(Line::styled(
            "no [[alert]] destination is configured: nothing is ever sent",
            theme.muted,
        ));
        return lines;
    }
    for d in outbox {
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        // State by glyph and word, never by colour alone.
        let (glyph, style) = if d.failed > 0 {
            ("✗", theme.crit)
        } else if d.last_error.is_some() {
            ("!", theme.warn)
        } else if d.pending > 0 {
            ("…", theme.accent)
        } else {
            ("✓", theme.ok)
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{glyph} "), style),
            Span::styled(
                format!("{} ({})", d.destination, d.kind),
                theme.title.add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(
                "  {} pending, {} failed, {} delivered",
                d.pending, d.failed, d.delivered
            )),
        ]));
        if let (Some(secs), Some(at)) = (d.next_attempt_in_secs, &d.next_attempt_at) {
            let at = at.naive().format("%H:%M:%S");
            lines.push(Line::raw(
                match Some(secs - app.snapshot_age_secs() as i64).filter(|s| *s > 0) {
                    Some(left) => format!("  next try in {left}s (at {at})"),
                    None => format!("  next try due now (at {at})"),
                },
            ));
        }
        if let Some(key) = &d.dedup_key {
            lines.push(Line::styled(format!("  dedup key {key}"), theme.muted));
        }
        if let Some(error) = &d.last_error {
            lines.push(Line::styled(format!("  last error: {error}"), style));
        }
        for r in &d.rows {
            let mark = match r.status.as_str() {
                "pending" => "…",
                "failed" => "✗",
                _ => "✓",
            };
            lines.push(Line::raw(format!(
                "  {mark} {} {} {} ({}, {} {})",
                r.incident,
                r.action,
                r.occasion,
                r.status,
                r.attempts,
                if r.attempts == 1 { "try" } else { "tries" }
            )));
        }
    }
    lines
}

/// How many lines the overlay has, for scrolling.
/// The outbox overlay: how far it is scrolled.
#[derive(Debug, Clone, Default)]
pub struct Alerts {
    pub scroll: usize,
}

/// The outbox's keys scroll it; false for any other action.
pub fn handle(app: &mut App, action: &Action) -> bool {
    if !matches!(app.overlay, Overlay::AlertOutbox(_)) {
        return false;
    }
    let Some(delta) = action.distance(action::page(app.drawn.outbox.get())) else {
        return false;
    };
    let lines = line_count(app);
    if let Overlay::AlertOutbox(alerts) = &mut app.overlay {
        alerts.scroll = step(alerts.scroll, delta, lines);
    }
    true
}

pub fn line_count(app: &App) -> usize {
    lines(app).len()
}

pub fn render(frame: &mut Frame, app: &App, scroll: usize) {
    let area: Rect = centered(frame.area(), 100, frame.area().height.saturating_sub(2));
    let lines = lines(app);
    let height = area.height.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(height));
    let mut block = pane_block("Alert outbox (Esc closes)", true, &app.theme);
    app.drawn.outbox.set(block.inner(area));
    if scroll + height < lines.len() {
        block = block
            .title_bottom(Line::styled(" ↓ more: j or PgDn ", app.theme.muted).right_aligned());
    }
    let paragraph = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((scroll as u16, 0))
        .block(block);
    frame.render_widget(Clear, area);
    frame.render_widget(paragraph, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action};
    use crate::console::theme::Theme;
    use crate::engine::api::RowView;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn app_with_outbox() -> App {
        let mut snapshot = sample_snapshot();
        let row = |id, action: &str, occasion: &str, status: &str, attempts| RowView {
            id,
            incident: "INC-7".into(),
            action: action.into(),
            occasion: occasion.into(),
            dedup_key: "dataward-5c1f0a9e2b7d-INC-7".into(),
            status: status.into(),
            attempts,
            queued_at: "2026-11-24T14:17:00Z".parse().unwrap(),
            next_attempt_at: (status == "pending").then(|| "2026-11-24T14:19:12Z".parse().unwrap()),
            delivered_at: (status != "pending").then(|| "2026-11-24T14:17:01Z".parse().unwrap()),
            last_error: (status == "pending" && attempts > 0)
                .then(|| "could not connect: Connection refused".into()),
            request_id: None,
        };
        snapshot.outbox = vec![
            DestinationView {
                destination: "pagerduty-oncall".into(),
                kind: "pagerduty".into(),
                pending: 2,
                failed: 0,
                delivered: 1,
                next_attempt_at: Some("2026-11-24T14:19:12Z".parse().unwrap()),
                next_attempt_in_secs: Some(42),
                last_error: Some("could not connect: Connection refused".into()),
                dedup_key: Some("dataward-5c1f0a9e2b7d-INC-7".into()),
                rows: vec![
                    row(1, "trigger", "opened", "delivered", 1),
                    row(4, "update", "first_approval", "pending", 6),
                    row(6, "resolve", "resolved", "pending", 0),
                ],
            },
            DestinationView {
                destination: "slack-data".into(),
                kind: "slack".into(),
                pending: 0,
                failed: 1,
                delivered: 2,
                last_error: Some("Slack answered 410: channel_is_archived".into()),
                rows: vec![row(2, "trigger", "opened", "failed", 1)],
                ..Default::default()
            },
        ];
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        app
    }

    fn draw(app: &App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal
            .draw(|frame| crate::console::view::render(frame, app))
            .unwrap();
        terminal.backend().to_string()
    }

    #[test]
    fn the_outbox_overlay() {
        let mut app = app_with_outbox();
        update(&mut app, Action::AlertOutbox);
        for (width, height) in [(120, 40), (80, 24)] {
            let screen = draw(&app, width, height);
            assert!(screen.contains("pagerduty-oncall (pagerduty)"), "{screen}");
            assert!(screen.contains("next try in 42s"), "{screen}");
            insta::assert_snapshot!(format!("outbox_{width}x{height}"), screen);
        }
        update(&mut app, Action::Back);
        assert!(!draw(&app, 120, 40).contains("Alert outbox"));
    }

    #[test]
    fn the_countdown_counts_on_from_when_the_snapshot_arrived() {
        let mut app = app_with_outbox();
        assert!(!app.counting_down(), "nothing counts down off screen");
        update(&mut app, Action::AlertOutbox);
        assert!(app.counting_down());
        let arrived = std::time::Instant::now();
        app.snapshot_received = arrived.checked_sub(std::time::Duration::from_secs(40));
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("next try in 2s (at 14:19:12)"), "{screen}");
        app.snapshot_received = arrived.checked_sub(std::time::Duration::from_secs(50));
        let screen = draw(&app, 120, 40);
        assert!(
            screen.contains("next try due now (at 14:19:12)"),
            "{screen}"
        );
    }

    #[test]
    fn without_destinations_it_says_nothing_is_sent() {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        update(&mut app, Action::AlertOutbox);
        assert!(draw(&app, 120, 40).contains("nothing is ever sent"));
    }
}
