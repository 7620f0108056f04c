//! Recovery: each incident is judged by its own checks, the one that opened it and each
//! symptom's: freshness back within cadence, volume back within band, the null rate
//! back within range, the row count back at its baseline, the models that broke built
//! again. An incident whose checks recover and hold for the settle window, with no run
//! outstanding, is verified and resolved by itself.

use super::symptoms::SymptomSource;
use super::*;
use crate::incident::diagnosis::CauseKind;

impl Engine {
    /// Each of the incident's own checks as it stands now.
    pub(super) fn recovery_checks(&self, i: usize) -> Vec<Check> {
        let incident = &self.incidents[i];
        let mut checks = vec![self.root_check(i)];
        checks.extend(self.rebuilt_checks(i));
        if incident.check != CheckKind::Schema && incident.diagnosis.column_change.is_some() {
            for p in &incident.proposals {
                if let ProposalBody::Diff { file, .. } = &p.body {
                    checks.push(self.model_check(p, file));
                }
            }
        }
        for symptom in &incident.symptoms {
            checks.push(match &symptom.source {
                SymptomSource::Check {
                    monitor,
                    check,
                    column,
                } => self.check_back(
                    monitor,
                    *check,
                    column.as_deref(),
                    symptom.day.as_deref(),
                    symptom.at,
                    false,
                ),
                SymptomSource::Run { node } => Check {
                    name: format!("{} built by a run", symptom.table),
                    passed: symptom.recovered,
                    detail: if symptom.recovered {
                        format!("{node} built successfully since")
                    } else {
                        symptom.observed.clone()
                    },
                },
            });
        }
        checks
    }

    /// The check that opened the incident, on its own table: always the first of its
    /// recovery checks.
    pub(super) fn root_check(&self, i: usize) -> Check {
        let incident = &self.incidents[i];
        if incident.failed_run.is_some() {
            return self.failed_run_back(i);
        }
        if incident.check == CheckKind::Schema {
            return self.schema_back(i);
        }
        self.check_back(
            &incident.monitor,
            incident.check,
            incident.column.as_deref(),
            incident.day.as_deref(),
            incident.opened_at,
            incident.diagnosis.kind == CauseKind::RefillAfterTypeChange,
        )
    }

    /// A scheduled job that ran while the table was wrong built its models from it:
    /// they are wrong until it runs again after the table is back. Known from the
    /// pipelines bar; without a scheduler there is nothing to judge.
    fn rebuilt_checks(&self, i: usize) -> Vec<Check> {
        let incident = &self.incidents[i];
        incident
            .blast
            .iter()
            .filter(|n| n.kind == "job")
            .filter_map(|job| {
                let pipeline = self.pipelines.iter().find(|p| p.name == job.name)?;
                let ran = pipeline.last_run_at?;
                if ran < incident.opened_at {
                    return None;
                }
                let passed = incident.root_back_at.is_some_and(|back| ran >= back);
                Some(Check {
                    name: format!("the {} rebuilt after {} recovered", job.name, incident.table),
                    passed,
                    detail: if passed {
                        format!("last ran at {}", ran.hour_minute())
                    } else {
                        format!(
                            "last ran at {}, while {} was not back: what it built is wrong until it runs again",
                            ran.hour_minute(),
                            incident.table
                        )
                    },
                })
            })
            .collect()
    }

    /// Is the check back within range, measured after `since`? A refilling table must be
    /// back at its baseline, not merely inside the band: a run before that builds on a
    /// partial table.
    fn check_back(
        &self,
        monitor: &str,
        check: CheckKind,
        column: Option<&str>,
        day: Option<&str>,
        since: Timestamp,
        at_baseline: bool,
    ) -> Check {
        let latest = self
            .latest
            .get(&(monitor.to_string(), check, column.map(str::to_string)));
        let Some(o) = latest else {
            return Check {
                name: format!("{monitor} {check:?} back within range"),
                passed: false,
                detail: "not measured".to_string(),
            };
        };
        let figure = super::facts::figure(o);
        let mut subject = figure.subject();
        if let Some(day) = day {
            if check == CheckKind::Volume {
                subject = format!("rows loaded into {} on {day}", o.table);
            }
        }
        let name = format!("{subject} back within range");
        if o.at < since || o.health != monitor::Health::Ok {
            return Check {
                name,
                passed: false,
                detail: format!(
                    "not measured since {}{}",
                    since.hour_minute(),
                    o.detail
                        .message
                        .as_deref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
            };
        }
        // A day's volume is judged on that day, as later polls see it again (reloaded
        // or not), not on whichever day is the headline now.
        if let (CheckKind::Volume, Some(day)) = (check, day) {
            if let Some(judged) = o.detail.days.iter().find(|d| d.day == day) {
                let expected = judged
                    .expected
                    .map(|r| {
                        format!(
                            "{}..{}",
                            monitor::thousands(r.low),
                            monitor::amount(CheckKind::Volume, r.high)
                        )
                    })
                    .unwrap_or_else(|| "learning".to_string());
                return Check {
                    name,
                    passed: judged.verdict == crate::detect::VerdictKind::Ok,
                    detail: format!(
                        "{}{} at {}, expected {expected}",
                        monitor::amount(CheckKind::Volume, judged.rows),
                        if judged.partial { " so far" } else { "" },
                        o.at.hour_minute()
                    ),
                };
            }
        }
        let mut passed = o.verdict == crate::detect::VerdictKind::Ok;
        if at_baseline {
            passed &= matches!((o.value, o.expected), (Some(v), Some(r)) if v >= r.baseline);
        }
        Check {
            name,
            passed,
            detail: format!(
                "{} observed at {}, expected {}",
                o.observed_text(),
                o.at.hour_minute(),
                o.expected_text()
            ),
        }
    }

    /// The latest figure of the check that opened the incident, whichever way it went:
    /// what the header shows as "now". A volume incident is about one day, so it is that
    /// day's figure as the latest poll judged it again, not whichever day is newest.
    pub(super) fn latest_reading(&self, incident: &Incident) -> Option<Reading> {
        let o = self.latest.get(&(
            incident.monitor.clone(),
            incident.check,
            incident.column.clone(),
        ))?;
        if o.health != monitor::Health::Ok {
            return Some(Reading {
                observed: o
                    .detail
                    .message
                    .clone()
                    .unwrap_or_else(|| "not measured".to_string()),
                verdict: VerdictKind::Unknown,
                band: None,
                at: o.at,
            });
        }
        if let (CheckKind::Volume, Some(day)) = (incident.check, incident.day.as_deref()) {
            let judged = o.detail.days.iter().find(|d| d.day == day)?;
            return Some(Reading {
                observed: format!(
                    "{}{}",
                    monitor::amount(CheckKind::Volume, judged.rows),
                    if judged.partial { " so far" } else { "" }
                ),
                verdict: judged.verdict.into(),
                band: judged.expected.map(|r| band(CheckKind::Volume, r)),
                at: o.at,
            });
        }
        Some(Reading {
            observed: o.observed_text(),
            verdict: o.verdict.into(),
            band: o.expected.map(|r| band(o.check, r)),
            at: o.at,
        })
    }

    /// A schema change that broke models is over when the column has its old type back,
    /// or when every diff proposed for it is approved and its model runs on today's data.
    fn schema_back(&self, i: usize) -> Check {
        let incident = &self.incidents[i];
        let columns = self
            .latest
            .get(&(incident.monitor.clone(), CheckKind::Schema, None))
            .and_then(|o| o.detail.columns.clone())
            .unwrap_or_default();
        if let Some(column) = &incident.diagnosis.removed_column {
            let back = columns.iter().any(|c| c.name.eq_ignore_ascii_case(column));
            return Check {
                name: format!(
                    "{}.{column} is there for the models that read it",
                    incident.table
                ),
                passed: back,
                detail: if back {
                    format!("{column} is back")
                } else {
                    format!("{} still has no {column}", incident.table)
                },
            };
        }
        let Some(change) = &incident.diagnosis.column_change else {
            return Check {
                name: format!("{} schema", incident.table),
                passed: false,
                detail: "no column change recorded".to_string(),
            };
        };
        let name = format!(
            "models that read {}.{} run on it",
            incident.table, change.column
        );
        let now_type = columns
            .into_iter()
            .find(|c| c.name.eq_ignore_ascii_case(&change.column))
            .map(|c| c.data_type);
        if now_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case(&change.from))
        {
            return Check {
                name,
                passed: true,
                detail: format!("{} is {} again", change.column, change.from),
            };
        }
        let diffs: Vec<&Proposal> = incident
            .proposals
            .iter()
            .filter(|p| p.kind == ProposalKind::Diff)
            .collect();
        if diffs.is_empty() || diffs.iter().any(|p| p.state != ProposalState::Approved) {
            return Check {
                name,
                passed: false,
                detail: format!(
                    "{} is {}; {}",
                    change.column,
                    now_type.as_deref().unwrap_or("missing"),
                    if diffs.is_empty() {
                        "no diff proposed"
                    } else {
                        "a diff is not approved yet"
                    }
                ),
            };
        }
        let failed: Vec<String> = diffs
            .iter()
            .filter_map(|p| match &p.body {
                ProposalBody::Diff { file, .. } => {
                    let check = self.model_check(p, file);
                    (!check.passed).then(|| format!("{}: {}", check.name, check.detail))
                }
                _ => None,
            })
            .collect();
        Check {
            name,
            passed: failed.is_empty(),
            detail: if failed.is_empty() {
                "every approved diff runs on today's data".to_string()
            } else {
                failed.join("; ")
            },
        }
    }

    /// Is the incident's own table back (its opening check)? A run waits for this; the
    /// symptoms downstream are what the run rebuilds, so it cannot wait for them.
    pub fn recovered(&self, incident: &str) -> bool {
        self.incidents
            .iter()
            .position(|i| i.id == incident)
            .is_some_and(|i| self.root_check(i).passed)
    }

    /// Marks each symptom whose own check is back, and resolves incidents whose checks
    /// all recovered and held for the settle window with nothing outstanding: no run
    /// queued or unfinished, no approved hold (a hold waits for its run).
    pub(super) fn settle_recovered(&mut self, now: NaiveDateTime) -> Result<Vec<Event>> {
        let settle = crate::config::parse_duration(&self.config.verify.settle).expect("validated");
        let settle = TimeDelta::from_std(settle).expect("small");
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            if self.incidents[i].status != IncidentStatus::Open || self.incidents[i].verified {
                continue;
            }
            let asked = self.evidence.pending_seen();
            let checks = self.recovery_checks(i);
            if self.evidence.pending_seen() != asked {
                // A dry run is out on a worker: judged again when it answers.
                continue;
            }
            let incident = &mut self.incidents[i];
            let symptom_checks = &checks[checks.len() - incident.symptoms.len()..];
            for (symptom, check) in incident.symptoms.iter_mut().zip(symptom_checks) {
                if matches!(symptom.source, SymptomSource::Check { .. }) {
                    symptom.recovered = check.passed;
                }
            }
            match (checks[0].passed, &incident.root_back_at) {
                (true, None) => incident.root_back_at = Some(Timestamp::from_naive(now)),
                (false, Some(_)) => incident.root_back_at = None,
                _ => {}
            }
            let waiting = incident.run.as_ref().is_some_and(|r| r.finished.is_none())
                || incident
                    .proposals
                    .iter()
                    .any(|p| p.kind == ProposalKind::Hold && p.state == ProposalState::Approved);
            if waiting || !checks.iter().all(|c| c.passed) {
                incident.recovered_since = None;
                continue;
            }
            let since = match incident.recovered_since {
                Some(at) => at.naive(),
                None => {
                    incident.recovered_since = Some(Timestamp::from_naive(now));
                    now
                }
            };
            if now < since + settle {
                continue;
            }
            incident.recovered_by_itself = !incident
                .proposals
                .iter()
                .any(|p| matches!(p.state, ProposalState::Approved | ProposalState::Completed));
            let id = incident.id.clone();
            self.record(
                "verification",
                ENGINE_ACTOR,
                json!({"incident": id, "passed": true, "checks": checks, "how": "recovered",
                       "held_since": Timestamp::from_naive(since)}),
            )?;
            events.push(self.event(EventKind::Verification {
                incident: id,
                passed: true,
                checks: checks.clone(),
            }));
            self.incidents[i].checks = checks;
            events.extend(self.resolve(i)?);
        }
        Ok(events)
    }
}

/// A check's band as people read it: "18,243..30,405 rows", "0.00%..0.20%", or for
/// freshness the longest gap allowed, "15m".
fn band(check: CheckKind, r: crate::detect::Range) -> String {
    match check {
        CheckKind::NullRate => format!("{:.2}%..{:.2}%", r.low * 100.0, r.high * 100.0),
        CheckKind::Freshness => monitor::human_seconds(r.high),
        _ => format!(
            "{}..{}",
            monitor::thousands(r.low),
            monitor::amount(check, r.high)
        ),
    }
}
