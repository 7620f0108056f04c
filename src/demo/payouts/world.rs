//! The outside world of the courier story: the event stream lands couriers' events in
//! raw.courier_events every few minutes until a key rotation stops it on Saturday
//! afternoon; on Monday night the platform engineer fixes the key and the stream
//! reloads what piled up; the scheduler runs the nightly dbt job at 02:00 and any run
//! the engine queues. Whether the stream is down is read from the story's clock, and
//! everything else from the estate's databases, so a turn played twice changes nothing.

use anyhow::Result;
use chrono::{NaiveDateTime, Timelike};

use super::estate::{land_events, Estate, NIGHTLY_JOB, STREAM};
use super::{dbt, key_fixed, key_rotated};
use crate::clock::timestamp as ts;
use crate::demo::control::{status_of, ControlPlane};
use crate::demo::scenario::World;

pub struct Couriers {
    estate: Estate,
    control: ControlPlane,
}

impl Couriers {
    pub fn new(estate: Estate) -> Couriers {
        let control = ControlPlane::new(estate.control_db());
        Couriers { estate, control }
    }

    /// The stream: every event up to `now` that is not in the table yet lands, unless
    /// the key is broken, when they pile up in its error bucket instead. It reports
    /// itself running throughout, as streams do.
    fn stream(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        let mut happened = Vec::new();
        if now == key_rotated() {
            happened.push(
                "event stream: the signing key was rotated; from now every record fails with 401 and goes to the error bucket".to_string(),
            );
        }
        let down = now > key_rotated() && now < key_fixed();
        if !down {
            let wh = self.estate.warehouse()?;
            let newest: String =
                wh.query_row("SELECT max(event_at) FROM raw.courier_events", [], |r| {
                    r.get(0)
                })?;
            let newest = crate::clock::Timestamp::parse(&newest)?.naive();
            let landed = land_events(&wh, newest, now, now)?;
            if now == key_fixed() {
                happened.push(format!(
                    "platform engineer fixes the key and replays the error bucket: {landed} events from {} to {} land in raw.courier_events",
                    key_rotated().format("%a %H:%M"),
                    now.format("%a %H:%M")
                ));
            }
        }
        self.control.record_pipeline(STREAM, "success", &ts(now))?;
        Ok(happened)
    }

    /// Carries out a run: the job's own build, or the exact command it was queued with.
    fn run(&self, command: Option<&str>, now: NaiveDateTime) -> Result<String, String> {
        match command {
            Some(command) => dbt::command(&self.estate, command, now),
            None => dbt::nightly(&self.estate, now),
        }
        .map_err(|e| format!("{e:#}"))
    }
}

impl World for Couriers {
    fn step(&mut self, now: NaiveDateTime) -> Result<Vec<String>> {
        let mut happened = self.stream(now)?;
        if (now.hour(), now.minute()) == (2, 0) && !self.control.is_paused(NIGHTLY_JOB)? {
            let (status, detail) = status_of(self.run(None, now));
            self.control
                .record_pipeline(NIGHTLY_JOB, status, &ts(now))?;
            happened.push(format!(
                "scheduler: nightly dbt job {status}: {detail}; source freshness of raw.courier_events passed (warn after 24h)"
            ));
        }
        happened.extend(
            self.control
                .carry_out_queued(&ts(now), |command| self.run(command, now))?,
        );
        Ok(happened)
    }
}
