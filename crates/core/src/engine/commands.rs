//! What people ask for: approve, reject, roll back, forward, queue a run, the org stop.
//! Every command is checked against the policy; a refusal changes nothing and says why.

use super::intent::{Completion, Decided, Effect};
use super::*;
use crate::approve::request::HashMismatch;

impl Engine {
    /// Applies one person's request and answers it: accepted with the chain head and what
    /// happened, or refused with a typed reason. Decided and recorded in one
    /// transaction, then any effect it needs carried out. A refused request changes
    /// nothing. The answer goes to whoever asked, never to the shared notices.
    pub fn request(&mut self, command: Command, actor: &Actor) -> Outcome {
        self.answer(
            Request {
                id: 0,
                command,
                client_request: None,
            },
            actor,
        )
    }

    /// [`Engine::request`] for a request from a client. One that carries a client
    /// request id has its answer kept by that id, in the transaction that records its
    /// decision: the same id sent again gets that answer and decides nothing twice, and
    /// `WhatHappened` asks for it (a client whose connection was lost mid-request).
    pub fn answer(&mut self, request: Request, actor: &Actor) -> Outcome {
        match self.answer_or_hold(request, actor) {
            intent::Answer::Now(outcome) => outcome,
            // Only an engine with workers holds answers, and its hub asks with
            // `answer_or_hold`.
            intent::Answer::Held(intent) => Outcome::Refused {
                reason: Refusal::new(
                    RefusalKind::Failed,
                    format!(
                        "its change (intent #{intent}) is being carried out: ask what came of \
                         it by its client request id"
                    ),
                ),
            },
        }
    }

    /// [`Engine::answer`], or, when the request's change is being carried out on a
    /// worker (its own, or the one of the same client request still in flight), the
    /// intent whose outcome answers it: `effect_finished` gives that answer.
    pub fn answer_or_hold(&mut self, request: Request, actor: &Actor) -> intent::Answer {
        use intent::Answer;
        let Request {
            command,
            client_request,
            ..
        } = request;
        if let Some(id) = &client_request {
            if !intent::valid_client_request(id) {
                return Answer::Now(Outcome::Refused {
                    reason: Refusal::new(
                        RefusalKind::Invalid,
                        "a client request id is 8 to 64 letters, digits or dashes",
                    ),
                });
            }
        }
        if let Command::WhatHappened { client_request } = &command {
            if !intent::valid_client_request(client_request) {
                return Answer::Now(Outcome::Refused {
                    reason: Refusal::new(RefusalKind::Invalid, "no such client request id"),
                });
            }
            return self.what_happened(client_request, actor.uid);
        }
        if let Some(id) = &client_request {
            if let Ok(Some(answer)) = self.kept_answer(id, actor.uid) {
                return Answer::Now(answer);
            }
            // Sent again while its change is on a worker: the same answer, once it
            // comes, and nothing decided twice.
            if let Some(intent) = self.in_flight_for(id, actor.uid) {
                return Answer::Held(intent);
            }
        }
        let asking = client_request.map(|id| (id, actor.uid));
        self.begin_request(asking.clone());
        let result = self.apply_and_carry_out(command, actor);
        let in_flight = self.request_in_flight();
        self.end_request();
        match result {
            Ok(_) if in_flight.is_some() => Answer::Held(in_flight.unwrap_or_default()),
            Ok(events) => Answer::Now(Outcome::Accepted {
                seq: chain::head(&*self.state).ok().flatten().map(|h| h.seq),
                events,
            }),
            Err(e) => {
                let reason = refusal_of(&e);
                let answer = Outcome::Refused { reason };
                if let Some((id, uid)) = &asking {
                    // Nothing was decided: kept only so the asker can read why. A
                    // refusal that withdrew an intent was kept with it already.
                    let _ = self.remember_answer(id, *uid, &answer);
                }
                Answer::Now(answer)
            }
        }
    }

    fn apply_and_carry_out(&mut self, command: Command, actor: &Actor) -> Result<Vec<Event>> {
        // The engine's own intents left in flight are finished first, and are not this
        // request's business if they fail. Nobody else's decision is carried out here.
        let (mut events, failures) = self.run_intents()?;
        for failure in failures {
            self.notices
                .push(format!("an earlier change failed: {failure}"));
        }
        events.extend(self.transact(|e| {
            let events = e.apply(command, actor)?;
            if let (Some((id, uid)), false) = (e.in_flight_asking(), e.request_made_intent()) {
                // Nothing left to carry out: the answer is kept with the decision.
                let answer = Outcome::Accepted {
                    seq: chain::head(&*e.state)?.map(|h| h.seq),
                    events: events.clone(),
                };
                e.remember_answer(&id, uid, &answer)?;
            }
            Ok(events)
        })?);
        let (more, failures) = self.run_intents()?;
        events.extend(more);
        if let Some(failure) = failures.into_iter().next() {
            return Err(Refusal::new(RefusalKind::Failed, failure).into());
        }
        Ok(events)
    }

    /// Applies a command and answers with its events, a refusal becoming a `refused`
    /// event (tests and scripts that read the timeline). Nothing goes to the shared
    /// notices: a console reads its answer from its own `Reply`.
    pub fn handle(&mut self, command: Command, actor: &Actor) -> Vec<Event> {
        let described = format!("{command:?}");
        match self.request(command, actor) {
            Outcome::Accepted { events, .. } => events,
            Outcome::Refused { reason } => vec![self.event(EventKind::Refused {
                command: described,
                reason: reason.message,
            })],
        }
    }

    pub(super) fn find_proposal(&self, id: &str) -> Result<(usize, usize)> {
        for (i, incident) in self.incidents.iter().enumerate() {
            if let Some(p) = incident.proposals.iter().position(|p| p.id == id) {
                return Ok((i, p));
            }
        }
        Err(Refusal::new(RefusalKind::NotFound, format!("no proposal {id}")).into())
    }

    pub(super) fn apply(&mut self, command: Command, actor: &Actor) -> Result<Vec<Event>> {
        // A proposal of an access request is decided by its request (`access.rs`).
        match &command {
            Command::Approve {
                proposal,
                content_hash,
                reason,
            }
            | Command::Reject {
                proposal,
                content_hash,
                reason,
            } if access::is_access_proposal(proposal) => {
                let approve = matches!(command, Command::Approve { .. });
                if !approve {
                    anyhow::ensure!(!reason.trim().is_empty(), "a rejection needs a reason");
                }
                let verdict = if approve {
                    Verdict::Approved
                } else {
                    Verdict::Rejected
                };
                return self.decide_access(proposal, Some(content_hash), reason, actor, verdict);
            }
            Command::Approve {
                proposal,
                content_hash,
                reason,
            }
            | Command::Reject {
                proposal,
                content_hash,
                reason,
            } if waves::is_wave(proposal) => {
                let verdict = match command {
                    Command::Approve { .. } => Verdict::Approved,
                    _ => Verdict::Rejected,
                };
                return self.decide_wave(proposal, Some(content_hash), reason, actor, verdict);
            }
            Command::RollBack { proposal, reason } if waves::is_wave(proposal) => {
                anyhow::ensure!(!reason.trim().is_empty(), "a roll back needs a reason");
                return self.decide_wave(proposal, None, reason, actor, Verdict::RolledBack);
            }
            Command::RollBack { proposal, reason } if access::is_access_proposal(proposal) => {
                anyhow::ensure!(!reason.trim().is_empty(), "a roll back needs a reason");
                return self.decide_access(proposal, None, reason, actor, Verdict::RolledBack);
            }
            _ => {}
        }
        match command {
            Command::RequestAccess {
                target,
                privilege,
                grantee,
                reason,
                days,
            } => {
                let ask = crate::approve::access::Ask {
                    target,
                    privilege,
                    grantee,
                    reason,
                    days,
                };
                self.request_access(ask, actor)
            }
            Command::Approve {
                proposal,
                content_hash,
                reason,
            } => self.decide(&proposal, &content_hash, &reason, actor, Verdict::Approved),
            Command::Reject {
                proposal,
                content_hash,
                reason,
            } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a rejection needs a reason");
                self.decide(&proposal, &content_hash, &reason, actor, Verdict::Rejected)
            }
            Command::RollBack { proposal, reason } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a roll back needs a reason");
                let (i, p) = self.find_proposal(&proposal)?;
                let hash = self.incidents[i].proposals[p].content_hash.clone();
                self.decide(&proposal, &hash, &reason, actor, Verdict::RolledBack)
            }
            Command::Forward { proposal } => {
                let (i, p) = self.find_proposal(&proposal)?;
                let prop = &self.incidents[i].proposals[p];
                anyhow::ensure!(
                    prop.kind == ProposalKind::Note,
                    "only notes are forwarded; {proposal} is a {:?}",
                    prop.kind
                );
                if prop.state != ProposalState::Pending {
                    return Err(self.already_decided(&proposal, prop.state).into());
                }
                if actor.roles(&self.config).is_empty() {
                    return Err(Refusal::new(
                        RefusalKind::Policy,
                        format!("{} has no role in the policy", actor.display()),
                    )
                    .into());
                }
                anyhow::ensure!(
                    !self.intent_pending(&proposal)?,
                    "{proposal} already has a change in flight"
                );
                let to = prop.owner.clone();
                let routes = self.note_routes(&self.incidents[i].id.clone())?;
                let sent_to = routes.clone().unwrap_or_default();
                let payload = json!({"incident": self.incidents[i].id, "proposal": proposal, "verdict": "forwarded",
                    "content_hash": prop.content_hash, "to": to, "reason": "", "sent_to": sent_to});
                let seq = self.record("decision", &actor.to_json(), payload)?;
                self.incidents[i].proposals[p].state = ProposalState::Forwarded;
                Ok(vec![
                    self.event(EventKind::Decision {
                        proposal: proposal.clone(),
                        verdict: Verdict::Forwarded,
                        actor: actor.display(),
                        seq,
                    }),
                    self.event(EventKind::NoteSent {
                        proposal,
                        to,
                        destinations: sent_to,
                        nowhere: routes.err(),
                    }),
                ])
            }
            Command::QueueRun { incident } => self.queue_run(&incident, Some(actor)),
            Command::Resolve { incident, reason } => {
                self.resolve_by_hand(&incident, &reason, actor)
            }
            Command::Reopen { incident, reason } => self.reopen(&incident, &reason, actor),
            Command::Accept { incident, reason } => self.accept_level(&incident, &reason, actor),
            Command::Expected { incident, reason } => self.mark_expected(&incident, &reason, actor),
            Command::Snooze {
                target,
                seconds,
                reason,
            } => self.snooze(&target, seconds, &reason, actor),
            Command::OrgStop { reason } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a stop needs a reason");
                self.ensure_chain_trusted()?;
                stop::set(&*self.state, actor, &reason, self.now())?;
                self.org_stop_event("set", actor)
            }
            Command::WhatHappened { .. } => {
                anyhow::bail!("asking what came of a request decides nothing")
            }
            Command::LiftStop => {
                self.ensure_chain_trusted()?;
                let state = stop::lift(&*self.state, actor, self.now())?;
                self.org_stop_event(if state.active { "lift_request" } else { "lift" }, actor)
            }
        }
    }

    pub(super) fn org_stop_event(&mut self, action: &str, actor: &Actor) -> Result<Vec<Event>> {
        let seq = chain::head(&*self.state)?
            .map(|h| h.seq)
            .unwrap_or_default();
        self.notices.push(match action {
            "set" => format!(
                "org-wide stop set by {}: nothing is dispatched",
                actor.display()
            ),
            "lift_request" => format!(
                "{} asked to lift the stop; a second person must confirm",
                actor.display()
            ),
            _ => format!("org-wide stop lifted by {}", actor.display()),
        });
        Ok(vec![self.event(EventKind::OrgStop {
            action: action.to_string(),
            actor: actor.display(),
            seq,
        })])
    }

    pub(super) fn decide(
        &mut self,
        id: &str,
        content_hash: &str,
        reason: &str,
        actor: &Actor,
        verdict: Verdict,
    ) -> Result<Vec<Event>> {
        let (i, p) = self.find_proposal(id)?;
        let proposal = self.incidents[i].proposals[p].clone();
        stale_refusal(id, &proposal.content_hash, content_hash)?;
        // The first decision recorded wins; whoever comes second is told by whom.
        if matches!(verdict, Verdict::Approved | Verdict::Rejected)
            && proposal.state != ProposalState::Pending
        {
            return Err(self.already_decided(id, proposal.state).into());
        }
        if verdict == Verdict::Approved && proposal.kind == ProposalKind::Backfill {
            if let Some(why) = self.rerun_blocked(i) {
                return Err(Refusal::new(RefusalKind::Invalid, format!("{id}: {why}")).into());
            }
        }
        anyhow::ensure!(
            proposal.kind != ProposalKind::Note || verdict == Verdict::Rejected,
            "a note is forwarded (f), not approved or rolled back"
        );
        if let Some(e) = &self.policy_error {
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!("the policy cannot be evaluated, so nothing may be decided: {e}"),
            )
            .into());
        }
        let mut request = self
            .requests
            .get(id)
            .cloned()
            .ok_or_else(|| anyhow!("{id} has no approval request"))?;
        // Checked on a copy: the request itself moves on when the decision is recorded.
        match verdict {
            Verdict::Approved | Verdict::Rejected => request
                .decide(
                    &self.config,
                    actor,
                    content_hash,
                    verdict == Verdict::Approved,
                )
                .map_err(|e| Refusal::new(RefusalKind::Policy, format!("{id}: {e}")))?,
            _ => {
                anyhow::ensure!(
                    proposal.state == ProposalState::Approved,
                    "{id} is {:?}; only an approved proposal can be rolled back",
                    proposal.state
                );
                request
                    .may_act(&self.config, actor)
                    .map_err(|e| Refusal::new(RefusalKind::Policy, format!("{id}: {e}")))?;
            }
        }
        anyhow::ensure!(
            !self.intent_pending(id)?,
            "{id} already has a change in flight"
        );
        let effect = match (verdict, &proposal.body) {
            (
                Verdict::Approved,
                ProposalBody::Backfill {
                    job,
                    command,
                    tables,
                },
            ) => Some(Effect::Backfill {
                job: job.clone(),
                command: command.clone(),
                tables: tables.clone(),
                tag: id.to_string(),
                by: actor.display(),
            }),
            (Verdict::RolledBack, ProposalBody::Backfill { .. }) => Some(Effect::Restore {
                versions: self.incidents[i].versions.clone(),
            }),
            (Verdict::Approved, body) => effect_of(body, true),
            (Verdict::RolledBack, body) => effect_of(body, false),
            _ => None,
        };
        let decided = Decided {
            incident: self.incidents[i].id.clone(),
            proposal: id.to_string(),
            verdict,
            actor: actor.to_json(),
            actor_display: actor.display(),
            content_hash: content_hash.to_string(),
            reason: reason.to_string(),
        };
        match effect {
            // The effect goes intent first: it is carried out after this commits, and
            // the decision is recorded once it is in place.
            Some(effect) => {
                self.intend(id, effect, Completion::Decision(decided), true)?;
                Ok(Vec::new())
            }
            None => self.record_decision(&decided, None),
        }
    }

    /// Records a decision whose effect (if any) is in place, and moves the proposal and
    /// its request on.
    pub(super) fn record_decision(
        &mut self,
        decided: &Decided,
        action: Option<&str>,
    ) -> Result<Vec<Event>> {
        let Decided {
            proposal: id,
            verdict,
            actor: actor_json,
            actor_display,
            content_hash,
            reason,
            ..
        } = decided;
        let verdict = *verdict;
        let (i, p) = self.find_proposal(id)?;
        let incident = self.incidents[i].id.clone();
        let mut payload = json!({"incident": incident, "proposal": id, "verdict": verdict,
            "content_hash": content_hash, "reason": reason});
        if let (Some(action), false) = (action, verdict == Verdict::RolledBack) {
            // What the effect did beyond the proposal: people must read it where the
            // decision is, and on the receipt.
            payload["effect"] = json!(action);
            self.notices.push(format!("{incident}: {action}"));
        }
        let seq = self.record("decision", actor_json, payload)?;
        if let Some(request) = self.requests.get_mut(id) {
            match verdict {
                Verdict::Approved | Verdict::Autonomous => request.grant(),
                Verdict::Rejected => request.state = RequestState::Rejected,
                _ => {}
            }
        }
        self.incidents[i].proposals[p].state = match verdict {
            Verdict::Approved | Verdict::Autonomous => ProposalState::Approved,
            Verdict::Rejected => ProposalState::Rejected,
            Verdict::RolledBack => ProposalState::RolledBack,
            Verdict::Forwarded => ProposalState::Forwarded,
        };
        let display = if verdict == Verdict::Autonomous {
            "dataward".to_string()
        } else {
            actor_display.to_string()
        };
        let mut events = vec![self.event(EventKind::Decision {
            proposal: id.to_string(),
            verdict,
            actor: display,
            seq,
        })];
        if verdict == Verdict::RolledBack {
            let said = action.map(str::to_string);
            let action = said.unwrap_or_else(|| match &self.incidents[i].proposals[p].body {
                ProposalBody::Hold { job, .. } => format!("resumed the {job} schedule"),
                ProposalBody::Diff { file, .. } => format!("reverted {file}"),
                ProposalBody::Note { .. } => "nothing".to_string(),
                ProposalBody::Backfill { tables, .. } => {
                    format!(
                        "restored {} as they were before the backfill",
                        tables.join(", ")
                    )
                }
            });
            let seq = self.record(
                "undo",
                actor_json,
                json!({"incident": incident, "proposal": id, "action": action}),
            )?;
            events.push(self.event(EventKind::Undo {
                proposal: id.to_string(),
                action,
                seq,
            }));
        }
        Ok(events)
    }

    /// The incident `id`, or a `not_found` refusal.
    pub(super) fn incident_index(&self, id: &str) -> Result<usize> {
        self.incidents
            .iter()
            .position(|x| x.id.eq_ignore_ascii_case(id))
            .ok_or_else(|| Refusal::new(RefusalKind::NotFound, format!("no incident {id}")).into())
    }

    /// A chain that does not verify is never appended to.
    pub(super) fn ensure_chain_trusted(&self) -> Result<()> {
        match &self.chain_alarm {
            Some(alarm) => Err(Refusal::new(RefusalKind::ChainBroken, alarm.clone()).into()),
            None => Ok(()),
        }
    }

    /// "INC-0001-P2 is already approved by alice (uid 1001) (chain #41)", from the chain.
    fn already_decided(&self, proposal: &str, state: ProposalState) -> Refusal {
        let last: Option<(u64, String)> = self
            .state
            .last_record_naming("decision", "proposal", proposal)
            .ok()
            .flatten()
            .map(|record| (record.seq, record.actor));
        let state = serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
            .unwrap_or_default();
        let by = match last {
            Some((seq, actor)) => {
                let actor: serde_json::Value = serde_json::from_str(&actor).unwrap_or_default();
                let who = if actor.get("engine").is_some() {
                    "dataward".to_string()
                } else {
                    stop::display(&actor)
                };
                format!(" by {who} (chain #{seq})")
            }
            None => String::new(),
        };
        Refusal::new(
            RefusalKind::AlreadyDecided,
            format!("{proposal} is already {state}{by}"),
        )
    }

    /// Queues the run an approved hold planned: for a person (`Some(actor)`, who must
    /// be eligible on the hold) or for dataward itself at L3/L4. The org-wide stop is
    /// re-checked inside the transaction that records the dispatch, so a stop set
    /// between approval and run wins.
    pub(super) fn queue_run(
        &mut self,
        incident: &str,
        actor: Option<&Actor>,
    ) -> Result<Vec<Event>> {
        let i = self.incident_index(incident)?;
        anyhow::ensure!(
            self.incidents[i].status != IncidentStatus::Resolved,
            "{incident} is resolved"
        );
        if let Some(run) = &self.incidents[i].run {
            anyhow::ensure!(run.finished.is_some(), "run {} is already queued", run.id);
        }
        let hold = self.incidents[i]
            .proposals
            .iter()
            .find(|p| p.kind == ProposalKind::Hold && p.state == ProposalState::Approved)
            .cloned()
            .ok_or_else(|| anyhow!("{incident} has no approved hold whose plan includes a run"))?;
        if let Some(e) = &self.policy_error {
            anyhow::bail!("the policy cannot be evaluated, so nothing is dispatched: {e}");
        }
        let actor_json = match actor {
            Some(actor) => {
                let request = self
                    .requests
                    .get(&hold.id)
                    .context("the hold has no request")?;
                request
                    .may_act(&self.config, actor)
                    .map_err(|e| Refusal::new(RefusalKind::Policy, e))?;
                actor.to_json()
            }
            None => ENGINE_ACTOR.to_string(),
        };
        let ProposalBody::Hold { job, .. } = &hold.body else {
            unreachable!("a hold")
        };
        // The hold exists so that nothing builds on a half-loaded table: a run asked for
        // before the table is back would do exactly that.
        let after_recovery = self.recovered(&self.incidents[i].id);
        if !after_recovery {
            let check = self.root_check(i);
            anyhow::bail!(
                "{} has not recovered yet: {} ({}); the hold's plan runs the job once it has",
                self.incidents[i].table,
                check.name,
                check.detail
            );
        }
        // The org-wide stop is read inside the transaction that records the dispatch,
        // so a stop set between approval and run wins.
        stop::ensure_not_stopped(&*self.state)?;
        anyhow::ensure!(self.orchestrator.is_some(), "no orchestrator configured");
        anyhow::ensure!(
            !self.intent_pending(incident)?,
            "a run of {job} for {incident} is already being queued"
        );
        let dispatch = self.record(
            "dispatch",
            &actor_json,
            json!({"incident": incident, "job": job, "proposal": hold.id,
                    "content_hash": hold.content_hash, "after_recovery": after_recovery}),
        )?;
        let by = actor
            .map(Actor::display)
            .unwrap_or_else(|| "dataward".to_string());
        let key = format!("dataward-{incident}-{dispatch}");
        self.intend(
            incident,
            Effect::QueueRun {
                job: job.clone(),
                key,
                by,
            },
            Completion::RunQueued {
                incident: incident.to_string(),
                job: job.clone(),
                dispatch,
                after_recovery,
                actor: actor_json,
            },
            actor.is_some(),
        )?;
        Ok(Vec::new())
    }
}

/// The effect that carries out (or, backwards, undoes) a proposal; a note has none.
fn effect_of(body: &ProposalBody, forward: bool) -> Option<Effect> {
    match body {
        ProposalBody::Hold { job, .. } => Some(Effect::SetPaused {
            job: job.clone(),
            paused: forward,
        }),
        ProposalBody::Diff { file, old, new } => {
            let (from, to) = if forward { (old, new) } else { (new, old) };
            Some(Effect::WriteFile {
                file: file.clone(),
                from: from.clone(),
                to: to.clone(),
            })
        }
        // A backfill's effect needs its proposal and its versions: see `decide`.
        ProposalBody::Note { .. } | ProposalBody::Backfill { .. } => None,
    }
}

/// The typed reason inside an error, or `Invalid` for a request that was simply not
/// valid as sent; the message is the whole chain of context people read.
fn refusal_of(e: &anyhow::Error) -> Refusal {
    let kind = e
        .chain()
        .find_map(|cause| {
            cause.downcast_ref::<Refusal>().map(|r| r.kind).or_else(|| {
                cause
                    .downcast_ref::<approve::Refusal>()
                    .map(|r| r.kind.into())
            })
        })
        .unwrap_or(RefusalKind::Invalid);
    Refusal::new(kind, format!("{e:#}"))
}

/// Refused unless `seen` is the whole current hash of `id`.
pub(super) fn stale_refusal(id: &str, current: &str, seen: &str) -> Result<()> {
    match HashMismatch::of(current, seen) {
        None => Ok(()),
        Some(mismatch) => {
            let kind = match mismatch {
                HashMismatch::Shortened { .. } => RefusalKind::Invalid,
                HashMismatch::Changed { .. } => RefusalKind::StaleHash,
            };
            Err(Refusal::new(kind, format!("{id}: {mismatch}")).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal the policy raises deep in a command keeps its kind on the way out.
    #[test]
    fn a_policy_refusal_keeps_its_kind_through_the_error_chain() {
        let stopped = anyhow::Error::from(approve::Refusal::new(
            approve::RefusalKind::OrgStop,
            "the org-wide stop is set",
        ))
        .context("dispatching INC-0001-P1");
        let refusal = refusal_of(&stopped);
        assert_eq!(refusal.kind, RefusalKind::OrgStop);
        assert_eq!(
            refusal.message,
            "dispatching INC-0001-P1: the org-wide stop is set"
        );
        assert_eq!(
            refusal_of(&anyhow::anyhow!("no reason given")).kind,
            RefusalKind::Invalid
        );
    }

    /// The org stop is the one command that must never wait, so it can come before the
    /// engine's first turn: it is stamped with the engine's clock then (the demo's
    /// virtual time here), on the chain and in its events, never with no time at all.
    #[test]
    fn a_stop_before_the_first_turn_is_stamped_with_the_engines_clock() {
        let dir = tempfile::tempdir().unwrap();
        let me = Actor::current();
        let text = format!(
            "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
             [people.{:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n\
             [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n",
            me.user.clone().unwrap_or_default()
        );
        let path = dir.path().join("dataward.toml");
        std::fs::write(&path, &text).unwrap();
        let config = crate::config::Config::parse(&text, &path).unwrap();
        let state = crate::store::open(&dir.path().join("dataward.db")).unwrap();
        let mut engine = Engine::new(config, state, None, &me).unwrap();
        let start = "2026-03-01T09:00:00".parse().unwrap();
        engine.set_clock(crate::clock::Clock::starting_at(start));
        let events = engine.handle(
            Command::OrgStop {
                reason: "a bad load".into(),
            },
            &me,
        );
        assert!(!events.is_empty(), "the stop was taken");
        for event in &events {
            assert_eq!(event.at.to_string(), "2026-03-01T09:00:00Z", "{event:?}");
        }
        // (The policy record before it was made by `Engine::new`, on the wall clock.)
        let records = crate::chain::records(&*engine.state).unwrap();
        let stop = records.last().unwrap();
        assert!(stop.kind.contains("stop"), "{stop:?}");
        assert_eq!(stop.at.to_string(), "2026-03-01T09:00:00Z", "{stop:?}");
    }
}
