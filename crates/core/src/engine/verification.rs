//! After a run: follow it at the scheduler, re-run the checks once the settle window
//! has passed, and only on a pass resolve the incident, apply the holds' undo and write
//! the receipt.

use super::intent::{Completion, Effect};

use super::*;

impl Engine {
    pub(super) fn follow_runs(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let Some(run) = &self.incidents[i].run else {
                continue;
            };
            if run.finished.is_some() {
                continue;
            }
            let Some(record) = self.run_reports.remove(&(run.job.clone(), run.id.clone())) else {
                continue;
            };
            if record.status == "queued" {
                continue;
            }
            let id = self.incidents[i].id.clone();
            let seq = self.record(
                "run",
                ENGINE_ACTOR,
                json!({"incident": id, "run": record.id, "job": record.job, "status": record.status,
                       "link": record.link, "started_at": record.started_at,
                       "finished_at": record.finished_at, "detail": record.detail}),
            )?;
            events.push(self.event(EventKind::Run {
                incident: id,
                job: record.job.clone(),
                status: record.status.clone(),
                seq,
            }));
            let incident = &mut self.incidents[i];
            incident.status = if record.status == "success" {
                IncidentStatus::Verifying
            } else {
                IncidentStatus::Open
            };
            incident.run.as_mut().expect("checked above").finished = Some(record);
        }
        Ok(events)
    }

    /// Re-runs the checks for incidents whose run finished at least the settle window
    /// ago. Only a pass closes the incident; a failure sends it back to people.
    pub(super) fn verify_incidents(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        let settle = crate::config::parse_duration(&self.config.verify.settle).expect("validated");
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            if incident.status != IncidentStatus::Verifying || incident.verified {
                continue;
            }
            let Some(finished_at) = incident
                .run
                .as_ref()
                .and_then(|r| r.finished.as_ref())
                .and_then(|r| r.finished_at)
                .map(Timestamp::naive)
            else {
                continue;
            };
            if now < finished_at + TimeDelta::from_std(settle).expect("small") {
                continue;
            }
            let asked = self.evidence.pending_seen();
            let checks = self.checks(i);
            if self.evidence.pending_seen() != asked {
                // A dry run is out on a worker: verified when it answers.
                continue;
            }
            let passed = checks.iter().all(|c| c.passed);
            let id = self.incidents[i].id.clone();
            self.record(
                "verification",
                ENGINE_ACTOR,
                json!({"incident": id, "passed": passed, "checks": checks}),
            )?;
            events.push(self.event(EventKind::Verification {
                incident: id.clone(),
                passed,
                checks: checks.clone(),
            }));
            self.incidents[i].checks = checks;
            if passed {
                events.extend(self.resolve(i)?);
            } else {
                self.incidents[i].status = IncidentStatus::Open;
                self.notices.push(format!(
                    "{id}: verification failed; the incident stays open"
                ));
            }
        }
        Ok(events)
    }

    pub(super) fn checks(&self, i: usize) -> Vec<Check> {
        let incident = &self.incidents[i];
        // The incident's own checks first, then what the run and the proposals add.
        let mut checks = self.recovery_checks(i);
        if let Some(change) = &incident.diagnosis.column_change {
            let seen = self
                .latest
                .get(&(incident.monitor.clone(), CheckKind::Schema, None))
                .and_then(|o| o.detail.columns.clone())
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.name.eq_ignore_ascii_case(&change.column));
            // The type as it is now: the one the change made, or the old one back (the
            // cause went away). What the models make of it is their own checks'.
            let now_is = |t: &str| {
                seen.as_ref()
                    .is_some_and(|c| c.data_type.eq_ignore_ascii_case(t))
            };
            let (passed, detail) = match &seen {
                Some(c) if now_is(&change.to) => (
                    true,
                    format!("warehouse column is {}, as the change made it", c.data_type),
                ),
                Some(c) if now_is(&change.from) => (
                    true,
                    format!(
                        "warehouse column is {} again, as before the change",
                        c.data_type
                    ),
                ),
                Some(c) => (
                    false,
                    format!(
                        "warehouse column is {}: neither {} before the change nor {} after it",
                        c.data_type, change.from, change.to
                    ),
                ),
                None => (false, "column not found in the warehouse".to_string()),
            };
            checks.push(Check {
                name: format!(
                    "{}.{} is {}, or {} again",
                    incident.table, change.column, change.to, change.from
                ),
                passed,
                detail,
            });
        }
        if let Some(run) = &incident.run {
            let record = run.finished.as_ref();
            checks.push(Check {
                name: format!("run {} of {} after {} recovered", run.id, run.job, incident.table),
                passed: run.after_recovery && record.is_some_and(|r| r.status == "success"),
                detail: match record {
                    Some(r) if !run.after_recovery => format!(
                        "{}, but queued while {} was still below baseline: the models were built on a partial table",
                        r.status, incident.table
                    ),
                    Some(r) => format!("{}: {}", r.status, r.detail),
                    None => "not finished".to_string(),
                },
            });
        }
        for p in &incident.proposals {
            match &p.body {
                ProposalBody::Diff { file, .. } => checks.push(self.model_check(p, file)),
                ProposalBody::Backfill { tables, .. } if p.state == ProposalState::Approved => {
                    if let Some(model) = tables.first() {
                        checks.push(self.days_within_band(model));
                    }
                }
                _ => {}
            }
        }
        // A diff's model check is among the recovery checks when a column changed.
        let mut seen = std::collections::HashSet::new();
        checks.retain(|c| seen.insert(c.name.clone()));
        checks
    }

    /// A backfill's verification: every one of the table's last seven complete days is
    /// within its band, as its latest volume check judged them.
    fn days_within_band(&self, table: &str) -> Check {
        let name = format!("{table}: daily volumes for the last seven days within the band");
        let latest = self
            .latest
            .values()
            .find(|o| o.check == CheckKind::Volume && o.table.eq_ignore_ascii_case(table));
        let Some(o) = latest else {
            return Check {
                name,
                passed: false,
                detail: "no volume check watches it".to_string(),
            };
        };
        let short: Vec<String> = o
            .detail
            .days
            .iter()
            .filter(|d| !d.partial && d.verdict != crate::detect::VerdictKind::Ok)
            .map(|d| {
                format!(
                    "{} {} rows ({})",
                    d.day,
                    monitor::thousands(d.rows),
                    d.verdict.as_str()
                )
            })
            .collect();
        Check {
            name,
            passed: short.is_empty(),
            detail: if short.is_empty() {
                format!("all within the band at {}", o.at.hour_minute())
            } else {
                short.join(", ")
            },
        }
    }

    /// Does the model's SQL that the chain says is in force run on today's data? What
    /// runs is the content whose hash the chain holds (the approved new version, or the
    /// old one), never whatever the file holds now; a file that differs from it as dbt
    /// reads files fails the check, saying where, instead of being run. Its Jinja is
    /// rendered from the manifest ([`crate::lineage::Lineage::render_model`]), or else the
    /// manifest's compiled SQL is run with the change applied; Jinja that neither can
    /// render is named, and nothing is sent. The dry run itself cannot write, and runs
    /// as a probe ([`super::evidence`]): until it answers the check waits, and says so.
    pub(super) fn model_check(&self, proposal: &Proposal, file: &str) -> Check {
        let name = format!("{} runs on today's data", proposal.target);
        let result = (|| -> Result<u64> {
            let ProposalBody::Diff { old, new, .. } = &proposal.body else {
                anyhow::bail!("{} is not a diff", proposal.id);
            };
            let recorded = self.recorded_hash(&proposal.id)?;
            anyhow::ensure!(
                propose::content_hash(proposal) == proposal.content_hash
                    && recorded.as_deref() == Some(proposal.content_hash.as_str()),
                "{} does not match the content hash on the chain; nothing was run",
                proposal.id
            );
            let (in_force, which) = if proposal.state == ProposalState::Approved {
                (new, "approved")
            } else {
                (old, "original")
            };
            let path = self.project_file(file)?;
            let on_disk =
                std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
            if let Some(difference) =
                propose::file_text::first_difference(&on_disk, in_force, "the chain's")
            {
                anyhow::bail!(
                    "{file} differs from the {which} content on the chain (chain #{}): {difference}; it was changed outside dataward and was not run",
                    self.proposal_seq(&proposal.id).unwrap_or_default()
                );
            }
            let sql = self.renderable(&proposal.target, file, in_force)?;
            let warehouse = self.dbt_warehouse_name().context("no warehouse")?;
            let key = format!("{warehouse}: a dry run of {}: {}", proposal.target, sql);
            let run = Box::new(move |w: &(dyn Warehouse + Sync)| {
                Ok(super::evidence::Answer::DryRun(w.dry_run(&sql)?))
            });
            match self
                .probe(
                    &warehouse,
                    key,
                    Some(super::evidence::Waiter::Verification),
                    run,
                )
                .context("no warehouse")?
            {
                super::evidence::Lookup::Known(super::evidence::Answer::DryRun(rows)) => Ok(rows),
                super::evidence::Lookup::Unavailable { why, .. } => anyhow::bail!(why),
                _ => anyhow::bail!("waiting for the dry run on {warehouse}"),
            }
        })();
        match result {
            Ok(rows) => Check {
                name,
                passed: true,
                detail: format!("{rows} rows, no error"),
            },
            Err(e) => Check {
                name,
                passed: false,
                detail: format!("{e:#}"),
            },
        }
    }

    /// `in_force`, a version of the model `target`, as SQL the warehouse can run:
    /// rendered from the manifest, else the manifest's compiled SQL with the lines that
    /// differ from its raw copy changed. An error names the Jinja neither could render.
    fn renderable(&self, target: &str, file: &str, in_force: &str) -> Result<String> {
        let lineage = self.lineage.as_ref().context("no lineage")?;
        let vars = self
            .project_dir()
            .ok()
            .and_then(|dir| std::fs::read_to_string(dir.join("dbt_project.yml")).ok())
            .map(|text| crate::lineage::project_vars(&text))
            .unwrap_or_default();
        let unrendered = match lineage.render_model(target, in_force, &vars) {
            Ok(sql) => return Ok(sql),
            Err(e) => e,
        };
        let node = lineage.node(lineage.resolve(target)?);
        let compiled = node
            .sql
            .as_deref()
            .filter(|sql| node.raw_sql.as_deref() != Some(*sql));
        let changed = compiled
            .zip(node.raw_sql.as_deref())
            .and_then(|(compiled, raw)| {
                crate::lineage::compiled_with_change(compiled, raw, in_force)
            });
        match changed {
            Some(sql) => Ok(sql),
            None => anyhow::bail!(
                "not run: {file}: {unrendered}; {}",
                if compiled.is_some() {
                    "the manifest's compiled SQL cannot take this change line for line either"
                } else {
                    "the manifest has no compiled SQL for it (run `dbt compile`)"
                }
            ),
        }
    }

    /// The content hash the chain recorded when the proposal was made.
    fn recorded_hash(&self, proposal: &str) -> Result<Option<String>> {
        let Some(record) = self
            .state
            .last_record_naming("proposal", "proposal", proposal)?
        else {
            return Ok(None);
        };
        let payload: serde_json::Value = serde_json::from_str(&record.payload)?;
        Ok(payload["content_hash"].as_str().map(str::to_string))
    }

    fn proposal_seq(&self, proposal: &str) -> Option<u64> {
        self.state
            .last_record_naming("proposal", "proposal", proposal)
            .ok()
            .flatten()
            .map(|record| record.seq)
    }

    /// The warehouse holding dbt's relations: the first one a monitor watches a dbt
    /// source in. With one warehouse, that one.
    pub(super) fn dbt_warehouse(&self) -> Option<&(dyn Warehouse + Sync)> {
        let name = self.dbt_warehouse_name()?;
        self.poller.warehouse(&name).map(|w| w.as_ref())
    }

    pub(super) fn dbt_warehouse_name(&self) -> Option<String> {
        let monitored = self.config.monitor.iter().find(|m| m.source.is_some());
        monitored
            .map(|m| m.warehouse.clone())
            .or_else(|| self.config.warehouse.keys().next().cloned())
    }

    /// Verification passed: resume every approved hold's schedule (intent first), and
    /// resolve once they are all resumed. With no hold, it resolves at once.
    pub(super) fn resolve(&mut self, i: usize) -> Result<Vec<Event>> {
        self.incidents[i].verified = true;
        let id = self.incidents[i].id.clone();
        let holds: Vec<(String, String)> = self.incidents[i]
            .proposals
            .iter()
            .filter(|p| p.state == ProposalState::Approved)
            .filter_map(|p| match &p.body {
                ProposalBody::Hold { job, .. } => Some((p.id.clone(), job.clone())),
                _ => None,
            })
            .collect();
        // Every hold's schedule is put back as it was before it (a job someone had
        // paused first stays paused): the effect says which it was.
        if holds.is_empty() || self.orchestrator.is_none() {
            return self.finish_resolution(i);
        }
        for (proposal, job) in holds {
            self.intend(
                &proposal,
                Effect::SetPaused { job, paused: false },
                Completion::Resumed {
                    incident: id.clone(),
                    proposal: proposal.clone(),
                },
                false,
            )?;
        }
        Ok(Vec::new())
    }

    /// A resolved incident's backfill copies are dropped once its retention has passed,
    /// on the chain. Until then a person can still see what the tables held. The drop
    /// is the engine's own intent, carried out off the engine's thread (on a worker
    /// once it serves) and tried again until it is done, across a restart too; its
    /// completion records `versions_dropped`.
    pub(super) fn drop_expired_versions(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        let retention =
            crate::config::parse_duration(&self.config.verify.retention).expect("validated");
        let retention = TimeDelta::from_std(retention).unwrap_or(TimeDelta::MAX);
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            let expired = incident
                .resolved_at
                .is_some_and(|at| now >= at.naive() + retention);
            if !expired || incident.versions.is_empty() || self.dbt_warehouse().is_none() {
                continue;
            }
            let (id, versions) = (incident.id.clone(), incident.versions.clone());
            if self.intent_pending(&id)? {
                continue;
            }
            self.intend(
                &id,
                Effect::DropVersions {
                    versions: versions.clone(),
                },
                Completion::VersionsDropped {
                    incident: id.clone(),
                    versions,
                },
                false,
            )?;
        }
        Ok(Vec::new())
    }

    /// Requests nobody answered are withdrawn when their incident closes: they must not
    /// escalate or be granted afterwards. Each goes on the chain.
    fn withdraw_pending(&mut self, i: usize) -> Result<Vec<Event>> {
        let incident = self.incidents[i].id.clone();
        let mut events = Vec::new();
        for p in 0..self.incidents[i].proposals.len() {
            let proposal = self.incidents[i].proposals[p].id.clone();
            let pending = self.incidents[i].proposals[p].state == ProposalState::Pending;
            if !pending {
                continue;
            }
            self.incidents[i].proposals[p].state = ProposalState::Withdrawn;
            if let Some(request) = self.requests.get_mut(&proposal) {
                request.state = RequestState::Withdrawn;
            }
            let seq = self.record(
                "withdrawn",
                ENGINE_ACTOR,
                json!({"incident": incident, "proposal": proposal, "why": "the incident closed before anyone decided"}),
            )?;
            events.push(self.event(EventKind::Undo {
                proposal,
                action: "withdrawn: the incident closed before anyone decided".to_string(),
                seq,
            }));
        }
        Ok(events)
    }

    /// Closes a verified incident whose holds are all resumed: the resolution and the
    /// receipt go on the chain.
    pub(super) fn finish_resolution(&mut self, i: usize) -> Result<Vec<Event>> {
        let incident = &self.incidents[i];
        let holds_left = incident.proposals.iter().any(|p| {
            p.state == ProposalState::Approved && matches!(p.body, ProposalBody::Hold { .. })
        });
        if !incident.verified || incident.status == IncidentStatus::Resolved || holds_left {
            return Ok(Vec::new());
        }
        let id = incident.id.clone();
        let mut events = self.withdraw_pending(i)?;
        let incident = &self.incidents[i];
        match incident.closed_by_hand.clone() {
            Some((actor, reason)) => self.record(
                "incident_resolved",
                &actor,
                json!({"incident": id, "how": "by_hand", "reason": reason}),
            )?,
            None if incident.merged_into.is_some() => self.record(
                "incident_resolved",
                ENGINE_ACTOR,
                json!({"incident": id, "how": "merged", "into": incident.merged_into}),
            )?,
            None if incident.recovered_by_itself => self.record(
                "incident_resolved",
                ENGINE_ACTOR,
                json!({"incident": id, "how": "recovered_without_intervention"}),
            )?,
            None => self.record("incident_resolved", ENGINE_ACTOR, json!({"incident": id}))?,
        };
        events.push(self.event(EventKind::IncidentResolved {
            incident: id.clone(),
        }));
        let records = chain::records_about(&*self.state, &id)?;
        let receipt = receipt::build(&records, &id)?;
        let digest = receipt::digest(&receipt);
        let seq = self.record(
            "receipt",
            ENGINE_ACTOR,
            json!({"incident": id, "receipt_hash": digest}),
        )?;
        self.incidents[i].receipt = Some(receipt.to_markdown());
        // The timeline ends with the receipt's own record.
        let records = chain::records_about(&*self.state, &id)?;
        self.incidents[i].timeline = super::timeline::build(&records, &id);
        self.incidents[i].status = IncidentStatus::Resolved;
        self.incidents[i].resolved_at = Some(self.now());
        let how = if let Some(root) = &self.incidents[i].merged_into {
            &format!("merged into {root} as a symptom")
        } else if self.incidents[i].closed_by_hand.is_some() {
            "resolved by hand"
        } else if self.incidents[i].recovered_by_itself {
            "recovered without intervention and resolved"
        } else {
            "verified and resolved"
        };
        self.notices
            .push(format!("{id} {how}; receipt on chain #{seq} (R to read)"));
        events.push(self.event(EventKind::Receipt { incident: id }));
        Ok(events)
    }
}
