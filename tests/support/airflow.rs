//! A throwaway Apache Airflow 3 for tests, started from a venv (`.ci/airflow.sh` builds
//! it; `DATAWARD_AIRFLOW_VENV`, else `/opt/dataward/airflow`): a temporary AIRFLOW_HOME
//! with a SQLite metadata database, a DAG folder holding the test's own DAGs, the simple
//! auth manager with a user and password the test chose, and the three processes a
//! triggered run needs to execute: the API server (on a free port of 127.0.0.1), the
//! scheduler (LocalExecutor) and the DAG processor. No triggerer (no deferrable tasks
//! here) and no `airflow standalone`, which starts one and makes its own admin.
//!
//! The processes run in one process group under a small keeper (a Python script in the
//! venv) that reads its stdin: when the handle is dropped, or the test process dies in
//! any way (its end of the pipe closes), the keeper kills the whole group, scheduler's
//! task workers included, and removes the home. A handle kept in a `static` (one
//! Airflow per test binary) is never dropped: the process ending is what stops it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const DEFAULT_VENV: &str = "/opt/dataward/airflow";
/// The user the tests sign in as (an admin of the simple auth manager).
pub const USER: &str = "dataward";
/// How long Airflow may take to come up and parse the DAGs (about 10 s here).
const START_DEADLINE: Duration = Duration::from_secs(180);

/// The venv Airflow is started from.
pub fn venv() -> PathBuf {
    std::env::var_os("DATAWARD_AIRFLOW_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_VENV))
}

/// Whether Airflow can be started here; when not, says why on stderr and returns
/// false, or panics when DATAWARD_REQUIRE_ALL=1 says nothing may be skipped.
pub fn available(test: &str) -> bool {
    let airflow = venv().join("bin").join("airflow");
    if airflow.exists() {
        return true;
    }
    let message = format!(
        "{test}: skipped: needs Apache Airflow 3 in a venv at {} (run .ci/airflow.sh, or set \
         DATAWARD_AIRFLOW_VENV)",
        venv().display()
    );
    if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    false
}

/// One DAG file for the DAG folder.
pub struct DagFile {
    /// The DAG ids it defines: the start waits until Airflow has parsed each.
    pub dag_ids: Vec<String>,
    pub file_name: String,
    pub source: String,
}

pub struct AirflowServer {
    pub home: PathBuf,
    pub port: u16,
    /// `http://127.0.0.1:PORT`, the API server and the UI.
    pub base_url: String,
    /// [`USER`]'s password.
    pub password: String,
    /// The process group of the API server, scheduler and DAG processor.
    pub group: i32,
    keeper: Child,
    /// The keeper's stdin: closing it stops everything.
    lifeline: Option<ChildStdin>,
    client: reqwest::blocking::Client,
    /// How long each step of the start took: "migrate 3.1s, healthy 6.0s, parsed 0.2s".
    pub startup: String,
}

/// Random hex from the kernel.
fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buffer))
        .expect("/dev/urandom");
    buffer.iter().map(|b| format!("{b:02x}")).collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The last lines of a log, for a failure message.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    format!("--- {} ---\n{}", path.display(), all[start..].join("\n"))
}

const KEEPER: &str = r#"
import os, shutil, signal, subprocess, sys

home, airflow, port = sys.argv[1], sys.argv[2], sys.argv[3]
group = 0
procs = []
for name, args in [
    ("api-server", ["api-server", "--host", "127.0.0.1", "--port", port, "--workers", "1"]),
    ("scheduler", ["scheduler"]),
    ("dag-processor", ["dag-processor"]),
]:
    log = open(os.path.join(home, name + ".log"), "ab")
    p = subprocess.Popen([airflow] + args, stdin=subprocess.DEVNULL, stdout=log,
                         stderr=subprocess.STDOUT, process_group=group, cwd=home)
    group = group or p.pid
    procs.append(p)
print(group, flush=True)
try:
    sys.stdin.read()  # until the test drops its handle or its process ends
finally:
    os.killpg(group, signal.SIGKILL)
    for p in procs:
        p.wait()
    shutil.rmtree(home, ignore_errors=True)
"#;

impl AirflowServer {
    /// Starts Airflow with these DAGs and waits until it is healthy and has parsed
    /// every one; an error carries the logs' tails.
    /// `dags` is given the home (for files the DAGs read, such as the test's warehouse,
    /// removed with it) and returns the DAG files.
    pub fn start(
        dags: impl FnOnce(&Path) -> Result<Vec<DagFile>, String>,
    ) -> Result<AirflowServer, String> {
        let venv = venv();
        let airflow = venv.join("bin").join("airflow");
        let python = venv.join("bin").join("python");
        // Kept past the TempDir: the keeper removes it when it stops everything.
        let home = tempfile::Builder::new()
            .prefix("dataward-airflow-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?
            .keep();
        let dag_folder = home.join("dags");
        std::fs::create_dir(&dag_folder).map_err(|e| e.to_string())?;
        let dags = match dags(&home) {
            Ok(dags) => dags,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&home);
                return Err(e);
            }
        };
        for dag in &dags {
            std::fs::write(dag_folder.join(&dag.file_name), &dag.source)
                .map_err(|e| e.to_string())?;
        }
        let password = random_hex(12);
        let passwords = home.join("passwords.json");
        std::fs::write(&passwords, json!({ USER: password }).to_string())
            .map_err(|e| e.to_string())?;
        std::fs::write(home.join("keeper.py"), KEEPER).map_err(|e| e.to_string())?;
        let port = free_port();
        let base_url = format!("http://127.0.0.1:{port}");

        let database = format!("sqlite:///{}", home.join("airflow.db").display());
        let env: Vec<(&str, String)> =
            vec![
            ("AIRFLOW_HOME", home.display().to_string()),
            ("AIRFLOW__CORE__DAGS_FOLDER", dag_folder.display().to_string()),
            ("AIRFLOW__CORE__LOAD_EXAMPLES", "False".into()),
            ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", database),
            ("AIRFLOW__CORE__EXECUTOR", "LocalExecutor".into()),
            (
                "AIRFLOW__CORE__AUTH_MANAGER",
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
                    .into(),
            ),
            ("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", format!("{USER}:admin")),
            (
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE",
                passwords.display().to_string(),
            ),
            // One secret for every process: the scheduler signs the tokens its task
            // workers show the API server.
            ("AIRFLOW__API_AUTH__JWT_SECRET", random_hex(32)),
            ("AIRFLOW__API__HOST", "127.0.0.1".into()),
            ("AIRFLOW__API__PORT", port.to_string()),
            ("AIRFLOW__API__BASE_URL", base_url.clone()),
            (
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
                format!("{base_url}/execution/"),
            ),
            // Each DAG says for itself (is_paused_upon_creation).
            ("AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION", "False".into()),
            ("AIRFLOW__CORE__PARALLELISM", "4".into()),
            ("AIRFLOW__LOGGING__LOGGING_LEVEL", "INFO".into()),
        ];
        let path = format!(
            "{}:{}",
            venv.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let command = |program: &Path| {
            let mut c = Command::new(program);
            // Nothing of the caller's own Airflow settings leaks in.
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("AIRFLOW") {
                    c.env_remove(name);
                }
            }
            c.envs(env.iter().map(|(k, v)| (k, v))).env("PATH", &path);
            c.current_dir(&home);
            c
        };

        let clock = Instant::now();
        let migrate = command(&airflow)
            .args(["db", "migrate"])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", airflow.display()))?;
        if !migrate.status.success() {
            let _ = std::fs::remove_dir_all(&home);
            return Err(format!(
                "airflow db migrate failed:\n{}\n{}",
                String::from_utf8_lossy(&migrate.stdout),
                String::from_utf8_lossy(&migrate.stderr)
            ));
        }

        let migrated = clock.elapsed();
        let keeper_log =
            std::fs::File::create(home.join("keeper.log")).map_err(|e| e.to_string())?;
        let mut keeper = {
            use std::os::unix::process::CommandExt;
            command(&python)
                .arg(home.join("keeper.py"))
                .arg(&home)
                .arg(&airflow)
                .arg(port.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(keeper_log)
                .process_group(0)
                .spawn()
                .map_err(|e| format!("cannot start the keeper: {e}"))?
        };
        let lifeline = keeper.stdin.take();
        let mut first = String::new();
        let read =
            BufReader::new(keeper.stdout.take().expect("keeper stdout")).read_line(&mut first);
        let group: i32 = match read.ok().and_then(|_| first.trim().parse().ok()) {
            Some(group) => group,
            None => {
                let _ = keeper.kill();
                let _ = keeper.wait();
                let why = tail(&home.join("keeper.log"), 30);
                let _ = std::fs::remove_dir_all(&home);
                return Err(format!("the keeper did not start Airflow:\n{why}"));
            }
        };
        let server = AirflowServer {
            home,
            port,
            base_url,
            password,
            group,
            keeper,
            lifeline,
            client: dataward::notify::client(Duration::from_secs(10)).expect("HTTP client"),
            startup: String::new(),
        };
        let ids: Vec<&str> = dags
            .iter()
            .flat_map(|d| d.dag_ids.iter().map(String::as_str))
            .collect();
        let mut server = server;
        let healthy = server.wait_ready(&ids, clock)?;
        server.startup = format!(
            "db migrate {:.1?}, healthy {:.1?}, DAGs parsed {:.1?}",
            migrated,
            healthy - migrated,
            clock.elapsed() - healthy
        );
        Ok(server)
    }

    fn logs(&self) -> String {
        ["api-server", "scheduler", "dag-processor"]
            .iter()
            .map(|name| tail(&self.home.join(format!("{name}.log")), 25))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Polls until the API server says the database, the scheduler and the DAG
    /// processor are healthy and every DAG is parsed (an import error ends the wait).
    /// Answers when it was healthy, as time since `clock` started.
    fn wait_ready(&self, dag_ids: &[&str], clock: Instant) -> Result<Duration, String> {
        let deadline = Instant::now() + START_DEADLINE;
        let mut healthy_at = None;
        let mut last = String::from("nothing yet");
        let mut token: Option<String> = None;
        loop {
            if Instant::now() > deadline {
                return Err(format!(
                    "Airflow was not ready within {START_DEADLINE:?} (last: {last})\n{}",
                    self.logs()
                ));
            }
            if !self.alive() {
                return Err(format!("Airflow stopped while starting\n{}", self.logs()));
            }
            std::thread::sleep(Duration::from_millis(250));
            let health = match self.get("/api/v2/monitor/health", None) {
                Ok((200, health)) => health,
                Ok((status, body)) => {
                    last = format!("health answered {status}: {body}");
                    continue;
                }
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            let healthy = ["metadatabase", "scheduler", "dag_processor"]
                .iter()
                .all(|part| health[part]["status"] == "healthy");
            if !healthy {
                last = format!("health: {health}");
                continue;
            }
            let healthy_at = *healthy_at.get_or_insert_with(|| clock.elapsed());
            let bearer = match &token {
                Some(t) => t.clone(),
                None => match self.token() {
                    Ok(t) => {
                        token = Some(t.clone());
                        t
                    }
                    Err(e) => {
                        last = e;
                        continue;
                    }
                },
            };
            if let Ok((200, errors)) = self.get("/api/v2/importErrors", Some(&bearer)) {
                if errors["total_entries"].as_u64().unwrap_or(0) > 0 {
                    return Err(format!("a test DAG does not import: {errors}"));
                }
            }
            let missing: Vec<&&str> = dag_ids
                .iter()
                .filter(|id| {
                    !matches!(
                        self.get(&format!("/api/v2/dags/{id}"), Some(&bearer)),
                        Ok((200, _))
                    )
                })
                .collect();
            if missing.is_empty() {
                return Ok(healthy_at);
            }
            last = format!("DAGs not parsed yet: {missing:?}");
        }
    }

    /// Whether the keeper (and so Airflow) is still running.
    fn alive(&self) -> bool {
        // SAFETY: kill with signal 0 only checks that the group exists.
        unsafe { libc::kill(-self.group, 0) == 0 }
    }

    /// One GET, answered with its status and JSON (`Null` when none).
    pub fn get(&self, path: &str, bearer: Option<&str>) -> Result<(u16, Value), String> {
        let mut request = self.client.get(format!("{}{path}", self.base_url));
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        let response = request.send().map_err(|e| format!("GET {path}: {e}"))?;
        let status = response.status().as_u16();
        let text = response.text().unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// A bearer token for [`USER`], as Airflow's own clients get one.
    pub fn token(&self) -> Result<String, String> {
        let response = self
            .client
            .post(format!("{}/auth/token", self.base_url))
            .header("Content-Type", "application/json")
            .body(json!({"username": USER, "password": self.password}).to_string())
            .send()
            .map_err(|e| format!("POST /auth/token: {e}"))?;
        let status = response.status().as_u16();
        let answer: Value =
            serde_json::from_str(&response.text().unwrap_or_default()).unwrap_or(Value::Null);
        answer["access_token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("POST /auth/token answered {status}: {answer}"))
    }

    /// A DAG as Airflow has it now (read beside dataward, with a token of our own).
    pub fn dag(&self, dag_id: &str) -> Value {
        let token = self.token().unwrap();
        match self.get(&format!("/api/v2/dags/{dag_id}"), Some(&token)) {
            Ok((200, dag)) => dag,
            other => panic!("GET /api/v2/dags/{dag_id}: {other:?}"),
        }
    }

    /// A DAG run as Airflow has it now.
    pub fn dag_run(&self, dag_id: &str, run_id: &str) -> Value {
        let token = self.token().unwrap();
        match self.get(
            &format!("/api/v2/dags/{dag_id}/dagRuns/{run_id}"),
            Some(&token),
        ) {
            Ok((200, run)) => run,
            other => panic!("GET /api/v2/dags/{dag_id}/dagRuns/{run_id}: {other:?}"),
        }
    }

    /// Everything the processes logged, for a failing test to show.
    pub fn all_logs(&self) -> String {
        self.logs()
    }
}

impl Drop for AirflowServer {
    fn drop(&mut self) {
        // Closing the lifeline makes the keeper kill the group and remove the home.
        drop(self.lifeline.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.keeper.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: killpg on the group this server started; harmless when it is gone.
        unsafe {
            libc::killpg(self.group, libc::SIGKILL);
        }
        let _ = self.keeper.kill();
        let _ = self.keeper.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
