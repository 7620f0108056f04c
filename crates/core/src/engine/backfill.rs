//! A backfill's undo puts back only what the backfill rebuilt, and never rows loaded
//! since: each copy keeps the days its backfill rebuilt in that table (its scope), the
//! table is printed day by day once the backfill's run finishes, and the undo refuses
//! when a day it would put back no longer matches that print.

use crate::warehouse::{BackfillScope, Relation, TableVersion, Warehouse};

use super::*;

impl Engine {
    /// What `command` rebuilds in `table`: the days it names (`--event-time-start` /
    /// `--event-time-end`) when the table's model is microbatch, which dbt rebuilds for
    /// those days alone; the whole table for any other model, or a command naming no
    /// days. The event-time column is kept either way: it tells the days apart.
    pub(super) fn backfill_scope(&self, table: &str, command: &str) -> BackfillScope {
        let window = self.lineage.as_ref().and_then(|lineage| {
            lineage
                .graph()
                .node_weights()
                .find(|n| {
                    n.relation_name
                        .as_deref()
                        .is_some_and(|r| crate::propose::schema_and_table(r) == table)
                })
                .and_then(|n| n.window.clone())
        });
        let Some(window) = window else {
            return BackfillScope {
                column: None,
                days: None,
            };
        };
        let words: Vec<&str> = command.split_whitespace().collect();
        let flag = |name: &str| {
            words
                .windows(2)
                .find(|w| w[0] == name)
                .map(|w| w[1].to_string())
        };
        let microbatch = matches!(
            window.source,
            crate::lineage::WindowSource::Microbatch { .. }
        );
        let days = match (
            microbatch,
            flag("--event-time-start"),
            flag("--event-time-end"),
        ) {
            (true, Some(first), Some(end)) => Some((first, end)),
            _ => None,
        };
        BackfillScope {
            column: window.column.clone(),
            days,
        }
    }

    /// Prints each table of a backfill whose run has finished, once: what its undo
    /// compares the table with. On the chain, so the receipt can say what the undo
    /// compared against. A warehouse that cannot be read now is tried again next turn.
    pub(super) fn print_finished_backfills(&mut self) -> Result<Vec<Event>> {
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            let finished = incident.run.as_ref().is_some_and(|r| r.finished.is_some());
            // A copy taken before scopes were kept has no print to take now: the table
            // may have changed long since its backfill, and its undo refuses, saying so.
            let unprinted = |v: &TableVersion| v.scope.is_some() && v.after.is_none();
            if !finished || !incident.versions.iter().any(unprinted) {
                continue;
            }
            let Some(warehouse) = self.dbt_warehouse() else {
                continue;
            };
            let mut versions = incident.versions.clone();
            let mut failed = None;
            for version in versions.iter_mut().filter(|v| unprinted(v)) {
                let column = version.scope.as_ref().and_then(|s| s.column.as_deref());
                match Relation::parse(&version.table)
                    .and_then(|relation| warehouse.day_prints(&relation, column))
                {
                    Ok(prints) => version.after = Some(prints),
                    Err(e) => {
                        failed = Some(format!(
                            "{}: {} not read after its backfill yet: {e}",
                            incident.id, version.table
                        ));
                        break;
                    }
                }
            }
            if let Some(notice) = failed {
                self.notices.push(notice);
                continue;
            }
            let id = incident.id.clone();
            self.record(
                "backfill_printed",
                ENGINE_ACTOR,
                json!({"incident": id, "versions": versions,
                       "why": "the tables as the backfill's run left them: its undo puts back nothing changed since"}),
            )?;
            self.incidents[i].versions = versions;
            self.settled.remove(&id);
        }
        Ok(Vec::new())
    }
}

/// Puts back what a backfill rebuilt, every table or none: each is checked first, and
/// each restore checks again inside its own transaction. Returns what was done, in
/// words, for the chain and the receipt. (On an effect worker: see `effects`.)
pub(super) fn restore_backfill(
    warehouse: &dyn Warehouse,
    versions: &[TableVersion],
) -> Result<String> {
    // Every table's reason at once: a person fixes them all before trying again.
    let mut refusals = Vec::new();
    for version in versions {
        let relation = Relation::parse(&version.table)?;
        let column = version.scope.as_ref().and_then(|s| s.column.as_deref());
        let now = warehouse.day_prints(&relation, column)?;
        if let Err(refused) = crate::warehouse::check_unchanged_since(&relation, version, &now) {
            refusals.push(refused.to_string());
        }
    }
    anyhow::ensure!(
        refusals.is_empty(),
        "{}; nothing was restored",
        refusals.join("; ")
    );
    let mut done = Vec::new();
    for version in versions {
        let relation = Relation::parse(&version.table)?;
        let restored = warehouse
            .restore_table(&relation, version)
            .with_context(|| format!("restoring {} from {}", version.table, version.copy))?;
        let what = match version.scope.as_ref().filter(|s| s.days.is_some()) {
            Some(scope) => format!("{}'s {}", version.table, scope.describe()),
            None => format!("{} whole", version.table),
        };
        let mut line = format!(
            "restored {what} as before the backfill ({} rows from {})",
            restored.rows, version.copy
        );
        if !restored.kept.is_empty() {
            let kept: u64 = restored.kept.iter().map(|c| c.rows()).sum();
            let days: Vec<&str> = restored
                .kept
                .iter()
                .map(|c| c.day.as_deref().unwrap_or("no event time"))
                .collect();
            line.push_str(&format!(
                "; kept {kept} rows changed since the backfill outside it, on {}",
                days.join(", ")
            ));
        }
        done.push(line);
    }
    Ok(done.join("; "))
}
