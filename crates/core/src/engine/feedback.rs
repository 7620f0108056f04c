//! What people teach dataward about breaches, each on the chain:
//! - `expected`: "this was fine": the incident's breach leaves the baselines and the
//!   incident closes as expected (its owner, with a reason; the receipt says so);
//! - `snooze`: no alert and no new incident for a monitor until the snooze ends (at
//!   most a week), on the engine's clock; its breaches are still recorded;
//! - `[[maintenance]]` windows in the config: breaches inside are recorded and shown,
//!   page nobody, and every point inside leaves the baselines.
//!
//! Snoozes and the spans that left the baselines live in the state database
//! (`store::quiet`), written in the transaction of their chain record, so a restart
//! (or a SIGKILL) forgets neither.

use super::*;
use crate::approve::quiet::{quiet_at, Quiet};
use crate::store::quiet::Snooze;

/// The longest snooze: past a week, a monitor nobody wants to hear from should be
/// changed in the config, where everyone sees it.
pub const MAX_SNOOZE_SECONDS: u64 = 7 * 86_400;

/// What a quiet monitor shows clients: until when, and why.
pub(super) fn quiet_view(quiet: &Quiet) -> QuietView {
    QuietView {
        until: quiet.until(),
        why: quiet.why(),
    }
}

impl Engine {
    /// `expected`: the owner says the open incident's breach was fine. The span it
    /// covers (from its breach's first point to now) leaves its monitor's baselines,
    /// on the chain with who and why, and the incident closes by hand as expected.
    pub(super) fn mark_expected(
        &mut self,
        id: &str,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        let i = self.open_for_owner(id, reason, actor, "marking an incident expected")?;
        let incident = &self.incidents[i];
        let (incident_id, monitor, check, column) = (
            incident.id.clone(),
            incident.monitor.clone(),
            incident.check,
            incident.column.clone(),
        );
        // From the earliest point the breach is about: the run of breaches the check
        // ends in, the day a volume breach named, or the incident's opening.
        let mut from = incident.opened_at;
        if let Some(midnight) = incident
            .day
            .as_deref()
            .and_then(|day| chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok())
            .and_then(|day| day.and_hms_opt(0, 0, 0))
        {
            from = from.min(Timestamp::from_naive(midnight));
        }
        let subject = column.clone().unwrap_or_default();
        if let Some(run) =
            crate::monitor::baseline::breach_run(&*self.state, &monitor, check, &subject)?
        {
            from = from.min(run.since_at);
        }
        let to = self.now();
        let seq = self.record(
            "incident_expected",
            &actor.to_json(),
            json!({"incident": incident_id, "monitor": monitor, "check": check.as_str(),
                   "column": column, "from": from, "to": to, "reason": reason}),
        )?;
        self.state.leave_baselines(
            &monitor,
            from,
            to,
            &format!("{incident_id} expected (chain #{seq})"),
        )?;
        self.incidents[i].closed_by_hand = Some((
            actor.to_json(),
            format!(
                "expected: this was fine; {monitor} from {from} to {to} left the baselines \
                 (chain #{seq}): {reason}"
            ),
        ));
        let mut events = vec![self.event(EventKind::ClosedExpected {
            incident: incident_id,
            seq,
        })];
        events.extend(self.resolve(i)?);
        self.latest.forget_views();
        Ok(events)
    }

    /// `snooze`: the monitor named, or the monitor of the incident named, opens no
    /// incident and pages nobody for `seconds` (at most a week) of the engine's
    /// clock. Only the owners of its table may, with a reason.
    pub(super) fn snooze(
        &mut self,
        target: &str,
        seconds: u64,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        let (monitor, table, incident) = self.snooze_target(target)?;
        anyhow::ensure!(!reason.trim().is_empty(), "a snooze needs a reason");
        anyhow::ensure!(seconds > 0, "a snooze must last longer than zero");
        if seconds > MAX_SNOOZE_SECONDS {
            return Err(Refusal::new(
                RefusalKind::Invalid,
                format!(
                    "a snooze lasts at most 7 days; {} is longer. For planned work, add a \
                     [[maintenance]] window to the config; for a monitor nobody needs, \
                     change it there",
                    describe_seconds(seconds)
                ),
            )
            .into());
        }
        self.ensure_incident_owner(&table, actor)?;
        let now = self.now();
        let until = Timestamp::from_naive(now.naive() + TimeDelta::seconds(seconds as i64));
        let seq = self.record(
            "snoozed",
            &actor.to_json(),
            json!({"monitor": monitor, "table": table, "incident": incident,
                   "until": until.to_string(), "seconds": seconds, "reason": reason}),
        )?;
        self.state.add_snooze(&Snooze {
            seq,
            monitor: monitor.clone(),
            until,
            reason: reason.to_string(),
            actor: actor.to_json(),
        })?;
        self.notices.push(format!(
            "{monitor} snoozed by {} until {until} (chain #{seq}): {reason}",
            actor.display()
        ));
        self.latest.forget_views();
        self.refresh_quiet();
        Ok(vec![self.event(EventKind::Snoozed {
            monitor,
            until,
            seq,
        })])
    }

    /// (monitor, table, incident) a snooze names: an incident (its monitor), or a
    /// monitor of the config.
    fn snooze_target(&self, target: &str) -> Result<(String, String, Option<String>)> {
        if let Some(incident) = self
            .incidents
            .iter()
            .find(|i| i.id.eq_ignore_ascii_case(target))
        {
            return Ok((
                incident.monitor.clone(),
                incident.table.clone(),
                Some(incident.id.clone()),
            ));
        }
        match self
            .config
            .monitor
            .iter()
            .find(|m| Config::monitor_name(m) == target)
        {
            Some(m) => Ok((Config::monitor_name(m), m.table.clone(), None)),
            None => Err(Refusal::new(
                RefusalKind::NotFound,
                format!(
                    "no incident or monitor {target} (monitors: {})",
                    self.config.monitor_names().join(", ")
                ),
            )
            .into()),
        }
    }

    /// Snoozes whose time has come end, each on the chain: from now on the monitor's
    /// breaches open incidents again.
    pub(super) fn end_snoozes(&mut self) -> Result<Vec<Event>> {
        let now = self.now();
        let mut events = Vec::new();
        for snooze in self.state.running_snoozes()? {
            if snooze.until > now {
                continue;
            }
            let seq = self.record(
                "snooze_ended",
                ENGINE_ACTOR,
                json!({"monitor": snooze.monitor, "snoozed": snooze.seq, "until": snooze.until}),
            )?;
            self.state.end_snooze(snooze.seq, seq)?;
            self.notices.push(format!(
                "{}: the snooze until {} ended (chain #{seq})",
                snooze.monitor, snooze.until
            ));
            self.latest.forget_views();
            events.push(self.event(EventKind::SnoozeEnded {
                monitor: snooze.monitor,
                seq,
            }));
        }
        Ok(events)
    }

    /// Why `monitor` (on `table`) pages nobody at `at`, if it does not: the snooze that
    /// runs longest, else an open maintenance window.
    pub(super) fn quiet(&self, monitor: &str, table: &str, at: Timestamp) -> Result<Option<Quiet>> {
        self.quiet_among(&self.state.running_snoozes()?, monitor, table, at)
    }

    /// [`Engine::quiet`] among `snoozes` (the running ones, read once for many).
    pub(super) fn quiet_among(
        &self,
        snoozes: &[Snooze],
        monitor: &str,
        table: &str,
        at: Timestamp,
    ) -> Result<Option<Quiet>> {
        Ok(quiet_at(&self.config, snoozes, monitor, table, at))
    }

    /// An observation taken while its monitor is quiet: a maintenance window's points
    /// leave the baselines (the window's whole span); a breach is recorded on the
    /// chain and shown, opens no incident and pages nobody, and its point leaves the
    /// baselines too (nobody has said it was fine).
    pub(super) fn keep_quiet(&mut self, o: &Observation, quiet: &Quiet) -> Result<Vec<Event>> {
        if let Quiet::Maintenance(window) = quiet {
            self.state.leave_baselines(
                &o.monitor,
                window.start,
                window.end,
                &format!("maintenance: {}", window.reason),
            )?;
        }
        if !o.verdict.is_breach() {
            return Ok(Vec::new());
        }
        let why = quiet.why();
        let (kind, by) = match quiet {
            Quiet::Snoozed { seq, .. } => ("snooze", json!(seq)),
            Quiet::Maintenance(window) => ("maintenance", json!(window.reason)),
        };
        let seq = self.record(
            "breach_quiet",
            ENGINE_ACTOR,
            json!({"monitor": o.monitor, "table": o.table, "check": o.check,
                   "column": o.detail.column, "observed": o.observed_text(),
                   "expected": o.expected_text(), "quiet": kind, "by": by,
                   "until": quiet.until().to_string()}),
        )?;
        if matches!(quiet, Quiet::Snoozed { .. }) {
            self.state
                .leave_baselines(&o.monitor, o.at, o.at, &format!("breach while {why}"))?;
        }
        self.notices.push(format!(
            "{} breached while quiet ({why}, until {}): {} (expected {}); recorded on chain #{seq}, nobody paged",
            o.monitor,
            quiet.until(),
            o.observed_text(),
            o.expected_text()
        ));
        Ok(vec![self.event(EventKind::BreachQuiet {
            monitor: o.monitor.clone(),
            why,
            seq,
        })])
    }

    /// Each monitor quiet now, by name, as the views show it.
    pub(super) fn quiet_views(&self) -> BTreeMap<String, QuietView> {
        let now = self.now();
        let snoozes = self.state.running_snoozes().unwrap_or_default();
        let mut views = BTreeMap::new();
        for m in &self.config.monitor {
            let name = Config::monitor_name(m);
            if let Ok(Some(quiet)) = self.quiet_among(&snoozes, &name, &m.table, now) {
                views.insert(name, quiet_view(&quiet));
            }
        }
        views
    }
}

/// "8d", "7d 1h", "90m": a duration as people wrote it, roughly.
fn describe_seconds(seconds: u64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (hours, minutes) = (rest / 3600, rest % 3600 / 60);
    let mut parts = Vec::new();
    if days > 0 {
        parts.push(format!("{days}d"));
    }
    if hours > 0 {
        parts.push(format!("{hours}h"));
    }
    if minutes > 0 || parts.is_empty() {
        parts.push(format!("{minutes}m"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine on a one-table SQLite estate whose row count is far below what its
    /// monitor expects, run by the test's own user (the table's owner) on a virtual
    /// clock, as the demo runs.
    fn engine(dir: &std::path::Path, extra: &str) -> (Engine, Actor, NaiveDateTime) {
        let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
        wh.execute_batch("CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (1);")
            .unwrap();
        let me = Actor::current();
        let text = format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
             [people.{:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n\
             [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\nautonomy = \"L0\"\n\n\
             [[monitor]]\nname = \"orders\"\nwarehouse = \"local\"\ntable = \"orders\"\n\
             checks = [\"row_count\"]\nevery = \"1h\"\nexpected_rows = 1000\n\n{extra}",
            me.user.clone().unwrap_or_default()
        );
        let path = dir.join("dataward.toml");
        std::fs::write(&path, &text).unwrap();
        let config = Config::parse(&text, &path).unwrap();
        let state = crate::store::open(&dir.join("dataward.db")).unwrap();
        let mut engine = Engine::new(config, state, None, &me).unwrap();
        let start: NaiveDateTime = "2026-03-01T09:00:00".parse().unwrap();
        engine.set_clock(crate::clock::Clock::starting_at(start));
        (engine, me, start)
    }

    fn kinds(engine: &Engine) -> Vec<String> {
        crate::chain::records(&*engine.state)
            .unwrap()
            .into_iter()
            .map(|r| r.kind)
            .collect()
    }

    /// A snooze ends on the engine's clock (the demo's virtual one here): its breaches
    /// are recorded and open nothing until then; after, the breach opens an incident.
    #[test]
    fn a_snooze_ends_on_the_engines_clock() {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, me, start) = engine(dir.path(), "");
        let snoozed = engine.request(
            Command::Snooze {
                target: "orders".into(),
                seconds: 3600,
                reason: "a reload".into(),
            },
            &me,
        );
        assert!(matches!(snoozed, Outcome::Accepted { .. }), "{snoozed:?}");
        let too_long = engine.request(
            Command::Snooze {
                target: "orders".into(),
                seconds: MAX_SNOOZE_SECONDS + 1,
                reason: "forever".into(),
            },
            &me,
        );
        assert!(
            matches!(&too_long, Outcome::Refused { reason } if reason.message.contains("at most 7 days")),
            "{too_long:?}"
        );
        engine.tick(start).unwrap();
        assert!(engine.incidents.is_empty());
        assert!(kinds(&engine).contains(&"breach_quiet".to_string()));
        let monitors = engine.monitor_views();
        let quiet = monitors[0].quiet.as_ref().expect("shown quiet");
        assert_eq!(quiet.until.to_string(), "2026-03-01T10:00:00Z");

        engine.tick(start + TimeDelta::hours(2)).unwrap();
        let kinds = kinds(&engine);
        let ended = kinds
            .iter()
            .position(|k| k == "snooze_ended")
            .expect("ended");
        let opened = kinds
            .iter()
            .position(|k| k == "incident_opened")
            .expect("opened");
        assert!(ended < opened, "{kinds:?}");
        assert_eq!(engine.incidents.len(), 1);
        assert!(engine.monitor_views()[0].quiet.is_none());
    }

    /// A maintenance window open now: the breach is recorded, opens nothing, and the
    /// window's span leaves the baselines; outside it the breach opens an incident.
    #[test]
    fn a_maintenance_window_keeps_its_breaches_quiet_and_out_of_the_baselines() {
        let dir = tempfile::tempdir().unwrap();
        let window = "[[maintenance]]\ntables = [\"orders\"]\nstart = \"2026-03-01T08:00:00Z\"\n\
                      end = \"2026-03-01T10:00:00Z\"\nreason = \"a reload\"\n";
        let (mut engine, _, start) = engine(dir.path(), window);
        engine.tick(start).unwrap();
        assert!(engine.incidents.is_empty());
        assert_eq!(
            engine.state.left_baselines("orders").unwrap(),
            vec![(
                "2026-03-01T08:00:00Z".parse().unwrap(),
                "2026-03-01T10:00:00Z".parse().unwrap()
            )]
        );
        engine.tick(start + TimeDelta::hours(1)).unwrap();
        assert_eq!(engine.incidents.len(), 1);
    }

    /// `expected` by the owner: the breach's span leaves the baselines and the incident
    /// closes by hand as expected; by anyone else, refused.
    #[test]
    fn expected_takes_the_breach_out_of_the_baselines_and_closes_the_incident() {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, me, start) = engine(dir.path(), "");
        engine.tick(start).unwrap();
        assert_eq!(engine.incidents.len(), 1);
        let mut stranger = me.clone();
        stranger.user = Some("nobody-here".into());
        stranger.stand_in = None;
        stranger.uid = 4242;
        let expected = |reason: &str| Command::Expected {
            incident: "INC-0001".into(),
            reason: reason.into(),
        };
        let refused = engine.request(expected("fine"), &stranger);
        assert!(
            matches!(&refused, Outcome::Refused { reason } if reason.kind == RefusalKind::Policy),
            "{refused:?}"
        );
        // A snooze that names the incident is on its timeline.
        let snoozed = engine.request(
            Command::Snooze {
                target: "inc-0001".into(),
                seconds: 600,
                reason: "while we look".into(),
            },
            &me,
        );
        assert!(matches!(snoozed, Outcome::Accepted { .. }), "{snoozed:?}");
        let records = crate::chain::records(&*engine.state).unwrap();
        let timeline = super::super::timeline::build(&records, "INC-0001");
        assert!(
            timeline.iter().any(|e| e.step == "snoozed"
                && e.what == "orders until 2026-03-01T09:10:00Z: while we look"),
            "{timeline:#?}"
        );
        let done = engine.request(expected("a planned purge"), &me);
        assert!(matches!(done, Outcome::Accepted { .. }), "{done:?}");
        assert_eq!(engine.incidents[0].status, IncidentStatus::Resolved);
        let left = engine.state.left_baselines("orders").unwrap();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(
            left[0].0 <= "2026-03-01T09:00:00Z".parse().unwrap(),
            "{left:?}"
        );
        let receipt = engine.incidents[0].receipt.clone().unwrap();
        assert!(receipt.contains("expected: this was fine"), "{receipt}");
    }
}
