//! dataward and Soda Core 3.5.6 as a user runs them (issue 30): whole processes,
//! `dataward check --once` against `soda scan`, on the same PostgreSQL 15 tables.
//!
//! Starts its own server and builds `bench.t1..tN (id bigint, amount numeric, note
//! text, loaded_at timestamptz)`: 70 days of a row every three minutes, 33,600 rows a
//! table, every 10th amount NULL, no index on `loaded_at`; and the same tables with an
//! index on it as `bench_ix`. For each size it times, median of 3 runs taken in turn
//! (dataward three checks, Soda, dataward five checks):
//! - the first poll: `dataward check --once` on a fresh data directory;
//! - a later poll: `dataward check --once` on the data directory the first poll left;
//! - Soda's `soda scan` with row_count, freshness(loaded_at) and missing_count(amount).
//!
//! It prints each run's wall time and checks per second (checks as each tool runs
//! them: three or five a table for dataward, three for Soda), the ratio to Soda, the
//! server's CPU per table (the postmaster and its children, from /proc), and the state
//! database's bytes per table after the first poll and after the later ones; then the
//! server's CPU per table of later polls on the indexed tables.
//!
//! Run with `cargo bench --bench vs_soda_processes`. Sizes default to 100 and 200
//! tables; `VS_SODA_TABLES=200` picks others. The Soda venv is shared with `vs_soda`.
//! `VS_SODA_DATAWARD=PATH` times another dataward binary (an older build, say) instead of
//! the one cargo built. `VS_SODA_SCALE=100,1000,10000` measures dataward alone on that
//! many smaller tables: state per table and each poll's cost (see [`scale`]).
//! `VS_SODA_STEADY=1` measures dataward alone on the sizes' tables of 33,600 rows,
//! without and with the index: the server's CPU per table of each steady poll (see
//! [`steady`]); a debug build will do (`--profile dev`): the server's work is the same.

#[path = "../tests/support/pg.rs"]
mod pg;
#[path = "support/soda.rs"]
mod soda;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use soda::{last_line, prepare_server, sizes_from_env, soda_venv, ServerSide, Soda, SODA_VERSION};

const DEFAULT_SIZES: [usize; 2] = [100, 200];
const ROWS: usize = 33_600;
const ROUNDS: usize = 3;
const SODA_CHECKS_PER_TABLE: usize = 3;
const THREE_CHECKS: &[&str] = &["row_count", "freshness", "null_rate"];
const FIVE_CHECKS: &[&str] = &["row_count", "freshness", "null_rate", "volume", "schema"];

fn main() {
    println!("vs_soda_processes: dataward check --once against soda scan {SODA_VERSION}, whole processes");
    println!("run: cargo bench --bench vs_soda_processes   (other sizes: VS_SODA_TABLES=200 cargo bench --bench vs_soda_processes)");
    let sizes = match sizes_from_env(&DEFAULT_SIZES) {
        Ok(sizes) => sizes,
        Err(message) => {
            eprintln!("vs_soda_processes: {message}");
            std::process::exit(2);
        }
    };
    let Some(server) = pg::start_or_skip("vs_soda_processes benchmark") else {
        return;
    };
    if let Ok(sizes) = std::env::var("VS_SODA_SCALE") {
        scale(&server, &sizes);
        return;
    }
    if std::env::var_os("VS_SODA_STEADY").is_some() {
        steady(&server, &sizes);
        return;
    }
    let largest = *sizes.iter().max().expect("at least one size");
    prepare_server(&server, largest);
    let setup = Instant::now();
    build_tables(&server, "bench", largest, false, ROWS, 3);
    build_tables(&server, "bench_ix", largest, true, ROWS, 3);
    println!(
        "setup: {largest} tables x {ROWS} rows (70 days, a row every 3 minutes), without and with \
         an index on loaded_at, in {:.1}s",
        setup.elapsed().as_secs_f64()
    );
    let soda = soda_venv().unwrap_or_else(|reason| {
        eprintln!("vs_soda_processes: Soda is needed to compare with: {reason}");
        std::process::exit(2);
    });
    let side = ServerSide::new(&server);
    let bench = Bench {
        server: &server,
        side: &side,
        soda: &soda,
        work: tempfile::tempdir().expect("temp dir"),
    };
    println!("each figure the median of {ROUNDS} runs, taken in turn: dataward 3 checks, soda, dataward 5 checks");
    println!("aims (issue 30): first poll >= 1.5x Soda's checks/s; later polls >= 3x (3 checks) and >= 2x (5 against Soda's 3);");
    println!("  server <= 2 ms per table per later poll, with and without an index; state <= 20 KB per table");
    println!();
    for &tables in &sizes {
        bench.size(tables);
    }
}

struct Bench<'a> {
    server: &'a pg::PgServer,
    side: &'a ServerSide,
    soda: &'a Soda,
    work: tempfile::TempDir,
}

/// One process's run.
#[derive(Clone, Copy)]
struct Run {
    wall: Duration,
    server_cpu: Duration,
    checks: usize,
    /// Checks that gave no result: a figure for checks that all errored is never a
    /// fast tool.
    errors: usize,
}

/// The medians of one tool's runs.
struct Median {
    wall: f64,
    server_ms_per_table: f64,
    checks: usize,
    errors: usize,
}

fn median(runs: &[Run], tables: usize) -> Median {
    let mid = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Median {
        wall: mid(runs.iter().map(|r| r.wall.as_secs_f64()).collect()),
        server_ms_per_table: mid(runs
            .iter()
            .map(|r| r.server_cpu.as_secs_f64() * 1000.0 / tables as f64)
            .collect()),
        checks: runs[0].checks,
        errors: runs.iter().map(|r| r.errors).max().unwrap_or(0),
    }
}

impl Median {
    fn checks_per_second(&self) -> f64 {
        self.checks as f64 / self.wall
    }
}

impl Bench<'_> {
    fn size(&self, tables: usize) {
        let three = self.config("bench", tables, THREE_CHECKS);
        let five = self.config("bench", tables, FIVE_CHECKS);
        let (mut first3, mut first5, mut soda) = (Vec::new(), Vec::new(), Vec::new());
        let (mut dir3, mut dir5) = (PathBuf::new(), PathBuf::new());
        for round in 0..ROUNDS {
            dir3 = self.fresh_dir(&format!("{tables}-3-{round}"));
            first3.push(self.dataward(&three, &dir3));
            soda.push(self.soda(tables));
            dir5 = self.fresh_dir(&format!("{tables}-5-{round}"));
            first5.push(self.dataward(&five, &dir5));
        }
        let state_first = (state_bytes(&dir3), state_bytes(&dir5));
        let (mut next3, mut next5) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            next3.push(self.dataward(&three, &dir3));
            soda.push(self.soda(tables));
            next5.push(self.dataward(&five, &dir5));
        }
        let state_next = (state_bytes(&dir3), state_bytes(&dir5));
        let soda = median(&soda, tables);

        println!(
            "{:>6}  {:<30} {:>7} {:>6} {:>8} {:>9} {:>8} {:>16} {:>10}",
            "tables",
            "run",
            "checks",
            "errors",
            "wall s",
            "checks/s",
            "/ soda",
            "server ms/table",
            "KB/table"
        );
        let kb = |bytes: u64| format!("{:.1}", bytes as f64 / 1024.0 / tables as f64);
        let row = |label: &str, m: &Median, state: Option<u64>| {
            println!(
                "{:>6}  {:<30} {:>7} {:>6} {:>8.2} {:>9.0} {:>7.2}x {:>16.2} {:>10}",
                tables,
                label,
                m.checks,
                m.errors,
                m.wall,
                m.checks_per_second(),
                m.checks_per_second() / soda.checks_per_second(),
                m.server_ms_per_table,
                state.map_or_else(|| "-".to_string(), kb),
            );
        };
        row(
            "dataward 3 checks, first poll",
            &median(&first3, tables),
            Some(state_first.0),
        );
        row(
            "dataward 3 checks, later poll",
            &median(&next3, tables),
            Some(state_next.0),
        );
        row(
            "dataward 5 checks, first poll",
            &median(&first5, tables),
            Some(state_first.1),
        );
        row(
            "dataward 5 checks, later poll",
            &median(&next5, tables),
            Some(state_next.1),
        );
        row("soda 3 checks (6 runs)", &soda, None);

        // The server's work per later poll when loaded_at has an index.
        let indexed3 = self.config("bench_ix", tables, THREE_CHECKS);
        let indexed5 = self.config("bench_ix", tables, FIVE_CHECKS);
        let (ix3, ix5) = (
            self.fresh_dir(&format!("{tables}-ix3")),
            self.fresh_dir(&format!("{tables}-ix5")),
        );
        let (first3, first5) = (
            self.dataward(&indexed3, &ix3),
            self.dataward(&indexed5, &ix5),
        );
        let (mut later3, mut later5) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            later3.push(self.dataward(&indexed3, &ix3));
            later5.push(self.dataward(&indexed5, &ix5));
        }
        let ms = |run: &Run| run.server_cpu.as_secs_f64() * 1000.0 / tables as f64;
        println!(
            "{tables:>6}  with an index on loaded_at, server ms/table: first poll {:.2} (3 checks) and {:.2} \
             (5 checks); later polls {:.2} and {:.2}",
            ms(&first3),
            ms(&first5),
            median(&later3, tables).server_ms_per_table,
            median(&later5, tables).server_ms_per_table,
        );
        println!();
    }

    /// A config of `tables` monitors on `schema`, each with `checks`.
    fn config(&self, schema: &str, tables: usize, checks: &[&str]) -> PathBuf {
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
        let path = self
            .work
            .path()
            .join(format!("{schema}-{tables}-{}.toml", checks.len()));
        std::fs::write(&path, toml).expect("write the config");
        path
    }

    fn fresh_dir(&self, name: &str) -> PathBuf {
        let dir = self.work.path().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a data directory");
        dir
    }

    /// `dataward check --once --json`, its checks counted from its lines.
    fn dataward(&self, config: &Path, data_dir: &Path) -> Run {
        let start = self.side.start(self.server);
        let started = Instant::now();
        let binary = std::env::var_os("VS_SODA_DATAWARD")
            .map_or_else(|| env!("CARGO_BIN_EXE_dataward").into(), PathBuf::from);
        let output = Command::new(binary)
            .arg("--data-dir")
            .arg(data_dir)
            .args(["check", "--once", "--json", "--config"])
            .arg(config)
            .env("DATAWARD_PG_URL", &self.server.url)
            .output()
            .expect("run dataward");
        let wall = started.elapsed();
        let server = self.side.finish(self.server, start);
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|v: &serde_json::Value| v.get("check").is_some())
            .collect();
        assert!(
            !lines.is_empty(),
            "dataward printed no checks (exit {}): {}",
            output.status,
            last_line(&output.stderr)
        );
        Run {
            wall,
            server_cpu: server.cpu,
            checks: lines.len(),
            errors: lines.iter().filter(|l| l["health"] != "ok").count(),
        }
    }

    fn soda(&self, tables: usize) -> Run {
        let dir = self.soda.work.path();
        let configuration = dir.join("configuration.yml");
        // The test server trusts local connections; Soda wants a password field anyway.
        std::fs::write(
            &configuration,
            format!(
                "data_source bench:\n  type: postgres\n  host: 127.0.0.1\n  port: \"{}\"\n  \
                 username: postgres\n  password: unused\n  database: postgres\n  schema: bench\n",
                self.server.port
            ),
        )
        .expect("soda configuration");
        let checks = dir.join(format!("checks-{tables}.yml"));
        let yaml: String = (1..=tables)
            .map(|i| {
                format!(
                    "checks for t{i}:\n  - row_count > 0\n  - freshness(loaded_at) < 1d\n  \
                     - missing_count(amount) >= 0\n"
                )
            })
            .collect();
        std::fs::write(&checks, yaml).expect("soda checks");
        let results = dir.join(format!("results-{tables}.json"));
        let _ = std::fs::remove_file(&results);
        let start = self.side.start(self.server);
        let started = Instant::now();
        let output = Command::new(&self.soda.executable)
            .args(["scan", "-d", "bench", "-c"])
            .arg(&configuration)
            .arg("-srf")
            .arg(&results)
            .arg(&checks)
            .current_dir(dir)
            .output()
            .expect("run soda");
        let wall = started.elapsed();
        let server = self.side.finish(self.server, start);
        let text = std::fs::read_to_string(&results).unwrap_or_else(|e| {
            panic!(
                "soda wrote no results ({e}; exit {}): {}",
                output.status,
                last_line(&output.stdout)
            )
        });
        let json: serde_json::Value = serde_json::from_str(&text).expect("soda's results");
        let outcomes: Vec<&str> = json["checks"]
            .as_array()
            .expect("soda's checks")
            .iter()
            .map(|c| c["outcome"].as_str().unwrap_or("none"))
            .collect();
        assert_eq!(
            outcomes.len(),
            tables * SODA_CHECKS_PER_TABLE,
            "soda's checks"
        );
        Run {
            wall,
            server_cpu: server.cpu,
            checks: outcomes.len(),
            // pass, warn or fail when the check ran; null when it errored.
            errors: outcomes
                .iter()
                .filter(|&&o| !matches!(o, "pass" | "warn" | "fail"))
                .count(),
        }
    }
}

/// The state database's bytes on disk, its write-ahead log included.
fn state_bytes(data_dir: &Path) -> u64 {
    ["dataward.db", "dataward.db-wal"]
        .iter()
        .filter_map(|name| std::fs::metadata(data_dir.join(name)).ok())
        .map(|m| m.len())
        .sum()
}

/// `VS_SODA_SCALE=100,1000,10000`: dataward alone (three checks) on that many smaller
/// tables (70 days of a row every 3 hours, 560 rows, no index; `VS_SODA_SCALE_ROWS`
/// for more, still 70 days): the state database's bytes per table after the first
/// poll and after two later ones, and each poll's wall time and server CPU per table.
fn scale(server: &pg::PgServer, sizes: &str) {
    let sizes: Vec<usize> = sizes
        .split(',')
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse()
                .expect("VS_SODA_SCALE: numbers of tables")
        })
        .collect();
    let rows: usize = std::env::var("VS_SODA_SCALE_ROWS").map_or(560, |r| {
        r.parse().expect("VS_SODA_SCALE_ROWS: a number of rows")
    });
    let minutes_apart = 70 * 24 * 60 / rows;
    let largest = *sizes.iter().max().expect("at least one size");
    prepare_server(server, largest);
    let setup = Instant::now();
    build_tables(server, "bench", largest, false, rows, minutes_apart);
    println!(
        "setup: {largest} tables x {rows} rows (70 days, a row every {minutes_apart} minutes), \
         no index, in {:.1}s",
        setup.elapsed().as_secs_f64()
    );
    let side = ServerSide::new(server);
    // Soda is not run here.
    let no_soda = Soda {
        executable: PathBuf::new(),
        work: tempfile::tempdir().expect("temp dir"),
    };
    let bench = Bench {
        server,
        side: &side,
        soda: &no_soda,
        work: tempfile::tempdir().expect("temp dir"),
    };
    println!(
        "{:>6}  {:<12} {:>8} {:>16} {:>10}",
        "tables", "poll", "wall s", "server ms/table", "KB/table"
    );
    for &tables in &sizes {
        let config = bench.config("bench", tables, THREE_CHECKS);
        let dir = bench.fresh_dir(&format!("scale-{tables}"));
        for poll in ["first", "second", "third"] {
            let run = bench.dataward(&config, &dir);
            println!(
                "{:>6}  {:<12} {:>8.2} {:>16.2} {:>10.2}",
                tables,
                poll,
                run.wall.as_secs_f64(),
                run.server_cpu.as_secs_f64() * 1000.0 / tables as f64,
                state_bytes(&dir) as f64 / 1024.0 / tables as f64,
            );
        }
    }
}

/// `VS_SODA_STEADY=1`: dataward alone (three checks, then five) on the tables,
/// without and with an index on loaded_at: the server's CPU per table of a first poll
/// and of each of [`STEADY_POLLS`] later ones, taken in turn on the two schemas, and
/// the state per table after them.
fn steady(server: &pg::PgServer, sizes: &[usize]) {
    let largest = *sizes.iter().max().expect("at least one size");
    prepare_server(server, largest);
    let setup = Instant::now();
    build_tables(server, "bench", largest, false, ROWS, 3);
    build_tables(server, "bench_ix", largest, true, ROWS, 3);
    println!(
        "setup: {largest} tables x {ROWS} rows (70 days, a row every 3 minutes), without and with \
         an index on loaded_at, in {:.1}s",
        setup.elapsed().as_secs_f64()
    );
    let side = ServerSide::new(server);
    let no_soda = Soda {
        executable: PathBuf::new(),
        work: tempfile::tempdir().expect("temp dir"),
    };
    let bench = Bench {
        server,
        side: &side,
        soda: &no_soda,
        work: tempfile::tempdir().expect("temp dir"),
    };
    let ms = |run: &Run, tables: usize| run.server_cpu.as_secs_f64() * 1000.0 / tables as f64;
    for &tables in sizes {
        for checks in [THREE_CHECKS, FIVE_CHECKS] {
            let runs: Vec<(&str, PathBuf, PathBuf)> =
                [("no index", "bench"), ("index", "bench_ix")]
                    .iter()
                    .map(|&(label, schema)| {
                        let dir =
                            bench.fresh_dir(&format!("steady-{schema}-{tables}-{}", checks.len()));
                        (label, bench.config(schema, tables, checks), dir)
                    })
                    .collect();
            let mut polls: Vec<Vec<String>> = vec![Vec::new(); runs.len()];
            for poll in 0..=STEADY_POLLS {
                for (i, (_, config, dir)) in runs.iter().enumerate() {
                    let run = bench.dataward(config, dir);
                    assert_eq!(run.errors, 0, "a check failed");
                    let figure = format!("{:.2}", ms(&run, tables));
                    polls[i].push(if poll == 0 {
                        format!("first {figure}")
                    } else {
                        figure
                    });
                }
            }
            for (i, (label, _, dir)) in runs.iter().enumerate() {
                println!(
                    "{tables:>6} tables, {} checks, {label:<8}: server ms/table {}; state {:.1} KB/table",
                    checks.len(),
                    polls[i].join(", "),
                    state_bytes(dir) as f64 / 1024.0 / tables as f64
                );
            }
        }
    }
}

/// The later polls `VS_SODA_STEADY` times after the first.
const STEADY_POLLS: usize = 4;

/// One template table copied per table by two connections at once; with `index`, an
/// index on loaded_at for each copy.
fn build_tables(
    server: &pg::PgServer,
    schema: &str,
    tables: usize,
    index: bool,
    rows: usize,
    minutes_apart: usize,
) {
    let last = rows - 1;
    server.execute(&format!(
        "CREATE SCHEMA {schema};
         CREATE TABLE public.t30_template AS
           SELECT n::bigint AS id,
                  CASE WHEN n % 10 = 0 THEN NULL
                       ELSE round((random() * 1000)::numeric, 2) END AS amount,
                  'row ' || n AS note,
                  date_trunc('minute', now()) - n * interval '{minutes_apart} minutes' AS loaded_at
           -- Oldest first, as rows that arrived over 70 days lie in the file.
           FROM generate_series({last}, 0, -1) n;"
    ));
    std::thread::scope(|scope| {
        for worker in 0..2 {
            scope.spawn(move || {
                let mut client = server.client();
                let mine: Vec<usize> = (1..=tables).filter(|i| i % 2 == worker).collect();
                for chunk in mine.chunks(50) {
                    let sql: String = chunk
                        .iter()
                        .map(|i| {
                            let index = if index {
                                format!("CREATE INDEX ON {schema}.t{i} (loaded_at);\n")
                            } else {
                                String::new()
                            };
                            format!(
                                "CREATE TABLE {schema}.t{i} AS SELECT * FROM public.t30_template;\n{index}"
                            )
                        })
                        .collect();
                    client.batch_execute(&sql).expect("create bench tables");
                }
            });
        }
    });
    server.execute("DROP TABLE public.t30_template");
    // Hint bits and the visibility map set now, or the first tool to read a table pays
    // for writing them; the checkpoint keeps that flush out of the first run too.
    server.execute("VACUUM (FREEZE, ANALYZE)");
    server.execute("CHECKPOINT");
}
