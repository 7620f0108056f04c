//! OpenLineage run events in. The listener and the file tail run on threads of their
//! own (in the binary) and hand the events they read to the engine, the state
//! database's one writer, which keeps them and, for a tailed file, where its next read
//! starts, in one transaction: a crash loses neither and repeats nothing. What was kept
//! joins the lineage graph (`lineage::learned`), so blast radii reach the jobs the
//! events name. Failed runs are not judged here.

use std::collections::BTreeMap;

use anyhow::Result;

use super::Engine;
use crate::lineage::openlineage::{Position, RunEvent};
use crate::lineage::{LearnedJob, Lineage};
use crate::store::prelude::*;

/// Events read together: from one request, or one read of a tailed file.
#[derive(Debug, Clone, Default)]
pub struct EventBatch {
    /// Each event with where it came from (`http`, `FILE:LINE`), for the record.
    pub events: Vec<(String, RunEvent)>,
    /// The tailed file these came from and where its next read starts: kept with them.
    pub file: Option<(String, Position)>,
}

impl Engine {
    /// Keep a batch of events (once each: one seen before is skipped) and, for a file,
    /// its next position, in one transaction; then join what they say to the lineage.
    /// Returns how many events were new.
    pub fn store_lineage_events(&mut self, batch: EventBatch) -> Result<usize> {
        self.ensure_database()?;
        let received_at = self.clock.timestamp();
        let new = crate::store::write_on(&self.state, |tx| {
            let new = tx.insert_lineage_events(&batch.events, received_at)?;
            if let Some((path, position)) = &batch.file {
                tx.set_lineage_file_position(path, *position)?;
            }
            Ok(new)
        })?;
        if new > 0 {
            let learned = learned_from(&batch.events);
            self.lineage = Some(
                self.lineage
                    .take()
                    .unwrap_or_else(Lineage::empty)
                    .with_learned(&learned),
            );
        }
        Ok(new)
    }

    /// Where the next read of the tailed file `path` starts, as last kept.
    pub fn lineage_file_position(&self, path: &str) -> Result<Position> {
        Ok(self.state.lineage_file_position(path)?.unwrap_or_default())
    }

    /// How many OpenLineage events are kept.
    pub fn lineage_event_count(&self) -> Result<u64> {
        self.state.lineage_event_count()
    }

    /// Join every job the kept events name to the lineage (at start, and when the
    /// manifest or notes are read again).
    pub(super) fn join_learned_lineage(&mut self) -> Result<()> {
        let learned = self.state.learned_jobs()?;
        if learned.is_empty() {
            return Ok(());
        }
        let base = self.lineage.take().unwrap_or_else(Lineage::empty);
        self.lineage = Some(base.with_learned(&learned));
        Ok(())
    }
}

/// The jobs a batch names, with what each read and wrote.
fn learned_from(events: &[(String, RunEvent)]) -> Vec<LearnedJob> {
    let mut jobs: BTreeMap<_, LearnedJob> = BTreeMap::new();
    for (_, event) in events {
        let job = jobs.entry(event.job.clone()).or_insert_with(|| LearnedJob {
            job: event.job.clone(),
            last_seen: event.event_time,
            inputs: Vec::new(),
            outputs: Vec::new(),
        });
        job.last_seen = job.last_seen.max(event.event_time);
        for input in &event.inputs {
            if !job.inputs.contains(input) {
                job.inputs.push(input.clone());
            }
        }
        for output in &event.outputs {
            if !job.outputs.contains(&output.dataset) {
                job.outputs.push(output.dataset.clone());
            }
        }
    }
    jobs.into_values().collect()
}
