//! One full poll of 1,000 PostgreSQL tables with row_count, freshness and null_rate
//! each, on a server this benchmark starts. Prints wall time, queries issued and peak
//! memory. Run with `cargo bench --bench poll`.

#[path = "../tests/support/pg.rs"]
mod pg;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataward::config::Config;
use dataward::monitor::poller::{Poller, SharedWarehouse};
use dataward::monitor::Health;
use dataward::warehouse::postgres::PostgresWarehouse;

const TABLES: usize = 1000;
const ROWS: usize = 200;
const CONCURRENCY: usize = 4;

fn main() {
    let Some(server) = pg::start_or_skip("poll benchmark") else {
        return;
    };
    let setup = Instant::now();
    server.execute(&format!(
        "CREATE SCHEMA bench;
         DO $$ BEGIN FOR i IN 1..{TABLES} LOOP
           EXECUTE format('CREATE TABLE bench.%I (id int, email text, loaded_at timestamptz)', 't' || i);
           EXECUTE format('INSERT INTO bench.%I SELECT g, CASE WHEN g %% 20 = 0 THEN NULL ELSE ''x'' END,
                           now() - g * interval ''1 hour'' FROM generate_series(1, {ROWS}) g', 't' || i);
         END LOOP; END $$;"
    ));
    println!(
        "setup: {TABLES} tables x {ROWS} rows in {:.1}s",
        setup.elapsed().as_secs_f64()
    );

    let mut toml =
        String::from("[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n");
    for i in 1..=TABLES {
        toml.push_str(&format!(
            "[[monitor]]\nwarehouse = \"pg\"\ntable = \"bench.t{i}\"\n\
             checks = [\"row_count\", \"freshness\", \"null_rate\"]\n\
             timestamp_column = \"loaded_at\"\nnull_columns = [\"email\"]\n"
        ));
    }
    let config = Config::parse(&toml, Path::new("bench.toml")).unwrap();
    let warehouse = Arc::new(
        PostgresWarehouse::new(&server.url, CONCURRENCY, Duration::from_secs(30)).unwrap(),
    );
    let mut poller = Poller::new().unwrap();
    poller.add_warehouse(
        "pg",
        warehouse.clone() as SharedWarehouse,
        CONCURRENCY,
        Duration::from_secs(30),
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dataward::store::open(&dir.path().join("state.db")).unwrap();

    println!("concurrency {CONCURRENCY} per warehouse, 2 tokio workers");
    for run in ["first poll (connects)", "second poll (warm)"] {
        let before = warehouse.queries_issued();
        let started = Instant::now();
        let observations = poller
            .poll(&state, &config.monitor, chrono::Utc::now())
            .unwrap();
        let wall = started.elapsed();
        let unhealthy = observations
            .iter()
            .filter(|o| o.health != Health::Ok)
            .count();
        println!(
            "{run}: {:.2}s wall, {} checks, {} queries, {} unhealthy",
            wall.as_secs_f64(),
            observations.len(),
            warehouse.queries_issued() - before,
            unhealthy
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
