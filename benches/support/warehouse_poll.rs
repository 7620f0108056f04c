//! What the warehouse benchmarks share: the monitors of N tables, a first and a warm
//! poll with their figures, and a process's peak memory.

#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

use dataward::config::Config;
use dataward::monitor::poller::{Poller, SharedWarehouse};
use dataward::monitor::Health;
use dataward::warehouse::Limit;

pub const TABLES: usize = 200;
pub const ROWS: usize = 2000;
pub const CONCURRENCY: usize = 4;
/// The poller's default check_timeout, and the limit each statement runs under, as
/// `warehouse::open` gives it.
pub const TIMEOUT: Duration = Duration::from_secs(30);

pub fn limit(warehouse: &str) -> Limit {
    Limit {
        warehouse: warehouse.to_string(),
        timeout: TIMEOUT,
    }
}

/// `[[monitor]]` sections for tables `<schema>.t1` .. `t<TABLES>`, each with every
/// check a table has: row_count, freshness, null_rate, volume and schema.
pub fn monitors_toml(warehouse: &str, schema: &str) -> String {
    let mut toml = String::new();
    for i in 1..=TABLES {
        toml.push_str(&format!(
            "\n[[monitor]]\nwarehouse = \"{warehouse}\"\ntable = \"{schema}.t{i}\"\n\
             checks = [\"row_count\", \"freshness\", \"null_rate\", \"volume\", \"schema\"]\n\
             timestamp_column = \"loaded_at\"\nnull_columns = [\"email\"]\n"
        ));
    }
    toml
}

/// What one warehouse call costs, as each figure counts it.
pub struct Counters<'a> {
    /// What is counted, e.g. "warehouse calls (each opens the file)".
    pub what: &'a str,
    pub count: &'a dyn Fn() -> u64,
}

/// A first poll (the driver loaded, nothing stored yet) and a warm one, each with its
/// wall time, checks, what each counter counted during it, and unhealthy checks.
pub fn first_and_warm_poll(
    dir: &Path,
    config_text: &str,
    name: &str,
    warehouse: SharedWarehouse,
    counters: &[Counters],
) {
    let config = Config::parse(config_text, &dir.join("bench.toml")).unwrap();
    let mut poller = Poller::new().unwrap();
    let at_once = match warehouse.calls_at_once() {
        Some(n) if n < CONCURRENCY => format!(
            "the poller sends {n} call at a time (the warehouse runs its calls one after \
             another)"
        ),
        _ => format!("the poller sends up to {CONCURRENCY} calls at once"),
    };
    poller.add_warehouse(name, warehouse, CONCURRENCY, TIMEOUT);
    let state = dataward::store::open(&dir.join("state.db")).unwrap();
    println!("concurrency {CONCURRENCY} asked; {at_once}");
    for run in [
        "first poll (loads the driver, opens the warehouse)",
        "warm poll",
    ] {
        let before: Vec<u64> = counters.iter().map(|c| (c.count)()).collect();
        let started = Instant::now();
        let (observations, costs, _) = poller
            .poll_explained(&state, &config.monitor, chrono::Utc::now())
            .unwrap();
        let wall = started.elapsed();
        let unhealthy: Vec<_> = observations
            .iter()
            .filter(|o| o.health != Health::Ok)
            .collect();
        let counted: Vec<String> = counters
            .iter()
            .zip(before)
            .map(|(c, before)| format!("{} {}", (c.count)() - before, c.what))
            .collect();
        let sent: Vec<String> = costs.iter().map(|c| c.summary()).collect();
        println!(
            "{run}: {:.2}s wall, {} checks, {}, {} unhealthy; its query log: {}",
            wall.as_secs_f64(),
            observations.len(),
            counted.join(", "),
            unhealthy.len(),
            sent.join("; ")
        );
        if let Some(first) = unhealthy.first() {
            println!(
                "  first unhealthy: {} {:?}: {}",
                first.monitor,
                first.check,
                first.detail.message.as_deref().unwrap_or("(no message)")
            );
        }
    }
    poller.shut_down();
}

/// A process's peak resident memory (VmHWM), `self` or a pid.
pub fn peak_memory(process: &str) -> String {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}
