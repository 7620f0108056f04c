//! Local stand-ins for the alert and orchestrator APIs, on 127.0.0.1: a small HTTP/1.1
//! server that records every request and answers as the API's documented contract says,
//! keeping the state the contract implies (PagerDuty's alerts by `dedup_key`, Opsgenie's
//! and JSM's by `alias` with request statuses to read back, Slack's messages, dbt Cloud's
//! jobs and runs, Airflow's DAGs, runs and tokens). Tests can make it
//! answer a status (429 with `Retry-After`, 500), be slow, hold its answer, or stop
//! listening (connection refused) and come back on the same port.

#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    PagerDuty,
    /// Opsgenie's Alert API; JSM's is the same under `/jsm/ops/integration`.
    Opsgenie,
    Jsm,
    Slack,
    /// dbt Cloud's Administrative API v2, for account [`DBT_ACCOUNT`]: get the account,
    /// get and update a job, trigger a run, get a run, list runs.
    DbtCloud,
    /// Airflow's stable REST API as Airflow 3.1 answers it (v2: bearer tokens from
    /// `/auth/token`) and as Airflow 2 does (v1: basic auth), for user [`AIRFLOW_USER`]
    /// with the secret as password: get and patch a DAG, trigger, get and list runs.
    Airflow,
}

/// The one user the Airflow stand-in knows.
pub const AIRFLOW_USER: &str = "dataward";

/// The one account the dbt Cloud stand-in serves.
pub const DBT_ACCOUNT: u64 = 43;

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Recorded {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// How the server answers the next request (taken in order; then the contract's answer).
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// This status and body, with `Retry-After` when given; the API's state is untouched.
    Status(u16, Option<String>, String),
    /// Wait this long, then answer as the contract says.
    Slow(Duration),
    /// Take the request (the API acts on it) and hold the answer until `release`.
    Hold,
}

/// An alert as the API keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptAlert {
    pub key: String,
    /// "triggered", "acknowledged", "resolved" (PagerDuty); "open", "acked", "closed".
    pub state: String,
    /// Events that landed on it (PagerDuty's log, Opsgenie's count and notes).
    pub events: Vec<String>,
}

#[derive(Default)]
struct State {
    requests: Vec<Recorded>,
    plan: VecDeque<Behaviour>,
    alerts: Vec<KeptAlert>,
    /// Opsgenie/JSM: request id -> its outcome, and how many reads answer 404 first.
    outcomes: BTreeMap<String, Value>,
    unprocessed_reads: usize,
    next_request: u64,
    slack_messages: Vec<Value>,
    held: usize,
    released: bool,
    /// dbt Cloud: jobs by id, and runs in the order they were triggered.
    dbt_jobs: BTreeMap<u64, Value>,
    dbt_runs: Vec<Value>,
    /// Airflow: DAGs by id, runs in the order they were triggered, the tokens it takes
    /// and those it has let expire (a token it never gave is "invalid").
    airflow_dags: BTreeMap<String, Value>,
    airflow_runs: Vec<Value>,
    airflow_tokens: Vec<String>,
    airflow_expired: Vec<String>,
    /// Requests the API acts on at once but answers only after a delay (see
    /// [`FakeApi::answer_late`]).
    late: Option<(LateRule, Duration)>,
}

/// Which requests are answered late.
type LateRule = Box<dyn Fn(&Recorded) -> bool + Send>;

pub struct FakeApi {
    pub api: Api,
    pub addr: SocketAddr,
    /// The secret it expects: routing key, GenieKey, or (Slack) the webhook path.
    pub secret: String,
    state: Arc<(Mutex<State>, Condvar)>,
    listening: Arc<Mutex<bool>>,
}

impl FakeApi {
    pub fn start(api: Api, secret: &str) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = FakeApi {
            api,
            addr,
            secret: secret.to_string(),
            state: Arc::new((Mutex::new(State::default()), Condvar::new())),
            listening: Arc::new(Mutex::new(false)),
        };
        server.serve(listener);
        server
    }

    /// The base URL a sender is configured with (Slack: the webhook URL itself).
    pub fn base_url(&self) -> String {
        match self.api {
            Api::Slack => format!("http://{}/services/{}", self.addr, self.secret),
            _ => format!("http://{}", self.addr),
        }
    }

    fn serve(&self, listener: TcpListener) {
        *self.listening.lock().unwrap() = true;
        let (state, listening, api, secret) = (
            self.state.clone(),
            self.listening.clone(),
            self.api,
            self.secret.clone(),
        );
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || loop {
            if !*listening.lock().unwrap() {
                return; // dropping the listener: connections are refused from now on
            }
            match listener.accept() {
                Ok((stream, _)) => {
                    let (state, secret) = (state.clone(), secret.clone());
                    std::thread::spawn(move || handle(stream, api, &secret, &state));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        });
    }

    /// Stops listening: connections are refused until `up`.
    pub fn down(&self) {
        *self.listening.lock().unwrap() = false;
        // Until the accept thread has dropped the listener, a connect could still land.
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect(self.addr).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Listens again on the same port.
    pub fn up(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(self.addr) {
                Ok(l) => break l,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("cannot listen on {} again: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    pub fn plan(&self, behaviours: impl IntoIterator<Item = Behaviour>) {
        self.state.0.lock().unwrap().plan.extend(behaviours);
    }

    /// Opsgenie/JSM: the next `n` reads of a request's status answer 404 (not processed).
    pub fn unprocessed_reads(&self, n: usize) {
        self.state.0.lock().unwrap().unprocessed_reads = n;
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.0.lock().unwrap().requests.clone()
    }

    pub fn alerts(&self) -> Vec<KeptAlert> {
        self.state.0.lock().unwrap().alerts.clone()
    }

    pub fn slack_messages(&self) -> Vec<Value> {
        self.state.0.lock().unwrap().slack_messages.clone()
    }

    /// How many answers are being held.
    pub fn held(&self) -> usize {
        self.state.0.lock().unwrap().held
    }

    /// dbt Cloud: a job as the API keeps it, with a schedule that is on or off.
    pub fn dbt_add_job(&self, id: u64, name: &str, schedule: bool) {
        let job = json!({
            "id": id, "account_id": DBT_ACCOUNT, "project_id": 7, "environment_id": 11,
            "name": name, "execute_steps": ["dbt build"], "state": 1,
            "dbt_version": null, "generate_docs": false, "run_generate_sources": false,
            "triggers": {"github_webhook": false, "git_provider_webhook": false,
                         "schedule": schedule, "on_merge": false},
            "settings": {"threads": 4, "target_name": "default"},
            "schedule": {"cron": "15 * * * *", "date": {"type": "custom_cron", "cron": "15 * * * *"},
                         "time": {"type": "every_hour", "interval": 1}},
        });
        self.state.0.lock().unwrap().dbt_jobs.insert(id, job);
    }

    /// dbt Cloud: a job changed by someone else (by its `id`).
    pub fn dbt_put_job(&self, job: Value) {
        let id = job["id"].as_u64().unwrap();
        self.state.0.lock().unwrap().dbt_jobs.insert(id, job);
    }

    /// dbt Cloud: a job as it is now.
    pub fn dbt_job(&self, id: u64) -> Value {
        self.state.0.lock().unwrap().dbt_jobs[&id].clone()
    }

    /// dbt Cloud: every run, oldest first, with its trigger.
    pub fn dbt_runs(&self) -> Vec<Value> {
        self.state.0.lock().unwrap().dbt_runs.clone()
    }

    /// dbt Cloud: moves a run on (2 starting, 3 running, 10 success, 20 error, 30
    /// cancelled), as the scheduler would.
    pub fn dbt_set_run_status(&self, run: i64, status: i64, message: Option<&str>) {
        let mut s = self.state.0.lock().unwrap();
        let r = s
            .dbt_runs
            .iter_mut()
            .find(|r| r["id"] == run)
            .expect("no such run");
        r["status"] = json!(status);
        r["status_humanized"] = json!(dbt_humanized(status));
        r["in_progress"] = json!((1..=3).contains(&status));
        r["is_complete"] = json!(status >= 10);
        r["is_success"] = json!(status == 10);
        r["is_error"] = json!(status == 20);
        r["is_cancelled"] = json!(status == 30);
        r["status_message"] = json!(message);
        if status >= 2 && r["started_at"].is_null() {
            r["started_at"] = json!("2026-11-24 14:52:10.000000+00:00");
        }
        if status >= 10 {
            r["finished_at"] = json!("2026-11-24 14:58:40.000000+00:00");
        }
    }

    /// Airflow: a DAG, paused or not.
    pub fn airflow_add_dag(&self, dag_id: &str, paused: bool) {
        let dag = json!({
            "dag_id": dag_id, "dag_display_name": dag_id, "is_paused": paused,
            "is_stale": false, "timetable_summary": "@hourly", "owners": ["airflow"],
        });
        self.state
            .0
            .lock()
            .unwrap()
            .airflow_dags
            .insert(dag_id.to_string(), dag);
    }

    /// Airflow: a DAG as it is now.
    pub fn airflow_dag(&self, dag_id: &str) -> Value {
        self.state.0.lock().unwrap().airflow_dags[dag_id].clone()
    }

    /// Airflow: every run, oldest first.
    pub fn airflow_runs(&self) -> Vec<Value> {
        self.state.0.lock().unwrap().airflow_runs.clone()
    }

    /// Airflow: a run someone else made.
    pub fn airflow_put_run(&self, run: Value) {
        self.state.0.lock().unwrap().airflow_runs.push(run);
    }

    /// Airflow: moves a run on (running, success, failed), as the scheduler would.
    pub fn airflow_set_run_state(&self, run_id: &str, state: &str) {
        let mut s = self.state.0.lock().unwrap();
        let run = s
            .airflow_runs
            .iter_mut()
            .find(|r| r["dag_run_id"] == run_id)
            .expect("no such run");
        run["state"] = json!(state);
        if state != "queued" && run["start_date"].is_null() {
            run["start_date"] = json!("2026-12-01T10:00:02.000000Z");
        }
        if matches!(state, "success" | "failed") {
            run["end_date"] = json!("2026-12-01T10:00:09.000000Z");
        }
    }

    /// Airflow: every token given so far expires (401 `Token Expired`).
    pub fn airflow_expire_tokens(&self) {
        let mut s = self.state.0.lock().unwrap();
        let tokens = std::mem::take(&mut s.airflow_tokens);
        s.airflow_expired.extend(tokens);
    }

    /// Airflow: forgets every token, as an Airflow restarted with a new JWT secret does
    /// (403 `Invalid JWT token`).
    pub fn airflow_forget_tokens(&self) {
        let mut s = self.state.0.lock().unwrap();
        s.airflow_tokens.clear();
        s.airflow_expired.clear();
    }

    /// Lets every held answer go.
    /// From now on, requests that `which` picks are acted on at once (the API's state
    /// changes) and answered only after `delay`: an API whose answer comes too late for
    /// the client, after the change it asked for has landed.
    pub fn answer_late(&self, which: impl Fn(&Recorded) -> bool + Send + 'static, delay: Duration) {
        self.state.0.lock().unwrap().late = Some((Box::new(which), delay));
    }

    /// Every request answered on time again.
    pub fn answer_on_time(&self) {
        self.state.0.lock().unwrap().late = None;
    }

    pub fn release(&self) {
        self.state.0.lock().unwrap().released = true;
        self.state.1.notify_all();
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        *self.listening.lock().unwrap() = false;
        self.release();
    }
}

fn handle(mut stream: TcpStream, api: Api, secret: &str, state: &(Mutex<State>, Condvar)) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let Some(request) = read_request(&mut stream) else {
        return;
    };
    let (behaviour, late) = {
        let mut s = state.0.lock().unwrap();
        s.requests.push(request.clone());
        let late = s
            .late
            .as_ref()
            .filter(|(which, _)| which(&request))
            .map(|(_, delay)| *delay);
        (s.plan.pop_front(), late)
    };
    let (status, retry_after, body) = match behaviour {
        Some(Behaviour::Status(status, retry_after, body)) => (status, retry_after, body),
        Some(Behaviour::Slow(delay)) => {
            std::thread::sleep(delay);
            contract(api, secret, &request, state)
        }
        Some(Behaviour::Hold) => {
            let answer = contract(api, secret, &request, state);
            let mut s = state.0.lock().unwrap();
            s.held += 1;
            while !s.released {
                s = state.1.wait(s).unwrap();
            }
            answer
        }
        None => contract(api, secret, &request, state),
    };
    if let Some(delay) = late {
        std::thread::sleep(delay);
    }
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    head.push_str(if api == Api::Slack {
        "Content-Type: text/plain\r\n"
    } else {
        "Content-Type: application/json\r\n"
    });
    if let Some(after) = retry_after {
        head.push_str(&format!("Retry-After: {after}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// The API's answer to a request, as its contract says, and what it does to its state.
fn contract(
    api: Api,
    secret: &str,
    request: &Recorded,
    state: &(Mutex<State>, Condvar),
) -> (u16, Option<String>, String) {
    let mut s = state.0.lock().unwrap();
    match api {
        Api::PagerDuty => pagerduty(secret, request, &mut s),
        Api::Opsgenie => opsgenie("", secret, request, &mut s),
        Api::Jsm => opsgenie("/jsm/ops/integration", secret, request, &mut s),
        Api::Slack => slack(secret, request, &mut s),
        Api::DbtCloud => dbt_cloud(secret, request, &mut s),
        Api::Airflow => airflow(secret, request, &mut s),
    }
}

fn invalid(message: &str) -> (u16, Option<String>, String) {
    (
        400,
        None,
        json!({"status": "invalid event", "message": "Event object is invalid", "errors": [message]})
            .to_string(),
    )
}

/// Events API v2: `POST /v2/enqueue`.
fn pagerduty(secret: &str, r: &Recorded, s: &mut State) -> (u16, Option<String>, String) {
    if r.method != "POST" || r.path != "/v2/enqueue" {
        return (404, None, String::new());
    }
    let event = r.json();
    if event["routing_key"] != secret {
        return invalid("Invalid routing key");
    }
    let action = event["event_action"].as_str().unwrap_or_default();
    if !["trigger", "acknowledge", "resolve"].contains(&action) {
        return invalid("'event_action' is invalid");
    }
    let Some(key) = event["dedup_key"].as_str() else {
        return invalid("'dedup_key' is missing");
    };
    if key.chars().count() > 255 {
        return invalid("'dedup_key' is too long");
    }
    if action == "trigger" {
        let payload = &event["payload"];
        let summary = payload["summary"].as_str().unwrap_or_default();
        if summary.is_empty() || summary.chars().count() > 1024 {
            return invalid("'payload.summary' is missing or too long");
        }
        if payload["source"].as_str().unwrap_or_default().is_empty() {
            return invalid("'payload.source' is missing");
        }
        if !["critical", "error", "warning", "info"]
            .contains(&payload["severity"].as_str().unwrap_or_default())
        {
            return invalid("'payload.severity' is invalid");
        }
    }
    // Events land on the open alert with the key; a trigger with none open opens one;
    // acknowledge and resolve with none open are dropped.
    let open = s
        .alerts
        .iter_mut()
        .rev()
        .find(|a| a.key == key && a.state != "resolved");
    match (action, open) {
        ("trigger", Some(alert)) => alert.events.push("trigger".into()),
        ("trigger", None) => s.alerts.push(KeptAlert {
            key: key.to_string(),
            state: "triggered".into(),
            events: vec!["trigger".into()],
        }),
        (other, Some(alert)) => {
            alert.events.push(other.to_string());
            alert.state = if other == "resolve" {
                "resolved"
            } else {
                "acknowledged"
            }
            .into();
        }
        (_, None) => {}
    }
    (
        202,
        None,
        json!({"status": "success", "message": "Event processed", "dedup_key": key}).to_string(),
    )
}

fn accepted(s: &mut State, outcome: Value) -> (u16, Option<String>, String) {
    s.next_request += 1;
    let id = format!("req-{:04}", s.next_request);
    s.outcomes.insert(id.clone(), outcome);
    (
        202,
        None,
        json!({"result": "Request will be processed", "took": 0.01, "requestId": id}).to_string(),
    )
}

fn outcome(success: bool, action: &str, status: &str, alias: &str) -> Value {
    json!({"success": success, "isSuccess": success, "action": action, "status": status,
           "alias": alias, "processedAt": "2026-11-24T14:17:00.000Z"})
}

/// Alert API v2 (and JSM's, under its prefix): GenieKey auth; create, acknowledge, notes
/// and close by alias, each 202 with a requestId; request statuses read back.
fn opsgenie(
    prefix: &str,
    secret: &str,
    r: &Recorded,
    s: &mut State,
) -> (u16, Option<String>, String) {
    if r.headers.get("authorization").map(String::as_str) != Some(&format!("GenieKey {secret}")) {
        return (
            401,
            None,
            json!({"message": "Could not authenticate", "took": 0.0}).to_string(),
        );
    }
    let Some(path) = r.path.strip_prefix(prefix) else {
        return (404, None, String::new());
    };
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    if r.method == "GET" {
        let Some(id) = path.strip_prefix("/v2/alerts/requests/") else {
            return (404, None, String::new());
        };
        if s.unprocessed_reads > 0 {
            s.unprocessed_reads -= 1;
            return (
                404,
                None,
                json!({"message": "Request not found"}).to_string(),
            );
        }
        return match s.outcomes.get(id) {
            Some(outcome) => (
                200,
                None,
                json!({"data": outcome, "took": 0.01, "requestId": id}).to_string(),
            ),
            None => (
                404,
                None,
                json!({"message": "Request not found"}).to_string(),
            ),
        };
    }
    let body = r.json();
    if path == "/v2/alerts" {
        let message = body["message"].as_str().unwrap_or_default();
        if message.is_empty() || message.chars().count() > 130 {
            return (
                422,
                None,
                json!({"message": "Message can not be empty or longer than 130"}).to_string(),
            );
        }
        let alias = body["alias"].as_str().unwrap_or(message).to_string();
        if alias.chars().count() > 512
            || body["description"]
                .as_str()
                .is_some_and(|d| d.chars().count() > 15_000)
        {
            return (422, None, json!({"message": "too long"}).to_string());
        }
        // One open alert per alias: a second create lands on it.
        match s
            .alerts
            .iter_mut()
            .find(|a| a.key == alias && a.state != "closed")
        {
            Some(alert) => alert.events.push("create (deduplicated)".into()),
            None => s.alerts.push(KeptAlert {
                key: alias.clone(),
                state: "open".into(),
                events: vec!["create".into()],
            }),
        }
        return accepted(s, outcome(true, "Create", "Created alert", &alias));
    }
    let Some(rest) = path.strip_prefix("/v2/alerts/") else {
        return (404, None, String::new());
    };
    let Some((alias, verb)) = rest.rsplit_once('/') else {
        return (404, None, String::new());
    };
    if query != "identifierType=alias" {
        return (422, None, json!({"message": "identifierType"}).to_string());
    }
    let alias = percent_decode(alias);
    let action = match verb {
        "close" => "Close",
        "acknowledge" => "Acknowledge",
        "notes" => "AddNote",
        _ => return (404, None, String::new()),
    };
    let known = s.alerts.iter().any(|a| a.key == alias);
    let open = s
        .alerts
        .iter_mut()
        .rev()
        .find(|a| a.key == alias && a.state != "closed");
    let result = match (verb, open) {
        (_, Some(alert)) => {
            alert.events.push(verb.to_string());
            match verb {
                "close" => alert.state = "closed".into(),
                "acknowledge" => alert.state = "acked".into(),
                _ => {}
            }
            outcome(true, action, "Done", &alias)
        }
        ("close", None) if known => outcome(false, action, "Alert is already closed", &alias),
        (_, None) => outcome(false, action, "Alert does not exist", &alias),
    };
    accepted(s, result)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Incoming webhooks: `POST` to the hook's path; 200 `ok`, or a plain-text error.
fn slack(secret: &str, r: &Recorded, s: &mut State) -> (u16, Option<String>, String) {
    if r.method != "POST" || r.path != format!("/services/{secret}") {
        return (404, None, "no_service".into());
    }
    let message = r.json();
    let text_ok = message["text"].as_str().is_some_and(|t| !t.is_empty());
    let blocks_ok = message["blocks"].as_array().is_some_and(|b| {
        b.len() <= 50
            && b.iter().all(|block| {
                block["text"]["text"]
                    .as_str()
                    .is_none_or(|t| t.chars().count() <= 3000)
            })
    });
    if !text_ok || !blocks_ok {
        return (400, None, "invalid_payload".into());
    }
    s.slack_messages.push(message);
    (200, None, "ok".into())
}

fn dbt_humanized(status: i64) -> &'static str {
    match status {
        1 => "Queued",
        2 => "Starting",
        3 => "Running",
        10 => "Success",
        20 => "Error",
        30 => "Cancelled",
        _ => "Unknown",
    }
}

/// dbt Cloud's envelope: `{"status": {...}, "data": ...}`.
fn dbt_answer(code: u16, data: Value, message: &str) -> (u16, Option<String>, String) {
    (
        code,
        None,
        json!({"status": {"code": code, "is_success": (200..300).contains(&code),
                          "user_message": message, "developer_message": ""},
               "data": data})
        .to_string(),
    )
}

/// The query string of a path as pairs (values percent-decoded).
fn query_pairs(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), percent_decode(v))
        })
        .collect()
}

/// Administrative API v2: `Authorization: Token <token>`; under
/// `/api/v2/accounts/{account}/`: `GET` (the account), `GET jobs/{j}/`, `POST jobs/{j}/` (update, the whole
/// job), `POST jobs/{j}/run/` (`cause` required, `steps_override` optional), `GET
/// runs/{r}/`, `GET runs/?job_definition_id=&order_by=-id&limit=&include_related=`.
fn dbt_cloud(secret: &str, r: &Recorded, s: &mut State) -> (u16, Option<String>, String) {
    if r.headers.get("authorization").map(String::as_str) != Some(&format!("Token {secret}")) {
        return dbt_answer(401, Value::Null, "Invalid token.");
    }
    let prefix = format!("/api/v2/accounts/{DBT_ACCOUNT}/");
    let Some(rest) = r.path.strip_prefix(&prefix) else {
        return dbt_answer(404, Value::Null, "Not found.");
    };
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match (r.method.as_str(), parts.as_slice()) {
        ("GET", [""]) => dbt_answer(
            200,
            json!({"id": DBT_ACCOUNT, "name": "Stand-in", "state": 1, "plan": "team"}),
            "Success!",
        ),
        ("GET", ["jobs", id]) => match id.parse().ok().and_then(|id: u64| s.dbt_jobs.get(&id)) {
            Some(job) => dbt_answer(200, job.clone(), "Success!"),
            None => dbt_answer(404, Value::Null, "Job not found."),
        },
        ("POST", ["jobs", id]) => {
            let Some(id) = id
                .parse::<u64>()
                .ok()
                .filter(|id| s.dbt_jobs.contains_key(id))
            else {
                return dbt_answer(404, Value::Null, "Job not found.");
            };
            let body = r.json();
            let whole = [
                "id",
                "account_id",
                "project_id",
                "environment_id",
                "name",
                "execute_steps",
                "triggers",
                "settings",
            ]
            .iter()
            .all(|k| !body[k].is_null());
            let triggers_ok = body["triggers"]
                .as_object()
                .is_some_and(|t| t.values().all(Value::is_boolean) && t.contains_key("schedule"));
            if !whole || !triggers_ok || body["id"] != id {
                return dbt_answer(
                    400,
                    Value::Null,
                    "The job is invalid: the whole job is required.",
                );
            }
            let mut job = body;
            job["account_id"] = json!(DBT_ACCOUNT);
            s.dbt_jobs.insert(id, job.clone());
            dbt_answer(200, job, "Success!")
        }
        ("POST", ["jobs", id, "run"]) => {
            let Some(id) = id
                .parse::<u64>()
                .ok()
                .filter(|id| s.dbt_jobs.contains_key(id))
            else {
                return dbt_answer(404, Value::Null, "Job not found.");
            };
            let body = r.json();
            let cause = body["cause"].as_str().unwrap_or_default();
            if cause.is_empty() || cause.chars().count() > 255 {
                return dbt_answer(
                    400,
                    Value::Null,
                    "cause is required (at most 255 characters)",
                );
            }
            let steps = &body["steps_override"];
            if !steps.is_null()
                && !steps.as_array().is_some_and(|a| {
                    !a.is_empty()
                        && a.iter()
                            .all(|x| x.as_str().is_some_and(|x| x.starts_with("dbt ")))
                })
            {
                return dbt_answer(400, Value::Null, "steps_override must be dbt commands");
            }
            let run_id = 90_000 + s.dbt_runs.len() as i64 + 1;
            let run = json!({
                "id": run_id, "account_id": DBT_ACCOUNT, "job_definition_id": id,
                "trigger_id": run_id + 5_000, "status": 1, "status_humanized": "Queued",
                "status_message": null, "in_progress": true, "is_complete": false,
                "is_success": false, "is_error": false, "is_cancelled": false,
                "created_at": "2026-11-24 14:52:00.000000+00:00", "started_at": null,
                "finished_at": null,
                "href": format!("https://cloud.getdbt.com/deploy/{DBT_ACCOUNT}/projects/7/runs/{run_id}/"),
                "trigger": {"id": run_id + 5_000, "cause": cause,
                            "steps_override": if steps.is_null() { Value::Null } else { steps.clone() }},
            });
            s.dbt_runs.push(run.clone());
            dbt_answer(200, run, "Success!")
        }
        ("GET", ["runs", id]) => match s
            .dbt_runs
            .iter()
            .find(|run| id.parse::<i64>().is_ok_and(|id| run["id"] == id))
        {
            Some(run) => {
                let mut run = run.clone();
                if !query_pairs(query)
                    .get("include_related")
                    .is_some_and(|v| v.contains("trigger"))
                {
                    run.as_object_mut().unwrap().remove("trigger");
                }
                dbt_answer(200, run, "Success!")
            }
            None => dbt_answer(404, Value::Null, "Run not found."),
        },
        ("GET", ["runs"]) => {
            let q = query_pairs(query);
            let with_trigger = q
                .get("include_related")
                .is_some_and(|v| v.contains("trigger"));
            let limit: usize = q
                .get("limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(100)
                .min(100);
            let mut runs: Vec<Value> = s
                .dbt_runs
                .iter()
                .filter(|run| {
                    q.get("job_definition_id").is_none_or(|j| {
                        j.parse::<u64>()
                            .is_ok_and(|j| run["job_definition_id"] == j)
                    })
                })
                .cloned()
                .collect();
            if q.get("order_by").map(String::as_str) == Some("-id") {
                runs.reverse();
            }
            runs.truncate(limit);
            if !with_trigger {
                for run in &mut runs {
                    run.as_object_mut().unwrap().remove("trigger");
                }
            }
            dbt_answer(200, Value::Array(runs), "Success!")
        }
        _ => dbt_answer(404, Value::Null, "Not found."),
    }
}

fn airflow_answer(code: u16, body: Value) -> (u16, Option<String>, String) {
    (code, None, body.to_string())
}

fn detail(code: u16, message: &str) -> (u16, Option<String>, String) {
    airflow_answer(code, json!({ "detail": message }))
}

/// Basic auth as Airflow 2's `basic_auth` backend takes it.
fn basic_ok(secret: &str, header: Option<&String>) -> bool {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let Some(encoded) = header.and_then(|h| h.strip_prefix("Basic ")) else {
        return false;
    };
    let mut bits = 0u32;
    let mut count = 0;
    let mut decoded = Vec::new();
    for c in encoded.bytes().filter(|c| *c != b'=') {
        let Some(v) = ALPHABET.iter().position(|a| *a == c) else {
            return false;
        };
        bits = (bits << 6) | v as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            decoded.push((bits >> count) as u8);
        }
    }
    decoded == format!("{AIRFLOW_USER}:{secret}").as_bytes()
}

/// Airflow's stable REST API. `POST /auth/token` (JSON username and password -> 201
/// `access_token`); under `/api/v2` (bearer) or `/api/v1` (basic): `GET dags/{d}`,
/// `PATCH dags/{d}` (`is_paused`), `POST dags/{d}/dagRuns` (v2: `logical_date` required,
/// null allowed; v1: a date or left out; 409 for a dag_run_id it holds), `GET
/// dags/{d}/dagRuns/{r}`, `GET dags/{d}/dagRuns?order_by=-id&limit=`, `GET dags?limit=`.
fn airflow(secret: &str, r: &Recorded, s: &mut State) -> (u16, Option<String>, String) {
    let (path, query) = r.path.split_once('?').unwrap_or((&r.path, ""));
    if path == "/auth/token" {
        if r.method != "POST" {
            return detail(405, "Method Not Allowed");
        }
        let body = r.json();
        if !body["username"].is_string() || !body["password"].is_string() {
            return detail(400, "Username and password must be provided");
        }
        if body["username"] != AIRFLOW_USER || body["password"] != secret {
            return detail(401, "Invalid credentials");
        }
        let token = format!(
            "tok-{}",
            s.airflow_tokens.len() + s.airflow_expired.len() + 1
        );
        s.airflow_tokens.push(token.clone());
        return airflow_answer(201, json!({ "access_token": token }));
    }
    let v1 = path.starts_with("/api/v1/");
    let Some(rest) = path
        .strip_prefix("/api/v2/")
        .or_else(|| path.strip_prefix("/api/v1/"))
    else {
        return detail(404, "Not Found");
    };
    let authorization = r.headers.get("authorization");
    if v1 {
        if !basic_ok(secret, authorization) {
            return airflow_answer(
                401,
                json!({"detail": null, "status": 401, "title": "Unauthorized",
                       "type": "https://airflow.apache.org/docs/apache-airflow/2.10.5/stable-rest-api-ref.html#section/Errors/Unauthenticated"}),
            );
        }
    } else {
        match authorization.and_then(|h| h.strip_prefix("Bearer ")) {
            None => return detail(401, "Not authenticated"),
            Some(t) if s.airflow_expired.iter().any(|e| e == t) => {
                return detail(401, "Token Expired")
            }
            Some(t) if !s.airflow_tokens.iter().any(|v| v == t) => {
                return detail(403, "Invalid JWT token")
            }
            Some(_) => {}
        }
    }
    let parts: Vec<String> = rest.split('/').map(percent_decode).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let no_dag = |dag: &str| detail(404, &format!("The Dag with ID: `{dag}` was not found"));
    match (r.method.as_str(), parts.as_slice()) {
        ("GET", ["dags"]) => {
            let limit = query_pairs(query)
                .get("limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(50);
            let dags: Vec<Value> = s.airflow_dags.values().take(limit).cloned().collect();
            airflow_answer(
                200,
                json!({ "dags": dags, "total_entries": s.airflow_dags.len() }),
            )
        }
        ("GET", ["dags", dag]) => match s.airflow_dags.get(*dag) {
            Some(d) => airflow_answer(200, d.clone()),
            None => no_dag(dag),
        },
        ("PATCH", ["dags", dag]) => {
            let mask = query_pairs(query).get("update_mask").cloned();
            if mask.as_deref().is_some_and(|m| m != "is_paused") {
                return detail(
                    400,
                    "Only `is_paused` field can be updated through the REST API",
                );
            }
            let Some(paused) = r.json()["is_paused"].as_bool() else {
                return detail(422, "is_paused: Input should be a valid boolean");
            };
            match s.airflow_dags.get_mut(*dag) {
                Some(d) => {
                    d["is_paused"] = json!(paused);
                    airflow_answer(200, d.clone())
                }
                None => no_dag(dag),
            }
        }
        ("POST", ["dags", dag, "dagRuns"]) => {
            if !s.airflow_dags.contains_key(*dag) {
                return no_dag(dag);
            }
            let body = r.json();
            let logical = body.get("logical_date");
            if !v1 && logical.is_none() {
                return airflow_answer(
                    422,
                    json!({"detail": [{"type": "missing", "loc": ["body", "logical_date"],
                                       "msg": "Field required", "input": body}]}),
                );
            }
            if v1 && logical.is_some_and(Value::is_null) {
                return detail(400, "None is not of type 'string' - 'logical_date'");
            }
            let id = body["dag_run_id"].as_str().unwrap_or_default().to_string();
            let allowed = !id.is_empty()
                && id.len() <= 250
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.~:+-".contains(c));
            if !allowed {
                return detail(
                    400,
                    &format!("The run_id provided '{id}' does not match regex pattern"),
                );
            }
            if s.airflow_runs
                .iter()
                .any(|run| run["dag_id"] == *dag && run["dag_run_id"] == id)
            {
                return airflow_answer(
                    409,
                    json!({"detail": {"reason": "Unique constraint violation",
                                      "orig_error": "UNIQUE constraint failed: dag_run.dag_id, dag_run.run_id"}}),
                );
            }
            let run = json!({
                "dag_run_id": id, "dag_id": dag, "logical_date": logical.cloned().unwrap_or(json!("2026-12-01T10:00:00Z")),
                "queued_at": "2026-12-01T10:00:00.000000Z", "start_date": null, "end_date": null,
                "run_after": "2026-12-01T10:00:00.000000Z", "run_type": "manual", "state": "queued",
                "triggered_by": "rest_api", "conf": body.get("conf").cloned().unwrap_or(json!({})),
                "note": body.get("note").cloned().unwrap_or(Value::Null),
            });
            s.airflow_runs.push(run.clone());
            airflow_answer(200, run)
        }
        ("GET", ["dags", dag, "dagRuns", run]) => {
            match s
                .airflow_runs
                .iter()
                .find(|r| r["dag_id"] == *dag && r["dag_run_id"] == *run)
            {
                Some(found) => airflow_answer(200, found.clone()),
                None => detail(
                    404,
                    &format!("The DagRun with dag_id: `{dag}` and run_id: `{run}` was not found"),
                ),
            }
        }
        ("GET", ["dags", dag, "dagRuns"]) => {
            let q = query_pairs(query);
            let mut runs: Vec<Value> = s
                .airflow_runs
                .iter()
                .filter(|r| r["dag_id"] == *dag)
                .cloned()
                .collect();
            let total = runs.len();
            if q.get("order_by").map(String::as_str) == Some("-id") {
                runs.reverse();
            }
            runs.truncate(q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(100));
            airflow_answer(200, json!({ "dag_runs": runs, "total_entries": total }))
        }
        _ => detail(404, "Not Found"),
    }
}
