//! A team's engines on one throwaway PostgreSQL, as the team-state tests run them: real
//! `dataward serve` processes, each with a data directory of its own as if on its own
//! host, and what the tests read back from the shared state (who leads, the chain).

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dataward::chain::{self, Record};
use dataward::store::chain::ChainStore;
use dataward::store::postgres::{PgState, Source};

use super::pg::PgServer;

/// The variable naming the team state's URL in every config here.
pub const URL_ENV: &str = "TEST_STATE_URL";
/// The team every config here names.
pub const TEAM: &str = "payments";

/// The `[state]` section every team config here begins with.
pub fn state_section() -> String {
    format!("[state]\nurl_env = \"{URL_ENV}\"\nteam = \"{TEAM}\"\n\n")
}

/// The account running the tests, as the policy names people.
pub fn me() -> String {
    dataward::approve::Actor::current()
        .user
        .expect("this account has a name")
}

/// A config and the folder its engines run in (each host's data directory under it).
pub struct Team {
    pub root: PathBuf,
    pub config: PathBuf,
    pub url: String,
}

impl Team {
    /// Writes `config_text` (owner-only, as serve wants a config naming state) under `root`.
    pub fn new(pg: &PgServer, root: &Path, config_text: &str) -> Team {
        let config = root.join("config.toml");
        std::fs::write(&config, config_text).unwrap();
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
        Team {
            root: root.to_path_buf(),
            config,
            url: pg.url.clone(),
        }
    }

    pub fn data(&self, host: &str) -> PathBuf {
        self.root.join(host)
    }

    /// `dataward serve` for `host`, its stderr in `HOST.log` (begun anew: what a log
    /// says is about this engine, not the one killed before it).
    pub fn serve(&self, host: &str) -> Serving {
        let log = std::fs::File::create(self.root.join(format!("{host}.log"))).unwrap();
        Serving(
            Command::new(env!("CARGO_BIN_EXE_dataward"))
                .args(["serve", "--log-stderr", "--config"])
                .arg(&self.config)
                .arg("--data-dir")
                .arg(self.data(host))
                .env(URL_ENV, &self.url)
                .current_dir(&self.root)
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        )
    }

    pub fn log(&self, host: &str) -> String {
        std::fs::read_to_string(self.root.join(format!("{host}.log"))).unwrap_or_default()
    }

    /// `dataward ARGS --data-dir` the engine serving `host`, as a person there runs it:
    /// with the team's config, which names the state a lost answer is looked up in.
    pub fn cli(&self, host: &str, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .arg("--data-dir")
            .arg(self.data(host))
            .env(URL_ENV, &self.url)
            .current_dir(&self.root)
            .output()
            .unwrap()
    }

    /// `dataward doctor`'s line on the engine serving `host`.
    pub fn doctor_engine_line(&self, host: &str) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["doctor", "--config"])
            .arg(&self.config)
            .arg("--data-dir")
            .arg(self.data(host))
            .env(URL_ENV, &self.url)
            .current_dir(&self.root)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        said.lines()
            .find(|line| line.contains(" engine "))
            .unwrap_or_else(|| panic!("no engine line in:\n{said}"))
            .to_string()
    }

    /// `dataward approve` of a proposal that does not exist, sent to the engine serving
    /// `host`: (exit code, its output). A leader refuses it as not found (exit 1); a
    /// standby refuses it saying who leads (exit 2, as with no engine).
    pub fn approve_nothing(&self, host: &str) -> (Option<i32>, String) {
        let out = self.cli(
            host,
            &["approve", "p-none", "--hash", "0", "--reason", "test"],
        );
        (out.status.code(), text(&out))
    }

    /// Does the engine serving `host` lead (answer a request itself)?
    pub fn leads(&self, host: &str) -> bool {
        let socket = self.data(host).join("dataward.sock");
        std::os::unix::net::UnixStream::connect(socket).is_ok()
            && self.approve_nothing(host).0 == Some(1)
    }

    /// Waits until one of `hosts` leads; which one, or None after `patience`.
    pub fn leader_within(&self, hosts: &[&str], patience: Duration) -> Option<usize> {
        let deadline = Instant::now() + patience;
        loop {
            if let Some(i) = hosts.iter().position(|host| self.leads(host)) {
                return Some(i);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The team's state as `host` opens it (its checkpoint checked), to read the chain.
    pub fn state(&self, host: &str) -> PgState {
        let source = Source {
            url: self.url.clone(),
            named_by: "test".to_string(),
        };
        PgState::open(&source, TEAM, &self.data(host), Duration::from_secs(5)).unwrap()
    }

    /// The chain's takeover records as (term, from_term), and the chain verified.
    pub fn takeovers(&self, host: &str) -> (Vec<(u64, Option<u64>)>, chain::VerifyReport) {
        let state = self.state(host);
        let terms = records(&state, "takeover")
            .iter()
            .map(|(_, payload)| {
                (
                    payload["term"].as_u64().unwrap(),
                    payload["from_term"].as_u64(),
                )
            })
            .collect();
        (terms, chain::verify_of(&state).unwrap())
    }
}

/// A spawned `serve`, killed (stopped or not) when dropped, so a failed assertion
/// leaves no engine behind.
pub struct Serving(Child);

impl std::ops::Deref for Serving {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Serving {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The chain's records of `kind` as (seq, payload).
pub fn records(state: &PgState, kind: &str) -> Vec<(u64, serde_json::Value)> {
    state
        .records_of_kind(kind)
        .unwrap()
        .iter()
        .map(|r: &Record| (r.seq, serde_json::from_str(&r.payload).unwrap()))
        .collect()
}

/// Standard output, then standard error, as text.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, signal) };
}
