//! The edge where the domain's types become the protocol's: the protocol (`api.rs`)
//! names nothing else of dataward, so what the engine sends is converted here.

use super::api::{ChainHead, MonitorHealth, VerdictKind};
use crate::{chain, detect, monitor};

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
            monitor::Health::Error => MonitorHealth::Error,
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

#[cfg(test)]
mod tests {
    use super::*;

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
