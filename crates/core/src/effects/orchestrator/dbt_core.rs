//! dbt Core, with no scheduler: dataward runs the approved command itself.
//!
//! - A run is the job's command from `[orchestrator.jobs]` (`queue_run`), or a
//!   backfill's exact command (`queue_command`): a `dbt ...` line split into words
//!   without a shell (`;`, `|`, `$()`, globs and redirections mean nothing and reach dbt
//!   as arguments; quotes group words, as a shell's would), run as the configured dbt
//!   executable in `project_dir`, with `DBT_PROFILES_DIR` and `--target` as configured.
//! - The runner keeps its runs and holds in a database of its own, `DATA/dbt-core.db`
//!   (`store::dbt_core`), as Airflow keeps its own: only the engine writes the state
//!   database, and it records the runs as this orchestrator reports them. Runs are
//!   idempotent on their key. dbt's output streams to a private file,
//!   `DATA/dbt_core/run-N.log`, so a crash keeps what was written, and the record keeps
//!   its last 64 KiB once the run ends.
//! - One run at a time per project (dbt runs in one project clash over `target/`):
//!   later ones wait as queued. A run is carried out by a thread of the process that
//!   queued it; only `queue_run` and `queue_command` start that thread, so the poll
//!   task's instance (built from the same config) only ever reads the store.
//! - A run left queued or running by a dataward process that no longer exists (a
//!   restart, a crash) reads back as failed, with the output written so far. Its child
//!   got SIGTERM when that process died (Linux's parent-death signal), so it does not
//!   go on building behind the next run's back.
//! - A hold cannot pause a cron: `pause` records it (the runner's `hold`) and returns the
//!   instruction people must carry out, stopping the schedule themselves. While it
//!   stands, dataward refuses runs of the job, with one exception: the run the hold's
//!   own approved plan dispatches once the table has recovered (`dataward run`, or
//!   dataward at L3/L4). That run is the engine's pending `queue_run` intent for this
//!   job and key, which the engine commits only after the policy, the recovery and
//!   the org stop were checked (read on a read-only connection to the state database);
//!   refusing it too would leave an incident with a hold no way to be verified.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::cron_runs::SinceHold;
use super::{Orchestrator, Pipeline, PipelineState, RunRecord, RunStatus, Schedule};
use crate::clock::Timestamp;
use crate::store::dbt_core::{DbtCoreDb, DbtCoreEnd, DbtCoreRun as Row, NewDbtCoreRun};
use crate::store::files;
use crate::store::place::StatePlace;

/// How much of a run's output its record keeps: the end, where dbt says what failed.
pub const OUTPUT_TAIL: u64 = 64 * 1024;
/// How many of the output's last lines a run's detail shows.
const DETAIL_LINES: usize = 20;
/// How often a runner looks again while another process's run holds the project.
const BUSY_RECHECK: Duration = Duration::from_millis(250);

/// Where and how dbt runs, resolved and checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The dbt project (holds dbt_project.yml).
    pub project_dir: PathBuf,
    /// The dbt executable.
    pub dbt: PathBuf,
    /// `DBT_PROFILES_DIR` for every run.
    pub profiles_dir: Option<PathBuf>,
    /// `--target` for every run.
    pub target: Option<String>,
    /// The notes' job ids -> each job's dbt command.
    pub jobs: BTreeMap<String, String>,
    /// Where the runner's database and the run logs are, beside the state database.
    pub data_dir: PathBuf,
    /// The state the engine records its intents in, which the runner only reads: the
    /// file in the data directory, or the team's (`[state] url_env`).
    pub state: StateToRead,
}

/// The state a runner reads (no `Debug` of the place itself: it holds the URL).
#[derive(Clone)]
pub struct StateToRead(pub StatePlace);

impl std::fmt::Debug for StateToRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.describe())
    }
}

impl Settings {
    /// From `[orchestrator]`: paths resolved against the config file; a missing
    /// project, profiles folder or dbt executable is named with the file it came from.
    pub fn from_config(config: &crate::config::Config, data_dir: &Path) -> Result<Settings> {
        let origin = config.origin.display();
        let o = config
            .orchestrator
            .as_ref()
            .with_context(|| format!("{origin}: no [orchestrator]"))?;
        let project_dir = o
            .project_dir
            .as_ref()
            .map(|p| config.resolve(p))
            .with_context(|| {
                format!(
                    "{origin}: orchestrator.project_dir: kind = \"dbt_core\" needs the dbt project"
                )
            })?;
        anyhow::ensure!(
            project_dir.is_dir(),
            "{origin}: orchestrator.project_dir: {} does not exist or is not a folder",
            project_dir.display()
        );
        anyhow::ensure!(
            project_dir.join("dbt_project.yml").is_file(),
            "{origin}: orchestrator.project_dir: {} is not a dbt project (it has no dbt_project.yml)",
            project_dir.display()
        );
        let profiles_dir = o.profiles_dir.as_ref().map(|p| config.resolve(p));
        if let Some(dir) = &profiles_dir {
            anyhow::ensure!(
                dir.is_dir(),
                "{origin}: orchestrator.profiles_dir: {} does not exist or is not a folder",
                dir.display()
            );
        }
        let dbt = match &o.dbt {
            Some(path) if path.components().count() > 1 => {
                let path = config.resolve(path);
                anyhow::ensure!(
                    is_executable(&path),
                    "{origin}: orchestrator.dbt: {} does not exist or is not an executable file",
                    path.display()
                );
                path
            }
            named => {
                let name = named.as_deref().unwrap_or(Path::new("dbt"));
                on_path(name).with_context(|| {
                    format!(
                        "{origin}: orchestrator.dbt: no {} executable on PATH; name it with \
                         dbt = \"/path/to/venv/bin/dbt\"",
                        name.display()
                    )
                })?
            }
        };
        // The runs' output is recorded: every secret the config names is masked in it.
        crate::sanitize::remember_config_secrets(config);
        let jobs = o.job_commands();
        for (job, command) in &jobs {
            words(command).with_context(|| format!("{origin}: orchestrator.jobs: {job:?}"))?;
        }
        Ok(Settings {
            project_dir,
            dbt,
            profiles_dir,
            target: o.target.clone(),
            jobs,
            data_dir: data_dir.to_path_buf(),
            state: StateToRead(StatePlace::of(config, data_dir)?),
        })
    }

    /// The SQLite state database an older dataward kept runs and holds in.
    fn state_db(&self) -> PathBuf {
        self.data_dir.join("dataward.db")
    }

    /// The dbt arguments of an approved command: its words after `dbt`, and the
    /// configured target.
    fn arguments(&self, command: &str) -> Result<Vec<String>> {
        let mut args = words(command)?.split_off(1);
        if let Some(target) = &self.target {
            anyhow::ensure!(
                !args
                    .iter()
                    .any(|a| a == "-t" || a == "--target" || a.starts_with("--target=")),
                "`{command}` names its own --target, and [orchestrator] target = {target:?} \
                 decides where dataward's runs build; take --target out of the command"
            );
            args.extend(["--target".to_string(), target.clone()]);
        }
        Ok(args)
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn on_path(name: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// A dbt command as the words dbt is given, split without a shell: whitespace
/// separates words, single quotes keep everything, double quotes keep everything but
/// `\"` and `\\`, a backslash outside quotes keeps the next character. Nothing else
/// means anything: no variables, no globs, no `;`, `|`, `&&`, `$()` or redirections.
/// Only one line starting with `dbt ` is taken.
pub fn words(command: &str) -> Result<Vec<String>> {
    let command = super::dbt_command(command, "dataward")?;
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    let unterminated = || anyhow!("{command:?} has an unterminated quote");
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next().ok_or_else(unterminated)? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next().ok_or_else(unterminated)? {
                        '"' => break,
                        '\\' => match chars.next().ok_or_else(unterminated)? {
                            c @ ('"' | '\\') => word.push(c),
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                let next = chars
                    .next()
                    .ok_or_else(|| anyhow!("{command:?} ends with a backslash"))?;
                word.push(next);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    anyhow::ensure!(
        words.len() >= 2 && words[0] == "dbt",
        "dataward runs only dbt commands; refused {command:?}"
    );
    Ok(words)
}

/// This process, as runs record their owner: the boot, the pid and the pid's start
/// time, so a pid reused after a restart is not taken for the process that queued.
fn me() -> &'static str {
    static ME: OnceLock<String> = OnceLock::new();
    ME.get_or_init(|| {
        let pid = std::process::id();
        format!(
            "{} {pid} {}",
            boot_id(),
            start_time(pid).unwrap_or_default()
        )
    })
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_string())
        .unwrap_or_default()
}

/// The process's start time in clock ticks since boot (field 22 of /proc/PID/stat).
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after its end.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_string)
}

/// Is the process that recorded `owner` still running?
fn alive(owner: &str) -> bool {
    if owner == me() {
        return true;
    }
    let mut parts = owner.split(' ');
    let (Some(boot), Some(pid), Some(start)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if boot != boot_id() {
        return false; // the machine restarted since
    }
    match start_time(pid) {
        Some(now) => now == start,
        // No /proc: whether the pid exists at all.
        None if !Path::new("/proc/self/stat").exists() => {
            // SAFETY: kill with signal 0 only checks that the process exists.
            unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
        }
        None => false,
    }
}

fn now() -> Timestamp {
    crate::clock::Clock::wall().timestamp()
}

/// A run as it stands: one whose process is gone is failed, with what it wrote.
fn settled(mut run: Row) -> Row {
    if !run.in_flight() || alive(&run.owner) {
        return run;
    }
    let pid = run.owner.split(' ').nth(1).unwrap_or("?").to_string();
    run.detail = if run.status == "running" {
        let output = run
            .log
            .as_deref()
            .map(|log| masked_tail(Path::new(log)))
            .unwrap_or_default();
        format!(
            "dataward stopped while `{}` ran (its process {pid} is gone); the output so far:\n{}",
            run.command,
            last_lines(&output)
        )
    } else {
        format!(
            "dataward stopped before `{}` started (its process {pid} is gone); it never ran",
            run.command
        )
    };
    run.status = "failed".to_string();
    run
}

/// A run as the orchestrator reports it.
fn record(run: &Row) -> RunRecord {
    RunRecord {
        id: run.id.to_string(),
        job: run.job.clone(),
        status: if run.in_flight() {
            "queued".to_string()
        } else {
            run.status.clone()
        },
        link: None,
        requested_at: Some(run.requested_at),
        started_at: run.started_at,
        finished_at: run.finished_at,
        detail: crate::sanitize::for_terminal_multiline(&run.detail).into_owned(),
    }
}

/// The end of a log, at most [`OUTPUT_TAIL`] bytes from a whole line on, saying what
/// was cut and where the rest is.
fn tail_of(path: &Path) -> String {
    let read = || -> Result<String> {
        let mut file = files::open_read(path)?;
        let size = file.metadata()?.len();
        let skip = size.saturating_sub(OUTPUT_TAIL);
        file.seek(SeekFrom::Start(skip))?;
        let mut bytes = Vec::new();
        file.take(OUTPUT_TAIL).read_to_end(&mut bytes)?;
        let mut cut = skip;
        if skip > 0 {
            let line_start = bytes.iter().position(|b| *b == b'\n').map_or(0, |n| n + 1);
            bytes.drain(..line_start);
            cut += line_start as u64;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(if cut > 0 {
            format!(
                "[output cut: its first {cut} bytes are left out here; all of it is in {}]\n{text}",
                path.display()
            )
        } else {
            text
        })
    };
    read().unwrap_or_else(|e| format!("[the output could not be read: {e:#}]"))
}

/// The last lines of an output with something on them.
fn last_lines(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(DETAIL_LINES)..].join("\n")
}

pub struct DbtCore {
    settings: Arc<Settings>,
    /// The runner's own database.
    db: PathBuf,
    /// Behind a lock: the engine and its effect workers share one orchestrator.
    conn: Mutex<DbtCoreDb>,
    /// A runner thread of this instance is carrying out its queued runs.
    runner: Arc<Mutex<bool>>,
}

impl DbtCore {
    pub fn new(settings: Settings) -> Result<DbtCore> {
        let db = settings.data_dir.join(crate::store::dbt_core::FILE);
        let conn = crate::store::dbt_core::open(&db, &settings.state_db())?;
        Ok(DbtCore {
            settings: Arc::new(settings),
            db,
            conn: Mutex::new(conn),
            runner: Arc::new(Mutex::new(false)),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, DbtCoreDb> {
        // A panic while holding it leaves no half-done SQLite work behind it.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn command_of(&self, job: &str) -> Result<&str> {
        self.settings
            .jobs
            .get(job)
            .map(String::as_str)
            .ok_or_else(|| {
                anyhow!(
                    "{job} is not mapped to a dbt command: add it under [orchestrator.jobs] \
                     (\"{job}\" = \"dbt build --select ...\")"
                )
            })
    }

    fn held(&self, job: &str) -> Result<bool> {
        Ok(self.held_at(job)?.is_some())
    }

    /// When the hold on `job` was asked, if it stands.
    fn held_at(&self, job: &str) -> Result<Option<Timestamp>> {
        self.conn().held_at(job)
    }

    /// Whether dbt ran `command` in the project after `held_at`, by its own record,
    /// unless dataward ran it (the hold's own approved run): the schedule people were
    /// asked to stop still runs. A record that cannot say which job ran says so.
    fn ran_since(&self, command: &str, held_at: Timestamp) -> Result<SinceHold> {
        let last = match super::cron_runs::last_invocation(&self.settings.project_dir) {
            Ok(Some(last)) => last,
            Ok(None) => return Ok(SinceHold::NotRun),
            Err(why) => return Ok(SinceHold::CannotTell(why)),
        };
        let ran = last.ran(command);
        if last.at.to_utc() <= held_at.utc() || ran == Ok(false) {
            return Ok(SinceHold::NotRun);
        }
        let at = Timestamp::from_utc(last.at.to_utc());
        // dbt writes its record before dataward records the run's end.
        let ours = self.conn().ran_at(at)?;
        Ok(match ran {
            _ if ours => SinceHold::NotRun,
            Ok(_) => SinceHold::Ran(at),
            Err(why) => SinceHold::CannotTell(why),
        })
    }

    fn project(&self) -> String {
        self.settings.project_dir.display().to_string()
    }

    /// The hold's own planned run: the engine committed an intent to queue exactly
    /// this run of this job (see the module's notes). Read in a reader session opened
    /// for it, where the engine keeps its intents (the team's state on a team host):
    /// the engine is the state's one writer.
    fn dispatched_by_hold(&self, job: &str, key: &str) -> Result<bool> {
        match &self.settings.state.0 {
            StatePlace::File(path) if !path.exists() => Ok(false), // nothing committed
            place => place.open_reader()?.run_pending(job, key),
        }
    }

    fn find_key(&self, key: &str) -> Result<Option<Row>> {
        self.conn().run_by_key(key)
    }

    /// Queues one run once per `key`, then makes sure a runner carries it out.
    fn queue(
        &self,
        job: &str,
        command: &str,
        planned: bool,
        at: Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        if let Some(found) = self.find_key(key)? {
            if found.status == "queued" && !alive(&found.owner) {
                // Queued by a dataward that stopped before it started: the engine asks
                // again (an intent re-issued at start), so this process runs it.
                self.conn().adopt(found.id, me())?;
                self.ensure_runner();
            }
            return Ok((found.id.to_string(), true));
        }
        if self.held(job)? && !(planned && self.dispatched_by_hold(job, key)?) {
            bail!(
                "dataward holds {job}: it refuses runs of {job} until the hold is lifted \
                 (roll the hold back with `dataward rollback PROPOSAL`, or it is lifted when \
                 its incident is verified and resolved)"
            );
        }
        self.settings.arguments(command)?;
        let id = self.conn().queue(&NewDbtCoreRun {
            project: &self.project(),
            job,
            key,
            command: command.trim(),
            by,
            at,
            owner: me(),
        })?;
        self.ensure_runner();
        Ok((id.to_string(), false))
    }

    fn ensure_runner(&self) {
        let mut active = self.runner.lock().unwrap_or_else(|p| p.into_inner());
        if *active {
            return;
        }
        *active = true;
        let settings = self.settings.clone();
        let db = self.db.clone();
        let runner = self.runner.clone();
        let started = std::thread::Builder::new()
            .name("dbt-core-runner".into())
            .spawn(move || run_queue(&settings, &db, &runner));
        if let Err(e) = started {
            *active = false;
            tracing::error!(error = %e, "cannot start the dbt Core runner thread");
        }
    }

    /// The job's latest runs, newest first, as they stand.
    fn latest(&self, job: &str, limit: usize) -> Result<Vec<Row>> {
        let runs = self.conn().runs_of(job, limit)?;
        Ok(runs.into_iter().map(settled).collect())
    }
}

/// What a runner found to do.
enum Claim {
    Run {
        id: i64,
        command: String,
        log: PathBuf,
    },
    /// Another process's run holds the project.
    Busy,
    Idle,
}

/// Carries out this process's queued runs of the project, one at a time, oldest first.
fn run_queue(settings: &Settings, db: &Path, runner: &Mutex<bool>) {
    let conn = match crate::store::dbt_core::open(db, &settings.state_db()) {
        Ok(conn) => conn,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "dbt Core runner cannot open its database");
            *runner.lock().unwrap_or_else(|p| p.into_inner()) = false;
            return;
        }
    };
    loop {
        let claimed = {
            let mut active = runner.lock().unwrap_or_else(|p| p.into_inner());
            match claim(&conn, settings) {
                Ok(Claim::Idle) => {
                    *active = false;
                    return;
                }
                Ok(claimed) => claimed,
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "dbt Core runner cannot claim a run");
                    *active = false;
                    return;
                }
            }
        };
        match claimed {
            Claim::Run { id, command, log } => {
                let outcome = execute(settings, &command, &log);
                finish(&conn, id, &command, &log, outcome);
            }
            Claim::Busy => std::thread::sleep(BUSY_RECHECK),
            Claim::Idle => unreachable!("returned above"),
        }
    }
}

/// In one transaction: settles the project's runs whose process is gone, and takes
/// this process's oldest queued run unless a run holds the project.
fn claim(conn: &DbtCoreDb, settings: &Settings) -> Result<Claim> {
    let project = settings.project_dir.display().to_string();
    conn.write(|tx| {
        let mut busy = false;
        for run in tx.running(&project)? {
            let now = settled(run.clone());
            if now.status == "failed" {
                let output = run
                    .log
                    .as_deref()
                    .map(|l| masked_tail(Path::new(l)))
                    .unwrap_or_default();
                tx.abandoned(run.id, &now.detail, &output)?;
            } else {
                busy = true;
            }
        }
        if busy {
            return Ok(Claim::Busy);
        }
        let Some((id, command)) = tx.next_queued(&project, me())? else {
            return Ok(Claim::Idle);
        };
        let dir = settings.data_dir.join("dbt_core");
        files::ensure_private_dir(&dir)?;
        let log = dir.join(format!("run-{id}.log"));
        tx.started(id, now(), &log.display().to_string())?;
        Ok(Claim::Run { id, command, log })
    })
}

/// Runs dbt with its output going to `log`, and waits for it.
fn execute(settings: &Settings, command: &str, log: &Path) -> Result<ExitStatus> {
    let args = settings.arguments(command)?;
    let out = files::open_or_create(log)?;
    out.set_len(0)?;
    let err = out.try_clone()?;
    let mut child = Command::new(&settings.dbt);
    // Only what dbt and the profile need: the engine's own keys and tokens stay out.
    child.env_clear().envs(allowed_env(settings));
    child
        .args(&args)
        .current_dir(&settings.project_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        // The output is read as text: no colour codes in it.
        .env("DBT_USE_COLORS", "false");
    if let Some(dir) = &settings.profiles_dir {
        child.env("DBT_PROFILES_DIR", dir);
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls (prctl, getppid, raise) between fork and
        // exec. The child gets SIGTERM when this thread's process dies, and stops at
        // once if it already has.
        unsafe {
            child.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    libc::raise(libc::SIGTERM);
                }
                Ok(())
            });
        }
    }
    let mut child = child
        .spawn()
        .with_context(|| format!("cannot start {}", settings.dbt.display()))?;
    Ok(child.wait()?)
}

/// The environment a dbt run gets: `PATH`, `HOME`, `TMPDIR`, `LANG`, `LC_*`, `TZ`,
/// `DBT_*`, and every variable an `env_var(...)` in the profiles or the project names.
fn allowed_env(settings: &Settings) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let named = env_var_names(settings);
    std::env::vars_os()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            matches!(name, "PATH" | "HOME" | "TMPDIR" | "LANG" | "TZ")
                || name.starts_with("LC_")
                || name.starts_with("DBT_")
                || named.iter().any(|n| n == name)
        })
        .collect()
}

/// The names `env_var('NAME')` calls read in profiles.yml (where dbt would find it) and
/// dbt_project.yml.
fn env_var_names(settings: &Settings) -> Vec<String> {
    let profiles_dir = settings
        .profiles_dir
        .clone()
        .or_else(|| std::env::var_os("DBT_PROFILES_DIR").map(PathBuf::from))
        .filter(|d| d.join("profiles.yml").is_file())
        .or_else(|| Some(settings.project_dir.clone()).filter(|d| d.join("profiles.yml").is_file()))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".dbt")));
    let files = [
        profiles_dir.map(|d| d.join("profiles.yml")),
        Some(settings.project_dir.join("dbt_project.yml")),
    ];
    let mut names = Vec::new();
    for file in files.into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let mut rest = text.as_str();
        while let Some(at) = rest.find("env_var(") {
            rest = rest[at + "env_var(".len()..].trim_start();
            let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue;
            };
            if let Some(end) = rest[1..].find(quote) {
                names.push(rest[1..1 + end].to_string());
            }
        }
    }
    names
}

/// Records how the run ended, trying until the store takes it: a run left `running`
/// by a live process would hold the project for good.
fn finish(conn: &DbtCoreDb, id: i64, command: &str, log: &Path, outcome: Result<ExitStatus>) {
    let output = masked_tail(log);
    let (status, code, summary) = match &outcome {
        Ok(exit) if exit.success() => (
            "success",
            Some(0),
            format!("`{command}` succeeded (exit status 0)"),
        ),
        Ok(exit) => match exit.code() {
            Some(code) => (
                "failed",
                Some(code),
                format!("`{command}` failed with exit status {code}"),
            ),
            None => {
                use std::os::unix::process::ExitStatusExt;
                let signal = exit.signal().unwrap_or_default();
                (
                    "failed",
                    None,
                    format!("`{command}` was stopped by signal {signal}"),
                )
            }
        },
        Err(e) => ("failed", None, format!("`{command}` did not run: {e:#}")),
    };
    let lines = last_lines(&output);
    let detail = if lines.is_empty() {
        summary
    } else {
        format!("{summary}; the last lines of its output:\n{lines}")
    };
    let detail = crate::sanitize::mask_secrets(&detail).into_owned();
    let mut wait = Duration::from_millis(100);
    loop {
        let written = conn.finished(
            id,
            &DbtCoreEnd {
                status,
                at: now(),
                exit_code: code,
                output: &output,
                detail: &detail,
            },
        );
        match written {
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(run = id, error = %e, "cannot record how a dbt Core run ended; trying again");
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// The end of a run's log as it is recorded, once every known secret in the log itself
/// is masked.
fn masked_tail(log: &Path) -> String {
    mask_log(log);
    crate::sanitize::mask_secrets(&tail_of(log)).into_owned()
}

/// The run's log with every known secret masked, rewritten only when one was there:
/// the log is kept for people to read, as the record is.
fn mask_log(log: &Path) {
    let Ok(text) = std::fs::read(log) else {
        return;
    };
    let text = String::from_utf8_lossy(&text);
    if let std::borrow::Cow::Owned(masked) = crate::sanitize::mask_secrets(&text) {
        if let Err(e) = files::write_atomic(log, masked.as_bytes()) {
            tracing::warn!(log = %log.display(), error = %e, "cannot mask the secrets in a dbt run's log");
        }
    }
}

impl Orchestrator for DbtCore {
    /// One per mapped job: `hold_asked` while dataward holds it (it cannot pause the
    /// cron that runs it), with the time the job ran after the hold, by dbt's own
    /// record of its last invocation in the project, when it did (or why that record
    /// cannot say, as dbt v2's does not: the hold is then unconfirmed); running while a run
    /// is in flight, else scheduled (by whatever runs it: dataward cannot see a cron).
    fn pipelines(&self) -> Result<Vec<Pipeline>> {
        let mut pipelines = Vec::new();
        for (job, command) in &self.settings.jobs {
            let latest = self.latest(job, 20)?;
            let (mut ran_after_hold, mut hold_unconfirmed) = (None, None);
            let state = if let Some(held_at) = self.held_at(job)? {
                match self.ran_since(command, held_at)? {
                    SinceHold::NotRun => {}
                    SinceHold::Ran(at) => ran_after_hold = Some(at),
                    SinceHold::CannotTell(why) => hold_unconfirmed = Some(why),
                }
                PipelineState::HoldAsked
            } else if latest.iter().any(Row::in_flight) {
                PipelineState::Running
            } else {
                PipelineState::Scheduled
            };
            let last = latest.iter().find(|r| !r.in_flight());
            pipelines.push(Pipeline {
                name: job.clone(),
                state,
                last_status: RunStatus::parse(last.map_or("none", |r| r.status.as_str())),
                last_run_at: last.and_then(|r| r.finished_at.or(r.started_at)),
                ran_after_hold,
                hold_unconfirmed,
                last_failure: None,
            });
        }
        Ok(pipelines)
    }

    fn schedule(&self, job: &str) -> Result<Schedule> {
        self.command_of(job)?;
        Ok(Schedule {
            paused: self.held(job)?,
            saved: serde_json::Value::Null,
        })
    }

    /// Records the hold; what stops the schedule is the instruction, carried out by
    /// people.
    fn pause(&self, job: &str) -> Result<Option<String>> {
        let command = self.command_of(job)?;
        self.conn().hold(job, command, now())?;
        Ok(Some(format!(
            "dataward cannot pause a cron: stop the schedule that runs {job} (`{command}` in {}) \
             yourself; dataward refuses runs of {job} until the hold is lifted",
            self.settings.project_dir.display()
        )))
    }

    /// Lifts the hold, unless the job was held already before (`before.paused`).
    fn restore(&self, job: &str, before: &Schedule) -> Result<()> {
        self.command_of(job)?;
        if !before.paused {
            self.conn().lift(job)?;
        }
        Ok(())
    }

    fn queue_run(&self, job: &str, at: Timestamp, by: &str, key: &str) -> Result<(String, bool)> {
        let command = self.command_of(job)?.to_string();
        self.queue(job, &command, true, at, by, key)
    }

    fn queue_command(
        &self,
        job: &str,
        command: &str,
        at: Timestamp,
        by: &str,
        key: &str,
    ) -> Result<(String, bool)> {
        self.command_of(job)?;
        self.queue(job, command, false, at, by, key)
    }

    fn run(&self, _job: &str, id: &str) -> Result<Option<RunRecord>> {
        let Ok(id) = id.parse::<i64>() else {
            return Ok(None);
        };
        let found = self.conn().run(id)?;
        Ok(found.map(|r| record(&settled(r))))
    }
}

#[cfg(test)]
mod tests;
