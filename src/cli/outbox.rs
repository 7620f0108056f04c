//! `dataward outbox [--json]`: the alert outbox per destination, read from the state
//! database without writing to it: what is pending, when it is next tried, the last
//! error, the dedup key, then the rows. Exit 1 when an alert was given up (an API
//! refused it for good), else 0.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::engine::api::{DestinationView, Timestamp};
use crate::notify::outbox::{self, FAILED, PENDING};
use crate::sanitize::{for_terminal, Sanitized};

pub fn run(data_dir: &Path, json: bool) -> Result<ExitCode> {
    let path = data_dir.join("dataward.db");
    let conn = crate::store::open_read_only(&path)?;
    let destinations: Vec<DestinationView> = outbox::view(&conn, outbox::now_ms(), &[])?
        .into_iter()
        .map(DestinationView::from)
        .collect();
    let failed = destinations.iter().any(|d| d.failed > 0);
    if json {
        for d in &destinations {
            println!("{}", crate::sanitize::json(d, false)?);
        }
    } else {
        print!("{}", text(&Sanitized::new(destinations)));
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The outbox for a person (every string already cleaned).
pub fn text(destinations: &Sanitized<Vec<DestinationView>>) -> String {
    if destinations.is_empty() {
        return "the outbox is empty: no alert was ever queued\n".to_string();
    }
    let mut out = String::new();
    for d in destinations.iter() {
        out.push_str(&format!(
            "{} ({}): {} pending, {} failed, {} delivered",
            d.destination, d.kind, d.pending, d.failed, d.delivered
        ));
        if let (Some(secs), Some(at)) = (d.next_attempt_in_secs, &d.next_attempt_at) {
            out.push_str(&format!("; next try in {} ({at})", countdown(secs)));
        }
        out.push('\n');
        if let Some(key) = &d.dedup_key {
            out.push_str(&format!("  dedup key: {key}\n"));
        }
        if let Some(error) = &d.last_error {
            out.push_str(&format!("  last error: {error}\n"));
        }
        for r in &d.rows {
            let when = match r.status.as_str() {
                PENDING => match r.next_attempt_at {
                    Some(at) => format!("next {at}"),
                    None => "next now".to_string(),
                },
                FAILED => format!("gave up {}", text_of(r.delivered_at)),
                _ => format!("delivered {}", text_of(r.delivered_at)),
            };
            out.push_str(&format!(
                "  #{:<5} {:<10} {:<8} {:<15} {:<9} {} {}, {}\n",
                r.id,
                r.incident,
                r.action,
                r.occasion,
                r.status,
                r.attempts,
                if r.attempts == 1 { "try" } else { "tries" },
                when
            ));
            if r.status != "delivered" || r.last_error.is_some() {
                if let Some(error) = &r.last_error {
                    out.push_str(&format!("          {}\n", for_terminal(error)));
                }
            }
        }
    }
    out
}

fn countdown(secs: i64) -> String {
    match secs {
        0 => "0s (due)".to_string(),
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// A time as this listing prints it; nothing when there is none.
fn text_of(at: Option<Timestamp>) -> String {
    at.map(|at| at.to_string()).unwrap_or_default()
}
