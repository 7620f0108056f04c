//! Who may decide what. Identity comes from the kernel; names from the environment are
//! claims, recorded and shown as such, and never decide anything.

pub mod access;
pub mod quiet;
pub mod request;
pub mod stop;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use serde::Serialize;

use crate::config::Config;

/// Why the policy refuses: a kind a caller can act on, and the words a person reads.
/// The policy's own type; the engine's edge converts it to the protocol's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

/// The kinds the policy refuses with, each the protocol's kind of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// The person behind the request is not known, so nothing may be recorded as theirs.
    NotPermitted,
    /// The org-wide stop is set.
    OrgStop,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// The audit login uid of a process: who logged in, kept across `sudo` and `su`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginUid {
    Set(u32),
    /// The kernel keeps none for this process: no login session set it, or the kernel
    /// has no audit support. The uid is then the person.
    Unset,
    /// It could not be read while the process was provably alive (it had exited, or
    /// its pid could have been another process's by then): nobody knows who is behind
    /// the uid, and nothing that needs the person may go ahead.
    Unknown,
}

impl LoginUid {
    /// What `/proc/PID/loginuid` holds; the kernel writes (u32)-1 when no login
    /// session set it.
    pub fn parse(text: &str) -> LoginUid {
        match text.trim().parse::<u32>() {
            Ok(u32::MAX) => LoginUid::Unset,
            Ok(id) => LoginUid::Set(id),
            Err(_) => LoginUid::Unknown,
        }
    }

    /// The login uid of a process as read from `/proc/PID/loginuid` (`Err` as the
    /// read failed). Only a read of a process known to be alive throughout means
    /// anything: the caller checks that.
    pub fn from_read(read: std::io::Result<String>) -> LoginUid {
        match read {
            Ok(text) => LoginUid::parse(&text),
            // No such file for any process: a kernel without audit support. Missing
            // for another's process only (a /proc mounted hidepid) is not knowing.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && !std::path::Path::new("/proc/self/loginuid").exists() =>
            {
                LoginUid::Unset
            }
            Err(_) => LoginUid::Unknown,
        }
    }

    fn is_unset(&self) -> bool {
        *self == LoginUid::Unset
    }
}

/// On the chain: the number, as before; unset is left out; unknown says so (never to
/// be taken for a number).
impl Serialize for LoginUid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LoginUid::Set(id) => s.serialize_u32(*id),
            LoginUid::Unset => s.serialize_none(),
            LoginUid::Unknown => s.serialize_str("unknown"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    /// The kernel-attested uid of this process.
    pub uid: u32,
    /// The audit login uid (who logged in, across sudo), where the kernel keeps one.
    #[serde(skip_serializing_if = "LoginUid::is_unset")]
    pub loginuid: LoginUid,
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
        // This process is alive while it reads itself.
        let loginuid = LoginUid::from_read(std::fs::read_to_string("/proc/self/loginuid"));
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

    /// The peer of a socket, as the kernel attests it: its uid (`SO_PEERCRED`), and
    /// the login uid of its process as read while it was alive
    /// (`engine::server::PeerIdentity`). Nothing the peer says about itself is taken,
    /// not even as a claim.
    pub fn peer(uid: u32, loginuid: LoginUid) -> Actor {
        Actor {
            uid,
            loginuid,
            user: user_name(uid),
            claims: BTreeMap::new(),
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
        if self.loginuid == LoginUid::Unknown {
            text.push_str(", login uid unknown");
        }
        if let Some(claimed) = self.claims.get("USER") {
            if Some(claimed) != self.user.as_ref() {
                text.push_str(&format!(", claims USER={claimed} (unverified)"));
            }
        }
        text
    }

    /// The person behind this actor: the login uid where the kernel keeps one (so
    /// `sudo -u other` from alice's session is still alice), else the uid. Refused
    /// when the login uid could not be read: taking the uid then would let one person
    /// pass for another.
    pub fn person(&self) -> Result<u32, Refusal> {
        match self.loginuid {
            LoginUid::Set(id) => Ok(id),
            LoginUid::Unset => Ok(self.uid),
            LoginUid::Unknown => Err(Refusal::new(
                RefusalKind::NotPermitted,
                format!(
                    "{}: the login uid of the process that connected could not be read while \
                     it was alive (it had exited, or /proc hides it from the engine), so who \
                     is behind the account is not known; nothing is recorded. Ask from a \
                     process that stays connected",
                    self.display()
                ),
            )),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("actor serializes")
    }

    /// Is this actor the named proposer? The engine's name is never a person's.
    pub fn is(&self, proposer: &str) -> bool {
        self.user.as_deref() == Some(proposer) || self.uid.to_string() == proposer
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

/// Globs with '*' only, case-insensitive: "model.payments.*", "PAYMENTS.*".
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

/// Who decides a proposal on `target`, as the policy stands now: the owner the lineage
/// names for it (`named`: dbt `meta.owner`, the notes' `owner` or `[[owner]]`) when that
/// role owns the domain covering the target, else the owners of that domain. A name
/// that is no owner role of the domain (a person's e-mail in `meta.owner`, a team dbt
/// knows but the policy does not, or none at all) never decides and never leaves a
/// proposal without a decider: the domain's owners do. The error says why nobody may
/// decide: no domain covers the target, or its domain names no owner.
///
/// The one place deciders are resolved: approval requests ask it at every decision (so
/// a reloaded config takes effect at once), snapshots show what it says, and `doctor`
/// lists the models and jobs it finds nobody for.
pub fn deciders(config: &Config, target: &str, named: &str) -> Result<Vec<String>, String> {
    let domain = domain_for(config, target)
        .ok_or_else(|| format!("no domain in the policy covers {target}; nobody may approve it"))?;
    if domain.owners.iter().any(|owner| owner == named) {
        return Ok(vec![named.to_string()]);
    }
    // (The config refuses a domain without owners, so this is never empty.)
    Ok(domain.owners.clone())
}

/// The accounts `[people]` gives any of `roles`, in the config's order.
pub fn accounts_holding(config: &Config, roles: &[String]) -> Vec<String> {
    config
        .people
        .iter()
        .filter(|(_, person)| person.roles.iter().any(|role| roles.contains(role)))
        .map(|(account, _)| account.clone())
        .collect()
}

/// The account name at the head of an [`Actor::display`] line ("alice (uid 1001)..."):
/// how a console knows which account the engine attested it to be.
pub fn account_in_display(display: &str) -> Option<&str> {
    let (account, _) = display.split_once(" (uid ")?;
    (!account.is_empty() && account != "unknown").then_some(account)
}

/// The autonomy level of the domain covering `target` (L0 to L4); a target no domain
/// covers gets L1: diagnose and show, never propose or act.
pub fn autonomy(config: &Config, target: &str) -> u8 {
    domain_for(config, target)
        .and_then(|d| d.autonomy.strip_prefix('L'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// May dataward carry out this change class itself in the domain covering `target`?
pub fn class_allowed(config: &Config, target: &str, class: &str) -> bool {
    domain_for(config, target).is_some_and(|d| d.classes.iter().any(|c| c == class))
}

#[cfg(test)]
mod tests {
    use super::request::{ApprovalRequest, RequestState};
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
[people.carol]
name = "Carol"
roles = ["analytics-lead"]
[[domain]]
name = "payments"
covers = ["PAYMENTS.*", "model.payments.*"]
owners = ["analytics-owner"]
escalation = ["analytics-lead"]
approval_ttl = "30m"
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
            loginuid: LoginUid::Unset,
            user: Some(user.to_string()),
            claims: BTreeMap::new(),
            stand_in: None,
        }
    }

    fn at(minute: i64) -> chrono::NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 11, 24)
            .unwrap()
            .and_hms_opt(14, 0, 0)
            .unwrap()
            + chrono::TimeDelta::minutes(minute)
    }

    fn request(target: &str) -> ApprovalRequest {
        ApprovalRequest::new(target, "analytics-owner", "dataward", "h1", at(0))
    }

    #[test]
    fn only_the_owner_role_may_decide() {
        let c = config();
        assert!(request("model.payments.int_payment_regions")
            .decide(&c, &actor("alice"), "h1", true)
            .is_ok());
        let err = request("model.payments.int_payment_regions")
            .decide(&c, &actor("bob"), "h1", true)
            .unwrap_err();
        assert!(err.contains("holds none of the roles"), "{err}");
    }

    #[test]
    fn the_person_is_the_login_uid_else_the_uid_and_never_a_guess() {
        assert_eq!(LoginUid::parse("1001\n"), LoginUid::Set(1001));
        assert_eq!(LoginUid::parse("4294967295"), LoginUid::Unset);
        assert_eq!(LoginUid::parse(""), LoginUid::Unknown);
        let read_failed = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(LoginUid::from_read(Err(read_failed)), LoginUid::Unknown);
        let mut sudo = actor("svc");
        sudo.uid = 1003;
        sudo.loginuid = LoginUid::Set(1001);
        assert_eq!(sudo.person().unwrap(), 1001);
        sudo.loginuid = LoginUid::Unset;
        assert_eq!(sudo.person().unwrap(), 1003);
        assert!(!sudo.to_json().contains("loginuid"), "{}", sudo.to_json());
        sudo.loginuid = LoginUid::Unknown;
        let refused = sudo.person().unwrap_err();
        assert_eq!(refused.kind, RefusalKind::NotPermitted);
        assert!(sudo.display().contains("login uid unknown"));
        assert!(sudo.to_json().contains(r#""loginuid":"unknown""#));
    }

    #[test]
    fn a_claimed_user_name_grants_nothing() {
        let c = config();
        let mut mallory = actor("bob");
        mallory.claims.insert("USER".into(), "alice".into());
        assert!(request("PAYMENTS.CHARGES")
            .decide(&c, &mallory, "h1", true)
            .is_err());
        assert!(mallory.display().contains("claims USER=alice (unverified)"));
    }

    #[test]
    fn unknown_domain_and_low_autonomy_deny_with_a_reason() {
        let c = config();
        let err = request("OTHER.T")
            .decide(&c, &actor("alice"), "h1", true)
            .unwrap_err();
        assert!(err.contains("no domain"), "{err}");
        let mut finance =
            ApprovalRequest::new("FINANCE.X", "finance-owner", "dataward", "h1", at(0));
        let err = finance.decide(&c, &actor("alice"), "h1", true).unwrap_err();
        assert!(err.contains("L1"), "{err}");
    }

    #[test]
    fn nobody_approves_their_own_proposal() {
        let c = config();
        let mut own =
            ApprovalRequest::new("PAYMENTS.CHARGES", "analytics-owner", "alice", "h1", at(0));
        let err = own.decide(&c, &actor("alice"), "h1", true).unwrap_err();
        assert!(err.contains("own proposal"), "{err}");
    }

    #[test]
    fn an_approval_is_bound_to_the_content_it_saw() {
        let c = config();
        let mut r = request("PAYMENTS.CHARGES");
        let err = r.decide(&c, &actor("alice"), "h0", true).unwrap_err();
        assert!(err.contains("void"), "{err}");
        r.decide(&c, &actor("alice"), "h1", true).unwrap();
        assert!(r.is_approved());
        r.content_changed("h2", at(5));
        assert!(!r.is_approved(), "a changed content voids the approval");
        assert_eq!(r.state, RequestState::Pending);
    }

    #[test]
    fn a_rejection_is_final_for_that_content() {
        let c = config();
        let mut r = request("PAYMENTS.CHARGES");
        r.decide(&c, &actor("alice"), "h1", false).unwrap();
        assert!(r
            .decide(&c, &actor("alice"), "h1", true)
            .unwrap_err()
            .contains("final"));
    }

    #[test]
    fn unanswered_requests_escalate_then_expire_never_grant() {
        let c = config();
        let mut r = request("PAYMENTS.CHARGES");
        assert!(r.tick(&c, at(29)).is_empty());
        let lapses = r.tick(&c, at(30));
        assert_eq!(
            lapses,
            vec![request::Lapse::Escalated {
                to: "analytics-lead".into(),
                at: "2026-11-24T14:30:00Z".parse().unwrap()
            }]
        );
        // Now the lead may approve too; a stranger still may not.
        let mut lead = actor("carol");
        lead.user = Some("carol".into());
        assert!(r.clone().decide(&c, &lead, "h1", true).is_ok());
        let lapses = r.tick(&c, at(90));
        assert!(
            matches!(lapses.last(), Some(request::Lapse::Expired { .. })),
            "{lapses:?}"
        );
        assert_eq!(r.state, RequestState::Expired);
        assert!(!r.is_approved());
        assert!(r.decide(&c, &actor("alice"), "h1", true).is_err());
    }

    /// jaffle_shop as `init` writes it: one domain covering everything, with an owner;
    /// dbt names no owner for its models and the notes' job has none.
    fn covering_everything() -> Config {
        Config::parse(
            r#"
[people.alice]
name = "Alice"
roles = ["jaffle-owner"]
[people.bob]
name = "Bob"
roles = ["marketing"]
[[domain]]
name = "jaffle_shop"
covers = ["*"]
owners = ["jaffle-owner"]
"#,
            Path::new("policy.toml"),
        )
        .unwrap()
    }

    /// A proposal whose target nobody names an owner for (the placeholder the proposal
    /// carries), or names someone who owns nothing in the policy, goes to the owners of
    /// the domain covering it; it was undecidable ("unknown-owner is not an owner of
    /// domain jaffle_shop").
    #[test]
    fn a_proposal_without_a_named_owner_goes_to_its_domains_owners() {
        let c = covering_everything();
        for named in ["unknown-owner", "", "someone@example.com", "marketing"] {
            assert_eq!(
                deciders(&c, "job.jaffle_shop.every_ten_minutes", named),
                Ok(vec!["jaffle-owner".to_string()]),
                "{named}"
            );
            let mut hold = ApprovalRequest::new(
                "job.jaffle_shop.every_ten_minutes",
                named,
                "dataward",
                "h1",
                at(0),
            );
            assert!(
                hold.decide(&c, &actor("alice"), "h1", true).is_ok(),
                "{named}"
            );
            let mut hold =
                ApprovalRequest::new("model.jaffle_shop.orders", named, "dataward", "h1", at(0));
            let err = hold.decide(&c, &actor("bob"), "h1", true).unwrap_err();
            assert!(err.contains("(jaffle-owner)"), "{err}");
        }
        // A named owner that owns the domain decides alone.
        assert_eq!(
            deciders(&config(), "PAYMENTS.CHARGES", "analytics-owner"),
            Ok(vec!["analytics-owner".to_string()])
        );
    }

    #[test]
    fn nobody_decides_outside_every_domain() {
        let err = deciders(&config(), "OTHER.T", "analytics-owner").unwrap_err();
        assert!(err.contains("no domain"), "{err}");
    }

    #[test]
    fn globs() {
        assert!(glob_match(
            "model.payments.*",
            "model.payments.int_payment_regions"
        ));
        assert!(glob_match("PAYMENTS.*", "payments.charges"));
        assert!(!glob_match("PAYMENTS.*", "xpayments.charges"));
        assert!(glob_match("*.charges", "payments.charges"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b*c", "aXXcYYb"));
    }
}
