//! Where a team's state lives, and the one way to open it: SQLite, a file in the data
//! directory (the default, one host), or the PostgreSQL database `[state] url_env`
//! names, shared by the team's engines. The engine, its poll task and its alert relay
//! each open a session of their own here, so none of them names either database.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::postgres::{self, Source};
use super::State;
use crate::config::Config;

/// The state database's file name in the data directory (SQLite).
pub const STATE_FILE: &str = "dataward.db";

/// (No `Debug`: the source holds the URL, and with it the password.)
#[derive(Clone)]
pub enum StatePlace {
    /// A SQLite file on this host.
    File(PathBuf),
    /// The team's PostgreSQL database.
    Team(TeamState),
}

/// The team's shared state: the database, the team whose lease fences the writes, and
/// the data directory where this host keeps its checkpoint of the chain.
#[derive(Clone)]
pub struct TeamState {
    pub source: Source,
    pub team: String,
    pub data_dir: PathBuf,
}

impl From<PathBuf> for StatePlace {
    fn from(path: PathBuf) -> StatePlace {
        StatePlace::File(path)
    }
}

impl From<&Path> for StatePlace {
    fn from(path: &Path) -> StatePlace {
        StatePlace::File(path.to_path_buf())
    }
}

impl From<&PathBuf> for StatePlace {
    fn from(path: &PathBuf) -> StatePlace {
        StatePlace::File(path.clone())
    }
}

impl From<&StatePlace> for StatePlace {
    fn from(place: &StatePlace) -> StatePlace {
        place.clone()
    }
}

impl StatePlace {
    /// The place the config chooses: `[state] url_env` or the file in `data_dir`.
    pub fn of(config: &Config, data_dir: &Path) -> Result<StatePlace> {
        Ok(match &config.state {
            None => StatePlace::File(data_dir.join(STATE_FILE)),
            Some(state) => StatePlace::Team(TeamState {
                source: postgres::source(state, &config.origin)?,
                team: state.team.clone(),
                data_dir: data_dir.to_path_buf(),
            }),
        })
    }

    /// The data directory of this host: where the SQLite file is, or where this host
    /// keeps its checkpoint of the team's chain (and other files of its own).
    pub fn data_dir(&self) -> PathBuf {
        match self {
            StatePlace::File(path) => path.parent().map(Path::to_path_buf).unwrap_or_default(),
            StatePlace::Team(team) => team.data_dir.clone(),
        }
    }

    /// The team's state, if this place is one.
    pub fn team(&self) -> Option<&TeamState> {
        match self {
            StatePlace::Team(team) => Some(team),
            StatePlace::File(_) => None,
        }
    }

    /// A session that writes: SQLite's connection, or a PostgreSQL session fenced by
    /// `term`, the term this engine leads under (its every write transaction checks the
    /// lease still carries it; with none it writes nothing). Only one engine of a data
    /// directory opens it (`EngineLock`), and only the leader of a team.
    pub fn open(&self, term: Option<u64>) -> Result<State> {
        match self {
            StatePlace::File(path) => Ok(Box::new(super::open(path)?)),
            StatePlace::Team(team) => {
                let state = team.session()?;
                state.set_term(term);
                team_state(state)
            }
        }
    }

    /// A session that only reads (the poll task's, a carrier's, a command's while an
    /// engine runs): SQLite opened read-only, or a PostgreSQL session under no term.
    pub fn open_reader(&self) -> Result<State> {
        match self {
            StatePlace::File(path) => Ok(Box::new(super::open_read_only(path)?)),
            StatePlace::Team(team) => team_state(team.session()?),
        }
    }

    /// What the state is, for messages and logs (never the URL: it holds the password).
    pub fn describe(&self) -> String {
        match self {
            StatePlace::File(path) => path.display().to_string(),
            StatePlace::Team(team) => {
                format!("team {:?}'s state ({})", team.team, team.source.named_by)
            }
        }
    }
}

impl TeamState {
    fn session(&self) -> Result<postgres::PgState> {
        postgres::PgState::open(
            &self.source,
            &self.team,
            &self.data_dir,
            postgres::LEASE_FOR,
        )
    }
}

fn team_state(state: postgres::PgState) -> Result<State> {
    Ok(Box::new(state))
}
