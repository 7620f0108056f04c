//! Team state on PostgreSQL (`[state] url_env`): the state database a team's engines
//! share, one of them leading (see [`lease`]). SQLite stays the state of one host.
//!
//! [`PgState`] is a session to that database implementing the store's traits as
//! SQLite's connection does (every area, a file per area here, with write transactions);
//! the engine's memory (incidents, intents, the outbox, observations...) carries a
//! `team` column in every row, as the lease does;
//! every write transaction is fenced: it opens by locking the team's lease row and
//! checking that its term is still the one this engine leads under, so an engine
//! deposed while it was not looking (stopped, cut off) can write nothing, and the chain
//! keeps one writer.
//!
//! The chain's checkpoint stays on the host, in its data directory: opening the state
//! refuses a chain shorter than or different from the latest this host has seen (a
//! database restored from an older backup is an alarm, not a new truth).

mod access;
mod baselines;
mod chain;
pub mod connect;
mod incidents;
mod intents;
pub mod lease;
mod lineage_events;
mod meta;
mod minutes;
mod observations;
mod outbox;
mod quiet;
mod requests;
pub mod schema;
mod waves;

use std::cell::{Cell, RefCell, RefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use postgres::Client;

pub use connect::Source;
pub use lease::{Contender, Lease, Role, LEASE_FOR, STEP_EVERY};

use super::{Store, Writes};
use crate::config::StateConfig;

/// The URL `[state] url_env` names in the config at `origin`, checked, with where it
/// came from for every message after.
pub fn source(state: &StateConfig, origin: &Path) -> Result<Source> {
    Ok(Source {
        url: state.url(origin)?,
        named_by: format!("{}: [state] url_env ({})", origin.display(), state.url_env),
    })
}

/// The team state as one engine sees it: a session to the shared database, the team,
/// the term it leads under (none on a standby: it reads, and writes nothing), and this
/// host's checkpoint of the chain.
pub struct PgState {
    source: Source,
    client: RefCell<Client>,
    team: String,
    term: Cell<Option<u64>>,
    in_write: Cell<bool>,
    checkpoint: PathBuf,
    /// A transaction left idle this long (its process stopped) is ended by the server,
    /// so the lease row it locked does not hold up a takeover.
    idle_limit: Duration,
}

/// Where a host keeps the checkpoint of its team's chain, in its data directory.
pub fn checkpoint_path(data_dir: &Path) -> PathBuf {
    data_dir.join("state-postgres.checkpoint")
}

impl PgState {
    /// Connects, brings the schema up to date, and holds the chain against this host's
    /// checkpoint (in `data_dir`): a chain behind it or apart from it is refused.
    pub fn open(
        source: &Source,
        team: &str,
        data_dir: &Path,
        idle_limit: Duration,
    ) -> Result<PgState> {
        super::files::ensure_private_dir(data_dir)?;
        let mut client = connect::connect(source, "dataward state")?;
        schema::migrate(&mut client).with_context(|| source.named_by.clone())?;
        configure(&mut client, idle_limit)?;
        let state = PgState {
            source: source.clone(),
            client: RefCell::new(client),
            team: team.to_string(),
            term: Cell::new(None),
            in_write: Cell::new(false),
            checkpoint: checkpoint_path(data_dir),
            idle_limit,
        };
        if !state.checkpoint.exists() {
            state.first_sight()?;
        }
        crate::chain::check_checkpoint_of(&state).map_err(|e| {
            anyhow!(
                "{e:#}\n(the chain in the state database is behind or apart from what this host \
                 last saw in {}: was the database restored from an older backup? dataward will \
                 not append to it)",
                state.checkpoint.display()
            )
        })?;
        Ok(state)
    }

    /// A host that joins the team (a new standby) has seen nothing of the chain: it
    /// verifies the whole of it and keeps its head as the first checkpoint. From then
    /// on the chain may only grow past it.
    fn first_sight(&self) -> Result<()> {
        let report = crate::chain::verify_with(self, None)?;
        if let Some(bad) = &report.first_bad {
            bail!(
                "{}: the chain in the state database does not verify at record #{}: {}; \
                 this host will not take it as its first checkpoint",
                self.source.named_by,
                bad.seq,
                bad.reason
            );
        }
        tracing::info!(
            records = report.records,
            "first sight of the team's chain: checkpoint kept"
        );
        crate::chain::save_checkpoint_of(self)
    }

    /// The term this engine now leads under (from its [`Contender`]), or none.
    pub fn set_term(&self, term: Option<u64>) {
        self.term.set(term);
    }

    pub fn term(&self) -> Option<u64> {
        self.term.get()
    }

    /// Runs `work` in one fenced write transaction, commits, then moves this host's
    /// checkpoint to the new head: what `chain::transact` is on SQLite.
    pub fn transact<T>(&self, work: impl FnOnce(&PgState) -> Result<T>) -> Result<T> {
        self.begin_write()?;
        let value = match work(self) {
            Ok(value) => value,
            Err(e) => {
                let _ = self.rollback_write();
                return Err(e);
            }
        };
        self.commit_write()?;
        crate::chain::save_checkpoint_of(self)?;
        Ok(value)
    }

    /// The session, connected again first if it broke while no transaction was open (a
    /// restarted server); one that broke inside a transaction is an error: nothing of
    /// that transaction was kept.
    fn client(&self) -> Result<RefMut<'_, Client>> {
        let mut client = self.client.borrow_mut();
        if client.is_closed() {
            if self.in_write.replace(false) {
                bail!("the session to the state database broke inside a transaction; nothing of it was kept");
            }
            let mut fresh = connect::connect(&self.source, "dataward state")?;
            configure(&mut fresh, self.idle_limit)?;
            *client = fresh;
        }
        Ok(client)
    }

    /// Runs `f` on the session. Outside a transaction, a session found broken only now
    /// (a restarted server closes them all) is connected again and `f` runs once more;
    /// inside one, the break ends the transaction: an error, nothing of it kept.
    fn run<T>(&self, f: impl Fn(&mut Client) -> Result<T, postgres::Error>) -> Result<T> {
        let first = f(&mut *self.client()?);
        let broke = self.client.borrow().is_closed();
        match first {
            Err(_) if broke && !self.in_write.get() => f(&mut *self.client()?)
                .map_err(|e| anyhow!("the state database: {}", connect::describe(&e))),
            Err(e) => {
                if broke {
                    self.in_write.set(false);
                }
                Err(anyhow!("the state database: {}", connect::describe(&e)))
            }
            Ok(value) => Ok(value),
        }
    }

    fn query(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>> {
        self.run(|client| client.query(sql, params))
    }

    /// Every write goes through here (or [`Self::write_query`]): only inside a fenced
    /// transaction ([`Writes::begin_write`] checked the term), never on its own, where
    /// nothing would fence it.
    fn execute(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> Result<u64> {
        self.must_be_fenced()?;
        self.run(|client| client.execute(sql, params))
    }

    /// A write that returns rows (`RETURNING`), fenced as [`Self::execute`] is.
    fn write_query(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>> {
        self.must_be_fenced()?;
        self.query(sql, params)
    }

    fn must_be_fenced(&self) -> Result<()> {
        if !self.in_write.get() {
            bail!(
                "a write to the team state outside a write transaction was refused: every \
                 write must be fenced by the lease's term (begin a write transaction first)"
            );
        }
        Ok(())
    }
}

fn configure(client: &mut Client, idle_limit: Duration) -> Result<()> {
    client.batch_execute(&format!(
        "SET idle_in_transaction_session_timeout = {}",
        idle_limit.as_millis().max(1)
    ))?;
    Ok(())
}

impl Store for PgState {}

impl Writes for PgState {
    /// Opens a transaction and fences it: the team's lease row is locked (writers line
    /// up as behind SQLite's `BEGIN IMMEDIATE`, and a takeover waits for the write in
    /// flight), and its term must be the one this engine leads under.
    fn begin_write(&self) -> Result<()> {
        let Some(ours) = self.term.get() else {
            bail!(
                "this engine stands by: it does not lead team {:?}, so it writes nothing",
                self.team
            );
        };
        self.run(|client| client.batch_execute("BEGIN"))?;
        self.in_write.set(true);
        let fenced = (|| -> Result<()> {
            let rows = self.query(
                "SELECT term, host FROM lease WHERE team = $1 FOR UPDATE",
                &[&self.team],
            )?;
            let Some(row) = rows.first() else {
                bail!(
                    "deposed: team {:?} has no lease in the state database (term {ours} was ours)",
                    self.team
                );
            };
            let (term, host): (i64, String) = (row.get(0), row.get(1));
            if term as u64 != ours {
                bail!("deposed: term {term} now leads (host {host}); this engine led term {ours} and writes nothing");
            }
            Ok(())
        })();
        if let Err(e) = fenced {
            let _ = self.rollback_write();
            return Err(e);
        }
        Ok(())
    }

    fn commit_write(&self) -> Result<()> {
        let result = self.run(|client| client.batch_execute("COMMIT"));
        self.in_write.set(false);
        result.context("commit")
    }

    fn rollback_write(&self) -> Result<()> {
        let result = self.run(|client| client.batch_execute("ROLLBACK"));
        self.in_write.set(false);
        result.context("rollback")
    }

    fn in_write(&self) -> bool {
        self.in_write.get()
    }

    fn database_path(&self) -> Option<PathBuf> {
        None
    }

    fn checkpoint_path(&self) -> Option<PathBuf> {
        Some(self.checkpoint.clone())
    }
}

/// What `dataward doctor` shows of the team state: the server, the lock, the lease.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// `server_version`, e.g. "15.10 (Debian 15.10-0+deb12u1)".
    pub server_version: String,
    pub schema_version: Option<usize>,
    /// The session holding the team's lock, if one does.
    pub lock_holder: Option<i32>,
    pub lease: Option<Lease>,
}

/// Reads, writing nothing (not even the schema): what doctor reports.
pub fn inspect(source: &Source, team: &str) -> Result<Inspection> {
    let mut client = connect::connect(source, "dataward doctor")?;
    let server_version: String = client.query_one("SHOW server_version", &[])?.get(0);
    let has_schema: bool = client
        .query_one("SELECT to_regclass('dataward_schema') IS NOT NULL", &[])?
        .get(0);
    if !has_schema {
        return Ok(Inspection {
            server_version,
            schema_version: None,
            lock_holder: lease::lock_holder(&mut client, team)?,
            lease: None,
        });
    }
    let version: i64 = client
        .query_one(
            "SELECT coalesce(max(version), 0)::bigint FROM dataward_schema",
            &[],
        )?
        .get(0);
    Ok(Inspection {
        server_version,
        schema_version: Some(version as usize),
        lock_holder: lease::lock_holder(&mut client, team)?,
        lease: lease::read_lease(&mut client, team)?,
    })
}
