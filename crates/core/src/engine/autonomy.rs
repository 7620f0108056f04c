//! What the engine does on its own, as the policy allows: L4 holds, L3/L4 runs, and
//! requests that expire and escalate as time passes.

use super::intent::{Completion, Decided, Effect};
use super::*;

impl Engine {
    /// At L4, a hold of the `pause_job` class is carried out at once, without approval,
    /// and recorded as dataward's own act once the job is paused. Code diffs always wait
    /// for the owner. The org-wide stop halts this like every other dispatch.
    pub(super) fn act_autonomously(&mut self, i: usize) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for p in 0..self.incidents[i].proposals.len() {
            let proposal = self.incidents[i].proposals[p].clone();
            if proposal.kind != ProposalKind::Hold
                || approve::autonomy(&self.config, &proposal.target) < 4
                || !approve::class_allowed(&self.config, &proposal.target, "pause_job")
            {
                continue;
            }
            if let Err(e) = stop::ensure_not_stopped(&*self.state) {
                let reason = format!("{e:#}");
                self.notices.push(format!(
                    "{}: dataward did not pause {}: {reason}",
                    self.incidents[i].id, proposal.target
                ));
                events.push(self.event(EventKind::Refused {
                    command: format!("autonomous {}", proposal.id),
                    reason,
                }));
                continue;
            }
            let ProposalBody::Hold { job, .. } = &proposal.body else {
                continue;
            };
            self.intend(
                &proposal.id,
                Effect::SetPaused {
                    job: job.clone(),
                    paused: true,
                },
                Completion::Decision(Decided {
                    incident: self.incidents[i].id.clone(),
                    proposal: proposal.id.clone(),
                    verdict: Verdict::Autonomous,
                    actor: ENGINE_ACTOR.to_string(),
                    actor_display: "dataward".to_string(),
                    content_hash: proposal.content_hash.clone(),
                    reason: "L4: pause_job runs without approval".to_string(),
                }),
                false,
            )?;
        }
        Ok(events)
    }

    /// Unanswered requests expire and escalate as time passes; never granted.
    pub(super) fn lapse_requests(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let ids: Vec<String> = self.requests.keys().cloned().collect();
        for id in ids {
            let lapses = {
                let request = self.requests.get_mut(&id).expect("listed");
                request.tick(&self.config, self.now_time)
            };
            if !lapses.is_empty() {
                // Who may decide it changed: its incident shows that.
                self.incidents
                    .mark(|i| i.proposals.iter().any(|p| p.id == id));
            }
            for lapse in lapses {
                let (i, p) = self.find_proposal(&id)?;
                let incident = self.incidents[i].id.clone();
                match lapse {
                    Lapse::Escalated { to, at } => {
                        let seq = self.record(
                            "escalation",
                            ENGINE_ACTOR,
                            json!({"incident": incident, "proposal": id, "to": to, "due": at}),
                        )?;
                        self.notices
                            .push(format!("{id} unanswered: escalated to {to}"));
                        events.push(self.event(EventKind::Escalated {
                            proposal: id.clone(),
                            to,
                            seq,
                        }));
                    }
                    Lapse::Expired { at } => {
                        let seq = self.record(
                            "expiry",
                            ENGINE_ACTOR,
                            json!({"incident": incident, "proposal": id, "due": at}),
                        )?;
                        self.incidents[i].proposals[p].state = ProposalState::Expired;
                        self.notices
                            .push(format!("{id} expired unanswered; nothing was granted"));
                        events.push(self.event(EventKind::Expired {
                            proposal: id.clone(),
                            seq,
                        }));
                    }
                }
            }
        }
        Ok(events)
    }

    /// At L3 and L4, dataward queues the run an approved hold planned as soon as the
    /// table is back at its baseline, when the domain allows the `run_job` class.
    pub(super) fn dispatch_autonomous_runs(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for i in 0..self.incidents.len() {
            let incident = &self.incidents[i];
            if incident.status == IncidentStatus::Resolved
                || incident.run.is_some()
                || !self.recovered(&incident.id)
                || self.intent_pending(&incident.id)?
            {
                continue;
            }
            let Some(hold) = incident
                .proposals
                .iter()
                .find(|p| p.kind == ProposalKind::Hold && p.state == ProposalState::Approved)
            else {
                continue;
            };
            if approve::autonomy(&self.config, &hold.target) < 3
                || !approve::class_allowed(&self.config, &hold.target, "run_job")
            {
                continue;
            }
            let id = incident.id.clone();
            match self.queue_run(&id, None) {
                Ok(more) => events.extend(more),
                Err(e) => {
                    let reason = format!("{e:#}");
                    self.notices
                        .push(format!("{id}: dataward did not dispatch the run: {reason}"));
                    events.push(self.event(EventKind::Refused {
                        command: format!("autonomous run for {id}"),
                        reason,
                    }));
                }
            }
        }
        Ok(events)
    }
}
