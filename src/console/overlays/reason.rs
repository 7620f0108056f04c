//! The reason overlay: what is being decided, and the box the reason is typed in. For a
//! proposal it shows the full content hash the decision is bound to; for closing or
//! reopening the incident by hand, the incident as it stands. Either way it warns when
//! what it shows changed underneath since the key was pressed.

use ratatui::layout::{Constraint, Layout};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

use crate::console::state::{App, Decision, ReasonModal};
use crate::console::widgets::{centered, incident_status, pane_block};
use crate::engine::api::IncidentStatus;

pub fn render(frame: &mut Frame, app: &App, modal: &ReasonModal) {
    let theme = &app.theme;
    let area = centered(frame.area(), 72, 14);
    let title = format!("{} {}", modal.decision.verb(), modal.target);
    let block = pane_block(&title, true, theme);
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let [about, subject, warning, label, text, error] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    frame.render_widget(Line::raw(modal.target_title.clone()), about);
    let (shown, changed) = match &modal.content_hash {
        Some(hash) => proposal_lines(app, modal, hash),
        None => incident_lines(app, modal),
    };
    frame.render_widget(Paragraph::new(shown), subject);
    if let Some(changed) = changed {
        frame.render_widget(Line::styled(changed, theme.crit), warning);
    }
    let requirement = if modal.decision.reason_required() {
        "Reason (required)"
    } else {
        "Reason (optional)"
    };
    frame.render_widget(
        Line::from(vec![
            Span::styled(requirement, theme.title),
            Span::styled("  Enter sends · Ctrl-J new line · Esc cancels", theme.muted),
        ]),
        label,
    );
    frame.render_widget(&modal.text, text);
    if let Some(message) = &modal.error {
        frame.render_widget(Line::styled(format!("✗ {message}"), theme.crit), error);
    }
}

/// The hash the decision is bound to, and a warning if the engine changed the content
/// since: the engine will refuse, and the person should look again.
fn proposal_lines(
    app: &App,
    modal: &ReasonModal,
    hash: &str,
) -> (Vec<Line<'static>>, Option<String>) {
    let theme = &app.theme;
    let current = app
        .open_incident()
        .and_then(|incident| incident.proposals.iter().find(|p| p.id == modal.target))
        .map(|proposal| proposal.content_hash.as_str());
    let changed = current
        .is_some_and(|current| current != hash)
        .then(|| "⚠ content changed since you opened this: Esc and review".to_string());
    let lines = vec![
        Line::styled("content hash", theme.muted),
        Line::styled(hash.to_string(), theme.accent),
    ];
    (lines, changed)
}

/// The incident's state and table, what the decision does, and a warning if someone
/// closed or reopened it meanwhile.
fn incident_lines(app: &App, modal: &ReasonModal) -> (Vec<Line<'static>>, Option<String>) {
    let theme = &app.theme;
    let Some(incident) = app
        .snapshot
        .incidents
        .iter()
        .find(|incident| incident.id == modal.target)
    else {
        let gone = format!("⚠ {} is no longer in the snapshot: Esc", modal.target);
        return (Vec::new(), Some(gone));
    };
    let resolved = incident.status == IncidentStatus::Resolved;
    let effect = if modal.decision == Decision::Reopen {
        "it waits for people and checks again; the reason goes on the chain"
    } else {
        "by hand: the receipt records who closed it and why"
    };
    let lines = vec![
        Line::from(vec![
            incident_status(incident.status, theme),
            Span::styled(" · ", theme.muted),
            Span::raw(incident.table.clone()),
        ]),
        Line::styled(effect, theme.muted),
    ];
    let changed = match (modal.decision, resolved) {
        (Decision::Resolve, true) => Some(format!(
            "⚠ {} is resolved now: Esc and look again",
            incident.id
        )),
        (Decision::Reopen, false) => Some(format!(
            "⚠ {} is open again now: Esc and look again",
            incident.id
        )),
        _ => None,
    };
    (lines, changed)
}
