//! Cleaning what the engine sends, once, as it arrives: every string of a snapshot
//! becomes text a terminal shows as it is, with the rules of `crate::sanitize`.

use crate::engine::api::{
    ChainHead, Detail, Field, IncidentView, MonitorView, PipelineView, PollCost, PresenceView,
    ProposalBody, ProposalView, Snapshot, TimelineEntry,
};
use crate::sanitize::{clean_in_place, clean_multiline_in_place, Sanitize};

/// Clean every string of a snapshot, once, as it arrives: the render path then never
/// sees raw text. Fields whose line breaks carry meaning (SQL, plans, notes, receipts)
/// keep them; every other field becomes one visible line.
pub fn snapshot(snapshot: &mut Snapshot) {
    let Snapshot {
        now,
        actor,
        chain_head,
        pipelines,
        orchestrator_down,
        first_poll: _,
        monitors,
        incidents,
        notices,
        finished: _,
        org_stop,
        chain_alarm,
        trust_alarm,
        attached,
        outbox,
        poll_costs,
        waves,
        access,
    } = snapshot;
    outbox.sanitize();
    waves.sanitize();
    access.sanitize();
    clean_poll_costs(poll_costs);
    for text in [org_stop, chain_alarm, trust_alarm, orchestrator_down]
        .into_iter()
        .flatten()
    {
        clean_in_place(text);
    }
    presence(attached);
    // (`now` is a Timestamp: nothing in it to clean.)
    let _ = now;
    clean_in_place(actor);
    clean_chain_head(chain_head);
    clean_pipelines(pipelines);
    clean_monitors(monitors);
    for incident in incidents {
        clean_incident(incident);
    }
    notices.iter_mut().for_each(clean_in_place);
}

/// One incident, as [`snapshot`] cleans each: the console cleans only the incidents that
/// changed since the last snapshot.
pub fn clean_incident(incident: &mut IncidentView) {
    for field in [
        &mut incident.id,
        &mut incident.title,
        &mut incident.table,
        &mut incident.monitor,
        &mut incident.check,
        &mut incident.observed,
        &mut incident.expected,
    ] {
        clean_in_place(field);
    }
    if let Some(cause) = &mut incident.cause {
        clean_in_place(cause);
    }
    incident.evidence.iter_mut().for_each(clean_in_place);
    for node in &mut incident.blast {
        clean_in_place(&mut node.id);
        clean_in_place(&mut node.name);
        clean_in_place(&mut node.kind);
        node.parents.iter_mut().for_each(clean_in_place);
        if let Some(finding) = &mut node.finding {
            clean_in_place(finding);
        }
    }
    for proposal in &mut incident.proposals {
        clean_proposal(proposal);
    }
    for check in &mut incident.checks {
        clean_in_place(&mut check.name);
        clean_in_place(&mut check.detail);
    }
    if let Some(receipt) = &mut incident.receipt {
        clean_multiline_in_place(receipt);
    }
    if let Some(reading) = &mut incident.latest {
        // (Its time is a Timestamp: nothing in it to clean.)
        clean_in_place(&mut reading.observed);
        if let Some(band) = &mut reading.band {
            clean_in_place(band);
        }
    }
    for symptom in &mut incident.symptoms {
        for field in [
            &mut symptom.table,
            &mut symptom.check,
            &mut symptom.observed,
            &mut symptom.explanation,
        ] {
            clean_in_place(field);
        }
    }
    for account in incident.owner_accounts.iter_mut().flatten() {
        clean_in_place(account);
    }
    if let Some(quiet) = &mut incident.quiet {
        clean_in_place(&mut quiet.why);
    }
    clean_timeline(&mut incident.timeline);
}

/// One engine-wide field of a change, as [`snapshot`] cleans it in a whole one.
pub fn field(field: &mut Field) {
    match field {
        Field::Now(_) => {} // a Timestamp: nothing to clean
        Field::ChainHead(head) => clean_chain_head(head),
        Field::Pipelines(pipelines) => clean_pipelines(pipelines),
        Field::Monitors(monitors) => clean_monitors(monitors),
        Field::Notices(notices) => notices.iter_mut().for_each(clean_in_place),
        Field::OrchestratorDown(text)
        | Field::OrgStop(text)
        | Field::ChainAlarm(text)
        | Field::TrustAlarm(text) => {
            if let Some(text) = text {
                clean_in_place(text);
            }
        }
        Field::Outbox(outbox) => outbox.sanitize(),
        Field::Waves(waves) => waves.sanitize(),
        Field::Access(access) => access.sanitize(),
        Field::PollCosts(costs) => clean_poll_costs(costs),
        Field::FirstPoll(_) | Field::Finished(_) => {}
    }
}

/// Who is attached, as [`snapshot`] cleans it.
pub fn presence(attached: &mut [PresenceView]) {
    for presence in attached {
        let PresenceView {
            who,
            read_only: _,
            viewing,
            deciding,
        } = presence;
        clean_in_place(who);
        for text in [viewing, deciding].into_iter().flatten() {
            clean_in_place(text);
        }
    }
}

/// An incident's timeline and receipt, as [`clean_incident`] cleans them in it.
pub fn detail(detail: &mut Detail) {
    clean_in_place(&mut detail.incident);
    clean_timeline(&mut detail.timeline);
    if let Some(receipt) = &mut detail.receipt {
        clean_multiline_in_place(receipt);
    }
}

fn clean_timeline(timeline: &mut [TimelineEntry]) {
    for entry in timeline {
        for field in [&mut entry.step, &mut entry.who, &mut entry.what] {
            clean_in_place(field);
        }
    }
}

fn clean_poll_costs(costs: &mut [PollCost]) {
    for cost in costs {
        clean_in_place(&mut cost.warehouse);
        clean_in_place(&mut cost.summary);
    }
}

fn clean_chain_head(head: &mut Option<ChainHead>) {
    if let Some(head) = head {
        clean_in_place(&mut head.hash);
    }
}

fn clean_pipelines(pipelines: &mut [PipelineView]) {
    for pipeline in pipelines {
        // (Its times are Timestamps: nothing in them to clean.)
        clean_in_place(&mut pipeline.name);
    }
}

fn clean_monitors(monitors: &mut [MonitorView]) {
    for monitor in monitors {
        for field in [
            &mut monitor.name,
            &mut monitor.table,
            &mut monitor.check,
            &mut monitor.observed,
            &mut monitor.expected,
        ] {
            clean_in_place(field);
        }
        if let Some(quiet) = &mut monitor.quiet {
            clean_in_place(&mut quiet.why);
        }
    }
}

fn clean_proposal(proposal: &mut ProposalView) {
    for field in [
        &mut proposal.id,
        &mut proposal.title,
        &mut proposal.owner,
        &mut proposal.content_hash,
        &mut proposal.undo,
        &mut proposal.verify,
    ] {
        clean_in_place(field);
    }
    for role in &mut proposal.deciders {
        clean_in_place(role);
    }
    for account in proposal.decider_accounts.iter_mut().flatten() {
        clean_in_place(account);
    }
    match &mut proposal.body {
        ProposalBody::Hold { job, plan } => {
            clean_in_place(job);
            clean_multiline_in_place(plan);
        }
        ProposalBody::Diff { file, old, new } => {
            clean_in_place(file);
            clean_multiline_in_place(old);
            clean_multiline_in_place(new);
        }
        ProposalBody::Note { to, text } => {
            clean_in_place(to);
            clean_multiline_in_place(text);
        }
        ProposalBody::Backfill {
            job,
            command,
            tables,
        } => {
            clean_in_place(job);
            clean_in_place(command);
            tables.iter_mut().for_each(clean_in_place);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_walk_cleans_every_field_it_reaches() {
        use crate::engine::api::{IncidentStatus, ProposalKind, ProposalState};
        let mut snap = Snapshot {
            now: "2026-11-24T14:20:00Z".parse().unwrap(),
            notices: vec!["refused\u{202e}".into()],
            incidents: vec![IncidentView {
                id: "INC-1".into(),
                title: "rows\x1b]0;pwned\x07".into(),
                table: "T".into(),
                monitor: "m".into(),
                check: "volume".into(),
                status: IncidentStatus::Open,
                opened_at: "2026-11-24T14:17:00Z".parse().unwrap(),
                observed: "1".into(),
                expected: "2".into(),
                cause: None,
                evidence: vec![],
                blast: vec![],
                proposals: vec![ProposalView {
                    id: "P-1".into(),
                    kind: ProposalKind::Diff,
                    title: "t".into(),
                    owner: "o".into(),
                    content_hash: "abc".into(),
                    state: ProposalState::Pending,
                    undo: "u".into(),
                    verify: "v".into(),
                    deciders: vec![],
                    decider_accounts: None,
                    body: ProposalBody::Diff {
                        file: "f.sql".into(),
                        old: "a\n\x1b[31mb".into(),
                        new: "a\nb".into(),
                    },
                }],
                checks: vec![],
                receipt: None,
                run_status: None,
                latest: None,
                symptoms: vec![crate::engine::api::SymptomView {
                    table: "fct_daily_revenue\u{202e}".into(),
                    check: "row_count".into(),
                    observed: "12 rows\x1b[2J".into(),
                    explanation: "rebuilt from T\x07".into(),
                    at: "2026-11-24T14:15:00Z".parse().unwrap(),
                    recovered: false,
                }],
                timeline: vec![crate::engine::api::TimelineEntry {
                    seq: 1,
                    at: "2026-11-24T14:17:00Z".parse().unwrap(),
                    step: "decided".into(),
                    who: "eve\x1b[8m".into(),
                    what: "approved\u{202e}".into(),
                }],
                owner_accounts: None,
                quiet: Some(crate::engine::api::QuietView {
                    until: "2026-11-24T18:00:00Z".parse().unwrap(),
                    why: "snoozed by eve\x1b[8m: refill".into(),
                }),
            }],
            ..Snapshot::default()
        };
        snapshot(&mut snap);
        assert_eq!(snap.notices[0], "refused\\u{202e}");
        assert_eq!(snap.incidents[0].title, "rows\\x1b]0;pwned\\x07");
        let ProposalBody::Diff { old, .. } = &snap.incidents[0].proposals[0].body else {
            panic!("diff body expected");
        };
        assert_eq!(old, "a\n\\x1b[31mb");
        let symptom = &snap.incidents[0].symptoms[0];
        assert_eq!(symptom.table, "fct_daily_revenue\\u{202e}");
        assert_eq!(symptom.observed, "12 rows\\x1b[2J");
        assert_eq!(symptom.explanation, "rebuilt from T\\x07");
        let entry = &snap.incidents[0].timeline[0];
        assert_eq!(entry.who, "eve\\x1b[8m");
        assert_eq!(entry.what, "approved\\u{202e}");
        let quiet = snap.incidents[0].quiet.as_ref().unwrap();
        assert_eq!(quiet.why, "snoozed by eve\\x1b[8m: refill");
    }
}
