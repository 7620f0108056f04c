//! Effects are carried out on workers, never on the engine's thread: an orchestrator
//! that takes a call and never answers delays only the effects queued behind it, while
//! the engine answers everyone else (the org stop first of all). A worker gets a [`Job`]
//! holding everything the effect needs, read by the engine beforehand (the schedule as
//! it stood before a hold, whether a paused job may be resumed for a run, the copies'
//! scopes, the project folder, the warehouse); it calls the orchestrator, writes the
//! file or copies the tables, and reports what it found as a [`Finished`]. It never
//! touches the engine or the state database: the engine records the outcome (or the
//! withdrawal) in its own transaction when the report comes back as an input.
//!
//! Effects on one thing go one at a time, in the order they were asked (a [`lane`]: the
//! orchestrator, or one dbt file), so a pause and the resume after it never race. Each
//! call has its own limit: the orchestrator's configured timeout, the warehouse's.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use serde::Serialize;

use super::intent::{Effect, Pending};
use crate::effects::orchestrator::{Orchestrator, Schedule};
use crate::monitor::poller::SharedWarehouse;
use crate::warehouse::{BackfillScope, Relation, TableVersion};

/// What every worker shares: the orchestrator, and whether the org-wide stop is set as
/// the engine last committed it (read just before a run is dispatched).
pub(super) struct Shared {
    pub(super) orchestrator: Option<Arc<dyn Orchestrator>>,
    org_stopped: AtomicBool,
}

impl Shared {
    pub(super) fn new(orchestrator: Option<Arc<dyn Orchestrator>>) -> Shared {
        Shared {
            orchestrator,
            org_stopped: AtomicBool::new(false),
        }
    }

    pub(super) fn set_org_stopped(&self, on: bool) {
        self.org_stopped.store(on, Ordering::SeqCst);
    }
}

/// What carrying out an effect found.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct Outcome {
    /// The effect was already in place (a retry after a crash).
    pub(super) already_done: bool,
    /// The orchestrator's run id, for a queued run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) run: Option<String>,
    /// What the effect did, in words, where that is more than the proposal says (a
    /// schedule left paused because it was paused before; a cron people must stop).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) action: Option<String>,
    /// The copies a backfill took before it was queued.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) versions: Vec<TableVersion>,
}

/// One step of an intent for a worker, with all it needs from the engine.
#[derive(Clone)]
pub struct Job {
    pub(super) intent: Pending,
    pub(super) step: Step,
    /// The engine's time when the step was handed over (a run's `at`).
    pub(super) now: crate::clock::Timestamp,
    /// A hold's job schedule as kept before the hold touched it, once it was read.
    pub(super) held: Option<Schedule>,
    /// Whether the run's job, if the orchestrator has it paused, is paused by a hold of
    /// the run's own incident (dataward's to resume for the run).
    pub(super) held_here: bool,
    /// What a backfill rebuilds in each table (the undo's scope).
    pub(super) scopes: BTreeMap<String, BackfillScope>,
    pub(super) project_dir: Option<PathBuf>,
    pub(super) warehouse: Option<SharedWarehouse>,
}

#[derive(Clone)]
pub(super) enum Step {
    /// Carry the effect out (unless it is in place already).
    Perform,
    /// It was done but could not be recorded: put it back as far as it went.
    PutBack { reason: String, done: Outcome },
}

/// What a worker found.
pub(super) enum Done {
    Performed(Outcome),
    /// A hold's schedule as it stands, read before anything is touched: the engine
    /// keeps it, then the pause is asked.
    ScheduleRead(Schedule),
    /// It failed; for a person's intent, what putting it back did (in words, or why
    /// that failed too).
    Failed {
        error: String,
        put_back: Result<Option<String>, String>,
    },
    /// A run not yet started while the org-wide stop is set: nothing was asked.
    Stopped(String),
    /// What putting back a done but unrecorded effect did.
    PutBack(Result<Option<String>, String>),
}

/// A worker's report, as the engine's input.
pub struct Finished {
    pub(super) job: Job,
    pub(super) done: Done,
}

/// Which effects wait for each other: those at the orchestrator (or its warehouse), and
/// those on one dbt file.
fn lane(effect: &Effect) -> String {
    match effect {
        Effect::WriteFile { file, .. } => format!("file {file}"),
        _ => "orchestrator".to_string(),
    }
}

/// Hands jobs to worker threads, one at a time per lane, and says when a lane is free.
/// Lives with the engine, on its thread; the workers report through `report`.
pub(super) struct Runner {
    shared: Arc<Shared>,
    report: Arc<dyn Fn(Finished) + Send + Sync>,
    lanes: BTreeMap<String, Lane>,
}

#[derive(Default)]
struct Lane {
    busy: bool,
    waiting: VecDeque<Job>,
}

impl Runner {
    pub(super) fn new(shared: Arc<Shared>, report: Arc<dyn Fn(Finished) + Send + Sync>) -> Runner {
        Runner {
            shared,
            report,
            lanes: BTreeMap::new(),
        }
    }

    /// Queues a job behind its lane's.
    pub(super) fn submit(&mut self, job: Job) {
        let lane = self.lanes.entry(lane(&job.intent.effect)).or_default();
        lane.waiting.push_back(job);
        self.start_next();
    }

    /// A job of `effect`'s lane has reported: the lane takes the job's next step, if it
    /// has one (ahead of the others waiting: it belongs to the job that just ran), or
    /// the next job.
    pub(super) fn reported(&mut self, effect: &Effect, next: Option<Job>) {
        let lane = self.lanes.entry(lane(effect)).or_default();
        lane.busy = false;
        if let Some(next) = next {
            lane.waiting.push_front(next);
        }
        self.start_next();
    }

    fn start_next(&mut self) {
        for (name, lane) in &mut self.lanes {
            if lane.busy {
                continue;
            }
            let Some(job) = lane.waiting.pop_front() else {
                continue;
            };
            lane.busy = true;
            let (shared, report) = (Arc::clone(&self.shared), Arc::clone(&self.report));
            let kept = job.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("dataward-effect {name}"))
                .spawn(move || {
                    let done = carry_out(&shared, &job);
                    report(Finished { job, done });
                });
            if let Err(e) = spawned {
                // Nothing was asked: the effect fails as any other would.
                (self.report)(Finished {
                    job: kept,
                    done: Done::Failed {
                        error: format!("no worker thread to carry it out: {e}"),
                        put_back: Ok(None),
                    },
                });
            }
        }
    }
}

/// Carries out one step (on a worker, or inline when the engine has no workers).
pub(super) fn carry_out(shared: &Shared, job: &Job) -> Done {
    match &job.step {
        Step::PutBack { done, .. } => {
            Done::PutBack(put_back(shared, job, Some(done)).map_err(|e| format!("{e:#}")))
        }
        Step::Perform => {
            let dispatches = matches!(
                job.intent.effect,
                Effect::QueueRun { .. } | Effect::Backfill { .. }
            );
            if dispatches && shared.org_stopped.load(Ordering::SeqCst) {
                return Done::Stopped(format!(
                    "the org-wide stop was set before {} started: nothing was asked of the \
                     orchestrator, and dataward dispatches nothing until two people lift it",
                    describe(&job.intent.effect)
                ));
            }
            match perform(shared, job) {
                Ok(done) => done,
                Err(e) => Done::Failed {
                    error: format!("{e:#}"),
                    // The engine's own intents are tried again later, not put back.
                    put_back: if job.intent.by_person {
                        put_back(shared, job, None).map_err(|e| format!("{e:#}"))
                    } else {
                        Ok(None)
                    },
                },
            }
        }
    }
}

fn orchestrator<'a>(shared: &'a Shared, doing: &str) -> Result<&'a dyn Orchestrator> {
    shared
        .orchestrator
        .as_deref()
        .with_context(|| format!("no orchestrator configured to {doing}"))
}

/// Does the effect unless it is already in place.
fn perform(shared: &Shared, job: &Job) -> Result<Done> {
    let performed = |outcome| Ok(Done::Performed(outcome));
    match &job.intent.effect {
        Effect::SetPaused {
            job: name,
            paused: true,
        } => {
            let orchestrator = orchestrator(shared, "pause jobs")?;
            // How the schedule stood is kept (by the engine) before it is touched: a
            // retry after a crash finds it, never the paused state the first try left.
            let Some(before) = &job.held else {
                return Ok(Done::ScheduleRead(orchestrator.schedule(name)?));
            };
            if before.paused {
                return performed(Outcome {
                    already_done: true,
                    action: Some(format!(
                        "left the {name} schedule as it was: someone had paused it already"
                    )),
                    ..Outcome::default()
                });
            }
            performed(Outcome {
                action: orchestrator.pause(name)?,
                ..Outcome::default()
            })
        }
        Effect::SetPaused {
            job: name,
            paused: false,
        } => {
            let orchestrator = orchestrator(shared, "resume jobs")?;
            // A hold from before schedules were kept paused a running job.
            let before = job.held.clone().unwrap_or_else(Schedule::running);
            orchestrator.restore(name, &before)?;
            performed(Outcome {
                action: Some(if before.paused {
                    format!("left the {name} schedule paused: it was paused before the hold")
                } else {
                    format!("resumed the {name} schedule")
                }),
                ..Outcome::default()
            })
        }
        Effect::WriteFile { file, from, to } => {
            let path = project_file(job.project_dir.as_deref(), file)?;
            let current =
                std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
            // Compared as dbt reads files; written in the file's own framing (its
            // final newline, its line endings), so an undo gives it back whole.
            use crate::propose::file_text;
            if file_text::same_as_dbt_reads(&current, to) {
                return performed(Outcome {
                    already_done: true,
                    ..Outcome::default()
                });
            }
            if let Some(difference) = file_text::first_difference(&current, from, "the proposal") {
                anyhow::bail!(
                    "{} no longer matches the proposal: {difference}; it was changed since it was proposed",
                    path.display()
                );
            }
            let text = file_text::framed_like(to, &current);
            crate::store::files::write_atomic(&path, text.as_bytes())?;
            performed(Outcome::default())
        }
        Effect::QueueRun { job: name, key, by } => {
            let orchestrator = orchestrator(shared, "queue runs")?;
            let action = unpause_for_run(orchestrator, job, name)?;
            let (run, already_done) = orchestrator
                .queue_run(name, job.now, by, key)
                .context("the scheduler refused the run")?;
            performed(Outcome {
                already_done,
                run: Some(run),
                action,
                ..Outcome::default()
            })
        }
        Effect::Backfill {
            job: name,
            command,
            tables,
            tag,
            by,
        } => {
            let orchestrator = orchestrator(shared, "run a backfill")?;
            let warehouse = job
                .warehouse
                .as_deref()
                .context("no warehouse holds the tables to copy")?;
            // The copies first: a backfill is never run without its undo. A copy this
            // proposal took on an earlier attempt (a crash, a refused run) is that undo
            // still: found again, never taken twice.
            let mut versions = Vec::new();
            for table in tables {
                let relation = Relation::parse(table)?;
                let mut version = match warehouse.find_version(&relation, tag)? {
                    Some(earlier) => earlier,
                    None => warehouse
                        .snapshot_table(&relation, tag)
                        .with_context(|| format!("copying {table} before the backfill"))?,
                };
                version.scope = job.scopes.get(table).cloned();
                versions.push(version);
            }
            let action = unpause_for_run(orchestrator, job, name)?;
            let (run, already_done) = orchestrator
                .queue_command(name, command, job.now, by, tag)
                .context("the scheduler refused the backfill")?;
            performed(Outcome {
                already_done,
                run: Some(run),
                versions,
                action,
            })
        }
        Effect::Restore { versions } => {
            let warehouse = job
                .warehouse
                .as_deref()
                .context("no warehouse holds the tables to restore")?;
            performed(Outcome {
                action: Some(super::backfill::restore_backfill(warehouse, versions)?),
                ..Outcome::default()
            })
        }
        Effect::DropVersions { versions } => {
            let warehouse = job
                .warehouse
                .as_deref()
                .context("no warehouse holds the copies to drop")?;
            for version in versions {
                warehouse
                    .drop_version(version)
                    .with_context(|| format!("{} not dropped yet", version.copy))?;
            }
            performed(Outcome::default())
        }
    }
}

/// Resumes `name` before a run of it is queued, where the orchestrator starts no run of
/// a paused job (Airflow) and the job is paused by a hold of the run's own incident
/// (`held_here`, as the engine read it). The hold's undo puts the schedule back as it
/// was before the hold, as ever. A job paused by anyone else is not dataward's to
/// resume: the run is refused, saying so.
fn unpause_for_run(
    orchestrator: &dyn Orchestrator,
    job: &Job,
    name: &str,
) -> Result<Option<String>> {
    if orchestrator.starts_runs_while_paused() || !orchestrator.schedule(name)?.paused {
        return Ok(None);
    }
    anyhow::ensure!(
        job.held_here,
        "{name} is paused at the orchestrator, which starts no run of a paused job; \
         it was not paused by this incident's hold: resume it there first"
    );
    orchestrator.restore(name, &Schedule::running())?;
    Ok(Some(format!(
        "resumed the {name} schedule for the run: the orchestrator starts no run of a \
         paused job (the hold's undo puts it back as it was before the hold)"
    )))
}

/// Undoes a refused intent's effect as far as it may have gone, in words; None when
/// nothing of it can have happened. A queued run cannot be taken back: the refusal says
/// where it is.
fn put_back(shared: &Shared, job: &Job, done: Option<&Outcome>) -> Result<Option<String>> {
    match &job.intent.effect {
        Effect::SetPaused {
            job: name,
            paused: true,
        } => {
            // The schedule is read and kept before the pause is asked: without it,
            // nothing was asked.
            let Some(before) = &job.held else {
                return Ok(None);
            };
            orchestrator(shared, "put the schedule back")?.restore(name, before)?;
            Ok(Some(format!("the {name} schedule was put back as it was")))
        }
        Effect::SetPaused {
            job: name,
            paused: false,
        } => {
            orchestrator(shared, "pause the job again")?.pause(name)?;
            Ok(Some(format!(
                "the {name} schedule is paused again, as the hold has it"
            )))
        }
        Effect::WriteFile { file, from, to } => {
            let path = project_file(job.project_dir.as_deref(), file)?;
            let current =
                std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
            if current != *to {
                return Ok(None);
            }
            crate::store::files::write_atomic(&path, from.as_bytes())?;
            Ok(Some(format!("{file} was put back as it was")))
        }
        Effect::QueueRun { job: name, key, .. } => {
            Ok(Some(match done.and_then(|o| o.run.as_ref()) {
                Some(run) => format!(
                    "run {run} of {name} was queued at the orchestrator and dataward does not \
                 follow it: cancel it there if it must not run"
                ),
                None => format!(
                    "the orchestrator may have queued a run of {name} anyway (request key \
                 {key}): look there"
                ),
            }))
        }
        Effect::Backfill { job: name, tag, .. } => {
            Ok(Some(match done.and_then(|o| o.run.as_ref()) {
                Some(run) => format!(
                    "backfill run {run} of {name} was queued at the orchestrator and dataward \
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
        // The engine's own, never put back: dropped again until it is done.
        Effect::DropVersions { .. } => Ok(None),
    }
}

/// A file of the dbt project, by its path relative to `project` (None: no project is
/// configured), refused unless it resolves inside the project after following every
/// symlink.
pub(super) fn project_file(project: Option<&Path>, file: &str) -> Result<PathBuf> {
    let project =
        project.context("no project_dir in [lineage]: there is no dbt project to change")?;
    let root = project
        .canonicalize()
        .with_context(|| format!("dbt project {}", project.display()))?;
    let path = root.join(file);
    let resolved = path
        .canonicalize()
        .with_context(|| format!("{}", path.display()))?;
    anyhow::ensure!(
        resolved.starts_with(&root),
        "{file} resolves to {}, outside the dbt project {}; dataward changes nothing there",
        resolved.display(),
        root.display()
    );
    Ok(resolved)
}

/// The effect in a few words, for refusals and notices.
pub(super) fn describe(effect: &Effect) -> String {
    match effect {
        Effect::SetPaused { job, paused: true } => format!("pausing {job}"),
        Effect::SetPaused { job, paused: false } => format!("resuming {job}"),
        Effect::WriteFile { file, .. } => format!("writing {file}"),
        Effect::QueueRun { job, .. } => format!("queuing a run of {job}"),
        Effect::Backfill { command, .. } => format!("copying the tables and queuing `{command}`"),
        Effect::Restore { versions } => format!("restoring {} tables", versions.len()),
        Effect::DropVersions { versions } => {
            format!("dropping {} backfill copies", versions.len())
        }
    }
}
