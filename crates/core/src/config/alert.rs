//! `[[alert]]`: where incidents are announced (PagerDuty, Opsgenie, Jira Service
//! Management, Slack). A secret is never written in the config: each destination names
//! the environment variable (`*_env`) or the file (`*_file`) that holds it, and the
//! value is read when an alert is sent. A secret written inline is refused without
//! being quoted back.

use std::path::PathBuf;

use serde::Deserialize;

use super::{is_env_var_name, redact, Bad, Config, Step};

/// The kinds of destination dataward can send to.
pub const ALERT_KINDS: &[&str] = &["pagerduty", "opsgenie", "jsm", "slack"];
/// Severities an incident can have (see `notify::Severity`), most serious first.
pub const SEVERITIES: &[&str] = &["critical", "error", "warning"];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertConfig {
    /// How `dataward outbox` and the console name it (default: kind and position,
    /// `pagerduty-1`). The outbox keys its rows by this name.
    pub name: Option<String>,
    /// "pagerduty", "opsgenie", "jsm" or "slack".
    pub kind: String,
    /// PagerDuty: the environment variable holding the integration's routing key.
    pub routing_key_env: Option<String>,
    /// PagerDuty: a file holding it, readable by the engine's account alone.
    pub routing_key_file: Option<PathBuf>,
    /// Opsgenie and JSM: the environment variable holding the API integration's key.
    pub api_key_env: Option<String>,
    pub api_key_file: Option<PathBuf>,
    /// Slack: the environment variable holding the incoming webhook's URL (the URL is
    /// the secret).
    pub webhook_url_env: Option<String>,
    pub webhook_url_file: Option<PathBuf>,
    /// The API's address: `https://api.eu.opsgenie.com` for Opsgenie's EU instance; a
    /// local server in tests (`http://127.0.0.1:PORT`, plain HTTP to loopback only).
    pub base_url: Option<String>,
    /// Incidents in these `[[domain]]`s come here (default: every incident).
    #[serde(default)]
    pub domains: Vec<String>,
    /// Incidents of these severities come here (default: all of them).
    #[serde(default)]
    pub severities: Vec<String>,
    /// When a request escalates to one of these roles, this destination pages it: an
    /// alert of its own, closed with the incident.
    #[serde(default)]
    pub escalation_to: Vec<String>,
    /// Inline secrets, caught to be refused by name (never quoted back).
    #[serde(default)]
    routing_key: Option<toml::Value>,
    #[serde(default)]
    api_key: Option<toml::Value>,
    #[serde(default)]
    webhook_url: Option<toml::Value>,
}

/// Where a destination's secret is: what `*_env` or `*_file` named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretRef {
    Env(String),
    File(PathBuf),
}

impl AlertConfig {
    /// The name the outbox keys this destination by.
    pub fn name_at(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", self.kind, index + 1))
    }

    /// The key this kind's secret is named by: `routing_key`, `api_key`, `webhook_url`.
    pub fn secret_key(&self) -> &'static str {
        match self.kind.as_str() {
            "pagerduty" => "routing_key",
            "slack" => "webhook_url",
            _ => "api_key",
        }
    }

    /// Where the secret is (validated: exactly one of `*_env`, `*_file`).
    pub fn secret(&self) -> Option<SecretRef> {
        let (env, file) = match self.secret_key() {
            "routing_key" => (&self.routing_key_env, &self.routing_key_file),
            "webhook_url" => (&self.webhook_url_env, &self.webhook_url_file),
            _ => (&self.api_key_env, &self.api_key_file),
        };
        match (env, file) {
            (Some(var), _) => Some(SecretRef::Env(var.clone())),
            (None, Some(path)) => Some(SecretRef::File(path.clone())),
            (None, None) => None,
        }
    }
}

impl Config {
    /// Every `[[alert]]` with the name the outbox keys it by.
    pub fn alert_destinations(&self) -> Vec<(String, &AlertConfig)> {
        self.alert
            .iter()
            .enumerate()
            .map(|(i, a)| (a.name_at(i), a))
            .collect()
    }
}

/// Checks every `[[alert]]`; an error names its line.
pub(super) fn validate(config: &Config, text: &str) -> anyhow::Result<()> {
    let mut names = std::collections::BTreeSet::new();
    for (index, alert) in config.alert.iter().enumerate() {
        let at = [Step::Key("alert"), Step::Index(index)];
        validate_one(config, index, alert).map_err(|bad| bad.at(text, &at))?;
        let name = alert.name_at(index);
        if !names.insert(name.clone()) {
            return Err(Bad::key(
                "name",
                format!("alert[{index}]: a second destination named {name:?}; each needs a name of its own"),
            )
            .at(text, &at));
        }
    }
    Ok(())
}

fn validate_one(config: &Config, index: usize, alert: &AlertConfig) -> Result<(), Bad> {
    let at = format!("alert[{index}]");
    if !ALERT_KINDS.contains(&alert.kind.as_str()) {
        return Err(Bad::key(
            "kind",
            format!(
                "{at}.kind: unknown kind {:?} (expected one of {})",
                alert.kind,
                ALERT_KINDS.join(", ")
            ),
        ));
    }
    if let Some(name) = &alert.name {
        let fine = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !fine {
            return Err(Bad::key(
                "name",
                format!("{at}.name: use letters, digits, '-', '_' or '.' (at most 64)"),
            ));
        }
    }
    let own = alert.secret_key();
    // A secret written in the file: refused by its key, never quoted.
    for (key, inline) in [
        ("routing_key", &alert.routing_key),
        ("api_key", &alert.api_key),
        ("webhook_url", &alert.webhook_url),
    ] {
        if inline.is_some() {
            return Err(Bad::key(
                key,
                format!(
                    "{at}.{key}: a secret is never written in the config (its value is not shown); \
                     put it in an environment variable named by {key}_env, or in a file only \
                     the engine's account can read, named by {key}_file"
                ),
            ));
        }
    }
    for (key, env_key, file_key, env, file) in [
        (
            "routing_key",
            "routing_key_env",
            "routing_key_file",
            &alert.routing_key_env,
            &alert.routing_key_file,
        ),
        (
            "api_key",
            "api_key_env",
            "api_key_file",
            &alert.api_key_env,
            &alert.api_key_file,
        ),
        (
            "webhook_url",
            "webhook_url_env",
            "webhook_url_file",
            &alert.webhook_url_env,
            &alert.webhook_url_file,
        ),
    ] {
        if key != own {
            if env.is_some() || file.is_some() {
                let given = if env.is_some() { env_key } else { file_key };
                return Err(Bad::key(
                    given,
                    format!(
                        "{at}.{given}: a {} destination takes {own}_env or {own}_file",
                        alert.kind
                    ),
                ));
            }
            continue;
        }
        match (env, file) {
            (Some(_), Some(_)) => {
                return Err(Bad::key(
                    file_key,
                    format!("{at}: {env_key} and {file_key} both given; name one"),
                ))
            }
            (None, None) => {
                return Err(Bad::section(format!(
                    "{at}: a {} destination needs {env_key} (the environment variable holding \
                     its {}) or {file_key}",
                    alert.kind,
                    key.replace('_', " ")
                )))
            }
            (Some(var), None) if !is_env_var_name(var) => {
                return Err(Bad::key(
                    env_key,
                    format!(
                        "{at}.{env_key}: {} is not an environment variable name; put the secret \
                         in the environment, never in this file",
                        redact(var)
                    ),
                ))
            }
            _ => {}
        }
    }
    if let Some(url) = &alert.base_url {
        if alert.kind == "slack" {
            return Err(Bad::key(
                "base_url",
                format!("{at}.base_url: a Slack webhook's whole URL is its secret: name it with webhook_url_env"),
            ));
        }
        check_base_url(url).map_err(|why| Bad::key("base_url", format!("{at}.base_url: {why}")))?;
    }
    for severity in &alert.severities {
        if !SEVERITIES.contains(&severity.as_str()) {
            return Err(Bad::key(
                "severities",
                format!(
                    "{at}.severities: unknown severity {severity:?} (known: {})",
                    SEVERITIES.join(", ")
                ),
            ));
        }
    }
    for domain in &alert.domains {
        if !config.domain.iter().any(|d| &d.name == domain) {
            return Err(Bad::key(
                "domains",
                format!("{at}.domains: no [[domain]] is named {domain:?}"),
            ));
        }
    }
    for role in &alert.escalation_to {
        if !config.domain.iter().any(|d| d.escalation.contains(role)) {
            return Err(Bad::key(
                "escalation_to",
                format!("{at}.escalation_to: no [[domain]] escalates to {role:?}"),
            ));
        }
    }
    Ok(())
}

/// An API address: https, or plain http only to this machine's loopback (tests). A
/// user name or password in it would be a secret in the config.
pub fn check_base_url(url: &str) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| "not a URL like https://api.eu.opsgenie.com".to_string())?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("a user or password in the URL is a secret in the config; refused".into());
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    match scheme {
        "https" => Ok(()),
        "http" if matches!(host, "127.0.0.1" | "localhost" | "::1") => Ok(()),
        "http" => Err(format!(
            "plain http to {host} would send the secret in the clear; use https (http only to 127.0.0.1)"
        )),
        other => Err(format!("scheme {other:?}: use https")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const DOMAIN: &str = "[[domain]]\nname = \"analytics\"\ncovers = [\"*\"]\nowners = [\"owner\"]\nescalation = [\"lead\"]\n";

    fn parse(alert: &str) -> anyhow::Result<Config> {
        Config::parse(&format!("{DOMAIN}\n{alert}"), Path::new("team.toml"))
    }

    fn error(alert: &str) -> String {
        format!("{:#}", parse(alert).unwrap_err())
    }

    #[test]
    fn each_kind_takes_its_own_secret_by_reference() {
        let config = parse(
            "[[alert]]\nkind = \"pagerduty\"\nrouting_key_env = \"PD_KEY\"\n\
             [[alert]]\nname = \"ops-eu\"\nkind = \"opsgenie\"\napi_key_file = \"og.key\"\nbase_url = \"https://api.eu.opsgenie.com\"\n\
             [[alert]]\nkind = \"slack\"\nwebhook_url_env = \"SLACK_URL\"\ndomains = [\"analytics\"]\nseverities = [\"critical\"]\n\
             [[alert]]\nkind = \"jsm\"\napi_key_env = \"JSM_KEY\"\nescalation_to = [\"lead\"]\n",
        )
        .unwrap();
        let names: Vec<String> = config
            .alert_destinations()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["pagerduty-1", "ops-eu", "slack-3", "jsm-4"]);
        assert_eq!(
            config.alert[0].secret(),
            Some(SecretRef::Env("PD_KEY".into()))
        );
        assert_eq!(
            config.alert[1].secret(),
            Some(SecretRef::File("og.key".into()))
        );
    }

    #[test]
    fn an_inline_secret_is_refused_without_being_shown() {
        let err = error("[[alert]]\nkind = \"slack\"\nwebhook_url = \"https://hooks.example.com/services/T0/B0/sEcReT123\"\n");
        assert!(err.contains("team.toml: line 9"), "{err}");
        assert!(err.contains("never written in the config"), "{err}");
        assert!(!err.contains("sEcReT123"), "{err}");
        let err = error(
            "[[alert]]\nkind = \"pagerduty\"\nrouting_key_env = \"R3allyA+secret/KeyValue0123\"\n",
        );
        assert!(err.contains("not an environment variable name"), "{err}");
        assert!(!err.contains("R3allyA+secret/KeyValue0123"), "{err}");
    }

    #[test]
    fn mistakes_name_their_line() {
        for (alert, expected) in [
            ("[[alert]]\nkind = \"teams\"\n", "unknown kind"),
            ("[[alert]]\nkind = \"pagerduty\"\n", "needs routing_key_env"),
            (
                "[[alert]]\nkind = \"pagerduty\"\napi_key_env = \"X\"\nrouting_key_env = \"Y\"\n",
                "a pagerduty destination takes routing_key_env",
            ),
            (
                "[[alert]]\nkind = \"opsgenie\"\napi_key_env = \"X\"\napi_key_file = \"k\"\n",
                "both given",
            ),
            (
                "[[alert]]\nkind = \"opsgenie\"\napi_key_env = \"X\"\nbase_url = \"http://opsgenie.example.com\"\n",
                "in the clear",
            ),
            (
                "[[alert]]\nkind = \"opsgenie\"\napi_key_env = \"X\"\nbase_url = \"https://u:p@example.com\"\n",
                "a user or password",
            ),
            (
                "[[alert]]\nkind = \"slack\"\nwebhook_url_env = \"X\"\nseverities = [\"sev1\"]\n",
                "unknown severity",
            ),
            (
                "[[alert]]\nkind = \"slack\"\nwebhook_url_env = \"X\"\ndomains = [\"billing\"]\n",
                "no [[domain]] is named",
            ),
            (
                "[[alert]]\nkind = \"slack\"\nwebhook_url_env = \"X\"\nescalation_to = [\"ceo\"]\n",
                "no [[domain]] escalates to",
            ),
            (
                "[[alert]]\nkind = \"slack\"\nwebhook_url_env = \"X\"\n[[alert]]\nkind = \"slack\"\nname = \"slack-1\"\nwebhook_url_env = \"Y\"\n",
                "a second destination named",
            ),
        ] {
            let err = error(alert);
            assert!(err.contains(expected), "{alert}: {err}");
            assert!(err.contains("team.toml: line"), "{alert}: {err}");
        }
    }

    #[test]
    fn plain_http_goes_only_to_loopback() {
        assert!(check_base_url("http://127.0.0.1:8080").is_ok());
        assert!(check_base_url("http://[::1]:8080/x").is_ok());
        assert!(check_base_url("https://api.eu.opsgenie.com").is_ok());
        assert!(check_base_url("http://10.0.0.1").is_err());
        assert!(check_base_url("ftp://x").is_err());
    }
}
