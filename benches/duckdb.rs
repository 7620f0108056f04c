//! One full poll of 200 DuckDB tables with row_count, freshness, null_rate, volume and
//! schema each, through DuckDB's ADBC driver (the library .ci/duckdb.sh installs, or
//! the folder in DATAWARD_DUCKDB_DIR). Prints wall time, the warehouse calls, the
//! statements the poll sent and the sessions it opened (its query log), and peak
//! memory. Run with `cargo bench --bench duckdb`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataward::config::Config;
use dataward::monitor::poller::{Poller, SharedWarehouse};
use dataward::monitor::Health;
use dataward::warehouse::adbc;
use dataward::warehouse::duckdb::{DuckdbWarehouse, DRIVER};

const TABLES: usize = 200;
const ROWS: usize = 2000;
const CONCURRENCY: usize = 4;

fn main() {
    let folder = PathBuf::from(
        std::env::var("DATAWARD_DUCKDB_DIR").unwrap_or_else(|_| "/opt/dataward/duckdb".into()),
    );
    let library = folder.join("libduckdb.so");
    if !library.is_file() {
        println!("skipped: no {} (run .ci/duckdb.sh)", library.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Not bench.duckdb: the setup opens the file by path, and its catalog would be
    // named like the schema.
    let file = dir.path().join("estate.duckdb");
    let setup = Instant::now();
    {
        let driver = adbc::load(library.to_str().unwrap(), &DRIVER).unwrap();
        let database = driver.open(&[("path", file.to_str().unwrap())]).unwrap();
        let mut session = database.connect().unwrap();
        session.execute("CREATE SCHEMA bench").unwrap();
        for i in 1..=TABLES {
            session
                .execute(&format!(
                    "CREATE TABLE bench.t{i} AS SELECT n AS id,
                        CASE WHEN n % 20 = 0 THEN NULL ELSE 'x' END AS email,
                        CAST(now() AS TIMESTAMP) - n * INTERVAL 1 HOUR AS loaded_at
                     FROM range(1, {ROWS} + 1) AS t(n)"
                ))
                .unwrap();
        }
    }
    println!(
        "setup: {TABLES} tables x {ROWS} rows in {:.1}s",
        setup.elapsed().as_secs_f64()
    );

    let mut toml = String::new();
    for i in 1..=TABLES {
        toml.push_str(&format!(
            "[[monitor]]\nwarehouse = \"duck\"\ntable = \"bench.t{i}\"\n\
             checks = [\"row_count\", \"freshness\", \"null_rate\", \"volume\", \"schema\"]\n\
             timestamp_column = \"loaded_at\"\nnull_columns = [\"email\"]\n"
        ));
    }
    let config_path = dir.path().join("bench.toml");
    let toml = format!(
        "[warehouse.duck]\nkind = \"duckdb\"\npath = \"{}\"\ndriver = \"{}\"\n{toml}",
        file.display(),
        library.display()
    );
    let config = Config::parse(&toml, Path::new(&config_path)).unwrap();
    let warehouse = Arc::new(DuckdbWarehouse::new(
        file.to_str().unwrap(),
        Some(library.display().to_string()),
    ));
    let mut poller = Poller::new().unwrap();
    poller.add_warehouse(
        "duck",
        warehouse.clone() as SharedWarehouse,
        CONCURRENCY,
        Duration::from_secs(30),
    );
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();
    println!(
        "concurrency {CONCURRENCY} per warehouse (calls run one at a time on one DuckDB file)"
    );
    for run in ["first poll (loads the driver)", "second poll"] {
        let before = warehouse.queries_issued();
        let started = Instant::now();
        let (observations, costs, _) = poller
            .poll_explained(&state, &config.monitor, chrono::Utc::now())
            .unwrap();
        let wall = started.elapsed();
        let unhealthy = observations
            .iter()
            .filter(|o| o.health != Health::Ok)
            .count();
        println!(
            "{run}: {:.2}s wall, {} checks, {} warehouse calls, {} unhealthy; sent: {}",
            wall.as_secs_f64(),
            observations.len(),
            warehouse.queries_issued() - before,
            unhealthy,
            costs
                .iter()
                .map(|c| c.summary())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    println!("peak memory (this process, VmHWM): {}", peak_memory());
}

fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}
