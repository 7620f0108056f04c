//! The engine's memory is the state database. Every input is handled in one write
//! transaction: the chain records, the incidents and requests they change, and any
//! intents commit together or not at all. At start (and after a failed transaction)
//! the engine reads itself back from the database, so a restart or a SIGKILL at any
//! instruction loses nothing and repeats nothing.

use super::*;
use crate::store::prelude::*;

/// How far the engine has acted on stored observations: the poller stores them, the
/// engine moves this mark in the same transaction that opens incidents from them.
const OBSERVATION_MARK: &str = "engine.observations_done";

/// The runs queued for open incidents and not finished, as the engine last stored
/// them (job, run id): what the poll task reads back from the orchestrator. The same
/// set as `Engine::followed_runs`, read from the stored incidents.
pub fn followed_runs(state: &dyn Store) -> Result<Vec<(String, String)>> {
    state.followed_runs()
}

impl Engine {
    /// Runs `work` in one `BEGIN IMMEDIATE` transaction and writes back every incident
    /// and request it changed before committing. On any error nothing is kept: the
    /// transaction rolls back and the engine reloads itself from the database.
    pub(super) fn transact<T>(&mut self, work: impl FnOnce(&mut Engine) -> Result<T>) -> Result<T> {
        self.ensure_database()?;
        self.state.begin_write()?;
        let alert_mark = self.alert_mark();
        let result = work(self).and_then(|value| {
            self.enqueue_alerts(alert_mark?)?;
            self.persist()?;
            self.state.commit_write()?;
            Ok(value)
        });
        match result {
            Ok(value) => {
                // Committed into a file deleted meanwhile is not kept: never say it was.
                self.ensure_database()?;
                chain::save_checkpoint(&*self.state)?;
                self.wake_relay();
                Ok(value)
            }
            Err(e) => {
                if self.state.in_write() {
                    let _ = self.state.rollback_write();
                }
                self.load()
                    .context("reloading the engine's state after a failed transaction")?;
                Err(e)
            }
        }
    }

    /// Writes every incident and request that may have changed. Resolved incidents and
    /// finished requests do not change again, so each is written once more at most.
    fn persist(&mut self) -> Result<()> {
        self.draft_receipts()?;
        self.persist_access()?;
        self.persist_waves()?;
        for incident in &self.incidents {
            if self.settled.contains(&incident.id) {
                continue;
            }
            let status = serde_json::to_value(incident.status)?;
            self.state.put_incident(
                &incident.id,
                status.as_str().unwrap_or_default(),
                &serde_json::to_string(incident)?,
            )?;
            if incident.status == IncidentStatus::Resolved {
                self.settled.insert(incident.id.clone());
            }
        }
        for (proposal, request) in &self.requests {
            if self.settled.contains(proposal) {
                continue;
            }
            self.state
                .put_request(proposal, &serde_json::to_string(request)?)?;
            if request.state != RequestState::Pending {
                self.settled.insert(proposal.clone());
            }
        }
        Ok(())
    }

    /// Every open incident carries its receipt as the chain holds it so far, the same
    /// text `dataward receipt` prints. Only the incidents named by records appended
    /// since the last draft are drafted again: a thousand open incidents cost nothing
    /// when one of them changes.
    fn draft_receipts(&mut self) -> Result<()> {
        let head = chain::head(&*self.state)?
            .map(|h| h.seq)
            .unwrap_or_default();
        if head == self.drafted_at {
            return Ok(());
        }
        let changed: BTreeSet<String> = self
            .state
            .incidents_recorded_after(self.drafted_at)?
            .into_iter()
            .collect();
        // By index, so only the incidents redrafted are marked changed.
        for at in 0..self.incidents.len() {
            let incident = &self.incidents[at];
            if incident.status == IncidentStatus::Resolved || !changed.contains(&incident.id) {
                continue;
            }
            let records = chain::records_about(&*self.state, &incident.id)?;
            let incident = &mut self.incidents[at];
            incident.receipt = receipt::build(&records, &incident.id)
                .ok()
                .map(|r| r.to_markdown());
            incident.timeline = super::timeline::build(&records, &incident.id);
        }
        self.drafted_at = head;
        Ok(())
    }

    /// Reads the engine back from the database: incidents, requests, the latest
    /// observation of every check, and when each monitor is next due.
    pub(super) fn load(&mut self) -> Result<()> {
        let incidents: Vec<Incident> = parse_docs(self.state.incident_docs()?, "incident")?
            .into_iter()
            .map(|(_, incident)| incident)
            .collect();
        let requests: BTreeMap<String, ApprovalRequest> =
            parse_docs(self.state.request_docs()?, "approval request")?
                .into_iter()
                .collect();
        self.settled.clear();
        // Open incidents were written with their drafts, in the transaction that
        // appended their records: drafted up to the chain's head.
        self.drafted_at = chain::head(&*self.state)?
            .map(|h| h.seq)
            .unwrap_or_default();
        for incident in &incidents {
            if incident.status == IncidentStatus::Resolved {
                self.settled.insert(incident.id.clone());
            }
        }
        for (proposal, request) in &requests {
            if request.state != RequestState::Pending {
                self.settled.insert(proposal.clone());
            }
        }
        self.incidents.replace(incidents);
        self.requests = requests;
        self.load_access()?;
        self.load_waves()?;
        self.latest.clear();
        self.next_due.clear();
        let periods = self.periods();
        for observation in monitor::latest_all(&*self.state)? {
            {
                let at = observation.at.naive();
                let due = periods.get(&observation.monitor).map(|every| at + *every);
                if let Some(due) = due {
                    let entry = self
                        .next_due
                        .entry(observation.monitor.clone())
                        .or_insert(due);
                    *entry = (*entry).max(due);
                }
            }
            self.note_latest(observation);
        }
        Ok(())
    }

    /// A database the engine never ran on starts its mark at the newest observation:
    /// what was stored before is a baseline, not news.
    pub(super) fn init_observation_mark(&self) -> Result<()> {
        self.state
            .transact(|tx| tx.start_observation_mark(OBSERVATION_MARK))
    }

    /// Observations the poller stored that the engine has not acted on yet.
    pub(super) fn unseen_observations(&self) -> Result<Vec<(i64, Observation)>> {
        let mark = self.state.meta(OBSERVATION_MARK)?;
        let mark = mark.and_then(|m| m.parse::<i64>().ok()).unwrap_or(0);
        monitor::stored_after(&*self.state, mark)
    }

    /// Moves the mark past `id`, inside the transaction that acted on it.
    pub(super) fn mark_observations_done(&self, id: i64) -> Result<()> {
        self.remember(OBSERVATION_MARK, &id.to_string())
    }
}

/// The incidents a state database holds, read without an engine (and without writing:
/// `conn` may be read-only). Who may decide is the proposal's owner here; the running
/// engine adds the escalation targets a request has reached.
pub fn stored_incidents(conn: &dyn Store) -> Result<Vec<IncidentView>> {
    let incidents: Vec<(String, Incident)> = parse_docs(conn.incident_docs()?, "incident")?;
    Ok(incidents
        .into_iter()
        .map(|(_, incident)| incident.view(&|_| None))
        .collect())
}

/// Stored (key, JSON document) pairs read back into their type; `what` names a
/// document that does not parse.
fn parse_docs<T: serde::de::DeserializeOwned>(
    docs: Vec<(String, String)>,
    what: &str,
) -> Result<Vec<(String, T)>> {
    let mut out = Vec::new();
    for (key, doc) in docs {
        let value = serde_json::from_str(&doc)
            .with_context(|| format!("{what} {key} in the state database"))?;
        out.push((key, value));
    }
    Ok(out)
}
