//! dataward and Soda Core 3.5.6 side by side on the same PostgreSQL 15 tables (issue 12).
//!
//! Starts its own server, builds `bench.t1..tN (id bigint, amount numeric, note text,
//! loaded_at timestamptz)` with 70 days of hourly loads, and for each size runs:
//! - dataward, one full poll with row_count, freshness and null_rate(amount);
//! - dataward, one full poll with all five checks (adding volume and schema);
//! - Soda Core, one `soda scan` with row_count, freshness(loaded_at) and
//!   missing_count(amount) per table, from a venv it creates with pip.
//!
//! For each it prints checks per second of wall time and the PostgreSQL server's CPU
//! time per table: utime+stime of the postmaster and all its children, plus what
//! exited children left in the postmaster's cutime+cstime, before and after the run.
//! Statements are counted with pg_stat_statements.
//!
//! Run with `cargo bench --bench vs_soda`. Sizes default to 100, 300, 1000 and 3000
//! tables; `VS_SODA_TABLES=100,300` runs fewer. The tables are built once, for the
//! largest size, and the smaller sizes measure the first N of them. The venv is kept
//! under cargo's target tmp dir, so later runs skip pip; when it cannot be made (no
//! python3, PyPI unreachable) Soda is skipped with one line and dataward still runs.

#[path = "../tests/support/pg.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataward::config::Config;
use dataward::monitor::poller::{Poller, SharedWarehouse};
use dataward::monitor::Health;
use dataward::warehouse::postgres::PostgresWarehouse;

const DEFAULT_SIZES: [usize; 4] = [100, 300, 1000, 3000];
const DAYS: usize = 70;
const LOADS: usize = DAYS * 24;
/// Rows per hourly load: 5,040 rows a table, so a scan is real work, while 3,000
/// tables (15M rows) still build in well under a minute on two cores.
const ROWS_PER_LOAD: usize = 3;
const CONCURRENCY: usize = 4;
const SODA_VERSION: &str = "3.5.6";
const PIP_TIMEOUT: Duration = Duration::from_secs(600);

/// Tables of one day's loads, to show that a poll after the first costs the same
/// whatever the history: only the recent days are read again.
const HISTORY_TABLES: usize = 300;
/// The poller's next poll, as a monitor's default `every`.
const NEXT_POLL: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

const THREE_CHECKS: &[&str] = &["row_count", "freshness", "null_rate"];
const FIVE_CHECKS: &[&str] = &["row_count", "freshness", "null_rate", "volume", "schema"];

fn main() {
    println!("vs_soda: dataward against Soda Core {SODA_VERSION} on one PostgreSQL 15 server");
    println!("run: cargo bench --bench vs_soda   (fewer sizes: VS_SODA_TABLES=100,300 cargo bench --bench vs_soda)");
    let sizes = match sizes_from_env() {
        Ok(sizes) => sizes,
        Err(message) => {
            eprintln!("vs_soda: {message}");
            std::process::exit(2);
        }
    };
    let Some(server) = pg::start_or_skip("vs_soda benchmark") else {
        return;
    };
    let largest = *sizes.iter().max().expect("at least one size");

    prepare_server(&server, largest);
    let setup = Instant::now();
    build_tables(&server, "bench", largest, LOADS);
    let history = largest.min(HISTORY_TABLES);
    build_tables(&server, "bench_day", history, 24);
    println!(
        "setup: {largest} tables x {} rows ({DAYS} days x 24 hourly loads x {ROWS_PER_LOAD}), \
         and {history} of one day's loads, in {:.1}s",
        LOADS * ROWS_PER_LOAD,
        setup.elapsed().as_secs_f64()
    );

    let soda = match soda_venv() {
        Ok(soda) => Some(soda),
        Err(reason) => {
            println!("soda: skipped: {reason}");
            None
        }
    };

    let server_side = ServerSide::new(&server);
    println!(
        "server time: CPU of the postmaster and its children from /proc (resolution 1/{}s per process); \
         pg_stat_statements loaded for statement counts; autovacuum off",
        server_side.ticks_per_second
    );
    println!("dataward: {CONCURRENCY} connections, 2 tokio workers; soda: one scan process, one connection");
    println!();

    let mut results = Vec::new();
    for &tables in &sizes {
        let three = run_dataward(&server, &server_side, "bench", tables, THREE_CHECKS);
        let five = run_dataward(&server, &server_side, "bench", tables, FIVE_CHECKS);
        let soda_run = soda
            .as_ref()
            .map(|soda| run_soda(soda, &server, &server_side, tables));
        results.push(Size {
            tables,
            three,
            five,
            soda: soda_run,
        });
    }

    print_table(&results);
    print_history(&server, &server_side, history);
    if let Some(Size {
        tables,
        three,
        five,
        soda: soda_run,
    }) = results.last()
    {
        println!();
        println!(
            "where the server's time went at {tables} tables (pg_stat_statements; time spent planning and \
             executing, which counts waiting for a core when queries run side by side, so it can exceed the CPU):"
        );
        print_breakdown("dataward, 3 checks, first poll", *tables, &three.first);
        print_breakdown("dataward, 3 checks, next poll", *tables, &three.next);
        print_breakdown("dataward, 5 checks, first poll", *tables, &five.first);
        print_breakdown("dataward, 5 checks, next poll", *tables, &five.next);
        match soda_run {
            Some(Ok(run)) => print_breakdown("soda", *tables, run),
            Some(Err(e)) => println!("  soda: not measured: {e}"),
            None => {}
        }
    }
}

fn sizes_from_env() -> Result<Vec<usize>, String> {
    let Ok(text) = std::env::var("VS_SODA_TABLES") else {
        return Ok(DEFAULT_SIZES.to_vec());
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

/// pg_stat_statements must be preloaded, so this restarts the server once. Autovacuum
/// is turned off so that background work on the freshly built tables lands in neither
/// tool's figures; the tables are vacuumed and analyzed once after the build instead.
fn prepare_server(server: &pg::PgServer, tables: usize) {
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

/// One template table, copied per table by two connections at once (the machine has
/// two cores). Every 10th amount is NULL, so null_rate and missing_count find some.
fn build_tables(server: &pg::PgServer, schema: &str, tables: usize, loads: usize) {
    let last_load = loads - 1;
    server.execute(&format!(
        "CREATE SCHEMA {schema};
         CREATE TABLE public.vs_soda_template AS
           SELECT (h * {ROWS_PER_LOAD} + r)::bigint AS id,
                  CASE WHEN (h * {ROWS_PER_LOAD} + r) % 10 = 0 THEN NULL
                       ELSE round((random() * 1000)::numeric, 2) END AS amount,
                  'load ' || h || ' row ' || r AS note,
                  date_trunc('hour', now()) - h * interval '1 hour' AS loaded_at
           FROM generate_series(0, {last_load}) h, generate_series(1, {ROWS_PER_LOAD}) r;"
    ));
    std::thread::scope(|scope| {
        for worker in 0..2 {
            scope.spawn(move || {
                let mut client = server.client();
                let mine: Vec<usize> = (1..=tables).filter(|i| i % 2 == worker).collect();
                for chunk in mine.chunks(100) {
                    let sql: String = chunk
                        .iter()
                        .map(|i| {
                            format!("CREATE TABLE {schema}.t{i} AS SELECT * FROM public.vs_soda_template;\n")
                        })
                        .collect();
                    client.batch_execute(&sql).expect("create bench tables");
                }
            });
        }
    });
    server.execute("DROP TABLE public.vs_soda_template");
    // Hint bits and the visibility map set now, or the first tool to read a table pays
    // for writing them. The checkpoint keeps that flush out of the first run too.
    server.execute("VACUUM (FREEZE, ANALYZE)");
    server.execute("CHECKPOINT");
}

/// Reads what the server did: CPU time from /proc, statements from pg_stat_statements.
struct ServerSide {
    postmaster: u32,
    ticks_per_second: u64,
}

#[derive(Debug, Clone)]
struct Statement {
    query: String,
    calls: i64,
    exec_ms: f64,
    plan_ms: f64,
}

struct Snapshot {
    cpu_ticks: u64,
}

impl ServerSide {
    fn new(server: &pg::PgServer) -> ServerSide {
        let mut client = server.client();
        let backend: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .expect("backend pid")
            .get(0);
        drop(client);
        let postmaster = proc_stat(backend as u32)
            .expect("the backend's /proc entry")
            .ppid;
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        ServerSide {
            postmaster,
            ticks_per_second: if ticks > 0 { ticks as u64 } else { 100 },
        }
    }

    /// Clears the statement counters, then waits until no client is connected, so the
    /// connection used here is outside the CPU window that starts now.
    fn start(&self, server: &pg::PgServer) -> Snapshot {
        server.execute("SELECT pg_stat_statements_reset()");
        self.wait_for_no_clients();
        Snapshot {
            cpu_ticks: self.cpu_ticks(),
        }
    }

    /// Waits for the tool's connections to end (their CPU then sits in the postmaster's
    /// cutime), reads the CPU, and only then connects to read the statements.
    fn finish(&self, server: &pg::PgServer, start: Snapshot) -> ServerTime {
        self.wait_for_no_clients();
        let cpu = self.cpu_ticks().saturating_sub(start.cpu_ticks);
        let statements = read_statements(server);
        ServerTime {
            cpu: Duration::from_secs_f64(cpu as f64 / self.ticks_per_second as f64),
            statements,
        }
    }

    fn children(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&pid| proc_stat(pid).is_some_and(|s| s.ppid == self.postmaster))
            .collect()
    }

    fn cpu_ticks(&self) -> u64 {
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
    fn wait_for_no_clients(&self) {
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

struct ProcStat {
    ppid: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

/// Fields of /proc/<pid>/stat after the command name, which is in parentheses and may
/// itself hold spaces or parentheses.
fn proc_stat(pid: u32) -> Option<ProcStat> {
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
fn read_statements(server: &pg::PgServer) -> Vec<Statement> {
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

struct ServerTime {
    cpu: Duration,
    statements: Vec<Statement>,
}

struct Run {
    checks: usize,
    /// Checks that gave no result (an error, a timeout); listed so a figure for checks
    /// that all errored is never read as a fast tool.
    errors: usize,
    wall: Duration,
    server: ServerTime,
}

impl Run {
    fn checks_per_second(&self) -> f64 {
        self.checks as f64 / self.wall.as_secs_f64()
    }
    fn server_ms_per_table(&self, tables: usize) -> f64 {
        self.server.cpu.as_secs_f64() * 1000.0 / tables as f64
    }
    fn statements(&self) -> i64 {
        self.server.statements.iter().map(|s| s.calls).sum()
    }
}

/// The first poll of a fresh state database, which reads each table's whole lookback,
/// and the next one, which reads the days since.
struct Polls {
    first: Run,
    next: Run,
}

fn run_dataward(
    server: &pg::PgServer,
    server_side: &ServerSide,
    schema: &str,
    tables: usize,
    checks: &[&str],
) -> Polls {
    let list = checks
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut toml =
        String::from("[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n");
    for i in 1..=tables {
        toml.push_str(&format!(
            "[[monitor]]\nwarehouse = \"pg\"\ntable = \"{schema}.t{i}\"\nchecks = [{list}]\n\
             timestamp_column = \"loaded_at\"\nnull_columns = [\"amount\"]\n"
        ));
    }
    let config = Config::parse(&toml, Path::new("vs_soda.toml")).expect("bench config");
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dataward::store::open(&dir.path().join("state.db")).expect("state database");
    let now = chrono::Utc::now();
    let poll = |at: chrono::DateTime<chrono::Utc>| {
        let start = server_side.start(server);
        let started = Instant::now();
        let warehouse = Arc::new(
            PostgresWarehouse::new(&server.url, CONCURRENCY, Duration::from_secs(60))
                .expect("warehouse"),
        );
        let mut poller = Poller::new().expect("poller");
        poller.add_warehouse(
            "pg",
            warehouse as SharedWarehouse,
            CONCURRENCY,
            Duration::from_secs(60),
        );
        let observations = poller.poll(&state, &config.monitor, at).expect("poll");
        let wall = started.elapsed();
        // Closes the pooled connections, so their backends exit and are counted.
        poller.shut_down();
        let server_time = server_side.finish(server, start);
        let errors = observations
            .iter()
            .filter(|o| o.health != Health::Ok)
            .count();
        Run {
            checks: tables * checks.len(),
            errors,
            wall,
            server: server_time,
        }
    };
    let first = poll(now);
    let next = poll(now + NEXT_POLL);
    Polls { first, next }
}

/// The next poll's cost over tables of one day and of seventy, three checks each.
fn print_history(server: &pg::PgServer, server_side: &ServerSide, tables: usize) {
    let day = run_dataward(server, server_side, "bench_day", tables, THREE_CHECKS);
    let weeks = run_dataward(server, server_side, "bench", tables, THREE_CHECKS);
    println!();
    println!(
        "history: the next poll, 3 checks, {tables} tables: one day of loads {:.2} ms of server CPU per table, \
         {DAYS} days {:.2} (first polls: {:.2} and {:.2})",
        day.next.server_ms_per_table(tables),
        weeks.next.server_ms_per_table(tables),
        day.first.server_ms_per_table(tables),
        weeks.first.server_ms_per_table(tables),
    );
}

struct Soda {
    executable: PathBuf,
    work: tempfile::TempDir,
}

/// A venv with soda-core-postgres, kept under cargo's target tmp dir and reused when a
/// previous run finished installing it.
fn soda_venv() -> Result<Soda, String> {
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

fn run_with_timeout(
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

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

const SODA_CHECKS_PER_TABLE: usize = 3;

fn run_soda(
    soda: &Soda,
    server: &pg::PgServer,
    server_side: &ServerSide,
    tables: usize,
) -> Result<Run, String> {
    let dir = soda.work.path();
    let configuration = dir.join("configuration.yml");
    // The test server trusts local connections; Soda wants a password field anyway.
    std::fs::write(
        &configuration,
        format!(
            "data_source bench:\n  type: postgres\n  host: 127.0.0.1\n  port: \"{}\"\n  \
             username: postgres\n  password: unused\n  database: postgres\n  schema: bench\n",
            server.port
        ),
    )
    .map_err(|e| e.to_string())?;
    let checks = dir.join(format!("checks-{tables}.yml"));
    let mut yaml = String::new();
    for i in 1..=tables {
        yaml.push_str(&format!(
            "checks for t{i}:\n  - row_count > 0\n  - freshness(loaded_at) < 1d\n  - missing_count(amount) >= 0\n"
        ));
    }
    std::fs::write(&checks, yaml).map_err(|e| e.to_string())?;
    let results = dir.join(format!("results-{tables}.json"));

    let start = server_side.start(server);
    let started = Instant::now();
    let output = Command::new(&soda.executable)
        .args(["scan", "-d", "bench", "-c"])
        .arg(&configuration)
        .arg("-srf")
        .arg(&results)
        .arg(&checks)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run soda: {e}"))?;
    let wall = started.elapsed();
    let server_time = server_side.finish(server, start);

    let text = std::fs::read_to_string(&results).map_err(|e| {
        format!(
            "soda wrote no results ({e}; exit {}): {}",
            output.status,
            last_line(&output.stdout)
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let outcomes: Vec<&str> = json["checks"]
        .as_array()
        .ok_or("soda's results hold no checks")?
        .iter()
        .map(|c| c["outcome"].as_str().unwrap_or("none"))
        .collect();
    if outcomes.len() != tables * SODA_CHECKS_PER_TABLE {
        return Err(format!(
            "soda reported {} checks, expected {} (exit {}): {}",
            outcomes.len(),
            tables * SODA_CHECKS_PER_TABLE,
            output.status,
            last_line(&output.stdout)
        ));
    }
    Ok(Run {
        checks: outcomes.len(),
        // Soda's outcome is pass, warn or fail when the check ran, null when it errored.
        errors: outcomes
            .iter()
            .filter(|&&o| !matches!(o, "pass" | "warn" | "fail"))
            .count(),
        wall,
        server: server_time,
    })
}

/// The runs at one number of tables.
struct Size {
    tables: usize,
    three: Polls,
    five: Polls,
    /// None: Soda was skipped for all sizes (said once, at the start).
    soda: Option<Result<Run, String>>,
}

fn print_table(results: &[Size]) {
    println!(
        "{:>6}  {:<28} {:>7} {:>6} {:>8} {:>10} {:>16} {:>11}",
        "tables",
        "tool",
        "checks",
        "errors",
        "wall s",
        "checks/s",
        "server ms/table",
        "stmts/table"
    );
    let row = |tables: usize, tool: &str, run: &Run| {
        println!(
            "{:>6}  {:<28} {:>7} {:>6} {:>8.2} {:>10.0} {:>16.2} {:>11.1}",
            tables,
            tool,
            run.checks,
            run.errors,
            run.wall.as_secs_f64(),
            run.checks_per_second(),
            run.server_ms_per_table(tables),
            run.statements() as f64 / tables as f64
        );
    };
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}x", a / b)
        } else {
            "n/a".to_string()
        }
    };
    // Checks per second are the same Soda checks' rate in every ratio: the five-check
    // figure counts only the three Soda also does, so extra checks never flatter it.
    let against = |tables: usize, label: &str, run: &Run, soda: &Run, soda_checks: usize| {
        let ours = soda_checks as f64 / run.wall.as_secs_f64();
        println!(
            "{:>6}  {:<28} {:>7} {:>6} {:>8} {:>10} {:>16} {:>11}",
            tables,
            label,
            "",
            "",
            ratio(run.wall.as_secs_f64(), soda.wall.as_secs_f64()),
            ratio(ours, soda.checks_per_second()),
            ratio(
                run.server_ms_per_table(tables),
                soda.server_ms_per_table(tables)
            ),
            ratio(run.statements() as f64, soda.statements() as f64)
        );
    };
    for Size {
        tables,
        three,
        five,
        soda,
    } in results
    {
        let tables = *tables;
        row(tables, "dataward 3 checks, first poll", &three.first);
        row(tables, "dataward 3 checks, next poll", &three.next);
        row(tables, "dataward 5 checks, first poll", &five.first);
        row(tables, "dataward 5 checks, next poll", &five.next);
        match soda {
            Some(Ok(soda)) => {
                row(tables, "soda 3 checks", soda);
                against(
                    tables,
                    "/ soda: 3 checks, first",
                    &three.first,
                    soda,
                    soda.checks,
                );
                against(
                    tables,
                    "/ soda: 3 checks, next",
                    &three.next,
                    soda,
                    soda.checks,
                );
                against(
                    tables,
                    "/ soda: 5 checks, first",
                    &five.first,
                    soda,
                    soda.checks,
                );
                against(
                    tables,
                    "/ soda: 5 checks, next",
                    &five.next,
                    soda,
                    soda.checks,
                );
            }
            Some(Err(e)) => println!("{tables:>6}  soda: not measured: {e}"),
            None => println!("{tables:>6}  soda: skipped (see above)"),
        }
    }
}

/// The statements that took the most server time (planning and executing), grouped
/// by their text with the table's number taken out, so one row stands for a query
/// shape across all tables.
fn print_breakdown(tool: &str, tables: usize, run: &Run) {
    let mut shapes: Vec<Statement> = Vec::new();
    for s in &run.server.statements {
        let query = without_table_number(&s.query);
        match shapes.iter_mut().find(|shape| shape.query == query) {
            Some(shape) => {
                shape.calls += s.calls;
                shape.exec_ms += s.exec_ms;
                shape.plan_ms += s.plan_ms;
            }
            None => shapes.push(Statement { query, ..s.clone() }),
        }
    }
    let per_table = |ms: f64| ms / tables as f64;
    let exec: f64 = shapes.iter().map(|s| s.exec_ms).sum();
    let plan: f64 = shapes.iter().map(|s| s.plan_ms).sum();
    println!(
        "  {tool}: {:.2} ms planning + {:.2} ms executing per table, {} statements; CPU {:.2} ms per table",
        per_table(plan),
        per_table(exec),
        run.statements(),
        run.server_ms_per_table(tables)
    );
    shapes.sort_by(|a, b| (b.exec_ms + b.plan_ms).total_cmp(&(a.exec_ms + a.plan_ms)));
    for s in shapes.iter().take(5) {
        println!(
            "    plan {:>6.3} + exec {:>6.3} ms/table {:>6} calls  {}",
            per_table(s.plan_ms),
            per_table(s.exec_ms),
            s.calls,
            one_line(&s.query, 80)
        );
    }
}

/// `bench.t17`, `"bench"."t17"` and `"t17"` all become `...tN`.
fn without_table_number(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut chars = query.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        out.push(c);
        let starts_name = matches!(previous, '.' | '"' | ' ');
        if c == 't' && starts_name && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
            out.push('N');
        }
        previous = c;
    }
    out
}

/// Statement text is the server's: whitespace collapsed and control characters shown
/// as `?`, so it cannot steer the terminal, and cut to fit a line.
fn one_line(text: &str, width: usize) -> String {
    let flat: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if flat.chars().count() > width {
        format!("{}...", flat.chars().take(width - 3).collect::<String>())
    } else {
        flat
    }
}
