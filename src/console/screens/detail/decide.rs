//! The detail's deciding keys: approve, reject and roll back the selected proposal;
//! close, reopen or accept a new level of the incident; forward a note; queue a run.
//! What the engine would refuse is said before the reason box opens
//! (`overlays/reason.rs`), and a read-only console refuses them all again here.

use crate::console::action::Action;
use crate::console::overlays::reason::{self, Decision};
use crate::console::state::App;
use crate::engine::api::{Command, IncidentStatus, ProposalKind, ProposalState, ProposalView};

/// What a deciding key does; false for any other action. These act wherever the
/// person is: away from the detail they say what to open first.
pub fn handle(app: &mut App, action: &Action) -> bool {
    let over_waves = crate::console::overlays::decide::is_open(app);
    match action {
        // Over the waves or the access requests, their selected thing.
        Action::Approve if over_waves => {
            crate::console::overlays::decide::start(app, Decision::Approve)
        }
        Action::Reject if over_waves => {
            crate::console::overlays::decide::start(app, Decision::Reject)
        }
        Action::RollBack if over_waves => {
            crate::console::overlays::decide::start(app, Decision::RollBack)
        }
        Action::Approve => start_decision(app, Decision::Approve),
        Action::Reject => start_decision(app, Decision::Reject),
        Action::RollBack => start_decision(app, Decision::RollBack),
        Action::Resolve => start_incident_decision(app, Decision::Resolve),
        Action::AcceptLevel => start_incident_decision(app, Decision::AcceptLevel),
        Action::Expected => start_incident_decision(app, Decision::Expected),
        // In the monitors pane, the selected monitor; elsewhere the open incident's.
        Action::Snooze if monitors_focused(app) => snooze_selected_monitor(app),
        Action::Snooze => start_incident_decision(app, Decision::Snooze),
        Action::Reopen => start_incident_decision(app, Decision::Reopen),
        Action::Forward => forward(app),
        Action::QueueRun => queue_run(app),
        _ => return false,
    }
    true
}

/// Dangerous keys are removed in read-only mode; this is the second lock on the door.
fn refuse_if_read_only(app: &mut App) -> bool {
    if app.read_only {
        app.message = Some("read-only console: decisions are disabled".into());
    }
    app.read_only
}

fn start_decision(app: &mut App, decision: Decision) {
    if refuse_if_read_only(app) {
        return;
    }
    let Some(proposal) = app.selected_proposal().cloned() else {
        app.message = Some("open an incident and select a proposal first".into());
        return;
    };
    if refuse_if_proposal_not_shown(app, &proposal.id) {
        return;
    }
    if let Some(why) = refused_up_front(app, &proposal, decision) {
        app.message = Some(why);
        return;
    }
    reason::open(
        app,
        decision,
        proposal.id,
        proposal.title,
        Some(proposal.content_hash),
    );
}

/// What the engine would refuse, known before anyone types a reason: a proposal
/// already decided (or not approved, for a roll back), a note (it is forwarded, not
/// decided), and a person the snapshot's deciders do not include. The engine checks
/// all of it again; without the policy at hand (`decider_accounts` absent) it alone
/// decides.
pub fn refused_up_front(app: &App, proposal: &ProposalView, decision: Decision) -> Option<String> {
    let id = &proposal.id;
    let state = crate::console::widgets::proposal_state(proposal.state, &app.theme).content;
    let state = state.split_once(' ').map_or(&*state, |(_, word)| word);
    if proposal.kind == ProposalKind::Note && decision != Decision::RollBack {
        return Some(format!(
            "{id} is a note: nobody approves or rejects it; f forwards it to its owner"
        ));
    }
    match (decision, proposal.state) {
        (Decision::Approve | Decision::Reject, ProposalState::Pending) => {}
        (Decision::Approve | Decision::Reject, _) => {
            return Some(format!("{id} is {state}: there is nothing left to decide"))
        }
        (Decision::RollBack, ProposalState::Approved) => {}
        (Decision::RollBack, _) => {
            return Some(format!(
                "{id} is {state}: only an approved proposal is rolled back"
            ))
        }
        _ => {}
    }
    let accounts = proposal.decider_accounts.as_ref()?;
    let me = crate::approve::account_in_display(app.link.you.as_deref()?)?;
    if accounts.iter().any(|account| account == me) {
        return None;
    }
    let roles = proposal.deciders.join(", ");
    Some(if accounts.is_empty() {
        format!("nobody may decide {id}: no one in the policy holds {roles}")
    } else {
        format!(
            "{me} may not decide {id}: {roles} decides it ({}); the engine would refuse",
            accounts.join(", ")
        )
    })
}

/// `C`, `O` and `N`: the same reason box, for the open incident. The engine decides whether
/// this person may; the console only keeps a key from asking what cannot be.
fn start_incident_decision(app: &mut App, decision: Decision) {
    if refuse_if_read_only(app) {
        return;
    }
    let Some(incident) = app.open_incident() else {
        app.message = Some("open an incident first".into());
        return;
    };
    let resolved = incident.status == IncidentStatus::Resolved;
    let (id, title) = (incident.id.clone(), incident.title.clone());
    let me = app
        .link
        .you
        .as_deref()
        .and_then(crate::approve::account_in_display);
    if let (Some(accounts), Some(me)) = (&incident.owner_accounts, me) {
        if !accounts.iter().any(|account| account == me) {
            app.message = Some(if accounts.is_empty() {
                format!(
                    "nobody may close or reopen {id} by hand: no domain in the policy covers {}",
                    incident.table
                )
            } else {
                format!(
                    "{me} may not close, reopen or accept a level of {id}: its table's owners do ({}); the engine would refuse",
                    accounts.join(", ")
                )
            });
            return;
        }
    }
    match decision {
        Decision::Resolve if resolved => {
            app.message = Some(format!("{id} is already resolved (O reopens it)"));
        }
        Decision::Reopen if !resolved => {
            app.message = Some(format!("{id} is not resolved (C closes it)"));
        }
        Decision::Expected if resolved => {
            app.message = Some(format!("{id} is resolved: O reopens it first"));
        }
        Decision::AcceptLevel if resolved => {
            app.message = Some(format!("{id} is resolved: there is no level to accept"));
        }
        _ => reason::open(app, decision, id, title, None),
    }
}

fn monitors_focused(app: &App) -> bool {
    app.screen == crate::console::state::Screen::List
        && app.list.pane == crate::console::screens::list::ListPane::Monitors
}

/// `Z` in the monitors pane: the reason box for a snooze of the selected monitor (the
/// engine decides whether this person owns its table).
fn snooze_selected_monitor(app: &mut App) {
    if refuse_if_read_only(app) {
        return;
    }
    let monitors = &app.list.monitors;
    let Some(monitor) = monitors
        .order
        .get(monitors.selected)
        .and_then(|&i| app.snapshot.monitors.get(i))
    else {
        app.message = Some("no monitor selected".into());
        return;
    };
    let (name, title) = (
        monitor.name.clone(),
        format!("{} of {}", monitor.check, monitor.table),
    );
    reason::open(app, Decision::Snooze, name, title, None);
}

/// A decision acts on the proposal the person sees selected: one the last frame left
/// out (a terminal too small, the receipt or the timeline over the panes) is refused.
fn refuse_if_proposal_not_shown(app: &mut App, id: &str) -> bool {
    let left_out = app.drawn.left_out(&app.drawn.proposal_shown);
    if left_out {
        app.message = Some(format!(
            "{id} is not on screen: close the receipt or timeline, or make the terminal larger"
        ));
    }
    left_out
}

fn forward(app: &mut App) {
    if refuse_if_read_only(app) {
        return;
    }
    match app.selected_proposal() {
        Some(proposal) if proposal.kind == ProposalKind::Note => {
            let id = proposal.id.clone();
            if refuse_if_proposal_not_shown(app, &id) {
                return;
            }
            app.message = Some(format!("forward {id} sent; the engine will confirm"));
            app.outbox.push(Command::Forward { proposal: id });
        }
        Some(_) => app.message = Some("only a note proposal can be forwarded".into()),
        None => app.message = Some("open an incident and select a note proposal first".into()),
    }
}

pub fn queue_run(app: &mut App) {
    if refuse_if_read_only(app) {
        return;
    }
    let Some(incident) = app.open_incident().map(|incident| incident.id.clone()) else {
        app.message = Some("open an incident first".into());
        return;
    };
    app.message = Some(format!(
        "run queued for {incident}; the engine will confirm"
    ));
    app.outbox.push(Command::QueueRun { incident });
}
