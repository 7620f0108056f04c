//! Copy over SSH: `y` (or `:copy id|hash|command|sql`) puts an incident id, a content
//! hash, a backfill's command or a diff's SQL on the clipboard of the terminal the
//! person sits at, wherever the console runs, with the OSC 52 escape. The text goes
//! base64-encoded, so nothing in it can reach the terminal as a control sequence.
//! tmux passes it on with `set -g set-clipboard on`.

use std::io::{self, Write};

use crate::console::screens::detail::Pane;
use crate::console::screens::list::ListPane;
use crate::console::state::{App, Screen};
use crate::engine::api::ProposalBody;

/// What `:copy` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Id,
    Hash,
    Command,
    Sql,
}

impl Target {
    pub const NAMES: [&'static str; 4] = ["id", "hash", "command", "sql"];

    pub fn named(name: &str) -> Option<Target> {
        match name.to_lowercase().as_str() {
            "id" => Some(Target::Id),
            "hash" => Some(Target::Hash),
            "command" | "cmd" => Some(Target::Command),
            "sql" => Some(Target::Sql),
            _ => None,
        }
    }
}

/// What `y` copies where the person is: the incident's id on the list and beside the
/// cause, the monitor's name in the monitors pane, the node's name in the blast radius,
/// the proposal's content hash in the proposals, and in the body what it holds (the
/// SQL, the command, the plan, the note); with the timeline open, the timeline as
/// Markdown. `Err` says why there is nothing.
pub fn what_shows(app: &App) -> Result<(String, &'static str), String> {
    match app.screen {
        Screen::List if app.list.pane == ListPane::Monitors => app
            .list
            .monitors
            .order
            .get(app.list.monitors.selected)
            .and_then(|at| app.snapshot.monitors.get(*at))
            .map(|monitor| (monitor.name.clone(), "monitor's name"))
            .ok_or_else(|| "no monitor selected".to_string()),
        Screen::List => app
            .selected_incident
            .clone()
            .map(|id| (id, "incident id"))
            .ok_or_else(|| "no incident selected".to_string()),
        Screen::Detail => {
            let Some(detail) = &app.detail else {
                return Err("no incident open".into());
            };
            if let (true, Some(incident)) = (detail.timeline_open, app.open_incident()) {
                let markdown = crate::console::timeline::markdown(incident);
                return Ok((markdown, "timeline as Markdown"));
            }
            match detail.focus {
                Pane::Cause => target(app, Target::Id),
                Pane::Tree => detail
                    .tree
                    .selected
                    .last()
                    .and_then(|id| {
                        let incident = app.open_incident()?;
                        incident.blast.iter().find(|node| &node.id == id)
                    })
                    .map(|node| (node.name.clone(), "node name"))
                    .ok_or_else(|| "no node selected".to_string()),
                Pane::Proposals => target(app, Target::Hash),
                Pane::Body => match &app.selected_proposal().map(|p| &p.body) {
                    Some(ProposalBody::Diff { .. }) => target(app, Target::Sql),
                    Some(ProposalBody::Backfill { .. }) => target(app, Target::Command),
                    Some(ProposalBody::Hold { plan, .. }) => Ok((plan.clone(), "plan")),
                    Some(ProposalBody::Note { text, .. }) => Ok((text.clone(), "note")),
                    None => Err("no proposal selected".into()),
                },
            }
        }
    }
}

/// One thing by name: the incident's id (open, or selected on the list), the selected
/// proposal's content hash, its backfill command, its diff's new SQL.
pub fn target(app: &App, target: Target) -> Result<(String, &'static str), String> {
    let proposal = app.selected_proposal();
    match target {
        Target::Id => app
            .open_incident()
            .map(|incident| incident.id.clone())
            .or_else(|| app.selected_incident.clone())
            .map(|id| (id, "incident id"))
            .ok_or_else(|| "no incident selected".into()),
        Target::Hash => proposal
            .map(|p| (p.content_hash.clone(), "content hash"))
            .ok_or_else(|| "open an incident and select a proposal first".into()),
        Target::Command => match proposal.map(|p| &p.body) {
            Some(ProposalBody::Backfill { command, .. }) => Ok((command.clone(), "command")),
            _ => Err("the selected proposal runs no command (a backfill does)".into()),
        },
        Target::Sql => match proposal.map(|p| &p.body) {
            Some(ProposalBody::Diff { new, .. }) => Ok((new.clone(), "SQL")),
            _ => Err("the selected proposal has no SQL (a diff does)".into()),
        },
    }
}

/// The escape that sets the clipboard to `text`.
pub fn osc52(text: &str) -> String {
    format!("\u{1b}]52;c;{}\u{7}", base64(text.as_bytes()))
}

/// Writes the escape to the terminal the console draws on.
pub fn send(text: &str) -> io::Result<()> {
    let mut out = io::stdout();
    out.write_all(osc52(text).as_bytes())?;
    out.flush()
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_the_rfc_has_it() {
        for (text, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(text.as_bytes()), encoded, "{text}");
        }
        // Control characters travel encoded, never raw.
        let escape = osc52("INC-1\u{1b}]0;pwned\u{7}");
        assert_eq!(escape.matches('\u{1b}').count(), 1);
        assert!(escape.starts_with("\u{1b}]52;c;") && escape.ends_with('\u{7}'));
    }
}
