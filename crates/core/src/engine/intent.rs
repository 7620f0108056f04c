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
//!
//! The effect itself is carried out by [`super::effects`]: on worker threads once the
//! engine serves (`carry_out_effects_on_workers`), its outcome coming back as an input
//! ([`Engine::effect_finished`]); inline otherwise (the demo, tests driving an
//! `Engine`). Either way the same steps record the same outcome.

use serde::{Deserialize, Serialize};

use super::*;
use crate::effects::orchestrator::Schedule;

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
    /// Drop a resolved incident's backfill copies (their retention ended). A copy
    /// already gone is fine: a drop cut short by a crash is simply done again.
    DropVersions {
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
    /// A resolved incident's backfill copies are dropped.
    VersionsDropped {
        incident: String,
        versions: Vec<crate::warehouse::TableVersion>,
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

/// An intent as the state database holds it.
#[derive(Clone)]
pub(super) struct Pending {
    pub(super) id: i64,
    pub(super) subject: String,
    pub(super) effect: Effect,
    pub(super) completion: Completion,
    pub(super) by_person: bool,
    /// The client request that made it, and whose (a person's intent only).
    pub(super) client_request: Option<String>,
    pub(super) asker_uid: Option<u32>,
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
    /// Intents handed to a worker whose report has not come back.
    sent: BTreeSet<i64>,
    /// The workers, once the engine serves; None carries effects out inline.
    runner: Option<effects::Runner>,
}

/// What came of a person's request: answered now, or once the effect of the intent it
/// made (or found in flight) is reported. Only an engine with workers holds answers.
pub enum Answer {
    Now(api::Outcome),
    Held(i64),
}

/// An intent's last step is recorded: its events, and the answer its request gets.
pub struct Settled {
    pub intent: i64,
    pub events: Vec<Event>,
    pub answer: api::Outcome,
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
        let id = self.state.add_intent(&crate::store::intents::NewIntent {
            created_at: self.now(),
            subject,
            effect: &serde_json::to_string(&effect)?,
            completion: &serde_json::to_string(&completion)?,
            by_person,
            client_request: asking.as_ref().map(|(id, _)| id.as_str()),
            asker_uid: asking.as_ref().map(|(_, uid)| *uid),
        })?;
        if by_person {
            self.in_flight.mine.insert(id);
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
        self.state.keep_request_outcome(
            client_request,
            asker_uid,
            self.now(),
            &serde_json::to_string(answer)?,
        )
    }

    /// The answer kept for `client_request`, if `asker_uid` asked it.
    pub(super) fn kept_answer(
        &self,
        client_request: &str,
        asker_uid: u32,
    ) -> Result<Option<api::Outcome>> {
        let kept = self.state.request_outcome(client_request, asker_uid)?;
        kept.map(|k| serde_json::from_str(&k).context("a kept answer"))
            .transpose()
    }

    /// What came of `client_request`, asked by `asker_uid` (a client whose connection
    /// was lost mid-request). An intent of it still pending from before a restart is
    /// carried out first; a refusal not yet written is told as it was decided.
    pub(super) fn what_happened(&mut self, client_request: &str, asker_uid: u32) -> Answer {
        if let Err(e) = self.run_intents() {
            self.notices.push(format!(
                "carrying out what was left in flight failed: {e:#}"
            ));
        }
        match self.kept_answer(client_request, asker_uid) {
            Ok(Some(answer)) => return Answer::Now(answer),
            Ok(None) => {}
            Err(e) => {
                return Answer::Now(api::Outcome::Refused {
                    reason: Refusal::new(
                        RefusalKind::Failed,
                        format!("the answer to request {client_request} cannot be read: {e:#}"),
                    ),
                })
            }
        }
        // Still being carried out on a worker: answered once it is.
        if let Some(intent) = self.in_flight_for(client_request, asker_uid) {
            return Answer::Held(intent);
        }
        let unwritten = self.in_flight.unwritten.values().find(|(intent, _)| {
            intent.client_request.as_deref() == Some(client_request)
                && intent.asker_uid == Some(asker_uid)
        });
        if let Some((_, message)) = unwritten {
            return Answer::Now(api::Outcome::Refused {
                reason: Refusal::new(RefusalKind::Failed, message.clone()),
            });
        }
        Answer::Now(api::Outcome::Refused {
            reason: Refusal::new(
                RefusalKind::NotFound,
                format!(
                    "the engine has no record of request {client_request}: it was not decided, \
                     and nothing of it is on the chain; send it again if it is still wanted"
                ),
            ),
        })
    }

    /// How a hold's job schedule stood before the hold paused it, once it was read.
    pub(super) fn held_schedule(&self, proposal: &str) -> Result<Option<Schedule>> {
        let before = self.state.held_schedule(proposal)?;
        before
            .map(|b| serde_json::from_str(&b).with_context(|| format!("{proposal}: held schedule")))
            .transpose()
    }

    /// The warehouse a backfill copies its tables in and restores them from.
    fn effects_warehouse(&self) -> Option<crate::monitor::poller::SharedWarehouse> {
        let monitored = self.config.monitor.iter().find(|m| m.source.is_some());
        let name = monitored
            .map(|m| m.warehouse.clone())
            .or_else(|| self.config.warehouse.keys().next().cloned())?;
        self.poller.warehouse(&name).cloned()
    }

    /// Whether `job` is held by an approved hold of the incident `subject` names (the
    /// incident, or a proposal of it): then a paused `job` is dataward's to resume for
    /// a run of that incident.
    fn held_by_own_hold(&self, subject: &str, job: &str) -> bool {
        let incident = match self.find_proposal(subject) {
            Ok((i, _)) => Some(i),
            Err(_) => self.incident_index(subject).ok(),
        };
        incident.is_some_and(|i| {
            self.incidents[i].proposals.iter().any(|p| {
                p.state == ProposalState::Approved
                    && matches!(&p.body, ProposalBody::Hold { job: held, .. } if held == job)
            })
        })
    }

    pub(super) fn intent_pending(&self, subject: &str) -> Result<bool> {
        self.state.intent_pending_for(subject)
    }

    fn pending_intents(&self) -> Result<Vec<Pending>> {
        let mut out = Vec::new();
        for stored in self.state.pending_intents()? {
            let id = stored.id;
            out.push(Pending {
                id,
                subject: stored.subject,
                effect: serde_json::from_str(&stored.effect)
                    .with_context(|| format!("intent #{id}: effect"))?,
                completion: serde_json::from_str(&stored.completion)
                    .with_context(|| format!("intent #{id}: completion"))?,
                by_person: stored.by_person,
                client_request: stored.client_request,
                asker_uid: stored.asker_uid,
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

    /// Hands effects to worker threads from now on: each worker's report comes back
    /// through `report` (to the hub, as an input) and is given to `effect_finished`.
    pub fn carry_out_effects_on_workers(
        &mut self,
        report: impl Fn(effects::Finished) + Send + Sync + 'static,
    ) {
        self.in_flight.runner = Some(effects::Runner::new(
            Arc::clone(&self.effects),
            Arc::new(report),
        ));
    }

    /// Carries out the intents that are ours to carry out (see `ours_to_carry_out`),
    /// those not handed to a worker already. With workers, each is handed over and
    /// this returns at once: its outcome is recorded by `effect_finished`. Inline, a
    /// person's intent that fails, or whose outcome cannot be recorded, is withdrawn
    /// and its refusal returned (their command is refused); the engine's own stays
    /// pending and is tried again next turn.
    pub(super) fn run_intents(&mut self) -> Result<(Vec<Event>, Vec<String>)> {
        self.write_withdrawals();
        // What a worker reads just before it dispatches a run: the stop as committed.
        if let Ok(stop) = stop::state(&*self.state) {
            self.effects.set_org_stopped(stop.active);
        }
        let mut events = Vec::new();
        let mut failures = Vec::new();
        let pending: Vec<Pending> = self
            .ours_to_carry_out()?
            .into_iter()
            .filter(|i| !self.in_flight.sent.contains(&i.id))
            .collect();
        let touches_scheduler = pending
            .iter()
            .any(|i| !matches!(i.effect, Effect::WriteFile { .. }));
        for intent in pending {
            self.in_flight.orphans.remove(&intent.id);
            let mut job = self.job_for(intent);
            if let Some(runner) = &mut self.in_flight.runner {
                self.in_flight.sent.insert(job.intent.id);
                runner.submit(job);
                continue;
            }
            loop {
                let done = effects::carry_out(&self.effects, &job);
                let (settled, next) = self.settle(job, done);
                if let Some(settled) = settled {
                    events.extend(settled.events);
                    if let api::Outcome::Refused { reason } = settled.answer {
                        failures.push(reason.message);
                    }
                }
                match next {
                    Some(next) => job = next,
                    None => break,
                }
            }
        }
        if touches_scheduler && self.in_flight.runner.is_none() {
            // A paused job or a queued run shows on the bar in the next snapshot (read
            // by the poll task, when the engine has one: see `set_poll_worker`).
            self.refresh_scheduler();
        }
        Ok((events, failures))
    }

    /// A worker's report: its outcome recorded (or its next step handed over). Returns
    /// what was recorded once the intent's last step is, with the answer its request
    /// gets.
    pub fn effect_finished(&mut self, finished: effects::Finished) -> Option<Settled> {
        let effects::Finished { job, done } = finished;
        let effect = job.intent.effect.clone();
        let (settled, next) = self.settle(job, done);
        if let Some(runner) = &mut self.in_flight.runner {
            runner.reported(&effect, next);
        }
        if settled.is_some() {
            self.refresh_scheduler();
        }
        settled
    }

    /// Whether an effect handed to a worker, a warehouse probe asked of one, or a poll
    /// asked of the poll task has not reported yet (a driver that plays a story waits for them before its next turn).
    pub fn awaiting_workers(&self) -> bool {
        !self.in_flight.sent.is_empty() || self.evidence.awaiting() || self.awaiting_poll()
    }

    /// The intent in flight of `client_request` (asked by `asker_uid`), if any.
    pub(super) fn in_flight_for(&self, client_request: &str, asker_uid: u32) -> Option<i64> {
        let pending = self.pending_intents().ok()?;
        pending
            .into_iter()
            .find(|i| {
                i.client_request.as_deref() == Some(client_request)
                    && i.asker_uid == Some(asker_uid)
                    && self.in_flight.sent.contains(&i.id)
            })
            .map(|i| i.id)
    }

    /// The intents this request made that are in flight on a worker.
    pub(super) fn request_in_flight(&self) -> Option<i64> {
        self.in_flight
            .mine
            .iter()
            .copied()
            .find(|id| self.in_flight.sent.contains(id))
    }

    /// The first step of an intent, with what the engine knows that it needs.
    fn job_for(&self, intent: Pending) -> effects::Job {
        let (mut held, mut held_here, mut scopes) = (None, false, BTreeMap::new());
        match &intent.effect {
            Effect::SetPaused { .. } => {
                held = self.held_schedule(&intent.subject).ok().flatten();
            }
            Effect::QueueRun { job, .. } => held_here = self.held_by_own_hold(&intent.subject, job),
            Effect::Backfill {
                job,
                command,
                tables,
                ..
            } => {
                held_here = self.held_by_own_hold(&intent.subject, job);
                for table in tables {
                    scopes.insert(table.clone(), self.backfill_scope(table, command));
                }
            }
            Effect::WriteFile { .. } | Effect::Restore { .. } | Effect::DropVersions { .. } => {}
        }
        let warehouse = match &intent.effect {
            Effect::Backfill { .. } | Effect::Restore { .. } | Effect::DropVersions { .. } => {
                self.effects_warehouse()
            }
            _ => None,
        };
        effects::Job {
            intent,
            step: effects::Step::Perform,
            now: self.now(),
            held,
            held_here,
            scopes,
            project_dir: self.project_dir().ok(),
            warehouse,
        }
    }

    /// Records what a step found. Returns what was recorded when it was the intent's
    /// last step, and the next step when there is one.
    fn settle(
        &mut self,
        job: effects::Job,
        done: effects::Done,
    ) -> (Option<Settled>, Option<effects::Job>) {
        use effects::Done;
        let intent = job.intent.clone();
        let finished = |events: Vec<Event>, answer| {
            Some(Settled {
                intent: intent.id,
                events,
                answer,
            })
        };
        let refused = |message: String| api::Outcome::Refused {
            reason: Refusal::new(RefusalKind::Failed, message),
        };
        let settled = match done {
            Done::ScheduleRead(before) => {
                let now = self.now();
                let kept = self.transact(|engine| {
                    engine.state.keep_held_schedule(
                        &intent.subject,
                        match &intent.effect {
                            Effect::SetPaused { job, .. } => job.as_str(),
                            _ => "",
                        },
                        &serde_json::to_string(&before)?,
                        now,
                    )
                });
                match kept {
                    Ok(()) => {
                        let next = effects::Job {
                            held: Some(before),
                            ..job
                        };
                        return (None, Some(next));
                    }
                    Err(e) => self.failed(&intent, format!("{e:#}"), Ok(None)),
                }
            }
            Done::Performed(outcome) => {
                let recorded = self.transact(|engine| {
                    let events = engine.complete(&intent.completion, &outcome)?;
                    engine.close_intent(intent.id, "done", &serde_json::to_string(&outcome)?)?;
                    let answer = api::Outcome::Accepted {
                        seq: chain::head(&*engine.state)?.map(|h| h.seq),
                        events: events.clone(),
                    };
                    if let (Some(request), Some(uid)) = (&intent.client_request, intent.asker_uid) {
                        engine.remember_answer(request, uid, &answer)?;
                    }
                    Ok((events, answer))
                });
                match recorded {
                    Ok((events, answer)) => finished(events, answer),
                    Err(e) if intent.by_person => {
                        let reason = format!(
                            "{} was done but could not be recorded: {e:#}",
                            effects::describe(&intent.effect)
                        );
                        let next = effects::Job {
                            step: effects::Step::PutBack {
                                reason,
                                done: outcome,
                            },
                            ..job
                        };
                        return (None, Some(next));
                    }
                    Err(e) => self.failed(&intent, format!("{e:#}"), Ok(None)),
                }
            }
            Done::Failed { error, put_back } => self.failed(&intent, error, put_back),
            Done::Stopped(reason) => {
                // Whoever's it is: a run the stop caught before it started is never
                // started later, the stop lifted or not.
                let message = self.withdraw(&intent, reason);
                finished(Vec::new(), refused(message))
            }
            Done::PutBack(put_back) => {
                let effects::Step::PutBack { reason, .. } = &job.step else {
                    unreachable!("a put back answers its own step")
                };
                let message =
                    self.withdraw(&intent, with_put_back(&intent.effect, reason, put_back));
                finished(Vec::new(), refused(message))
            }
        };
        self.in_flight.sent.remove(&intent.id);
        (settled, None)
    }

    /// A step failed: a person's intent is withdrawn (what put it back said with it),
    /// refusing their request; the engine's own stays pending and is tried again.
    fn failed(
        &mut self,
        intent: &Pending,
        error: String,
        put_back: Result<Option<String>, String>,
    ) -> Option<Settled> {
        let reason = format!("{} failed: {error}", effects::describe(&intent.effect));
        if intent.by_person {
            let message = self.withdraw(intent, with_put_back(&intent.effect, &reason, put_back));
            return Some(Settled {
                intent: intent.id,
                events: Vec::new(),
                answer: api::Outcome::Refused {
                    reason: Refusal::new(RefusalKind::Failed, message),
                },
            });
        }
        self.notices.push(format!(
            "{}: {error}; dataward tries again",
            effects::describe(&intent.effect)
        ));
        None
    }

    /// Closes a person's refused intent (its effect already put back as far as it may
    /// have gone) with the refusal, on the chain and as its request's answer, in one
    /// transaction. When that cannot be written (a full disk) the intent is kept
    /// aside, never carried out, and written at the next chance. Returns the refusal.
    fn withdraw(&mut self, intent: &Pending, message: String) -> String {
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
                engine.state.forget_held_schedule(&intent.subject)?;
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

    fn close_intent(&self, id: i64, status: &str, outcome: &str) -> Result<()> {
        self.state.close_intent(id, status, outcome)
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
    fn complete(
        &mut self,
        completion: &Completion,
        outcome: &effects::Outcome,
    ) -> Result<Vec<Event>> {
        match completion {
            // A wave's repoint is decided by its wave (`waves.rs`).
            Completion::Decision(decided) if waves::is_wave(&decided.proposal) => {
                self.record_repoint_decision(decided, outcome.action.as_deref())
            }
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
            Completion::VersionsDropped { incident, versions } => {
                self.record(
                    "versions_dropped",
                    ENGINE_ACTOR,
                    json!({"incident": incident, "versions": versions, "why": "retention ended"}),
                )?;
                let i = self.incident_index(incident)?;
                self.incidents[i].versions.clear();
                // Resolved incidents are written once; this change must be written too.
                self.settled.remove(incident);
                Ok(Vec::new())
            }
        }
    }
}

/// A refusal's reason with what putting the effect back did.
fn with_put_back(
    effect: &Effect,
    reason: &str,
    put_back: Result<Option<String>, String>,
) -> String {
    match put_back {
        Ok(None) => reason.to_string(),
        Ok(Some(put_back)) => format!("{reason}; {put_back}"),
        Err(e) => format!(
            "{reason}; putting it back failed too ({e}): {} may have taken effect, \
             so check it where it runs and undo it by hand if it did",
            effects::describe(effect)
        ),
    }
}
