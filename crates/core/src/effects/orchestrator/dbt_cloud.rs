//! dbt Cloud through its Administrative API v2, with `Authorization: Token <token>`:
//!
//! - a run is `POST /api/v2/accounts/{a}/jobs/{j}/run/` with a `cause`, and for a
//!   backfill `steps_override` holding its exact command;
//! - a run is read back with `GET /api/v2/accounts/{a}/runs/{r}/` (status 1 queued,
//!   2 starting, 3 running, 10 success, 20 error, 30 cancelled);
//! - a schedule is paused by reading the job (`GET .../jobs/{j}/`) and posting it back
//!   (`POST .../jobs/{j}/`, v2's update) with `triggers.schedule = false`.
//!
//! dbt Cloud has no client run id, so `queue_run` is made idempotent by a marker in the
//! run's `cause` (`dataward [KEY]`), looked for in the job's recent runs
//! (`GET .../runs/?job_definition_id=J&order_by=-id&include_related=["trigger"]`)
//! before every trigger: a retry after a lost answer, a 5xx or a crash finds the run
//! the first ask made instead of starting a second one. The marker lives at dbt Cloud,
//! beside the run itself, so nothing local can disagree with it.
//!
//! A pause is undone from the job's `triggers` as they were before it (`schedule`,
//! which the engine keeps in its state database before the job is changed): the undo
//! puts `schedule` back to what it was then (a job that was already paused stays
//! paused) and leaves whatever else someone changed meanwhile.
//!
//! Every call has a timeout and is retried on 429 (honouring `Retry-After`), 408, 5xx
//! and network faults, with backoff; an error names the endpoint and what came back,
//! never the token.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

pub use super::http::Retry;
use super::http::{failed, Api, Failure};
use super::{Orchestrator, Pipeline, PipelineState, RunRecord, RunStatus, Schedule};
use crate::clock::Timestamp;
use crate::notify::Method;

/// Where and how to reach one dbt Cloud account.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `https://cloud.getdbt.com`, without a trailing slash.
    pub base_url: String,
    pub account_id: u64,
    /// The environment variable holding the API token, read at every call (a rotated
    /// token needs no restart).
    pub token_env: String,
    /// The notes' job ids -> dbt Cloud job ids.
    pub jobs: BTreeMap<String, u64>,
    /// One call's limit.
    pub timeout: Duration,
}

pub struct DbtCloud {
    settings: Settings,
    api: Api,
}

/// The longest `cause` dbt Cloud takes.
const CAUSE_MAX: usize = 255;
/// How many of a job's latest runs are searched for a key's marker.
const MARKER_SEARCH: usize = 100;

impl DbtCloud {
    pub fn new(settings: Settings) -> Result<DbtCloud> {
        let api = Api::new("dbt Cloud", &settings.base_url, settings.timeout)?;
        Ok(DbtCloud { settings, api })
    }

    pub fn with_retry(mut self, retry: Retry) -> DbtCloud {
        self.api = self.api.with_retry(retry);
        self
    }

    fn account_path(&self, rest: &str) -> String {
        format!("/api/v2/accounts/{}/{rest}", self.settings.account_id)
    }

    fn job_id(&self, job: &str) -> Result<u64> {
        self.settings.jobs.get(job).copied().ok_or_else(|| {
            anyhow!(
                "{job} is not mapped to a dbt Cloud job: add it under [orchestrator.jobs] \
                 (\"{job}\" = JOB_ID)"
            )
        })
    }

    fn job_name(&self, dbt_job: u64) -> String {
        self.settings
            .jobs
            .iter()
            .find(|(_, id)| **id == dbt_job)
            .map(|(name, _)| name.clone())
            .unwrap_or_else(|| format!("dbt Cloud job {dbt_job}"))
    }

    fn token(&self) -> Result<String> {
        let var = &self.settings.token_env;
        match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => Ok(value.trim().to_string()),
            Ok(_) => bail!(
                "{var} is empty in the engine's environment (it holds the dbt Cloud API token)"
            ),
            Err(_) => bail!(
                "{var} is not set in the engine's environment (it holds the dbt Cloud API token)"
            ),
        }
    }

    /// One try of one call.
    fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
        let token = self
            .token()
            .map_err(|e| Failure::local(format!("{}: {e}", self.api.endpoint(method, path))))?;
        self.api
            .send(method, path, Some(&format!("Token {token}")), body)
            .map_err(|mut f| {
                if matches!(f.status, Some(401 | 403)) {
                    f.message = format!(
                        "{}: the token in {} was refused",
                        f.message, self.settings.token_env
                    );
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

    fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        self.call_opt(method, path, body)?.ok_or_else(|| {
            anyhow!(
                "{} answered 404: no such job or run in account {}",
                self.api.endpoint(method, path),
                self.settings.account_id
            )
        })
    }

    /// `data` of a job.
    fn get_job(&self, dbt_job: u64) -> Result<Value> {
        let answer = self.call(
            Method::Get,
            &self.account_path(&format!("jobs/{dbt_job}/")),
            None,
        )?;
        Ok(answer["data"].clone())
    }

    /// The job's latest runs, newest first, with their trigger (and its cause).
    fn recent_runs(&self, dbt_job: u64, limit: usize) -> Result<Vec<Value>> {
        let path = self.account_path(&format!(
            "runs/?job_definition_id={dbt_job}&order_by=-id&limit={limit}&include_related=%5B%22trigger%22%5D"
        ));
        let answer = self.call(Method::Get, &path, None)?;
        Ok(answer["data"].as_array().cloned().unwrap_or_default())
    }

    fn marker(key: &str) -> String {
        format!("dataward [{key}]")
    }

    fn find_marked(&self, dbt_job: u64, key: &str) -> Result<Option<i64>> {
        let marker = Self::marker(key);
        Ok(self
            .recent_runs(dbt_job, MARKER_SEARCH)?
            .iter()
            .find(|run| {
                run["trigger"]["cause"]
                    .as_str()
                    .is_some_and(|cause| cause.starts_with(&marker))
            })
            .and_then(|run| run["id"].as_i64()))
    }

    /// Triggers one run once per `key`: looks for the key's marker before every try.
    fn trigger(
        &self,
        job: &str,
        command: Option<&str>,
        by: &str,
        key: &str,
    ) -> Result<(i64, bool)> {
        let dbt_job = self.job_id(job)?;
        let marker = Self::marker(key);
        anyhow::ensure!(
            marker.chars().count() <= 200,
            "the run's key {key:?} is too long for dbt Cloud's cause"
        );
        let mut cause = format!("{marker} requested by {by}");
        if cause.chars().count() > CAUSE_MAX {
            cause = cause.chars().take(CAUSE_MAX).collect();
        }
        let mut body = json!({ "cause": cause });
        if let Some(command) = command {
            body["steps_override"] = json!([super::dbt_command(command, "dbt Cloud")?]);
        }
        let path = self.account_path(&format!("jobs/{dbt_job}/run/"));
        // The marker is looked for before every try: a try whose answer was lost may
        // have started the run.
        let answer = self.api.retried(|| {
            if let Some(run) = self
                .find_marked(dbt_job, key)
                .map_err(|e| Failure::local(format!("{e:#}")))?
            {
                return Ok(Err(run));
            }
            self.send(Method::Post, &path, Some(&body)).map(Ok)
        });
        match answer {
            Ok(Err(found)) => Ok((found, true)),
            Ok(Ok(answer)) => {
                let run = answer["data"]["id"]
                    .as_i64()
                    .with_context(|| format!("dbt Cloud POST {path} answered with no run id"))?;
                Ok((run, false))
            }
            Err(f) if f.status == Some(404) => bail!(
                "dbt Cloud POST {path} answered 404: account {} has no job {dbt_job} (mapped from {job})",
                self.settings.account_id
            ),
            Err(f) => Err(failed(f)),
        }
    }

    /// Posts the job back with `schedule` set, and checks the answer says so.
    fn update_schedule(&self, dbt_job: u64, mut data: Value, schedule: Value) -> Result<()> {
        anyhow::ensure!(
            data["triggers"].is_object(),
            "dbt Cloud job {dbt_job} has no triggers to update"
        );
        data["triggers"]["schedule"] = schedule.clone();
        let path = self.account_path(&format!("jobs/{dbt_job}/"));
        let answer = self.call(Method::Post, &path, Some(&data))?;
        let now = &answer["data"]["triggers"]["schedule"];
        anyhow::ensure!(
            *now == schedule,
            "dbt Cloud POST {path} answered, but the job's triggers.schedule is {now}, not {schedule}"
        );
        Ok(())
    }
}

/// dbt Cloud's run status as the engine reads it: queued (in flight), success, failed,
/// cancelled.
pub fn status_name(code: i64) -> &'static str {
    match code {
        1..=3 => "queued",
        10 => "success",
        20 => "failed",
        30 => "cancelled",
        _ => "unknown",
    }
}

fn humanized(code: i64) -> &'static str {
    match code {
        1 => "queued",
        2 => "starting",
        3 => "running",
        10 => "success",
        20 => "error",
        30 => "cancelled",
        _ => "unknown status",
    }
}

fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(|s| crate::sanitize::for_terminal(s).into_owned())
}

impl Orchestrator for DbtCloud {
    /// `GET /api/v2/accounts/{a}/`: the token is taken for the account.
    fn reach(&self) -> Result<()> {
        let path = self.account_path("");
        self.call_opt(Method::Get, &path, None)?.ok_or_else(|| {
            anyhow!(
                "{} answered 404: no account {} here (check account_id and base_url)",
                self.api.endpoint(Method::Get, &path),
                self.settings.account_id
            )
        })?;
        Ok(())
    }

    fn pipelines(&self) -> Result<Vec<Pipeline>> {
        let mut pipelines = Vec::new();
        for dbt_job in self.settings.jobs.values() {
            let data = self.get_job(*dbt_job)?;
            let last = self.recent_runs(*dbt_job, 1)?.into_iter().next();
            let last_code = last.as_ref().and_then(|r| r["status"].as_i64());
            let state = if last_code.is_some_and(|c| (1..=3).contains(&c)) {
                PipelineState::Running
            } else if data["triggers"]["schedule"] == json!(false) {
                PipelineState::Paused
            } else {
                PipelineState::Scheduled
            };
            pipelines.push(Pipeline {
                name: text(&data["name"]).unwrap_or_else(|| format!("dbt Cloud job {dbt_job}")),
                state,
                last_status: RunStatus::parse(last_code.map_or("none", status_name)),
                last_run_at: super::run_time(
                    last.as_ref()
                        .and_then(|r| text(&r["finished_at"]).or_else(|| text(&r["created_at"]))),
                    format!("dbt Cloud job {dbt_job}'s last run"),
                )?,
                ran_after_hold: None,
                hold_unconfirmed: None,
                last_failure: None,
            });
        }
        Ok(pipelines)
    }

    /// Paused when `triggers.schedule` is off; the triggers are kept whole for the undo.
    fn schedule(&self, job: &str) -> Result<Schedule> {
        let dbt_job = self.job_id(job)?;
        let triggers = self.get_job(dbt_job)?["triggers"].clone();
        anyhow::ensure!(
            triggers.is_object(),
            "dbt Cloud job {dbt_job} (mapped from {job}) has no triggers"
        );
        Ok(Schedule {
            paused: triggers["schedule"] == json!(false),
            saved: triggers,
        })
    }

    fn pause(&self, job: &str) -> Result<Option<String>> {
        let dbt_job = self.job_id(job)?;
        let data = self.get_job(dbt_job)?;
        if data["triggers"]["schedule"] != json!(false) {
            self.update_schedule(dbt_job, data, json!(false))?;
        }
        Ok(None)
    }

    /// Puts `schedule` back as it was, and leaves whatever else someone changed on the
    /// job meanwhile (its other triggers, its steps).
    fn restore(&self, job: &str, before: &Schedule) -> Result<()> {
        let dbt_job = self.job_id(job)?;
        let schedule = match &before.saved["schedule"] {
            Value::Null => json!(!before.paused),
            saved => saved.clone(),
        };
        let data = self.get_job(dbt_job)?;
        if data["triggers"]["schedule"] != schedule {
            self.update_schedule(dbt_job, data, schedule)?;
        }
        Ok(())
    }

    fn queue_run(&self, job: &str, _at: Timestamp, by: &str, key: &str) -> Result<(String, bool)> {
        let (run, existed) = self.trigger(job, None, by, key)?;
        Ok((run.to_string(), existed))
    }

    fn queue_command(
        &self,
        job: &str,
        command: &str,
        _at: Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        let (run, existed) = self.trigger(job, Some(command), by, key)?;
        Ok((run.to_string(), existed))
    }

    fn run(&self, _job: &str, id: &str) -> Result<Option<RunRecord>> {
        let Ok(id) = id.parse::<u64>() else {
            return Ok(None); // not a dbt Cloud run id
        };
        let path = self.account_path(&format!("runs/{id}/"));
        let Some(answer) = self.call_opt(Method::Get, &path, None)? else {
            return Ok(None);
        };
        let run = &answer["data"];
        let code = run["status"]
            .as_i64()
            .with_context(|| format!("dbt Cloud GET {path} answered a run with no status"))?;
        let mut detail = format!("dbt Cloud run {id} {}", humanized(code));
        if let Some(message) = text(&run["status_message"]).filter(|m| !m.is_empty()) {
            detail.push_str(&format!(": {message}"));
        }
        let whose = format!("dbt Cloud GET {path}");
        Ok(Some(RunRecord {
            id: id.to_string(),
            link: text(&run["href"]),
            job: run["job_definition_id"]
                .as_u64()
                .map_or_else(|| "dbt Cloud job".to_string(), |j| self.job_name(j)),
            status: status_name(code).to_string(),
            requested_at: super::run_time(text(&run["created_at"]), &whose)?,
            started_at: super::run_time(text(&run["started_at"]), &whose)?,
            finished_at: super::run_time(text(&run["finished_at"]), &whose)?,
            detail,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orchestrator_dbt_cloud_statuses_read_as_the_engine_reads_them() {
        assert_eq!(status_name(1), "queued");
        assert_eq!(status_name(2), "queued");
        assert_eq!(status_name(3), "queued");
        assert_eq!(status_name(10), "success");
        assert_eq!(status_name(20), "failed");
        assert_eq!(status_name(30), "cancelled");
    }
}
