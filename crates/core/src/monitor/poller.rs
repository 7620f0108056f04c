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
//! Measurements run concurrently ([`Poller::read`]); judging and storing them happens
//! afterwards ([`PollRead::store`]) on the thread that owns the state database.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::checks::{column_names, from_counts, measure, table_columns, Measurement, Windows};
use super::minutes::{self, Plan};
use super::older_days;
use super::{judge, Observation};
use crate::config::{parse_duration, CheckKind, Config, MonitorConfig};
use crate::store::{Store, Transact};
use crate::warehouse::query_log::{self, Budget, Log};
use crate::warehouse::{self, Column, Relation, TableCounts, TableScan, Warehouse, WarehouseError};

pub const DEFAULT_CONCURRENCY: usize = 4;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_BACKOFF: Duration = Duration::from_secs(5);
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

pub type SharedWarehouse = Arc<dyn Warehouse + Sync>;

struct Slot {
    /// The warehouse's name in the config, for the errors.
    name: String,
    warehouse: SharedWarehouse,
    permits: Arc<Semaphore>,
    timeout: Duration,
    backoff: Arc<Mutex<Backoff>>,
    /// `max_queries_per_poll`: statements past it in one poll are not sent.
    max_queries: Option<u64>,
}

/// What one poll sent one warehouse, call by call, and its guard.
struct Spending {
    budget: Option<Arc<Budget>>,
    logs: Mutex<Vec<(Sender, Log)>>,
}

/// Who in a poll sent a warehouse its statements.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sender {
    /// The session itself: opened for the poll's calls and closed after them.
    Session,
    /// The catalog, once per schema (None: the default one), for these tables.
    Catalog {
        schema: Option<String>,
        tables: Vec<String>,
    },
    /// A monitor's table read, by the monitor's place in the poll.
    Monitor(usize),
}

pub use crate::warehouse::query_log::PollCost;

/// The statements one sender sent, for `check --explain`.
#[derive(Debug, Clone)]
pub struct Explained {
    pub warehouse: String,
    pub sender: Sender,
    pub log: Log,
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

    fn record(&mut self, error: Option<&WarehouseError>, now: Instant) {
        match error {
            Some(WarehouseError::Unreachable(message)) => {
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
            // Not sent: says nothing of the warehouse either way.
            Some(WarehouseError::Skipped(_)) => {}
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
    progress: Option<Progress>,
    /// When each table's job last built it, where the config says (dbt's run results).
    builds: Option<super::builds::Builds>,
}

/// Told (tables read, tables to read) as each table of a first poll is read (none of
/// its monitors judged before): a long first poll shows how far it got.
pub type Progress = Arc<dyn Fn(usize, usize) + Send + Sync>;

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
            progress: None,
            builds: None,
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
            poller.set_max_queries(name, wh.max_queries_per_poll);
        }
        poller.builds = super::builds::Builds::from_config(config);
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
        let concurrency = match warehouse.calls_at_once() {
            Some(at_once) => concurrency.min(at_once),
            None => concurrency,
        };
        self.warehouses.insert(
            name.to_string(),
            Slot {
                name: name.to_string(),
                warehouse,
                // Semaphore::new panics above MAX_PERMITS; the config allows far less.
                permits: Arc::new(Semaphore::new(concurrency.clamp(1, Semaphore::MAX_PERMITS))),
                timeout,
                backoff: Arc::new(Mutex::new(backoff)),
                max_queries: None,
            },
        );
    }

    /// Caps the statements one poll sends `name` (see [`Budget`]).
    pub fn set_max_queries(&mut self, name: &str, max: Option<u64>) {
        if let Some(slot) = self.warehouses.get_mut(name) {
            slot.max_queries = max;
        }
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

    /// Who hears of each table read in the first poll to come (None: nobody).
    pub fn set_progress(&mut self, progress: Option<Progress>) {
        self.progress = progress;
    }

    /// Lets go of the poller without waiting for checks still running: a check
    /// abandoned at its timeout may stay blocked in the warehouse (until its statement
    /// timeout), and dropping the runtime would wait for it.
    pub fn shut_down(self) {
        self.runtime.shutdown_background();
    }

    /// Reads every monitor's table concurrently (the catalog once per schema, each
    /// table once for all its checks), then judges and stores each check's result in
    /// the state database. Observations come back in config order.
    pub fn poll(
        &self,
        state: &dyn Store,
        monitors: &[MonitorConfig],
        now: DateTime<Utc>,
    ) -> Result<Vec<Observation>> {
        self.read(state, monitors, now)?.store(state)
    }

    /// [`Poller::poll`], with what it cost each warehouse and every statement it sent.
    pub fn poll_explained(
        &self,
        state: &dyn Store,
        monitors: &[MonitorConfig],
        now: DateTime<Utc>,
    ) -> Result<(Vec<Observation>, Vec<PollCost>, Vec<Explained>)> {
        let read = self.read(state, monitors, now)?;
        let (cost, explained) = (read.cost(), read.explained());
        Ok((read.store(state)?, cost, explained))
    }

    /// The reading half of [`Poller::poll`]: `state` is only read (for the minutes
    /// already stored), so a connection that cannot write will do. What was read is
    /// judged and stored by [`PollRead::store`], on whichever connection writes.
    pub fn read(
        &self,
        state: &dyn Store,
        monitors: &[MonitorConfig],
        now: DateTime<Utc>,
    ) -> Result<PollRead> {
        crate::blocking::outside_world("a warehouse");
        let plans = monitors
            .iter()
            .map(|m| minutes_plan(state, m, now))
            .collect::<Result<Vec<_>>>()?;
        // A fresh budget each poll: the guard stops one poll, never the next.
        let spending: BTreeMap<String, Arc<Spending>> = self
            .warehouses
            .iter()
            .map(|(name, slot)| {
                let spending = Spending {
                    budget: slot.max_queries.map(|max| {
                        Budget::new(max, &format!("warehouse.{name}.max_queries_per_poll"))
                    }),
                    logs: Mutex::new(Vec::new()),
                };
                slot.warehouse.begin_poll();
                (name.clone(), Arc::new(spending))
            })
            .collect();
        // Progress is for a first poll only: once the state database holds a verdict
        // of any of these monitors (a second `check --once`, an engine restarted), a
        // slow poll is not a first one.
        let progress = match &self.progress {
            Some(progress) if first_poll(state, monitors)? => Some(progress.clone()),
            _ => None,
        };
        let reads = self
            .runtime
            .block_on(self.read_all(monitors, plans, now, &spending, progress));
        // Closed however the reads ended; never held back by the guard (a session
        // left open would keep a DuckDB file from its writers).
        for (name, slot) in &self.warehouses {
            let ((), log) = query_log::capture(None, || slot.warehouse.end_poll());
            spending[name]
                .logs
                .lock()
                .expect("spending lock")
                .push((Sender::Session, log));
        }
        let spent = spending
            .into_iter()
            .map(|(name, spending)| {
                let logs = std::mem::take(&mut *spending.logs.lock().expect("spending lock"));
                let guard = self.warehouses[&name].max_queries;
                let reached = spending.budget.as_ref().is_some_and(|b| b.spent());
                (name, (logs, guard, reached))
            })
            .collect();
        if let Some(builds) = &self.builds {
            builds.refresh();
        }
        let built = monitors
            .iter()
            .map(|m| self.builds.as_ref()?.latest(&m.table))
            .collect();
        Ok(PollRead {
            monitors: monitors.to_vec(),
            reads,
            built,
            now,
            spent,
        })
    }

    async fn read_all(
        &self,
        monitors: &[MonitorConfig],
        plans: Vec<Option<Plan>>,
        now: DateTime<Utc>,
        spending: &BTreeMap<String, Arc<Spending>>,
        progress: Option<Progress>,
    ) -> Vec<MonitorRead> {
        let catalog = self.read_catalog(monitors, spending).await;
        let mut tasks = Vec::new();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let total = monitors
            .iter()
            .filter(|m| reads_rows(m) && Relation::parse(&m.table).is_ok())
            .filter(|m| self.warehouses.contains_key(&m.warehouse))
            .count();
        for (index, (monitor, plan)) in monitors.iter().zip(plans).enumerate() {
            let relation = Relation::parse(&monitor.table);
            let columns = relation.as_ref().ok().and_then(|relation| {
                wants_columns(monitor).then(|| {
                    catalog
                        .get(&(monitor.warehouse.clone(), relation.schema.clone()))
                        .and_then(|tables| tables.get(&relation.table))
                        .cloned()
                        .unwrap_or_else(|| Err(not_configured(monitor)))
                })
            });
            let table = match (relation, self.warehouses.get(&monitor.warehouse)) {
                _ if !reads_rows(monitor) => None,
                (Err(e), _) => Some(tokio::spawn(async move { Err(e) })),
                (Ok(_), None) => {
                    let error = not_configured(monitor);
                    Some(tokio::spawn(async move { Err(error) }))
                }
                (Ok(relation), Some(slot)) => {
                    let null_names = match (&monitor.null_columns, &columns) {
                        _ if !monitor.checks.contains(&CheckKind::NullRate) => Ok(Vec::new()),
                        (Some(names), _) => Ok(names.clone()),
                        (None, Some(Ok(columns))) => column_names(columns.clone(), &relation),
                        (None, Some(Err(e))) => Err(e.clone()),
                        (None, None) => Ok(Vec::new()),
                    };
                    let warehouse = slot.warehouse.clone();
                    let monitor = monitor.clone();
                    let spent = (spending[&monitor.warehouse].clone(), Sender::Monitor(index));
                    let read = slot.run(spent, move || {
                        read_table(
                            warehouse.as_ref(),
                            &monitor,
                            &relation,
                            null_names,
                            plan,
                            now,
                        )
                    });
                    let progress = progress.clone();
                    let (done, total) = (done.clone(), total);
                    Some(tokio::spawn(async move {
                        let read = read.await;
                        let done = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        if let Some(progress) = progress {
                            progress(done, total);
                        }
                        read
                    }))
                }
            };
            tasks.push((columns, table));
        }
        let mut reads = Vec::with_capacity(tasks.len());
        for (columns, table) in tasks {
            let table = match table {
                Some(task) => Some(task.await.unwrap_or_else(|e| Err(crashed(e)))),
                None => None,
            };
            reads.push(MonitorRead { columns, table });
        }
        reads
    }

    /// The columns of every table a schema or null_rate check needs: one catalog query
    /// per warehouse and schema.
    async fn read_catalog(
        &self,
        monitors: &[MonitorConfig],
        spending: &BTreeMap<String, Arc<Spending>>,
    ) -> Catalog {
        let mut wanted: BTreeMap<(String, Option<String>), Vec<String>> = BTreeMap::new();
        for monitor in monitors.iter().filter(|m| wants_columns(m)) {
            if let Ok(relation) = Relation::parse(&monitor.table) {
                let tables = wanted
                    .entry((monitor.warehouse.clone(), relation.schema))
                    .or_default();
                if !tables.contains(&relation.table) {
                    tables.push(relation.table);
                }
            }
        }
        let mut tasks = Vec::new();
        for ((name, schema), tables) in wanted {
            let Some(slot) = self.warehouses.get(&name) else {
                continue;
            };
            let warehouse = slot.warehouse.clone();
            let (asked_schema, asked) = (schema.clone(), tables.clone());
            let sender = Sender::Catalog {
                schema: schema.clone(),
                tables: tables.clone(),
            };
            let task = tokio::spawn(slot.run((spending[&name].clone(), sender), move || {
                warehouse.columns_of(asked_schema.as_deref(), &asked)
            }));
            tasks.push(((name, schema), tables, task));
        }
        let mut catalog = Catalog::new();
        for (key, tables, task) in tasks {
            let found = task.await.unwrap_or_else(|e| Err(crashed(e)));
            let entry = catalog.entry(key).or_default();
            for (i, table) in tables.into_iter().enumerate() {
                let columns = match &found {
                    Ok(all) => Ok(all.get(i).cloned().unwrap_or_default()),
                    Err(e) => Err(e.clone()),
                };
                entry.insert(table, columns);
            }
        }
        catalog
    }
}

/// What one poll read from the warehouses, not yet judged or stored. The poll task
/// reads; the engine, the one writer to the state database, stores.
pub struct PollRead {
    monitors: Vec<MonitorConfig>,
    reads: Vec<MonitorRead>,
    /// By monitor: its table's latest build by its job, when one is known.
    built: Vec<Option<super::builds::Build>>,
    now: DateTime<Utc>,
    /// By warehouse: what each sender sent, the guard, and whether it stopped a statement.
    spent: BTreeMap<String, Spent>,
}

/// What a poll sent one warehouse, sender by sender; its `max_queries_per_poll`; and
/// whether that stopped a statement.
type Spent = (Vec<(Sender, Log)>, Option<u64>, bool);

impl std::fmt::Debug for PollRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollRead")
            .field("monitors", &self.monitors.len())
            .field("now", &self.now)
            .finish()
    }
}

impl PollRead {
    /// What the poll cost each warehouse it polled, by name.
    pub fn cost(&self) -> Vec<PollCost> {
        self.spent
            .iter()
            .map(|(name, (logs, guard, reached))| {
                let mut all = Log::default();
                for (_, log) in logs {
                    all.extend(log.clone());
                }
                PollCost {
                    warehouse: name.clone(),
                    queries: all.sent.len() as u64,
                    sessions: all.sessions,
                    scanned_bytes: all.scanned_bytes(),
                    max_queries_per_poll: *guard,
                    guard_reached: *reached,
                }
            })
            .collect()
    }

    /// Every statement the poll sent, by warehouse, then sender (the session, the
    /// catalog, each monitor in the poll's order), each sender's in the order sent.
    pub fn explained(&self) -> Vec<Explained> {
        let mut out = Vec::new();
        for (name, (logs, _, _)) in &self.spent {
            let mut by_sender: BTreeMap<Sender, Log> = BTreeMap::new();
            for (sender, log) in logs {
                by_sender
                    .entry(sender.clone())
                    .or_default()
                    .extend(log.clone());
            }
            out.extend(
                by_sender
                    .into_iter()
                    .filter(|(_, log)| !log.sent.is_empty() || log.sessions > 0)
                    .map(|(sender, log)| Explained {
                        warehouse: name.clone(),
                        sender,
                        log,
                    }),
            );
        }
        out
    }

    /// The monitors polled, in the poll's order ([`Sender::Monitor`] indexes them).
    pub fn monitors(&self) -> &[MonitorConfig] {
        &self.monitors
    }

    /// Judges each check's result against what is stored and stores it, with the
    /// minutes read, in one transaction on `state`. Observations in config order.
    pub fn store(self, state: &dyn Store) -> Result<Vec<Observation>> {
        let at = crate::clock::Timestamp::from_utc(self.now);
        // One transaction for the whole poll: with synchronous=FULL, a commit per
        // observation would cost thousands of fsyncs on a large estate. IMMEDIATE
        // because judging reads history before it writes.
        let observations = state.transact(|tx| {
            let mut observations = Vec::new();
            for ((monitor, read), built) in self.monitors.iter().zip(self.reads).zip(&self.built) {
                let built = built.as_ref();
                for (check, measured) in read.measurements(tx, monitor, self.now, built)? {
                    observations.extend(judge(tx, monitor, check, at, built, measured)?);
                }
            }
            Ok(observations)
        })?;
        Ok(observations)
    }
}

/// Tables' columns by (warehouse, schema) and table.
type Catalog =
    BTreeMap<(String, Option<String>), BTreeMap<String, Result<Vec<Column>, WarehouseError>>>;

impl Slot {
    /// `work` on a blocking thread within the warehouse's concurrency, timeout and
    /// backoff, what it sends recorded for its sender and held to the poll's budget.
    fn run<T: Send + 'static>(
        &self,
        (spending, sender): (Arc<Spending>, Sender),
        work: impl FnOnce() -> Result<T, WarehouseError> + Send + 'static,
    ) -> impl std::future::Future<Output = Result<T, WarehouseError>> + Send + 'static {
        let (permits, timeout, backoff) =
            (self.permits.clone(), self.timeout, self.backoff.clone());
        let name = self.name.clone();
        async move {
            if let Some(error) = backoff
                .lock()
                .expect("backoff lock")
                .blocked(Instant::now())
            {
                return Err(error);
            }
            let permit = permits.acquire_owned().await.expect("never closed");
            // While this waited, another read may have found the warehouse down.
            if let Some(error) = backoff
                .lock()
                .expect("backoff lock")
                .blocked(Instant::now())
            {
                return Err(error);
            }
            let work = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let (result, log) = query_log::capture(spending.budget.clone(), work);
                spending
                    .logs
                    .lock()
                    .expect("spending lock")
                    .push((sender, log));
                result
            });
            let result = match tokio::time::timeout(timeout, work).await {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => Err(crashed(e)),
                // A read that runs too long (a locked table, a slow scan) failed on its
                // own: the warehouse answered its connection, so this is never
                // "unreachable".
                Err(_) => Err(WarehouseError::Query(format!(
                    "timed out: no answer from warehouse {name:?} within {}s (its \
                     check_timeout)",
                    timeout.as_secs_f64()
                ))),
            };
            backoff
                .lock()
                .expect("backoff lock")
                .record(result.as_ref().err(), Instant::now());
            result
        }
    }
}

fn crashed(e: tokio::task::JoinError) -> WarehouseError {
    WarehouseError::Query(format!("the check crashed: {e}"))
}

fn not_configured(monitor: &MonitorConfig) -> WarehouseError {
    WarehouseError::Unreachable(format!(
        "warehouse {:?} is not configured",
        monitor.warehouse
    ))
}

/// Whether no monitor of `monitors` has a verdict stored yet.
fn first_poll(state: &dyn Store, monitors: &[MonitorConfig]) -> Result<bool> {
    let judged = super::latest_all(state)?;
    Ok(!monitors.iter().any(|m| {
        let name = Config::monitor_name(m);
        judged.iter().any(|o| o.monitor == name)
    }))
}

/// The schema check reads the catalog, and so does null_rate without `null_columns`.
fn wants_columns(monitor: &MonitorConfig) -> bool {
    monitor.checks.iter().any(|&check| {
        check == CheckKind::Schema
            || (check == CheckKind::NullRate && monitor.null_columns.is_none())
    })
}

fn reads_rows(monitor: &MonitorConfig) -> bool {
    monitor
        .checks
        .iter()
        .any(|&check| check != CheckKind::Schema)
}

/// The minutes freshness and volume read this poll, from what is stored of them.
fn minutes_plan(
    state: &dyn Store,
    monitor: &MonitorConfig,
    now: DateTime<Utc>,
) -> Result<Option<Plan>> {
    // Row count and null rate learn their baselines from the table's days too.
    let (true, Some(column)) = (
        monitor.checks.iter().any(|&c| {
            c.needs_timestamp_column() || matches!(c, CheckKind::NullRate | CheckKind::RowCount)
        }),
        monitor.timestamp_column.as_deref(),
    ) else {
        return Ok(None);
    };
    let windows = Windows::of(monitor, now);
    let plan = minutes::plan(
        state,
        &Config::monitor_name(monitor),
        &monitor.table,
        column,
        windows.lookback_since,
        monitor.reread_days.unwrap_or(minutes::DEFAULT_REREAD_DAYS),
        now,
    )?;
    Ok(Some(plan))
}

/// What one poll read for a monitor.
struct MonitorRead {
    /// The table's columns from the catalog, when a check needs them.
    columns: Option<Result<Vec<Column>, WarehouseError>>,
    /// The table's rows, when a check reads them.
    table: Option<Result<TableRead, WarehouseError>>,
}

enum TableRead {
    /// The one read for every check: its counts, the columns whose nulls it counted
    /// (or why they are unknown), how it read the minutes, and the load times older
    /// than the minutes read.
    Once {
        counts: TableCounts,
        null_names: Result<Vec<String>, WarehouseError>,
        plan: Option<Box<(Plan, minutes::Older)>>,
    },
    /// That read failed as a query: each check ran its own, so each reports its own
    /// error (a misspelt null column fails null_rate, not the row count).
    Separately(Vec<(CheckKind, Result<Measurement, WarehouseError>)>),
}

/// Reads a monitor's table once for all its checks. When freshness needs load times
/// older than the minutes read and those kept no longer hold (or none are kept), the
/// warehouse's own load-times query reads them.
fn read_table(
    warehouse: &(dyn Warehouse + Sync),
    monitor: &MonitorConfig,
    relation: &Relation,
    null_names: Result<Vec<String>, WarehouseError>,
    plan: Option<Plan>,
    now: DateTime<Utc>,
) -> Result<TableRead, WarehouseError> {
    let windows = Windows::of(monitor, now);
    let names = null_names.as_deref().unwrap_or(&[]);
    let scan = TableScan {
        relation,
        null_columns: names,
        // No columns, no window to test each row against.
        nulls_since: windows
            .nulls_since
            .as_ref()
            .filter(|_| !names.is_empty())
            .map(|(column, at)| (column.as_str(), *at)),
        minutes: plan.as_ref().map(Plan::window),
    };
    // Read before the rows, so a write between the two is counted against the next
    // poll's read (see older_days). A warehouse that cannot say: the whole table.
    let marks = plan.as_ref().and_then(|plan| {
        warehouse
            .change_marks(relation, &plan.column)
            .ok()
            .flatten()
    });
    let read = || -> Result<TableCounts, WarehouseError> {
        if let (Some(plan), Some(marks)) = (plan.as_ref(), marks) {
            if let Some(counts) = older_days::read_recent(warehouse, &scan, plan, marks)? {
                return Ok(counts);
            }
        }
        warehouse.scan(&scan)
    };
    let counts = read().and_then(|counts| {
        let Some(plan) = plan.as_ref() else {
            return Ok((counts, None));
        };
        let kept_days = marks.map(|marks| older_days::OlderDays::of(plan, &scan, &counts, marks));
        let plan = Plan {
            older_days: kept_days,
            ..plan.clone()
        };
        let older = if !monitor.checks.contains(&CheckKind::Freshness) {
            minutes::Older::unread(&plan)
        } else if let Some(kept) = plan.kept_older(&counts) {
            kept
        } else {
            let times =
                warehouse.load_times(relation, &plan.column, plan.since, minutes::LOAD_TIMES)?;
            plan.read_older(&times)
        };
        Ok((counts, Some(Box::new((plan, older)))))
    });
    match counts {
        Ok((counts, plan)) => Ok(TableRead::Once {
            counts,
            null_names,
            plan,
        }),
        Err(WarehouseError::Query(_)) => Ok(TableRead::Separately(
            monitor
                .checks
                .iter()
                .filter(|&&check| check != CheckKind::Schema)
                .map(|&check| (check, measure(warehouse, monitor, check, now)))
                .collect(),
        )),
        Err(e) => Err(e),
    }
}

impl MonitorRead {
    /// Each check's measurement, in the monitor's order. Stores the minutes read.
    fn measurements(
        self,
        state: &dyn Store,
        monitor: &MonitorConfig,
        now: DateTime<Utc>,
        built: Option<&super::builds::Build>,
    ) -> Result<Vec<(CheckKind, Result<Measurement, WarehouseError>)>> {
        let relation = Relation::parse(&monitor.table);
        let mut history = super::checks::History::default();
        if let Some(Ok(TableRead::Once {
            counts,
            plan: Some(read),
            ..
        })) = &self.table
        {
            let (plan, older) = read.as_ref();
            let name = Config::monitor_name(monitor);
            let days = minutes::days(counts, plan.cutoff);
            let load_times = minutes::store(state, &name, plan, counts, older)?;
            if let Some(kept) = &plan.older_days {
                older_days::store(state, &name, kept)?;
            }
            history = super::checks::History {
                rewritten: plan.rewritten(&days, now).map(|r| r.describe()),
                load_times,
                day_nulls: Some(minutes::day_nulls(counts, &days)),
                days,
            };
        }
        let mut separately = match &self.table {
            Some(Ok(TableRead::Separately(list))) => list.clone(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        for &check in &monitor.checks {
            let measured = match (check, &self.table) {
                (CheckKind::Schema, _) => match (&self.columns, &relation) {
                    (_, Err(e)) => Err(e.clone()),
                    (Some(Ok(columns)), Ok(relation)) => {
                        table_columns(columns.clone(), relation).map(Measurement::Columns)
                    }
                    (Some(Err(e)), _) => Err(e.clone()),
                    (None, Ok(_)) => Err(not_configured(monitor)),
                },
                (_, Some(Err(e))) => Err(e.clone()),
                (_, Some(Ok(TableRead::Separately(_)))) => {
                    let at = separately
                        .iter()
                        .position(|(c, _)| *c == check)
                        .expect("every check but schema was measured");
                    separately.remove(at).1
                }
                (
                    CheckKind::NullRate,
                    Some(Ok(TableRead::Once {
                        null_names: Err(e), ..
                    })),
                ) => Err(e.clone()),
                (
                    _,
                    Some(Ok(TableRead::Once {
                        counts, null_names, ..
                    })),
                ) => Ok(from_counts(
                    monitor,
                    check,
                    counts,
                    null_names.as_deref().unwrap_or(&[]),
                    &history,
                    match (check, built) {
                        // A row count's last day is the one before where the table's
                        // job has built it to; the rows of the days after are not
                        // there yet.
                        (CheckKind::RowCount, Some(build)) => {
                            let from = build.unbuilt_from(now.date_naive());
                            now.min(from.and_time(chrono::NaiveTime::MIN).and_utc())
                        }
                        _ => now,
                    },
                )
                .expect("not the schema check")),
                (_, None) => Err(not_configured(monitor)),
            };
            out.push((check, measured));
        }
        Ok(out)
    }
}
