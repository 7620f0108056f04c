//! One approval request: who may answer it, when it expires and escalates, and what an
//! answer is bound to. Pure: time comes in as an argument, the policy as a config.

use chrono::{NaiveDateTime, TimeDelta};
use serde::{Deserialize, Serialize};

use super::{domain_for, Actor};
use crate::clock::Timestamp;
use crate::config::{parse_duration, Config};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestState {
    Pending,
    Approved,
    /// Final for this content hash: trying again takes a new proposal.
    Rejected,
    /// Nobody answered, and nobody is left to escalate to. Never granted.
    Expired,
    /// The incident closed before anyone decided. Never granted.
    Withdrawn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The table, model, job or system the proposal changes: decides the domain.
    pub target: String,
    /// The role named on the proposal.
    pub owner: String,
    /// Who proposed it ("dataward" for the engine).
    pub proposer: String,
    pub content_hash: String,
    pub state: RequestState,
    /// Escalation steps taken so far.
    pub level: usize,
    /// When the current wait began.
    #[serde(deserialize_with = "kept_since")]
    pub since: Timestamp,
    /// The exact content an approval was given to.
    pub approved_hash: Option<String>,
}

/// What happened to a request as time passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Lapse {
    /// The wait ran out; the request now also goes to `to`.
    Escalated { to: String, at: Timestamp },
    /// The wait ran out and nobody is left.
    Expired { at: Timestamp },
}

/// When a request's wait began, as its document holds it: a [`Timestamp`], or, in a
/// document an engine kept before, chrono's own form of the engine's naive UTC time
/// (`2026-11-24T14:00:00.25`, no zone), read as that instant to the second.
fn kept_since<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
    let text = String::deserialize(d)?;
    Timestamp::parse(&text)
        .or_else(|bad| {
            text.parse::<NaiveDateTime>()
                .map(Timestamp::from_naive)
                .map_err(|_| bad)
        })
        .map_err(serde::de::Error::custom)
}

impl ApprovalRequest {
    pub fn new(
        target: &str,
        owner: &str,
        proposer: &str,
        content_hash: &str,
        now: NaiveDateTime,
    ) -> Self {
        ApprovalRequest {
            target: target.to_string(),
            owner: owner.to_string(),
            proposer: proposer.to_string(),
            content_hash: content_hash.to_string(),
            state: RequestState::Pending,
            level: 0,
            since: Timestamp::from_naive(now),
            approved_hash: None,
        }
    }

    /// The roles that may answer now: the deciders (`super::deciders`: the named owner,
    /// or the domain's owners when it names none of theirs), plus each escalation target
    /// reached.
    pub fn eligible_roles(&self, config: &Config) -> Result<Vec<String>, String> {
        let mut roles = super::deciders(config, &self.target, &self.owner)?;
        let domain = domain_for(config, &self.target).expect("deciders found it");
        for role in domain.escalation.iter().take(self.level) {
            if !roles.contains(role) {
                roles.push(role.clone());
            }
        }
        Ok(roles)
    }

    /// May `actor` act on this request now (decide it, roll it back, run what it
    /// planned)? The owner role or an escalation target reached, never the proposer, and
    /// never in a domain whose autonomy level takes no proposals.
    pub fn may_act(&self, config: &Config, actor: &Actor) -> Result<(), String> {
        let eligible = self.eligible_roles(config)?;
        let domain = domain_for(config, &self.target).expect("eligible_roles found it");
        if matches!(domain.autonomy.as_str(), "L0" | "L1") {
            return Err(format!(
                "domain {} is at {}: nothing is proposed or approved there",
                domain.name, domain.autonomy
            ));
        }
        let roles = actor.roles(config);
        if !roles.iter().any(|r| eligible.contains(r)) {
            return Err(format!(
                "{} holds none of the roles that may decide now ({})",
                actor.display(),
                eligible.join(", ")
            ));
        }
        if actor.is(&self.proposer) {
            return Err("nobody approves their own proposal".into());
        }
        Ok(())
    }

    /// Moves time forward: each full time-to-live without an answer escalates one step;
    /// past the last step the request expires. Nothing is granted by waiting.
    pub fn tick(&mut self, config: &Config, now: NaiveDateTime) -> Vec<Lapse> {
        let mut lapses = Vec::new();
        let Some(domain) = domain_for(config, &self.target) else {
            return lapses;
        };
        let Ok(ttl) = parse_duration(&domain.approval_ttl) else {
            return lapses;
        };
        let ttl = TimeDelta::from_std(ttl).unwrap_or(TimeDelta::MAX);
        while self.state == RequestState::Pending && now >= self.since.naive() + ttl {
            self.since = self.since + ttl;
            let at = self.since;
            match domain.escalation.get(self.level) {
                Some(next) => {
                    self.level += 1;
                    lapses.push(Lapse::Escalated {
                        to: next.clone(),
                        at,
                    });
                }
                None => {
                    self.state = RequestState::Expired;
                    lapses.push(Lapse::Expired { at });
                }
            }
        }
        lapses
    }

    /// Approves or rejects the content `seen_hash`, if `actor` may. A refusal changes
    /// nothing and says why.
    pub fn decide(
        &mut self,
        config: &Config,
        actor: &Actor,
        seen_hash: &str,
        approve: bool,
    ) -> Result<(), String> {
        if let Some(mismatch) = HashMismatch::of(&self.content_hash, seen_hash) {
            return Err(mismatch.to_string());
        }
        match self.state {
            RequestState::Pending => {}
            RequestState::Rejected => {
                return Err("it was rejected; a rejection is final for this content".into())
            }
            RequestState::Approved => return Err("it is already approved".into()),
            RequestState::Expired => {
                return Err("the request expired unanswered; it needs a new proposal".into())
            }
            RequestState::Withdrawn => {
                return Err(
                    "its incident closed before anyone decided; nothing is left to decide".into(),
                )
            }
        }
        self.may_act(config, actor)?;
        if approve {
            self.state = RequestState::Approved;
            self.approved_hash = Some(self.content_hash.clone());
        } else {
            self.state = RequestState::Rejected;
        }
        Ok(())
    }

    /// Records the approval of the current content (checked by `decide` beforehand).
    pub fn grant(&mut self) {
        self.state = RequestState::Approved;
        self.approved_hash = Some(self.content_hash.clone());
    }

    /// The content changed: any approval given to the old content is void, and the
    /// request starts over. A rejection stays with the content it rejected.
    pub fn content_changed(&mut self, new_hash: &str, now: NaiveDateTime) {
        if new_hash == self.content_hash {
            return;
        }
        self.content_hash = new_hash.to_string();
        self.approved_hash = None;
        self.state = RequestState::Pending;
        self.level = 0;
        self.since = Timestamp::from_naive(now);
    }

    /// Approved, for exactly this content.
    pub fn is_approved(&self) -> bool {
        self.state == RequestState::Approved
            && self.approved_hash.as_deref() == Some(self.content_hash.as_str())
    }
}

/// Why the hash a person sent does not bind their decision to the content as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashMismatch {
    /// The first characters of the current hash: a prefix binds the decision to any
    /// content that shares them, so the whole hash is needed.
    Shortened { needed: usize, given: usize },
    /// The content changed since the person read it.
    Changed { now: String, seen: String },
}

impl HashMismatch {
    /// None when `seen` is the current hash exactly.
    pub fn of(current: &str, seen: &str) -> Option<HashMismatch> {
        if seen == current {
            None
        } else if !seen.is_empty() && seen.len() < current.len() && current.starts_with(seen) {
            Some(HashMismatch::Shortened {
                needed: current.len(),
                given: seen.len(),
            })
        } else {
            Some(HashMismatch::Changed {
                now: short(current).to_string(),
                seen: short(seen).to_string(),
            })
        }
    }
}

impl std::fmt::Display for HashMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashMismatch::Shortened { needed, given } => write!(
                f,
                "a decision needs the full content hash ({needed} characters, as `dataward show` \
                 prints it); {given} were given"
            ),
            HashMismatch::Changed { now, seen } => write!(
                f,
                "changed since it was shown (hash {now} now, {seen} seen); the decision is void"
            ),
        }
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::{ApprovalRequest, HashMismatch};

    /// A request kept by an engine before its wait start was a Timestamp still reads,
    /// as the same instant; it is written back as a Timestamp; a bad one is refused
    /// with its text.
    #[test]
    fn a_wait_start_kept_as_a_naive_time_still_reads() {
        let doc = |since: &str| {
            serde_json::json!({"target": "PAYMENTS.CHARGES", "owner": "analytics-owner",
                "proposer": "dataward", "content_hash": "h1", "state": "pending",
                "level": 0, "since": since, "approved_hash": null})
        };
        for kept in [
            "2026-11-24T14:00:00",
            "2026-11-24T14:00:00.250",
            "2026-11-24T14:00:00Z",
        ] {
            let request: ApprovalRequest = serde_json::from_value(doc(kept)).unwrap();
            assert_eq!(request.since.to_string(), "2026-11-24T14:00:00Z", "{kept}");
            let again = serde_json::to_value(&request).unwrap();
            assert_eq!(again["since"], "2026-11-24T14:00:00Z");
        }
        let error = serde_json::from_value::<ApprovalRequest>(doc("noon"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"noon\""), "{error}");
    }

    #[test]
    fn only_the_whole_current_hash_binds_a_decision() {
        let current = "8c161704b028d63df1722ad73113c76dacec9ec5049bffafb7a2e624bbdb51d1";
        assert_eq!(HashMismatch::of(current, current), None);
        assert_eq!(
            HashMismatch::of(current, &current[..12]),
            Some(HashMismatch::Shortened {
                needed: 64,
                given: 12
            })
        );
        // A short hash of other content, an empty one, or a longer one: it changed.
        for seen in ["0123abcd", "", &format!("{current}00")] {
            assert!(
                matches!(
                    HashMismatch::of(current, seen),
                    Some(HashMismatch::Changed { .. })
                ),
                "{seen}"
            );
        }
    }
}
