//! What people ask for: approve, reject, roll back, forward, queue a run, the org stop.
//! Every command is checked against the policy; a refusal changes nothing and says why.

use super::*;

impl Engine {
    /// Applies a person's command. A refused command changes nothing and says why.
    pub fn handle(&mut self, command: Command, actor: &Actor) -> Vec<Event> {
        let described = format!("{command:?}");
        match self.apply(command, actor) {
            Ok(events) => {
                // Confirm on screen what the chain now holds.
                for event in &events {
                    let notice = match &event.kind {
                        EventKind::Decision {
                            proposal,
                            verdict,
                            seq,
                            ..
                        } => {
                            format!(
                                "{proposal} {} (chain #{seq})",
                                serde_json::to_value(verdict)
                                    .map(|v| v.as_str().unwrap_or_default().replace('_', " "))
                                    .unwrap_or_default()
                            )
                        }
                        EventKind::Run {
                            job, status, seq, ..
                        } => format!("run of {job} {status} (chain #{seq})"),
                        EventKind::Undo { action, seq, .. } => format!("{action} (chain #{seq})"),
                        _ => continue,
                    };
                    self.notices.push(notice);
                }
                events
            }
            Err(e) => {
                let reason = format!("{e:#}");
                self.notices.push(format!("refused: {reason}"));
                vec![self.event(EventKind::Refused {
                    command: described,
                    reason,
                })]
            }
        }
    }

    pub(super) fn find_proposal(&self, id: &str) -> Result<(usize, usize)> {
        for (i, incident) in self.incidents.iter().enumerate() {
            if let Some(p) = incident.proposals.iter().position(|p| p.id == id) {
                return Ok((i, p));
            }
        }
        Err(anyhow!("no proposal {id}"))
    }

    pub(super) fn apply(&mut self, command: Command, actor: &Actor) -> Result<Vec<Event>> {
        match command {
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
                anyhow::ensure!(
                    prop.state == ProposalState::Pending,
                    "{proposal} was already {:?}",
                    prop.state
                );
                anyhow::ensure!(
                    !actor.roles(&self.config).is_empty(),
                    "{} has no role in the policy",
                    actor.display()
                );
                let payload = json!({"incident": self.incidents[i].id, "proposal": proposal, "verdict": "forwarded",
                    "content_hash": prop.content_hash, "to": prop.owner, "reason": ""});
                let seq = self.record("decision", &actor.to_json(), payload)?;
                self.incidents[i].proposals[p].state = ProposalState::Forwarded;
                Ok(vec![self.event(EventKind::Decision {
                    proposal,
                    verdict: Verdict::Forwarded,
                    actor: actor.display(),
                    seq,
                })])
            }
            Command::QueueRun { incident } => self.queue_run(&incident, Some(actor)),
            Command::OrgStop { reason } => {
                anyhow::ensure!(!reason.trim().is_empty(), "a stop needs a reason");
                let at = self.now.clone();
                stop::set(&mut self.state, actor, &reason, &at)?;
                self.org_stop_event("set", actor)
            }
            Command::LiftStop => {
                let at = self.now.clone();
                let state = stop::lift(&mut self.state, actor, &at)?;
                self.org_stop_event(if state.active { "lift_request" } else { "lift" }, actor)
            }
        }
    }

    pub(super) fn org_stop_event(&mut self, action: &str, actor: &Actor) -> Result<Vec<Event>> {
        let seq = chain::head(&self.state)?.map(|h| h.seq).unwrap_or_default();
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
        anyhow::ensure!(
            proposal.content_hash == content_hash,
            "{id} changed since it was shown (hash {} now, {} seen); the decision is void",
            &proposal.content_hash[..12],
            content_hash.get(..12).unwrap_or(content_hash)
        );
        anyhow::ensure!(
            proposal.kind != ProposalKind::Note || verdict == Verdict::Rejected,
            "a note is forwarded (f), not approved or rolled back"
        );
        if let Some(e) = &self.policy_error {
            anyhow::bail!("the policy cannot be evaluated, so nothing may be decided: {e}");
        }
        let mut request = self
            .requests
            .get(id)
            .cloned()
            .ok_or_else(|| anyhow!("{id} has no approval request"))?;
        match verdict {
            Verdict::Approved | Verdict::Rejected => request
                .decide(
                    &self.config,
                    actor,
                    content_hash,
                    verdict == Verdict::Approved,
                )
                .map_err(|e| anyhow!("{id}: {e}"))?,
            _ => {
                anyhow::ensure!(
                    proposal.state == ProposalState::Approved,
                    "{id} is {:?}; only an approved proposal can be rolled back",
                    proposal.state
                );
                request
                    .may_act(&self.config, actor)
                    .map_err(|e| anyhow!("{id}: {e}"))?;
            }
        }
        // The effect first: if pausing the job or writing the file fails, nothing is
        // recorded as done.
        match verdict {
            Verdict::Approved => self.apply_effect(&proposal.body, true)?,
            Verdict::RolledBack => self.apply_effect(&proposal.body, false)?,
            _ => {}
        }
        self.requests.insert(id.to_string(), request);
        let payload = json!({"incident": self.incidents[i].id, "proposal": id, "verdict": verdict,
            "content_hash": content_hash, "reason": reason});
        let seq = self.record("decision", &actor.to_json(), payload)?;
        self.incidents[i].proposals[p].state = match verdict {
            Verdict::Approved => ProposalState::Approved,
            Verdict::Rejected => ProposalState::Rejected,
            Verdict::RolledBack => ProposalState::RolledBack,
            Verdict::Forwarded => ProposalState::Forwarded,
            Verdict::Autonomous => ProposalState::Approved,
        };
        let mut events = vec![self.event(EventKind::Decision {
            proposal: id.to_string(),
            verdict,
            actor: actor.display(),
            seq,
        })];
        if verdict == Verdict::RolledBack {
            let action = match &proposal.body {
                ProposalBody::Hold { job, .. } => format!("resumed the {job} schedule"),
                ProposalBody::Diff { file, .. } => format!("reverted {file}"),
                ProposalBody::Note { .. } => "nothing".to_string(),
            };
            let seq = self.record(
                "undo",
                &actor.to_json(),
                json!({"incident": self.incidents[i].id, "proposal": id, "action": action}),
            )?;
            events.push(self.event(EventKind::Undo {
                proposal: id.to_string(),
                action,
                seq,
            }));
        }
        Ok(events)
    }

    /// Does (or undoes) what an approved proposal says.
    pub(super) fn apply_effect(&self, body: &ProposalBody, forward: bool) -> Result<()> {
        match body {
            ProposalBody::Hold { job, .. } => {
                let orchestrator = self
                    .orchestrator
                    .as_ref()
                    .context("no orchestrator configured to pause jobs")?;
                orchestrator.set_paused(job, forward)
            }
            ProposalBody::Diff { file, old, new } => {
                let project = self.project_dir()?;
                let path = project.join(file);
                let (from, to) = if forward { (old, new) } else { (new, old) };
                let current = std::fs::read_to_string(&path)
                    .with_context(|| format!("{}", path.display()))?;
                anyhow::ensure!(
                    current == *from,
                    "{} no longer matches the proposal; it was changed by someone else",
                    path.display()
                );
                let tmp = path.with_extension("sql.dataward-tmp");
                std::fs::write(&tmp, to).with_context(|| format!("{}", tmp.display()))?;
                std::fs::rename(&tmp, &path).with_context(|| format!("{}", path.display()))?;
                Ok(())
            }
            ProposalBody::Note { .. } => Ok(()),
        }
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
        let i = self
            .incidents
            .iter()
            .position(|x| x.id == incident)
            .ok_or_else(|| anyhow!("no incident {incident}"))?;
        anyhow::ensure!(
            self.incidents[i].status != IncidentStatus::Resolved,
            "{incident} is resolved"
        );
        if let Some(run) = &self.incidents[i].run {
            anyhow::ensure!(run.finished.is_some(), "run #{} is already queued", run.id);
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
                    .map_err(|e| anyhow!("{e}"))?;
                actor.to_json()
            }
            None => ENGINE_ACTOR.to_string(),
        };
        let ProposalBody::Hold { job, .. } = &hold.body else {
            unreachable!("a hold")
        };
        // The hold exists so that nothing builds on a half-loaded table: a run asked for
        // before the table is back would do exactly that.
        let after_recovery = self.recovered(&self.incidents[i].monitor);
        if !after_recovery {
            let incident = &self.incidents[i];
            let now = self
                .latest
                .get(&(incident.monitor.clone(), CheckKind::RowCount, None))
                .map(|o| {
                    format!(
                        "{} rows against a baseline of {}",
                        o.observed_text(),
                        o.expected
                            .map(|r| monitor::thousands(r.baseline))
                            .unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| "not measured yet".to_string());
            anyhow::bail!(
                "{} is not back at its baseline yet ({now}); the hold's plan runs the job once it is",
                incident.table
            );
        }
        let at = self.now.clone();
        let dispatch = chain::append_checked(
            &mut self.state,
            &at,
            "dispatch",
            &actor_json,
            &json!({"incident": incident, "job": job, "proposal": hold.id,
                    "content_hash": hold.content_hash, "after_recovery": after_recovery}),
            |tx| stop::ensure_not_stopped(tx),
        )?;
        let by = actor
            .map(Actor::display)
            .unwrap_or_else(|| "dataward".to_string());
        let orchestrator = self
            .orchestrator
            .as_ref()
            .context("no orchestrator configured")?;
        let run_id = match orchestrator.queue_run(job, &self.now, &by) {
            Ok(id) => id,
            Err(e) => {
                self.record("dispatch_failed", ENGINE_ACTOR, json!({"incident": incident, "dispatch": dispatch.seq, "error": format!("{e:#}")}))?;
                return Err(e.context("the scheduler refused the run"));
            }
        };
        let seq = self.record(
            "run_queued",
            &actor_json,
            json!({"incident": incident, "run": run_id, "job": job, "dispatch": dispatch.seq}),
        )?;
        self.incidents[i].run = Some(RunState {
            id: run_id,
            job: job.clone(),
            after_recovery,
            finished: None,
        });
        Ok(vec![self.event(EventKind::Run {
            incident: incident.to_string(),
            job: job.clone(),
            status: "queued".into(),
            seq,
        })])
    }
}
