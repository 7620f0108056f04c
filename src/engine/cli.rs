//! The commands for scripts and for people without a console: listings, and decisions
//! sent to the running engine as the attested caller. Exit codes: 0 accepted, 1 refused
//! (the reason is printed), 2 no engine or bad input (returned as an error, which main
//! prints).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::api::{Command, Event, EventKind, IncidentStatus, IncidentView, Outcome};
use super::client::Client;
use super::what_happened::{state_place, what_happened, SentTo};
use crate::sanitize::{for_terminal, for_terminal_multiline};
use crate::store::place::StatePlace;

/// The engine's incidents: from the running engine, or read from the state database
/// when none runs.
fn incidents(data_dir: &Path) -> Result<(Vec<IncidentView>, bool)> {
    if let Some(mut client) = Client::connect(data_dir, true)? {
        return Ok((client.snapshot()?.incidents, true));
    }
    let path = data_dir.join("dataward.db");
    anyhow::ensure!(path.exists(), "no state database at {}", path.display());
    let conn = crate::store::open_read_only(&path)?;
    Ok((super::stored_incidents(&conn)?, false))
}

/// `dataward incidents [--json] [--all]`: what is open (with `--all`, resolved too).
pub fn list(data_dir: &Path, json: bool, all: bool) -> Result<ExitCode> {
    let (incidents, _) = incidents(data_dir)?;
    let shown: Vec<&IncidentView> = incidents
        .iter()
        .filter(|i| all || i.status != IncidentStatus::Resolved)
        .collect();
    if json {
        for incident in &shown {
            println!("{}", crate::sanitize::json(incident, false)?);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if shown.is_empty() {
        println!("no {}incidents", if all { "" } else { "open " });
    }
    for i in shown {
        println!(
            "{:<10} {:<10} {:<24} {}",
            for_terminal(&i.id),
            status_word(i.status),
            for_terminal(&i.table),
            for_terminal(&i.title)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn status_word(status: IncidentStatus) -> &'static str {
    match status {
        IncidentStatus::Open => "open",
        IncidentStatus::Verifying => "verifying",
        IncidentStatus::Resolved => "resolved",
    }
}

/// One incident whole: from the running engine, which sends its timeline and receipt
/// when asked (they are not in its snapshot), or read from the state database.
fn one_incident(data_dir: &Path, id: &str) -> Result<(Option<IncidentView>, bool)> {
    if let Some(mut client) = Client::connect(data_dir, true)? {
        let snapshot = client.snapshot()?;
        let Some(found) = snapshot
            .incidents
            .iter()
            .find(|i| i.id.eq_ignore_ascii_case(id))
        else {
            return Ok((None, true));
        };
        return Ok((client.incident(&found.id)?, true));
    }
    let (incidents, live) = incidents(data_dir)?;
    let found = incidents
        .into_iter()
        .find(|i| i.id.eq_ignore_ascii_case(id));
    Ok((found, live))
}

/// `dataward show INCIDENT [--json]`: one incident whole.
pub fn show(data_dir: &Path, id: &str, json: bool) -> Result<ExitCode> {
    anyhow::ensure!(
        !crate::incident::access_receipt::is_access_request(id),
        "{} is an access request: `dataward receipt {}` shows it, as the chain holds it",
        for_terminal(id),
        for_terminal(id)
    );
    let (incident, live) = one_incident(data_dir, id)?;
    let incident = incident
        .as_ref()
        .with_context(|| format!("no incident {id} in {}", data_dir.display()))?;
    if json {
        println!("{}", crate::sanitize::json(incident, true)?);
        return Ok(ExitCode::SUCCESS);
    }
    let i = incident;
    println!(
        "{} {} {}  opened {}",
        for_terminal(&i.id),
        status_word(i.status),
        for_terminal(&i.title),
        i.opened_at
    );
    println!(
        "observed {}, expected {}",
        for_terminal(&i.observed),
        for_terminal(&i.expected)
    );
    if let Some(cause) = &i.cause {
        println!("\ncause: {}", for_terminal(cause));
    }
    for line in &i.evidence {
        println!("  - {}", for_terminal(line));
    }
    if !i.blast.is_empty() {
        println!("\nblast radius:");
        for node in &i.blast {
            println!(
                "  {}{} ({}){}",
                "  ".repeat(node.depth.saturating_sub(1) as usize),
                for_terminal(&node.name),
                for_terminal(&node.kind),
                node.finding
                    .as_deref()
                    .map(|f| format!(": {}", for_terminal(f)))
                    .unwrap_or_default()
            );
        }
    }
    if !i.proposals.is_empty() {
        println!("\nproposals:");
    }
    for p in &i.proposals {
        let state = serde_json::to_value(p.state)?;
        println!(
            "  {} {:?} {}: {}",
            for_terminal(&p.id),
            p.kind,
            state.as_str().unwrap_or_default(),
            for_terminal(&p.title)
        );
        println!("    hash {}", for_terminal(&p.content_hash));
        println!(
            "    may decide: {}{}",
            for_terminal(&p.deciders.join(", ")),
            if live {
                ""
            } else {
                " (no engine running: escalation targets not shown)"
            }
        );
        println!("    undo: {}", for_terminal(&p.undo));
        println!("    verify: {}", for_terminal(&p.verify));
        if let super::api::ProposalBody::Note { text, .. } = &p.body {
            println!("{}", for_terminal_multiline(text));
        }
    }
    if let Some(status) = &i.run_status {
        println!("\nrun: {status}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Sends one decision to the engine serving `data_dir` and reports what came of it.
/// `config` names the state (`[state] url_env`) for when the engine dies mid-request.
pub fn decide(data_dir: &Path, config: Option<&Path>, command: Command) -> Result<ExitCode> {
    let client = connect_to_decide(data_dir)?.with_context(|| {
        format!(
            "no engine is running on {}; start one with `dataward serve --config FILE --data-dir {}` (or open `dataward`)",
            super::server::socket_path(data_dir).display(),
            data_dir.display()
        )
    })?;
    report(&send_decision(client, data_dir, config, command)?)
}

/// Attaches to decide; a connection that fails before the request is sent says that
/// nothing was decided.
fn connect_to_decide(data_dir: &Path) -> Result<Option<Client>> {
    Client::connect(data_dir, false).context("nothing was sent, so nothing was decided")
}

/// Sends `command` under a request id of its own and returns the engine's answer. If
/// the connection is lost before the answer (the engine died mid-request), learns what
/// came of that id (`what_happened`): the answer is what the state holds.
fn send_decision(
    mut client: Client,
    data_dir: &Path,
    config: Option<&Path>,
    command: Command,
) -> Result<Outcome> {
    let request = super::client::new_request_id()?;
    // The engine's process, as the kernel attests it: the lease names its holder so.
    let engine_pid = client
        .stream()
        .and_then(|stream| super::server::peer_credentials(&stream))
        .ok()
        .map(|(_, pid)| pid);
    match client.request_as(command, Some(request.clone())) {
        Ok(outcome) => Ok(outcome),
        Err(lost) => {
            eprintln!(
                "dataward: the connection to the engine was lost before its answer ({lost:#}); \
                 asking what came of request {request}"
            );
            let sent = SentTo {
                data_dir,
                config,
                engine_pid,
            };
            let outcome = what_happened(&sent, &request)?;
            if let Outcome::Accepted { seq: Some(seq), .. } = &outcome {
                println!("request {request}: recorded as #{seq}");
            }
            Ok(outcome)
        }
    }
}

/// Prints an engine's answer: accepted exits 0, refused 1.
fn report(outcome: &Outcome) -> Result<ExitCode> {
    match outcome {
        Outcome::Accepted { seq, events } => {
            let lines = confirmations(events);
            if lines.is_empty() {
                println!(
                    "accepted{}",
                    seq.map(|s| format!(" (chain #{s})")).unwrap_or_default()
                );
            }
            for line in lines {
                // An access request's statements come one a line.
                for part in line.lines() {
                    println!("{}", for_terminal(part));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Outcome::Refused { reason } => {
            let kind = serde_json::to_value(reason.kind)?;
            println!(
                "refused ({}): {}",
                kind.as_str().unwrap_or_default(),
                for_terminal(&reason.message)
            );
            Ok(ExitCode::from(1))
        }
    }
}

/// `dataward stop --reason WHY` and `dataward stop --lift`: sent to the engine as the
/// attested caller like every decision, then the stop as it stands is shown (exit 1
/// while it is set). With no engine serving, written directly to the state database
/// as this account under the engine's lock (so no engine starts beside the write), and
/// said so.
pub fn stop(
    data_dir: &Path,
    config: Option<&Path>,
    reason: Option<&str>,
    lift: bool,
) -> Result<ExitCode> {
    use crate::cli::chain::StopHere;
    let command = match (reason, lift) {
        (Some(_), true) => anyhow::bail!("--reason sets a stop and --lift lifts one: pick one"),
        (Some(reason), false) => {
            anyhow::ensure!(!reason.trim().is_empty(), "--reason must say why");
            Command::OrgStop {
                reason: reason.to_string(),
            }
        }
        (None, true) => Command::LiftStop,
        (None, false) => return crate::cli::chain::stop(data_dir, StopHere::Show),
    };
    // With no engine answering, this command is the state database's one writer, under
    // the engine's lock. An engine that holds the lock but does not answer yet is
    // starting: it is asked again for a few seconds, then the stop is refused with
    // nothing recorded, rather than written beside it.
    let deadline = std::time::Instant::now() + ENGINE_STARTING;
    loop {
        if let Some(client) = connect_to_decide(data_dir)? {
            let outcome = send_decision(client, data_dir, config, command)?;
            let reported = report(&outcome)?;
            return match outcome {
                Outcome::Refused { .. } => Ok(reported),
                Outcome::Accepted { .. } => crate::cli::chain::stop(data_dir, StopHere::Show),
            };
        }
        match crate::store::EngineLock::try_acquire(data_dir)? {
            Ok(_) if !matches!(state_place(data_dir, config), Ok(StatePlace::File(_))) => {
                // A team's state is written only by its leading engine, under its term.
                let place = state_place(data_dir, config)
                    .map(|place| place.describe())
                    .unwrap_or_else(|e| format!("{e:#}"));
                anyhow::bail!(
                    "no engine serves {} and its state is a team's ({place}): only the \
                     engine leading the team records a stop; run `dataward stop` on the host \
                     that leads (`dataward doctor` names it). Nothing was recorded",
                    data_dir.display()
                )
            }
            Ok(lock) => {
                println!(
                    "no engine is serving {}: recording this directly in its state database as {}",
                    data_dir.display(),
                    crate::approve::Actor::current().display()
                );
                let what = match &command {
                    Command::OrgStop { reason } => StopHere::Set(&lock, reason),
                    _ => StopHere::Lift(&lock),
                };
                return crate::cli::chain::stop(data_dir, what);
            }
            Err(engine) if std::time::Instant::now() >= deadline => anyhow::bail!(
                "an engine ({engine}) holds {} but does not answer on its socket (still \
                 starting, or stuck); nothing was recorded: run the stop again, or stop that \
                 engine",
                data_dir.display()
            ),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

/// How long `dataward stop` waits for an engine that holds the data directory but does
/// not answer yet (starting up) before refusing.
const ENGINE_STARTING: std::time::Duration = std::time::Duration::from_secs(5);

/// What a person reads after a decision: each thing it did, with its chain record.
pub fn confirmations(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::Decision {
                proposal,
                verdict,
                seq,
                ..
            } => Some(format!(
                "{proposal} {} (chain #{seq})",
                serde_json::to_value(verdict)
                    .map(|v| v.as_str().unwrap_or_default().replace('_', " "))
                    .unwrap_or_default()
            )),
            EventKind::Run {
                job, status, seq, ..
            } => Some(format!("run of {job} {status} (chain #{seq})")),
            EventKind::Undo { action, seq, .. } => Some(format!("{action} (chain #{seq})")),
            EventKind::NoteSent {
                proposal,
                to,
                destinations,
                nowhere,
            } => Some(match nowhere {
                Some(why) => format!("{proposal} went nowhere: {why}"),
                None => format!("{proposal} sent to {to} through {}", destinations.join(", ")),
            }),
            EventKind::OrgStop {
                action, actor, seq, ..
            } => Some(format!("org-wide stop {action} by {actor} (chain #{seq})")),
            EventKind::IncidentResolved { incident } => Some(format!("{incident} resolved")),
            // The chain record on the first line: the statements below it stay as
            // the owner runs them, one a line.
            EventKind::Access { text, seq, .. } => Some(match text.split_once('\n') {
                Some((first, statements)) => format!("{first} (chain #{seq})\n{statements}"),
                None => format!("{text} (chain #{seq})"),
            }),
            EventKind::Reopened { incident, seq } => {
                Some(format!("{incident} reopened (chain #{seq})"))
            }
            EventKind::LevelAccepted {
                monitor,
                since,
                ratio,
                seq,
                ..
            } => Some(if *ratio > 0.0 {
                format!(
                    "{monitor}: new level accepted, {ratio:.2}x the old baseline since {since} (chain #{seq})"
                )
            } else {
                // A ratio of 0 stands for an old baseline of zero (rows, nulls).
                format!(
                    "{monitor}: new level accepted where the old baseline was zero, since {since} (chain #{seq})"
                )
            }),
            EventKind::ClosedExpected { incident, seq } => Some(format!(
                "{incident} closed as expected; its breach left the baselines (chain #{seq})"
            )),
            EventKind::Snoozed {
                monitor,
                until,
                seq,
            } => Some(format!(
                "{monitor} snoozed until {until}: its breaches are recorded, nobody is paged (chain #{seq})"
            )),
            _ => None,
        })
        .collect()
}
