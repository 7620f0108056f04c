//! What the engine does with a warehouse probe's answer (see `evidence.rs` for the
//! probes themselves): the diagnoses and verifications that waited for it go on.

use super::api::{Event, IncidentStatus};
use anyhow::Result;

use super::{evidence, Engine};
use crate::config::CheckKind;

impl Engine {
    /// From now on warehouse probes (evidence for diagnoses, verification dry runs) run
    /// on threads of their own, and each answer goes to `post`, to come back through
    /// [`Engine::take_evidence`]. Until then they run at once on the caller's thread.
    pub fn set_evidence_worker(&mut self, post: evidence::Post) {
        self.evidence.on_worker(post);
    }

    /// A probe's answer: the diagnoses that waited for it are re-stated with it (an
    /// incident a schema change opens only on what the data says opens now), and
    /// incidents whose verification waited for a dry run are verified, in one
    /// transaction.
    pub fn take_evidence(&mut self, found: evidence::Found) -> Result<Vec<Event>> {
        let waiters = self.evidence.arrived(found);
        if waiters.is_empty() || self.ensure_database().is_err() {
            return Ok(Vec::new());
        }
        let mut events = self.transact(|e| e.evidence_arrived(waiters))?;
        let (more, _) = self.run_intents()?;
        events.extend(more);
        Ok(events)
    }

    fn evidence_arrived(&mut self, waiters: Vec<evidence::Waiter>) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let (mut verify, mut backfill) = (false, false);
        for waiter in waiters {
            let observation = match waiter {
                evidence::Waiter::Verification => {
                    verify = true;
                    continue;
                }
                evidence::Waiter::Backfill => {
                    backfill = true;
                    continue;
                }
                evidence::Waiter::Diagnosis(observation) => *observation,
            };
            let own = self.incidents.iter().position(|i| {
                i.monitor == observation.monitor
                    && i.table == observation.table
                    && i.status != IncidentStatus::Resolved
            });
            match own {
                Some(i) => {
                    let facts = self.facts(&observation)?;
                    events.extend(self.rediagnose(i, Some(facts), true)?);
                }
                None if observation.check == CheckKind::Schema => {
                    events.extend(self.breach(&observation)?)
                }
                // A symptom of another incident: what remains of that one is said again.
                None => events.extend(self.rediagnose_what_remains()?),
            }
        }
        if backfill {
            events.extend(self.print_finished_backfills()?);
        }
        if verify {
            let now = self.now_time;
            events.extend(self.verify_incidents(now)?);
            events.extend(self.settle_recovered(now)?);
        }
        Ok(events)
    }
}
