//! Effects outside the database (pausing a job, writing a dbt file, queuing a run) go
//! intent → effect → outcome. The intent commits first, with whatever decided it; the
//! effect is carried out after the commit; the outcome commits with the chain records
//! that say what happened. Every effect first looks whether it already happened, so
//! nothing is done twice.
//!
//! A person's intent belongs to the request that made it: that request carries it out,
//! and if the request is refused (the effect failed, or what it did could not be
//! recorded) the intent is withdrawn, its effect put back where it can be, in the same
//! transaction that records the refusal. Nobody's later request and no turn of the
//! clock carries out someone else's decision. Only an intent found pending when the
//! engine starts (the engine died mid-request) is carried out, once, by the engine: the
//! client that asked learns what came of it by its request id (`request_outcome`).
//! The engine's own intents are tried again every turn until they succeed.

use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

use super::orchestrator::Schedule;
use super::*;

/// What is done outside the database. Each is idempotent: doing it twice is doing it once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Pause or resume a job's schedule at the orchestrator.
    SetPaused { job: String, paused: bool },
    /// Replace a dbt file's content `from` with `to` (relative to the project folder).
    WriteFile {
        file: String,
        from: String,
        to: String,
    },
    /// Queue one run of a job; `key` makes a second request for it the same run.
    QueueRun {
        job: String,
        key: String,
        by: String,
    },
    /// Copy each table, then queue the backfill's command through the job: the copies
    /// are its undo. `tag` names the copies (the proposal).
    Backfill {
        job: String,
        command: String,
        tables: Vec<String>,
        tag: String,
        by: String,
    },
    /// Put tables back as the copies hold them.
    Restore {
        versions: Vec<crate::warehouse::TableVersion>,
    },
}

/// What the engine records once the effect is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "then", rename_all = "snake_case")]
pub enum Completion {
    /// A decision whose effect is now in place: record it and move the proposal on.
    Decision(Decided),
    /// A hold's schedule was resumed because its incident verified.
    Resumed { incident: String, proposal: String },
    /// A dispatched run is queued at the orchestrator.
    RunQueued {
        incident: String,
        job: String,
        dispatch: u64,
        after_recovery: bool,
        actor: String,
    },
}

/// A decision as it is recorded on the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decided {
    pub incident: String,
    pub proposal: String,
    pub verdict: Verdict,
    /// The decider as recorded on the chain (JSON), and as people read it.
    pub actor: String,
    pub actor_display: String,
    pub content_hash: String,
    pub reason: String,
}

/// What carrying out an effect found.
#[derive(Debug, Clone, Default, Serialize)]
struct Outcome {
    /// The effect was already in place (a retry after a crash).
    already_done: bool,
    /// The orchestrator's run id, for a queued run.
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<String>,
    /// What the effect did, in words, where that is more than the proposal says (a
    /// schedule left paused because it was paused before; a cron people must stop).
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<String>,
    /// The copies a backfill took before it was queued.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    versions: Vec<crate::warehouse::TableVersion>,
}

#[derive(Clone)]
struct Pending {
    id: i64,
    subject: String,
    effect: Effect,
    completion: Completion,
    by_person: bool,
    /// The client request that made it, and whose (a person's intent only).
    client_request: Option<String>,
    asker_uid: Option<u32>,
}

/// Which intents are whose, in memory: the database says what is pending, this says
/// who may carry it out.
#[derive(Default)]
pub(super) struct InFlight {
    /// Whether the intents pending at start have been collected.
    started: bool,
    /// People's intents found pending at start: their requests died with the engine.
    orphans: BTreeSet<i64>,
    /// The people's intents the request being answered made.
    mine: BTreeSet<i64>,
    /// The request being answered: its client id and the asker's uid.
    asking: Option<(String, u32)>,
    /// Refused intents whose withdrawal could not be written yet (a full disk): never
    /// carried out, written as withdrawn at the next chance.
    unwritten: BTreeMap<i64, (Pending, String)>,
}

/// A client request id: what a client may send, and what is kept by it.
pub(super) fn valid_client_request(id: &str) -> bool {
    (8..=64).contains(&id.len()) && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

impl Engine {
    /// Commits an intent inside the current transaction. `subject` (a proposal or an
    /// incident) keeps a second intent for the same thing from being made meanwhile.
    pub(super) fn intend(
        &mut self,
        subject: &str,
        effect: Effect,
        completion: Completion,
        by_person: bool,
    ) -> Result<()> {
        anyhow::ensure!(
            !self.intent_pending(subject)?,
            "{subject} already has a change in flight; wait for it to finish"
        );
        let asking = self.in_flight.asking.clone().filter(|_| by_person);
        self.state.execute(
            "INSERT INTO intent (created_at, subject, effect, completion, by_person,
                                 client_request, asker_uid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                self.now_or_wall(),
                subject,
                serde_json::to_string(&effect)?,
                serde_json::to_string(&completion)?,
                by_person,
                asking.as_ref().map(|(id, _)| id),
                asking.as_ref().map(|(_, uid)| uid),
            ],
        )?;
        if by_person {
            self.in_flight.mine.insert(self.state.last_insert_rowid());
        }
        Ok(())
    }

    /// Starts answering one request (`asking`: its client id and the asker's uid): the
    /// intents it makes are its own.
    pub(super) fn begin_request(&mut self, asking: Option<(String, u32)>) {
        self.in_flight.asking = asking;
        self.in_flight.mine.clear();
    }

    /// The request being answered: its client id and the asker's uid.
    pub(super) fn in_flight_asking(&self) -> Option<(String, u32)> {
        self.in_flight.asking.clone()
    }

    /// Whether the request being answered made an intent of its own (its answer is
    /// then written when the intent is carried out or withdrawn).
    pub(super) fn request_made_intent(&self) -> bool {
        !self.in_flight.mine.is_empty()
    }

    pub(super) fn end_request(&mut self) {
        self.in_flight.asking = None;
        self.in_flight.mine.clear();
    }

    /// Keeps the answer to a client's request by its id, inside the current
    /// transaction (the one that records the decision or its refusal).
    pub(super) fn remember_answer(
        &self,
        client_request: &str,
        asker_uid: u32,
        answer: &api::Outcome,
    ) -> Result<()> {
        self.state.execute(
            "INSERT OR IGNORE INTO request_outcome (client_request, asker_uid, at, outcome)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                client_request,
                asker_uid,
                self.now_or_wall(),
                serde_json::to_string(answer)?
            ],
        )?;
        Ok(())
    }

    /// The answer kept for `client_request`, if `asker_uid` asked it.
    pub(super) fn kept_answer(
        &self,
        client_request: &str,
        asker_uid: u32,
    ) -> Result<Option<api::Outcome>> {
        let kept: Option<String> = self
            .state
            .query_row(
                "SELECT outcome FROM request_outcome WHERE client_request = ?1 AND asker_uid = ?2",
                params![client_request, asker_uid],
                |r| r.get(0),
            )
            .optional()?;
        kept.map(|k| serde_json::from_str(&k).context("a kept answer"))
            .transpose()
    }

    /// What came of `client_request`, asked by `asker_uid` (a client whose connection
    /// was lost mid-request). An intent of it still pending from before a restart is
    /// carried out first; a refusal not yet written is told as it was decided.
    pub(super) fn what_happened(&mut self, client_request: &str, asker_uid: u32) -> api::Outcome {
        if let Err(e) = self.run_intents() {
            self.notices.push(format!(
                "carrying out what was left in flight failed: {e:#}"
            ));
        }
        match self.kept_answer(client_request, asker_uid) {
            Ok(Some(answer)) => return answer,
            Ok(None) => {}
            Err(e) => {
                return api::Outcome::Refused {
                    reason: Refusal::new(
                        RefusalKind::Failed,
                        format!("the answer to request {client_request} cannot be read: {e:#}"),
                    ),
                }
            }
        }
        let unwritten = self.in_flight.unwritten.values().find(|(intent, _)| {
            intent.client_request.as_deref() == Some(client_request)
                && intent.asker_uid == Some(asker_uid)
        });
        if let Some((_, message)) = unwritten {
            return api::Outcome::Refused {
                reason: Refusal::new(RefusalKind::Failed, message.clone()),
            };
        }
        api::Outcome::Refused {
            reason: Refusal::new(
                RefusalKind::NotFound,
                format!(
                    "the engine has no record of request {client_request}: it was not decided, \
                     and nothing of it is on the chain; send it again if it is still wanted"
                ),
            ),
        }
    }

    /// How a hold's job schedule stood before the hold paused it, once it was read.
    pub(super) fn held_schedule(&self, proposal: &str) -> Result<Option<Schedule>> {
        let before: Option<String> = self
            .state
            .query_row(
                "SELECT before FROM held_schedule WHERE proposal = ?1",
                [proposal],
                |r| r.get(0),
            )
            .optional()?;
        before
            .map(|b| serde_json::from_str(&b).with_context(|| format!("{proposal}: held schedule")))
            .transpose()
    }

    /// Resumes `job` before a run of it is queued, where the orchestrator starts no run
    /// of a paused job (Airflow) and the job is paused by a hold of the run's own
    /// incident (`subject`: the incident, or a proposal of it). The hold's undo puts the
    /// schedule back as it was before the hold, as ever. A job paused by anyone else
    /// is not dataward's to resume: the run is refused, saying so.
    fn unpause_for_run(&self, subject: &str, job: &str) -> Result<Option<String>> {
        let Some(orchestrator) = &self.orchestrator else {
            return Ok(None);
        };
        if orchestrator.starts_runs_while_paused() || !orchestrator.schedule(job)?.paused {
            return Ok(None);
        }
        let incident = match self.find_proposal(subject) {
            Ok((i, _)) => i,
            Err(_) => self.incident_index(subject)?,
        };
        let held_here = self.incidents[incident].proposals.iter().any(|p| {
            p.state == ProposalState::Approved
                && matches!(&p.body, ProposalBody::Hold { job: held, .. } if held == job)
        });
        anyhow::ensure!(
            held_here,
            "{job} is paused at the orchestrator, which starts no run of a paused job; \
             it was not paused by this incident's hold: resume it there first"
        );
        orchestrator.restore(job, &Schedule::running())?;
        Ok(Some(format!(
            "resumed the {job} schedule for the run: the orchestrator starts no run of a \
             paused job (the hold's undo puts it back as it was before the hold)"
        )))
    }

    pub(super) fn intent_pending(&self, subject: &str) -> Result<bool> {
        Ok(self.state.query_row(
            "SELECT count(*) FROM intent WHERE subject = ?1 AND status = 'pending'",
            [subject],
            |r| r.get::<_, i64>(0),
        )? > 0)
    }

    fn pending_intents(&self) -> Result<Vec<Pending>> {
        let mut stmt = self.state.prepare(
            "SELECT id, subject, effect, completion, by_person, client_request, asker_uid
             FROM intent WHERE status = 'pending' ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, bool>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<u32>>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, subject, effect, completion, by_person, client_request, asker_uid) = row?;
            out.push(Pending {
                id,
                subject,
                effect: serde_json::from_str(&effect)
                    .with_context(|| format!("intent #{id}: effect"))?,
                completion: serde_json::from_str(&completion)
                    .with_context(|| format!("intent #{id}: completion"))?,
                by_person,
                client_request,
                asker_uid,
            });
        }
        Ok(out)
    }

    /// The pending intents this engine may carry out now: its own, the people's it
    /// found at start, and those of the request being answered. A person's intent
    /// whose request was refused is never among them.
    fn ours_to_carry_out(&mut self) -> Result<Vec<Pending>> {
        let pending = self.pending_intents()?;
        if !self.in_flight.started {
            self.in_flight.started = true;
            self.in_flight.orphans = pending
                .iter()
                .filter(|i| i.by_person && !self.in_flight.mine.contains(&i.id))
                .map(|i| i.id)
                .collect();
        }
        let flight = &self.in_flight;
        Ok(pending
            .into_iter()
            .filter(|i| !flight.unwritten.contains_key(&i.id))
            .filter(|i| {
                !i.by_person || flight.orphans.contains(&i.id) || flight.mine.contains(&i.id)
            })
            .collect())
    }

    /// Carries out the intents that are ours to carry out (see `ours_to_carry_out`). A
    /// person's intent that fails, or whose outcome cannot be recorded, is withdrawn
    /// and its refusal returned (their command is refused); the engine's own stays
    /// pending and is tried again next turn.
    pub(super) fn run_intents(&mut self) -> Result<(Vec<Event>, Vec<String>)> {
        self.write_withdrawals();
        let mut events = Vec::new();
        let mut failures = Vec::new();
        let pending = self.ours_to_carry_out()?;
        let touches_scheduler = pending
            .iter()
            .any(|i| !matches!(i.effect, Effect::WriteFile { .. }));
        for intent in pending {
            self.in_flight.orphans.remove(&intent.id);
            match self.perform(&intent.subject, &intent.effect) {
                Ok(outcome) => {
                    let recorded = self.transact(|engine| {
                        let events = engine.complete(&intent.completion, &outcome)?;
                        engine.close_intent(
                            intent.id,
                            "done",
                            &serde_json::to_string(&outcome)?,
                        )?;
                        if let (Some(request), Some(uid)) =
                            (&intent.client_request, intent.asker_uid)
                        {
                            let seq = chain::head(&engine.state)?.map(|h| h.seq);
                            let answer = api::Outcome::Accepted {
                                seq,
                                events: events.clone(),
                            };
                            engine.remember_answer(request, uid, &answer)?;
                        }
                        Ok(events)
                    });
                    match recorded {
                        Ok(done) => events.extend(done),
                        Err(e) if intent.by_person => {
                            let reason = format!(
                                "{} was done but could not be recorded: {e:#}",
                                describe(&intent.effect)
                            );
                            failures.push(self.withdraw(&intent, reason, Some(&outcome)));
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => {
                    if intent.by_person {
                        let reason = format!("{} failed: {e:#}", describe(&intent.effect));
                        failures.push(self.withdraw(&intent, reason, None));
                    } else {
                        let reason = format!("{e:#}");
                        self.notices.push(format!(
                            "{}: {reason}; dataward tries again",
                            describe(&intent.effect)
                        ));
                    }
                }
            }
        }
        if touches_scheduler {
            // A paused job or a queued run shows on the bar in the next snapshot. (A
            // `PollTask`'s next turn does this when polling is not inline.)
            self.refresh_scheduler();
        }
        Ok((events, failures))
    }

    /// Withdraws a person's refused intent: its effect is put back as far as it may
    /// have gone (`done`: what it did, when it was done but not recorded), then the
    /// intent is closed with the refusal, on the chain and as its request's answer, in
    /// one transaction. When that cannot be written (a full disk) the intent is kept
    /// aside, never carried out, and written at the next chance. Returns the refusal.
    fn withdraw(&mut self, intent: &Pending, reason: String, done: Option<&Outcome>) -> String {
        let message = match self.put_back(intent, done) {
            Ok(None) => reason,
            Ok(Some(put_back)) => format!("{reason}; {put_back}"),
            Err(e) => format!(
                "{reason}; putting it back failed too ({e:#}): {} may have taken effect, \
                 so check it where it runs and undo it by hand if it did",
                describe(&intent.effect)
            ),
        };
        match self.write_withdrawal(intent, &message) {
            Ok(()) => message,
            Err(e) => {
                tracing::warn!(intent = intent.id, error = %format!("{e:#}"), "a withdrawal is not recorded yet");
                self.in_flight
                    .unwritten
                    .insert(intent.id, (intent.clone(), message.clone()));
                format!(
                    "{message}; the refusal itself could not be recorded yet ({e:#}): dataward \
                     records it as soon as it can, and never carries this change out"
                )
            }
        }
    }

    fn write_withdrawal(&mut self, intent: &Pending, message: &str) -> Result<()> {
        self.transact(|engine| {
            engine.close_intent(intent.id, "withdrawn", message)?;
            if let Effect::SetPaused { paused: true, .. } = intent.effect {
                // Refused: the schedule read for it is not the one a later approval
                // must put back.
                engine.state.execute(
                    "DELETE FROM held_schedule WHERE proposal = ?1",
                    [&intent.subject],
                )?;
            }
            if engine.chain_alarm.is_none() {
                engine.record(
                    "intent_failed",
                    ENGINE_ACTOR,
                    json!({"intent": intent.id, "effect": intent.effect, "error": message,
                           "request": intent.client_request}),
                )?;
            }
            if let (Some(request), Some(uid)) = (&intent.client_request, intent.asker_uid) {
                let answer = api::Outcome::Refused {
                    reason: Refusal::new(RefusalKind::Failed, message),
                };
                engine.remember_answer(request, uid, &answer)?;
            }
            Ok(())
        })
    }

    /// Writes the withdrawals a full disk held back; those that still cannot be
    /// written wait for the next chance.
    fn write_withdrawals(&mut self) {
        let unwritten: Vec<(Pending, String)> =
            self.in_flight.unwritten.values().cloned().collect();
        for (intent, message) in unwritten {
            if self.write_withdrawal(&intent, &message).is_ok() {
                self.in_flight.unwritten.remove(&intent.id);
            }
        }
    }

    /// Undoes a refused intent's effect as far as it may have gone, in words; None
    /// when nothing of it can have happened. A queued run cannot be taken back: the
    /// refusal says where it is.
    fn put_back(&self, intent: &Pending, done: Option<&Outcome>) -> Result<Option<String>> {
        match &intent.effect {
            Effect::SetPaused { job, paused: true } => {
                // The schedule is read and kept before the pause is asked: without it,
                // nothing was asked.
                let Some(before) = self.held_schedule(&intent.subject)? else {
                    return Ok(None);
                };
                let orchestrator = self.orchestrator.as_ref().context("no orchestrator")?;
                orchestrator.restore(job, &before)?;
                Ok(Some(format!("the {job} schedule was put back as it was")))
            }
            Effect::SetPaused { job, paused: false } => {
                let orchestrator = self.orchestrator.as_ref().context("no orchestrator")?;
                orchestrator.pause(job)?;
                Ok(Some(format!(
                    "the {job} schedule is paused again, as the hold has it"
                )))
            }
            Effect::WriteFile { file, from, to } => {
                let path = self.project_file(file)?;
                let current = std::fs::read_to_string(&path)
                    .with_context(|| format!("{}", path.display()))?;
                if current != *to {
                    return Ok(None);
                }
                crate::store::files::write_atomic(&path, from.as_bytes())?;
                Ok(Some(format!("{file} was put back as it was")))
            }
            Effect::QueueRun { job, key, .. } => {
                Ok(Some(match done.and_then(|o| o.run.as_ref()) {
                    Some(run) => format!(
                        "run {run} of {job} was queued at the orchestrator and dataward does not \
                     follow it: cancel it there if it must not run"
                    ),
                    None => format!(
                        "the orchestrator may have queued a run of {job} anyway (request key \
                     {key}): look there"
                    ),
                }))
            }
            Effect::Backfill { job, tag, .. } => {
                Ok(Some(match done.and_then(|o| o.run.as_ref()) {
                    Some(run) => format!(
                        "backfill run {run} of {job} was queued at the orchestrator and dataward \
                     does not follow it: cancel it there if it must not run"
                    ),
                    None => format!(
                        "the orchestrator may have queued the backfill anyway (request key \
                     {tag}): look there"
                    ),
                }))
            }
            Effect::Restore { .. } => Ok(Some(
                "some tables may have been restored from their copies already: check them".into(),
            )),
        }
    }

    fn close_intent(&self, id: i64, status: &str, outcome: &str) -> Result<()> {
        self.state.execute(
            "UPDATE intent SET status = ?2, outcome = ?3 WHERE id = ?1",
            params![id, status, outcome],
        )?;
        Ok(())
    }

    /// Does the effect unless it is already in place. `subject` is the intent's (the
    /// proposal, for a hold).
    fn perform(&self, subject: &str, effect: &Effect) -> Result<Outcome> {
        match effect {
            Effect::SetPaused { job, paused: true } => {
                let orchestrator = self
                    .orchestrator
                    .as_ref()
                    .context("no orchestrator configured to pause jobs")?;
                // How the schedule stood is kept before it is touched: a retry after a
                // crash finds it, never the paused state the first try left.
                let before = match self.held_schedule(subject)? {
                    Some(before) => before,
                    None => {
                        let before = orchestrator.schedule(job)?;
                        self.state.execute(
                            "INSERT INTO held_schedule (proposal, job, before, taken_at)
                             VALUES (?1, ?2, ?3, ?4)",
                            params![
                                subject,
                                job,
                                serde_json::to_string(&before)?,
                                self.now_or_wall()
                            ],
                        )?;
                        before
                    }
                };
                if before.paused {
                    return Ok(Outcome {
                        already_done: true,
                        action: Some(format!(
                            "left the {job} schedule as it was: someone had paused it already"
                        )),
                        ..Outcome::default()
                    });
                }
                let instruction = orchestrator.pause(job)?;
                Ok(Outcome {
                    action: instruction,
                    ..Outcome::default()
                })
            }
            Effect::SetPaused { job, paused: false } => {
                let orchestrator = self
                    .orchestrator
                    .as_ref()
                    .context("no orchestrator configured to resume jobs")?;
                // A hold from before schedules were kept paused a running job.
                let before = self
                    .held_schedule(subject)?
                    .unwrap_or_else(Schedule::running);
                orchestrator.restore(job, &before)?;
                Ok(Outcome {
                    action: Some(if before.paused {
                        format!("left the {job} schedule paused: it was paused before the hold")
                    } else {
                        format!("resumed the {job} schedule")
                    }),
                    ..Outcome::default()
                })
            }
            Effect::WriteFile { file, from, to } => {
                let path = self.project_file(file)?;
                let current = std::fs::read_to_string(&path)
                    .with_context(|| format!("{}", path.display()))?;
                // Compared as dbt reads files; written in the file's own framing (its
                // final newline, its line endings), so an undo gives it back whole.
                use crate::propose::file_text;
                if file_text::same_as_dbt_reads(&current, to) {
                    return Ok(Outcome {
                        already_done: true,
                        ..Outcome::default()
                    });
                }
                if let Some(difference) =
                    file_text::first_difference(&current, from, "the proposal")
                {
                    anyhow::bail!(
                        "{} no longer matches the proposal: {difference}; it was changed since it was proposed",
                        path.display()
                    );
                }
                let text = file_text::framed_like(to, &current);
                crate::store::files::write_atomic(&path, text.as_bytes())?;
                Ok(Outcome::default())
            }
            Effect::QueueRun { job, key, by } => {
                let orchestrator = self
                    .orchestrator
                    .as_ref()
                    .context("no orchestrator configured")?;
                let action = self.unpause_for_run(subject, job)?;
                let (run, already_done) = orchestrator
                    .queue_run(job, &self.now_or_wall(), by, key)
                    .context("the scheduler refused the run")?;
                Ok(Outcome {
                    already_done,
                    run: Some(run),
                    action,
                    ..Outcome::default()
                })
            }
            Effect::Backfill {
                job,
                command,
                tables,
                tag,
                by,
            } => {
                let orchestrator = self
                    .orchestrator
                    .as_ref()
                    .context("no orchestrator configured to run a backfill")?;
                let warehouse = self
                    .dbt_warehouse()
                    .context("no warehouse holds the tables to copy")?;
                // The copies first: a backfill is never run without its undo. A copy
                // this proposal took on an earlier attempt (a crash, a refused run) is
                // that undo still: found again, never taken twice.
                let mut versions = Vec::new();
                for table in tables {
                    let relation = crate::warehouse::Relation::parse(table)?;
                    let mut version = match warehouse.find_version(&relation, tag)? {
                        Some(earlier) => earlier,
                        None => warehouse
                            .snapshot_table(&relation, tag)
                            .with_context(|| format!("copying {table} before the backfill"))?,
                    };
                    version.scope = Some(self.backfill_scope(table, command));
                    versions.push(version);
                }
                let action = self.unpause_for_run(subject, job)?;
                let (run, already_done) = orchestrator
                    .queue_command(job, command, &self.now_or_wall(), by, tag)
                    .context("the scheduler refused the backfill")?;
                Ok(Outcome {
                    already_done,
                    run: Some(run),
                    versions,
                    action,
                })
            }
            Effect::Restore { versions } => Ok(Outcome {
                action: Some(self.restore_backfill(versions)?),
                ..Outcome::default()
            }),
        }
    }

    /// An approved backfill is queued with its copies taken: the incident follows its
    /// run like any other, and the chain says which command and which copies.
    fn backfill_queued(
        &mut self,
        proposal: &str,
        run: &str,
        versions: &[crate::warehouse::TableVersion],
    ) -> Result<Vec<Event>> {
        let (i, p) = self.find_proposal(proposal)?;
        let ProposalBody::Backfill { job, command, .. } =
            self.incidents[i].proposals[p].body.clone()
        else {
            return Ok(Vec::new());
        };
        let incident = self.incidents[i].id.clone();
        let seq = self.record(
            "backfill_queued",
            ENGINE_ACTOR,
            json!({"incident": incident, "proposal": proposal, "run": run, "job": job,
                   "command": command, "versions": versions,
                   "undo": "roll back restores these copies"}),
        )?;
        let event = self.event(EventKind::BackfillQueued {
            incident,
            proposal: proposal.to_string(),
            command,
            run: run.to_string(),
            copies: versions.iter().map(|v| v.copy.clone()).collect(),
            seq,
        });
        self.incidents[i].versions = versions.to_vec();
        self.incidents[i].run = Some(RunState {
            id: run.to_string(),
            job,
            after_recovery: true,
            finished: None,
        });
        Ok(vec![event])
    }

    /// Records what a finished effect means, inside the outcome's transaction.
    fn complete(&mut self, completion: &Completion, outcome: &Outcome) -> Result<Vec<Event>> {
        match completion {
            Completion::Decision(decided) => {
                let proposal = &decided.proposal;
                let mut events = self.record_decision(decided, outcome.action.as_deref())?;
                if let Some(run) = &outcome.run {
                    events.extend(self.backfill_queued(proposal, run, &outcome.versions)?);
                }
                Ok(events)
            }
            Completion::Resumed { incident, proposal } => {
                let (i, p) = self.find_proposal(proposal)?;
                let ProposalBody::Hold { job, .. } = &self.incidents[i].proposals[p].body else {
                    anyhow::bail!("{proposal} is not a hold");
                };
                let action = outcome
                    .action
                    .clone()
                    .unwrap_or_else(|| format!("resumed the {job} schedule"));
                let seq = self.record(
                    "undo",
                    ENGINE_ACTOR,
                    json!({"incident": incident, "proposal": proposal, "action": action}),
                )?;
                self.incidents[i].proposals[p].state = ProposalState::Completed;
                let mut events = vec![self.event(EventKind::Undo {
                    proposal: proposal.clone(),
                    action,
                    seq,
                })];
                events.extend(self.finish_resolution(i)?);
                Ok(events)
            }
            Completion::RunQueued {
                incident,
                job,
                dispatch,
                after_recovery,
                actor,
            } => {
                let run = outcome
                    .run
                    .clone()
                    .context("the scheduler returned no run id")?;
                let i = self.incident_index(incident)?;
                let mut payload =
                    json!({"incident": incident, "run": run, "job": job, "dispatch": dispatch});
                if let Some(action) = &outcome.action {
                    payload["effect"] = json!(action);
                    self.notices.push(format!("{incident}: {action}"));
                }
                let seq = self.record("run_queued", actor, payload)?;
                self.incidents[i].run = Some(RunState {
                    id: run,
                    job: job.clone(),
                    after_recovery: *after_recovery,
                    finished: None,
                });
                Ok(vec![self.event(EventKind::Run {
                    incident: incident.clone(),
                    job: job.clone(),
                    status: "queued".into(),
                    seq,
                })])
            }
        }
    }
}

fn describe(effect: &Effect) -> String {
    match effect {
        Effect::SetPaused { job, paused: true } => format!("pausing {job}"),
        Effect::SetPaused { job, paused: false } => format!("resuming {job}"),
        Effect::WriteFile { file, .. } => format!("writing {file}"),
        Effect::QueueRun { job, .. } => format!("queuing a run of {job}"),
        Effect::Backfill { command, .. } => format!("copying the tables and queuing `{command}`"),
        Effect::Restore { versions } => format!("restoring {} tables", versions.len()),
    }
}
