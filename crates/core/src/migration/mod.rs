//! Migrations in gated waves (`[[migration]]`): for each wave, parity between the old
//! and new side of every table (`parity`), and a completion gate that stays closed
//! until parity holds and one of the domain's owners has signed off on those very
//! parity results. The sign-off is bound to the parity's hash, so a reading with any
//! figure changed since leaves the wave unsigned again.

pub mod parity;
pub mod repoint;

use serde::{Deserialize, Serialize};

use crate::approve::request::HashMismatch;
use crate::clock::Timestamp;
use parity::WaveParity;

/// An owner's sign-off of a wave, on the parity results with `parity_hash`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignOff {
    pub by: String,
    pub parity_hash: String,
    pub at: Timestamp,
}

/// Whether a wave is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Parity holds and an owner signed off on it.
    Open { signed_by: String },
    /// Why not yet, each reason a line.
    Closed { why: Vec<String> },
}

/// The gate of a wave given its latest parity reading (None: not read yet) and the
/// sign-off recorded, if any.
pub fn gate(parity: Option<&WaveParity>, sign_off: Option<&SignOff>) -> Gate {
    let Some(parity) = parity else {
        return Gate::Closed {
            why: vec!["parity has not been read yet".to_string()],
        };
    };
    let mut why = parity.failures();
    match sign_off {
        Some(s) if s.parity_hash == parity.hash && why.is_empty() => {
            return Gate::Open {
                signed_by: s.by.clone(),
            }
        }
        Some(s) if s.parity_hash != parity.hash => why.push(format!(
            "{} signed off on parity {}, and it reads {} now: sign off again",
            s.by, s.parity_hash, parity.hash
        )),
        _ => why.push("no owner has signed off".to_string()),
    }
    Gate::Closed { why }
}

/// May a wave be signed off on the parity hash `seen`? Only on the whole current hash,
/// and only when parity holds: an owner cannot sign a failing wave through.
pub fn may_sign_off(parity: Option<&WaveParity>, seen: &str) -> Result<(), String> {
    let Some(parity) = parity else {
        return Err("parity has not been read yet: nothing to sign off on".to_string());
    };
    if let Some(mismatch) = HashMismatch::of(&parity.hash, seen) {
        return Err(format!("parity of wave {}: {mismatch}", parity.wave));
    }
    if !parity.holds() {
        return Err(format!(
            "parity of wave {} fails, so it cannot be signed off: {}",
            parity.wave,
            parity.failures().join("; ")
        ));
    }
    Ok(())
}
