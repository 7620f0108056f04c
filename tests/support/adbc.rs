//! What the tests of the ADBC warehouses share: finding DuckDB's library, the ADBC
//! Snowflake driver and fakesnow where the .ci/ scripts install them (skipping, or
//! failing under DATAWARD_REQUIRE_ALL=1, when they are not there), a fakesnow server of
//! a test's own, and running the binary and the venvs' programs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// None after saying why the test is skipped; a panic under DATAWARD_REQUIRE_ALL=1.
pub fn skip<T>(test: &str, missing: &str) -> Option<T> {
    let message = format!("{test}: skipped: {missing}");
    if std::env::var("DATAWARD_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    None
}

/// The folder holding libduckdb.so and its manifest duckdb.toml (.ci/duckdb.sh).
pub fn duckdb_folder(test: &str) -> Option<PathBuf> {
    let folder = PathBuf::from(
        std::env::var("DATAWARD_DUCKDB_DIR").unwrap_or_else(|_| "/opt/dataward/duckdb".into()),
    );
    if folder.join("libduckdb.so").is_file() && folder.join("duckdb.toml").is_file() {
        return Some(folder);
    }
    skip(
        test,
        &format!(
            "needs DuckDB's library in {} (bash .ci/duckdb.sh)",
            folder.display()
        ),
    )
}

/// fakesnow and the ADBC Snowflake driver's library, from the venv .ci/snowflake.sh
/// makes.
pub struct SnowflakeVenv {
    pub fakesnow: PathBuf,
    pub library: PathBuf,
}

pub fn snowflake_venv(test: &str) -> Option<SnowflakeVenv> {
    let venv = PathBuf::from(
        std::env::var("SNOWFLAKE_VENV").unwrap_or_else(|_| "/opt/dataward/snowflake".into()),
    );
    let library = std::fs::read_dir(venv.join("lib"))
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| {
            python
                .path()
                .join("site-packages/adbc_driver_snowflake/libadbc_driver_snowflake.so")
        })
        .find(|path| path.is_file());
    let fakesnow = venv.join("bin/fakesnow");
    match library {
        Some(library) if fakesnow.is_file() => Some(SnowflakeVenv { fakesnow, library }),
        _ => skip(
            test,
            &format!(
                "needs fakesnow and the ADBC Snowflake driver in {} (bash .ci/snowflake.sh)",
                venv.display()
            ),
        ),
    }
}

/// The venv a dbt adapter's script makes (.ci/dbt-adapter.sh ADAPTER), named by its
/// environment variable or in /opt/dataward.
pub fn dbt_venv(test: &str, adapter: &str) -> Option<PathBuf> {
    let variable = format!("DATAWARD_DBT_{}_VENV", adapter.to_uppercase());
    let venv = PathBuf::from(
        std::env::var(&variable).unwrap_or_else(|_| format!("/opt/dataward/dbt-{adapter}")),
    );
    if venv.join("bin/dbt").is_file() {
        return Some(venv);
    }
    skip(
        test,
        &format!(
            "needs dbt-{adapter} at {} (bash .ci/dbt-{adapter}.sh)",
            venv.display()
        ),
    )
}

/// A fakesnow server of a test's own (`fakesnow -s` on loopback, a port it picks),
/// killed when dropped.
pub struct Fakesnow {
    child: Child,
    pub port: u16,
    /// What the server has logged so far, a line each.
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Fakesnow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fakesnow {
    /// Starts the server, its port read from the line Uvicorn prints.
    pub fn start(program: &Path) -> Fakesnow {
        let mut child = Command::new(program)
            .args(["-s", "--host", "127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fakesnow");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        // Read on (and kept after the port) so the server never blocks on its pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = tx.send(digits.parse::<u16>().ok());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let port = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .ok()
            .flatten()
            .expect("fakesnow printed no port within a minute");
        Fakesnow { child, port, log }
    }

    /// What the server has logged so far, a line each.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Sessions the server has logged in so far.
    pub fn logins(&self) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains("Session login"))
            .count()
    }
}

pub fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The binary, run from `cwd`, with no ambient dbt or ADBC settings but `env`.
pub fn dataward(cwd: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
        .args(args)
        .env_remove("DBT_PROFILES_DIR")
        .env_remove("ADBC_DRIVER_PATH")
        .env_remove("XDG_CONFIG_HOME");
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("run dataward")
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs a program of the venv in the project folder, its stdout returned; panics with
/// its output on failure.
pub fn venv_run(
    venv: &Path,
    program: &str,
    project: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> String {
    let mut command = Command::new(venv.join("bin").join(program));
    command
        .current_dir(project)
        .args(args)
        .env("DBT_PROFILES_DIR", project)
        .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false");
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "{program} {args:?}: {stdout}\n{stderr}"
    );
    stdout
}

/// The lines of the checks `check --json` prints (not the poll's cost, `{"poll":
/// ...}`, nor the statements `--explain` lists).
pub fn json_lines(output: &Output) -> Vec<Value> {
    every_json_line(output)
        .into_iter()
        .filter(|l| l.get("poll").is_none() && l.get("statement").is_none())
        .collect()
}

pub fn every_json_line(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The monitors `init` writes for the fixture dbt projects (tests/fixtures/dbt_duckdb,
/// dbt_snowflake: a loader's raw.orders and two table models), none commented out.
pub fn assert_fixture_monitors(config: &dataward::config::Config, written: &str) {
    let checks = |name: &str| -> Vec<String> {
        let monitor = config
            .monitor
            .iter()
            .find(|m| m.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no monitor {name} in\n{written}"));
        monitor
            .checks
            .iter()
            .map(|c| c.as_str().to_string())
            .collect()
    };
    assert_eq!(
        checks("raw.orders"),
        ["row_count", "schema", "freshness", "volume", "null_rate"]
    );
    assert_eq!(checks("fct_orders"), ["row_count", "schema"]);
    assert_eq!(checks("customer_orders"), ["row_count", "schema"]);
    assert!(
        !written.contains("# [warehouse") && !written.contains("# [[monitor]]"),
        "nothing is left commented out: {written}"
    );
}

/// What a scan should count, worked out from the rows as written: a row at each of
/// `times` (Unix seconds), every tenth one's column null, and `untimed` rows with no
/// time; minutes from `from`, days from `older_from` (split at `cutoff`), nulls from
/// `nulls_since`.
pub fn counts_from_rows(
    times: &[i64],
    untimed: u64,
    (from, older_from, cutoff): (i64, i64, i64),
    nulls_since: i64,
) -> dataward::warehouse::TableCounts {
    use dataward::warehouse::{DayRows, MinuteCount, NullCounts, TableCounts};
    let mut days: Vec<DayRows> = Vec::new();
    for at in times.iter().filter(|at| (older_from..from).contains(*at)) {
        let day = at.div_euclid(86_400);
        let time = at.rem_euclid(86_400);
        let entry = match days.iter_mut().find(|d| d.day == day) {
            Some(entry) => entry,
            None => {
                days.push(DayRows {
                    day,
                    first_minute: 86_400,
                    ..DayRows::default()
                });
                days.last_mut().unwrap()
            }
        };
        entry.rows += 1;
        entry.at_midnight += u64::from(time == 0);
        entry.before_cutoff += u64::from(time < cutoff);
        entry.first_minute = entry.first_minute.min(time / 60 * 60);
    }
    days.sort_by_key(|d| d.day);
    let mut minutes: Vec<MinuteCount> = Vec::new();
    for at in times.iter().filter(|at| **at >= from) {
        let minute = at - at.rem_euclid(60);
        let at_midnight = u64::from(at.rem_euclid(86_400) == 0);
        match minutes.iter_mut().find(|m| m.minute == minute) {
            Some(m) => {
                m.rows += 1;
                m.at_midnight += at_midnight;
            }
            None => minutes.push(MinuteCount {
                minute,
                rows: 1,
                at_midnight,
            }),
        }
    }
    minutes.sort_by_key(|m| m.minute);
    let recent: Vec<usize> = (0..times.len())
        .filter(|n| times[*n] >= nulls_since)
        .collect();
    TableCounts {
        rows: times.len() as u64 + untimed,
        nulls: NullCounts {
            rows: recent.len() as u64,
            nulls: vec![recent.iter().filter(|n| *n % 10 == 0).count() as u64],
        },
        older_rows: times
            .iter()
            .filter(|at| (older_from..from).contains(*at))
            .count() as u64,
        minutes,
        days,
        tail: None,
        // Each day's nulls over every row of the minutes and days read.
        day_nulls: {
            let mut days: Vec<(i64, Vec<u64>)> = Vec::new();
            for (n, at) in times
                .iter()
                .enumerate()
                .filter(|(_, at)| **at >= older_from)
            {
                let null = u64::from(n % 10 == 0);
                match days.iter_mut().find(|(d, _)| *d == at.div_euclid(86_400)) {
                    Some((_, nulls)) => nulls[0] += null,
                    None => days.push((at.div_euclid(86_400), vec![null])),
                }
            }
            days.sort_by_key(|(d, _)| *d);
            days
        },
    }
}
