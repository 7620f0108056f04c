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
#[path = "support/soda.rs"]
mod soda;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataward::config::Config;
use dataward::monitor::poller::{Poller, SharedWarehouse};
use dataward::monitor::Health;
use dataward::warehouse::postgres::PostgresWarehouse;
use soda::{
    last_line, prepare_server, sizes_from_env, soda_venv, ServerSide, ServerTime, Soda, Statement,
    SODA_VERSION,
};

const DEFAULT_SIZES: [usize; 4] = [100, 300, 1000, 3000];
const DAYS: usize = 70;
const LOADS: usize = DAYS * 24;
/// Rows per hourly load: 5,040 rows a table, so a scan is real work, while 3,000
/// tables (15M rows) still build in well under a minute on two cores.
const ROWS_PER_LOAD: usize = 3;
const CONCURRENCY: usize = 4;

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
    let sizes = match sizes_from_env(&DEFAULT_SIZES) {
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
