//! Who may decide what. Identity comes from the kernel; names from the environment are
//! claims, recorded and shown as such, and never decide anything.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use serde::Serialize;

use crate::config::Config;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    /// The kernel-attested uid of this process.
    pub uid: u32,
    /// The audit login uid (who logged in, across sudo), where the kernel keeps one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loginuid: Option<u32>,
    /// The account name of `uid`, from the password database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// $USER, $SUDO_USER, $SSH_CONNECTION as found: claims, never verified.
    pub claims: BTreeMap<String, String>,
    /// Headless demo only: the role this run plays, recorded as a stand-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stand_in: Option<String>,
}

impl Actor {
    /// The person running this process, as the kernel attests it.
    pub fn current() -> Actor {
        let uid = std::fs::metadata("/proc/self")
            .map(|m| m.uid())
            .unwrap_or(u32::MAX);
        let loginuid = std::fs::read_to_string("/proc/self/loginuid")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            // The kernel writes (u32)-1 when no login session set it.
            .filter(|id| *id != u32::MAX);
        let claims = ["USER", "SUDO_USER", "SSH_CONNECTION"]
            .iter()
            .filter_map(|key| std::env::var(key).ok().map(|v| (key.to_string(), v)))
            .collect();
        Actor {
            uid,
            loginuid,
            user: user_name(uid),
            claims,
            stand_in: None,
        }
    }

    /// One line for people: the attested name first, then what is only claimed.
    pub fn display(&self) -> String {
        let name = self.user.clone().unwrap_or_else(|| "unknown".to_string());
        let mut text = format!("{name} (uid {})", self.uid);
        if let Some(role) = &self.stand_in {
            text.push_str(&format!(" as demo stand-in for {role}"));
        }
        if let Some(claimed) = self.claims.get("USER") {
            if Some(claimed) != self.user.as_ref() {
                text.push_str(&format!(", claims USER={claimed} (unverified)"));
            }
        }
        text
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("actor serializes")
    }

    /// The roles the policy gives this actor: from the attested account name only.
    pub fn roles(&self, config: &Config) -> Vec<String> {
        let mut roles: Vec<String> = self
            .user
            .as_ref()
            .and_then(|user| config.people.get(user))
            .map(|person| person.roles.clone())
            .unwrap_or_default();
        if let Some(role) = &self.stand_in {
            roles.push(role.clone());
        }
        roles
    }
}

/// The engine's own identity on the chain. It proposes; it never approves.
pub const ENGINE_ACTOR: &str = r#"{"engine":"dataward"}"#;

fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid).then(|| name.to_string())
    })
}

/// What the policy needs to know about a proposal to decide on it.
pub struct Request<'a> {
    /// The table or dbt unique id the proposal changes, to find its domain.
    pub target: &'a str,
    /// The role named as owner on the proposal.
    pub owner: &'a str,
    pub proposer: &'a str,
}

/// Globs with '*' only, case-insensitive: "model.ticketing.*", "TICKETING.*".
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let text = text.to_ascii_lowercase();
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text.as_str();
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The domain covering a target, if exactly one rule matches first.
pub fn domain_for<'c>(config: &'c Config, target: &str) -> Option<&'c crate::config::DomainConfig> {
    config
        .domain
        .iter()
        .find(|d| d.covers.iter().any(|g| glob_match(g, target)))
}

/// May `actor` approve (or reject) this request? Any doubt is a denial with its reason.
pub fn may_decide(config: &Config, actor: &Actor, request: &Request) -> Result<(), String> {
    let Some(domain) = domain_for(config, request.target) else {
        return Err(format!(
            "no domain in the policy covers {}; nobody may approve it",
            request.target
        ));
    };
    if matches!(domain.autonomy.as_str(), "L0" | "L1") {
        return Err(format!(
            "domain {} is at {}: nothing is proposed or approved there",
            domain.name, domain.autonomy
        ));
    }
    if !domain.owners.iter().any(|o| o == request.owner) {
        return Err(format!(
            "{} is not an owner of domain {}",
            request.owner, domain.name
        ));
    }
    let roles = actor.roles(config);
    if !roles.iter().any(|r| r == request.owner) {
        return Err(format!(
            "{} does not hold the role {} that owns this proposal",
            actor.display(),
            request.owner
        ));
    }
    let who = actor.user.as_deref().unwrap_or("");
    if request.proposer == who || request.proposer == actor.uid.to_string() {
        return Err("nobody approves their own proposal".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config() -> Config {
        Config::parse(
            r#"
[people.alice]
name = "Alice"
roles = ["analytics-owner"]
[people.bob]
name = "Bob"
roles = []
[[domain]]
name = "ticketing"
covers = ["TICKETING.*", "model.ticketing.*"]
owners = ["analytics-owner"]
autonomy = "L2"
[[domain]]
name = "finance"
covers = ["FINANCE.*"]
owners = ["finance-owner"]
autonomy = "L1"
"#,
            Path::new("policy.toml"),
        )
        .unwrap()
    }

    fn actor(user: &str) -> Actor {
        Actor {
            uid: 1000,
            loginuid: None,
            user: Some(user.to_string()),
            claims: BTreeMap::new(),
            stand_in: None,
        }
    }

    fn request(target: &str) -> Request<'_> {
        Request {
            target,
            owner: "analytics-owner",
            proposer: "dataward",
        }
    }

    #[test]
    fn only_the_owner_role_may_decide() {
        let c = config();
        assert!(may_decide(
            &c,
            &actor("alice"),
            &request("model.ticketing.int_seat_map")
        )
        .is_ok());
        let err =
            may_decide(&c, &actor("bob"), &request("model.ticketing.int_seat_map")).unwrap_err();
        assert!(err.contains("does not hold the role"), "{err}");
    }

    #[test]
    fn a_claimed_user_name_grants_nothing() {
        let c = config();
        let mut mallory = actor("bob");
        mallory.claims.insert("USER".into(), "alice".into());
        assert!(may_decide(&c, &mallory, &request("TICKETING.ORDERS")).is_err());
        assert!(mallory.display().contains("claims USER=alice (unverified)"));
    }

    #[test]
    fn unknown_domain_and_low_autonomy_deny_with_a_reason() {
        let c = config();
        let err = may_decide(&c, &actor("alice"), &request("OTHER.T")).unwrap_err();
        assert!(err.contains("no domain"), "{err}");
        let err = may_decide(
            &c,
            &actor("alice"),
            &Request {
                target: "FINANCE.X",
                owner: "finance-owner",
                proposer: "dataward",
            },
        )
        .unwrap_err();
        assert!(err.contains("L1"), "{err}");
    }

    #[test]
    fn nobody_approves_their_own_proposal() {
        let c = config();
        let err = may_decide(
            &c,
            &actor("alice"),
            &Request {
                target: "TICKETING.ORDERS",
                owner: "analytics-owner",
                proposer: "alice",
            },
        )
        .unwrap_err();
        assert!(err.contains("own proposal"), "{err}");
    }

    #[test]
    fn globs() {
        assert!(glob_match(
            "model.ticketing.*",
            "model.ticketing.int_seat_map"
        ));
        assert!(glob_match("TICKETING.*", "ticketing.orders"));
        assert!(!glob_match("TICKETING.*", "xticketing.orders"));
        assert!(glob_match("*.orders", "ticketing.orders"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXcYYb"));
    }
}
