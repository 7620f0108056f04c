//! One full poll of 200 DuckDB tables with row_count, freshness, null_rate, volume and
//! schema each, through DuckDB's ADBC driver (the library .ci/duckdb.sh installs, or
//! the folder in DATAWARD_DUCKDB_DIR). Prints wall time, the warehouse calls, the
//! statements the poll sent and the sessions it opened (its query log), and peak
//! memory, for a first poll and a warm one. Run with `cargo bench --bench duckdb`.

#[path = "support/warehouse_poll.rs"]
mod warehouse_poll;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dataward::monitor::poller::SharedWarehouse;
use dataward::warehouse::adbc;
use dataward::warehouse::duckdb::{DuckdbWarehouse, DRIVER};
use warehouse_poll::{Counters, ROWS, TABLES};

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

    let config = format!(
        "[warehouse.duck]\nkind = \"duckdb\"\npath = \"{}\"\ndriver = \"{}\"\n{}",
        file.display(),
        library.display(),
        warehouse_poll::monitors_toml("duck", "bench")
    );
    let warehouse = Arc::new(
        DuckdbWarehouse::new(file.to_str().unwrap(), Some(library.display().to_string()))
            .cancel_after(warehouse_poll::limit("duck")),
    );
    let calls = || warehouse.queries_issued();
    warehouse_poll::first_and_warm_poll(
        dir.path(),
        &config,
        "duck",
        warehouse.clone() as SharedWarehouse,
        &[Counters {
            what: "warehouse calls (each attaches the file)",
            count: &calls,
        }],
    );
    println!(
        "peak memory (this process, VmHWM): {}",
        warehouse_poll::peak_memory("self")
    );
}
