//! A backfill's undo puts back only what the backfill rebuilt, and never rows loaded
//! since: each copy keeps the days its backfill rebuilt in that table (its scope), the
//! table is printed day by day once the backfill's run finishes, and the undo refuses
//! when a day it would put back no longer matches that print.

use crate::warehouse::{BackfillScope, Relation, TableVersion, Warehouse};

use super::evidence::{Answer, Lookup, Waiter};

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
    /// compared against. The prints are a warehouse probe (`evidence`), never read on
    /// the engine's thread once it serves: asked here, recorded when every table's has
    /// come back (`Waiter::Backfill` brings the engine back here). A warehouse that
    /// cannot be read now is asked again next turn.
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
            let Some(warehouse) = self.dbt_warehouse_name() else {
                continue;
            };
            let mut versions = incident.versions.clone();
            let (mut waiting, mut failed) = (false, None);
            for version in versions.iter_mut().filter(|v| unprinted(v)) {
                let column = version.scope.as_ref().and_then(|s| s.column.clone());
                let table = version.table.clone();
                let key = format!(
                    "{warehouse}: day prints of {} after {}'s backfill ({})",
                    version.table, incident.id, version.copy
                );
                let job = move |w: &(dyn Warehouse + Sync)| {
                    let relation = Relation::parse(&table)?;
                    Ok(Answer::DayPrints(
                        w.day_prints(&relation, column.as_deref())?,
                    ))
                };
                let lookup = self.probe(
                    &warehouse,
                    key.clone(),
                    Some(Waiter::Backfill),
                    Box::new(job),
                );
                match lookup {
                    Some(Lookup::Known(Answer::DayPrints(prints))) => version.after = Some(prints),
                    Some(Lookup::Pending) => waiting = true,
                    Some(lookup) => {
                        let why = lookup
                            .unavailable()
                            .unwrap_or_else(|| "no such warehouse configured".to_string());
                        // Asked again next turn, not at the next poll only.
                        self.evidence.forget(&key);
                        failed = Some(format!(
                            "{}: {} not read after its backfill yet: {why}",
                            incident.id, version.table
                        ));
                        break;
                    }
                    None => {
                        failed = Some(format!(
                            "{}: {} not read after its backfill yet: warehouse {warehouse} is not configured",
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
            if waiting {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::orchestrator::RunRecord;
    use crate::warehouse::sqlite::SqliteWarehouse;
    use std::path::Path;
    use std::sync::mpsc;
    use std::time::Duration;

    const CONFIG: &str = "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [verify]\nretention = \"1h\"\n\n\
         [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n\n\
         [[monitor]]\nwarehouse = \"local\"\ntable = \"orders\"\nchecks = [\"row_count\"]\n\
         every = \"1h\"\nexpected_rows = 100000\n";

    fn now() -> NaiveDateTime {
        crate::clock::Clock::wall().naive()
    }

    fn engine_on(dir: &Path) -> Engine {
        let me = Actor::current();
        let text = format!(
            "[people.{:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n{CONFIG}",
            me.user.clone().unwrap_or_default()
        );
        let path = dir.join("dataward.toml");
        std::fs::write(&path, &text).unwrap();
        let config = crate::config::Config::parse(&text, &path).unwrap();
        let state = crate::store::open(&dir.join("dataward.db")).unwrap();
        Engine::new(config, state, None, &me).unwrap()
    }

    /// An engine whose one incident (orders far below its expected rows) has a real
    /// copy of `main.orders` in the warehouse, as a backfill takes it.
    fn engine_with_a_copy(dir: &Path) -> (Engine, TableVersion) {
        let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
        wh.execute_batch("CREATE TABLE orders (id INTEGER); INSERT INTO orders VALUES (1), (2);")
            .unwrap();
        let mut engine = engine_on(dir);
        engine.tick(now()).unwrap();
        assert_eq!(engine.incidents.len(), 1, "the monitor opened an incident");
        let warehouse = SqliteWarehouse::new(&dir.join("wh.db"), Default::default());
        let mut version = warehouse
            .snapshot_table(&Relation::parse("main.orders").unwrap(), "inc_0001_p1")
            .unwrap();
        version.scope = Some(BackfillScope {
            column: None,
            days: None,
        });
        (engine, version)
    }

    fn copy_exists(dir: &Path, version: &TableVersion) -> bool {
        let name = Relation::parse(&version.copy).unwrap().table;
        let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
        wh.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = ?1",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            == 1
    }

    fn records(engine: &Engine, kind: &str) -> usize {
        let id = &engine.incidents[0].id;
        (chain::records_about(&*engine.state, id).unwrap().iter())
            .filter(|r| r.kind == kind)
            .count()
    }

    /// Issue 27: the prints a backfill's undo compares with are a warehouse probe. With
    /// a worker, the engine asks and goes on: nothing is read on its thread, and the
    /// prints are recorded when the probe's answer comes back as an input.
    #[test]
    fn a_finished_backfill_is_printed_by_a_probe_off_the_engines_thread() {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, version) = engine_with_a_copy(dir.path());
        let (tx, answers) = mpsc::channel();
        engine.set_evidence_worker(Arc::new(move |found| {
            let _ = tx.send(found);
        }));
        engine.incidents[0].versions = vec![version];
        engine.incidents[0].run = Some(RunState {
            id: "7".into(),
            job: "job.backfill".into(),
            after_recovery: true,
            finished: Some(RunRecord {
                id: "7".into(),
                job: "job.backfill".into(),
                status: "success".into(),
                link: None,
                requested_at: Some(engine.now()),
                started_at: None,
                finished_at: None,
                detail: String::new(),
            }),
        });

        engine.transact(|e| e.print_finished_backfills()).unwrap();
        assert!(
            engine.incidents[0].versions[0].after.is_none(),
            "the table was read on the engine's thread"
        );
        assert_eq!(records(&engine, "backfill_printed"), 0);

        let found = answers
            .recv_timeout(Duration::from_secs(60))
            .expect("the probe answers");
        engine.take_evidence(found).unwrap();
        let after = engine.incidents[0].versions[0].after.clone();
        assert_eq!(
            after.map(|p| p.iter().map(|d| d.rows).sum::<u64>()),
            Some(2)
        );
        assert_eq!(records(&engine, "backfill_printed"), 1);
    }

    /// Issue 27: an expired copy is dropped by the engine's own intent, carried out
    /// off the turn (on a worker once it serves). The intent commits first; an engine
    /// killed before the drop finds it pending at start and drops the copy then,
    /// recording it once.
    #[test]
    fn an_expired_copy_is_dropped_by_an_intent_that_a_restart_carries_out() {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, version) = engine_with_a_copy(dir.path());
        let resolved = now() - TimeDelta::hours(2);
        engine.incidents[0].versions = vec![version.clone()];
        engine.incidents[0].status = IncidentStatus::Resolved;
        engine.incidents[0].resolved_at = Some(Timestamp::from_naive(resolved));

        // The turn's part only, as if the engine died (kill -9) right after it.
        engine.transact(|e| e.drop_expired_versions(now())).unwrap();
        assert!(
            copy_exists(dir.path(), &version),
            "the copy was dropped inside the turn, on the engine's thread"
        );
        assert_eq!(engine.state.pending_intents().unwrap().len(), 1);
        assert_eq!(records(&engine, "versions_dropped"), 0);
        drop(engine);

        let mut engine = engine_on(dir.path());
        engine.tick(now()).unwrap();
        assert!(
            !copy_exists(dir.path(), &version),
            "dropped after the restart"
        );
        assert!(engine.state.pending_intents().unwrap().is_empty());
        assert_eq!(records(&engine, "versions_dropped"), 1);
    }
}
