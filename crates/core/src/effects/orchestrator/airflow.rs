//! Apache Airflow through its stable REST API: v2 (Airflow 3, the default) or v1
//! (Airflow 2, `api = "v1"` in `[orchestrator]`).
//!
//! - A job of the notes is a DAG (`[orchestrator.jobs]` maps one to the other).
//! - Its schedule is the DAG's `is_paused`: read with `GET /api/v2/dags/{dag}`, set with
//!   `PATCH /api/v2/dags/{dag}?update_mask=is_paused` and `{"is_paused": true}`. The
//!   undo sets `is_paused` back to what [`Orchestrator::schedule`] read before the
//!   pause (a DAG that was already paused stays paused); Airflow keeps nothing else
//!   about a schedule that a pause touches, so `Schedule::saved` is null.
//! - A run is `POST /api/v2/dags/{dag}/dagRuns` with a `dag_run_id` made from the
//!   engine's key (see [`run_id`]), `logical_date: null` (Airflow 3 then gives the run
//!   none, and two runs never collide on a date), `conf` =
//!   `{"dataward": {"key", "by", "command"?}}` and a `note` saying who asked. Airflow
//!   answers 409 for a dag_run_id it already holds: the key's run exists (a retry after
//!   a lost answer, a re-issued intent after a crash), so it is read back, checked to
//!   carry the same key, and returned as already made. Airflow keeps the id, so nothing
//!   local can disagree with it.
//! - A run is read back with `GET /api/v2/dags/{dag}/dagRuns/{run}`: queued and running
//!   are in flight ("queued"), success and failed are themselves. Its link is the
//!   Airflow 3 UI's `{base_url}/dags/{dag}/runs/{run}` (Airflow 2's grid view for v1).
//!
//! **A backfill** (`queue_command`) triggers the job's DAG with the exact dbt command in
//! `conf["dataward"]["command"]`. Airflow cannot be told to run something else, so the
//! DAG must read it and run that instead of its usual selection, for instance:
//!
//! ```python
//! @task
//! def dbt(**context):
//!     asked = ((context["dag_run"].conf or {}).get("dataward") or {}).get("command")
//!     args = shlex.split(asked) if asked else ["dbt", "build", "--select", "orders+"]
//!     if args[0] != "dbt":
//!         raise ValueError(f"not a dbt command: {asked!r}")
//!     subprocess.run(args, check=True, cwd=PROJECT_DIR)  # no shell: no injection
//! ```
//!
//! A DAG that ignores the conf runs its usual build, and the backfill's window is not
//! what ran: document it beside the job.
//!
//! **Auth.** v2: a bearer token from `POST /auth/token` (`{"username", "password"}` ->
//! 201 `{"access_token"}`), kept in memory and asked for again, once, when a call answers
//! 401 (`Token Expired`) or 403 `Invalid JWT token` (what Airflow 3 answers for a token
//! signed with a secret it no longer has, after a restart that generated a new one).
//! v1: basic auth (the API server needs `auth_backends` to include `basic_auth`). The
//! password is read from `password_env` at every sign-in and never appears in an error.
//!
//! Every call goes through [`Api`]: a timeout, retries on 408/425/429/5xx and network
//! faults with backoff, errors naming the endpoint and what came back.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub use super::http::Retry;
use super::http::{failed, Api, Failure};
use super::{Orchestrator, Pipeline, PipelineState, RunRecord, RunStatus, Schedule};
use crate::clock::Timestamp;
use crate::notify::Method;

mod failure;

/// Which of Airflow's stable REST APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    /// Airflow 2: `/api/v1`, basic auth.
    V1,
    /// Airflow 3: `/api/v2`, a bearer token from `/auth/token`.
    V2,
}

impl ApiVersion {
    fn prefix(self) -> &'static str {
        match self {
            ApiVersion::V1 => "/api/v1",
            ApiVersion::V2 => "/api/v2",
        }
    }
}

/// Where and how to reach one Airflow.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The API server's address (Airflow 3 serves the UI there too), no trailing slash.
    pub base_url: String,
    pub api: ApiVersion,
    pub username: String,
    /// The environment variable holding the password, read at every sign-in (a rotated
    /// password needs no restart).
    pub password_env: String,
    /// The notes' job ids -> DAG ids.
    pub dags: BTreeMap<String, String>,
    /// One call's limit.
    pub timeout: Duration,
}

pub struct Airflow {
    settings: Settings,
    api: Api,
    /// v2: the bearer token of the last sign-in.
    token: Mutex<Option<String>>,
}

/// What every dag_run_id dataward makes starts with: never one of Airflow's own
/// prefixes (`manual__`, `scheduled__`, ...), and plain to see in Airflow's UI.
const RUN_ID_PREFIX: &str = "dataward__";
/// Airflow stores run ids of up to 250 characters.
const RUN_ID_MAX: usize = 250;
/// And a run's note in up to 1000.
const NOTE_MAX: usize = 1000;

/// The dag_run_id of the engine's idempotency key: the same key always gives the same
/// id, two keys never one. Airflow's default `allowed_run_id_pattern` is
/// `^[A-Za-z0-9_.~:+-]+$`: every other character (and `~` itself) is written `~XX`, a
/// byte of its UTF-8 in hex. A key too long for Airflow keeps its start and ends in `~~`
/// and a SHA-256 of the whole key (`~~` never appears otherwise).
pub fn run_id(key: &str) -> String {
    let mut id = String::from(RUN_ID_PREFIX);
    for c in key.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '+' | '-') {
            id.push(c);
        } else {
            let mut bytes = [0u8; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                let _ = write!(id, "~{b:02X}");
            }
        }
    }
    if id.len() <= RUN_ID_MAX {
        return id;
    }
    let digest = Sha256::digest(key.as_bytes());
    let hash: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    let keep = RUN_ID_MAX - 2 - hash.len();
    // Cut on a whole escape: never inside `~XX`.
    let mut cut = keep;
    while let Some(tilde) = id[..cut].rfind('~').filter(|t| cut - t < 3) {
        cut = tilde;
    }
    format!("{}~~{hash}", &id[..cut])
}

/// One path segment, percent-encoded (a DAG id may hold letters beyond ASCII; a run id
/// read back from elsewhere may hold anything).
fn segment(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Airflow's run state as the engine reads it: queued (in flight), success, failed.
pub fn status_name(state: &str) -> &'static str {
    match state {
        "queued" | "running" => "queued",
        "success" => "success",
        "failed" => "failed",
        _ => "unknown",
    }
}

fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(|s| crate::sanitize::for_terminal(s).into_owned())
}

/// Basic auth's value: `Basic base64(user:password)`.
fn basic(user: &str, password: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{user}:{password}");
    let mut out = String::from("Basic ");
    for chunk in input.as_bytes().chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Airflow {
    pub fn new(settings: Settings) -> Result<Airflow> {
        let api = Api::new("Airflow", &settings.base_url, settings.timeout)?;
        Ok(Airflow {
            settings,
            api,
            token: Mutex::new(None),
        })
    }

    /// Built from a checked `[orchestrator]` of kind airflow.
    pub fn from_config(
        config: &crate::config::Config,
        o: &crate::config::OrchestratorConfig,
    ) -> Result<Airflow> {
        let origin = config.origin.display();
        let settings = Settings {
            base_url: o
                .base_url
                .as_deref()
                .map(|url| url.trim_end_matches('/').to_string())
                .with_context(|| format!("{origin}: [orchestrator] needs base_url"))?,
            api: match o.api.as_deref() {
                Some("v1") => ApiVersion::V1,
                _ => ApiVersion::V2,
            },
            username: o
                .username
                .as_deref()
                .map(|u| u.trim().to_string())
                .with_context(|| format!("{origin}: [orchestrator] needs username"))?,
            password_env: o
                .password_env
                .clone()
                .with_context(|| format!("{origin}: [orchestrator] needs password_env"))?,
            dags: o.dag_ids(),
            timeout: o.timeout(),
        };
        Airflow::new(settings)
    }

    pub fn with_retry(mut self, retry: Retry) -> Airflow {
        self.api = self.api.with_retry(retry);
        self
    }

    fn prefix(&self) -> &'static str {
        self.settings.api.prefix()
    }

    fn dag(&self, job: &str) -> Result<&str> {
        self.settings
            .dags
            .get(job)
            .map(String::as_str)
            .ok_or_else(|| {
                anyhow!(
                    "{job} is not mapped to an Airflow DAG: add it under [orchestrator.jobs] \
                     (\"{job}\" = \"DAG_ID\")"
                )
            })
    }

    fn dag_path(&self, dag: &str) -> String {
        format!("{}/dags/{}", self.prefix(), segment(dag))
    }

    fn run_path(&self, dag: &str, run: &str) -> String {
        format!("{}/dagRuns/{}", self.dag_path(dag), segment(run))
    }

    /// Where people see a run.
    fn link(&self, dag: &str, run: &str) -> String {
        let base = &self.settings.base_url;
        match self.settings.api {
            ApiVersion::V2 => format!("{base}/dags/{}/runs/{}", segment(dag), segment(run)),
            ApiVersion::V1 => format!(
                "{base}/dags/{}/grid?dag_run_id={}",
                segment(dag),
                segment(run)
            ),
        }
    }

    fn password(&self) -> Result<String> {
        let var = &self.settings.password_env;
        match std::env::var(var) {
            Ok(value) if !value.is_empty() => Ok(value),
            Ok(_) => bail!(
                "{var} is empty in the engine's environment (it holds the Airflow password of {})",
                self.settings.username
            ),
            Err(_) => bail!(
                "{var} is not set in the engine's environment (it holds the Airflow password of {})",
                self.settings.username
            ),
        }
    }

    /// v2: one try of `POST /auth/token`.
    fn sign_in(&self) -> Result<String, Failure> {
        let path = "/auth/token";
        let password = self.password().map_err(|e| {
            Failure::local(format!("{}: {e}", self.api.endpoint(Method::Post, path)))
        })?;
        let body = json!({"username": self.settings.username, "password": password});
        let answer = self
            .api
            .send(Method::Post, path, None, Some(&body))
            .map_err(|mut f| {
                if matches!(f.status, Some(400 | 401 | 403)) {
                    f.message = format!(
                        "{}: Airflow refused user {} with the password in {}",
                        f.message, self.settings.username, self.settings.password_env
                    );
                }
                f
            })?;
        match answer["access_token"].as_str() {
            Some(token) if !token.is_empty() => Ok(token.to_string()),
            _ => Err(Failure::local(format!(
                "{} answered with no access_token",
                self.api.endpoint(Method::Post, path)
            ))),
        }
    }

    /// The Authorization header's value; v2 signs in when it holds no token (or `fresh`).
    fn authorization(&self, fresh: bool) -> Result<String, Failure> {
        match self.settings.api {
            ApiVersion::V1 => {
                let password = self
                    .password()
                    .map_err(|e| Failure::local(format!("Airflow: {e}")))?;
                Ok(basic(&self.settings.username, &password))
            }
            ApiVersion::V2 => {
                let mut token = self.token.lock().unwrap_or_else(|p| p.into_inner());
                if fresh || token.is_none() {
                    *token = None;
                    *token = Some(self.sign_in()?);
                }
                Ok(format!("Bearer {}", token.as_deref().unwrap_or_default()))
            }
        }
    }

    /// One try of one call: signed in, and signed in again once when the token is no
    /// longer taken.
    fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        let authorization = self.authorization(false)?;
        let answer = match self.api.send(method, path, Some(&authorization), body) {
            Err(f) if self.settings.api == ApiVersion::V2 && token_refused(&f) => {
                let authorization = self.authorization(true)?;
                self.api.send(method, path, Some(&authorization), body)
            }
            answer => answer,
        };
        answer.map_err(|mut f| {
            match f.status {
                Some(401) if self.settings.api == ApiVersion::V1 => {
                    f.message = format!(
                        "{}: Airflow refused user {} with the password in {}",
                        f.message, self.settings.username, self.settings.password_env
                    )
                }
                Some(401) => {
                    f.message = format!(
                        "{}: Airflow refused the token it had just given user {}",
                        f.message, self.settings.username
                    )
                }
                Some(403) => {
                    f.message = format!(
                        "{}: user {} may not do this (its role in Airflow)",
                        f.message, self.settings.username
                    )
                }
                _ => {}
            }
            f
        })
    }

    /// A call, retried. `Ok(None)`: 404.
    fn call_opt(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Option<Value>> {
        match self.api.retried(|| self.send(method, path, body)) {
            Ok(answer) => Ok(Some(answer)),
            Err(f) if f.status == Some(404) => Ok(None),
            Err(f) => Err(failed(f)),
        }
    }

    /// A DAG as Airflow has it.
    fn get_dag(&self, job: &str, dag: &str) -> Result<Value> {
        let path = self.dag_path(dag);
        self.call_opt(Method::Get, &path, None)?.ok_or_else(|| {
            anyhow!(
                "{} answered 404: Airflow has no DAG {dag:?} (mapped from {job}); is its file in \
                 the DAG folder, and parsed?",
                self.api.endpoint(Method::Get, &path)
            )
        })
    }

    fn is_paused(&self, path: &str, dag: &Value) -> Result<bool> {
        dag["is_paused"].as_bool().with_context(|| {
            format!(
                "{} answered a DAG with no is_paused",
                self.api.endpoint(Method::Get, path)
            )
        })
    }

    /// Sets `is_paused`, and checks the answer says so.
    fn set_paused(&self, job: &str, paused: bool) -> Result<()> {
        let dag = self.dag(job)?;
        let path = format!("{}?update_mask=is_paused", self.dag_path(dag));
        let answer = self
            .call_opt(Method::Patch, &path, Some(&json!({ "is_paused": paused })))?
            .ok_or_else(|| {
                anyhow!(
                    "{} answered 404: Airflow has no DAG {dag:?} (mapped from {job})",
                    self.api.endpoint(Method::Patch, &path)
                )
            })?;
        let now = &answer["is_paused"];
        anyhow::ensure!(
            *now == json!(paused),
            "{} answered, but the DAG's is_paused is {now}, not {paused}",
            self.api.endpoint(Method::Patch, &path)
        );
        Ok(())
    }

    /// Triggers the key's run once: Airflow refuses a second run with its dag_run_id.
    fn trigger(
        &self,
        job: &str,
        command: Option<&str>,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        let dag = self.dag(job)?;
        anyhow::ensure!(!key.trim().is_empty(), "a run of {job} needs a key");
        let id = run_id(key);
        let mut mark = json!({ "key": key, "by": by });
        if let Some(command) = command {
            mark["command"] = json!(super::dbt_command(command, "an Airflow DAG")?);
        }
        let mut body = json!({
            "dag_run_id": id,
            "conf": { "dataward": mark },
            "note": format!("Queued by dataward for {by} (key {key})")
                .chars()
                .take(NOTE_MAX)
                .collect::<String>(),
        });
        if self.settings.api == ApiVersion::V2 {
            // Airflow 3 takes null: a run with no logical date, so two runs never collide
            // on one. Airflow 2 refuses null and dates the run now when it is left out.
            body["logical_date"] = Value::Null;
        }
        let path = format!("{}/dagRuns", self.dag_path(dag));
        match self
            .api
            .retried(|| self.send(Method::Post, &path, Some(&body)))
        {
            Ok(answer) => {
                let made = answer["dag_run_id"].as_str().with_context(|| {
                    format!(
                        "{} answered with no dag_run_id",
                        self.api.endpoint(Method::Post, &path)
                    )
                })?;
                anyhow::ensure!(
                    made == id,
                    "{} made run {made:?}, not {id:?}",
                    self.api.endpoint(Method::Post, &path)
                );
                Ok((id, false))
            }
            // The key's run exists: made by an earlier ask whose answer was lost, or by
            // this one's first try.
            Err(f) if f.status == Some(409) => {
                let run_path = self.run_path(dag, &id);
                let run = self
                    .call_opt(Method::Get, &run_path, None)?
                    .with_context(|| {
                        format!(
                            "{} answered 409 for run {id}, and {} answered 404",
                            self.api.endpoint(Method::Post, &path),
                            self.api.endpoint(Method::Get, &run_path)
                        )
                    })?;
                let theirs = &run["conf"]["dataward"]["key"];
                anyhow::ensure!(
                    *theirs == json!(key),
                    "DAG {dag} already has a run {id} that dataward did not make for key {key:?} \
                     (its conf says {theirs}); refusing to take it as this key's run"
                );
                Ok((id, true))
            }
            Err(f) if f.status == Some(404) => bail!(
                "{}: Airflow has no DAG {dag:?} (mapped from {job})",
                f.message
            ),
            Err(f) => Err(failed(f)),
        }
    }

    /// The job's newest run, if any.
    fn last_run(&self, dag: &str) -> Result<Option<Value>> {
        let path = format!("{}/dagRuns?order_by=-id&limit=1", self.dag_path(dag));
        let answer = self
            .call_opt(Method::Get, &path, None)?
            .unwrap_or(Value::Null);
        Ok(answer["dag_runs"]
            .as_array()
            .and_then(|runs| runs.first())
            .cloned())
    }
}

/// Does this failure say the token is no longer taken (and a new one may do)?
fn token_refused(f: &Failure) -> bool {
    match f.status {
        Some(401) => true,
        Some(403) => f.message.contains("Invalid JWT token"),
        _ => false,
    }
}

impl Orchestrator for Airflow {
    /// Signs in (v2) and lists one DAG: `GET {prefix}/dags?limit=1`.
    fn reach(&self) -> Result<()> {
        let path = format!("{}/dags?limit=1", self.prefix());
        self.call_opt(Method::Get, &path, None)?.ok_or_else(|| {
            anyhow!(
                "{} answered 404: no Airflow {} API here (check base_url, and api = \"v1\" for Airflow 2)",
                self.api.endpoint(Method::Get, &path),
                self.prefix()
            )
        })?;
        Ok(())
    }

    fn pipelines(&self) -> Result<Vec<Pipeline>> {
        let mut pipelines = Vec::new();
        for (job, dag) in &self.settings.dags {
            let data = self.get_dag(job, dag)?;
            let paused = self.is_paused(&self.dag_path(dag), &data)?;
            let last = self.last_run(dag)?;
            let last_state = last.as_ref().and_then(|r| r["state"].as_str());
            let state = if last_state.is_some_and(|s| status_name(s) == "queued") {
                PipelineState::Running
            } else if paused {
                PipelineState::Paused
            } else {
                PipelineState::Scheduled
            };
            let last_failure = match (last_state.map(status_name), &last) {
                (Some("failed"), Some(run)) => {
                    text(&run["dag_run_id"]).map(|id| self.failure(dag, &id))
                }
                _ => None,
            };
            pipelines.push(Pipeline {
                name: text(&data["dag_display_name"])
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| dag.clone()),
                state,
                last_status: RunStatus::parse(last_state.map_or("none", status_name)),
                last_run_at: super::run_time(
                    last.as_ref().and_then(|r| {
                        text(&r["end_date"])
                            .or_else(|| text(&r["start_date"]))
                            .or_else(|| text(&r["queued_at"]))
                    }),
                    self.api
                        .endpoint(Method::Get, &format!("{}/dagRuns", self.dag_path(dag))),
                )?,
                ran_after_hold: None,
                hold_unconfirmed: None,
                last_failure,
            });
        }
        Ok(pipelines)
    }

    fn schedule(&self, job: &str) -> Result<Schedule> {
        let dag = self.dag(job)?;
        let data = self.get_dag(job, dag)?;
        Ok(Schedule {
            paused: self.is_paused(&self.dag_path(dag), &data)?,
            saved: Value::Null,
        })
    }

    fn pause(&self, job: &str) -> Result<Option<String>> {
        self.set_paused(job, true)?;
        Ok(None)
    }

    /// Sets `is_paused` back to what `before` read, when it is not that now: a DAG that
    /// was already paused stays paused.
    fn restore(&self, job: &str, before: &Schedule) -> Result<()> {
        let dag = self.dag(job)?;
        let data = self.get_dag(job, dag)?;
        if self.is_paused(&self.dag_path(dag), &data)? != before.paused {
            self.set_paused(job, before.paused)?;
        }
        Ok(())
    }

    fn starts_runs_while_paused(&self) -> bool {
        false
    }

    fn queue_run(&self, job: &str, _at: Timestamp, by: &str, key: &str) -> Result<(String, bool)> {
        self.trigger(job, None, by, key)
    }

    fn queue_command(
        &self,
        job: &str,
        command: &str,
        _at: Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        self.trigger(job, Some(command), by, key)
    }

    fn run(&self, job: &str, id: &str) -> Result<Option<RunRecord>> {
        let dag = self.dag(job)?;
        let path = self.run_path(dag, id);
        let Some(run) = self.call_opt(Method::Get, &path, None)? else {
            return Ok(None);
        };
        let state = run["state"].as_str().with_context(|| {
            format!(
                "{} answered a run with no state",
                self.api.endpoint(Method::Get, &path)
            )
        })?;
        let shown = crate::sanitize::for_terminal(state);
        let mut detail = format!("Airflow DAG {dag} run {id} {shown}");
        if let Some(note) = text(&run["note"]).filter(|n| !n.is_empty()) {
            detail.push_str(&format!(" ({note})"));
        }
        let whose = self.api.endpoint(Method::Get, &path);
        Ok(Some(RunRecord {
            id: id.to_string(),
            job: job.to_string(),
            status: status_name(state).to_string(),
            link: Some(self.link(dag, id)),
            requested_at: super::run_time(
                text(&run["queued_at"]).or_else(|| text(&run["run_after"])),
                &whose,
            )?,
            started_at: super::run_time(text(&run["start_date"]), &whose)?,
            finished_at: super::run_time(text(&run["end_date"]), &whose)?,
            detail,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orchestrator_airflow_states_read_as_the_engine_reads_them() {
        assert_eq!(status_name("queued"), "queued");
        assert_eq!(status_name("running"), "queued");
        assert_eq!(status_name("success"), "success");
        assert_eq!(status_name("failed"), "failed");
        assert_eq!(status_name("upstream_failed"), "unknown");
    }

    fn allowed(id: &str) -> bool {
        !id.is_empty()
            && id.len() <= RUN_ID_MAX
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.~:+-".contains(c))
    }

    #[test]
    fn orchestrator_airflow_run_ids_are_deterministic_distinct_and_allowed() {
        let keys = [
            "dataward-INC-12-34",
            "dataward INC/12",
            "dataward~INC~12",
            "dataward~7EINC~7E12",
            "prop-7",
            "scheduled__2024",
            "café ☕",
            "",
        ];
        let ids: Vec<String> = keys.iter().map(|k| run_id(k)).collect();
        for (key, id) in keys.iter().zip(&ids) {
            assert!(allowed(id), "{key:?} -> {id:?}");
            assert!(id.starts_with("dataward__"), "{id}");
            assert_eq!(run_id(key), *id, "deterministic");
        }
        let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{ids:?}");
        assert_eq!(run_id("dataward-INC-12-34"), "dataward__dataward-INC-12-34");
        assert_eq!(run_id("a b~"), "dataward__a~20b~7E");
    }

    #[test]
    fn orchestrator_airflow_long_keys_keep_their_start_and_a_hash() {
        let long = "k".repeat(400);
        let other = format!("{}x", "k".repeat(399));
        let (a, b) = (run_id(&long), run_id(&other));
        assert!(allowed(&a) && allowed(&b), "{a} {b}");
        assert_ne!(a, b);
        assert!(a.contains("~~"));
        // Escapes are never cut in half.
        let escaped = run_id(&"é".repeat(100));
        assert!(allowed(&escaped), "{escaped}");
        let before_hash = escaped.split("~~").next().unwrap();
        assert!(
            before_hash.ends_with("~A9") || before_hash.ends_with("~C3"),
            "{escaped}"
        );
    }

    #[test]
    fn orchestrator_airflow_basic_auth_is_base64() {
        assert_eq!(
            basic("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(basic("a", "b"), "Basic YTpi");
        assert_eq!(basic("ab", "c"), "Basic YWI6Yw==");
    }

    #[test]
    fn orchestrator_airflow_path_segments_are_encoded() {
        assert_eq!(segment("dataward__a:b+c"), "dataward__a%3Ab%2Bc");
        assert_eq!(segment("daily_load.v2-x"), "daily_load.v2-x");
        assert_eq!(segment("a/b?c"), "a%2Fb%3Fc");
    }
}
