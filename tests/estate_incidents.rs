//! The engine on an estate of its own: the faults a new user replayed on a public dbt
//! project, injected one at a time into a real PostgreSQL estate with its own dbt-like
//! project and manifest (tests/support/estate.rs). Each asserts the cause with its
//! figures and units, the symptoms, the proposals and how the incident ends. Needs
//! PostgreSQL server binaries; skips without them unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::sync::{Arc, Mutex};

use chrono::{NaiveDateTime, TimeDelta};
use dataward::approve::Actor;
use dataward::effects::orchestrator::Pipeline;
use dataward::effects::orchestrator::{Orchestrator, RunRecord, Schedule};
use dataward::engine::api::{
    Command, EventKind, IncidentStatus, IncidentView, ProposalKind, ProposalState, Snapshot,
};
use dataward::engine::Engine;
use support::estate::Estate;
use support::pg::{start_or_skip, PgServer};

/// The demo's story, which must never show up here.
const DEMO_WORDS: &[&str] = &[
    "ticketing",
    "seat_section",
    "floor-a",
    "int_seat_map",
    "orders are not lost",
    "on-sale",
];

/// Wednesday 2024-05-15 09:40 UTC.
fn start() -> NaiveDateTime {
    "2024-05-15T09:40:00".parse().unwrap()
}

struct Run {
    _pg: PgServer,
    _dir: tempfile::TempDir,
    _data: tempfile::TempDir,
    estate: Arc<Estate>,
    engine: Engine,
    now: NaiveDateTime,
    /// Makes the scheduler refuse the next command.
    scheduler_down_once: Arc<std::sync::atomic::AtomicBool>,
}

/// The estate's scheduler: runs the job's dbt build, or the exact command a backfill
/// names, against the estate's real PostgreSQL (through its dbt stand-in), and reports
/// each run as a scheduler would.
struct EstateScheduler {
    estate: Arc<Estate>,
    runs: Mutex<Vec<(String, RunRecord)>>,
    /// Answer the next command with an error, as a scheduler that is down would.
    down_once: Arc<std::sync::atomic::AtomicBool>,
}

impl EstateScheduler {
    fn record(
        &self,
        key: &str,
        job: &str,
        at: dataward::clock::Timestamp,
        succeeded: bool,
        detail: String,
    ) -> (String, bool) {
        let mut runs = self.runs.lock().unwrap();
        if let Some((_, run)) = runs.iter().find(|(k, _)| k == key) {
            return (run.id.clone(), true);
        }
        let id = (runs.len() + 1).to_string();
        runs.push((
            key.to_string(),
            RunRecord {
                id: id.clone(),
                link: None,
                job: job.to_string(),
                status: if succeeded { "success" } else { "failed" }.to_string(),
                requested_at: Some(at),
                started_at: Some(at),
                finished_at: Some(at),
                detail,
            },
        ));
        (id, false)
    }
}

fn clock(at: dataward::clock::Timestamp) -> NaiveDateTime {
    at.naive()
}

impl Orchestrator for EstateScheduler {
    fn pipelines(&self) -> anyhow::Result<Vec<Pipeline>> {
        Ok(Vec::new())
    }
    fn schedule(&self, _job: &str) -> anyhow::Result<Schedule> {
        Ok(Schedule::running())
    }
    fn pause(&self, _job: &str) -> anyhow::Result<Option<String>> {
        Ok(None)
    }
    fn restore(&self, _job: &str, _before: &Schedule) -> anyhow::Result<()> {
        Ok(())
    }
    fn queue_run(
        &self,
        job: &str,
        at: dataward::clock::Timestamp,
        _by: &str,
        key: &str,
    ) -> anyhow::Result<(String, bool)> {
        let outcome = self.estate.dbt_run(clock(at));
        Ok(self.record(key, job, at, outcome.all_succeeded(), "dbt run".into()))
    }
    fn queue_command(
        &self,
        job: &str,
        command: &str,
        at: dataward::clock::Timestamp,
        _by: &str,
        key: &str,
    ) -> anyhow::Result<(String, bool)> {
        if self
            .down_once
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            anyhow::bail!("the scheduler answered 503 Service Unavailable");
        }
        // `dbt build --select MODEL+ --event-time-start START --event-time-end END`
        let words: Vec<&str> = command.split_whitespace().collect();
        let after = |flag: &str| {
            let i = words.iter().position(|w| *w == flag)?;
            words.get(i + 1).copied()
        };
        let (Some(select), Some(start), Some(end)) = (
            after("--select"),
            after("--event-time-start"),
            after("--event-time-end"),
        ) else {
            anyhow::bail!("not a backfill command: {command}");
        };
        let outcome = self.estate.dbt_backfill(
            clock(at),
            select.trim_end_matches('+'),
            start.parse()?,
            end.parse()?,
        );
        Ok(self.record(key, job, at, outcome.all_succeeded(), command.to_string()))
    }
    fn run(&self, _job: &str, id: &str) -> anyhow::Result<Option<RunRecord>> {
        let runs = self.runs.lock().unwrap();
        Ok(runs.iter().map(|(_, r)| r).find(|r| r.id == id).cloned())
    }
}

/// The estate, and an engine that has watched an hour of healthy loads with dbt every
/// ten minutes, so every check has a baseline.
fn healthy(test: &str) -> Option<Run> {
    healthy_with(test, |config| config.to_string())
}

/// `healthy`, with the estate's config text changed by `edit` first.
fn healthy_with(test: &str, edit: impl Fn(&str) -> String) -> Option<Run> {
    let pg = start_or_skip(test)?;
    let dir = tempfile::tempdir().unwrap();
    let estate = Estate::build(&pg, dir.path(), start());
    let config = std::fs::read_to_string(&estate.config).unwrap();
    std::fs::write(&estate.config, edit(&config)).unwrap();
    let estate = Arc::new(estate);
    let data = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&data.path().join("dataward.db")).unwrap();
    let down_once = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scheduler: Box<dyn Orchestrator> = Box::new(EstateScheduler {
        estate: estate.clone(),
        runs: Mutex::new(Vec::new()),
        down_once: down_once.clone(),
    });
    let engine = Engine::new(
        estate.load_config(),
        state,
        Some(scheduler),
        &Actor::current(),
    )
    .unwrap();
    let mut run = Run {
        _pg: pg,
        _dir: dir,
        _data: data,
        estate,
        engine,
        now: start(),
        scheduler_down_once: down_once,
    };
    run.play(60, true);
    assert!(
        run.snapshot().incidents.is_empty(),
        "{test}: the healthy hour opened {:#?}",
        run.snapshot().incidents
    );
    Some(run)
}

impl Run {
    /// Plays `minutes` in 5-minute polls: the loader every poll, dbt every ten minutes
    /// when `dbt` is on.
    fn play(&mut self, minutes: i64, dbt: bool) {
        self.play_with(minutes, dbt, true)
    }

    fn play_with(&mut self, minutes: i64, dbt: bool, load: bool) {
        self.play_steps(minutes, 5, dbt, load)
    }

    /// Plays `minutes` in steps of `step` minutes (longer steps for days of history).
    fn play_every(&mut self, minutes: i64, step: i64, dbt: bool) {
        self.play_steps(minutes, step, dbt, true)
    }

    fn play_steps(&mut self, minutes: i64, step: i64, dbt: bool, load: bool) {
        for _ in 0..minutes / step {
            self.now += TimeDelta::minutes(step);
            if load {
                self.estate.load_hour(self.now);
            }
            if dbt && self.now.format("%M").to_string().ends_with('0') {
                self.estate.dbt_run(self.now);
            }
            self.engine.tick(self.now).unwrap();
        }
    }

    fn snapshot(&self) -> Snapshot {
        let snapshot = self.engine.snapshot(false);
        // Nothing of the demo's story reaches an estate that is not the demo.
        let text = serde_json::to_string(&snapshot).unwrap().to_lowercase();
        for word in DEMO_WORDS {
            assert!(!text.contains(word), "{word:?} reached the estate: {text}");
        }
        snapshot
    }

    /// What `dataward receipt` prints for an incident, from the same state database.
    fn receipt_cli(&self, incident: &str) -> String {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("--data-dir")
            .arg(self._data.path())
            .args(["receipt", incident])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The only incident: one per root cause.
    fn incident(&self) -> IncidentView {
        let snapshot = self.snapshot();
        assert_eq!(
            snapshot.incidents.len(),
            1,
            "one incident per root cause: {:#?}",
            snapshot
                .incidents
                .iter()
                .map(|i| (&i.id, &i.title, &i.cause))
                .collect::<Vec<_>>()
        );
        snapshot.incidents[0].clone()
    }
}

fn cause(incident: &IncidentView) -> &str {
    incident.cause.as_deref().unwrap_or_default()
}

#[test]
fn most_of_todays_payments_deleted_is_a_partial_load_in_rows_loaded_today() {
    let Some(mut run) = healthy("partial_load") else {
        return;
    };
    let today = run.now.date();
    run.estate.delete_share_of_day("raw.payments", today, 0.6);
    run.play(5, false);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with(&format!(
            "rows loaded into raw.payments on {today} up to 10:45 fell to"
        )),
        "{cause}"
    );
    assert!(
        cause.contains("with no schema change on raw.payments"),
        "{cause}"
    );
    assert!(!cause.contains("row count"), "{cause}");
    assert!(
        incident.title.starts_with(&format!(
            "rows loaded into raw.payments on {today} up to 10:45 fell to"
        )),
        "{}",
        incident.title
    );
    // The job that reads the table is held until it recovers; nothing else is guessed.
    let kinds: Vec<ProposalKind> = incident.proposals.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, vec![ProposalKind::Hold], "{:#?}", incident.proposals);
    assert!(incident.proposals[0]
        .title
        .contains("until raw.payments recovers"));
    // R and `dataward receipt` agree: the open incident's receipt is what the chain holds.
    let receipt = incident.receipt.as_deref().unwrap();
    assert!(receipt.contains(&format!("**Open**: {} is not resolved", incident.id)));
    assert_eq!(receipt, run.receipt_cli(&incident.id));
}

#[test]
fn a_stalled_loader_names_its_writer_and_resolves_by_itself_once_it_loads_again() {
    let Some(mut run) = healthy("stalled_writer") else {
        return;
    };
    run.estate.stall(run.now);
    run.play(150, true);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with("raw.payments has not loaded since 2024-05-15 10:"),
        "{cause}"
    );
    assert!(
        cause.contains("its writer payments loader (owner platform-owner) has stalled"),
        "{cause}"
    );
    assert!(
        incident
            .evidence
            .iter()
            .any(|e| e.starts_with("time since raw.payments last loaded reached")),
        "{:#?}",
        incident.evidence
    );
    assert!(
        !incident
            .evidence
            .iter()
            .any(|e| e.contains("rows, ") && e.contains("time since")),
        "seconds are never rows: {:#?}",
        incident.evidence
    );
    let note = incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Note)
        .expect("a note for the writer's owner");
    assert_eq!(note.owner, "platform-owner");
    // The loader comes back; nobody decides anything; the checks recover and hold.
    run.estate.resume();
    run.play(60, true);
    let incident = run.incident();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:#?}",
        incident.checks
    );
    let receipt = incident.receipt.unwrap();
    assert!(
        receipt.contains("Recovered without intervention"),
        "{receipt}"
    );
    assert!(
        receipt.contains("time since raw.payments last loaded back within range"),
        "{receipt}"
    );
}

#[test]
fn short_batches_landing_on_schedule_are_the_loader_appending_not_a_reload() {
    let Some(mut run) = healthy("short_batches") else {
        return;
    };
    run.estate.short_loads("raw.payments", 0.4);
    let mut opened = None;
    for _ in 0..(14 * 12) {
        run.play(5, false);
        opened = run
            .snapshot()
            .incidents
            .into_iter()
            .find(|i| i.table == "raw.payments");
        if opened.is_some() {
            break;
        }
    }
    let incident = opened.expect("an incident on raw.payments within fourteen hours");
    let cause = cause(&incident);
    assert!(
        cause.starts_with("rows loaded into raw.payments on 2024-05-15 up to "),
        "{cause}"
    );
    // Each short batch still adds rows: the count rises, and that is no reload.
    assert!(!cause.contains("reload is under way"), "{cause}");
    assert!(
        cause.contains("new batches keep landing on schedule"),
        "{cause}"
    );
}

#[test]
fn one_table_stopped_while_its_writer_keeps_loading_the_other_is_not_a_stalled_writer() {
    let Some(mut run) = healthy("one_table_stopped") else {
        return;
    };
    run.estate.stop_table("raw.payments");
    run.play(150, true);
    // (analytics.orders, which joins the payments that stopped, may have opened one of
    // its own first: this is about the table that stopped.)
    let incident = run
        .snapshot()
        .incidents
        .into_iter()
        .find(|i| i.table == "raw.payments")
        .expect("an incident on raw.payments");
    let cause = cause(&incident);
    assert!(
        cause.starts_with("raw.payments has not loaded since 2024-05-15 10:"),
        "{cause}"
    );
    assert!(
        cause.contains(
            "its writer payments loader (owner platform-owner) stopped writing raw.payments while raw.orders kept loading"
        ),
        "{cause}"
    );
    assert!(!cause.contains("stalled"), "{cause}");
}

#[test]
fn nulls_in_new_rows_name_the_column_and_the_model_below_joins_as_a_symptom() {
    let Some(mut run) = healthy("null_spike") else {
        return;
    };
    run.estate.null_new_rows("raw.payments", "amount", 0.5);
    run.play(120, true);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with("null rate of raw.payments.amount in rows loaded since"),
        "{cause}"
    );
    assert!(cause.contains("no schema change explains it"), "{cause}");
    assert!(
        incident
            .title
            .starts_with("the null rate of raw.payments.amount in rows loaded since"),
        "{}",
        incident.title
    );
    let symptoms: Vec<(&str, &str)> = incident
        .symptoms
        .iter()
        .map(|s| (s.table.as_str(), s.check.as_str()))
        .collect();
    assert!(
        symptoms.contains(&("analytics.stg_payments", "null_rate(amount)")),
        "{symptoms:?}"
    );
    assert!(incident.symptoms.iter().all(|s| s
        .explanation
        .contains(&format!("where {} is open", incident.id))));
}

#[test]
fn a_whole_day_loaded_twice_is_a_duplicate_load() {
    let Some(mut run) = healthy("duplicate_load") else {
        return;
    };
    let yesterday = run.now.date() - TimeDelta::days(1);
    for hour in 0..24 {
        let at = yesterday.and_hms_opt(hour, 30, 0).unwrap();
        run.estate.duplicate_load("raw.payments", at);
    }
    run.play(5, false);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with(&format!(
            "rows loaded into raw.payments on {yesterday} came to"
        )),
        "{cause}"
    );
    assert!(cause.contains("2.0x the usual"), "{cause}");
    assert!(cause.contains("about 1 whole extra copy"), "{cause}");
}

#[test]
fn a_type_changed_in_place_that_breaks_a_model_is_an_incident_with_its_failed_runs_as_symptoms() {
    let Some(mut run) = healthy("schema_break") else {
        return;
    };
    run.estate
        .alter_type_in_place("raw.payments", "amount", "text");
    run.play(20, true);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with(
            "raw.payments.amount changed type from INTEGER to TEXT in place; 1 downstream model reads it in ways that break: stg_payments"
        ),
        "{cause}"
    );
    assert!(
        incident
            .evidence
            .iter()
            .any(|e| e.starts_with("stg_payments: `amount / 100`")),
        "{:#?}",
        incident.evidence
    );
    // dbt's own run results: the model failed and its child was skipped.
    let runs: Vec<(&str, &str)> = incident
        .symptoms
        .iter()
        .filter(|s| s.check == "dbt run")
        .map(|s| (s.table.as_str(), s.observed.as_str()))
        .collect();
    assert!(
        runs.iter()
            .any(|(t, o)| *t == "stg_payments"
                && o.contains("operator does not exist: text / integer")),
        "{runs:?}"
    );
    assert!(
        runs.iter()
            .any(|(t, o)| *t == "orders" && o.starts_with("skipped")),
        "{runs:?}"
    );
    let diff = incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .expect("a diff for the model that breaks");
    assert!(diff.title.contains("stg_payments"), "{}", diff.title);
    assert!(incident
        .proposals
        .iter()
        .any(|p| p.kind == ProposalKind::Note && p.owner == "platform-owner"));
}

fn person(role: &str) -> Actor {
    let mut actor = Actor::current();
    actor.stand_in = Some(role.to_string());
    actor
}

/// Approves a proposal as `role` and lets the engine carry it out.
fn approve(run: &mut Run, proposal: &dataward::engine::api::ProposalView, role: &str) {
    decide(
        run,
        Command::Approve {
            proposal: proposal.id.clone(),
            content_hash: proposal.content_hash.clone(),
            reason: "tested on the estate".to_string(),
        },
        role,
    );
}

/// Sends a decision as `role`, which must not be refused, and lets the engine carry it
/// out.
fn decide(run: &mut Run, command: Command, role: &str) {
    let events = run.engine.handle(command, &person(role));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Refused { .. })),
        "{events:?}"
    );
    run.engine.tick(run.now).unwrap();
}

#[test]
fn deleted_rows_put_back_resolve_the_incident_by_itself_and_withdraw_its_open_proposals() {
    let Some(mut run) = healthy("partial_load_recovers") else {
        return;
    };
    let today = run.now.date();
    run.estate.execute(&format!(
        "CREATE TABLE public.kept AS SELECT * FROM raw.payments WHERE loaded_at >= date '{today}'"
    ));
    run.estate.delete_share_of_day("raw.payments", today, 0.6);
    run.play(5, false);
    assert_eq!(run.incident().status, IncidentStatus::Open);
    // The loader's operator reloads the day.
    run.estate.execute(
        "INSERT INTO raw.payments SELECT k.* FROM public.kept k \
         WHERE NOT EXISTS (SELECT 1 FROM raw.payments p WHERE p.id = k.id)",
    );
    run.play(30, false);
    let incident = run.incident();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:#?}",
        incident.checks
    );
    assert!(incident
        .proposals
        .iter()
        .all(|p| p.state == ProposalState::Withdrawn));
    let receipt = incident.receipt.unwrap();
    assert!(
        receipt.contains("Recovered without intervention"),
        "{receipt}"
    );
    assert!(
        receipt.contains(&format!(
            "rows loaded into raw.payments on {today} back within range"
        )),
        "{receipt}"
    );
    assert!(receipt.contains("withdrawn at"), "{receipt}");
}

#[test]
fn a_resync_that_nulled_three_days_is_one_null_spike_with_the_models_below_as_symptoms() {
    let Some(mut run) = healthy("resync_nulls") else {
        return;
    };
    run.estate.resync_nulling_days("raw.payments", "amount", 3);
    run.play(30, true);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with("null rate of raw.payments.amount in rows loaded since")
            && cause.contains("rose to 100.0%"),
        "{cause}"
    );
    assert!(!cause.contains("row count"), "{cause}");
    let symptoms: Vec<&str> = incident.symptoms.iter().map(|s| s.table.as_str()).collect();
    assert!(symptoms.contains(&"analytics.stg_payments"), "{symptoms:?}");
}

#[test]
fn a_table_recreated_with_a_new_type_is_a_refill_that_closes_once_refilled_and_its_model_fixed() {
    let Some(mut run) = healthy("refill") else {
        return;
    };
    run.estate
        .recreate_with_type_and_refill("raw.payments", "amount", "text", 0.3);
    run.play(5, false);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with("raw.payments.amount changed type from INTEGER to TEXT; raw.payments was re-created by the payments loader (on_type_change = recreate; owner platform-owner)"),
        "{cause}"
    );
    assert!(!cause.contains("orders are not lost"), "{cause}");
    let kinds: Vec<ProposalKind> = incident.proposals.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        vec![ProposalKind::Hold, ProposalKind::Diff, ProposalKind::Note],
        "{:#?}",
        incident.proposals
    );
    let note = match &incident.proposals[2].body {
        dataward::engine::api::ProposalBody::Note { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        note.contains("- recreate (current): raw.payments is dropped, re-created"),
        "{note}"
    );
    assert!(
        note.contains("- pause: only raw.payments stops loading"),
        "{note}"
    );
    assert!(
        note.contains("- alter: amount changes to TEXT in place"),
        "{note}"
    );
    assert!(
        note.contains("stg_payments break on their next run"),
        "{note}"
    );
    // The loader finishes the refill: the rows are back, but stg_payments still cannot
    // read a text amount, so the incident stays open.
    run.estate.refill_more(1.0);
    run.play(30, true);
    let incident = run.incident();
    assert_eq!(incident.status, IncidentStatus::Open);
    // The owner approves the diff; dbt builds the model from it; the checks hold.
    let diff = incident.proposals[1].clone();
    approve(&mut run, &diff, "analytics-owner");
    run.play(40, true);
    let incident = run.incident();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:#?}",
        incident.checks
    );
    let receipt = incident.receipt.unwrap();
    assert!(
        !receipt.contains("Recovered without intervention"),
        "{receipt}"
    );
    assert!(
        receipt.contains("stg_payments runs on today's data"),
        "{receipt}"
    );
}

#[test]
fn an_in_place_change_closes_once_the_approved_diff_builds() {
    let Some(mut run) = healthy("schema_break_closes") else {
        return;
    };
    run.estate
        .alter_type_in_place("raw.payments", "amount", "text");
    run.play(20, true);
    let incident = run.incident();
    let diff = incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Diff)
        .unwrap()
        .clone();
    approve(&mut run, &diff, "analytics-owner");
    run.play(40, true);
    let incident = run.incident();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:#?}",
        incident.checks
    );
    assert!(
        incident.symptoms.iter().all(|s| s.recovered),
        "{:#?}",
        incident.symptoms
    );
}

#[test]
fn a_removed_column_that_a_model_reads_is_an_incident_until_it_is_back() {
    let Some(mut run) = healthy("removed_column") else {
        return;
    };
    // A migration renames it: to the models that read it, the column is gone.
    run.estate
        .execute("ALTER TABLE raw.payments RENAME COLUMN payment_method TO method");
    // The loader would fail too; only the checks and dbt run meanwhile.
    run.play_with(20, true, false);
    let incident = run.incident();
    let cause = cause(&incident);
    assert_eq!(
        cause,
        "raw.payments.payment_method was removed; 1 downstream model reads it in ways that break: stg_payments"
    );
    assert!(
        incident
            .symptoms
            .iter()
            .any(|s| s.table == "stg_payments" && s.check == "dbt run"),
        "{:#?}",
        incident.symptoms
    );
    run.estate
        .execute("ALTER TABLE raw.payments RENAME COLUMN method TO payment_method");
    run.play(40, true);
    let incident = run.incident();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:#?}",
        incident.checks
    );
}

#[test]
fn a_breach_below_seen_before_its_root_is_merged_into_the_root_as_a_symptom() {
    // The model's monitor is polled first, so its breach is seen before the raw table's.
    let stg_first = |config: &str| {
        let blocks: Vec<&str> = config.split("[[monitor]]").collect();
        let (head, monitors) = blocks.split_first().unwrap();
        let (stg, rest): (Vec<&str>, Vec<&str>) = monitors
            .iter()
            .partition(|b| b.contains("name = \"stg_payments\""));
        assert_eq!(stg.len(), 1, "{config}");
        let mut out = head.to_string();
        for block in stg.iter().chain(rest.iter()) {
            out.push_str("[[monitor]]");
            out.push_str(block);
        }
        out
    };
    let Some(mut run) = healthy_with("merged_into_root", stg_first) else {
        return;
    };
    run.estate.resync_nulling_days("raw.payments", "amount", 3);
    run.estate.dbt_run(run.now);
    run.play(5, false);
    let snapshot = run.snapshot();
    assert_eq!(snapshot.incidents.len(), 2, "{:#?}", snapshot.incidents);
    let merged = &snapshot.incidents[0];
    let root = &snapshot.incidents[1];
    assert_eq!(merged.table, "analytics.stg_payments");
    assert_eq!(merged.status, IncidentStatus::Resolved);
    assert!(merged
        .receipt
        .as_deref()
        .unwrap()
        .contains(&format!("Merged into {}", root.id)));
    assert_eq!(root.table, "raw.payments");
    assert_eq!(root.status, IncidentStatus::Open);
    assert!(
        root.symptoms
            .iter()
            .any(|s| s.table == "analytics.stg_payments" && s.explanation.contains(&merged.id)),
        "{:#?}",
        root.symptoms
    );
    // Its proposals were never decided: they are withdrawn, not left to escalate.
    assert!(merged
        .proposals
        .iter()
        .all(|p| p.state == ProposalState::Withdrawn));
}

#[test]
fn most_of_yesterdays_payments_deleted_is_that_days_volume_not_the_tables_size() {
    let Some(mut run) = healthy("partial_yesterday") else {
        return;
    };
    let yesterday = run.now.date() - TimeDelta::days(1);
    run.estate
        .delete_share_of_day("raw.payments", yesterday, 0.6);
    run.play(5, false);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with(&format!(
            "rows loaded into raw.payments on {yesterday} fell to"
        )),
        "{cause}"
    );
    // The table's own size barely moved, and the cause does not pretend it did.
    assert!(!cause.contains("rows in raw.payments"), "{cause}");
}

/// A day reloaded upstream that the microbatch model's lookback never reaches: the
/// diagnosis and the lookback diff are checked here. Returns the run and the day.
fn lookback_gap(test: &str) -> Option<(Run, chrono::NaiveDate)> {
    // Backfill copies are kept an hour after their incident resolves.
    let mut run = healthy_with(test, |config| {
        config.replace("[verify]\n", "[verify]\nretention = \"1h\"\n")
    })?;
    let wednesday = run.now.date();
    // Just after Wednesday ends, most of its payments go missing from raw (a bad
    // re-sync); the next dbt run builds the day short, in the staging table and in the
    // microbatch model (its lookback still reaches yesterday).
    run.play_every(14 * 60 - 30, 30, true);
    run.estate.execute(&format!(
        "CREATE TABLE public.kept AS SELECT * FROM raw.payments \
         WHERE loaded_at >= date '{wednesday}' AND loaded_at < date '{wednesday}' + 1"
    ));
    run.estate
        .delete_share_of_day("raw.payments", wednesday, 0.6);
    run.estate.dbt_run(run.now);
    // Thursday: raw's Wednesday is short; the model's too, as a symptom.
    run.play_every(3 * 60, 30, true);
    let incident = run.incident();
    assert_eq!(incident.table, "raw.payments", "{:#?}", incident);
    assert!(
        incident
            .symptoms
            .iter()
            .any(|s| s.table == "analytics.fct_payments" && s.check == "volume"),
        "{:#?}",
        incident.symptoms
    );
    // Friday 01:15 the day is reloaded into raw; the nightly runs rebuild Thursday and
    // Friday, not Wednesday.
    while run.now
        < wednesday
            .succ_opt()
            .unwrap()
            .succ_opt()
            .unwrap()
            .and_hms_opt(1, 15, 0)
            .unwrap()
    {
        run.play_every(30, 30, true);
    }
    run.estate.execute(
        "INSERT INTO raw.payments SELECT k.* FROM public.kept k \
         WHERE NOT EXISTS (SELECT 1 FROM raw.payments p WHERE p.id = k.id)",
    );
    run.play_every(90, 30, true);
    let incident = run.incident();
    let cause = cause(&incident);
    assert!(
        cause.starts_with(&format!("fct_payments is still short on {wednesday}")),
        "{cause}\n{:#?}",
        incident.evidence
    );
    assert!(cause.contains("lookback = 1"), "{cause}");
    assert!(cause.contains("2 days back, is never rebuilt"), "{cause}");
    // The title is the cause's headline, and what remains is said in whole sentences.
    assert_eq!(
        incident.title,
        format!("fct_payments is short on {wednesday}, further back than its runs reach")
    );
    assert!(
        incident.evidence[0].starts_with("raw.payments has been back since ")
            && incident.evidence[0].ends_with("; analytics.fct_payments is not back yet"),
        "{:#?}",
        incident.evidence
    );
    let diff = incident
        .proposals
        .iter()
        .find(|p| {
            p.title
                .starts_with("Raise fct_payments's lookback from 1 to 3")
        })
        .unwrap_or_else(|| panic!("{:#?}", incident.proposals));
    let dataward::engine::api::ProposalBody::Diff { new, .. } = &diff.body else {
        panic!("{diff:?}");
    };
    assert!(new.contains("lookback=3"), "{new}");
    Some((run, wednesday))
}

#[test]
fn a_day_reloaded_upstream_that_the_microbatch_lookback_never_reaches_is_a_lookback_gap() {
    lookback_gap("lookback_gap");
}

/// Wednesday's rows of the model, and of raw.
fn wednesday_counts(run: &Run, wednesday: chrono::NaiveDate) -> (i64, i64) {
    (
        run.estate.count_on("analytics.fct_payments", wednesday),
        run.estate.count_on("raw.payments", wednesday),
    )
}

fn backfill_of(incident: &IncidentView) -> dataward::engine::api::ProposalView {
    incident
        .proposals
        .iter()
        .find(|p| p.kind == ProposalKind::Backfill)
        .unwrap_or_else(|| panic!("{:#?}", incident.proposals))
        .clone()
}

#[test]
fn a_lookback_gap_is_closed_by_an_approved_backfill_verified_over_seven_days() {
    let Some((mut run, wednesday)) = lookback_gap("lookback_gap_backfill") else {
        return;
    };
    let incident = run.incident();
    let backfill = backfill_of(&incident);
    let dataward::engine::api::ProposalBody::Backfill {
        command, tables, ..
    } = &backfill.body
    else {
        panic!("{backfill:?}");
    };
    assert_eq!(
        command,
        &format!(
            "dbt build --select fct_payments+ --event-time-start {wednesday} --event-time-end {}",
            wednesday.succ_opt().unwrap()
        )
    );
    assert_eq!(tables, &vec!["analytics.fct_payments".to_string()]);
    assert!(
        backfill.undo.contains("copies taken just before it runs"),
        "{}",
        backfill.undo
    );
    let (model, raw) = wednesday_counts(&run, wednesday);
    assert!(
        model < raw,
        "the model is short before the backfill: {model} < {raw}"
    );
    approve(&mut run, &backfill, "analytics-owner");
    let (model, raw) = wednesday_counts(&run, wednesday);
    assert_eq!(model, raw, "the backfill rebuilt Wednesday");
    run.play_every(30, 5, true);
    let incident = run.incident();
    assert_eq!(
        incident.status,
        IncidentStatus::Resolved,
        "{:?} {:?} {:#?} {:#?}",
        incident.run_status,
        run.snapshot().notices,
        incident
            .proposals
            .iter()
            .map(|p| (&p.id, p.state))
            .collect::<Vec<_>>(),
        incident.checks
    );
    assert!(
        incident.checks.iter().any(|c| c
            .name
            .starts_with("analytics.fct_payments: daily volumes for the last seven days")
            && c.passed),
        "{:#?}\n{}",
        incident.checks,
        incident.receipt.as_deref().unwrap_or_default()
    );
    let receipt = incident.receipt.unwrap();
    assert!(
        receipt.contains(&format!("backfill `{command}`")),
        "{receipt}"
    );
    assert!(
        receipt.contains("copies taken first: analytics.fct_payments as "),
        "{receipt}"
    );
    // The copy is kept for the retention, then dropped.
    let copy = "dataward_versions.analytics__fct_payments__inc_0001_p2";
    let exists = |run: &Run| {
        run.estate
            .text(&format!("SELECT to_regclass('{copy}')::text"))
            .is_some()
    };
    assert!(exists(&run), "{copy} is kept after the incident resolves");
    run.play_every(70, 10, true);
    assert!(!exists(&run), "{copy} is dropped once the retention ends");
}

#[test]
fn rolling_a_backfill_back_restores_the_tables_as_they_were_before_it() {
    let Some((mut run, wednesday)) = lookback_gap("lookback_gap_rollback") else {
        return;
    };
    let backfill = backfill_of(&run.incident());
    let (before, _) = wednesday_counts(&run, wednesday);
    let total_before = run.estate.count("analytics.fct_payments");
    approve(&mut run, &backfill, "analytics-owner");
    assert_ne!(wednesday_counts(&run, wednesday).0, before);
    decide(
        &mut run,
        Command::RollBack {
            proposal: backfill.id.clone(),
            reason: "the finance close ran on the old figures; put them back".to_string(),
        },
        "analytics-owner",
    );
    assert_eq!(
        wednesday_counts(&run, wednesday).0,
        before,
        "Wednesday as it was"
    );
    assert_eq!(run.estate.count("analytics.fct_payments"), total_before);
    let incident = run.incident();
    assert_ne!(incident.status, IncidentStatus::Resolved);
    let receipt = incident.receipt.unwrap();
    assert!(
        receipt.contains("restored analytics.fct_payments")
            && receipt.contains("as before the backfill"),
        "{receipt}"
    );
}

#[test]
fn a_backfill_refused_by_a_scheduler_that_is_down_keeps_its_copy_and_runs_when_approved_again() {
    let Some((mut run, wednesday)) = lookback_gap("lookback_gap_scheduler_down") else {
        return;
    };
    let backfill = backfill_of(&run.incident());
    let (short, _) = wednesday_counts(&run, wednesday);
    run.scheduler_down_once
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let events = run.engine.handle(
        Command::Approve {
            proposal: backfill.id.clone(),
            content_hash: backfill.content_hash.clone(),
            reason: "tested on the estate".to_string(),
        },
        &person("analytics-owner"),
    );
    let refused = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Refused { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the approval went through: {events:?}"));
    assert!(refused.contains("503"), "{refused}");
    // Nothing ran; the copy it took is there, and is its undo.
    assert_eq!(wednesday_counts(&run, wednesday).0, short);
    approve(&mut run, &backfill, "analytics-owner");
    let (model, raw) = wednesday_counts(&run, wednesday);
    assert_eq!(model, raw, "the second approval ran it");
    let incident = run.incident();
    let receipt = incident.receipt.as_deref().unwrap();
    assert!(
        receipt.contains(
            "analytics.fct_payments as dataward_versions.analytics__fct_payments__inc_0001_p2"
        ),
        "{receipt}"
    );
    // The copy is still the table as it was before any attempt: roll back restores it.
    decide(
        &mut run,
        Command::RollBack {
            proposal: backfill.id.clone(),
            reason: "checking the undo".to_string(),
        },
        "analytics-owner",
    );
    assert_eq!(wednesday_counts(&run, wednesday).0, short);
}
