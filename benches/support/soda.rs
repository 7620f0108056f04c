//! What both Soda benchmarks share: a PostgreSQL server prepared so its work can be
//! read, the server's CPU time from /proc and its statements from pg_stat_statements,
//! and a venv with Soda Core from PyPI.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::pg;

pub const SODA_VERSION: &str = "3.5.6";
const PIP_TIMEOUT: Duration = Duration::from_secs(600);

/// pg_stat_statements must be preloaded, so this restarts the server once. Autovacuum
/// is turned off so that background work on the freshly built tables lands in neither
/// tool's figures; the tables are vacuumed and analyzed once after the build instead.
pub fn prepare_server(server: &pg::PgServer, tables: usize) {
    // One by one: ALTER SYSTEM refuses the implicit transaction of a multi-statement query.
    for setting in [
        "shared_preload_libraries = 'pg_stat_statements'",
        "autovacuum = off",
    ] {
        server.execute(&format!("ALTER SYSTEM SET {setting}"));
    }
    server.stop();
    server.resume();
    // Both tools name each table in their SQL, so every table brings its own statements:
    // room for all of them, or evicted entries would take their calls with them. The
    // setting is only known once the library is loaded, hence a second restart.
    let entries = (tables * 10).max(5000);
    server.execute(&format!(
        "ALTER SYSTEM SET pg_stat_statements.max = {entries}"
    ));
    // Planning is server work too, and a large view costs more to plan than to run.
    server.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on");
    server.stop();
    server.resume();
    server.execute("CREATE EXTENSION pg_stat_statements");
}

/// Reads what the server did: CPU time from /proc, statements from pg_stat_statements.
pub struct ServerSide {
    pub postmaster: u32,
    pub ticks_per_second: u64,
}

#[derive(Debug, Clone)]
pub struct Statement {
    pub query: String,
    pub calls: i64,
    pub exec_ms: f64,
    pub plan_ms: f64,
}

pub struct Snapshot {
    pub cpu_ticks: u64,
}

impl ServerSide {
    pub fn new(server: &pg::PgServer) -> ServerSide {
        let mut client = server.client();
        let backend: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .expect("backend pid")
            .get(0);
        // Read while connected: a backend whose client has gone exits at once.
        let postmaster = proc_stat(backend as u32)
            .expect("the backend's /proc entry")
            .ppid;
        drop(client);
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ServerSide {
            postmaster,
            ticks_per_second: if ticks > 0 { ticks as u64 } else { 100 },
        }
    }

    /// Clears the statement counters, then waits until no client is connected, so the
    /// connection used here is outside the CPU window that starts now.
    pub fn start(&self, server: &pg::PgServer) -> Snapshot {
        server.execute("SELECT pg_stat_statements_reset()");
        self.wait_for_no_clients();
        Snapshot {
            cpu_ticks: self.cpu_ticks(),
        }
    }

    /// Waits for the tool's connections to end (their CPU then sits in the postmaster's
    /// cutime), reads the CPU, and only then connects to read the statements.
    pub fn finish(&self, server: &pg::PgServer, start: Snapshot) -> ServerTime {
        self.wait_for_no_clients();
        let cpu = self.cpu_ticks().saturating_sub(start.cpu_ticks);
        let statements = read_statements(server);
        ServerTime {
            cpu: Duration::from_secs_f64(cpu as f64 / self.ticks_per_second as f64),
            statements,
        }
    }

    pub fn children(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| proc_stat(pid).is_some_and(|s| s.ppid == self.postmaster))
            .collect()
    }

    pub fn cpu_ticks(&self) -> u64 {
        let own = proc_stat(self.postmaster).expect("the postmaster is running");
        let mut total = own.utime + own.stime + own.cutime + own.cstime;
        for child in self.children() {
            // A child may exit between listing and reading; then its time is in the
            // postmaster's cutime, read above or at the next reading.
            if let Some(s) = proc_stat(child) {
                total += s.utime + s.stime + s.cutime + s.cstime;
            }
        }
        total
    }

    /// Client backends show their peer in the process title, `... 127.0.0.1(port) ...`.
    pub fn wait_for_no_clients(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let clients = self
                .children()
                .into_iter()
                .filter(|&pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("127.0.0.1("))
                })
                .count();
            if clients == 0 {
                // Let the postmaster reap the last one, so its time is in cutime.
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{clients} client backends still connected after 30s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub struct ProcStat {
    pub ppid: u32,
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
}

/// Fields of /proc/<pid>/stat after the command name, which is in parentheses and may
/// itself hold spaces or parentheses.
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(ProcStat {
        ppid: field(1)? as u32,
        utime: field(11)?,
        stime: field(12)?,
        cutime: field(13)?,
        cstime: field(14)?,
    })
}

/// Every statement since the reset but the benchmark's own, which all name the view.
pub fn read_statements(server: &pg::PgServer) -> Vec<Statement> {
    let mut client = server.client();
    let rows = client
        .query(
            "SELECT query, calls, total_exec_time, total_plan_time FROM pg_stat_statements
             WHERE query NOT LIKE '%pg_stat_statements%'",
            &[],
        )
        .expect("read pg_stat_statements");
    rows.iter()
        .map(|r| Statement {
            query: r.get(0),
            calls: r.get(1),
            exec_ms: r.get(2),
            plan_ms: r.get(3),
        })
        .collect()
}

pub struct ServerTime {
    pub cpu: Duration,
    pub statements: Vec<Statement>,
}

pub struct Soda {
    pub executable: PathBuf,
    pub work: tempfile::TempDir,
}

/// A venv with soda-core-postgres, kept under cargo's target tmp dir and reused when a
/// previous run finished installing it.
pub fn soda_venv() -> Result<Soda, String> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("vs_soda-venv-{SODA_VERSION}"));
    let executable = venv.join("bin/soda");
    let installed = venv.join("installed");
    if !installed.exists() {
        let _ = std::fs::remove_dir_all(&venv);
        println!(
            "soda: creating a venv in {} and installing soda-core-postgres=={SODA_VERSION} from PyPI",
            venv.display()
        );
        let created = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .map_err(|e| format!("cannot run python3: {e}"))?;
        if !created.status.success() {
            return Err(format!(
                "python3 -m venv failed: {}",
                last_line(&created.stderr)
            ));
        }
        let pip = venv.join("bin/pip");
        let mut install = Command::new(&pip);
        install
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--timeout",
                "30",
            ])
            .arg(format!("soda-core-postgres=={SODA_VERSION}"));
        let output = run_with_timeout(install, PIP_TIMEOUT)
            .map_err(|e| format!("pip install soda-core-postgres=={SODA_VERSION}: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "pip install soda-core-postgres=={SODA_VERSION} failed (is PyPI reachable?): {}",
                last_line(&output.stderr)
            ));
        }
        std::fs::write(&installed, "").map_err(|e| e.to_string())?;
    }
    if !executable.exists() {
        return Err(format!("{} is missing after install", executable.display()));
    }
    Ok(Soda {
        executable,
        work: tempfile::tempdir().map_err(|e| e.to_string())?,
    })
}

pub fn run_with_timeout(
    mut command: Command,
    timeout: Duration,
) -> Result<std::process::Output, String> {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let output = child.wait_with_output();
        let _ = done_tx.send(());
        output
    });
    if done_rx.recv_timeout(timeout).is_err() {
        // SAFETY: kill has no memory preconditions; pid is our own child, not yet reaped
        // (the waiter is still blocked on it).
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let _ = waiter.join();
        return Err(format!("no result within {}s", timeout.as_secs()));
    }
    waiter
        .join()
        .map_err(|_| "the waiting thread panicked".to_string())?
        .map_err(|e| e.to_string())
}

pub fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

/// The table counts `VS_SODA_TABLES` names (`100,300`), or `defaults` when it is unset.
pub fn sizes_from_env(defaults: &[usize]) -> Result<Vec<usize>, String> {
    let Ok(text) = std::env::var("VS_SODA_TABLES") else {
        return Ok(defaults.to_vec());
    };
    let sizes: Vec<usize> = text
        .split(',')
        .map(|part| {
            part.trim()
                .replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    format!("VS_SODA_TABLES={text:?}: expected table counts like 100,300")
                })
        })
        .collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        return Err(format!("VS_SODA_TABLES={text:?} names no size"));
    }
    Ok(sizes)
}
