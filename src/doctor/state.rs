//! The team state on PostgreSQL (`[state] url_env`): the database reachable and new
//! enough, its schema, the team's leadership lock and lease, and who leads. Nothing is
//! written (not even the schema). Without `[state]`, the state is the SQLite file the
//! data directory checks cover.

use super::Line;
use crate::config::Config;
use crate::store::postgres::{inspect, source, Inspection};

pub fn check(config: &Config) -> Vec<Line> {
    let Some(state) = &config.state else {
        return Vec::new();
    };
    let found = source(state, &config.origin).and_then(|source| inspect(&source, &state.team));
    match found {
        Ok(inspection) => lines(&state.team, &inspection),
        Err(e) => vec![Line::bad(
            "state database",
            format!("{e:#}"),
            format!(
                "export {} with the team's postgres:// URL, and check the server answers (psql \"${}\")",
                state.url_env, state.url_env
            ),
        )],
    }
}

/// The lines for what [`inspect`] found.
fn lines(team: &str, found: &Inspection) -> Vec<Line> {
    let schema = match found.schema_version {
        Some(version) => format!("schema version {version}"),
        None => "no dataward schema yet (the first engine creates it)".to_string(),
    };
    let mut lines = vec![Line::ok(
        "state database",
        format!("reachable: PostgreSQL {}; {schema}", found.server_version),
    )];
    lines.push(match found.lock_holder {
        Some(pid) => Line::ok(
            "state lock",
            format!("team {team:?}: held by server session {pid}"),
        ),
        None => Line::ok(
            "state lock",
            format!("team {team:?}: free (no engine of the team runs)"),
        ),
    });
    lines.push(match (&found.lease, found.lock_holder) {
        (None, _) => Line::ok("state lease", "no engine of the team has led yet"),
        (Some(lease), Some(_)) if !lease.expired => Line::ok(
            "state lease",
            format!(
                "host {} leads, term {} ({}), lease until {}",
                lease.host, lease.term, lease.holder, lease.expires_at
            ),
        ),
        (Some(lease), None) => Line::ok(
            "state lease",
            format!(
                "nobody leads: host {} led term {} until {}; the next engine to start takes term {}",
                lease.host,
                lease.term,
                lease.expires_at,
                lease.term + 1
            ),
        ),
        (Some(lease), Some(pid)) => Line::bad(
            "state lease",
            format!(
                "host {}'s lease (term {}) ran out at {} but its session {pid} still holds the lock: \
                 the engine there is stopped or cut off",
                lease.host, lease.term, lease.expires_at
            ),
            format!(
                "a standby takes over on its own (it ends that session); with none running, \
                 start `dataward serve` on another host, or look at host {}",
                lease.host
            ),
        ),
    });
    lines
}
