//! What a warehouse was sent: every statement, with the rows it returned and the bytes
//! it scanned where the warehouse itself reports them, and every session opened. One
//! mechanism for every backend: each records at the one place it sends (ADBC's
//! statements, SQLite's trace of its own statements, PostgreSQL's client calls), into
//! the log of whoever asked for the work on this thread ([`capture`]). The poller
//! captures each warehouse call of a poll, so `check --explain` shows the SQL each
//! check sent and `check --json` what the poll cost.
//!
//! The same place holds the per-poll guard ([`Budget`]): a statement past a
//! warehouse's `max_queries_per_poll` is not sent.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use super::WarehouseError;

/// One statement as it was sent.
/// What a poll cost one warehouse: `check --json` prints it, and the engine sends it to
/// the monitors pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PollCost {
    pub warehouse: String,
    /// Statements sent, session setup included.
    pub queries: u64,
    /// Sessions (connections) opened.
    pub sessions: u64,
    /// Bytes scanned, as the warehouse reported them; None: not reported.
    pub scanned_bytes: Option<u64>,
    /// The warehouse's `max_queries_per_poll`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_queries_per_poll: Option<u64>,
    /// Whether the guard stopped a statement: some checks were skipped.
    pub guard_reached: bool,
}

impl PollCost {
    /// "12 queries, 1 session, scanned not reported".
    pub fn summary(&self) -> String {
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let scanned = match self.scanned_bytes {
            Some(bytes) => format!("{bytes} bytes scanned"),
            None => "scanned not reported".to_string(),
        };
        let guard = match (self.guard_reached, self.max_queries_per_poll) {
            (true, Some(max)) => format!(", stopped at max_queries_per_poll = {max}"),
            _ => String::new(),
        };
        format!(
            "{}, {}, {scanned}{guard}",
            plural(self.queries, "query", "queries"),
            plural(self.sessions, "session", "sessions")
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sent {
    /// The SQL text, identifiers quoted as sent.
    pub sql: String,
    /// Rows the statement returned (0 for one that returns none).
    pub rows: u64,
    /// Bytes scanned, as the warehouse reports them for this statement; None when it
    /// does not report them.
    pub scanned_bytes: Option<u64>,
}

/// What a stretch of work sent, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    pub sent: Vec<Sent>,
    /// Sessions (connections) opened.
    pub sessions: u64,
}

impl Log {
    pub fn extend(&mut self, other: Log) {
        self.sent.extend(other.sent);
        self.sessions += other.sessions;
    }

    /// Bytes scanned by every statement, when the warehouse reported them for each;
    /// None when any statement's were not reported (a partial sum would understate).
    pub fn scanned_bytes(&self) -> Option<u64> {
        self.sent.iter().map(|s| s.scanned_bytes).sum()
    }
}

/// How many statements a warehouse may still be sent in one poll, shared by every
/// call of that poll to it.
#[derive(Debug)]
pub struct Budget {
    max: u64,
    sent: AtomicU64,
    /// Statements refused once the budget was spent.
    refused: AtomicU64,
    /// The setting, as the config names it, for the refusal's reason.
    setting: String,
}

impl Budget {
    pub fn new(max: u64, setting: &str) -> Arc<Budget> {
        Arc::new(Budget {
            max,
            sent: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            setting: setting.to_string(),
        })
    }

    /// Takes one statement from the budget, or refuses it.
    fn take(&self) -> Result<(), WarehouseError> {
        let taken = self
            .sent
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max).then_some(n + 1)
            });
        match taken {
            Ok(_) => Ok(()),
            Err(_) => {
                self.refused.fetch_add(1, Ordering::SeqCst);
                Err(WarehouseError::Skipped(format!(
                    "not sent: this poll already sent the {} queries {} allows; the \
                     next poll starts afresh",
                    self.max, self.setting
                )))
            }
        }
    }

    /// Whether any statement was refused.
    pub fn spent(&self) -> bool {
        self.refused.load(Ordering::SeqCst) > 0
    }
}

struct Capture {
    log: Log,
    budget: Option<Arc<Budget>>,
}

thread_local! {
    static CAPTURE: RefCell<Vec<Capture>> = const { RefCell::new(Vec::new()) };
}

/// Runs `work`, returning with its result what it sent on this thread; with a budget,
/// statements past it are refused ([`may_send`]). Captures nest: the innermost hears.
pub fn capture<T>(budget: Option<Arc<Budget>>, work: impl FnOnce() -> T) -> (T, Log) {
    CAPTURE.with(|c| {
        c.borrow_mut().push(Capture {
            log: Log::default(),
            budget,
        })
    });
    // Popped even when `work` panics, so a later capture on this thread is not fed
    // into a dead one.
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            CAPTURE.with(|c| c.borrow_mut().pop());
        }
    }
    let pop = Pop;
    let result = work();
    let log = CAPTURE.with(|c| {
        c.borrow_mut()
            .last_mut()
            .map(|c| std::mem::take(&mut c.log))
    });
    drop(pop);
    (result, log.unwrap_or_default())
}

fn with_current(f: impl FnOnce(&mut Capture)) {
    CAPTURE.with(|c| {
        if let Some(current) = c.borrow_mut().last_mut() {
            f(current)
        }
    })
}

/// Called by a backend before it sends a statement: refused once the poll's budget
/// for this warehouse is spent. Never on the engine's thread (see `crate::blocking`).
pub fn may_send() -> Result<(), WarehouseError> {
    crate::blocking::outside_world("a warehouse");
    let budget = CAPTURE.with(|c| c.borrow().last().and_then(|c| c.budget.clone()));
    match budget {
        Some(budget) => budget.take(),
        None => Ok(()),
    }
}

/// Runs `f` outside the poll's budget (still recorded): what ends a transaction or
/// closes a session is always sent, or a refused statement would leave it open.
pub fn unguarded<T>(f: impl FnOnce() -> T) -> T {
    let budget = CAPTURE.with(|c| c.borrow_mut().last_mut().and_then(|c| c.budget.take()));
    let result = f();
    CAPTURE.with(|c| {
        if let Some(current) = c.borrow_mut().last_mut() {
            current.budget = budget;
        }
    });
    result
}

/// Called by a backend once a statement was sent.
pub fn sent(sql: &str, rows: u64, scanned_bytes: Option<u64>) {
    with_current(|c| {
        c.log.sent.push(Sent {
            sql: sql.to_string(),
            rows,
            scanned_bytes,
        })
    });
}

/// Adds rows to the last statement recorded (a backend that hears of rows one by one).
pub fn add_rows(rows: u64) {
    with_current(|c| {
        if let Some(last) = c.log.sent.last_mut() {
            last.rows += rows;
        }
    });
}

/// Called by a backend when it opens a session (a connection) to the warehouse.
pub fn session_opened() {
    with_current(|c| c.log.sessions += 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the monitors pane and `check` word a poll's cost.
    #[test]
    fn a_poll_cost_says_what_it_cannot_know_and_where_the_guard_stopped() {
        let mut cost = PollCost {
            warehouse: "snow".into(),
            queries: 14,
            sessions: 1,
            scanned_bytes: None,
            max_queries_per_poll: Some(14),
            guard_reached: true,
        };
        assert_eq!(
            cost.summary(),
            "14 queries, 1 session, scanned not reported, stopped at max_queries_per_poll = 14"
        );
        cost.queries = 1;
        cost.sessions = 2;
        cost.scanned_bytes = Some(4096);
        cost.guard_reached = false;
        assert_eq!(cost.summary(), "1 query, 2 sessions, 4096 bytes scanned");
    }

    #[test]
    fn a_capture_hears_only_its_own_thread_and_nests() {
        let (_, outer) = capture(None, || {
            sent("SELECT 1", 1, None);
            let (_, inner) = capture(None, || sent("SELECT 2", 1, Some(10)));
            assert_eq!(inner.sent.len(), 1);
            std::thread::spawn(|| sent("SELECT 3", 1, None))
                .join()
                .unwrap();
            session_opened();
        });
        assert_eq!(outer.sent.len(), 1);
        assert_eq!(outer.sent[0].sql, "SELECT 1");
        assert_eq!(outer.sessions, 1);
        // Nothing listens: nothing is kept.
        sent("SELECT 4", 1, None);
    }

    #[test]
    fn scanned_bytes_are_summed_only_when_every_statement_reported_them() {
        let (_, log) = capture(None, || {
            sent("a", 1, Some(10));
            sent("b", 1, Some(5));
        });
        assert_eq!(log.scanned_bytes(), Some(15));
        let (_, log) = capture(None, || {
            sent("a", 1, Some(10));
            sent("b", 1, None);
        });
        assert_eq!(log.scanned_bytes(), None);
    }

    #[test]
    fn a_budget_refuses_past_its_maximum_across_captures() {
        let budget = Budget::new(2, "warehouse.w.max_queries_per_poll");
        let (results, _) = capture(Some(budget.clone()), || {
            (0..3).map(|_| may_send()).collect::<Vec<_>>()
        });
        assert!(results[0].is_ok() && results[1].is_ok());
        let error = results[2].clone().unwrap_err();
        assert!(matches!(error, WarehouseError::Skipped(_)), "{error}");
        assert!(error.message().contains("max_queries_per_poll"), "{error}");
        assert!(budget.spent());
        let again = capture(Some(budget), || {
            // What closes a session is sent even so, and recorded.
            assert!(unguarded(may_send).is_ok());
            sent("ROLLBACK", 0, None);
            may_send()
        });
        assert!(again.0.is_err());
        assert_eq!(again.1.sent.len(), 1);
    }
}
