//! The org-wide stop: one switch that halts all dispatch by dataward at once. Its state
//! lives on the chain, so every process sees the same switch, and the dispatch
//! transaction reads it (`chain::append_checked`), so a stop set between approval and
//! run wins. Lifting it takes two different people.

use anyhow::{bail, Result};
use serde::Serialize;
use serde_json::{json, Value};

use super::{Actor, Refusal, RefusalKind};
use crate::chain;
use crate::clock::Timestamp;
use crate::store::prelude::*;

/// The kind of the chain records that set, ask to lift and lift the stop.
const ORG_STOP: &str = "org_stop";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct StopState {
    pub active: bool,
    /// When and by whom the stop was set (display form), and why.
    pub since: Option<Timestamp>,
    pub by: Option<String>,
    pub reason: Option<String>,
    /// The first of the two people lifting it, if one has asked.
    pub lift_requested_by: Option<String>,
}

/// Reads the stop from the chain. Works on a plain connection or inside a transaction.
pub fn state(conn: &dyn Store) -> Result<StopState> {
    let mut state = StopState::default();
    for record in conn.records_of_kind(ORG_STOP)? {
        let payload: Value = serde_json::from_str(&record.payload)?;
        let actor: Value = serde_json::from_str(&record.actor)?;
        let who = display(&actor);
        match payload["action"].as_str() {
            Some("set") => {
                state = StopState {
                    active: true,
                    since: Some(record.at),
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

/// A chain record's actor as people read it: the attested account and uid.
pub fn display(actor: &Value) -> String {
    format!(
        "{} (uid {})",
        actor["user"].as_str().unwrap_or("unknown"),
        actor["uid"]
            .as_u64()
            .map(|u| u.to_string())
            .unwrap_or_default()
    )
}

/// The person (loginuid where the kernel keeps one, else uid) and account name of
/// whoever asked to lift the current stop, if anyone has. An ask recorded without a
/// known person (a login uid that is not a number) does not count as anyone's.
fn lift_requester(conn: &dyn Store) -> Result<Option<(u64, Option<String>)>> {
    let last = conn
        .last_record_of_kind(ORG_STOP)?
        .map(|record| (record.actor, record.payload));
    Ok(match last {
        Some((actor, payload)) => {
            let payload: Value = serde_json::from_str(&payload)?;
            let actor: Value = serde_json::from_str(&actor)?;
            let person = match actor.get("loginuid") {
                Some(loginuid) => loginuid.as_u64(),
                None => actor["uid"].as_u64(),
            };
            match person {
                Some(person) if payload["action"] == "lift_request" => {
                    Some((person, actor["user"].as_str().map(str::to_string)))
                }
                _ => None,
            }
        }
        None => None,
    })
}

/// Sets the stop, inside the caller's write transaction. Anyone attested may pull the
/// brake.
pub fn set(tx: &dyn Store, actor: &Actor, reason: &str, at: Timestamp) -> Result<StopState> {
    chain::append_in(
        tx,
        at,
        ORG_STOP,
        &actor.to_json(),
        &json!({"action": "set", "reason": reason}),
    )?;
    state(tx)
}

/// The first call asks to lift the stop; a second call by a different person lifts it.
/// The same person twice is refused: a person is the login uid where the kernel keeps
/// one (so `sudo -u other` is still the same person), else the uid (`Actor::person`);
/// an actor whose login uid could not be read is refused, never taken for its uid.
/// Runs inside the caller's write transaction, so two lifts cannot both read "nobody
/// asked yet".
pub fn lift(tx: &dyn Store, actor: &Actor, at: Timestamp) -> Result<StopState> {
    let current = state(tx)?;
    if !current.active {
        bail!("there is no org-wide stop to lift");
    }
    let person = u64::from(actor.person()?);
    let action = match lift_requester(tx)? {
        None => "lift_request",
        Some((requester, user))
            if requester == person || (user.is_some() && user == actor.user) =>
        {
            bail!(
                "{} already asked to lift the stop; lifting it takes a second, different person",
                actor.display()
            )
        }
        Some(_) => "lift",
    };
    chain::append_in(
        tx,
        at,
        ORG_STOP,
        &actor.to_json(),
        &json!({"action": action}),
    )?;
    state(tx)
}

/// For the dispatch transaction: refuses while the stop is set.
pub fn ensure_not_stopped(conn: &dyn Store) -> Result<()> {
    let s = state(conn)?;
    if s.active {
        return Err(Refusal::new(
            RefusalKind::OrgStop,
            format!(
                "the org-wide stop is set (since {} by {}{}): dataward dispatches nothing until two people lift it",
                s.since.map(|at| at.to_string()).unwrap_or_default(),
                s.by.unwrap_or_default(),
                s.reason.map(|r| format!(": {r}")).unwrap_or_default()
            ),
        )
        .into());
    }
    Ok(())
}

/// Every field, destructured without `..`: one user sets the reason, everyone reads it.
impl crate::sanitize::Sanitize for StopState {
    fn sanitize(&mut self) {
        let StopState {
            active: _,
            // A time: nobody's text.
            since: _,
            by,
            reason,
            lift_requested_by,
        } = self;
        for text in [by, reason, lift_requested_by] {
            text.sanitize();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approve::LoginUid;

    fn person(user: &str, uid: u32, loginuid: LoginUid) -> Actor {
        let mut actor = Actor::peer(uid, loginuid);
        actor.user = Some(user.into());
        actor
    }

    #[test]
    fn a_lift_by_someone_whose_login_uid_is_unknown_is_refused_not_taken_for_the_uid() {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        let alice = person("alice", 1001, LoginUid::Set(1001));
        let at = |minute: u32| Timestamp::parse(&format!("2026-03-01T09:{minute:02}:00Z")).unwrap();
        chain::transact(&conn, |tx| set(tx, &alice, "incident", at(1))).unwrap();
        chain::transact(&conn, |tx| lift(tx, &alice, at(2))).unwrap();
        // bob's account; who is behind it could not be read.
        let unknown = person("bob", 1002, LoginUid::Unknown);
        let err = chain::transact(&conn, |tx| lift(tx, &unknown, at(3))).unwrap_err();
        assert!(format!("{err:#}").contains("login uid"), "{err:#}");
        assert!(state(&conn).unwrap().active);
        // bob with no login session set: the uid is the person, a second one.
        let bob = person("bob", 1002, LoginUid::Unset);
        let lifted = chain::transact(&conn, |tx| lift(tx, &bob, at(4))).unwrap();
        assert!(!lifted.active);
    }
}
