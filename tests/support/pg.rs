//! A throwaway PostgreSQL server for tests and benchmarks, started from the installed
//! server binaries with a temporary data directory on a free loopback port.
//!
//! initdb refuses to run as root, so as root the server runs as the `postgres` user
//! with a data directory it owns. The server is stopped when the handle is dropped,
//! also when a test fails.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

pub struct PgServer {
    _dir: tempfile::TempDir,
    data: PathBuf,
    log: PathBuf,
    options: String,
    pub port: u16,
    pub url: String,
}

/// Starts a server, or explains why not: `None` (with a message) when the binaries are
/// missing on a developer's machine; a panic when DATAWARD_REQUIRE_ALL=1 says nothing
/// may be skipped.
pub fn start_or_skip(test: &str) -> Option<PgServer> {
    if !Path::new(BIN_DIR).join("initdb").exists() {
        let message = format!(
            "{test}: skipped: needs PostgreSQL server binaries in {BIN_DIR} (apt-get install postgresql-15)"
        );
        if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
            panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
        }
        eprintln!("{message}");
        return None;
    }
    Some(PgServer::start())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a server binary, as `postgres` when we are root.
fn run(binary: &str, args: &[&str]) -> Output {
    let path = Path::new(BIN_DIR).join(binary);
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(&path);
        c
    } else {
        Command::new(&path)
    };
    command
        .args(args)
        .current_dir("/")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {binary}: {e}"))
}

fn check(output: Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl PgServer {
    pub fn start() -> PgServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let sockets = dir.path().join("sockets");
        std::fs::create_dir(&sockets).unwrap();
        if is_root() {
            // The postgres user must reach into the temp dir and own what it writes.
            let status = Command::new("chmod")
                .arg("755")
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success());
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(dir.path())
                .arg(&sockets)
                .status()
                .unwrap();
            assert!(status.success());
        }
        let data_text = data.to_str().unwrap().to_string();
        check(
            run(
                "initdb",
                &[
                    "-D",
                    &data_text,
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                ],
            ),
            "initdb",
        );
        let port = free_port();
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={} -c fsync=off -c max_connections=200",
            sockets.display()
        );
        let log = dir.path().join("server.log");
        let server = PgServer {
            _dir: dir,
            data,
            log,
            options,
            port,
            url: format!("postgresql://postgres@127.0.0.1:{port}/postgres"),
        };
        server.resume();
        server
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn resume(&self) {
        let data = self.data.to_str().unwrap();
        let log = self.log.to_str().unwrap();
        if is_root() {
            // The log file lives in a directory the postgres user owns.
            let _ = Command::new("touch").arg(log).status();
            let _ = Command::new("chown")
                .arg("postgres:postgres")
                .arg(log)
                .status();
        }
        check(
            run(
                "pg_ctl",
                &["-D", data, "-l", log, "-o", &self.options, "-w", "start"],
            ),
            "pg_ctl start",
        );
    }

    /// Stops the server and waits until it is down.
    pub fn stop(&self) {
        let data = self.data.to_str().unwrap();
        check(
            run("pg_ctl", &["-D", data, "-m", "fast", "-w", "stop"]),
            "pg_ctl stop",
        );
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect to the test server")
    }

    pub fn execute(&self, sql: &str) {
        self.client()
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.data.to_str().unwrap();
        // Immediate: nothing here needs to survive, and a failing test must not hang.
        let _ = run("pg_ctl", &["-D", data, "-m", "immediate", "-w", "stop"]);
    }
}
