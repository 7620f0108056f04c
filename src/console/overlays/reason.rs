//! The reason overlay: what is being decided, and the box the reason is typed in. For a
//! proposal it shows the full content hash the decision is bound to; for closing or
//! reopening the incident by hand, the incident as it stands. Either way it warns when
//! what it shows changed underneath since the key was pressed.

use ratatui::layout::{Constraint, Layout};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;
use ratatui_textarea::TextArea;

use crate::console::action::Action;
use crate::console::overlays::decide;
use crate::console::state::{App, Overlay};
use crate::console::widgets::{centered, cut, cut_spans, incident_status, pane_block, width_of};
use crate::engine::api::{Command, IncidentStatus};
use crate::sanitize;

#[cfg(test)]
mod tests;

/// The decisions that need a reason typed first: three on the selected proposal, three
/// on the incident as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
    RollBack,
    /// Close the incident by hand.
    Resolve,
    /// Open a resolved incident again.
    Reopen,
    /// Accept the incident's new level as the normal.
    AcceptLevel,
    /// "This was fine": close it as expected, out of the baselines.
    Expected,
    /// Snooze the incident's monitor: the text is a duration, then the reason.
    Snooze,
}

impl Decision {
    pub fn verb(self) -> &'static str {
        match self {
            Decision::Approve => "Approve",
            Decision::Reject => "Reject",
            Decision::RollBack => "Roll back",
            Decision::Resolve => "Resolve",
            Decision::Reopen => "Reopen",
            Decision::AcceptLevel => "Accept the new level of",
            Decision::Expected => "Mark expected",
            Decision::Snooze => "Snooze",
        }
    }

    /// A rejection is final, a roll back undoes work, and closing, reopening or
    /// accepting a new level goes in the receipt: all of them must say why.
    pub fn reason_required(self) -> bool {
        !matches!(self, Decision::Approve)
    }
}

/// The reason modal. For a proposal it keeps the content hash the person was looking at
/// when they pressed the key, so a proposal that changes underneath is never approved
/// unseen.
#[derive(Debug, Clone)]
pub struct ReasonModal {
    pub decision: Decision,
    /// The proposal decided, or the incident for resolve and reopen.
    pub target: String,
    pub target_title: String,
    /// The content hash shown, for a proposal; `None` for an incident.
    pub content_hash: Option<String>,
    pub text: TextArea<'static>,
    pub error: Option<String>,
    /// The overlay the box was opened from (the waves, the access requests): Esc and
    /// Enter go back to it. `Overlay::None` for the screens.
    pub back: Overlay,
}

/// Opens the box for `decision` on `target` (a proposal, with the content hash shown,
/// or the incident).
pub fn open(
    app: &mut App,
    decision: Decision,
    target: String,
    target_title: String,
    content_hash: Option<String>,
) {
    let mut text = TextArea::default();
    text.set_block(Block::bordered().border_style(app.theme.border));
    text.set_cursor_line_style(Style::default());
    let requirement = if decision.reason_required() {
        "required"
    } else {
        "optional"
    };
    text.set_placeholder_text(if decision == Decision::Snooze {
        "duration, then the reason: 2h a planned reload (at most 7d)".to_string()
    } else {
        format!("reason ({requirement})")
    });
    text.set_placeholder_style(app.theme.muted);
    app.overlay = Overlay::Reason(Box::new(ReasonModal {
        decision,
        target,
        target_title,
        content_hash,
        text,
        error: None,
        back: Overlay::None,
    }));
}

/// Esc and Enter in the open box go back to `overlay`, not to the screen.
pub fn come_back_to(app: &mut App, overlay: Overlay) {
    if let Overlay::Reason(modal) = &mut app.overlay {
        modal.back = overlay;
    }
}

/// What the open box does with `action`: typing, a new line, Enter sends. Every other
/// key is text here, so nothing moves under the box.
pub fn handle(app: &mut App, action: &Action) -> bool {
    let Overlay::Reason(modal) = &mut app.overlay else {
        return false;
    };
    match action {
        Action::Edit(key) => {
            modal.error = None;
            modal.text.input(*key);
        }
        Action::NewLine => modal.text.insert_newline(),
        // Pasted text is as untrusted as anything else that reaches the screen.
        Action::Paste(text) => {
            modal
                .text
                .insert_str(sanitize::for_terminal_multiline(text));
        }
        Action::Submit => submit(app),
        Action::Back => app.overlay = std::mem::replace(&mut modal.back, Overlay::None),
        _ if action.distance(0).is_some() => {}
        _ => return false,
    }
    true
}

/// Enter: the decision goes to the outbox with its reason, or the box says what is
/// missing and stays open.
fn submit(app: &mut App) {
    let mut modal = match std::mem::replace(&mut app.overlay, Overlay::None) {
        Overlay::Reason(modal) => modal,
        other => {
            app.overlay = other;
            return;
        }
    };
    let reason = modal.text.lines().join("\n").trim().to_string();
    if reason.is_empty() && modal.decision.reason_required() {
        modal.error = Some(format!(
            "{} needs a reason: say why, for the receipt",
            modal.decision.verb()
        ));
        app.overlay = Overlay::Reason(modal);
        return;
    }
    // A snooze's text starts with its duration.
    let (seconds, reason) = if modal.decision == Decision::Snooze {
        match snooze_text(&reason) {
            Ok(read) => read,
            Err(error) => {
                modal.error = Some(error);
                app.overlay = Overlay::Reason(modal);
                return;
            }
        }
    } else {
        (0, reason)
    };
    let ReasonModal {
        decision,
        target,
        content_hash,
        back,
        ..
    } = *modal;
    app.overlay = back;
    let sent = format!(
        "{} {target} sent; the engine will confirm",
        decision.verb().to_lowercase()
    );
    let command = match (decision, content_hash) {
        (Decision::Approve, Some(content_hash)) => Command::Approve {
            proposal: target,
            content_hash,
            reason,
        },
        (Decision::Reject, Some(content_hash)) => Command::Reject {
            proposal: target,
            content_hash,
            reason,
        },
        (Decision::RollBack, _) => Command::RollBack {
            proposal: target,
            reason,
        },
        (Decision::Resolve, _) => Command::Resolve {
            incident: target,
            reason,
        },
        (Decision::Reopen, _) => Command::Reopen {
            incident: target,
            reason,
        },
        (Decision::AcceptLevel, _) => Command::Accept {
            incident: target,
            reason,
        },
        (Decision::Expected, _) => Command::Expected {
            incident: target,
            reason,
        },
        (Decision::Snooze, _) => Command::Snooze {
            target,
            seconds,
            reason,
        },
        // Approve and reject are only opened on a proposal, with its hash.
        (Decision::Approve | Decision::Reject, None) => return,
    };
    app.message = Some(sent);
    app.outbox.push(command);
}

/// A snooze's text: its duration ("2h"), then the reason; what is wrong otherwise. The
/// engine refuses a snooze over a week; said here first so nobody waits for that.
pub fn snooze_text(text: &str) -> Result<(u64, String), String> {
    let (duration, reason) = text
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((text.trim(), ""));
    let seconds = crate::config::parse_duration(duration)
        .map_err(|e| format!("start with the duration (30m, 2h, 3d): {e}"))?
        .as_secs();
    if seconds > crate::engine::MAX_SNOOZE_SECONDS {
        return Err(format!("{duration}: a snooze lasts at most 7 days"));
    }
    let reason = reason.trim().to_string();
    if reason.is_empty() {
        return Err("after the duration, say why, for the chain".into());
    }
    Ok((seconds, reason))
}

/// Rows the reason box's text field takes: its border and one line to type on.
const TEXT_MIN: u16 = 3;
/// The box's size when the terminal has room.
const WIDTH: u16 = 72;
const HEIGHT: u16 = 14;

/// The box is laid out by what must be seen first, so a small terminal (40x10) still
/// shows the whole content hash being approved (wrapped) and a line to type the
/// reason on; the title of what is decided, the labels and the spare text lines give
/// way first.
pub fn render(frame: &mut Frame, app: &App, modal: &ReasonModal) {
    let theme = &app.theme;
    let screen = frame.area();
    let inner_width = WIDTH.min(screen.width).saturating_sub(2) as usize;
    let (shown, changed) = match &modal.content_hash {
        Some(hash) => proposal_lines(app, modal, hash, inner_width),
        None => incident_lines(app, modal),
    };
    // A proposal's hash lines must all be seen; an incident's lines are context.
    let (must_subject, subject_label) = match &modal.content_hash {
        Some(_) => (shown.len() as u16 - 1, 1),
        None => (0, shown.len() as u16),
    };
    // A warning that the content changed must be read whole, wrapped.
    let warning = changed.as_deref().map_or(0, |changed| {
        width_of(changed).div_ceil(inner_width.max(1)) as u16
    });
    let must = must_subject + warning + TEXT_MIN;
    let height = HEIGHT.max(must + 2).min(screen.height);
    let area = centered(screen, WIDTH, height);
    let title = format!("{} {}", modal.decision.verb(), modal.target);
    let block = pane_block(&title, true, theme);
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);

    // Spare rows go, in this order, to: the requirement line, an error, the title of
    // what is decided, the hash's label (or the incident's lines), then, when there is
    // room, a row kept for an error and one for a warning (so the box does not jump
    // when one appears), then more lines to type on.
    let mut spare = inner.height.saturating_sub(must);
    let mut take = |want: u16| {
        let given = want.min(spare);
        spare -= given;
        given
    };
    let label_rows = take(1);
    let mut error_rows = take(u16::from(modal.error.is_some()));
    let about_rows = take(1);
    let subject_label_rows = take(subject_label);
    error_rows += take(1 - error_rows);
    let warning_rows = warning + take(u16::from(warning == 0));
    let text_rows = TEXT_MIN + take(u16::MAX);
    let [about, subject, warning_area, label, text, error_area] = Layout::vertical([
        Constraint::Length(about_rows),
        Constraint::Length(must_subject + subject_label_rows),
        Constraint::Length(warning_rows),
        Constraint::Length(label_rows),
        Constraint::Length(text_rows),
        Constraint::Length(error_rows),
    ])
    .areas(inner);
    frame.render_widget(
        Line::raw(cut(&modal.target_title, inner.width as usize)),
        about,
    );
    // Drop the label lines that found no room, never the hash.
    let skip = (subject_label - subject_label_rows) as usize;
    let subject_lines: Vec<Line> = match &modal.content_hash {
        Some(_) => shown.into_iter().skip(skip).collect(),
        None => shown
            .into_iter()
            .take(subject_label_rows as usize)
            .collect(),
    };
    frame.render_widget(Paragraph::new(subject_lines), subject);
    if let Some(changed) = changed {
        frame.render_widget(
            Paragraph::new(Line::styled(changed, theme.crit)).wrap(Wrap { trim: false }),
            warning_area,
        );
    }
    let requirement = if modal.decision == Decision::Snooze {
        "Duration, then reason (required)"
    } else if modal.decision.reason_required() {
        "Reason (required)"
    } else {
        "Reason (optional)"
    };
    frame.render_widget(
        Line::from(cut_spans(
            vec![
                Span::styled(requirement, theme.title),
                Span::styled("  Enter sends · Ctrl-J new line · Esc cancels", theme.muted),
            ],
            inner.width as usize,
        )),
        label,
    );
    frame.render_widget(&modal.text, text);
    if let Some(message) = &modal.error {
        frame.render_widget(
            Line::styled(
                cut(&format!("✗ {message}"), inner.width as usize),
                theme.crit,
            ),
            error_area,
        );
    }
}

/// The hash the decision is bound to, and a warning if the engine changed the content
/// since: the engine will refuse, and the person should look again.
fn proposal_lines(
    app: &App,
    modal: &ReasonModal,
    hash: &str,
    width: usize,
) -> (Vec<Line<'static>>, Option<String>) {
    let theme = &app.theme;
    // A wave's, repoint's or request's hash comes from the overlay it was decided in.
    let current = app
        .open_incident()
        .and_then(|incident| incident.proposals.iter().find(|p| p.id == modal.target))
        .map(|proposal| proposal.content_hash.clone())
        .or_else(|| decide::find(app, &modal.target).and_then(|thing| thing.hash));
    let changed = current
        .is_some_and(|current| current != hash)
        .then(|| "⚠ content changed since you opened this: Esc and review".to_string());
    // The label, then the whole hash, wrapped: what is approved is never cut.
    let mut lines = vec![Line::styled("content hash", theme.muted)];
    let chars: Vec<char> = hash.chars().collect();
    lines.extend(
        chars
            .chunks(width.max(1))
            .map(|piece| Line::styled(piece.iter().collect::<String>(), theme.accent)),
    );
    (lines, changed)
}

/// The incident's state and table, what the decision does, and a warning if someone
/// closed or reopened it meanwhile.
fn incident_lines(app: &App, modal: &ReasonModal) -> (Vec<Line<'static>>, Option<String>) {
    let theme = &app.theme;
    let incident = app
        .snapshot
        .incidents
        .iter()
        .find(|incident| incident.id == modal.target);
    // A snooze may name a monitor (`Z` in the monitors pane).
    let monitor = app
        .snapshot
        .monitors
        .iter()
        .find(|monitor| monitor.name == modal.target);
    if let (None, Some(monitor), Decision::Snooze) = (incident, monitor, modal.decision) {
        let lines = vec![
            Line::raw(monitor.table.clone()),
            Line::styled(
                "it opens no incident and pages nobody until the snooze ends",
                theme.muted,
            ),
        ];
        return (lines, None);
    }
    // A wave or request rolled back from its overlay (no hash to show for it).
    if let (None, Some(_)) = (incident, decide::find(app, &modal.target)) {
        let effect = "what it applied is put back, recorded with the reason";
        return (vec![Line::styled(effect, theme.muted)], None);
    }
    let Some(incident) = incident else {
        let gone = format!("⚠ {} is no longer in the snapshot: Esc", modal.target);
        return (Vec::new(), Some(gone));
    };
    let resolved = incident.status == IncidentStatus::Resolved;
    let effect = match modal.decision {
        Decision::Reopen => "it waits for people and checks again; the reason goes on the chain",
        Decision::Expected => "it was fine: closed as expected, its breach out of the baselines",
        Decision::Snooze => "its monitor opens no incident and pages nobody until the snooze ends",
        _ => "by hand: the receipt records who closed it and why",
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
        (Decision::Resolve | Decision::Expected, true) => Some(format!(
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
