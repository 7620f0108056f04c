//! The frame around every screen: the title bar (the clock, pipelines, the chain alarm),
//! the status bar (stops, answers, the chain head, who is attached) and the key hints,
//! or the `:` and `/` prompt in their place.

use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use crate::console::keys;
use crate::console::presence;
use crate::console::state::{App, Overlay};
use crate::console::widgets::{clock_face, cut_spans, pipeline_state, run_status, short};
use crate::engine::api::{FirstPoll, PipelineState};

pub(crate) fn render_title(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let mut spans = vec![
        Span::styled(" dataward ", theme.title.add_modifier(Modifier::REVERSED)),
        Span::raw(" "),
    ];
    // A chain that does not verify takes the top line: nothing is recorded meanwhile,
    // and nobody should decide anything without knowing it.
    // So does a refused policy change or a state database gone from under the engine.
    if let Some(alarm) = app
        .snapshot
        .chain_alarm
        .as_ref()
        .or(app.snapshot.trust_alarm.as_ref())
    {
        spans.push(Span::styled(
            format!("■ {alarm}"),
            theme.crit.add_modifier(Modifier::BOLD),
        ));
        frame.render_widget(Line::from(cut_spans(spans, area.width as usize)), area);
        return;
    }
    spans.push(Span::styled(clock_face(app.snapshot.now), theme.title));
    for pipeline in &app.snapshot.pipelines {
        spans.push(Span::styled("  │ ", theme.border));
        spans.push(Span::raw(format!("{} ", pipeline.name)));
        // A hold asked of people, and the job's own runs say it was not carried out.
        if let (PipelineState::HoldAsked, Some(ran)) = (pipeline.state, &pipeline.ran_after_hold) {
            spans.push(Span::styled(
                format!(
                    "■ hold asked, yet it ran at {}: stop the cron yourself",
                    ran.hour_minute()
                ),
                theme.crit.add_modifier(Modifier::BOLD),
            ));
            continue;
        }
        // A hold asked of people, and the job's own records cannot say whether it ran:
        // neither the calm "asked" nor the alarm, and why.
        if let (PipelineState::HoldAsked, Some(why)) = (pipeline.state, &pipeline.hold_unconfirmed)
        {
            spans.push(Span::styled(
                format!("? hold asked, unconfirmed: {why}"),
                theme.warn.add_modifier(Modifier::BOLD),
            ));
            continue;
        }
        spans.push(pipeline_state(pipeline.state, theme));
        spans.push(Span::raw(" "));
        spans.push(run_status(pipeline.last_status, theme));
    }
    // Our health, not the data's: the bar above is empty or old until it answers.
    if let Some(down) = &app.snapshot.orchestrator_down {
        spans.push(Span::styled("  │ ", theme.border));
        spans.push(Span::styled(
            format!("■ orchestrator not answering {down}"),
            theme.warn.add_modifier(Modifier::BOLD),
        ));
    }
    frame.render_widget(Line::from(cut_spans(spans, area.width as usize)), area);
}

pub(crate) fn render_status(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let separator = || Span::styled(" │ ", theme.border);
    let mut spans = Vec::new();
    // The org-wide stop comes first: whoever looks must not miss it.
    if let Some(stop) = &app.snapshot.org_stop {
        spans.push(Span::styled(
            format!("■ {stop}"),
            theme.crit.add_modifier(Modifier::BOLD),
        ));
        spans.push(separator());
    }
    // A lost engine comes first too: nothing decided now would be sent.
    if let Some(lost) = &app.link.lost {
        spans.push(Span::styled(
            format!("■ {lost}; reconnecting…"),
            theme.crit.add_modifier(Modifier::BOLD),
        ));
        spans.push(separator());
    }
    // The answer to this console's last action (a refusal above all) must not be cut
    // off by a narrow terminal: it comes next.
    if let Some(message) = &app.message {
        spans.push(Span::styled(
            message.clone(),
            theme.accent.add_modifier(Modifier::BOLD),
        ));
        spans.push(separator());
    }
    // Until the first poll is over, what the screen shows is not yet everything.
    if let Some(poll) = &app.snapshot.first_poll {
        spans.push(Span::styled(first_poll(poll), theme.muted));
        spans.push(separator());
    }
    spans.push(match &app.snapshot.chain_head {
        Some(head) => Span::styled(
            format!("chain #{} {}", head.seq, short(&head.hash)),
            theme.accent,
        ),
        None => Span::styled("chain empty", theme.muted),
    });
    // Who we are, as the engine's hello attests it (hub snapshots carry no actor).
    let you = app.link.you.as_deref().unwrap_or(&app.snapshot.actor);
    if !you.is_empty() {
        spans.push(separator());
        spans.push(Span::raw(you.to_string()));
    }
    if app.read_only {
        spans.push(separator());
        spans.push(Span::styled(
            "read-only",
            theme.warn.add_modifier(Modifier::BOLD),
        ));
    }
    if app.engine_stopped {
        spans.push(separator());
        spans.push(Span::styled("■ engine stopped; q quits", theme.crit));
    } else if app.link.lost.is_some() {
    } else if !app.connected {
        spans.push(separator());
        spans.push(Span::styled("waiting for the engine…", theme.muted));
    } else if app.snapshot.finished {
        spans.push(separator());
        spans.push(Span::styled("✓ scenario finished", theme.ok));
    }
    // The engine's latest notice comes before the list of who is here: on a narrow
    // terminal the list is what gets cut.
    if let (None, Some(notice)) = (&app.message, app.snapshot.notices.last()) {
        spans.push(separator());
        spans.push(Span::styled(notice.clone(), theme.muted));
    }
    let attached = presence::status_spans(app, theme);
    if !attached.is_empty() {
        spans.push(separator());
        spans.extend(attached);
    }
    frame.render_widget(Line::from(cut_spans(spans, area.width as usize)), area);
}

pub(crate) fn render_hints(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    if let Overlay::Prompt(prompt) = &app.overlay {
        crate::console::overlays::prompt::render(frame, area, app, prompt);
        return;
    }
    // Whole hints or none: a hint cut in half reads as a different key.
    let mut spans = Vec::new();
    let mut used = 0;
    for (label, description) in keys::hints(app) {
        let gap = if spans.is_empty() { "" } else { "  " };
        let width = Line::raw(format!("{gap}{label} {description}")).width();
        if used + width > area.width as usize {
            break;
        }
        used += width;
        spans.push(Span::raw(gap));
        spans.push(Span::styled(
            label,
            theme.accent.add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled(format!(" {description}"), theme.muted));
    }
    frame.render_widget(Line::from(spans), area);
}

/// "first poll: 37 of 120 tables": the engine's first poll while it is slow.
pub(crate) fn first_poll(poll: &FirstPoll) -> String {
    format!("first poll: {} of {} tables", poll.done, poll.total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action, App};
    use crate::console::test_support::draw;
    use crate::console::theme::Theme;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    /// A hold on a job a cron runs (dbt Core) is asked of people, not carried out: the
    /// bar never says paused (it did while the cron kept running), and when the job's
    /// own runs show it ran after the hold, the bar says so.
    #[test]
    fn a_hold_on_a_cron_says_it_was_asked_and_whether_the_job_ran_since() {
        let mut snapshot = sample_snapshot();
        snapshot.pipelines[1].state = crate::engine::api::PipelineState::HoldAsked;
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(snapshot.clone())),
        );
        let screen = draw(&app, 160, 45);
        let bar = screen.lines().next().unwrap();
        assert!(
            bar.contains("hourly dbt job ✋ hold asked: stop the cron yourself"),
            "{bar}"
        );
        assert!(!bar.contains("paused"), "{bar}");
        snapshot.pipelines[1].ran_after_hold = Some("2026-11-24T14:30:02Z".parse().unwrap());
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let screen = draw(&app, 160, 45);
        let bar = screen.lines().next().unwrap();
        assert!(
            bar.contains(
                "hourly dbt job ■ hold asked, yet it ran at 14:30: stop the cron yourself"
            ),
            "{bar}"
        );
    }

    #[test]
    fn read_only_and_stopped_engine_show_in_the_status_bar() {
        let mut app = App::new(true, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        update(&mut app, Action::EngineStopped);
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("read-only"));
        assert!(screen.contains("engine stopped"));
    }

    fn title(snapshot: crate::engine::api::Snapshot, width: u16) -> String {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let mut terminal = Terminal::new(TestBackend::new(width, 1)).unwrap();
        terminal
            .draw(|frame| render_title(frame, frame.area(), &app))
            .unwrap();
        terminal.backend().to_string()
    }

    /// A hold on a cron whose dbt did not record which job it ran (dbt v2): the bar
    /// says neither the calm "asked" nor that the job ran, and why it cannot tell.
    #[test]
    fn a_hold_whose_job_records_cannot_say_whether_it_ran_is_unconfirmed_on_the_bar() {
        let mut snapshot = sample_snapshot();
        snapshot.pipelines[1].state = PipelineState::HoldAsked;
        snapshot.pipelines[1].hold_unconfirmed = Some(
            "cannot tell which job dbt ran at 2026-12-02T13:48:02Z: \
             /srv/shop/target/run_results.json: dbt did not record the command it ran \
             (dbt v2 writes only `build`)"
                .into(),
        );
        let name = snapshot.pipelines[1].name.clone();
        let bar = title(snapshot, 400);
        assert!(
            bar.contains(&format!(
                "{name} ? hold asked, unconfirmed: cannot tell which job dbt ran at \
                 2026-12-02T13:48:02Z: /srv/shop/target/run_results.json: dbt did not \
                 record the command it ran (dbt v2 writes only `build`)"
            )),
            "{bar}"
        );
        assert!(!bar.contains("yet it ran"), "{bar}");
        assert!(!bar.contains("paused"), "{bar}");
    }

    /// The engine's time as people read it on the bar, and no made-up time before an
    /// engine sent one.
    #[test]
    fn the_title_bar_shows_the_engines_time_and_none_before_it() {
        let mut snapshot = sample_snapshot();
        snapshot.now = "2026-11-25T09:05:00Z".parse().unwrap();
        let bar = title(snapshot, 200);
        assert!(bar.contains(" dataward  Wed 09:05 "), "{bar}");
        let bar = title(crate::engine::api::Snapshot::default(), 200);
        assert!(!bar.contains("1970") && !bar.contains("Thu"), "{bar}");
    }
}
