//! The edge where the domain's types become the protocol's: the protocol (`api.rs`)
//! names nothing else of dataward, so what the engine sends is converted here.

use super::api::{
    ChainHead, MonitorHealth, PipelineState, PipelineView, PollCost, ProposalBody, ProposalKind,
    ProposalState, ProposalView, Refusal, RefusalKind, RunStatus, VerdictKind,
};
use crate::effects::orchestrator;
use crate::{approve, chain, detect, monitor, propose};

impl From<approve::RefusalKind> for RefusalKind {
    fn from(kind: approve::RefusalKind) -> RefusalKind {
        match kind {
            approve::RefusalKind::NotPermitted => RefusalKind::NotPermitted,
            approve::RefusalKind::OrgStop => RefusalKind::OrgStop,
        }
    }
}

impl From<approve::Refusal> for Refusal {
    fn from(refusal: approve::Refusal) -> Refusal {
        Refusal::new(refusal.kind.into(), refusal.message)
    }
}

impl From<chain::Head> for ChainHead {
    fn from(head: chain::Head) -> ChainHead {
        ChainHead {
            seq: head.seq,
            hash: head.hash,
        }
    }
}

impl From<monitor::Health> for MonitorHealth {
    fn from(health: monitor::Health) -> MonitorHealth {
        match health {
            monitor::Health::Ok => MonitorHealth::Ok,
            monitor::Health::Unreachable => MonitorHealth::Unreachable,
            // The reason (the query guard) is in the observation's message.
            monitor::Health::Error | monitor::Health::Skipped => MonitorHealth::Error,
        }
    }
}

impl From<detect::VerdictKind> for VerdictKind {
    fn from(kind: detect::VerdictKind) -> VerdictKind {
        match kind {
            detect::VerdictKind::Ok => VerdictKind::Ok,
            detect::VerdictKind::Learning => VerdictKind::Learning,
            detect::VerdictKind::Low => VerdictKind::Low,
            detect::VerdictKind::High => VerdictKind::High,
            detect::VerdictKind::Late => VerdictKind::Late,
            detect::VerdictKind::Warn => VerdictKind::Warn,
            detect::VerdictKind::Changed => VerdictKind::Changed,
            detect::VerdictKind::Unknown => VerdictKind::Unknown,
        }
    }
}

/// A job on the pipelines bar, as its orchestrator reported it.
impl From<orchestrator::Pipeline> for PipelineView {
    fn from(p: orchestrator::Pipeline) -> PipelineView {
        PipelineView {
            name: p.name,
            state: p.state.into(),
            last_status: p.last_status.into(),
            last_run_at: p.last_run_at,
            ran_after_hold: p.ran_after_hold,
            hold_unconfirmed: p.hold_unconfirmed,
            last_failure: p.last_failure,
        }
    }
}

impl From<orchestrator::PipelineState> for PipelineState {
    fn from(state: orchestrator::PipelineState) -> PipelineState {
        match state {
            orchestrator::PipelineState::Running => PipelineState::Running,
            orchestrator::PipelineState::Paused => PipelineState::Paused,
            orchestrator::PipelineState::Scheduled => PipelineState::Scheduled,
            orchestrator::PipelineState::HoldAsked => PipelineState::HoldAsked,
            orchestrator::PipelineState::Unknown => PipelineState::Unknown,
        }
    }
}

impl From<orchestrator::RunStatus> for RunStatus {
    fn from(status: orchestrator::RunStatus) -> RunStatus {
        match status {
            orchestrator::RunStatus::Queued => RunStatus::Queued,
            orchestrator::RunStatus::Success => RunStatus::Success,
            orchestrator::RunStatus::Failed => RunStatus::Failed,
            orchestrator::RunStatus::Cancelled => RunStatus::Cancelled,
            orchestrator::RunStatus::NeverRun => RunStatus::NeverRun,
            orchestrator::RunStatus::Unknown => RunStatus::Unknown,
        }
    }
}

/// A proposal as a console is sent it. Only its owner may decide it here; the engine
/// adds the roles an escalation reached, and the accounts, where it knows the policy.
impl From<&propose::Proposal> for ProposalView {
    fn from(p: &propose::Proposal) -> ProposalView {
        ProposalView {
            id: p.id.clone(),
            kind: p.kind.into(),
            title: p.title.clone(),
            owner: p.owner.clone(),
            content_hash: p.content_hash.clone(),
            state: p.state.into(),
            undo: p.undo.clone(),
            verify: p.verify.clone(),
            deciders: vec![p.owner.clone()],
            decider_accounts: None,
            body: p.body.clone().into(),
        }
    }
}

impl From<propose::ProposalKind> for ProposalKind {
    fn from(kind: propose::ProposalKind) -> ProposalKind {
        match kind {
            propose::ProposalKind::Hold => ProposalKind::Hold,
            propose::ProposalKind::Diff => ProposalKind::Diff,
            propose::ProposalKind::Note => ProposalKind::Note,
            propose::ProposalKind::Backfill => ProposalKind::Backfill,
        }
    }
}

impl From<propose::ProposalState> for ProposalState {
    fn from(state: propose::ProposalState) -> ProposalState {
        match state {
            propose::ProposalState::Pending => ProposalState::Pending,
            propose::ProposalState::Approved => ProposalState::Approved,
            propose::ProposalState::Rejected => ProposalState::Rejected,
            propose::ProposalState::Forwarded => ProposalState::Forwarded,
            propose::ProposalState::RolledBack => ProposalState::RolledBack,
            propose::ProposalState::Completed => ProposalState::Completed,
            propose::ProposalState::Expired => ProposalState::Expired,
            propose::ProposalState::Withdrawn => ProposalState::Withdrawn,
        }
    }
}

impl From<propose::ProposalBody> for ProposalBody {
    fn from(body: propose::ProposalBody) -> ProposalBody {
        match body {
            propose::ProposalBody::Hold { job, plan } => ProposalBody::Hold { job, plan },
            propose::ProposalBody::Diff { file, old, new } => ProposalBody::Diff { file, old, new },
            propose::ProposalBody::Note { to, text } => ProposalBody::Note { to, text },
            propose::ProposalBody::Backfill {
                job,
                command,
                tables,
            } => ProposalBody::Backfill {
                job,
                command,
                tables,
            },
        }
    }
}

/// What a poll cost a warehouse, as the monitors pane is sent it: the figures and the
/// engine's words for them.
pub(super) fn poll_cost_view(cost: &crate::monitor::poller::PollCost) -> PollCost {
    PollCost {
        warehouse: cost.warehouse.clone(),
        queries: cost.queries,
        sessions: cost.sessions,
        scanned_bytes: cost.scanned_bytes,
        max_queries_per_poll: cost.max_queries_per_poll,
        guard_reached: cost.guard_reached,
        summary: cost.summary(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy's refusals reach a console with the protocol's kind of the same name.
    #[test]
    fn every_policy_refusal_keeps_its_kind() {
        for (kind, word) in [
            (approve::RefusalKind::NotPermitted, "\"not_permitted\""),
            (approve::RefusalKind::OrgStop, "\"org_stop\""),
        ] {
            let sent = Refusal::from(approve::Refusal::new(kind, "why"));
            assert_eq!(serde_json::to_string(&sent.kind).unwrap(), word);
            assert_eq!(sent.message, "why");
        }
    }

    /// A proposal is stored and hashed in its own types and sent in the protocol's:
    /// both write the same JSON, so no stored document or approved hash changes.
    #[test]
    fn a_proposal_is_sent_as_it_is_stored() {
        use propose::{ProposalBody as Body, ProposalKind as Kind, ProposalState as State};
        let same = |stored: serde_json::Value, sent: serde_json::Value| {
            assert_eq!(stored, sent);
        };
        for kind in [Kind::Hold, Kind::Diff, Kind::Note, Kind::Backfill] {
            same(json(&kind), json(&ProposalKind::from(kind)));
        }
        for state in [
            State::Pending,
            State::Approved,
            State::Rejected,
            State::Forwarded,
            State::RolledBack,
            State::Completed,
            State::Expired,
            State::Withdrawn,
        ] {
            same(json(&state), json(&ProposalState::from(state)));
        }
        for body in [
            Body::Hold {
                job: "j".into(),
                plan: "p".into(),
            },
            Body::Diff {
                file: "f".into(),
                old: "o".into(),
                new: "n".into(),
            },
            Body::Note {
                to: "t".into(),
                text: "x".into(),
            },
            Body::Backfill {
                job: "j".into(),
                command: "dbt build".into(),
                tables: vec!["a.b".into()],
            },
        ] {
            same(json(&body), json(&ProposalBody::from(body.clone())));
        }
    }

    /// A pipeline's state and last run reach a console with the word its orchestrator
    /// gave them.
    #[test]
    fn every_pipeline_word_keeps_its_word() {
        use orchestrator::{PipelineState as State, RunStatus as Status};
        for state in [
            State::Running,
            State::Paused,
            State::Scheduled,
            State::HoldAsked,
            State::Unknown,
        ] {
            assert_eq!(State::parse(state.as_str()), state);
            assert_eq!(PipelineState::from(state).as_str(), state.as_str());
        }
        for status in [
            Status::Queued,
            Status::Success,
            Status::Failed,
            Status::Cancelled,
            Status::NeverRun,
            Status::Unknown,
        ] {
            assert_eq!(Status::parse(status.as_str()), status);
            assert_eq!(RunStatus::from(status).as_str(), status.as_str());
        }
    }

    fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
        serde_json::to_value(value).unwrap()
    }

    /// The same word on the wire as in the stored documents, for every verdict.
    #[test]
    fn every_verdict_keeps_its_word() {
        for word in [
            "ok", "learning", "low", "high", "late", "warn", "changed", "unknown",
        ] {
            let kind = detect::VerdictKind::parse(word);
            assert_eq!(kind.as_str(), word);
            assert_eq!(VerdictKind::from(kind).as_str(), word);
            assert_eq!(VerdictKind::from(kind).is_breach(), kind.is_breach());
        }
    }
}
