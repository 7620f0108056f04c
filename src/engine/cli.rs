//! The commands for scripts and for people without a console: listings, and decisions
//! sent to the running engine as the attested caller. Exit codes: 0 accepted, 1 refused
//! (the reason is printed), 2 no engine or bad input (returned as an error, which main
//! prints).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::api::{Command, Event, EventKind, IncidentStatus, IncidentView, Outcome};
use super::client::Client;
use crate::sanitize::{for_terminal, for_terminal_multiline};

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

/// `dataward show INCIDENT [--json]`: one incident whole.
pub fn show(data_dir: &Path, id: &str, json: bool) -> Result<ExitCode> {
    let (incidents, live) = incidents(data_dir)?;
    let incident = incidents
        .iter()
        .find(|i| i.id.eq_ignore_ascii_case(id))
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
        for_terminal(&i.opened_at)
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
pub fn decide(data_dir: &Path, command: Command) -> Result<ExitCode> {
    let mut client = Client::connect(data_dir, false)?.with_context(|| {
        format!(
            "no engine is running on {}; start one with `dataward serve --config FILE --data-dir {}` (or open `dataward`)",
            super::server::socket_path(data_dir).display(),
            data_dir.display()
        )
    })?;
    match client.request(command)? {
        Outcome::Accepted { seq, events } => {
            let lines = confirmations(&events);
            if lines.is_empty() {
                println!(
                    "accepted{}",
                    seq.map(|s| format!(" (chain #{s})")).unwrap_or_default()
                );
            }
            for line in lines {
                println!("{}", for_terminal(&line));
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
            EventKind::Reopened { incident, seq } => {
                Some(format!("{incident} reopened (chain #{seq})"))
            }
            EventKind::LevelAccepted {
                monitor,
                since,
                ratio,
                seq,
                ..
            } => Some(format!(
                "{monitor}: new level accepted, {ratio:.2}x the old baseline since {since} (chain #{seq})"
            )),
            _ => None,
        })
        .collect()
}
