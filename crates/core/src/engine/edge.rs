//! The edge where the domain's types become the protocol's: the protocol (`api.rs`)
//! names nothing else of dataward, so what the engine sends is converted here.

use super::api::{ChainHead, MonitorHealth, PollCost, Refusal, RefusalKind, VerdictKind};
use crate::{approve, chain, detect, monitor};

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
