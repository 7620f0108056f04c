//! A realistic snapshot of the ticketing story (PRODUCT.md, story A) at 14:20, for the
//! console's screen tests and for integration tests that drive the console without an
//! engine. Small and always compiled so both kinds of test can reach it.

use crate::engine::api::{
    BlastNode, ChainHead, Check, IncidentStatus, IncidentView, MonitorView, PipelineView,
    ProposalBody, ProposalKind, ProposalState, ProposalView, Snapshot,
};

pub const OLD_STG_ORDERS: &str = "select
    order_id,
    event_id,
    cast(seat_section as smallint) as seat_section,
    price_cents,
    created_at
from {{ source('ticketing', 'orders') }}
";

pub const NEW_STG_ORDERS: &str = "select
    order_id,
    event_id,
    cast(seat_section as varchar(12)) as seat_section,
    price_cents,
    created_at
from {{ source('ticketing', 'orders') }}
where seat_section is not null
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
    }
}

pub fn sample_incident() -> IncidentView {
    let mut int_seat_map = blast_node(
        "model.ticketing.int_seat_map",
        "int_seat_map",
        "model",
        2,
        &["model.ticketing.stg_orders"],
        Some("casts seat_section to integer"),
    );
    int_seat_map.break_risk = true;
    IncidentView {
        id: "INC-7".into(),
        title: "ORDERS row count 78% below baseline".into(),
        table: "TICKETING.ORDERS".into(),
        monitor: "orders_row_count".into(),
        status: IncidentStatus::Open,
        opened_at: "14:17".into(),
        observed: "1,210,000 rows".into(),
        expected: "5,380,000 – 5,620,000 rows".into(),
        cause: Some(
            "Source migration changed orders.seat_section SMALLINT → VARCHAR(12); the \
             warehouse table was re-created and is refilling (orders are not lost)."
                .into(),
        ),
        evidence: vec![
            "source schema snapshot 14:05: orders.seat_section SMALLINT → VARCHAR(12)".into(),
            "TICKETING.ORDERS re-created 14:06 by the CDC mover (incompatible change → backfill)"
                .into(),
            "row count rising since 14:06: 22% refilled at 14:15, 23% now".into(),
            "mover tasks all green; last run success".into(),
        ],
        blast: vec![
            blast_node(
                "model.ticketing.stg_orders",
                "stg_orders",
                "model",
                1,
                &["source.ticketing.orders"],
                Some("reads seat_section"),
            ),
            int_seat_map,
            blast_node(
                "model.ticketing.fct_sales_pacing",
                "fct_sales_pacing",
                "model",
                2,
                &["model.ticketing.stg_orders"],
                Some("rebuilt 14:15 from 22% of rows"),
            ),
            blast_node(
                "dashboard.on_sale_pacing",
                "On-sale pacing",
                "dashboard",
                3,
                &["model.ticketing.fct_sales_pacing"],
                None,
            ),
            blast_node(
                "job.hourly_dbt",
                "hourly dbt job",
                "job",
                2,
                &[
                    "model.ticketing.stg_orders",
                    "model.ticketing.fct_sales_pacing",
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
                verify: "no run of the hourly dbt job until ORDERS is back at baseline".into(),
                deciders: vec!["analytics-eng".into()],
                body: ProposalBody::Hold {
                    job: "hourly dbt job".into(),
                    plan: "pause the schedule now\nqueue one run once ORDERS is back at baseline"
                        .into(),
                },
            },
            ProposalView {
                id: "P-2".into(),
                kind: ProposalKind::Diff,
                title: "Keep seat_section as text in stg_orders".into(),
                owner: "analytics-eng".into(),
                content_hash: "3f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4"
                    .into(),
                state: ProposalState::Pending,
                undo: "revert models/staging/stg_orders.sql".into(),
                verify: "int_seat_map builds with FLOOR-A sections".into(),
                deciders: vec!["analytics-eng".into()],
                body: ProposalBody::Diff {
                    file: "models/staging/stg_orders.sql".into(),
                    old: OLD_STG_ORDERS.into(),
                    new: NEW_STG_ORDERS.into(),
                },
            },
            ProposalView {
                id: "P-3".into(),
                kind: ProposalKind::Note,
                title: "Incompatible-change setting on the orders mover".into(),
                owner: "platform".into(),
                content_hash: "b7c8d9e0f1a2b3c43f9a0c1b2d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6"
                    .into(),
                state: ProposalState::Pending,
                undo: "nothing runs; withdraw the note".into(),
                verify: "the mover's owner acknowledges".into(),
                deciders: vec!["analytics-eng".into()],
                body: ProposalBody::Note {
                    to: "platform (mover owner)".into(),
                    text: "Today the mover met an incompatible type change and used its \
                           default, backfill: it dropped TICKETING.ORDERS and refilled it, \
                           while every task stayed green.\n\
                           - backfill: what happened; readers saw a partial table for 46 min.\n\
                           - disableBinding: ORDERS would have stopped updating; no partial reads.\n\
                           - disableTask: the whole mover stops; every table goes stale.\n\
                           - abort: the migration run fails loudly at 14:06."
                        .into(),
                },
            },
        ],
        checks: vec![],
        receipt: None,
        run_status: None,
        symptoms: Vec::new(),
    }
}

pub fn sample_snapshot() -> Snapshot {
    Snapshot {
        now: "Tue 14:20".into(),
        actor: "alice (uid 1000)".into(),
        chain_head: Some(ChainHead {
            seq: 42,
            hash: "a41c9e07b2f3d58e6c1a0b9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b".into(),
        }),
        pipelines: vec![
            PipelineView {
                name: "mover".into(),
                state: "running".into(),
                last_status: "success".into(),
                last_run_at: Some("14:19".into()),
            },
            PipelineView {
                name: "hourly dbt job".into(),
                state: "paused".into(),
                last_status: "success".into(),
                last_run_at: Some("14:15".into()),
            },
        ],
        monitors: vec![
            MonitorView {
                name: "orders_row_count".into(),
                table: "TICKETING.ORDERS".into(),
                check: "row count".into(),
                verdict: "breach".into(),
                observed: "1,210,000".into(),
                expected: "5.38M – 5.62M".into(),
                health: "ok".into(),
            },
            MonitorView {
                name: "orders_freshness".into(),
                table: "TICKETING.ORDERS".into(),
                check: "freshness".into(),
                verdict: "ok".into(),
                observed: "1 min".into(),
                expected: "< 15 min".into(),
                health: "ok".into(),
            },
            MonitorView {
                name: "orders_schema".into(),
                table: "ticketing.orders".into(),
                check: "schema".into(),
                verdict: "warn".into(),
                observed: "seat_section VARCHAR(12)".into(),
                expected: "SMALLINT".into(),
                health: "ok".into(),
            },
        ],
        incidents: vec![
            sample_incident(),
            IncidentView {
                id: "INC-6".into(),
                title: "events null rate on venue_id 4% above baseline".into(),
                table: "TICKETING.EVENTS".into(),
                monitor: "events_null_venue".into(),
                status: IncidentStatus::Resolved,
                opened_at: "09:42".into(),
                observed: "4.1%".into(),
                expected: "≤ 0.2%".into(),
                cause: Some("a late-arriving venue import; filled at 10:05".into()),
                evidence: vec!["venue import finished 10:04".into()],
                blast: vec![],
                proposals: vec![],
                checks: vec![Check {
                    name: "null rate venue_id".into(),
                    passed: true,
                    detail: "0.1% ≤ 0.2%".into(),
                }],
                receipt: Some(
                    "# Receipt INC-6\n\n**Cause:** a late-arriving venue import.\n\n\
                     - 10:06 verification passed (chain #38)\n- 10:07 alert closed"
                        .into(),
                ),
                run_status: None,
                symptoms: Vec::new(),
            },
        ],
        notices: vec!["approved P-1 (hold) by alice, chain #42".into()],
        finished: false,
        org_stop: None,
        chain_alarm: None,
        attached: Vec::new(),
    }
}
