//! The decision path of a request the policy sent to review. Only an owner of the
//! request's domain decides it, on the review's hash (the request as the policy
//! narrowed it), and never the asker under any account. Approved: the grant is
//! proposed as `ACC-n-P1` with its statements and content hash, decided as any
//! proposal. Rejected: final, with the reason. Either way the decision is a chain
//! record (`access_review_decision`) that resolves the page the review sent
//! (`engine::alerts`) and that the receipt shows.

use super::*;

/// The asker's account as an approval request names its proposer (who never decides).
fn asker(request: &AccessRequest) -> String {
    let by: serde_json::Value = serde_json::from_str(&request.by).unwrap_or_default();
    match by["user"].as_str() {
        Some(user) => user.to_string(),
        None => by["uid"].to_string(),
    }
}

impl Engine {
    /// Approves or rejects the review of request `at`, bound to its review hash.
    pub(super) fn decide_review(
        &mut self,
        at: usize,
        content_hash: Option<&str>,
        reason: &str,
        actor: &Actor,
        verdict: Verdict,
    ) -> Result<Vec<Event>> {
        let request = self.access.requests[at].clone();
        let id = request.id.clone();
        if request.status != Status::Review {
            let next = match &request.grant {
                Some(grant) => format!("; its grant is decided as {}", grant.proposal),
                None => String::new(),
            };
            return Err(Refusal::new(
                RefusalKind::Invalid,
                format!("{id} is not waiting for review{next}"),
            )
            .into());
        }
        if !matches!(verdict, Verdict::Approved | Verdict::Rejected) {
            anyhow::bail!("{id} is under review: approve or reject it; nothing was granted");
        }
        let hash = review_hash(&request);
        stale_refusal(&id, &hash, content_hash.unwrap_or_default())?;
        if let Some(e) = &self.policy_error {
            return Err(policy_refusal(format!(
                "the policy cannot be evaluated, so nothing may be decided: {e}"
            )));
        }
        if actor.person()? == request.by_person {
            return Err(policy_refusal(format!(
                "{id}: nobody reviews their own request, under any account ({} asked for it)",
                request.by_display
            )));
        }
        // The domain's owners only, as for any approval in the domain (the escalation
        // targets come in only when a request goes unanswered, which a review does not).
        let tables = request.table_names();
        let proposer = asker(&request);
        let mut review = ApprovalRequest::new(
            &tables[0],
            &request.judged.owners[0],
            &proposer,
            &hash,
            self.now_time,
        );
        let approved = verdict == Verdict::Approved;
        review
            .decide(&self.config, actor, &hash, approved)
            .map_err(|e| policy_refusal(format!("{id}: {e}")))?;
        let seq = self.record(
            "access_review_decision",
            &actor.to_json(),
            json!({"request": id, "verdict": verdict, "review_hash": hash, "reason": reason,
                   "domain": request.judged.domain, "to": request.judged.owners,
                   "tables": tables, "ask": request.ask, "rules": request.judged.rules,
                   "days": request.judged.days}),
        )?;
        let mut events = vec![self.event(EventKind::Decision {
            proposal: id.clone(),
            verdict,
            actor: actor.display(),
            seq,
        })];
        let mut entry = request;
        if approved {
            let narrowed = format!(
                "{} (review approved by {})",
                narrowed(&entry),
                actor.display()
            );
            events.push(self.propose_grant(&mut entry, &proposer, &narrowed)?);
        } else {
            entry.status = Status::Rejected;
            let text = format!(
                "{id}: the review is rejected by {}: {reason}; nothing is granted",
                actor.display()
            );
            self.notices.push(text.clone());
            events.push(self.access_event(&id, "rejected", text, seq));
        }
        self.access.requests[at] = entry;
        self.access.changed.insert(id);
        Ok(events)
    }
}
