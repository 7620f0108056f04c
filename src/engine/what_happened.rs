//! What came of a decision whose engine stopped before answering. The engine that
//! serves this host next is asked; with none answering, the state the decision would
//! be recorded in is read: the SQLite file in the data directory, or the team's state
//! (`[state] url_env`), where the engine that took over may be on another host while
//! this host's socket only stands by.
//!
//! On team state "not recorded" is only said once the lease has left the engine the
//! request was sent to: from then on the fence refuses every write of that engine
//! (`PgState::begin_write`), so what the state holds of the request is all it ever
//! will. Until then the engine may be stopped rather than dead, and could still record.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::api::{Command, Outcome, Refusal, RefusalKind};
use super::client::Client;
use crate::config::Config;
use crate::store::place::{StatePlace, TeamState};
use crate::store::postgres::{connect, lease};
use crate::store::prelude::*;
use crate::store::State;

/// How long a decision whose connection was lost waits for an engine to serve again
/// (a restart, a takeover) to learn what came of the request.
const RECONNECT_WAIT: Duration = Duration::from_secs(30);

/// Where a request went: the data directory whose socket took it, the process that
/// served that socket (as the kernel attests it), and the config naming the state.
pub struct SentTo<'a> {
    pub data_dir: &'a Path,
    pub config: Option<&'a Path>,
    pub engine_pid: Option<i32>,
}

/// What came of `request`, sent as `sent` says and left unanswered.
pub fn what_happened(sent: &SentTo, request: &str) -> Result<Outcome> {
    // Unknown (no config names the team's state) is said only if no engine answers.
    let place = state_place(sent.data_dir, sent.config);
    let ask = Command::WhatHappened {
        client_request: request.to_string(),
    };
    let mut team = match &place {
        Ok(StatePlace::Team(team)) => Some(TeamLook::new(team, sent)),
        _ => None,
    };
    let deadline = Instant::now() + RECONNECT_WAIT;
    loop {
        // An engine serving this host again answers from the state itself. (A standby
        // refuses at attach: an error here, and the team's state is read instead.)
        if let Ok(Some(mut client)) = Client::connect(sent.data_dir, false) {
            if let Ok(outcome) = client.request(ask.clone()) {
                return Ok(outcome);
            }
        }
        if let Some(team) = &mut team {
            match team.look(request) {
                Ok(Some(outcome)) => return Ok(outcome),
                Ok(None) => {}
                Err(e) => team.last_error = Some(format!("{e:#}")),
            }
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    match (place?, team) {
        (_, Some(team)) => Err(team.unknown(request)),
        (place, None) => from_file(&place, sent.data_dir, request),
    }
}

/// Where this host's state is: the team's when the config names one, the data
/// directory's file otherwise. A host that keeps a checkpoint of a team's chain but
/// whose config cannot be read is told so, not sent to a file it never wrote; on a host
/// of one, a config that cannot be read changes nothing (the file was always the place).
pub fn state_place(data_dir: &Path, config: Option<&Path>) -> Result<StatePlace> {
    let checkpoint = crate::store::postgres::checkpoint_path(data_dir);
    let loaded = config
        .filter(|path| path.exists())
        .map(|path| Config::load(path).with_context(|| format!("reading {}", path.display())));
    match loaded {
        Some(Ok(config)) => StatePlace::of(&config, data_dir),
        _ if checkpoint.exists() => anyhow::bail!(
            "{} keeps a team's state ({}), but no config that names it was read{}: pass the \
             config `dataward serve` runs with (`dataward --config FILE ...`)",
            data_dir.display(),
            checkpoint.display(),
            match loaded {
                Some(Err(e)) => format!(" ({e:#})"),
                _ => String::new(),
            }
        ),
        _ => Ok(StatePlace::File(
            data_dir.join(crate::store::place::STATE_FILE),
        )),
    }
}

/// With no engine serving this host's file, the answer is in it if the decision was made.
fn from_file(place: &StatePlace, data_dir: &Path, request: &str) -> Result<Outcome> {
    let StatePlace::File(path) = place else {
        anyhow::bail!("{} is not a file", place.describe());
    };
    let conn = crate::store::open_read_only(path)?;
    let uid = crate::approve::Actor::current().uid;
    if let Some(kept) = conn.request_outcome(request, uid)? {
        return Ok(serde_json::from_str(&kept)?);
    }
    anyhow::ensure!(
        !conn.request_in_flight(request)?,
        "the engine stopped while carrying out request {request} and no engine has served {} \
         since: its next start finishes it; `dataward show` then says what was decided",
        data_dir.display()
    );
    Ok(Outcome::Refused {
        reason: Refusal::new(
            RefusalKind::NotFound,
            format!(
                "not recorded: no engine serves {} and nothing of request {request} was \
                 recorded: it was not decided; safe to send again once an engine runs",
                data_dir.display()
            ),
        ),
    })
}

/// Looks at the team's state for a request: who holds the lease now, then (once the
/// engine the request went to holds it no longer) what the state keeps of it.
struct TeamLook {
    team: TeamState,
    /// How the lease named the engine the request went to (unknown: any of this host).
    sent_to: Option<String>,
    host: String,
    session: Option<postgres::Client>,
    state: Option<State>,
    /// The lease as last read, and why the last look failed, for the final word.
    lease: Option<lease::Lease>,
    last_error: Option<String>,
}

impl TeamLook {
    fn new(team: &TeamState, sent: &SentTo) -> TeamLook {
        let (host, _) = super::leadership::names(sent.data_dir);
        TeamLook {
            team: team.clone(),
            sent_to: sent
                .engine_pid
                .map(|pid| super::leadership::holder(&host, pid as u32)),
            host,
            session: None,
            state: None,
            lease: None,
            last_error: None,
        }
    }

    /// The answer, once it is final; None while the lease is still the engine's the
    /// request went to, or the request's change is still carried out by the new leader.
    fn look(&mut self, request: &str) -> Result<Option<Outcome>> {
        if self.session.as_ref().is_none_or(|s| s.is_closed()) {
            self.session = Some(connect::connect(&self.team.source, "dataward cli")?);
        }
        let session = self.session.as_mut().expect("connected above");
        self.lease = lease::read_lease(session, &self.team.team)?;
        let Some(now) = &self.lease else {
            // No engine ever led: none could have recorded anything.
            return Ok(Some(self.not_recorded(request)));
        };
        let still_its = match &self.sent_to {
            Some(holder) => &now.holder == holder,
            None => now.host == self.host,
        };
        if still_its {
            return Ok(None);
        }
        // Read after the lease moved: nothing of the old term can be written after this.
        if self.state.is_none() {
            self.state = Some(StatePlace::Team(self.team.clone()).open_reader()?);
        }
        let state = self.state.as_ref().expect("opened above");
        let uid = crate::approve::Actor::current().uid;
        if let Some(kept) = state.request_outcome(request, uid)? {
            return Ok(Some(serde_json::from_str(&kept)?));
        }
        if state.request_in_flight(request)? {
            // Its change was committed as an intent: the new leader carries it out and
            // keeps the answer.
            return Ok(None);
        }
        Ok(Some(self.not_recorded(request)))
    }

    fn not_recorded(&self, request: &str) -> Outcome {
        let since = match &self.lease {
            Some(now) => format!(
                "its lease has passed to term {} ({}), which refuses every write of the engine \
                 the request was sent to",
                now.term, now.host
            ),
            None => "no engine has led it".to_string(),
        };
        Outcome::Refused {
            reason: Refusal::new(
                RefusalKind::NotFound,
                format!(
                    "not recorded: request {request} is not in team {}'s state, and {since}: \
                     it was not decided; safe to send again",
                    self.team.team
                ),
            ),
        }
    }

    /// Why no answer came in time: the engine still holds the lease (stopped, not dead,
    /// or no engine stands by to take over), or its change is still being carried out.
    fn unknown(&self, request: &str) -> anyhow::Error {
        let why = match (&self.lease, &self.last_error) {
            (_, Some(e)) => format!("the team's state could not be read: {e}"),
            (Some(now), None) if self.sent_to.as_deref() == Some(now.holder.as_str()) => format!(
                "the engine it was sent to still holds team {}'s lease (term {}{}), so it may \
                 still record it; once another engine leads, `dataward show` says what was decided",
                self.team.team,
                now.term,
                if now.expired { ", run out" } else { "" }
            ),
            _ => "its change is still being carried out by the engine that leads now; \
                  `dataward show` says what was decided once it is"
                .to_string(),
        };
        anyhow::anyhow!("what came of request {request} is not known yet: {why}")
    }
}
