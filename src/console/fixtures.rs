//! A realistic snapshot of a payments estate at 14:20 (a source column changed type and
//! the warehouse table is refilling), for the console's screen tests and for
//! integration tests that drive the console without an engine. Small and always
//! compiled so both kinds of test can reach it.

use crate::engine::api::{
    BlastNode, ChainHead, Check, IncidentStatus, IncidentView, MonitorHealth, MonitorView,
    PipelineState, PipelineView, ProposalBody, ProposalKind, ProposalState, ProposalView, Reading,
    RunStatus, Snapshot, SymptomView, TimelineEntry, VerdictKind,
};

pub const OLD_STG_PAYMENTS: &str = "select
    charge_id,
    customer_id,
    cast(zip_code as integer) as zip_code,
    amount,
    created_at
from {{ source('payments', 'charges') }}
";

pub const NEW_STG_PAYMENTS: &str = "select
    charge_id,
    customer_id,
    cast(zip_code as varchar(12)) as zip_code,
    amount,
    created_at
from {{ source('payments', 'charges') }}
where zip_code is not null
";

fn blast_node(
    id: &str,
    name: &str,
    kind: &str,
    depth: u32,
    parents: &[&str],
    finding: Option<&str>,
) -> BlastNode {
    BlastNode {
        id: id.to_string(),
        name: name.to_string(),
        kind: kind.to_string(),
        depth,
        parents: parents.iter().map(|p| p.to_string()).collect(),
        finding: finding.map(str::to_string),
        break_risk: false,
        learned: None,
    }
}

fn symptom(
    table: &str,
    check: &str,
    observed: &str,
    explanation: &str,
    at: &str,
    recovered: bool,
) -> SymptomView {
    SymptomView {
        table: table.to_string(),
        check: check.to_string(),
        observed: observed.to_string(),
        explanation: explanation.to_string(),
        at: at.parse().expect("a time"),
        recovered,
    }
}

pub fn sample_incident() -> IncidentView {
    let mut int_payment_regions = blast_node(
        "model.payments.int_payment_regions",
        "int_payment_regions",
        "model",
        2,
        &["model.payments.stg_payments"],
        Some("casts zip_code to integer"),
    );
    int_payment_regions.break_risk = true;
    IncidentView {
        id: "INC-7".into(),
        title: "CHARGES row count 78% below baseline".into(),
        table: "PAYMENTS.CHARGES".into(),
        monitor: "charges_row_count".into(),
        check: "row_count".into(),
        status: IncidentStatus::Open,
        opened_at: "2026-11-24T14:17:00Z".parse().expect("a time"),
        // The breach that opened it, as the engine words it; `latest` is the figure now.
        observed: "1,210,000".into(),
        expected: "5,380,000..5,620,000".into(),
        cause: Some(
            "Source migration changed charges.zip_code INTEGER → VARCHAR(12); the \
             warehouse table was re-created and is refilling (no charge is missing at the source)."
                .into(),
        ),
        evidence: vec![
            "source schema snapshot 14:05: charges.zip_code INTEGER → VARCHAR(12)".into(),
            "PAYMENTS.CHARGES re-created 14:06 by the CDC mover (incompatible change → backfill)"
                .into(),
            "rows in PAYMENTS.CHARGES: 1,190,000 at 2026-11-24 14:15, 1,260,000 at 2026-11-24 14:20: \
             rising, the table is being refilled"
                .into(),
            "mover tasks all green; last run success".into(),
        ],
        blast: vec![
            blast_node(
                "model.payments.stg_payments",
                "stg_payments",
                "model",
                1,
                &["source.payments.charges"],
                Some("reads zip_code"),
            ),
            int_payment_regions,
            blast_node(
                "model.payments.fct_daily_revenue",
                "fct_daily_revenue",
                "model",
                2,
                &["model.payments.stg_payments"],
                Some("rebuilt 14:15 from 22% of rows"),
            ),
            blast_node(
                "dashboard.daily_revenue",
                "Daily revenue",
                "dashboard",
                3,
                &["model.payments.fct_daily_revenue"],
                None,
            ),
            blast_node(
                "job.hourly_dbt",
                "hourly dbt job",
                "job",
                2,
                &[
                    "model.payments.stg_payments",
                    "model.payments.fct_daily_revenue",
                ],
                None,
            ),
        ],
        proposals: vec![
            ProposalView {
                id: "P-1".into(),
                kind: ProposalKind::Hold,
                title: "Pause the hourly dbt job until the refill completes".into(),
                owner: "analytics-eng".into(),
                content_hash: "9c1f4e7a2b3d8e6f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7"
                    .into(),
                state: ProposalState::Approved,
                undo: "resume the hourly dbt job schedule".into(),
                verify: "no run of the hourly dbt job until CHARGES is back at baseline".into(),
                deciders: vec!["analytics-eng".into()],
                decider_accounts: None,
                body: ProposalBody::Hold {
                    job: "hourly dbt job".into(),
                    plan: "pause the schedule now\nqueue one run once CHARGES is back at baseline"
                        .into(),
                },
            },
            ProposalView {
                id: "P-2".into(),
                kind: ProposalKind::Diff,
                title: "Keep zip_code as text in stg_payments".into(),
                owner: "analytics-eng".into(),
                content_hash: "3f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4"
                    .into(),
                state: ProposalState::Pending,
                undo: "revert models/staging/stg_payments.sql".into(),
                verify: "int_payment_regions builds with zip codes like A-3".into(),
                deciders: vec!["analytics-eng".into()],
                decider_accounts: None,
                body: ProposalBody::Diff {
                    file: "models/staging/stg_payments.sql".into(),
                    old: OLD_STG_PAYMENTS.into(),
                    new: NEW_STG_PAYMENTS.into(),
                },
            },
            ProposalView {
                id: "P-3".into(),
                kind: ProposalKind::Note,
                title: "Incompatible-change setting on the charges mover".into(),
                owner: "platform".into(),
                content_hash: "b7c8d9e0f1a2b3c43f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6"
                    .into(),
                state: ProposalState::Pending,
                undo: "nothing runs; withdraw the note".into(),
                verify: "the mover's owner acknowledges".into(),
                deciders: vec!["analytics-eng".into()],
                decider_accounts: None,
                body: ProposalBody::Note {
                    to: "platform (mover owner)".into(),
                    text: "Today the mover met an incompatible type change and used its \
                           default, backfill: it dropped PAYMENTS.CHARGES and refilled it, \
                           while every task stayed green.\n\
                           - backfill: what happened; readers saw a partial table for 46 min.\n\
                           - disableBinding: CHARGES would have stopped updating; no partial reads.\n\
                           - disableTask: the whole mover stops; every table goes stale.\n\
                           - abort: the migration run fails loudly at 14:06."
                        .into(),
                },
            },
        ],
        checks: vec![],
        receipt: None,
        run_status: None,
        symptoms: vec![
            symptom(
                "stg_payments",
                "null_rate(amount)",
                "3.8% at 14:10",
                "read PAYMENTS.CHARGES while it was being re-created",
                "2026-11-24T14:10:00Z",
                true,
            ),
            symptom(
                "fct_daily_revenue",
                "row_count",
                "2,410 rows at 14:15",
                "rebuilt from PAYMENTS.CHARGES when 22% of it was back",
                "2026-11-24T14:15:00Z",
                false,
            ),
            symptom(
                "int_payment_regions",
                "dbt run",
                "failed at 14:15: cannot cast 'A-3' to integer",
                "casts zip_code, which PAYMENTS.CHARGES now holds as text",
                "2026-11-24T14:15:00Z",
                false,
            ),
        ],
        latest: Some(Reading {
            observed: "1,260,000".into(),
            verdict: VerdictKind::Low,
            band: Some("5,380,000..5,620,000".into()),
            at: "2026-11-24T14:20:00Z".parse().expect("a time"),
        }),
        timeline: vec![
            entry(36, "14:17:00", "saw", "dataward", "row count on PAYMENTS.CHARGES: 1,210,000 rows (expected 5,380,000 – 5,620,000 rows)"),
            entry(37, "14:17:00", "diagnosed", "dataward", "Source migration changed charges.zip_code INTEGER → VARCHAR(12); the warehouse table was re-created and is refilling"),
            entry(38, "14:17:00", "mapped", "dataward", "4 downstream of it"),
            entry(39, "14:17:00", "proposed", "dataward", "P-1 hold: pause the hourly dbt job until the refill completes (to analytics-owner)"),
            entry(40, "14:17:00", "proposed", "dataward", "P-2 diff: keep zip_code as text in stg_payments (to analytics-eng)"),
            entry(41, "14:18:00", "joined", "dataward", "fct_daily_revenue row_count: 2,410 rows at 14:15"),
            entry(42, "14:19:00", "decided", "alice (uid 1000)", "approved P-1: refill in progress"),
        ],
        owner_accounts: None,
        quiet: None,
    }
}

fn entry(seq: u64, at: &str, step: &str, who: &str, what: &str) -> TimelineEntry {
    TimelineEntry {
        seq,
        at: format!("2026-11-24T{at}Z").parse().expect("a time"),
        step: step.into(),
        who: who.into(),
        what: what.into(),
    }
}

/// What the engine sends for an open incident: the chain so far, marked as such.
pub const DRAFT_RECEIPT: &str = "INC-7 is still open: this is what the chain holds so far.\n\n\
    # Receipt for INC-7\n\n\
    - Table: `PAYMENTS.CHARGES` (monitor `charges_row_count`)\n\
    - Opened: 2026-11-24T14:17:00Z\n\
    - Resolved: not yet\n\n\
    ## Proposals and decisions\n\n\
    - P-1 hold: approved by alice (chain #42): refill in progress";

pub fn sample_snapshot() -> Snapshot {
    Snapshot {
        now: "2026-11-24T14:20:00Z".parse().expect("a time"),
        actor: "alice (uid 1000)".into(),
        chain_head: Some(ChainHead {
            seq: 42,
            hash: "a41c9e07b2f3d58e6c1a0b9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b".into(),
        }),
        orchestrator_down: None,
        first_poll: None,
        pipelines: vec![
            PipelineView {
                name: "mover".into(),
                state: PipelineState::Running,
                last_status: RunStatus::Success,
                last_run_at: Some("2026-11-24T14:19:00Z".parse().expect("a time")),
                ran_after_hold: None,
                hold_unconfirmed: None,
                last_failure: None,
            },
            PipelineView {
                name: "hourly dbt job".into(),
                state: PipelineState::Paused,
                last_status: RunStatus::Success,
                last_run_at: Some("2026-11-24T14:15:00Z".parse().expect("a time")),
                ran_after_hold: None,
                hold_unconfirmed: None,
                last_failure: None,
            },
        ],
        // As the engine words them (`Observation::observed_text`, `expected_text`).
        monitors: vec![
            MonitorView {
                name: "charges_row_count".into(),
                table: "PAYMENTS.CHARGES".into(),
                check: "row_count".into(),
                verdict: VerdictKind::Low,
                observed: "1,210,000".into(),
                expected: "5,380,000..5,620,000".into(),
                health: MonitorHealth::Ok,
                quiet: None,
            },
            MonitorView {
                name: "charges_freshness".into(),
                table: "PAYMENTS.CHARGES".into(),
                check: "freshness".into(),
                verdict: VerdictKind::Ok,
                observed: "1m since the last load".into(),
                expected: "within 15m".into(),
                health: MonitorHealth::Ok,
                quiet: None,
            },
            MonitorView {
                name: "charges_schema".into(),
                table: "payments.charges".into(),
                check: "schema".into(),
                verdict: VerdictKind::Changed,
                observed: "column zip_code changed type from INTEGER to VARCHAR(12)".into(),
                expected: "no change".into(),
                health: MonitorHealth::Ok,
                quiet: None,
            },
        ],
        incidents: vec![
            sample_incident(),
            IncidentView {
                id: "INC-6".into(),
                title: "customers null rate on region_id 4% above baseline".into(),
                table: "PAYMENTS.CUSTOMERS".into(),
                monitor: "customers_null_region".into(),
                check: "null_rate(region_id)".into(),
                status: IncidentStatus::Resolved,
                opened_at: "2026-11-24T09:42:00Z".parse().expect("a time"),
                observed: "4.10% null".into(),
                expected: "0.00%..0.20%".into(),
                cause: Some("a late-arriving region import; filled at 10:05".into()),
                evidence: vec!["region import finished 10:04".into()],
                blast: vec![],
                proposals: vec![],
                checks: vec![Check {
                    name: "null rate region_id".into(),
                    passed: true,
                    detail: "0.1% ≤ 0.2%".into(),
                }],
                receipt: Some(
                    "# Receipt INC-6\n\n**Cause:** a late-arriving region import.\n\n\
                     - 10:06 verification passed (chain #38)\n- 10:07 alert closed"
                        .into(),
                ),
                run_status: None,
                symptoms: Vec::new(),
                latest: Some(Reading {
                    observed: "0.10% null".into(),
                    verdict: VerdictKind::Ok,
                    band: Some("0.00%..0.20%".into()),
                    at: "2026-11-24T10:06:00Z".parse().expect("a time"),
                }),
                timeline: Vec::new(),
                owner_accounts: None,
                quiet: None,
            },
        ],
        notices: vec!["approved P-1 (hold) by alice, chain #42".into()],
        finished: false,
        org_stop: None,
        chain_alarm: None,
        trust_alarm: None,
        attached: Vec::new(),
        outbox: Vec::new(),
        poll_costs: Vec::new(),
        waves: Vec::new(),
        access: Vec::new(),
    }
}

/// The sample estate with `count` incidents (INC-1 to INC-count, newest first), for
/// the tests of moving through a list longer than a screen.
pub fn many_incidents(count: usize) -> Snapshot {
    let mut snapshot = sample_snapshot();
    let template = snapshot.incidents[0].clone();
    snapshot.incidents = (1..=count)
        .rev()
        .map(|n| {
            let mut incident = template.clone();
            incident.id = format!("INC-{n}");
            incident.title = format!("incident number {n}");
            incident
        })
        .collect();
    snapshot
}
