//! Property test over the approval policy: whatever people try, whenever time moves and
//! however the config changes, a request only ever becomes approved by someone eligible
//! at that moment, never by its proposer, never by waiting, and only for the content
//! that was seen.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{NaiveDate, TimeDelta};
use dataward::approve::request::{ApprovalRequest, RequestState};
use dataward::approve::Actor;
use dataward::config::Config;
use proptest::prelude::*;

const USERS: &[&str] = &["alice", "bob", "carol", "erin", "mallory"];

/// The configs the property switches between: roles move, the chain changes, the domain
/// drops to L1, the domain vanishes.
fn configs() -> Vec<Config> {
    let people = |alice: &str, carol: &str| {
        format!(
            "[people.alice]\nname = \"A\"\nroles = [{alice}]\n[people.bob]\nname = \"B\"\nroles = [\"finance-owner\"]\n\
             [people.carol]\nname = \"C\"\nroles = [{carol}]\n[people.erin]\nname = \"E\"\nroles = [\"head-of-data\"]\n"
        )
    };
    let domain = |autonomy: &str, escalation: &str, ttl: &str| {
        format!(
            "[[domain]]\nname = \"ticketing\"\ncovers = [\"TICKETING.*\"]\nowners = [\"analytics-owner\"]\n\
             escalation = [{escalation}]\napproval_ttl = \"{ttl}\"\nautonomy = \"{autonomy}\"\n"
        )
    };
    let texts = [
        people("\"analytics-owner\"", "\"analytics-lead\"")
            + &domain("L2", "\"analytics-lead\", \"head-of-data\"", "30m"),
        people("", "\"analytics-lead\"") + &domain("L2", "\"analytics-lead\"", "10m"),
        people("\"analytics-owner\"", "") + &domain("L3", "", "1h"),
        people("\"analytics-owner\"", "\"analytics-lead\"")
            + &domain("L1", "\"analytics-lead\"", "30m"),
        people("\"analytics-owner\"", "\"analytics-lead\""),
    ];
    texts
        .iter()
        .map(|t| Config::parse(t, Path::new("policy.toml")).unwrap())
        .collect()
}

fn actor(user: &str) -> Actor {
    Actor {
        uid: 2000 + user.len() as u32,
        loginuid: dataward::approve::LoginUid::Unset,
        user: Some(user.into()),
        claims: BTreeMap::new(),
        stand_in: None,
    }
}

#[derive(Debug, Clone)]
enum Op {
    Decide {
        user: usize,
        approve: bool,
        stale: bool,
        claim: usize,
    },
    Wait {
        minutes: i64,
    },
    SwitchConfig {
        to: usize,
    },
    ChangeContent,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..USERS.len(), any::<bool>(), any::<bool>(), 0..USERS.len())
            .prop_map(|(user, approve, stale, claim)| Op::Decide { user, approve, stale, claim }),
        2 => (0i64..70).prop_map(|minutes| Op::Wait { minutes }),
        1 => (0usize..5).prop_map(|to| Op::SwitchConfig { to }),
        1 => Just(Op::ChangeContent),
    ]
}

/// Eligibility computed the plain way, apart from the code under test.
fn eligible(config: &Config, request: &ApprovalRequest, user: &str) -> bool {
    let Some(domain) = config
        .domain
        .iter()
        .find(|d| d.covers.iter().any(|g| g == "TICKETING.*"))
    else {
        return false;
    };
    if domain.autonomy == "L0" || domain.autonomy == "L1" || user == request.proposer {
        return false;
    }
    let mut allowed = vec![request.owner.clone()];
    allowed.extend(domain.escalation.iter().take(request.level).cloned());
    let roles = config
        .people
        .get(user)
        .map(|p| p.roles.clone())
        .unwrap_or_default();
    roles.iter().any(|r| allowed.contains(r))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn nothing_is_approved_without_an_eligible_approver(
        proposer in prop_oneof![Just("dataward"), Just("alice")],
        ops in proptest::collection::vec(op(), 1..30),
    ) {
        let configs = configs();
        let mut config = &configs[0];
        let mut now = NaiveDate::from_ymd_opt(2026, 11, 24).unwrap().and_hms_opt(14, 0, 0).unwrap();
        let mut content = 0u32;
        let mut request = ApprovalRequest::new("TICKETING.ORDERS", "analytics-owner", proposer, "c0", now);
        for op in ops {
            let was_approved = request.is_approved();
            match op {
                Op::Decide { user, approve, stale, claim } => {
                    let mut who = actor(USERS[user]);
                    // Claims of being someone else never matter.
                    who.claims.insert("USER".into(), USERS[claim].into());
                    let seen = if stale { format!("c{}", content.wrapping_sub(1)) } else { format!("c{content}") };
                    let before = request.clone();
                    let could = eligible(config, &before, USERS[user]);
                    let result = request.decide(config, &who, &seen, approve);
                    if result.is_ok() {
                        prop_assert!(could, "{} decided without being eligible: {before:?}", USERS[user]);
                        prop_assert_eq!(before.state, RequestState::Pending);
                        prop_assert_eq!(&seen, &before.content_hash);
                        prop_assert!(USERS[user] != proposer, "the proposer decided their own proposal");
                    } else {
                        prop_assert_eq!(&request, &before, "a refused decision changed the request");
                    }
                }
                Op::Wait { minutes } => {
                    now += TimeDelta::minutes(minutes);
                    request.tick(config, now);
                    prop_assert_eq!(request.is_approved(), was_approved, "time granted or removed an approval");
                }
                Op::SwitchConfig { to } => config = &configs[to],
                Op::ChangeContent => {
                    content += 1;
                    request.content_changed(&format!("c{content}"), now);
                    prop_assert!(!request.is_approved(), "an approval survived a content change");
                }
            }
            if request.is_approved() {
                prop_assert_eq!(request.approved_hash.as_deref(), Some(request.content_hash.as_str()));
            }
        }
    }
}
