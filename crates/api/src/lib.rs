//! The seam between the engine and anything that drives it (the console, the headless
//! demo, later a daemon socket). Every type here is plain serde data so the transport can
//! change without touching either side.

use serde::{Deserialize, Serialize};

/// What a person (or the headless stand-in) asks the engine to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Approve the exact content the person saw: `content_hash` must still match.
    Approve {
        proposal: String,
        content_hash: String,
        reason: String,
    },
    /// Reject is final for that content hash.
    Reject {
        proposal: String,
        content_hash: String,
        reason: String,
    },
    /// Apply the proposal's undo (resume the job, revert the diff).
    RollBack { proposal: String, reason: String },
    /// Send a note proposal to the owner of the other system.
    Forward { proposal: String },
    /// Queue the run that an approved hold proposal planned (its job, once).
    QueueRun { incident: String },
    /// Close an incident by hand (the owner): recorded with the reason, in the receipt.
    Resolve { incident: String, reason: String },
    /// Open a resolved incident again.
    Reopen { incident: String, reason: String },
    /// Accept the incident's new volume level as the normal (the owner): the
    /// monitor's baseline restarts from the shift, and the incident closes.
    Accept { incident: String, reason: String },
    /// "This was fine" (the owner): the incident's breach leaves the baselines, and the
    /// incident closes as expected.
    Expected { incident: String, reason: String },
    /// No alert and no new incident for a monitor (named, or the monitor of an
    /// incident) for `seconds`, at most a week; it ends by itself.
    Snooze {
        target: String,
        seconds: u64,
        reason: String,
    },
    /// Ask for a privilege on a table or a schema for a role or account, for `days`
    /// (90 when None): judged by the policy's `[[access]]` rules, then proposed as the
    /// exact statement to the domain's owners, or sent to them for review.
    RequestAccess {
        target: String,
        privilege: String,
        grantee: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        days: Option<u32>,
    },
    /// Halt all dispatch by dataward at once.
    OrgStop { reason: String },
    /// Ask to lift the org-wide stop; a second, different person's ask lifts it.
    LiftStop,
    /// What came of the request this client sent with `client_request` (its connection
    /// was lost before the answer came): the answer it got, or that nothing of it was
    /// decided. Decides nothing.
    WhatHappened { client_request: String },
}

/// One line of the engine's timeline. The headless demo prints these as JSON lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The engine's time (the wall's, or the demo's virtual one).
    pub at: Timestamp,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// Something the demo scenario did to the estate (data or schema only).
    Scenario {
        step: String,
    },
    IncidentOpened {
        incident: String,
        table: String,
        monitor: String,
        observed: f64,
        expected: String,
    },
    /// An access request moved on (`change`: requested, review, approved, rejected,
    /// grant_seen, revoke_proposed, revoke_seen), in a line for people.
    Access {
        request: String,
        change: String,
        text: String,
        seq: u64,
    },
    Diagnosis {
        incident: String,
        cause: String,
        evidence: Vec<String>,
    },
    BlastRadius {
        incident: String,
        nodes: Vec<BlastNode>,
    },
    Proposal {
        incident: String,
        proposal: String,
        kind: ProposalKind,
        content_hash: String,
    },
    Decision {
        proposal: String,
        verdict: Verdict,
        actor: String,
        seq: u64,
    },
    /// Where a forwarded note went: the `[[alert]]` destinations it was queued for
    /// (`name (kind)`), or, when none, why it went nowhere and what to configure.
    NoteSent {
        proposal: String,
        to: String,
        destinations: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nowhere: Option<String>,
    },
    /// A command the policy refused; nothing changed.
    Refused {
        command: String,
        reason: String,
    },
    Run {
        incident: String,
        job: String,
        status: String,
        seq: u64,
    },
    Verification {
        incident: String,
        passed: bool,
        checks: Vec<Check>,
    },
    IncidentResolved {
        incident: String,
    },
    /// A resolved incident was opened again by a person.
    Reopened {
        incident: String,
        seq: u64,
    },
    /// A person accepted a monitor's new level: its baseline restarts at `since`, the
    /// day (volume) or the poll's time (row count, null rate) the new level began.
    LevelAccepted {
        incident: String,
        monitor: String,
        since: Since,
        ratio: f64,
        seq: u64,
    },
    /// The owner said the incident's breach was fine: it closed as expected, and its
    /// points left the baselines.
    ClosedExpected {
        incident: String,
        seq: u64,
    },
    /// A monitor is snoozed until `until`: its breaches are recorded, nobody is paged.
    Snoozed {
        monitor: String,
        until: Timestamp,
        seq: u64,
    },
    /// A snooze ran out: the monitor's breaches open incidents again.
    SnoozeEnded {
        monitor: String,
        seq: u64,
    },
    /// A breach inside a snooze or a maintenance window: recorded, shown, paging nobody.
    BreachQuiet {
        monitor: String,
        why: String,
        seq: u64,
    },
    /// An unanswered request's time ran out; it now also goes to `to`.
    Escalated {
        proposal: String,
        to: String,
        seq: u64,
    },
    /// An unanswered request ran out of people to escalate to. Nothing was granted.
    Expired {
        proposal: String,
        seq: u64,
    },
    /// The org-wide stop was set, asked to be lifted, or lifted.
    OrgStop {
        action: String,
        actor: String,
        seq: u64,
    },
    Undo {
        proposal: String,
        action: String,
        seq: u64,
    },
    Receipt {
        incident: String,
    },
    /// An approved backfill was queued with the scheduler, after copies of the tables
    /// it rewrites were taken: `copies` are its undo.
    BackfillQueued {
        incident: String,
        proposal: String,
        command: String,
        run: String,
        copies: Vec<String>,
        seq: u64,
    },
    /// A breach downstream of an incident's table (or a model its run could not
    /// rebuild) joined the incident instead of opening one of its own.
    Symptom {
        incident: String,
        table: String,
        check: String,
        seq: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approved,
    Rejected,
    Forwarded,
    RolledBack,
    /// Carried out by dataward without approval, as an L4 domain allows for its class.
    Autonomous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    /// Pause a job schedule; undo resumes it.
    Hold,
    /// A dbt SQL change; undo reverts it.
    Diff,
    /// A note for the owner of another system; nothing runs.
    Note,
    /// Rebuild a range of a model's batches, or the whole model when nothing narrower
    /// can; undo restores the tables as they were.
    Backfill,
}

/// One verification check and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// One node of the blast radius, flat; `parents` lets a tree be rebuilt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlastNode {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub depth: u32,
    pub parents: Vec<String>,
    /// What the changed column means here, e.g. "casts zip_code to integer".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// The finding will break on the new data.
    #[serde(default)]
    pub break_risk: bool,
    /// Learned from OpenLineage events (no manifest or notes names it): when last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learned: Option<Timestamp>,
}

/// Everything the console draws, sent whole after every change (the bottom model:
/// the UI never asks the engine anything, it only draws the latest snapshot).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The engine's time (the wall's, or the demo's virtual one).
    pub now: Timestamp,
    /// Who the console runs as, attested by the kernel.
    pub actor: String,
    pub chain_head: Option<ChainHead>,
    pub pipelines: Vec<PipelineView>,
    /// The orchestrator does not answer: since when, and what it said. A health state
    /// of dataward's, never a data incident.
    #[serde(default)]
    pub orchestrator_down: Option<String>,
    /// The engine's first poll, while it is slow and unfinished: not every table has
    /// been read yet, so "no incidents" would say more than is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_poll: Option<FirstPoll>,
    pub monitors: Vec<MonitorView>,
    pub incidents: Vec<IncidentView>,
    /// The latest refusals and confirmations, newest last.
    pub notices: Vec<String>,
    /// The scenario is over (demo only).
    pub finished: bool,
    /// The org-wide stop, when set: who set it and why.
    #[serde(default)]
    pub org_stop: Option<String>,
    /// The chain does not verify: which record is bad. Nothing is recorded meanwhile.
    #[serde(default)]
    pub chain_alarm: Option<String>,
    /// The engine refused something its trust rests on: a policy file someone else
    /// could have written (the running policy stays), or its state database gone from
    /// under it (nothing is accepted). Shown on the top line like the chain alarm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_alarm: Option<String>,
    /// Everyone attached to this engine, and what they look at and decide.
    #[serde(default)]
    pub attached: Vec<PresenceView>,
    /// The alert outbox per `[[alert]]` destination: what waits, its next retry, its
    /// last error and dedup key.
    #[serde(default)]
    pub outbox: Vec<DestinationView>,
    /// What the engine's latest poll of each warehouse cost it, by warehouse.
    #[serde(default)]
    pub poll_costs: Vec<PollCost>,
    /// The `[[migration]]` waves: parity per table and the gate.
    #[serde(default)]
    pub waves: Vec<WaveView>,
    /// The access requests, newest last.
    #[serde(default)]
    pub access: Vec<AccessView>,
}

/// A migration wave as the console shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WaveView {
    /// `MIG-<migration>-<wave>`.
    pub id: String,
    pub open: bool,
    /// Who signed it off (open), or why it is closed, a reason a line.
    pub gate: Vec<String>,
    pub parity_hash: Option<String>,
    pub tables: Vec<WaveTableView>,
    /// Each repoint proposal: its id, state and file.
    pub repoints: Vec<WaveRepointView>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WaveTableView {
    pub old: String,
    pub new: String,
    /// Both sides read.
    pub read: bool,
    pub rows: Option<u64>,
    /// Empty when parity holds.
    pub differences: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WaveRepointView {
    pub id: String,
    pub state: String,
    pub file: String,
    pub content_hash: String,
}

/// An access request as the console shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessView {
    pub id: String,
    /// review, proposed, approved, granted, revoking, revoked, rejected, unanswered.
    pub status: String,
    pub privilege: String,
    pub tables: Vec<String>,
    pub grantee: String,
    pub asked_by: String,
    /// The grant proposal waiting, or decided.
    pub proposal: Option<String>,
    pub expires_at: Option<Timestamp>,
    /// What approving or rejecting the review binds to, while it waits for review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_hash: Option<String>,
    /// The grant proposal's content hash, which deciding it binds to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_hash: Option<String>,
}

/// One destination's outbox, as `dataward outbox` and the console show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DestinationView {
    pub destination: String,
    pub kind: String,
    pub pending: usize,
    pub failed: usize,
    pub delivered: usize,
    /// When its next pending row is tried (UTC), and how far that is from `as_of`.
    pub next_attempt_at: Option<Timestamp>,
    pub next_attempt_in_secs: Option<i64>,
    /// The latest error of a pending or failed row.
    pub last_error: Option<String>,
    /// The dedup key of the next row to go.
    pub dedup_key: Option<String>,
    /// Its pending and failed rows, oldest first (at most 50), and the latest delivered
    /// few.
    pub rows: Vec<RowView>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RowView {
    pub id: i64,
    pub incident: String,
    pub action: String,
    pub occasion: String,
    pub dedup_key: String,
    pub status: String,
    pub attempts: u32,
    pub queued_at: Timestamp,
    pub next_attempt_at: Option<Timestamp>,
    pub delivered_at: Option<Timestamp>,
    pub last_error: Option<String>,
    /// An accepted request still being read back (Opsgenie, JSM).
    pub request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    pub seq: u64,
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineView {
    pub name: String,
    pub state: PipelineState,
    /// The last run's outcome; pipelines report green while data is wrong.
    pub last_status: RunStatus,
    pub last_run_at: Option<Timestamp>,
    /// `hold_asked` only: when the job ran after the hold was asked, by its own record:
    /// the schedule dataward cannot pause still runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_after_hold: Option<Timestamp>,
    /// `hold_asked` only: dataward cannot tell whether the job ran after the hold (its
    /// orchestrator's record does not say which job ran), and why: neither confirmed
    /// nor broken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_unconfirmed: Option<String>,
    /// The last run failed: why, as the orchestrator tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<String>,
}

/// What the engine's last poll cost one warehouse, for the monitors pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollCost {
    pub warehouse: String,
    /// Statements sent, session setup included.
    pub queries: u64,
    /// Sessions (connections) opened.
    pub sessions: u64,
    /// Bytes scanned, as the warehouse reported them; None: not reported.
    pub scanned_bytes: Option<u64>,
    /// The warehouse's `max_queries_per_poll`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queries_per_poll: Option<u64>,
    /// Whether the guard stopped a statement: some checks were skipped.
    #[serde(default)]
    pub guard_reached: bool,
    /// The figures as a person reads them ("12 queries, 1 session, scanned not
    /// reported"), worded by the engine.
    #[serde(default)]
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorView {
    pub name: String,
    pub table: String,
    pub check: String,
    /// The detector's verdict on the latest figure (`unknown` when it is stale).
    pub verdict: VerdictKind,
    pub observed: String,
    pub expected: String,
    pub health: MonitorHealth,
    /// A snooze or maintenance window silencing it now: until when, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet: Option<QuietView>,
}

/// Why a monitor pages nobody now, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuietView {
    pub until: Timestamp,
    /// "snoozed by alice: a planned purge", "maintenance: nightly reload".
    pub why: String,
}

/// Words that travel as enums: on the wire each is the same lower-case word it was when
/// these fields were strings, so the protocol did not change; a word a later engine adds
/// reads as `Unknown` instead of making the whole snapshot unreadable.
macro_rules! wire_words {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A word this version does not know.
            Unknown,
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                    $name::Unknown => "unknown",
                }
            }

            pub fn parse(word: &str) -> $name {
                match word {
                    $($word => $name::$variant,)*
                    _ => $name::Unknown,
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let word = String::deserialize(deserializer)?;
                Ok($name::parse(&word))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_words! {
    /// Whether a monitor's check could run, as clients see it.
    pub enum MonitorHealth {
        Ok = "ok",
        /// The warehouse could not be reached.
        Unreachable = "unreachable",
        /// The check ran and failed (bad SQL, a missing table).
        Error = "error",
        /// Its latest figure is older than its monitor's latest poll, or overdue by three
        /// periods: shown with its age, never as a fresh "ok".
        Stale = "stale",
    }
}

wire_words! {
    /// A detector's verdict, as clients see it.
    pub enum VerdictKind {
        Ok = "ok",
        Learning = "learning",
        Low = "low",
        High = "high",
        /// Freshness: the table has not loaded for longer than its cadence or its error SLA.
        Late = "late",
        /// Freshness: past the team's `warn_after` SLA, still inside the learned cadence.
        Warn = "warn",
        Changed = "changed",
    }
}

impl VerdictKind {
    /// Neither ok, nor learning, nor unknown (a check that could not run).
    pub fn is_breach(self) -> bool {
        !matches!(
            self,
            VerdictKind::Ok | VerdictKind::Learning | VerdictKind::Unknown
        )
    }
}

wire_words! {
    /// A pipeline's schedule as its orchestrator reports it.
    pub enum PipelineState {
        /// A run is in flight (or, for a mover, it streams).
        Running = "running",
        /// Its schedule is paused.
        Paused = "paused",
        /// Its schedule is on and nothing runs now.
        Scheduled = "scheduled",
        /// Held by dataward, but on a scheduler dataward cannot pause (a cron running
        /// dbt Core): people were asked to stop it, and its runs say whether they did.
        HoldAsked = "hold_asked",
    }
}

wire_words! {
    /// A run's outcome as its orchestrator reports it: a pipeline's last run, or the run
    /// queued for an incident.
    pub enum RunStatus {
        /// Queued or running.
        Queued = "queued",
        Success = "success",
        Failed = "failed",
        Cancelled = "cancelled",
        /// The pipeline has never run.
        NeverRun = "none",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentStatus {
    Open,
    Verifying,
    Resolved,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentView {
    pub id: String,
    pub title: String,
    pub table: String,
    pub monitor: String,
    /// The kind of check it is about, as a monitor's view names it: `volume`,
    /// `freshness`, `null_rate(email)`, `failed_run`. Empty from an engine that does not
    /// send it.
    #[serde(default)]
    pub check: String,
    pub status: IncidentStatus,
    pub opened_at: Timestamp,
    pub observed: String,
    pub expected: String,
    pub cause: Option<String>,
    pub evidence: Vec<String>,
    pub blast: Vec<BlastNode>,
    pub proposals: Vec<ProposalView>,
    /// The last verification, if any ran.
    pub checks: Vec<Check>,
    /// The receipt as Markdown, read from the chain: the same text `dataward receipt`
    /// prints. While the incident is open it says so at the top and holds what the
    /// chain has so far.
    pub receipt: Option<String>,
    /// The last run queued for it, as the scheduler reports it.
    #[serde(default)]
    pub run_status: Option<RunStatus>,
    /// Breaches this incident explains, oldest first.
    #[serde(default)]
    pub symptoms: Vec<SymptomView>,
    /// The latest figure of the check that opened it, breaching or back within band:
    /// `observed` above stays the breach. None before it is measured again, or from an
    /// engine that does not send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<Reading>,
    /// Its chain records in order, as who did what: read from the chain like the
    /// receipt (`incident/timeline.rs`).
    #[serde(default)]
    pub timeline: Vec<TimelineEntry>,
    /// The accounts `[people]` gives an owner or escalation role of the domain covering
    /// the table: who may close, reopen or accept a new level of it. A console refuses
    /// `C`, `O` and `N` up front to anyone else (the engine checks again). `None` where
    /// the policy is not at hand; empty when no domain covers the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_accounts: Option<Vec<String>>,
    /// Its monitor pages nobody now (a snooze, a maintenance window), until when and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet: Option<QuietView>,
}

/// One check's latest figure as people read it, with its verdict and when it was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// "21,200", "0.10% null", "1h05m since the last load", "2,410 so far".
    pub observed: String,
    pub verdict: VerdictKind,
    /// The band it is judged against, where the check has one: "18,243..30,405",
    /// "0.00%..0.20%", or the longest gap allowed, "15m".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<String>,
    /// When it was measured.
    pub at: Timestamp,
}

/// One chain record in an incident's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub seq: u64,
    pub at: Timestamp,
    /// What happened, in a word: saw, diagnosed, proposed, decided, ran, verified...
    pub step: String,
    /// Who: `dataward`, or the attested account.
    pub who: String,
    pub what: String,
}

/// A breach an incident explains: downstream of its table by lineage, or a model its
/// run could not rebuild. It joins the root incident instead of opening its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SymptomView {
    /// The table or dbt node that breached.
    pub table: String,
    /// The check in its own terms: `volume`, `row_count`, `null_rate(amount)`, `dbt run`.
    pub check: String,
    /// What it measured, with its unit and when ("1,214 rows loaded on 2026-11-23 at 14:10").
    pub observed: String,
    /// Why the root incident explains it.
    pub explanation: String,
    /// When it joined.
    pub at: Timestamp,
    /// Its check is back within range (or the model rebuilt).
    pub recovered: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalState {
    Pending,
    Approved,
    Rejected,
    Forwarded,
    RolledBack,
    /// Approved and its undo already applied because the incident closed (hold resumed).
    Completed,
    /// Nobody answered in time, up the whole escalation chain. Never granted.
    Expired,
    /// The incident closed before anyone decided; nothing was granted.
    Withdrawn,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalView {
    pub id: String,
    pub kind: ProposalKind,
    pub title: String,
    /// The role whose approval this needs (or, for a note, who receives it).
    pub owner: String,
    pub content_hash: String,
    pub state: ProposalState,
    /// What undoing it does.
    pub undo: String,
    /// How we will know it worked.
    pub verify: String,
    /// The roles that may decide it now: the owner, plus any escalation target reached.
    #[serde(default)]
    pub deciders: Vec<String>,
    /// The accounts `[people]` gives one of those roles, as the policy stands: a
    /// console refuses a decision key up front to anyone else (the engine checks again
    /// when it decides). `None` where the policy is not at hand (a state database read
    /// without an engine, an older engine); empty when nobody may decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider_accounts: Option<Vec<String>>,
    pub body: ProposalBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ProposalBody {
    Hold {
        job: String,
        plan: String,
    },
    Diff {
        file: String,
        old: String,
        new: String,
    },
    Note {
        to: String,
        text: String,
    },
    Backfill {
        /// The scheduled job that runs it.
        job: String,
        /// The exact command, as the owner approves it.
        command: String,
        /// The relations it rebuilds: each is copied just before it runs.
        tables: Vec<String>,
    },
}

mod messages;
pub mod time;
pub use messages::*;
pub use time::{Since, Timestamp};
pub mod wire;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The words on the wire are the ones these fields carried as strings: a console or
    /// script of the same protocol version reads them as before.
    #[test]
    fn enums_travel_as_the_words_they_were() {
        let pipeline = PipelineView {
            name: "hourly".into(),
            state: PipelineState::Scheduled,
            last_status: RunStatus::NeverRun,
            last_run_at: None,
            ran_after_hold: None,
            hold_unconfirmed: None,
            last_failure: None,
        };
        assert_eq!(
            serde_json::to_value(&pipeline).unwrap(),
            json!({"name": "hourly", "state": "scheduled", "last_status": "none", "last_run_at": null})
        );
        let words =
            |values: &[&str]| -> Vec<String> { values.iter().map(|w| w.to_string()).collect() };
        let states = [
            PipelineState::Running,
            PipelineState::Paused,
            PipelineState::Scheduled,
        ];
        assert_eq!(
            states.map(|s| s.to_string()).to_vec(),
            words(&["running", "paused", "scheduled"])
        );
        let runs = [
            RunStatus::Queued,
            RunStatus::Success,
            RunStatus::Failed,
            RunStatus::Cancelled,
            RunStatus::NeverRun,
        ];
        assert_eq!(
            runs.map(|s| s.to_string()).to_vec(),
            words(&["queued", "success", "failed", "cancelled", "none"])
        );
        let health = [
            MonitorHealth::Ok,
            MonitorHealth::Unreachable,
            MonitorHealth::Error,
            MonitorHealth::Stale,
        ];
        assert_eq!(
            health.map(|s| s.to_string()).to_vec(),
            words(&["ok", "unreachable", "error", "stale"])
        );
        for verdict in [
            "ok", "learning", "low", "high", "late", "warn", "changed", "unknown",
        ] {
            let read: VerdictKind = serde_json::from_value(json!(verdict)).unwrap();
            assert_eq!(serde_json::to_value(read).unwrap(), json!(verdict));
        }
        for word in ["queued", "success", "failed", "cancelled", "none"] {
            let read: RunStatus = serde_json::from_value(json!(word)).unwrap();
            assert_eq!(serde_json::to_value(read).unwrap(), json!(word));
        }
    }

    /// Every field of a snapshot travels: in a change (engine-wide), as an incident, as
    /// presence, or not at all (the actor: each console has its own from its hello).
    #[test]
    fn every_snapshot_field_travels_in_a_change() {
        let whole = serde_json::to_value(Snapshot {
            first_poll: Some(FirstPoll { done: 0, total: 1 }),
            trust_alarm: Some(String::new()),
            ..Snapshot::default()
        })
        .unwrap();
        let mut names: Vec<&str> = whole
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        names.retain(|name| !["incidents", "attached", "actor"].contains(name));
        names.sort();
        let mut covered = Field::names().to_vec();
        covered.sort();
        assert_eq!(names, covered);
    }

    /// Every time a snapshot carries is a Timestamp: text that is not one (a terminal
    /// escape, an orchestrator's own form, which protocol 2 passed on) is refused where
    /// it is read, naming it, and never drawn.
    #[test]
    fn a_time_that_is_not_a_timestamp_is_refused_where_it_is_read() {
        let mut snapshot = serde_json::to_value(Snapshot::default()).unwrap();
        assert_eq!(snapshot["now"], json!("1970-01-01T00:00:00Z"));
        snapshot["now"] = json!("14:20\u{1b}[2J");
        let error = serde_json::from_value::<Snapshot>(snapshot).unwrap_err();
        assert!(error.to_string().contains("14:20"), "{error}");
        let theirs = "2026-11-24 14:58:40.000000+00:00";
        let pipeline = json!({"name": "hourly", "state": "scheduled", "last_status": "success",
                              "last_run_at": theirs});
        let error = serde_json::from_value::<PipelineView>(pipeline).unwrap_err();
        assert!(error.to_string().contains(theirs), "{error}");
        let ours = json!({"name": "hourly", "state": "scheduled", "last_status": "success",
                          "last_run_at": "2026-11-24T14:58:40Z"});
        let read: PipelineView = serde_json::from_value(ours.clone()).unwrap();
        assert_eq!(serde_json::to_value(read).unwrap(), ours);
    }

    /// A word a later engine adds does not make the snapshot unreadable.
    #[test]
    fn an_unknown_word_reads_as_unknown() {
        let read: PipelineState = serde_json::from_value(json!("draining")).unwrap();
        assert_eq!(read, PipelineState::Unknown);
        let read: MonitorHealth = serde_json::from_value(json!("throttled")).unwrap();
        assert_eq!(read, MonitorHealth::Unknown);
        let read: VerdictKind = serde_json::from_value(json!("breach")).unwrap();
        assert_eq!(read, VerdictKind::Unknown);
    }
}
