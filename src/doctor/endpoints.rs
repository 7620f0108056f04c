//! What dataward talks to besides warehouses: the orchestrator answers (its pipelines
//! are read, nothing is paused or run), and each alert destination's secret is there
//! and its API answers. No alert is sent unless `--send-test`: then one test alert is
//! opened and at once resolved at every destination.

use std::path::Path;
use std::time::Duration;

use super::Line;
use anyhow::Context as _;

use crate::config::{AlertConfig, Config, OrchestratorConfig, SecretRef};
use crate::notify::{self, Action, Alert, Blast, Occasion, Verdict};
use crate::sanitize::Sanitized;

pub fn check(config: &Config, data_dir: &Path, send_test: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    if let Some(settings) = &config.orchestrator {
        lines.push(orchestrator(config, settings, data_dir));
    }
    for (name, alert) in config.alert_destinations() {
        lines.push(destination(config, &name, alert, send_test));
    }
    lines
}

/// The orchestrator answers at its address with the credentials named (touching no
/// job), then each mapped job's pipeline is read; nothing is paused or run.
fn orchestrator(config: &Config, settings: &OrchestratorConfig, data_dir: &Path) -> Line {
    let what = format!("orchestrator {}", settings.kind);
    // Where it is, so a cross names the endpoint's host as well as its path.
    let at = match settings.kind.as_str() {
        "dbt_cloud" | "airflow" => settings.base_url(),
        "dbt_core" => settings
            .project_dir
            .as_ref()
            .map(|dir| config.resolve(dir).display().to_string())
            .unwrap_or_default(),
        _ => settings
            .path
            .as_ref()
            .map(|path| config.resolve(path).display().to_string())
            .unwrap_or_default(),
    };
    let answered = crate::effects::orchestrator::from_config(config, data_dir).and_then(|o| {
        let o = o.context("no [orchestrator]")?;
        o.reach()?;
        o.pipelines()
    });
    match answered {
        Ok(pipelines) => {
            let mut detail = format!(
                "answers at {at}: {} pipeline{}",
                pipelines.len(),
                plural(pipelines.len())
            );
            if pipelines.is_empty() {
                detail.push_str(
                    " (no job under [orchestrator.jobs]: a hold has nothing to pause, a run nothing to queue)",
                );
            } else {
                let mut names: Vec<String> = pipelines
                    .iter()
                    .take(4)
                    .map(|p| format!("{} {}", p.name, p.state.as_str()))
                    .collect();
                if pipelines.len() > 4 {
                    names.push(format!("+{} more", pipelines.len() - 4));
                }
                detail.push_str(&format!(" ({})", names.join(", ")));
            }
            Line::ok(what, detail)
        }
        Err(e) => Line::bad(
            what,
            format!("{at}: {e:#}"),
            "check [orchestrator]: its base_url, the variable holding its token or password, the jobs it maps",
        ),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn destination(config: &Config, name: &str, alert: &AlertConfig, send_test: bool) -> Line {
    let what = format!("alert {name}");
    let secret = match notify::read_secret(config, alert) {
        Ok(secret) => secret,
        Err(e) => return Line::bad(what, format!("{e:#}"), secret_fix(config, alert)),
    };
    let client = match notify::client(Duration::from_secs(10)) {
        Ok(client) => client,
        Err(e) => {
            return Line::bad(
                what,
                format!("{e:#}"),
                "report this: the HTTP client cannot be built",
            )
        }
    };
    let sender = notify::sender_for(alert);
    let trigger = Sanitized::new(test_alert(Action::Trigger));
    let request = sender.request(&trigger, &secret);
    let origin = origin(&request.url);
    if !send_test {
        // Any HTTP answer from the API's host: the network and TLS are fine. The
        // request itself (with the secret) is not sent.
        let probe = notify::Request {
            method: notify::Method::Get,
            url: format!("{origin}/"),
            headers: Vec::new(),
            body: None,
        };
        return match notify::exchange(&client, &probe, crate::clock::Clock::wall().now()) {
            Ok(response) => Line::ok(
                what,
                format!(
                    "{} answers (HTTP {} at {origin}); secret present; no alert sent (--send-test sends one)",
                    alert.kind, response.status
                ),
            ),
            Err(e) => Line::bad(
                what,
                format!("{origin} does not answer: {e}"),
                "check the network from this host to the API (proxy, firewall, base_url)",
            ),
        };
    }
    let sent = notify::exchange(&client, &request, crate::clock::Clock::wall().now())
        .map(|r| sender.judge(&r));
    match sent {
        Ok(Verdict::Delivered | Verdict::Accepted { .. }) => {
            let resolve = Sanitized::new(test_alert(Action::Resolve));
            let closed = notify::exchange(
                &client,
                &sender.request(&resolve, &secret),
                crate::clock::Clock::wall().now(),
            )
            .map(|r| sender.judge(&r));
            let closed = match closed {
                Ok(Verdict::Delivered | Verdict::Accepted { .. }) => "and resolved",
                _ => "(resolving it failed: close it by hand)",
            };
            Line::ok(what, format!("test alert {DEDUP} delivered {closed}"))
        }
        Ok(Verdict::Retry { error, .. } | Verdict::Permanent(error)) => Line::bad(
            what,
            format!("the test alert was refused: {error}"),
            "check the key or webhook the secret holds, and that it may send alerts",
        ),
        Err(e) => Line::bad(
            what,
            format!("{origin} does not answer: {e}"),
            "check the network from this host to the API (proxy, firewall, base_url)",
        ),
    }
}

/// What to do when a destination's secret cannot be read: the variable to export, or
/// the file to fix.
fn secret_fix(config: &Config, alert: &AlertConfig) -> String {
    let key = alert.secret_key().replace('_', " ");
    match alert.secret() {
        Some(SecretRef::Env(var)) => format!(
            "export {var}='<the {key}>' where dataward serve runs (its service's environment too), then rerun `dataward doctor`"
        ),
        Some(SecretRef::File(path)) => {
            let path = config.resolve(&path);
            if path.exists() && notify::check_secret_file(&path).is_err() {
                format!("chmod 600 {} (as the account dataward serve runs as)", path.display())
            } else {
                format!("write the {key} into {} (mode 0600)", path.display())
            }
        }
        None => format!("name the {key} with {}_env or {}_file", alert.secret_key(), alert.secret_key()),
    }
}

const DEDUP: &str = "dataward-doctor-test";

fn test_alert(action: Action) -> Alert {
    Alert {
        incident: "DOCTOR-TEST".to_string(),
        dedup_key: DEDUP.to_string(),
        action,
        occasion: match action {
            Action::Resolve => Occasion::Resolved,
            _ => Occasion::Opened,
        },
        severity: "warning".to_string(),
        title: "dataward doctor --send-test: a test alert (resolved at once)".to_string(),
        table: "-".to_string(),
        domain: None,
        status: "test".to_string(),
        cause: "a test from `dataward doctor --send-test`; nothing is wrong".to_string(),
        evidence: Vec::new(),
        blast: Blast::default(),
        waiting: Vec::new(),
        update: None,
        receipt: None,
        chain_seq: 0,
        chain_hash: String::new(),
        at: crate::clock::Clock::wall().timestamp(),
    }
}

/// `scheme://host[:port]` of a URL: what may be shown (a Slack webhook's path is its
/// secret).
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_origin_of_a_url_is_shown() {
        assert_eq!(
            origin("https://hooks.slack.com/services/T0/B0/secret"),
            "https://hooks.slack.com"
        );
        assert_eq!(
            origin("http://127.0.0.1:8080/v2/enqueue"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(origin("https://u:p@h.io/x"), "https://h.io");
    }
}
