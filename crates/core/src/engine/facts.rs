//! Gathering what a diagnosis needs: the breach as a figure with its unit, the table's
//! other current figures, schema changes here and upstream, the writers the notes name,
//! an open incident upstream, and the model uses a changed column breaks. Reads what
//! the engine holds and its state database; what only a warehouse can say (values that
//! would not convert, rows a model is missing) is asked of a probe
//! ([`super::evidence`]), never waited for: until it answers, the facts say it is
//! pending, and the diagnosis is re-stated when it does.

use super::evidence::{Answer, Lookup, Waiter};
use super::*;
use crate::incident::diagnosis::{BrokenUse, Figure, UpstreamIncident, WriterFact};
use crate::lineage::Risk;
use crate::warehouse::WarehouseError;

/// What the probes asked for one set of facts said: pending, or unavailable and why.
#[derive(Default)]
pub(super) struct Asked {
    pending: Vec<String>,
    unavailable: Vec<(String, String)>,
}

impl Asked {
    /// The answer, when there is one; else it is noted as pending or unavailable.
    fn note(&mut self, what: &str, lookup: Lookup) -> Option<Answer> {
        match lookup {
            Lookup::Known(answer) => return Some(answer),
            Lookup::Pending => self.pending.push(what.to_string()),
            ref unavailable @ Lookup::Unavailable { .. } => self.unavailable.push((
                what.to_string(),
                unavailable.unavailable().unwrap_or_default(),
            )),
        }
        None
    }
}

/// An observation as a figure: its subject and unit come from its check.
pub(super) fn figure(o: &Observation) -> Figure {
    Figure {
        table: o.table.clone(),
        check: o.check,
        column: o.detail.column.clone(),
        value: o.value.unwrap_or_default(),
        verdict: o.verdict,
        expected: o.expected,
        at: o.at,
        day: o.detail.day.clone(),
        partial: o.detail.partial,
        since: o.detail.since,
        writer: o.detail.writer.clone(),
    }
}

impl Engine {
    /// Gathers what diagnosis needs from stored observations and the lineage.
    pub(super) fn facts(&self, observation: &Observation) -> Result<Facts> {
        // A type change weeks ago explains nothing about today's breach.
        let recent = observation.at - TimeDelta::days(1);
        let changes = |monitor: &str| -> Result<Vec<(Timestamp, SchemaChange)>> {
            Ok(monitor::history(&*self.state, monitor, CheckKind::Schema)?
                .into_iter()
                .filter(|o| o.at >= recent)
                .flat_map(|o| {
                    let at = o.at;
                    o.detail.changes.into_iter().map(move |c| (at, c))
                })
                .collect())
        };
        let config = self
            .config
            .monitor
            .iter()
            .find(|m| Config::monitor_name(m) == observation.monitor);
        let source_monitor = config.and_then(|m| m.source.as_ref()).and_then(|s| {
            self.config
                .monitor
                .iter()
                .find(|m| m.warehouse == s.warehouse && m.table == s.table)
        });
        let (source_table, source_changes, source_rows) = match source_monitor {
            Some(m) => {
                let name = Config::monitor_name(m);
                let rows = self
                    .latest
                    .get(&(name.clone(), CheckKind::RowCount, None))
                    .map(figure);
                (Some(m.table.clone()), changes(&name)?, rows)
            }
            None => (None, Vec::new(), None),
        };
        let counts = monitor::history(&*self.state, &observation.monitor, CheckKind::RowCount)?;
        // Three: a reload shows as a count that fell and then rose.
        let recent_counts = counts
            .iter()
            .rev()
            .take(3)
            .rev()
            .filter_map(|o| o.value.map(|v| (o.at, v)))
            .collect();
        // Only figures from the same poll: an older one would be shown as current.
        let others = self
            .latest
            .values()
            .filter(|o| o.monitor == observation.monitor && o.at == observation.at)
            .filter(|o| {
                !(o.check == observation.check && o.detail.column == observation.detail.column)
            })
            .map(figure)
            .collect();
        // Each short day of the table's volume check in this poll, oldest first.
        let short_days = self
            .latest
            .values()
            .filter(|o| {
                o.monitor == observation.monitor
                    && o.at == observation.at
                    && o.check == CheckKind::Volume
            })
            .flat_map(|o| {
                o.detail
                    .days
                    .iter()
                    .filter(|d| d.verdict == crate::detect::VerdictKind::Low)
                    .map(|d| figure(&super::symptoms::on_day(o, Some(&d.day))))
            })
            .collect();
        let table_changes = changes(&observation.monitor)?;
        let mut asked = Asked::default();
        let warehouse = config.map(|m| m.warehouse.clone()).unwrap_or_default();
        // What this poll's schema changes break in the models that read the table.
        let broken_uses = match observation.check {
            CheckKind::Schema => observation
                .detail
                .changes
                .iter()
                .flat_map(|change| match change {
                    SchemaChange::TypeChanged { column, to, .. } => self.broken_uses(
                        &warehouse,
                        observation,
                        &ColumnChange {
                            column: column.clone(),
                            new_type: to.clone(),
                        },
                        &mut asked,
                    ),
                    SchemaChange::Removed { column, .. } => {
                        self.removed_readers(&observation.table, column)
                    }
                    SchemaChange::Added { .. } => Vec::new(),
                })
                .collect(),
            _ => Vec::new(),
        };
        let incremental = self.incremental(&observation.table).map(|mut model| {
            model.missing = self.missing_rows(observation, &model, &mut asked);
            model
        });
        Ok(Facts {
            table: observation.table.clone(),
            breach: figure(observation),
            others,
            short_days,
            source_table,
            source_changes,
            table_changes,
            source_rows,
            recent_counts,
            writers: self.writers(&observation.table),
            upstream_incident: self.upstream_incident(&observation.table),
            broken_uses,
            incremental,
            pending: asked.pending,
            unavailable: asked.unavailable,
        })
    }

    /// The table as an incremental dbt model whose runs reach back a known window, with
    /// the days of the nearest tables upstream that have a volume check, as their latest
    /// check judged them.
    fn incremental(&self, table: &str) -> Option<crate::incident::diagnosis::IncrementalFacts> {
        use crate::incident::diagnosis::{IncrementalFacts, ParentDay};
        use petgraph::Direction::Incoming;
        let lineage = self.lineage.as_ref()?;
        let model = lineage.resolve(table).ok()?;
        let node = lineage.node(model);
        let window = node.window.as_ref()?;
        // Which node each monitored table is, once.
        let volumes: Vec<(petgraph::graph::NodeIndex, &Observation)> = self
            .latest
            .values()
            .filter(|o| o.check == CheckKind::Volume && !o.detail.days.is_empty())
            .filter_map(|o| Some((lineage.resolve(&o.table).ok()?, o)))
            .collect();
        let mut parents = Vec::new();
        let mut seen = std::collections::HashSet::from([model]);
        let mut frontier: Vec<_> = lineage
            .graph()
            .neighbors_directed(model, Incoming)
            .collect();
        while !frontier.is_empty() && parents.is_empty() {
            let mut next = Vec::new();
            for up in frontier {
                if !seen.insert(up) {
                    continue;
                }
                match volumes.iter().find(|(index, _)| *index == up) {
                    Some((_, o)) => parents.extend(o.detail.days.iter().map(|d| {
                        ParentDay {
                            table: o.table.clone(),
                            day: d.day.clone(),
                            rows: d.rows,
                            ok: d.verdict == crate::detect::VerdictKind::Ok,
                            share: d
                                .expected
                                .filter(|r| r.baseline > 0.0)
                                .map(|r| (d.rows / r.baseline * 100.0).round()),
                        }
                    })),
                    None => next.extend(lineage.graph().neighbors_directed(up, Incoming)),
                }
            }
            frontier = next;
        }
        Some(IncrementalFacts {
            model: node.name.clone(),
            file: node.file.clone(),
            window: window.clone(),
            parents,
            missing: None,
        })
    }

    /// For a model short on a whole day its upstream holds in full: the rows the
    /// upstream table holds that day which the model has on no day, by the model's key,
    /// and across how many values of the id columns both share. None without a key, a
    /// timestamp column upstream, or both tables in one warehouse, and while the probe
    /// that counts them has not answered.
    fn missing_rows(
        &self,
        observation: &Observation,
        model: &crate::incident::diagnosis::IncrementalFacts,
        asked: &mut Asked,
    ) -> Option<crate::incident::diagnosis::MissingRows> {
        use crate::detect::VerdictKind;
        let breach = figure(observation);
        if breach.check != CheckKind::Volume || breach.verdict != VerdictKind::Low || breach.partial
        {
            return None;
        }
        let day = breach.day.as_deref()?;
        let parent = model.parents.iter().find(|p| p.day == day && p.ok)?;
        let lineage = self.lineage.as_ref()?;
        let key = lineage.key_of(lineage.resolve(&breach.table).ok()?)?;
        let monitor_of = |table: &str| self.config.monitor.iter().find(|m| m.table == table);
        let (upstream, below) = (monitor_of(&parent.table)?, monitor_of(&breach.table)?);
        if upstream.warehouse != below.warehouse {
            return None;
        }
        let from_time = upstream.timestamp_column.clone()?;
        let (from, into) = (
            crate::warehouse::Relation::parse(&parent.table).ok()?,
            crate::warehouse::Relation::parse(&breach.table).ok()?,
        );
        let date = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
        let (from_table, day) = (parent.table.clone(), day.to_string());
        let what = format!(
            "the rows {from_table} holds on {day} that {} has on no day",
            breach.table
        );
        let job = move |warehouse: &(dyn Warehouse + Sync)| -> Result<Answer, WarehouseError> {
            let ids = |relation| -> Result<Vec<String>, WarehouseError> {
                Ok(warehouse
                    .columns(relation)?
                    .into_iter()
                    .map(|c| c.name)
                    .filter(|name| name.to_lowercase().ends_with("_id"))
                    .collect())
            };
            let upstream_ids = ids(&from)?;
            if !upstream_ids.iter().any(|c| c.eq_ignore_ascii_case(&key)) {
                return Ok(Answer::MissingRows(None));
            }
            let also: Vec<String> = ids(&into)?
                .into_iter()
                .filter(|c| !c.eq_ignore_ascii_case(&key) && upstream_ids.contains(c))
                .take(3)
                .collect();
            let counts = warehouse.missing_keys(&crate::warehouse::KeyGap {
                from: &from,
                from_time: &from_time,
                into: &into,
                day: date,
                key: &key,
                also: &also,
            })?;
            Ok(Answer::MissingRows(Some(
                crate::incident::diagnosis::MissingRows {
                    from: from_table,
                    day,
                    key: (key, counts[0]),
                    across: also.into_iter().zip(counts[1..].iter().copied()).collect(),
                },
            )))
        };
        let lookup = self.probe(
            &below.warehouse,
            format!("{}: {what}", below.warehouse),
            Some(Waiter::Diagnosis(Box::new(observation.clone()))),
            Box::new(job),
        )?;
        match asked.note(&what, lookup)? {
            Answer::MissingRows(missing) => missing,
            _ => None,
        }
    }

    /// Asks `job` of a configured warehouse under `key` (see [`super::evidence`]):
    /// None when the warehouse is not configured.
    pub(super) fn probe(
        &self,
        warehouse: &str,
        key: String,
        waiter: Option<Waiter>,
        job: super::evidence::Job,
    ) -> Option<Lookup> {
        let shared = self.poller.warehouse(warehouse)?;
        let timeout = super::evidence::timeout_of(&self.config, warehouse);
        Some(
            self.evidence
                .ask(key, (warehouse, shared, timeout), waiter, job),
        )
    }

    /// The values of `table.column` that would not convert to `target`, as the probe
    /// under one key for every asker (a diagnosis, the blast radius) counts them.
    pub(super) fn uncastable(
        &self,
        warehouse: &str,
        table: &str,
        column: &str,
        target: &str,
        waiter: Option<Waiter>,
    ) -> Option<(String, Lookup)> {
        let relation = crate::warehouse::Relation::parse(table).ok()?;
        let what = format!("the values of {table}.{column} that do not convert to {target}");
        let (asked_column, asked_target) = (column.to_string(), target.to_string());
        let lookup = self.probe(
            warehouse,
            format!("{warehouse}: {what}"),
            waiter,
            Box::new(move |warehouse| {
                Ok(Answer::Uncastable(warehouse.count_uncastable(
                    &relation,
                    &asked_column,
                    &asked_target,
                )?))
            }),
        )?;
        Some((what, lookup))
    }

    /// The writers the notes name for a table.
    fn writers(&self, table: &str) -> Vec<WriterFact> {
        let Some(lineage) = &self.lineage else {
            return Vec::new();
        };
        let Ok(index) = lineage.resolve(table) else {
            return Vec::new();
        };
        lineage
            .writers_of(index)
            .into_iter()
            .map(|w| WriterFact {
                name: w.name.clone().unwrap_or_else(|| w.id.clone()),
                owner: w.owner.clone(),
                setting: w.setting.clone().zip(w.value.clone()),
                also_writes: w
                    .writes
                    .iter()
                    .filter(|t| lineage.resolve(t).ok() != Some(index))
                    .map(|t| (t.clone(), self.latest_freshness(t)))
                    .collect(),
            })
            .collect()
    }

    /// The latest freshness figure of a table, found by lineage (its name in the notes
    /// may be spelled differently from the monitor's).
    fn latest_freshness(&self, table: &str) -> Option<crate::incident::diagnosis::Figure> {
        let lineage = self.lineage.as_ref()?;
        let wanted = lineage.resolve(table).ok()?;
        self.latest
            .values()
            .filter(|o| o.check == CheckKind::Freshness)
            .find(|o| lineage.resolve(&o.table).ok() == Some(wanted))
            .map(figure)
    }

    /// The first open incident on a table this one reads from, directly or through
    /// other models: its root cause, if it has one.
    pub(super) fn root_incident(&self, table: &str) -> Option<usize> {
        let lineage = self.lineage.as_ref()?;
        let to = lineage.resolve(table).ok()?;
        // Its symptoms' tables are the incident's as well: what is below them is below it.
        self.incidents.iter().position(|i| {
            i.status != IncidentStatus::Resolved
                && !i.table.eq_ignore_ascii_case(table)
                && std::iter::once(&i.table)
                    .chain(i.symptoms.iter().map(|s| &s.table))
                    .any(|t| {
                        lineage
                            .resolve(t)
                            .is_ok_and(|from| lineage.is_downstream(from, to))
                    })
        })
    }

    /// An open incident whose writer stalled, when that writer also writes this table:
    /// one stalled loader is one root cause, however many tables it leaves behind.
    pub(super) fn stalled_writer_incident(&self, table: &str) -> Option<usize> {
        let mine: Vec<String> = self.writers(table).into_iter().map(|w| w.name).collect();
        if mine.is_empty() {
            return None;
        }
        self.incidents.iter().position(|i| {
            i.status != IncidentStatus::Resolved
                && i.diagnosis.kind == crate::incident::diagnosis::CauseKind::StalledWriter
                && !i.table.eq_ignore_ascii_case(table)
                && self
                    .writers(&i.table)
                    .iter()
                    .any(|w| mine.contains(&w.name))
        })
    }

    fn upstream_incident(&self, table: &str) -> Option<UpstreamIncident> {
        let i = &self.incidents[self.root_incident(table)?];
        Some(UpstreamIncident {
            id: i.id.clone(),
            table: i.table.clone(),
            cause: i.diagnosis.cause.clone(),
        })
    }

    /// The uses of a changed column in the models that read the table which fail on its
    /// new type: those the dialect refuses whatever the data, and those that depend on
    /// the data where the warehouse holds values that would not convert.
    pub(super) fn broken_uses(
        &self,
        warehouse: &str,
        observation: &Observation,
        change: &ColumnChange,
        asked: &mut Asked,
    ) -> Vec<BrokenUse> {
        let table = &observation.table;
        let Some(lineage) = &self.lineage else {
            return Vec::new();
        };
        let Ok(from) = lineage.resolve(table) else {
            return Vec::new();
        };
        let blast = lineage.blast_radius(from, Some(change));
        let mut counted: BTreeMap<String, Option<(String, Lookup)>> = BTreeMap::new();
        let mut broken = Vec::new();
        // Further down, a column of the same name may be a model's own output computed
        // from it: only readers that see the column itself are judged.
        for impact in blast
            .nodes
            .iter()
            .filter(|n| blast.sees_column(&n.unique_id))
        {
            let Some(finding) = &impact.column else {
                continue;
            };
            for used in &finding.uses {
                let reason = match &used.risk {
                    Risk::Safe => continue,
                    Risk::Breaks => used.reason.clone(),
                    Risk::DependsOnData { target_type } => {
                        let count = counted.entry(target_type.clone()).or_insert_with(|| {
                            let counted = self.uncastable(
                                warehouse,
                                table,
                                &change.column,
                                target_type,
                                Some(Waiter::Diagnosis(Box::new(observation.clone()))),
                            );
                            if let Some((what, lookup)) = &counted {
                                asked.note(what, lookup.clone());
                            }
                            counted
                        });
                        match count.as_ref().map(|(_, lookup)| lookup) {
                            // Not knowing is said, not taken for "it converts".
                            Some(unavailable @ Lookup::Unavailable { .. }) => format!(
                                "whether the values of {table}.{} convert to {target_type} is not known: evidence unavailable: {}",
                                change.column,
                                unavailable.unavailable().unwrap_or_default()
                            ),
                            Some(Lookup::Known(Answer::Uncastable(Some(u)))) if u.rows > 0 => format!(
                                "{} values of {table}.{} do not convert to {target_type} (e.g. {})",
                                monitor::thousands(u.rows as f64),
                                change.column,
                                u.examples
                                    .iter()
                                    .map(|e| format!("{e:?}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                            _ => continue,
                        }
                    }
                };
                broken.push(BrokenUse {
                    model: impact.name.clone(),
                    expression: used.expression.clone(),
                    reason,
                });
            }
        }
        broken
    }
}

impl Engine {
    /// The models that read a column the table no longer has: each fails on its next run.
    fn removed_readers(&self, table: &str, column: &str) -> Vec<BrokenUse> {
        let Some(lineage) = &self.lineage else {
            return Vec::new();
        };
        let Ok(from) = lineage.resolve(table) else {
            return Vec::new();
        };
        let change = ColumnChange {
            column: column.to_string(),
            new_type: String::new(),
        };
        let blast = lineage.blast_radius(from, Some(&change));
        blast
            .nodes
            .iter()
            .filter(|n| blast.sees_column(&n.unique_id))
            .filter(|n| n.column.as_ref().is_some_and(|c| c.reads))
            .map(|n| BrokenUse {
                model: n.name.clone(),
                expression: column.to_string(),
                reason: format!("{table} no longer has {column}: the model fails on its next run"),
            })
            .collect()
    }
}
