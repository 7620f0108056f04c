//! The console's side of the protocol (`engine::api`, v1), as plain state: what the
//! engine's hello said, the requests sent and not yet answered, and the presence last
//! told. Each request is numbered here and its `Reply` answers it on this console only;
//! nothing is read from the shared notices. No I/O: the main loop sends what
//! [`outgoing`] returns.

use std::collections::BTreeMap;

use chrono::{Local, TimeZone};

use crate::clock::Timestamp;
use crate::console::state::{App, Overlay, Screen};
use crate::engine::api::{ClientMessage, Command, Outcome, Reply, Request};
use crate::sanitize;

#[derive(Debug, Clone, Default)]
pub struct LinkState {
    /// Who the engine says this console is (kernel-attested), from its hello.
    pub you: Option<String>,
    /// When the engine we are attached to started, to tell a restart from a reconnect.
    pub started_at: Option<Timestamp>,
    /// The connection is gone and the link is trying again: why.
    pub lost: Option<String>,
    next_id: u64,
    /// Requests sent and not answered yet: what each asked, for its answer's message.
    pub pending: BTreeMap<u64, String>,
    /// The presence last sent (viewing, deciding), so only a change is sent.
    presence_sent: Option<(Option<String>, Option<String>)>,
}

/// What this console looks at and decides now, for everyone's presence line.
pub fn presence(app: &App) -> (Option<String>, Option<String>) {
    let viewing = match app.screen {
        Screen::Detail => app.detail.as_ref().map(|d| d.incident.clone()),
        Screen::List => app.selected_incident.clone(),
    };
    let deciding = match &app.overlay {
        Overlay::Reason(modal) => Some(modal.target.clone()),
        _ => None,
    };
    (viewing, deciding)
}

/// Everything to send now: the queued commands as numbered requests, then the presence
/// if it changed. While the connection is down nothing is sent, and the person is told.
pub fn outgoing(app: &mut App) -> Vec<ClientMessage> {
    let mut out = Vec::new();
    if app.link.lost.is_some() {
        if !app.outbox.is_empty() {
            app.outbox.clear();
            app.message = Some("not connected to the engine: nothing was sent".into());
        }
        return out;
    }
    for command in app.outbox.drain(..) {
        app.link.next_id += 1;
        let id = app.link.next_id;
        app.link.pending.insert(id, describe(&command));
        out.push(ClientMessage::Request(Request {
            id,
            command,
            client_request: None,
        }));
    }
    let now = presence(app);
    if app.link.presence_sent.as_ref() != Some(&now) {
        app.link.presence_sent = Some(now.clone());
        out.push(ClientMessage::Presence {
            viewing: now.0,
            deciding: now.1,
        });
    }
    out
}

fn describe(command: &Command) -> String {
    match command {
        Command::Approve { proposal, .. } => format!("approve {proposal}"),
        Command::Reject { proposal, .. } => format!("reject {proposal}"),
        Command::RollBack { proposal, .. } => format!("roll back {proposal}"),
        Command::Forward { proposal } => format!("forward {proposal}"),
        Command::QueueRun { incident } => format!("run for {incident}"),
        Command::Resolve { incident, .. } => format!("resolve {incident}"),
        Command::Reopen { incident, .. } => format!("reopen {incident}"),
        Command::Accept { incident, .. } => format!("accept the new level of {incident}"),
        Command::Expected { incident, .. } => format!("mark {incident} expected"),
        Command::Snooze { target, .. } => format!("snooze {target}"),
        Command::RequestAccess {
            target,
            privilege,
            grantee,
            ..
        } => format!("request {privilege} on {target} for {grantee}"),
        Command::OrgStop { .. } => "org-wide stop".into(),
        Command::LiftStop => "lift the stop".into(),
        Command::WhatHappened { client_request } => {
            format!("ask what came of request {client_request}")
        }
    }
}

/// The engine's hello, first on every connection: after a lost connection it says
/// whether the engine restarted meanwhile.
pub fn hello(app: &mut App, started_at: Timestamp, you: String, read_only: bool) {
    let link = &mut app.link;
    if link.lost.take().is_some() {
        app.message = Some(if link.started_at == Some(started_at) {
            "reconnected".into()
        } else {
            format!(
                "engine restarted at {}, reconnected",
                local_time(started_at)
            )
        });
    }
    link.started_at = Some(started_at);
    link.you = Some(sanitize::for_terminal(&you).into_owned());
    // The engine is told again what we look at: it forgot with the old connection.
    link.presence_sent = None;
    // The engine's word on read-only wins: an observer loses every deciding key.
    app.read_only |= read_only;
}

/// HH:MM on this machine's clock, from the engine's UTC time.
fn local_time(at: Timestamp) -> String {
    Local
        .from_utc_datetime(&at.naive())
        .format("%H:%M")
        .to_string()
}

/// The answer to one of our requests replaces its "sent" message.
pub fn reply(app: &mut App, reply: Reply) {
    let asked = app.link.pending.remove(&reply.id);
    let text = match reply.outcome {
        Outcome::Accepted { seq, events } => {
            let lines = crate::engine::cli::confirmations(&events);
            if lines.is_empty() {
                format!(
                    "{} accepted{}",
                    asked.as_deref().unwrap_or("request"),
                    seq.map(|s| format!(" (chain #{s})")).unwrap_or_default()
                )
            } else {
                lines.join("; ")
            }
        }
        Outcome::Refused { reason } => format!(
            "✗ {} refused: {}",
            asked.as_deref().unwrap_or("request"),
            reason.message
        ),
    };
    app.message = Some(sanitize::for_terminal(&text).into_owned());
}

/// The connection went away. A request it carried may or may not have been recorded:
/// say so, rather than let it look answered.
pub fn lost(app: &mut App, reason: String) {
    let unanswered: Vec<String> = std::mem::take(&mut app.link.pending)
        .into_values()
        .collect();
    if !unanswered.is_empty() {
        app.message = Some(format!(
            "no answer to {} before the engine went away: look again before deciding again",
            unanswered.join(", ")
        ));
    }
    app.link.lost = Some(sanitize::for_terminal(&reason).into_owned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action};
    use crate::console::theme::Theme;
    use crate::engine::api::{Event, EventKind, Refusal, RefusalKind, Verdict};

    fn app() -> App {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        app
    }

    fn requests(out: &[ClientMessage]) -> Vec<u64> {
        out.iter()
            .filter_map(|m| match m {
                ClientMessage::Request(r) => Some(r.id),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn requests_are_numbered_and_each_reply_answers_its_own() {
        let mut app = app();
        update(&mut app, Action::Open);
        update(&mut app, Action::QueueRun);
        update(&mut app, Action::QueueRun);
        let out = outgoing(&mut app);
        assert_eq!(requests(&out), [1, 2]);
        assert!(app.outbox.is_empty());
        update(
            &mut app,
            Action::ReplyArrived(Reply {
                id: 2,
                outcome: Outcome::Refused {
                    reason: Refusal::new(
                        RefusalKind::Invalid,
                        "PAYMENTS.CHARGES is not back at its baseline yet",
                    ),
                },
            }),
        );
        assert_eq!(
            app.message.as_deref(),
            Some("✗ run for INC-7 refused: PAYMENTS.CHARGES is not back at its baseline yet")
        );
        update(
            &mut app,
            Action::ReplyArrived(Reply {
                id: 1,
                outcome: Outcome::Accepted {
                    seq: Some(41),
                    events: vec![Event {
                        at: "2026-11-24T14:20:00Z".parse().unwrap(),
                        kind: EventKind::Decision {
                            proposal: "P-1".into(),
                            verdict: Verdict::Approved,
                            actor: "alice".into(),
                            seq: 41,
                        },
                    }],
                },
            }),
        );
        assert_eq!(app.message.as_deref(), Some("P-1 approved (chain #41)"));
        assert!(app.link.pending.is_empty());
    }

    #[test]
    fn a_snapshot_notice_is_never_taken_for_our_answer() {
        let mut app = app();
        update(&mut app, Action::Open);
        update(&mut app, Action::QueueRun);
        outgoing(&mut app);
        let mut other = app.snapshot.clone();
        other.notices.push("refused: someone else's request".into());
        update(&mut app, Action::SnapshotArrived(Box::new(other)));
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .contains("the engine will confirm"));
        assert_eq!(app.link.pending.len(), 1);
    }

    #[test]
    fn presence_follows_the_selection_and_the_reason_modal() {
        let mut app = app();
        let first = outgoing(&mut app);
        assert_eq!(
            first,
            [ClientMessage::Presence {
                viewing: Some("INC-7".into()),
                deciding: None
            }]
        );
        assert!(outgoing(&mut app).is_empty(), "sent only when it changes");
        update(&mut app, Action::Open);
        update(&mut app, Action::Down);
        update(&mut app, Action::Approve);
        assert_eq!(
            outgoing(&mut app),
            [ClientMessage::Presence {
                viewing: Some("INC-7".into()),
                deciding: Some("P-2".into())
            }]
        );
        update(&mut app, Action::Back);
        assert_eq!(
            outgoing(&mut app),
            [ClientMessage::Presence {
                viewing: Some("INC-7".into()),
                deciding: None
            }]
        );
    }

    #[test]
    fn the_hello_names_us_and_an_observer_loses_the_deciding_keys() {
        let mut app = app();
        update(
            &mut app,
            Action::Hello {
                started_at: "2026-11-24T03:12:00Z".parse().unwrap(),
                you: "bob (uid 1002)".into(),
                read_only: true,
            },
        );
        assert_eq!(app.link.you.as_deref(), Some("bob (uid 1002)"));
        assert!(app.read_only);
        update(&mut app, Action::Open);
        update(&mut app, Action::Approve);
        assert!(app.outbox.is_empty());
    }

    #[test]
    fn a_lost_connection_says_so_then_a_new_engine_is_named_on_reconnect() {
        let mut app = app();
        let hello = |at: &str| Action::Hello {
            started_at: at.parse().unwrap(),
            you: "alice (uid 1001)".into(),
            read_only: false,
        };
        update(&mut app, hello("2026-11-24T03:00:00Z"));
        outgoing(&mut app);
        update(&mut app, Action::Open);
        update(&mut app, Action::QueueRun);
        outgoing(&mut app);
        update(
            &mut app,
            Action::ConnectionLost("the engine went away".into()),
        );
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .contains("no answer to run for INC-7"));
        // Nothing is sent into a dead connection.
        update(&mut app, Action::QueueRun);
        assert!(requests(&outgoing(&mut app)).is_empty());
        assert!(app.message.as_deref().unwrap().contains("nothing was sent"));
        update(&mut app, hello("2026-11-24T03:12:00Z"));
        let restarted = app.message.clone().unwrap();
        assert!(
            restarted.starts_with("engine restarted at ") && restarted.ends_with(", reconnected"),
            "{restarted}"
        );
        assert!(app.link.lost.is_none());
        // The new engine is told what we look at.
        assert!(matches!(
            outgoing(&mut app).as_slice(),
            [ClientMessage::Presence { .. }]
        ));
    }
}
