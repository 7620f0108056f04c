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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::postgres::Lease;

    fn found(lock_holder: Option<i32>, expired: bool) -> Inspection {
        Inspection {
            server_version: "15.10".to_string(),
            schema_version: Some(1),
            lock_holder,
            lease: Some(Lease {
                team: "payments".to_string(),
                term: 4,
                holder: "db-2 pid 77".to_string(),
                host: "db-2".to_string(),
                expires_at: "2026-12-03T09:00:06Z".to_string(),
                expired,
            }),
        }
    }

    #[test]
    fn a_lease_run_out_while_its_session_holds_the_lock_is_a_cross() {
        let lease = &lines("payments", &found(Some(4242), true))[2];
        assert!(!lease.ok, "{lease:?}");
        assert!(
            lease.detail.contains("host db-2's lease (term 4) ran out"),
            "{lease:?}"
        );
        assert!(
            lease.detail.contains("session 4242 still holds the lock"),
            "{lease:?}"
        );
        let leads = &lines("payments", &found(Some(4242), false))[2];
        assert!(
            leads.ok && leads.detail.starts_with("host db-2 leads, term 4"),
            "{leads:?}"
        );
        let nobody = &lines("payments", &found(None, true))[2];
        assert!(
            nobody.ok && nobody.detail.contains("takes term 5"),
            "{nobody:?}"
        );
    }
}
