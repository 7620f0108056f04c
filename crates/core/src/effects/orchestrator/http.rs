//! The one way an orchestrator's REST API is called: a timeout on every call, retries on
//! 408, 425, 429 (honouring `Retry-After`), 5xx and network faults with backoff, and
//! errors that name the API, the endpoint and what came back, never a secret.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::notify::relay::{Backoff, Jitter};
use crate::notify::{answer_text, exchange, Method, Request};

/// How often a call is tried, and how long between tries.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Tries in all (1: never retried).
    pub attempts: u32,
    pub backoff: Backoff,
    /// The longest `Retry-After` honoured; a longer one is cut to this.
    pub max_wait: Duration,
}

impl Default for Retry {
    /// Three tries half a second then a second apart: a call in the engine's turn is
    /// never held up long by a flapping API (a later turn tries the intent again).
    fn default() -> Self {
        Retry {
            attempts: 3,
            backoff: Backoff {
                base: Duration::from_millis(500),
                cap: Duration::from_secs(5),
            },
            max_wait: Duration::from_secs(10),
        }
    }
}

/// One try's failure: retryable or not, after how long the API asked, and the status
/// it answered (none for a network fault).
#[derive(Debug)]
pub struct Failure {
    pub status: Option<u16>,
    pub retry: bool,
    pub after: Option<Duration>,
    pub message: String,
}

impl Failure {
    /// A failure before anything was sent (no token, say): never retried.
    pub fn local(message: String) -> Failure {
        Failure {
            status: None,
            retry: false,
            after: None,
            message,
        }
    }
}

/// One REST API at one base URL.
pub struct Api {
    /// How people know it: "dbt Cloud", "Airflow".
    pub name: &'static str,
    base_url: String,
    client: reqwest::blocking::Client,
    retry: Retry,
    jitter: Mutex<Jitter>,
}

impl Api {
    pub fn new(name: &'static str, base_url: &str, timeout: Duration) -> Result<Api> {
        // Any changing number seeds the jitter; the time is one.
        let seed = crate::clock::Clock::wall()
            .now()
            .timestamp_nanos_opt()
            .unwrap_or(1) as u64;
        Ok(Api {
            name,
            base_url: base_url.trim_end_matches('/').to_string(),
            client: crate::notify::client(timeout)?,
            retry: Retry::default(),
            jitter: Mutex::new(Jitter::new(seed)),
        })
    }

    pub fn with_retry(mut self, retry: Retry) -> Api {
        self.retry = retry;
        self
    }

    /// "Airflow PATCH /api/v2/dags/x", without the query.
    pub fn endpoint(&self, method: Method, path: &str) -> String {
        format!(
            "{} {} {}",
            self.name,
            method.verb(),
            path.split('?').next().unwrap_or(path)
        )
    }

    /// One try of one call, with `authorization` as the header's value. A 2xx answer is
    /// its JSON (`Null` when empty); anything else is a [`Failure`].
    pub fn send(
        &self,
        method: Method,
        path: &str,
        authorization: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, Failure> {
        let endpoint = self.endpoint(method, path);
        let mut headers = vec![("Accept", "application/json".to_string())];
        if let Some(authorization) = authorization {
            headers.push(("Authorization", authorization.to_string()));
        }
        if body.is_some() {
            headers.push(("Content-Type", "application/json".to_string()));
        }
        let request = Request {
            method,
            url: format!("{}{path}", self.base_url),
            headers,
            body: body.map(Value::to_string),
        };
        // Its waits are slept on this thread: a Retry-After date counts from the wall.
        let response = exchange(&self.client, &request, crate::clock::Clock::wall().now())
            .map_err(|e| Failure {
                status: None,
                retry: true,
                after: None,
                message: format!("{endpoint}: {e}"),
            })?;
        let status = response.status;
        let said = answer_text(&response.body);
        if (200..300).contains(&status) {
            if response.body.trim().is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_str(&response.body).map_err(|e| Failure {
                status: Some(status),
                retry: false,
                after: None,
                message: format!("{endpoint} answered {status} with no JSON ({e}){said}"),
            });
        }
        Err(Failure {
            status: Some(status),
            retry: matches!(status, 408 | 425 | 429 | 500..=599),
            after: response.retry_after,
            message: format!("{endpoint} answered {status}{said}"),
        })
    }

    /// Waits before retry number `attempt`: as the API asked, or the backoff.
    pub fn wait_before(&self, attempt: u32, after: Option<Duration>) {
        let wait = match after {
            Some(after) => after.min(self.retry.max_wait),
            None => {
                let jitter = self.jitter.lock().map(|mut j| j.draw()).unwrap_or(0.5);
                self.retry.backoff.delay(attempt, jitter)
            }
        };
        std::thread::sleep(wait);
    }

    /// `try_once` tried as [`Retry`] says: again after a retryable failure, until it
    /// succeeds, fails for good, or the tries run out (the error then says how many).
    pub fn retried<T>(
        &self,
        mut try_once: impl FnMut() -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        let attempts = self.retry.attempts.max(1);
        let mut attempt = 1;
        loop {
            match try_once() {
                Ok(answer) => return Ok(answer),
                Err(f) if f.retry && attempt < attempts => self.wait_before(attempt, f.after),
                Err(mut f) => {
                    if attempt > 1 {
                        f.message = format!("{} (after {attempt} tries)", f.message);
                    }
                    return Err(f);
                }
            }
            attempt += 1;
        }
    }
}

/// A failure as an error people read.
pub fn failed(f: Failure) -> anyhow::Error {
    anyhow::anyhow!(f.message)
}
