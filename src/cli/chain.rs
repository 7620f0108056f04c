//! `dataward verify`, `dataward receipt` and `dataward stop`: the trust commands, as
//! functions main.rs calls. Exit codes: 0 ok, 1 the check found a problem, 2 bad input
//! (returned as an error, which main prints).

use std::path::Path;
use std::process::ExitCode;

use crate::store::Connection;
use anyhow::{Context, Result};

use crate::approve::{stop, Actor};
use crate::chain::{self, VerifyReport};
use crate::engine::api::Question;
use crate::engine::client::Client;
use crate::incident::receipt;
use crate::sanitize::{for_terminal, Sanitized};

/// Opens the state database read-only; it must exist: verifying an empty new one would
/// say "ok" about nothing, and a reading command never creates one.
fn open_existing(data_dir: &Path) -> Result<Connection> {
    crate::store::open_read_only(&data_dir.join("dataward.db"))
}

fn exit(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The engine serving `data_dir`, attached read-only, when one does: the state files
/// are its account's alone, so the reading commands ask it. One that will not attach
/// us (a policy without observers) leaves the files to whoever may open them (its own
/// account); anyone else is told why the engine refused.
fn serving_engine(data_dir: &Path) -> Result<Option<Client>> {
    match Client::connect(data_dir, true) {
        Ok(client) => Ok(client),
        Err(refused) => match open_existing(data_dir) {
            Ok(_) => Ok(None),
            Err(_) => Err(refused),
        },
    }
}

/// Asks the engine; its report, or its reason for having none as an error.
fn ask(client: &mut Client, question: Question) -> Result<serde_json::Value> {
    client
        .ask(question)?
        .map_err(|reason| anyhow::anyhow!("{reason}"))
}

pub fn verify(data_dir: &Path, json: bool, saved_receipt: Option<&Path>) -> Result<ExitCode> {
    let saved_text = match saved_receipt {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read receipt {}", path.display()))?,
        ),
        None => None,
    };
    let (report, receipt_problem) = match serving_engine(data_dir)? {
        Some(mut engine) => {
            let mut answer = ask(
                &mut engine,
                Question::Verify {
                    saved_receipt: saved_text.clone(),
                },
            )
            .with_context(|| match saved_receipt {
                Some(path) => format!("{}", path.display()),
                None => "verify".to_string(),
            })?;
            let report: VerifyReport = serde_json::from_value(answer["report"].take())?;
            let problem: Option<String> = serde_json::from_value(answer["receipt_problem"].take())?;
            (report, problem)
        }
        None => {
            let conn = open_existing(data_dir)?;
            let report = chain::verify(&conn)?;
            let problem = match (saved_receipt, &saved_text) {
                (Some(path), Some(text)) => {
                    let saved: serde_json::Value = serde_json::from_str(text)
                        .with_context(|| format!("{}: not a JSON receipt", path.display()))?;
                    receipt::check_saved(&chain::records(&conn)?, &saved)
                        .with_context(|| format!("{}", path.display()))?
                }
                _ => None,
            };
            (report, problem)
        }
    };
    let ok = report.ok && receipt_problem.is_none();
    if json {
        let mut value = serde_json::to_value(&report)?;
        if saved_receipt.is_some() {
            value["ok"] = ok.into();
            value["receipt"] = match &receipt_problem {
                Some(problem) => serde_json::json!({"ok": false, "problem": problem}),
                None => serde_json::json!({"ok": true}),
            };
        }
        println!("{}", crate::sanitize::json(&value, false)?);
        return Ok(exit(ok));
    }
    // A log id, a hash or a receipt digest in these messages comes from the database.
    let report = Sanitized::new(report);
    match &report.first_bad {
        Some(bad) => println!(
            "chain BROKEN at record #{}: {} ({} records read)",
            bad.seq, bad.reason, report.records
        ),
        None => println!(
            "chain ok: {} records, head {}",
            report.records,
            report.head.as_deref().unwrap_or("(empty)")
        ),
    }
    if let Some(path) = saved_receipt {
        let path = path.display().to_string();
        let path = for_terminal(&path);
        match receipt_problem.as_deref().map(for_terminal) {
            Some(problem) => println!("receipt {path} ALTERED: {problem}"),
            None if report.ok => println!("receipt {path} matches the chain"),
            None => println!("receipt {path} cannot be trusted: the chain itself is broken"),
        }
    }
    Ok(exit(ok))
}

pub fn receipt(data_dir: &Path, incident: &str, json: bool) -> Result<ExitCode> {
    if let Some(mut engine) = serving_engine(data_dir)? {
        let answer = ask(
            &mut engine,
            Question::Receipt {
                incident: incident.to_string(),
            },
        )?;
        if json {
            println!("{}", crate::sanitize::json(&answer["receipt"], true)?);
        } else {
            let markdown = answer["markdown"].as_str().unwrap_or_default();
            print!("{}", crate::sanitize::for_terminal_multiline(markdown));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let conn = open_existing(data_dir)?;
    let (receipt, markdown) = receipt::build_any(&chain::records(&conn)?, incident)?;
    if json {
        println!("{}", crate::sanitize::json(&receipt, true)?);
    } else {
        print!("{markdown}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What `dataward stop` does here, with no engine to ask: shows the stop, or changes it
/// as the state database's one writer, under the engine's lock.
pub enum StopHere<'a> {
    Show,
    Set(&'a crate::store::EngineLock, &'a str),
    Lift(&'a crate::store::EngineLock),
}

/// `dataward stop --reason R`, `--lift`, or `--status`. Exit 1 while a stop is set, so
/// scripts can ask "may we dispatch?".
pub fn stop(data_dir: &Path, what: StopHere) -> Result<ExitCode> {
    let actor = Actor::current();
    let at = crate::clock::Clock::wall().timestamp();
    let state = match what {
        StopHere::Show => {
            // Showing the stop is a reading command: anyone the engine serving it lets
            // attach may ask (its state files are its own), or anyone who can read them.
            match serving_engine(data_dir)? {
                Some(mut engine) => serde_json::from_value(ask(&mut engine, Question::Stop)?)?,
                None => stop::state(&open_existing(data_dir)?)?,
            }
        }
        StopHere::Set(lock, _) | StopHere::Lift(lock) => {
            let conn = lock.open_state()?;
            // Never append to a chain that does not verify: the append would move the
            // checkpoint past the damage.
            let report = chain::verify(&conn)?;
            if let Some(bad) = &report.first_bad {
                println!(
                    "chain BROKEN at record #{}: {}; nothing was recorded",
                    bad.seq,
                    crate::sanitize::for_terminal(&bad.reason)
                );
                return Ok(ExitCode::from(1));
            }
            match what {
                StopHere::Set(_, reason) => {
                    anyhow::ensure!(!reason.trim().is_empty(), "--reason must say why");
                    chain::transact(&conn, |tx| stop::set(tx, &actor, reason, at))?
                }
                _ => chain::transact(&conn, |tx| stop::lift(tx, &actor, at))?,
            }
        }
    };
    let state = Sanitized::new(state);
    if state.active {
        println!(
            "org-wide stop SET since {} by {}{}{}",
            state.since.map(|at| at.to_string()).unwrap_or_default(),
            state.by.as_deref().unwrap_or(""),
            state.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default(),
            state
                .lift_requested_by
                .as_deref()
                .map(|w| format!("\nlift asked by {w}; a second, different person must run `dataward stop --lift`"))
                .unwrap_or_default()
        );
    } else {
        println!("no org-wide stop: dispatch is allowed");
    }
    Ok(exit(!state.active))
}
