//! Access requests, through the same approve, receipt and undo as every proposal.
//!
//! `RequestAccess` is judged by the policy (`approve::access`) against the warehouse's
//! catalog as last read. `propose`: the exact statements (one GRANT per table, in the
//! warehouse's dialect) become proposal `ACC-n-P1`, bound to its content hash and
//! decided by the domain's owners like any proposal. `review`: nothing is proposed; the
//! request goes to the domain's owners. dataward runs nothing: the owner runs the
//! statement, and the catalog, read off the engine's thread on each turn (a probe, as
//! evidence is), shows the grant in place. At expiry (or when the approver rolls the
//! grant back) the undo appears: proposal `ACC-n-P2`, the REVOKE statements, which need
//! no approval (they only take away), and whose effect is recorded once the catalog
//! shows the grant gone. Every step is a chain record naming the request, and the
//! receipt (`incident::access_receipt`) is read back from those records.

mod review;

use std::collections::{BTreeMap, BTreeSet};

use chrono::TimeDelta;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::commands::stale_refusal;
use super::evidence::{Answer, Lookup};
use super::*;
use crate::approve::access::{judge, Ask, Judged, ReadCatalog, Verdict as AccessVerdict};
use crate::warehouse::privileges::{self, GrantCheck};

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Status {
    /// The policy sent it to the domain's owners to look at; nothing was proposed.
    Review,
    /// The grant is proposed and waits for an owner.
    Proposed,
    /// An owner rejected the grant: final for this content.
    Rejected,
    /// Nobody answered, and nobody was left to escalate to. Never granted.
    Unanswered,
    /// Approved; the owner has yet to run the statements.
    Approved,
    /// The catalog shows every grant in place.
    Granted,
    /// The revoke is proposed (expiry, or rolled back); the catalog still shows a grant.
    Revoking,
    /// The catalog shows every grant gone.
    Revoked,
}

/// A proposal of a request: the statements and the hash an approval is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Statements {
    pub(super) proposal: String,
    pub(super) sql: Vec<String>,
    pub(super) content_hash: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct AccessRequest {
    pub(super) id: String,
    pub(super) ask: Ask,
    /// The asker as recorded on the chain (JSON), and as people read it.
    pub(super) by: String,
    pub(super) by_display: String,
    /// The person behind the asker (`Actor::person`: the login uid across sudo), who
    /// never approves their own request under another account.
    pub(super) by_person: u32,
    pub(super) filed_at: Timestamp,
    pub(super) judged: Judged,
    pub(super) status: Status,
    pub(super) grant: Option<Statements>,
    pub(super) approval: Option<ApprovalRequest>,
    pub(super) expires_at: Option<Timestamp>,
    pub(super) grant_seen_at: Option<Timestamp>,
    pub(super) revoke: Option<Statements>,
    pub(super) revoke_seen_at: Option<Timestamp>,
}

impl AccessRequest {
    /// The grants the catalog is asked about while this request waits on one.
    fn checks(&self) -> Vec<GrantCheck> {
        self.judged
            .tables
            .iter()
            .map(|(schema, table)| GrantCheck {
                grantee: self.ask.grantee.clone(),
                schema: schema.clone(),
                table: table.clone(),
                privilege: self.ask.privilege.clone(),
            })
            .collect()
    }

    fn table_names(&self) -> Vec<String> {
        (self.judged.tables.iter())
            .map(|(s, t)| format!("{s}.{t}"))
            .collect()
    }

    fn watched(&self) -> bool {
        matches!(self.status, Status::Approved | Status::Revoking)
    }
}

/// The engine's access requests and what it last read of the warehouses' catalogs.
#[derive(Default)]
pub(super) struct Access {
    pub(super) requests: Vec<AccessRequest>,
    catalogs: BTreeMap<String, ReadCatalog>,
    /// Catalog reads asked on a worker and not answered yet, by warehouse.
    pending: BTreeSet<String>,
    /// The turn each warehouse's catalog was last asked in: read once a turn at most.
    asked_in: BTreeMap<String, NaiveDateTime>,
    /// Requests changed since they were last written.
    changed: BTreeSet<String>,
    /// Why a warehouse's catalog could not be read last time it was asked.
    unreadable: BTreeMap<String, String>,
}

/// Is `id` a proposal of an access request (`ACC-0001-P1`)?
pub(super) fn is_access_proposal(id: &str) -> bool {
    id.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("ACC-"))
}

fn hash_of(content: &serde_json::Value) -> String {
    let digest = Sha256::digest(content.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a request came to after the policy, in one line: the privilege, the tables
/// kept, the grantee, the days, and what was left out or cut.
fn narrowed(request: &AccessRequest) -> String {
    let mut narrowed = format!(
        "{}: {} on {} for {}, {} days",
        request.id,
        request.ask.privilege,
        request.table_names().join(", "),
        request.ask.grantee,
        request.judged.days
    );
    if !request.judged.left_out.is_empty() {
        narrowed.push_str(&format!(
            " (left out, no rule allows them: {})",
            request.judged.left_out.join(", ")
        ));
    }
    if let Some(cut) = &request.judged.days_cut {
        narrowed.push_str(&format!(" ({cut})"));
    }
    narrowed
}

/// The hash a review is decided on: the request as the policy narrowed it (what is
/// asked, of which tables, for whom and how long), so an owner approves what they read.
pub(super) fn review_hash(request: &AccessRequest) -> String {
    hash_of(
        &json!({"kind": "review", "request": request.id, "ask": request.ask,
        "warehouse": request.judged.warehouse, "tables": request.table_names(),
        "days": request.judged.days, "domain": request.judged.domain}),
    )
}

fn policy_refusal(message: String) -> anyhow::Error {
    Refusal::new(RefusalKind::Policy, message).into()
}

impl Engine {
    /// Files a request: judged, recorded, and proposed or sent for review.
    pub(super) fn request_access(&mut self, ask: Ask, actor: &Actor) -> Result<Vec<Event>> {
        self.ensure_chain_trusted()?;
        let person = actor.person()?;
        if let Some(e) = &self.policy_error {
            return Err(policy_refusal(format!(
                "the policy cannot be evaluated, so no access is judged: {e}"
            )));
        }
        let mut ask = ask;
        ask.privilege = ask.privilege.trim().to_ascii_lowercase();
        ask.grantee = ask.grantee.trim().to_string();
        ask.target = ask.target.trim().to_string();
        let judged = judge(&self.config, &ask, &self.access.catalogs).map_err(|e| {
            // A catalog never read says why, when it could not be.
            let why: Vec<String> = (self.access.unreadable.iter())
                .filter(|(warehouse, _)| !self.access.catalogs.contains_key(*warehouse))
                .map(|(_, why)| why.clone())
                .collect();
            match why.is_empty() || !e.contains("not been read yet") {
                true => policy_refusal(e),
                false => policy_refusal(format!("{e} (last read failed: {})", why.join("; "))),
            }
        })?;
        let id = format!("ACC-{:04}", self.access.requests.len() + 1);
        let status = match judged.verdict {
            AccessVerdict::Propose => Status::Proposed,
            AccessVerdict::Review => Status::Review,
        };
        let mut request = AccessRequest {
            id: id.clone(),
            ask,
            by: actor.to_json(),
            by_display: actor.display(),
            by_person: person,
            filed_at: self.now(),
            judged,
            status,
            grant: None,
            approval: None,
            expires_at: None,
            grant_seen_at: None,
            revoke: None,
            revoke_seen_at: None,
        };
        // A review is decided on its own hash, which the record keeps for the receipt.
        let judged = &request.judged;
        let mut record = json!({"request": id, "ask": request.ask, "verdict": judged.verdict,
               "warehouse": judged.warehouse, "tables": request.table_names(),
               "left_out": judged.left_out, "rules": judged.rules, "days": judged.days,
               "days_cut": judged.days_cut, "domain": judged.domain, "to": judged.owners});
        if request.status == Status::Review {
            record["review_hash"] = json!(review_hash(&request));
        }
        let seq = self.record("access_requested", &actor.to_json(), record)?;
        let narrowed = narrowed(&request);
        let owners = request.judged.owners.join(", ");
        let mut events = Vec::new();
        if request.status == Status::Review {
            let hash = review_hash(&request);
            let text = format!(
                "{narrowed}: the policy ({}) asks for review; nothing is proposed; sent to \
                 {owners} (hash {hash}): `dataward approve {id} --hash {hash}` proposes the \
                 grant, `dataward reject {id} --hash {hash} --reason ...` refuses it",
                request.judged.rules.join(", ")
            );
            self.notices.push(text.clone());
            events.push(self.access_event(&id, "review", text, seq));
        } else {
            let proposer = actor.user.clone().unwrap_or_else(|| actor.uid.to_string());
            events.push(self.propose_grant(&mut request, &proposer, &narrowed)?);
        }
        self.access.changed.insert(id);
        self.access.requests.push(request);
        Ok(events)
    }

    /// The grant of `request` proposed as `ACC-n-P1`, bound to its content hash, for
    /// the domain's owners to decide (`proposer`, the asker, never may).
    pub(super) fn propose_grant(
        &mut self,
        request: &mut AccessRequest,
        proposer: &str,
        narrowed: &str,
    ) -> Result<Event> {
        let id = request.id.clone();
        let proposal = format!("{id}-P1");
        let sql = self.statements(request, true)?;
        let content = json!({"kind": "grant", "request": id, "warehouse": request.judged.warehouse,
            "statements": sql, "days": request.judged.days, "grantee": request.ask.grantee,
            "privilege": request.ask.privilege, "reason": request.ask.reason});
        let content_hash = hash_of(&content);
        let undo = self.statements(request, false)?;
        let owners = request.judged.owners.join(", ");
        let seq = self.record(
            "access_proposal",
            ENGINE_ACTOR,
            json!({"request": id, "proposal": proposal, "kind": "grant",
                   "content_hash": content_hash, "content": content, "undo": undo,
                   "owner": owners}),
        )?;
        let tables = request.table_names();
        request.status = Status::Proposed;
        request.approval = Some(ApprovalRequest::new(
            &tables[0],
            &request.judged.owners[0],
            proposer,
            &content_hash,
            self.now_time,
        ));
        let text = format!(
            "{narrowed}: proposed as {proposal} (hash {content_hash}) to {owners}:\n{}",
            sql.join("\n")
        );
        self.notices.push(format!(
            "{id}: {} asks for {} on {} for {}: {proposal} waits for {owners} \
             (dataward receipt {id})",
            request.by_display,
            request.ask.privilege,
            tables.join(", "),
            request.ask.grantee
        ));
        request.grant = Some(Statements {
            proposal,
            sql,
            content_hash,
        });
        Ok(self.access_event(&id, "requested", text, seq))
    }

    /// The statements of `request` in its warehouse's dialect: the grants, or the revokes.
    fn statements(&self, request: &AccessRequest, grant: bool) -> Result<Vec<String>> {
        (request.judged.tables.iter())
            .map(|(schema, table)| {
                privileges::statement(
                    &self.config,
                    &request.judged.warehouse,
                    &request.ask.privilege,
                    (schema, table),
                    &request.ask.grantee,
                    grant,
                )
                .map_err(policy_refusal)
            })
            .collect()
    }

    fn access_event(&self, request: &str, change: &str, text: String, seq: u64) -> Event {
        self.event(EventKind::Access {
            request: request.to_string(),
            change: change.to_string(),
            text,
            seq,
        })
    }

    /// Approve, reject or roll back a proposal of an access request, as `decide` does
    /// for an incident's: bound to the content hash, by an owner, never by the asker.
    pub(super) fn decide_access(
        &mut self,
        proposal: &str,
        content_hash: Option<&str>,
        reason: &str,
        actor: &Actor,
        verdict: Verdict,
    ) -> Result<Vec<Event>> {
        self.ensure_chain_trusted()?;
        // The request itself (`ACC-0002`) is decided while it waits for review.
        if let Some(at) =
            (self.access.requests.iter()).position(|r| r.id.eq_ignore_ascii_case(proposal))
        {
            return self.decide_review(at, content_hash, reason, actor, verdict);
        }
        let at = (self.access.requests.iter())
            .position(|r| {
                [&r.grant, &r.revoke].iter().any(|s| {
                    s.as_ref()
                        .is_some_and(|s| s.proposal.eq_ignore_ascii_case(proposal))
                })
            })
            .ok_or_else(|| {
                Refusal::new(RefusalKind::NotFound, format!("no proposal {proposal}"))
            })?;
        let request = self.access.requests[at].clone();
        let grant = request.grant.clone().expect("found by a proposal");
        if !grant.proposal.eq_ignore_ascii_case(proposal) {
            anyhow::bail!(
                "{proposal} is the revoke: it needs no approval; run it, and dataward records it \
                 once the catalog shows the grant gone"
            );
        }
        let id = grant.proposal.clone();
        if let Some(seen) = content_hash {
            stale_refusal(&id, &grant.content_hash, seen)?;
        }
        if let Some(e) = &self.policy_error {
            return Err(policy_refusal(format!(
                "the policy cannot be evaluated, so nothing may be decided: {e}"
            )));
        }
        if verdict == Verdict::Approved && actor.person()? == request.by_person {
            return Err(policy_refusal(format!(
                "{id}: nobody approves their own request, under any account ({} asked for it)",
                request.by_display
            )));
        }
        let mut approval = request.approval.clone().expect("a grant has its request");
        match verdict {
            Verdict::Approved | Verdict::Rejected => approval
                .decide(
                    &self.config,
                    actor,
                    &grant.content_hash,
                    verdict == Verdict::Approved,
                )
                .map_err(|e| policy_refusal(format!("{id}: {e}")))?,
            _ => {
                anyhow::ensure!(
                    matches!(request.status, Status::Approved | Status::Granted),
                    "{id} is {:?}; only an approved grant is rolled back",
                    request.status
                );
                approval
                    .may_act(&self.config, actor)
                    .map_err(|e| policy_refusal(format!("{id}: {e}")))?;
            }
        }
        let seq = self.record(
            "access_decision",
            &actor.to_json(),
            json!({"request": request.id, "proposal": id, "verdict": verdict,
                   "content_hash": grant.content_hash, "reason": reason}),
        )?;
        let mut events = vec![self.event(EventKind::Decision {
            proposal: id.clone(),
            verdict,
            actor: actor.display(),
            seq,
        })];
        let now = self.now();
        let entry = &mut self.access.requests[at];
        entry.approval = Some(approval);
        match verdict {
            Verdict::Approved => {
                entry.status = Status::Approved;
                let expires = now.naive() + TimeDelta::days(i64::from(entry.judged.days));
                entry.expires_at = Some(Timestamp::from_naive(expires));
                let text = format!(
                    "{}: approved; run the statements; dataward records the grant once the \
                     catalog shows it, and proposes the revoke at {}",
                    entry.id,
                    Timestamp::from_naive(expires)
                );
                events.push(self.access_event(&request.id, "approved", text, seq));
            }
            Verdict::Rejected => entry.status = Status::Rejected,
            _ => events.extend(self.propose_revoke(at, "rolled back")?),
        }
        self.access.changed.insert(request.id);
        Ok(events)
    }

    /// The undo: the revoke statements, proposed for the owner to run.
    fn propose_revoke(&mut self, at: usize, why: &str) -> Result<Vec<Event>> {
        let request = self.access.requests[at].clone();
        let proposal = format!("{}-P2", request.id);
        let sql = self.statements(&request, false)?;
        let content = json!({"kind": "revoke", "request": request.id,
            "warehouse": request.judged.warehouse, "statements": sql});
        let content_hash = hash_of(&content);
        let seq = self.record(
            "access_revoke_proposed",
            ENGINE_ACTOR,
            json!({"request": request.id, "proposal": proposal, "why": why,
                   "content_hash": content_hash, "content": content}),
        )?;
        let text = format!(
            "{}: {why}: the revoke is proposed as {proposal} (hash {content_hash}); run:\n{}",
            request.id,
            sql.join("\n")
        );
        self.notices.push(format!(
            "{}: {why}: revoke proposed as {proposal}",
            request.id
        ));
        let entry = &mut self.access.requests[at];
        entry.status = Status::Revoking;
        entry.revoke = Some(Statements {
            proposal,
            sql,
            content_hash,
        });
        self.access.changed.insert(request.id.clone());
        Ok(vec![self.access_event(
            &request.id,
            "revoke_proposed",
            text,
            seq,
        )])
    }

    /// Each turn: grants past their expiry get their revoke proposed, the catalogs are
    /// read (asked of a worker; never waited for), and what they show is recorded.
    pub(super) fn access_turn(&mut self) -> Result<Vec<Event>> {
        if self.config.access.is_empty() {
            return Ok(Vec::new());
        }
        let mut events = self.lapse_access_approvals()?;
        let now = self.now();
        for at in 0..self.access.requests.len() {
            let request = &self.access.requests[at];
            let due = request.expires_at.is_some_and(|expires| now >= expires);
            if due && matches!(request.status, Status::Approved | Status::Granted) {
                events.extend(self.propose_revoke(at, "expired")?);
            }
        }
        self.read_catalogs();
        events.extend(self.record_seen()?);
        Ok(events)
    }

    /// A grant nobody decides escalates and expires as every approval request does;
    /// waiting never grants anything.
    fn lapse_access_approvals(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for at in 0..self.access.requests.len() {
            let request = &self.access.requests[at];
            let (Status::Proposed, Some(approval), Some(grant)) =
                (request.status, &request.approval, &request.grant)
            else {
                continue;
            };
            let (id, proposal) = (request.id.clone(), grant.proposal.clone());
            let mut approval = approval.clone();
            let lapses = approval.tick(&self.config, self.now_time);
            if lapses.is_empty() {
                continue;
            }
            for lapse in lapses {
                let (kind, change, payload, text) = match lapse {
                    Lapse::Escalated { to, at: due } => (
                        "access_escalation",
                        "escalated",
                        json!({"request": id, "proposal": proposal, "to": to, "due": due}),
                        format!("{proposal} unanswered: escalated to {to}"),
                    ),
                    Lapse::Expired { at: due } => (
                        "access_expiry",
                        "unanswered",
                        json!({"request": id, "proposal": proposal, "due": due}),
                        format!("{proposal} expired unanswered; nothing was granted"),
                    ),
                };
                let seq = self.record(kind, ENGINE_ACTOR, payload)?;
                self.notices.push(text.clone());
                events.push(self.access_event(&id, change, text, seq));
            }
            let entry = &mut self.access.requests[at];
            if approval.state == RequestState::Expired {
                entry.status = Status::Unanswered;
            }
            entry.approval = Some(approval);
            self.access.changed.insert(id);
        }
        Ok(events)
    }

    /// Asks each warehouse the rules name for its catalog, once a turn, and keeps each
    /// answer that came.
    fn read_catalogs(&mut self) {
        let mut warehouses: Vec<String> = Vec::new();
        for rule in &self.config.access {
            if !warehouses.contains(&rule.warehouse) {
                warehouses.push(rule.warehouse.clone());
            }
        }
        for warehouse in warehouses {
            let awaiting = self.access.pending.contains(&warehouse);
            if !awaiting && self.access.asked_in.get(&warehouse) == Some(&self.now_time) {
                continue;
            }
            let checks: Vec<GrantCheck> = (self.access.requests.iter())
                .filter(|r| r.watched() && r.judged.warehouse == warehouse)
                .flat_map(AccessRequest::checks)
                .collect();
            let key = format!("{warehouse}: access catalog");
            let lookup = self.probe(
                &warehouse,
                key.clone(),
                // Nobody waits: an answer that comes back is kept for the next turn,
                // which reads it (the engine's thread is never held for a catalog).
                None,
                Box::new(move |wh| Ok(Answer::Access(wh.access_catalog(&checks)?))),
            );
            self.access
                .asked_in
                .insert(warehouse.clone(), self.now_time);
            match lookup {
                Some(Lookup::Pending) => {
                    self.access.pending.insert(warehouse);
                }
                Some(Lookup::Known(Answer::Access(catalog))) => {
                    self.evidence.forget(&key);
                    self.access.pending.remove(&warehouse);
                    let read = ReadCatalog {
                        at: self.now(),
                        catalog,
                    };
                    self.access.unreadable.remove(&warehouse);
                    self.access.catalogs.insert(warehouse, read);
                }
                other => {
                    self.evidence.forget(&key);
                    self.access.pending.remove(&warehouse);
                    if let Some(why) = other.and_then(|l| l.unavailable()) {
                        tracing::warn!(%warehouse, %why, "access catalog not read");
                        self.access.unreadable.insert(warehouse, why);
                    }
                }
            }
        }
    }

    /// Records each watched grant the catalogs now show in place, and each revoke they
    /// show done.
    fn record_seen(&mut self) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        for at in 0..self.access.requests.len() {
            let request = self.access.requests[at].clone();
            if !request.watched() {
                continue;
            }
            let Some(read) = self.access.catalogs.get(&request.judged.warehouse) else {
                continue;
            };
            let held: Vec<Option<bool>> = (request.checks().iter())
                .map(|check| read.catalog.holds(check))
                .collect();
            if held.iter().any(Option::is_none) {
                continue; // read before this request was watched
            }
            let (change, kind, proposal) = match request.status {
                Status::Approved if held.iter().all(|h| *h == Some(true)) => {
                    ("grant_seen", "access_grant_seen", request.grant.clone())
                }
                Status::Revoking if held.iter().all(|h| *h == Some(false)) => {
                    ("revoke_seen", "access_revoke_seen", request.revoke.clone())
                }
                _ => continue,
            };
            let proposal = proposal.map(|p| p.proposal).unwrap_or_default();
            let seen_at = read.at;
            let seq = self.record(
                kind,
                ENGINE_ACTOR,
                json!({"request": request.id, "proposal": proposal, "seen_at": seen_at,
                       "warehouse": request.judged.warehouse}),
            )?;
            let entry = &mut self.access.requests[at];
            let text = if change == "grant_seen" {
                entry.status = Status::Granted;
                entry.grant_seen_at = Some(seen_at);
                format!(
                    "{}: the grant is in place (catalog read {seen_at})",
                    entry.id
                )
            } else {
                entry.status = Status::Revoked;
                entry.revoke_seen_at = Some(seen_at);
                format!(
                    "{}: the grant is revoked (catalog read {seen_at})",
                    entry.id
                )
            };
            self.notices.push(text.clone());
            self.access.changed.insert(request.id.clone());
            events.push(self.access_event(&request.id, change, text, seq));
        }
        Ok(events)
    }

    /// The requests as the console shows them.
    pub(super) fn access_for_console(&self) -> Vec<api::AccessView> {
        (self.access.requests.iter())
            .map(|r| api::AccessView {
                id: r.id.clone(),
                status: serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                privilege: r.ask.privilege.clone(),
                tables: (r.judged.tables.iter())
                    .map(|(s, t)| format!("{s}.{t}"))
                    .collect(),
                grantee: r.ask.grantee.clone(),
                asked_by: r.by_display.clone(),
                proposal: r.grant.as_ref().map(|g| g.proposal.clone()),
                expires_at: r.expires_at,
                review_hash: (r.status == Status::Review).then(|| review_hash(r)),
                proposal_hash: r.grant.as_ref().map(|g| g.content_hash.clone()),
            })
            .collect()
    }

    /// Writes the requests changed since the last write (inside the transaction).
    pub(super) fn persist_access(&mut self) -> Result<()> {
        for id in std::mem::take(&mut self.access.changed) {
            if let Some(request) = self.access.requests.iter().find(|r| r.id == id) {
                self.state
                    .put_access_request(&id, &serde_json::to_string(request)?)?;
            }
        }
        Ok(())
    }

    /// Reads the requests back from the state database.
    pub(super) fn load_access(&mut self) -> Result<()> {
        let mut requests = Vec::new();
        for (id, doc) in self.state.access_request_docs()? {
            let request: AccessRequest = serde_json::from_str(&doc)
                .with_context(|| format!("access request {id} in the state database"))?;
            requests.push(request);
        }
        self.access.requests = requests;
        self.access.changed.clear();
        Ok(())
    }
}

/// A grantee, a table or an asker's name is outside text.
impl crate::sanitize::Sanitize for api::AccessView {
    fn sanitize(&mut self) {
        let api::AccessView {
            id,
            status,
            privilege,
            tables,
            grantee,
            asked_by,
            proposal,
            expires_at: _,
            review_hash,
            proposal_hash,
        } = self;
        for text in [id, status, privilege, grantee, asked_by] {
            text.sanitize();
        }
        tables.sanitize();
        for text in [proposal, review_hash, proposal_hash] {
            text.sanitize();
        }
    }
}
