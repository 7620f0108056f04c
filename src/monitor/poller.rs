//! The poller: every check of every monitor as a tokio task, with bounded concurrency
//! per warehouse, a timeout per check, and backoff for a warehouse that is down.
//!
//! Checks run on blocking threads (the warehouse trait is synchronous) while a
//! semaphore per warehouse caps how many run against it at once; the permit travels
//! with the blocking work, so a check abandoned at its timeout still counts until it
//! really ends and a hung server is never flooded. Once a warehouse is found
//! unreachable (a connection attempt failed), its other checks fail fast until the
//! backoff expires: a down warehouse costs one connection timeout per backoff step, not
//! one per check, and the step doubles once per failed attempt, however many checks
//! saw it. A check that times out or fails its query says nothing about the warehouse.
//!
//! Measurements run concurrently; judging and storing them happens afterwards on the
//! caller's thread, which owns the state database.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::checks::{measure, Measurement};
use super::{judge, Observation};
use crate::config::{parse_duration, CheckKind, Config, MonitorConfig};
use crate::warehouse::{self, Warehouse, WarehouseError};

pub const DEFAULT_CONCURRENCY: usize = 4;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(5);
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

pub type SharedWarehouse = Arc<dyn Warehouse + Sync>;

struct Slot {
    warehouse: SharedWarehouse,
    permits: Arc<Semaphore>,
    timeout: Duration,
    backoff: Arc<Mutex<Backoff>>,
}

/// How long to leave a warehouse alone after it could not be reached.
#[derive(Debug)]
struct Backoff {
    base: Duration,
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

impl Backoff {
    fn blocked(&self, now: Instant) -> Option<WarehouseError> {
        let retry_at = self.retry_at?;
        (now < retry_at).then(|| {
            WarehouseError::Unreachable(format!(
                "{} (backing off; next try in {}s)",
                self.last_error,
                (retry_at - now).as_secs().max(1)
            ))
        })
    }

    fn record(&mut self, result: &Result<Measurement, WarehouseError>, now: Instant) {
        match result {
            Err(WarehouseError::Unreachable(message)) => {
                // Checks running together all find the same outage: count it once per
                // backoff step, or a short outage backs off for minutes after it ends.
                if self.retry_at.is_some_and(|at| now < at) {
                    return;
                }
                self.failures += 1;
                let step = self
                    .base
                    .saturating_mul(1 << self.failures.min(16).saturating_sub(1))
                    .min(MAX_BACKOFF);
                self.retry_at = Some(now + step);
                self.last_error = message.clone();
            }
            // A failing query says nothing about the warehouse being down.
            _ => {
                self.failures = 0;
                self.retry_at = None;
            }
        }
    }
}

pub struct Poller {
    runtime: tokio::runtime::Runtime,
    warehouses: BTreeMap<String, Slot>,
    backoff: Duration,
}

impl Poller {
    pub fn new() -> Result<Poller> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .thread_name("dataward-poller")
            .build()
            .context("cannot start the poller's runtime")?;
        Ok(Poller {
            runtime,
            warehouses: BTreeMap::new(),
            backoff: DEFAULT_BACKOFF,
        })
    }

    /// A poller for every warehouse in the config, with its concurrency and timeout.
    pub fn from_config(config: &Config) -> Result<Poller> {
        let mut poller = Poller::new()?;
        for (name, wh) in &config.warehouse {
            let timeout = match &wh.check_timeout {
                Some(text) => parse_duration(text)?,
                None => DEFAULT_TIMEOUT,
            };
            let warehouse = warehouse::open(config, name)?;
            poller.add_warehouse(
                name,
                Arc::from(warehouse),
                wh.max_concurrent.unwrap_or(DEFAULT_CONCURRENCY),
                timeout,
            );
        }
        Ok(poller)
    }

    pub fn add_warehouse(
        &mut self,
        name: &str,
        warehouse: SharedWarehouse,
        concurrency: usize,
        timeout: Duration,
    ) {
        let backoff = Backoff {
            base: self.backoff,
            failures: 0,
            retry_at: None,
            last_error: String::new(),
        };
        self.warehouses.insert(
            name.to_string(),
            Slot {
                warehouse,
                // Semaphore::new panics above MAX_PERMITS; the config allows far less.
                permits: Arc::new(Semaphore::new(concurrency.clamp(1, Semaphore::MAX_PERMITS))),
                timeout,
                backoff: Arc::new(Mutex::new(backoff)),
            },
        );
    }

    /// A configured warehouse, for the engine's own queries (verification dry runs).
    pub fn warehouse(&self, name: &str) -> Option<&SharedWarehouse> {
        self.warehouses.get(name).map(|slot| &slot.warehouse)
    }

    /// The first backoff step after a warehouse is found down (doubling up to five
    /// minutes). Applies to warehouses added after this call.
    pub fn set_backoff(&mut self, base: Duration) {
        self.backoff = base;
    }

    /// Lets go of the poller without waiting for checks still running: a check
    /// abandoned at its timeout may stay blocked in the warehouse (until its statement
    /// timeout), and dropping the runtime would wait for it.
    pub fn shut_down(self) {
        self.runtime.shutdown_background();
    }

    /// Measures every check of every monitor concurrently, then judges and stores each
    /// result in the state database. Observations come back in config order.
    pub fn poll(
        &self,
        state: &Connection,
        monitors: &[MonitorConfig],
        now: DateTime<Utc>,
    ) -> Result<Vec<Observation>> {
        let at = now.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let measured = self.runtime.block_on(self.measure_all(monitors, now));
        // One transaction for the whole poll: with synchronous=FULL, a commit per
        // observation would cost thousands of fsyncs on a large estate. IMMEDIATE
        // because judging reads history before it writes: on a connection of its own
        // (a `PollTask`) a deferred transaction whose snapshot the engine moved on
        // meanwhile could not upgrade to a write and the whole poll would be lost.
        let tx =
            rusqlite::Transaction::new_unchecked(state, rusqlite::TransactionBehavior::Immediate)?;
        let mut observations = Vec::new();
        for ((monitor, check), result) in checks_of(monitors).zip(measured) {
            observations.extend(judge(&tx, monitor, check, &at, result)?);
        }
        tx.commit()?;
        Ok(observations)
    }

    async fn measure_all(
        &self,
        monitors: &[MonitorConfig],
        now: DateTime<Utc>,
    ) -> Vec<Result<Measurement, WarehouseError>> {
        let mut tasks = Vec::new();
        for (monitor, check) in checks_of(monitors) {
            let Some(slot) = self.warehouses.get(&monitor.warehouse) else {
                let missing = WarehouseError::Unreachable(format!(
                    "warehouse {:?} is not configured",
                    monitor.warehouse
                ));
                tasks.push(tokio::spawn(async move { Err(missing) }));
                continue;
            };
            tasks.push(tokio::spawn(run_check(
                slot.warehouse.clone(),
                slot.permits.clone(),
                slot.timeout,
                slot.backoff.clone(),
                monitor.clone(),
                check,
                now,
            )));
        }
        let mut results = Vec::with_capacity(tasks.len());
        for task in tasks {
            results.push(
                task.await.unwrap_or_else(|e| {
                    Err(WarehouseError::Query(format!("the check crashed: {e}")))
                }),
            );
        }
        results
    }
}

fn checks_of(monitors: &[MonitorConfig]) -> impl Iterator<Item = (&MonitorConfig, CheckKind)> {
    monitors
        .iter()
        .flat_map(|m| m.checks.iter().map(move |&check| (m, check)))
}

async fn run_check(
    warehouse: SharedWarehouse,
    permits: Arc<Semaphore>,
    timeout: Duration,
    backoff: Arc<Mutex<Backoff>>,
    monitor: MonitorConfig,
    check: CheckKind,
    now: DateTime<Utc>,
) -> Result<Measurement, WarehouseError> {
    if let Some(error) = backoff
        .lock()
        .expect("backoff lock")
        .blocked(Instant::now())
    {
        return Err(error);
    }
    let permit = permits.acquire_owned().await.expect("never closed");
    // While this check queued, another may have found the warehouse down.
    if let Some(error) = backoff
        .lock()
        .expect("backoff lock")
        .blocked(Instant::now())
    {
        return Err(error);
    }
    let work = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        measure(warehouse.as_ref(), &monitor, check, now)
    });
    let result = match tokio::time::timeout(timeout, work).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(WarehouseError::Query(format!("the check crashed: {e}"))),
        // A check that runs too long (a locked table, a slow scan) failed on its own:
        // the warehouse answered its connection, so this is never "unreachable".
        Err(_) => Err(WarehouseError::Query(format!(
            "timed out: no answer within {}s",
            timeout.as_secs_f64()
        ))),
    };
    backoff
        .lock()
        .expect("backoff lock")
        .record(&result, Instant::now());
    result
}
