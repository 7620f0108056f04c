//! The org-wide stop: one switch that halts all dispatch by dataward at once. Its state
//! lives on the chain, so every process sees the same switch, and the dispatch
//! transaction reads it (`chain::append_checked`), so a stop set between approval and
//! run wins. Lifting it takes two different people.

use anyhow::{bail, Result};
use rusqlite::Connection;
use serde::Serialize;
use serde_json::{json, Value};

use super::Actor;
use crate::chain;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StopState {
    pub active: bool,
    /// When and by whom the stop was set (display form), and why.
    pub since: Option<String>,
    pub by: Option<String>,
    pub reason: Option<String>,
    /// The first of the two people lifting it, if one has asked.
    pub lift_requested_by: Option<String>,
}

/// Reads the stop from the chain. Works on a plain connection or inside a transaction.
pub fn state(conn: &Connection) -> Result<StopState> {
    let mut stmt =
        conn.prepare("SELECT at, actor, payload FROM chain WHERE kind = 'org_stop' ORDER BY seq")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut state = StopState::default();
    for row in rows {
        let (at, actor, payload) = row?;
        let payload: Value = serde_json::from_str(&payload)?;
        let actor: Value = serde_json::from_str(&actor)?;
        let who = display(&actor);
        match payload["action"].as_str() {
            Some("set") => {
                state = StopState {
                    active: true,
                    since: Some(at),
                    by: Some(who),
                    reason: payload["reason"].as_str().map(str::to_string),
                    lift_requested_by: None,
                };
            }
            Some("lift_request") => {
                state.lift_requested_by = Some(who);
            }
            Some("lift") => {
                state = StopState::default();
            }
            _ => {}
        }
    }
    Ok(state)
}

fn display(actor: &Value) -> String {
    format!(
        "{} (uid {})",
        actor["user"].as_str().unwrap_or("unknown"),
        actor["uid"]
            .as_u64()
            .map(|u| u.to_string())
            .unwrap_or_default()
    )
}

/// The uid of whoever asked to lift the current stop, if anyone has.
fn lift_requester(conn: &Connection) -> Result<Option<(u64, Option<String>)>> {
    let last: Option<(String, String)> = conn
        .query_row(
            "SELECT actor, payload FROM chain WHERE kind = 'org_stop' ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok();
    Ok(match last {
        Some((actor, payload)) => {
            let payload: Value = serde_json::from_str(&payload)?;
            let actor: Value = serde_json::from_str(&actor)?;
            (payload["action"] == "lift_request").then(|| {
                (
                    actor["uid"].as_u64().unwrap_or(u64::MAX),
                    actor["user"].as_str().map(str::to_string),
                )
            })
        }
        None => None,
    })
}

/// Sets the stop. Anyone attested may pull the brake.
pub fn set(conn: &mut Connection, actor: &Actor, reason: &str, at: &str) -> Result<StopState> {
    chain::append(
        conn,
        at,
        "org_stop",
        &actor.to_json(),
        &json!({"action": "set", "reason": reason}),
    )?;
    state(conn)
}

/// The first call asks to lift the stop; a second call by a different person lifts it.
/// The same person twice is refused.
pub fn lift(conn: &mut Connection, actor: &Actor, at: &str) -> Result<StopState> {
    let current = state(conn)?;
    if !current.active {
        bail!("there is no org-wide stop to lift");
    }
    let action = match lift_requester(conn)? {
        None => "lift_request",
        Some((uid, user))
            if uid == u64::from(actor.uid) || (user.is_some() && user == actor.user) =>
        {
            bail!(
                "{} already asked to lift the stop; lifting it takes a second, different person",
                actor.display()
            )
        }
        Some(_) => "lift",
    };
    chain::append(
        conn,
        at,
        "org_stop",
        &actor.to_json(),
        &json!({"action": action}),
    )?;
    state(conn)
}

/// For the dispatch transaction: refuses while the stop is set.
pub fn ensure_not_stopped(conn: &Connection) -> Result<()> {
    let s = state(conn)?;
    if s.active {
        bail!(
            "the org-wide stop is set (since {} by {}{}): dataward dispatches nothing until two people lift it",
            s.since.unwrap_or_default(),
            s.by.unwrap_or_default(),
            s.reason.map(|r| format!(": {r}")).unwrap_or_default()
        );
    }
    Ok(())
}
