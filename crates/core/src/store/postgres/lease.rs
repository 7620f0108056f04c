//! Which engine of a team leads. Two things together: a session advisory lock for the
//! team, which PostgreSQL drops the moment the leader's session ends (the process
//! killed, its host gone once keepalives notice), and the `lease` row, which carries the
//! term: the fencing token every write checks in its own transaction (see
//! `PgState::begin_write`). A contender that gets the lock takes the lease with the
//! term one higher; the leader renews the lease's expiry; a standby polls.
//!
//! A leader that is alive to the kernel but not running (stopped, swapped out, stuck)
//! keeps its session and so the lock: once its lease has expired by the database's
//! clock, a standby ends that session (`pg_terminate_backend`), takes the lock and
//! the next term. Should the old leader run again, every write it tries is refused
//! by term.

use std::time::Duration;

use anyhow::{Context, Result};
use postgres::Client;
use sha2::{Digest, Sha256};

use super::connect::{connect, describe, Source};

/// How long a lease runs past each renewal. With [`STEP_EVERY`]: a standby sees a killed
/// leader's lock free at its next step; a stopped or cut-off leader's lease runs out at
/// most this long after it last renewed, a step ends its session and the next takes the
/// lock, so a standby leads within about 8 s of any leader's end (the team is promised
/// 10 s). A leader tolerates five missed renewals before it can be deposed.
pub const LEASE_FOR: Duration = Duration::from_secs(6);

/// How often a contender steps: a leader renews, a standby polls.
pub const STEP_EVERY: Duration = Duration::from_secs(1);

/// A lease as the database holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub team: String,
    pub term: u64,
    /// The engine that took it: host, process id and start time.
    pub holder: String,
    pub host: String,
    /// When it runs out unless renewed, by the database's clock (RFC 3339).
    pub expires_at: String,
    /// Has it run out, by the database's clock?
    pub expired: bool,
}

/// Where a contender stands after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// This engine leads under `term`.
    Leader { term: u64 },
    /// Another engine leads (or led and has not been replaced yet).
    Standby { lease: Option<Lease> },
}

/// One engine's claim on its team's leadership: its own session to the database (the
/// one holding the lock), kept apart from the session the engine writes on, so a
/// write in flight never delays a renewal's place in line for long.
pub struct Contender {
    source: Source,
    client: Option<Client>,
    team: String,
    key: i64,
    holder: String,
    host: String,
    lease_for: Duration,
    /// The lock is held by our session (it is reentrant: taken once).
    locked: bool,
    term: Option<u64>,
    /// When the lease was last taken or renewed, by this process's stopwatch: a leader
    /// that could not renew for a whole lease stops calling itself one, even before its
    /// session is found broken.
    renewed: Option<std::time::Instant>,
}

/// The advisory lock key of a team: the first 8 bytes of a hash of its name, top bit
/// set, so it never meets the migrations' key.
pub fn lock_key(team: &str) -> i64 {
    let digest = Sha256::digest(format!("dataward.team.lock\0{team}").as_bytes());
    let bytes: [u8; 8] = digest[..8].try_into().expect("8 bytes");
    (u64::from_be_bytes(bytes) | (1 << 63)) as i64
}

impl Contender {
    /// `holder` names this engine (host, pid, start), `host` where to reach it; the
    /// lease runs `lease_for` past each renewal.
    pub fn new(
        source: Source,
        team: &str,
        holder: &str,
        host: &str,
        lease_for: Duration,
    ) -> Contender {
        Contender {
            source,
            client: None,
            team: team.to_string(),
            key: lock_key(team),
            holder: holder.to_string(),
            host: host.to_string(),
            lease_for,
            locked: false,
            term: None,
            renewed: None,
        }
    }

    /// The term this engine leads under, if it leads.
    pub fn term(&self) -> Option<u64> {
        self.term
    }

    /// One round: a leader renews its lease; a standby tries the lock, takes the lease
    /// with the next term when it gets it, and ends the session of a holder whose lease
    /// ran out. A broken session loses the lock with it: the engine stands by again.
    pub fn step(&mut self) -> Result<Role> {
        match self.try_step() {
            Ok(role) => Ok(role),
            Err(e) => {
                if self.client.as_ref().is_none_or(Client::is_closed) {
                    self.client = None;
                    self.locked = false;
                    self.term = None;
                }
                if self
                    .renewed
                    .is_some_and(|at| at.elapsed() >= self.lease_for)
                {
                    self.term = None;
                }
                Err(e)
            }
        }
    }

    fn try_step(&mut self) -> Result<Role> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = Some(connect(&self.source, "dataward leadership")?);
            self.locked = false;
            self.term = None;
        }
        let client = self.client.as_mut().expect("connected above");
        let seconds = self.lease_for.as_secs_f64();
        if let Some(term) = self.term {
            let renewed = client
                .execute(
                    "UPDATE lease SET expires_at = now() + make_interval(secs => $3)
                     WHERE team = $1 AND term = $2",
                    &[&self.team, &(term as i64), &seconds],
                )
                .map_err(|e| anyhow::anyhow!("renewing the lease: {}", describe(&e)))?;
            if renewed == 1 {
                self.renewed = Some(std::time::Instant::now());
                return Ok(Role::Leader { term });
            }
            // Another engine took a later term while we could not renew: stand by.
            // (Our session ending gives the lock back; we keep it until then.)
            self.term = None;
            return Ok(Role::Standby {
                lease: read_lease(client, &self.team)?,
            });
        }
        if !self.locked {
            self.locked = client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&self.key])?
                .get(0);
        }
        if self.locked {
            let mut tx = client.transaction()?;
            // A stopped writer's transaction is ended by its own idle timeout; never
            // wait on it longer than a step.
            tx.batch_execute("SET LOCAL lock_timeout = '2s'")?;
            let term: i64 = tx
                .query_one(
                    "INSERT INTO lease (team, term, holder, host, taken_at, expires_at)
                     VALUES ($1, 1, $2, $3, now(), now() + make_interval(secs => $4))
                     ON CONFLICT (team) DO UPDATE SET term = lease.term + 1,
                       holder = excluded.holder, host = excluded.host,
                       taken_at = excluded.taken_at, expires_at = excluded.expires_at
                     RETURNING term",
                    &[&self.team, &self.holder, &self.host, &seconds],
                )
                .context("taking the lease")?
                .get(0);
            tx.commit()?;
            let term = term as u64;
            self.term = Some(term);
            self.renewed = Some(std::time::Instant::now());
            return Ok(Role::Leader { term });
        }
        let lease = read_lease(client, &self.team)?;
        if lease.as_ref().is_some_and(|l| l.expired) {
            end_stale_holder(client, &self.team, self.key)?;
        }
        Ok(Role::Standby { lease })
    }
}

/// Ends the session holding `key` (a leader whose lease ran out): PostgreSQL drops its
/// lock with it, and the next step takes it.
/// The lease is read again in the same statement, so a holder that renewed in the
/// meantime is left alone.
fn end_stale_holder(client: &mut Client, team: &str, key: i64) -> Result<()> {
    let (class, object) = key_halves(key);
    client
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND objsubid = 1
               AND classid::bigint = $1 AND objid::bigint = $2
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND EXISTS (SELECT 1 FROM lease WHERE team = $3 AND expires_at < now())",
            &[&class, &object, &team],
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "ending the session of a leader whose lease ran out: {}",
                describe(&e)
            )
        })?;
    Ok(())
}

/// How `pg_locks` shows a bigint advisory key: its high and low 32 bits as oids.
fn key_halves(key: i64) -> (i64, i64) {
    let key = key as u64;
    ((key >> 32) as i64, (key & 0xffff_ffff) as i64)
}

/// The team's lease, if an engine ever led.
pub fn read_lease(client: &mut Client, team: &str) -> Result<Option<Lease>> {
    let row = client.query_opt(
        "SELECT term, holder, host,
                to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                expires_at < now()
         FROM lease WHERE team = $1",
        &[&team],
    )?;
    Ok(row.map(|r| Lease {
        team: team.to_string(),
        term: r.get::<_, i64>(0) as u64,
        holder: r.get(1),
        host: r.get(2),
        expires_at: r.get(3),
        expired: r.get(4),
    }))
}

/// The process id of the session holding the team's lock, if one does.
pub fn lock_holder(client: &mut Client, team: &str) -> Result<Option<i32>> {
    let (class, object) = key_halves(lock_key(team));
    let row = client.query_opt(
        "SELECT pid FROM pg_locks
         WHERE locktype = 'advisory' AND granted AND objsubid = 1
           AND classid::bigint = $1 AND objid::bigint = $2
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        &[&class, &object],
    )?;
    Ok(row.map(|r| r.get(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teams_have_their_own_keys_apart_from_the_migrations() {
        assert_ne!(lock_key("payments"), lock_key("search"));
        assert_eq!(lock_key("payments"), lock_key("payments"));
        assert!(lock_key("payments") < 0, "the top bit is set");
        let (high, low) = key_halves(-2);
        assert_eq!((high, low), (0xffff_ffff, 0xffff_fffe));
    }
}
