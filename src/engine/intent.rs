//! Effects outside the database (pausing a job, writing a dbt file, queuing a run) go
//! intent → effect → outcome. The intent commits first, with whatever decided it; the
//! effect is carried out after the commit; the outcome commits with the chain records
//! that say what happened. An intent found without an outcome (the engine was killed in
//! between) is carried out again at the next turn: every effect first looks whether it
//! already happened, so nothing is done twice.

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

struct Pending {
    id: i64,
    subject: String,
    effect: Effect,
    completion: Completion,
    by_person: bool,
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
        self.state.execute(
            "INSERT INTO intent (created_at, subject, effect, completion, by_person)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                self.now_or_wall(),
                subject,
                serde_json::to_string(&effect)?,
                serde_json::to_string(&completion)?,
                by_person
            ],
        )?;
        Ok(())
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
            "SELECT id, subject, effect, completion, by_person FROM intent WHERE status = 'pending' ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, subject, effect, completion, by_person) = row?;
            out.push(Pending {
                id,
                subject,
                effect: serde_json::from_str(&effect)
                    .with_context(|| format!("intent #{id}: effect"))?,
                completion: serde_json::from_str(&completion)
                    .with_context(|| format!("intent #{id}: completion"))?,
                by_person,
            });
        }
        Ok(out)
    }

    /// Carries out every intent without an outcome. A person's intent that fails is
    /// closed as failed and its reason returned (their command is refused); the
    /// engine's own stays pending and is tried again next turn.
    pub(super) fn run_intents(&mut self) -> Result<(Vec<Event>, Vec<String>)> {
        let mut events = Vec::new();
        let mut failures = Vec::new();
        let pending = self.pending_intents()?;
        let touches_scheduler = pending
            .iter()
            .any(|i| !matches!(i.effect, Effect::WriteFile { .. }));
        for intent in pending {
            match self.perform(&intent.subject, &intent.effect) {
                Ok(outcome) => {
                    events.extend(self.transact(|engine| {
                        let events = engine.complete(&intent.completion, &outcome)?;
                        engine.close_intent(
                            intent.id,
                            "done",
                            &serde_json::to_string(&outcome)?,
                        )?;
                        Ok(events)
                    })?);
                }
                Err(e) => {
                    let reason = format!("{e:#}");
                    if intent.by_person {
                        self.transact(|engine| {
                            engine.close_intent(intent.id, "failed", &reason)?;
                            if let Effect::SetPaused { paused: true, .. } = intent.effect {
                                // Refused: the schedule read for it is not the one a
                                // later approval must put back.
                                engine.state.execute(
                                    "DELETE FROM held_schedule WHERE proposal = ?1",
                                    [&intent.subject],
                                )?;
                            }
                            engine.record(
                                "intent_failed",
                                ENGINE_ACTOR,
                                json!({"intent": intent.id, "effect": intent.effect, "error": reason}),
                            )?;
                            Ok(())
                        })?;
                        failures.push(reason);
                    } else {
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
                if current == *to {
                    return Ok(Outcome {
                        already_done: true,
                        ..Outcome::default()
                    });
                }
                anyhow::ensure!(
                    current == *from,
                    "{} no longer matches the proposal; it was changed by someone else",
                    path.display()
                );
                crate::store::files::write_atomic(&path, to.as_bytes())?;
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
