//! `dataward migration [NAME]`: the waves of the `[[migration]]` plans, as the engine
//! serving the data directory last read them: each table's two sides, what differs,
//! the parity hash, and the gate. An owner signs a wave off with `dataward approve
//! MIG-<migration>-<wave> --hash HASH`. Exit 0 when every wave shown is open, 1 when a
//! gate is closed (a script can wait on a wave), 2 for an unknown name or no engine.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::Value;

use crate::sanitize::for_terminal;

#[derive(Debug, Clone, clap::Args)]
pub struct MigrationArgs {
    /// One migration by name (default: every one).
    pub name: Option<String>,
    /// Print the engine's answer as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: MigrationArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let mut engine =
        crate::engine::client::Client::connect(data_dir, true)?.with_context(|| {
            format!(
                "no engine serves {}: start `dataward serve`",
                data_dir.display()
            )
        })?;
    let answer = engine
        .ask(crate::engine::api::Question::Migration {
            name: args.name.clone(),
        })?
        .map_err(|reason| anyhow::anyhow!("{reason}"))?;
    let waves = answer["waves"].as_array().cloned().unwrap_or_default();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", render(&waves));
    }
    let all_open = waves.iter().all(|w| w["gate"].get("open").is_some());
    Ok(if all_open {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The waves as a person reads them.
pub fn render(waves: &[Value]) -> String {
    let text = |v: &Value| for_terminal(v.as_str().unwrap_or("?")).into_owned();
    let mut out = String::new();
    if waves.is_empty() {
        out.push_str("no [[migration]] in the config\n");
    }
    for wave in waves {
        let gate = match wave["gate"].get("open") {
            Some(open) => format!("open (signed off by {})", text(&open["signed_by"])),
            None => "closed".to_string(),
        };
        let _ = writeln!(out, "{}  gate {gate}", text(&wave["id"]));
        let tables = wave["parity"]["tables"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (old, new) in (wave["tables"].as_array().into_iter().flatten())
            .filter_map(|t| Some((t.get(0)?, t.get(1)?)))
        {
            let _ = write!(out, "  {} → {}", text(old), text(new));
            let Some(read) = tables.iter().find(|t| t["old"]["table"] == *old) else {
                out.push_str("  (not read yet)\n");
                continue;
            };
            let side = |s: &Value| {
                format!(
                    "{} rows, {} columns, {} days",
                    s["rows"],
                    s["columns"].as_array().map_or(0, Vec::len),
                    s["days"].as_array().map_or(0, Vec::len)
                )
            };
            let _ = writeln!(
                out,
                "\n    old: {}\n    new: {}",
                side(&read["old"]),
                side(&read["new"])
            );
            let differences = read["differences"].as_array().cloned().unwrap_or_default();
            if differences.is_empty() {
                out.push_str("    parity holds\n");
            }
            for difference in &differences {
                let _ = writeln!(out, "    differs: {}", text(difference));
            }
        }
        for pair in wave["readers"].as_array().into_iter().flatten() {
            for reader in pair[1].as_array().into_iter().flatten() {
                let how = match reader["repointed"].as_bool() {
                    Some(true) => "repointed by a diff",
                    _ => "its owner moves it",
                };
                let _ = writeln!(
                    out,
                    "  still reads {}: {} ({}; {how})",
                    text(&pair[0]),
                    text(&reader["unique_id"]),
                    text(&reader["kind"])
                );
            }
        }
        for proposal in wave["proposals"].as_array().into_iter().flatten() {
            let state = text(&proposal["state"]).replace('_', " ");
            let _ = writeln!(
                out,
                "  repoint {} {} ({state}; rollback: the same file put back; --json has both)",
                text(&proposal["id"]),
                text(&proposal["repoint"]["file"]),
            );
            if state == "pending" {
                let _ = writeln!(
                    out,
                    "    approve: dataward approve {} --hash {}",
                    text(&proposal["id"]),
                    text(&proposal["content_hash"])
                );
            }
        }
        for why in wave["unreadable"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "  not read: {}", text(why));
        }
        if let Some(hash) = wave["parity"]["hash"].as_str() {
            let _ = writeln!(out, "  parity hash {hash}");
        }
        for why in wave["gate"]["closed"]["why"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let _ = writeln!(out, "  closed: {}", text(why));
        }
        if wave["gate"].get("open").is_none()
            && wave["gate"]["closed"]["why"][0] == "no owner has signed off"
        {
            let _ = writeln!(
                out,
                "  sign off: dataward approve {} --hash {}",
                text(&wave["id"]),
                text(&wave["parity"]["hash"])
            );
        }
    }
    out
}
