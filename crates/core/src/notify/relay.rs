//! The relay: one thread per destination, each reading the state database's outbox on a
//! read-only connection of its own, sending that destination's rows oldest first. A row is sent only once
//! every row queued before it for the same destination is delivered or given up, so a
//! pager sees an incident opened before it sees it resolved. A fault, a 5xx or a 429
//! puts the row back with exponential backoff and jitter (or exactly the wait a
//! `Retry-After` asked for); a permanent refusal gives it up and shows why. Each thread
//! sleeps until its head row is due, or until the engine wakes it with new rows.
//!
//! A crash between the API's answer and the mark sends the row again at restart; where
//! the API dedups (PagerDuty's `dedup_key`, Opsgenie's and JSM's `alias`) that resend
//! lands on the same alert. The relay never writes the state database: what came of
//! each row (a [`Mark`]) goes to the engine, its one writer, which writes it as a
//! statement of its own and answers once it is committed.
//!
//! [`Carrier::step`] is one look at one destination at a given time: the threads call
//! it with the relay's clock (the engine's: the wall, or the demo's virtual one, whose
//! every move wakes them), tests with a clock of their own, so backoff is tested without
//! waiting for it.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};

use super::outbox::{Mark, Row};
use super::{read_secret, sender_for, AlertConfig, Sender, Verdict};
use crate::clock::Clock;
use crate::config::Config;
use crate::sanitize::Sanitized;
use crate::store::place::StatePlace;
use crate::store::prelude::*;
use crate::store::{is_busy, State};

/// How long to wait before retrying: `base`·2^(n−1) before the n-th retry, at most
/// `cap`, half of it fixed and half drawn at random ("equal jitter"), so relays that
/// failed together do not all come back in the same second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Default for Backoff {
    /// 1 s doubling to 60 s: a destination down for an hour is tried about once a
    /// minute, and gets everything within a minute of coming back.
    fn default() -> Self {
        Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        }
    }
}

impl Backoff {
    /// The wait before retry number `retry` (1 for the first), with `jitter` in [0, 1).
    pub fn delay(&self, retry: u32, jitter: f64) -> Duration {
        let doublings = retry.saturating_sub(1).min(30);
        let full = self
            .base
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.cap);
        let half = full / 2;
        half + half.mul_f64(jitter.clamp(0.0, 1.0))
    }
}

/// A small deterministic generator for jitter (xorshift64*): seeded from the clock in
/// service, fixed in tests.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    pub fn new(seed: u64) -> Jitter {
        Jitter(seed.max(1))
    }

    /// A number in [0, 1).
    pub fn draw(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How long an accepted request (Opsgenie, JSM) is given before its outcome is read.
pub const CONFIRM_AFTER: Duration = Duration::from_secs(1);
/// Reads of an outcome that is never found before the row counts as delivered, with a
/// note that its outcome could not be read back (the API took it: 202).
pub const MAX_CONFIRMS: u32 = 12;
/// A secret that cannot be read (unset variable, loose file) is tried again this often:
/// it is ours to fix, and nothing is given up over it.
const SECRET_RETRY: Duration = Duration::from_secs(30);

/// What a carrier does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Look again at once: it sent something and more may be due.
    Now,
    /// Its head row is due at this time (ms).
    At(i64),
    /// Nothing pending.
    Idle,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq)]
pub enum Done {
    Nothing,
    Delivered { id: i64 },
    Accepted { id: i64, request_id: String },
    Retrying { id: i64, at: i64, error: String },
    GaveUp { id: i64, error: String },
}

/// Where a carrier's marks go: to whoever writes the state database (the engine), which
/// writes each one and returns once it is committed, so a mark is durable before the
/// carrier takes its next row.
#[derive(Clone)]
pub struct Marks(Arc<dyn Fn(Mark) -> Result<()> + Send + Sync>);

impl Marks {
    /// Marks handed to `write`, which returns once the mark is committed.
    pub fn to(write: impl Fn(Mark) -> Result<()> + Send + Sync + 'static) -> Marks {
        Marks(Arc::new(write))
    }

    /// Marks written on `state`, a connection its caller opened for writing: for one
    /// that is the state database's writer itself (a test standing in for the engine).
    pub fn on(state: impl Into<State>) -> Marks {
        let state = Mutex::new(state.into());
        Marks::to(move |mark| {
            let state = state.lock().unwrap_or_else(|p| p.into_inner());
            state.transact(|tx| mark.write(tx))
        })
    }
}

/// One destination: its sender, its secret, its read-only connection, where its marks
/// go, and its pace.
pub struct Carrier {
    name: String,
    alert: AlertConfig,
    config: Arc<Config>,
    sender: Box<dyn Sender>,
    conn: State,
    marks: Marks,
    client: reqwest::blocking::Client,
    backoff: Backoff,
    jitter: Jitter,
    /// When this destination was last sent to (ms), for its pace (Slack's one a second).
    last_sent: Option<i64>,
}

impl Carrier {
    pub fn new(
        config: Arc<Config>,
        name: &str,
        state: impl Into<StatePlace>,
        marks: Marks,
        client: reqwest::blocking::Client,
        backoff: Backoff,
        jitter: Jitter,
    ) -> Result<Carrier> {
        let alert = config
            .alert_destinations()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a.clone())
            .with_context(|| format!("no [[alert]] named {name}"))?;
        Ok(Carrier {
            name: name.to_string(),
            sender: sender_for(&alert),
            alert,
            config,
            conn: state.into().open_reader()?,
            marks,
            client,
            backoff,
            jitter,
            last_sent: None,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// One look at the destination at `now` (ms): sends (or reads back) its head row if
    /// it is due, and marks what came of it.
    pub fn step(&mut self, now: i64) -> Result<(Done, Next)> {
        let Some(row) = self.conn.outbox_head(&self.name)? else {
            return Ok((Done::Nothing, Next::Idle));
        };
        let pace = self.sender.pace();
        let paced = match (self.last_sent, row.request_id.is_none()) {
            (Some(last), true) => last + pace.as_millis() as i64,
            _ => i64::MIN,
        };
        let due = row.next_at.max(paced);
        if now < due {
            return Ok((Done::Nothing, Next::At(due)));
        }
        let secret = match read_secret(&self.config, &self.alert) {
            Ok(secret) => secret,
            Err(e) => {
                let error = format!("{e:#}");
                let at = now + SECRET_RETRY.as_millis() as i64;
                self.write(Mark::Retry {
                    id: row.id,
                    next_at: at,
                    error: error.clone(),
                })?;
                return Ok((
                    Done::Retrying {
                        id: row.id,
                        at,
                        error,
                    },
                    Next::At(at),
                ));
            }
        };
        let (verdict, confirming) = match &row.request_id {
            Some(request_id) => match self.sender.status_request(request_id, &secret) {
                Some(request) => (self.exchange(&request, false, now), true),
                None => (Verdict::Delivered, true),
            },
            None => {
                let request = self
                    .sender
                    .request(&Sanitized::new(row.alert.clone()), &secret);
                self.last_sent = Some(now);
                (self.exchange(&request, true, now), false)
            }
        };
        self.mark(&row, verdict, confirming, now)
    }

    /// Hands a mark to whoever writes it.
    fn write(&self, mark: Mark) -> Result<()> {
        (self.marks.0)(mark)
    }

    /// Sends `request` at `now` (ms), from which a Retry-After date is counted.
    fn exchange(&self, request: &super::Request, send: bool, now: i64) -> Verdict {
        let now = chrono::DateTime::from_timestamp_millis(now).unwrap_or_default();
        match super::exchange(&self.client, request, now) {
            Ok(response) if send => self.sender.judge(&response),
            Ok(response) => self.sender.judge_status(&response),
            Err(error) => Verdict::Retry { after: None, error },
        }
    }

    fn mark(
        &mut self,
        row: &Row,
        verdict: Verdict,
        confirming: bool,
        now: i64,
    ) -> Result<(Done, Next)> {
        // The answer is in hand: a mark the writer found the database busy for is tried
        // again rather than lost, since a lost mark means sending the row once more.
        for wait in 1..=5 {
            match self.record(row, verdict.clone(), confirming, now) {
                Err(e) if is_busy(&e) => {
                    tracing::warn!(destination = %self.name, "outbox busy; marking again");
                    std::thread::sleep(Duration::from_secs(wait));
                }
                other => return other,
            }
        }
        self.record(row, verdict, confirming, now)
    }

    fn record(
        &mut self,
        row: &Row,
        verdict: Verdict,
        confirming: bool,
        now: i64,
    ) -> Result<(Done, Next)> {
        let id = row.id;
        Ok(match verdict {
            Verdict::Delivered => {
                self.write(Mark::Delivered {
                    id,
                    at: now,
                    note: None,
                })?;
                (Done::Delivered { id }, Next::Now)
            }
            Verdict::Accepted { request_id } => {
                let at = now + CONFIRM_AFTER.as_millis() as i64;
                self.write(Mark::Accepted {
                    id,
                    request_id: request_id.clone(),
                    next_at: at,
                })?;
                (Done::Accepted { id, request_id }, Next::At(at))
            }
            Verdict::Retry { error, .. } if confirming && row.attempts >= MAX_CONFIRMS => {
                let note = format!("accepted, but its outcome could not be read back: {error}");
                self.write(Mark::Delivered {
                    id,
                    at: now,
                    note: Some(note),
                })?;
                (Done::Delivered { id }, Next::Now)
            }
            Verdict::Retry { after, error } => {
                let wait = match after {
                    // Retry-After is honoured as asked (within an hour).
                    Some(after) => after.min(Duration::from_secs(3600)),
                    None => self.backoff.delay(row.attempts + 1, self.jitter.draw()),
                };
                let at = now + wait.as_millis() as i64;
                self.write(Mark::Retry {
                    id,
                    next_at: at,
                    error: error.clone(),
                })?;
                (Done::Retrying { id, at, error }, Next::At(at))
            }
            Verdict::Permanent(error) => {
                tracing::warn!(destination = %self.name, row = id, %error, "alert given up");
                self.write(Mark::GiveUp {
                    id,
                    at: now,
                    error: error.clone(),
                })?;
                (Done::GaveUp { id, error }, Next::Now)
            }
        })
    }
}

// ---- the threads -------------------------------------------------------------------

/// How the relay is run: its backoff, the per-request timeout, its clock (ms), and
/// where its marks are written.
#[derive(Clone)]
pub struct Options {
    pub backoff: Backoff,
    pub timeout: Duration,
    pub clock: Clock,
    pub marks: Marks,
}

impl Options {
    /// The defaults, with marks handed to `marks`.
    pub fn new(marks: Marks) -> Options {
        Options {
            backoff: Backoff::default(),
            timeout: Duration::from_secs(10),
            // Beside an engine, the engine's clock: the one the outbox's rows are queued
            // on (`server::start_relay`).
            clock: Clock::wall(),
            marks,
        }
    }
}

#[derive(Default)]
struct Flags {
    /// Bumped by every wake-up: a thread that saw an older one looks again.
    generation: u64,
    stopped: bool,
}

#[derive(Default)]
struct Shared {
    flags: Mutex<Flags>,
    wake: Condvar,
}

/// The running relay: a thread per configured destination.
pub struct Relay {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Wakes the relay's threads: new rows are in the outbox.
#[derive(Clone)]
pub struct Waker(Arc<Shared>);

impl Waker {
    pub fn wake(&self) {
        self.0.flags.lock().expect("relay flags").generation += 1;
        self.0.wake.notify_all();
    }
}

impl Relay {
    /// Starts a thread per `[[alert]]` of `config`; None when it names none (nothing is
    /// ever sent then). `changed` is called on a relay thread whenever a row was marked,
    /// so whoever shows the outbox can show it again; it must not block.
    pub fn start(
        config: &Config,
        state: impl Into<StatePlace>,
        options: Options,
        changed: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Option<Relay>> {
        if config.alert.is_empty() {
            return Ok(None);
        }
        let state = state.into();
        let client = super::client(options.timeout)?;
        let config = Arc::new(config.clone());
        let shared = Arc::new(Shared::default());
        let mut threads = Vec::new();
        let seed = options.clock.millis() as u64;
        // On a virtual clock a due time comes when the clock is moved, not after a real
        // wait: each move wakes the threads to look again.
        let moved = Waker(shared.clone());
        options.clock.on_move(move || moved.wake());
        for (i, (name, _)) in config.alert_destinations().into_iter().enumerate() {
            let carrier = Carrier::new(
                config.clone(),
                &name,
                state.clone(),
                options.marks.clone(),
                client.clone(),
                options.backoff,
                Jitter::new(seed ^ ((i as u64 + 1) << 32)),
            )?;
            let (shared, clock, changed) = (shared.clone(), options.clock.clone(), changed.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("dataward-alert-{name}"))
                    .spawn(move || run(carrier, &shared, &clock, &*changed))
                    .context("cannot start an alert relay thread")?,
            );
        }
        tracing::info!(destinations = threads.len(), "alert relay started");
        Ok(Some(Relay { shared, threads }))
    }

    pub fn waker(&self) -> Waker {
        Waker(self.shared.clone())
    }

    /// Stops every thread: none starts another send after this. One in the middle of a
    /// request finishes it (bounded by the request timeout) and marks what came of it,
    /// on its own; waiting for it would hold the engine's shutdown behind a slow API.
    pub fn stop(self) {
        self.shared.flags.lock().expect("relay flags").stopped = true;
        self.shared.wake.notify_all();
        for thread in self.threads {
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
        tracing::info!("alert relay stopped");
    }
}

fn run(mut carrier: Carrier, shared: &Shared, clock: &Clock, changed: &dyn Fn()) {
    let mut seen = 0;
    loop {
        {
            let flags = shared.flags.lock().expect("relay flags");
            if flags.stopped {
                return;
            }
            seen = seen.max(flags.generation);
        }
        let now = clock.millis();
        let next = match carrier.step(now) {
            Ok((done, next)) => {
                if done != Done::Nothing {
                    changed();
                }
                if let Done::Retrying { error, .. } = &done {
                    tracing::info!(destination = carrier.name(), %error, "alert to be retried");
                }
                next
            }
            Err(e) => {
                tracing::warn!(destination = carrier.name(), error = %format!("{e:#}"), "outbox not read");
                Next::At(now + 5_000)
            }
        };
        let wait = match next {
            Next::Now => continue,
            // On the wall, a real wait until the row is due. On a virtual clock, no real
            // wait is the right one: the clock's next move wakes this thread.
            Next::At(at) if clock.hands().is_none() => {
                Duration::from_millis((at - clock.millis()).clamp(0, 3_600_000) as u64)
            }
            // A wake-up brings new rows or a moved clock; the minute is only a safety net.
            Next::At(_) | Next::Idle => Duration::from_secs(60),
        };
        let flags = shared.flags.lock().expect("relay flags");
        let _ = shared
            .wake
            .wait_timeout_while(flags, wait, |f| !f.stopped && f.generation == seen)
            .expect("relay flags");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_with_half_of_it_jittered() {
        let b = Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        };
        assert_eq!(b.delay(1, 0.0), Duration::from_millis(500));
        assert!(b.delay(1, 0.999_999) < Duration::from_secs(1));
        assert_eq!(b.delay(4, 0.0), Duration::from_secs(4));
        assert_eq!(b.delay(30, 0.0), Duration::from_secs(30));
        assert_eq!(b.delay(1_000, 0.5), Duration::from_secs(45));
        let mut j = Jitter::new(7);
        for _ in 0..1_000 {
            let x = j.draw();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
