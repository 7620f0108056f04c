//! An incident's owner, by hand: closing it (resolved with a reason, or its new level
//! accepted as the normal) and opening it again. Each checked against the policy (an
//! owner or escalation role of the domain covering its table), each on the chain.

use super::*;

impl Engine {
    /// May `actor` close or reopen an incident on `table`? An owner or escalation role
    /// of the domain that covers it.
    pub(super) fn ensure_incident_owner(&self, table: &str, actor: &Actor) -> Result<()> {
        if let Some(e) = &self.policy_error {
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!("the policy cannot be evaluated, so nothing may be decided: {e}"),
            )
            .into());
        }
        let domain = approve::domain_for(&self.config, table).ok_or_else(|| {
            Refusal::new(
                RefusalKind::Policy,
                format!("no domain in the policy covers {table}; nobody may close it by hand"),
            )
        })?;
        let roles = actor.roles(&self.config);
        let owning: Vec<&String> = domain.owners.iter().chain(&domain.escalation).collect();
        if !roles.iter().any(|r| owning.contains(&r)) {
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!(
                    "{} holds none of the roles that own {table} ({})",
                    actor.display(),
                    owning
                        .iter()
                        .map(|r| r.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .into());
        }
        Ok(())
    }

    /// The owner closes the incident by hand, with a reason: approved holds are resumed
    /// as on any resolution, and the receipt says who closed it and why.
    pub(super) fn resolve_by_hand(
        &mut self,
        id: &str,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        let i = self.open_for_owner(id, reason, actor, "closing an incident by hand")?;
        self.incidents[i].closed_by_hand = Some((actor.to_json(), reason.to_string()));
        self.resolve(i)
    }

    /// The open incident `id` for its owner to close (`doing` it, with a reason): not
    /// resolved already, a reason given, `actor` an owner of its table, and no run of
    /// it being queued.
    pub(super) fn open_for_owner(
        &self,
        id: &str,
        reason: &str,
        actor: &Actor,
        doing: &str,
    ) -> Result<usize> {
        let i = self.incident_index(id)?;
        let incident = &self.incidents[i];
        if incident.status == IncidentStatus::Resolved {
            return Err(Refusal::new(
                RefusalKind::AlreadyDecided,
                format!("{} is already resolved", incident.id),
            )
            .into());
        }
        anyhow::ensure!(!reason.trim().is_empty(), "{doing} needs a reason");
        self.ensure_incident_owner(&incident.table, actor)?;
        anyhow::ensure!(
            !self.intent_pending(&incident.id)?,
            "{} has a run being queued; wait for it",
            incident.id
        );
        Ok(i)
    }

    /// Opens a resolved incident again: the reason goes on the chain, and it waits for
    /// people and checks as before.
    pub(super) fn reopen(&mut self, id: &str, reason: &str, actor: &Actor) -> Result<Vec<Event>> {
        let i = self.incident_index(id)?;
        anyhow::ensure!(
            self.incidents[i].status == IncidentStatus::Resolved,
            "{} is not resolved",
            self.incidents[i].id
        );
        anyhow::ensure!(
            !reason.trim().is_empty(),
            "reopening an incident needs a reason"
        );
        self.ensure_incident_owner(&self.incidents[i].table.clone(), actor)?;
        let incident_id = self.incidents[i].id.clone();
        let seq = self.record(
            "incident_reopened",
            &actor.to_json(),
            json!({"incident": incident_id, "reason": reason}),
        )?;
        let incident = &mut self.incidents[i];
        incident.status = IncidentStatus::Open;
        incident.verified = false;
        incident.closed_by_hand = None;
        incident.merged_into = None;
        incident.recovered_by_itself = false;
        incident.recovered_since = None;
        incident.root_back_at = None;
        incident.receipt = None;
        self.settled.remove(&incident_id);
        self.notices.push(format!(
            "{incident_id} reopened by {} (chain #{seq})",
            actor.display()
        ));
        Ok(vec![self.event(EventKind::Reopened {
            incident: incident_id,
            seq,
        })])
    }

    /// Accepts the new level of the check whose breach opened an open incident as the
    /// normal: the acceptance goes on the chain with the check, the level and the
    /// reason, the check's baseline restarts at the breach (stored in the same
    /// transaction), and the incident closes as closed by hand. Only the table's owners
    /// may, with a reason, and only while the check breaches: any run of breaches, one
    /// included. A check with no learned baseline (freshness, schema, a recorded
    /// `expected_rows`) is refused with what to change instead.
    pub(super) fn accept_level(
        &mut self,
        id: &str,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        let i = self.open_for_owner(id, reason, actor, "accepting a new level")?;
        let incident = &self.incidents[i];
        let refuse = |why: String| -> Result<Vec<Event>> {
            Err(Refusal::new(
                RefusalKind::Policy,
                format!("{} has no learned level to accept: {why}", incident.id),
            )
            .into())
        };
        let monitor = &incident.monitor;
        let recorded_rows = self
            .config
            .monitor
            .iter()
            .find(|m| crate::config::Config::monitor_name(m) == *monitor)
            .and_then(|m| m.expected_rows);
        match incident.check {
            CheckKind::Volume => self.accept_volume_level(i, reason, actor),
            CheckKind::RowCount if recorded_rows.is_some() => refuse(format!(
                "the row count of {monitor} is judged against the expected_rows = {} recorded \
                 for it in the config; set expected_rows to the new count there",
                recorded_rows.unwrap_or_default()
            )),
            CheckKind::RowCount | CheckKind::NullRate => {
                self.accept_learned_level(i, reason, actor)
            }
            CheckKind::Freshness => refuse(format!(
                "freshness is judged against the table's own load cadence and the \
                 monitor's thresholds; if longer pauses are normal, set error_after (and \
                 warn_after) for {monitor} in the config; once the table loads again, the \
                 incident recovers by itself"
            )),
            CheckKind::Schema => refuse(format!(
                "the new columns of {monitor} are already recorded as its schema, and the \
                 next poll compares against them; resolve the incident with a reason instead"
            )),
            CheckKind::FailedRun => refuse(format!(
                "{monitor} failed: a failed run has no level to accept; it resolves once a \
                 later run succeeds, or resolve it by hand with a reason"
            )),
        }
    }

    /// [`Engine::accept_level`] for a learned row_count or null_rate baseline: the run
    /// of breaches the check's latest observations end in becomes the start of its
    /// new baseline (the accepted figures included), the observations before it
    /// forgotten.
    fn accept_learned_level(
        &mut self,
        i: usize,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        let incident = &self.incidents[i];
        let (incident_id, monitor, check) = (
            incident.id.clone(),
            incident.monitor.clone(),
            incident.check,
        );
        let column = incident.column.clone();
        let subject = column.clone().unwrap_or_default();
        let label = match &column {
            Some(column) => format!("{}({column})", check.as_str()),
            None => check.as_str().to_string(),
        };
        let Some(run) =
            crate::monitor::baseline::breach_run(&*self.state, &monitor, check, &subject)?
        else {
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!("{incident_id} has no new level to accept: the latest {label} check of {monitor} is in range"),
            )
            .into());
        };
        // As volume's: how the new level compares with the old (0 where the old was 0).
        let ratio = match run.baseline {
            Some(baseline) if baseline > 0.0 => run.value / baseline,
            _ => 0.0,
        };
        let seq = self.record(
            "level_accepted",
            &actor.to_json(),
            json!({"incident": incident_id, "monitor": monitor, "check": check.as_str(),
                   "column": column, "value": run.value, "baseline": run.baseline,
                   "since": run.since_at, "ratio": ratio, "reason": reason}),
        )?;
        crate::monitor::baseline::accept_learned(
            &*self.state,
            &monitor,
            check,
            &subject,
            &run,
            &incident_id,
            seq,
        )?;
        let was = run
            .baseline
            .map(|b| format!(", the old baseline {}", crate::monitor::amount(check, b)))
            .unwrap_or_default();
        self.incidents[i].closed_by_hand = Some((
            actor.to_json(),
            format!(
                "new level accepted: {label} {}{was}, the normal since {} (chain #{seq}): {reason}",
                crate::monitor::amount(check, run.value),
                run.since_at
            ),
        ));
        let mut events = vec![self.event(EventKind::LevelAccepted {
            incident: incident_id,
            monitor,
            since: crate::clock::Since::Time(run.since_at),
            ratio,
            seq,
        })];
        events.extend(self.resolve(i)?);
        Ok(events)
    }

    /// [`Engine::accept_level`] for volume: the monitor's baseline restarts from the
    /// shift's first day.
    fn accept_volume_level(&mut self, i: usize, reason: &str, actor: &Actor) -> Result<Vec<Event>> {
        let (incident_id, monitor) = (
            self.incidents[i].id.clone(),
            self.incidents[i].monitor.clone(),
        );
        let volume = self.latest.get(&(monitor.clone(), CheckKind::Volume, None));
        // The breach the newest judged days end in, however short: its figures are the
        // new level (the on-call knows when a change is the new normal).
        let judged: Vec<(chrono::NaiveDate, crate::detect::Verdict)> = volume
            .map(|o| o.detail.days.as_slice())
            .unwrap_or_default()
            .iter()
            // Today so far, while in range, says nothing yet (as in the headline).
            .filter(|d| !d.partial || d.verdict.is_breach())
            .filter_map(|d| {
                let date = chrono::NaiveDate::parse_from_str(&d.day, "%Y-%m-%d").ok()?;
                let verdict = crate::detect::Verdict {
                    kind: d.verdict,
                    observed: d.rows,
                    expected: d.expected,
                    score: None,
                };
                Some((date, verdict))
            })
            .collect();
        let Some((restart, days)) = crate::detect::volume::level_to_accept(&judged) else {
            let seen = match volume {
                Some(_) => format!("the latest volume check of {monitor} is in range"),
                None => format!("{monitor} has no volume check to take a level from"),
            };
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!("{incident_id} has no new level to accept: {seen}"),
            )
            .into());
        };
        let seq = self.record(
            "level_accepted",
            &actor.to_json(),
            json!({"incident": incident_id, "monitor": monitor, "check": "volume",
                   "since": restart.since.to_string(), "days": days, "ratio": restart.ratio,
                   "reason": reason}),
        )?;
        crate::monitor::baseline::accept(&*self.state, &monitor, &incident_id, restart, seq)?;
        self.incidents[i].closed_by_hand = Some((
            actor.to_json(),
            if restart.ratio > 0.0 {
                format!(
                    "new level accepted: {:.2}x the old baseline since {} (chain #{seq}): {reason}",
                    restart.ratio, restart.since
                )
            } else {
                format!(
                    "new level accepted: rows where none were expected, the normal since {} \
                     (chain #{seq}): {reason}",
                    restart.since
                )
            },
        ));
        let mut events = vec![self.event(EventKind::LevelAccepted {
            incident: incident_id,
            monitor,
            since: crate::clock::Since::Day(restart.since),
            ratio: restart.ratio,
            seq,
        })];
        events.extend(self.resolve(i)?);
        Ok(events)
    }
}
