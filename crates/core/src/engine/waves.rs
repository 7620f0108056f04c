//! Migration waves (`[[migration]]`) in the engine. Each turn both sides of every
//! table of every wave are asked of a worker (a probe, as the access catalog is: the
//! engine's thread never waits on a warehouse), and the latest sides make the wave's
//! parity (`crate::migration::parity`). An owner of the migration's domain signs a
//! wave off with `approve MIG-<migration>-<wave> <parity hash>`: refused unless parity
//! holds and the hash is the current one whole. The sign-off is a chain record holding
//! the parity it was given on, and is kept in the state database; a later reading with
//! another hash closes the gate again (recorded once) until an owner signs anew.
//!
//! Each diff repointing a dbt model from an old name to the new one is a proposal of
//! its wave (`MIG-<migration>-<wave>-R<n>`), bound to its content hash like any other:
//! an owner of the domain approves it (the file is written, intent first, as a `Diff`
//! is), rejects it (final for that content), or rolls it back (the file put back: the
//! reverse diff). A wave's own id can be rejected too, on its parity hash: an owner who
//! will not sign that reading off says so, and it cannot be signed off after.

mod rollback;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::commands::stale_refusal;
use super::evidence::{Answer, Lookup};
use super::intent::{Completion, Decided, Effect};
use super::*;
use crate::migration::parity::{compare, read_side, Side, TableParity, WaveParity};
use crate::migration::repoint::{self, Reader, Repoint};
use crate::migration::{gate, may_sign_off, Gate, SignOff};
use rollback::WaveRollback;

/// The engine's waves: the sides as last read, and the sign-offs.
#[derive(Default)]
pub(super) struct Waves {
    /// Each side as last read, by its probe key.
    sides: BTreeMap<String, Side>,
    /// When each side was last read (or failed): read again `parity_every` later.
    asked_in: BTreeMap<String, NaiveDateTime>,
    /// Why a side could not be read last time it was asked, by probe key.
    unreadable: BTreeMap<String, String>,
    signed: BTreeMap<String, SignOff>,
    /// An owner's refusal to sign a wave off, on the parity hash they read.
    rejected: BTreeMap<String, Rejection>,
    /// Each wave's repoint proposals, numbered in the order they were first proposed.
    repoints: BTreeMap<String, Vec<RepointProposal>>,
    /// The last time each wave was rolled back whole, until it is signed off again.
    rolled_back: BTreeMap<String, WaveRollback>,
    /// Waves whose sign-off was seen overtaken by a reading (recorded once).
    stale: BTreeSet<String>,
    changed: BTreeSet<String>,
}

/// An owner's refusal to sign a wave's parity off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub by: String,
    pub parity_hash: String,
    pub reason: String,
    pub at: Timestamp,
}

/// Where a repoint proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepointState {
    Pending,
    /// The file is written.
    Approved,
    /// Final for this content.
    Rejected,
    /// The file is put back.
    RolledBack,
    /// The lineage no longer proposes it (the model changed since): never applied.
    Superseded,
}

/// One repoint diff of a wave as a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepointProposal {
    pub id: String,
    pub repoint: Repoint,
    pub content_hash: String,
    pub state: RepointState,
    /// Who decided it last, as people read it.
    pub decided_by: Option<String>,
}

/// What the state database keeps of a wave, under its id.
#[derive(Debug, Default, Serialize, Deserialize)]
struct WaveRecord {
    #[serde(default)]
    sign_off: Option<SignOff>,
    #[serde(default)]
    rejected: Option<Rejection>,
    #[serde(default)]
    repoints: Vec<RepointProposal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rolled_back: Option<WaveRollback>,
}

/// Kept before repoints were proposals: the sign-off alone.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredWave {
    SignOff(SignOff),
    Record(WaveRecord),
}

/// The content a repoint's approval is bound to.
fn repoint_hash(wave: &str, repoint: &Repoint) -> String {
    let content = json!({"kind": "repoint", "wave": wave, "reader": repoint.reader,
        "file": repoint.file, "old": repoint.old, "new": repoint.new});
    let digest = sha2::Sha256::digest(content.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Is `id` a migration wave (`MIG-orders-to-core-first`)?
pub(super) fn is_wave(id: &str) -> bool {
    id.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("MIG-"))
}

pub(super) fn wave_id(migration: &str, wave: &str) -> String {
    format!("MIG-{migration}-{wave}")
}

/// The probe key of one side of a table.
fn side_key(warehouse: &str, table: &str) -> String {
    format!("{warehouse}: migration side {table}")
}

/// A wave as the command line and console show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WaveView {
    pub id: String,
    pub migration: String,
    pub wave: String,
    /// (old, new) of each table.
    pub tables: Vec<(String, String)>,
    /// None until both sides of every table were read.
    pub parity: Option<WaveParity>,
    /// Why a side could not be read.
    pub unreadable: Vec<String>,
    pub gate: Gate,
    pub signed: Option<SignOff>,
    /// What still reads each old name (by old name; absent: the lineage does not know it).
    pub readers: Vec<(String, Vec<Reader>)>,
    /// The diffs repointing dbt models to the new names, and each one's rollback.
    pub repoints: Vec<Repoint>,
    pub rollbacks: Vec<Repoint>,
    /// The repoints as proposals: each one's id, hash and state.
    pub proposals: Vec<RepointProposal>,
    pub rejected: Option<Rejection>,
}

impl Engine {
    /// The parity of every wave from the sides as last read (None: a side not read yet).
    fn wave_parities(&self) -> Vec<(String, Option<WaveParity>)> {
        let mut out = Vec::new();
        for migration in &self.config.migration {
            for wave in &migration.waves {
                let mut tables = Vec::new();
                for table in &wave.tables {
                    let (old_wh, new_wh) = migration.sides(table);
                    let old = self.waves.sides.get(&side_key(old_wh, &table.old));
                    let new = self.waves.sides.get(&side_key(new_wh, &table.new));
                    if let (Some(old), Some(new)) = (old, new) {
                        tables.push(TableParity {
                            differences: compare(old, new),
                            old: old.clone(),
                            new: new.clone(),
                        });
                    }
                }
                let parity = (tables.len() == wave.tables.len())
                    .then(|| WaveParity::new(&migration.name, &wave.name, tables));
                out.push((wave_id(&migration.name, &wave.name), parity));
            }
        }
        out
    }

    /// Every wave, its parity and its gate.
    pub(super) fn wave_views(&self) -> Vec<WaveView> {
        let parities: BTreeMap<String, Option<WaveParity>> =
            self.wave_parities().into_iter().collect();
        let mut out = Vec::new();
        for migration in &self.config.migration {
            for wave in &migration.waves {
                let id = wave_id(&migration.name, &wave.name);
                let parity = parities.get(&id).cloned().flatten();
                let signed = self.waves.signed.get(&id).cloned();
                let mut unreadable = Vec::new();
                for table in &wave.tables {
                    let (old_wh, new_wh) = migration.sides(table);
                    for key in [side_key(old_wh, &table.old), side_key(new_wh, &table.new)] {
                        if let Some(why) = self.waves.unreadable.get(&key) {
                            unreadable.push(why.clone());
                        }
                    }
                }
                let (mut readers, mut repoints) = (Vec::new(), Vec::new());
                for table in &wave.tables {
                    let planned = (self.lineage.as_ref())
                        .and_then(|l| repoint::plan(l, &table.old, &table.new));
                    if let Some((read_by, diffs)) = planned {
                        readers.push((table.old.clone(), read_by));
                        repoints.extend(diffs);
                    }
                }
                let rejected = self.waves.rejected.get(&id).cloned();
                let mut gate = gate(parity.as_ref(), signed.as_ref());
                if let (Gate::Closed { why }, Some(r)) =
                    (&mut gate, self.waves.rolled_back.get(&id))
                {
                    if signed.is_none() {
                        why.push(r.why());
                    }
                }
                if let (Gate::Closed { why }, Some(r)) = (&mut gate, &rejected) {
                    if parity.as_ref().is_some_and(|p| p.hash == r.parity_hash) {
                        why.push(format!(
                            "{} rejected parity {}: {}",
                            r.by, r.parity_hash, r.reason
                        ));
                    }
                }
                out.push(WaveView {
                    proposals: self.waves.repoints.get(&id).cloned().unwrap_or_default(),
                    rejected,
                    rollbacks: repoints.iter().map(Repoint::rollback).collect(),
                    readers,
                    repoints,
                    gate,
                    id,
                    migration: migration.name.clone(),
                    wave: wave.name.clone(),
                    tables: (wave.tables.iter())
                        .map(|t| (t.old.clone(), t.new.clone()))
                        .collect(),
                    parity,
                    unreadable,
                    signed,
                });
            }
        }
        out
    }

    /// The waves as the console shows them.
    pub(super) fn waves_for_console(&self) -> Vec<api::WaveView> {
        (self.wave_views().into_iter())
            .map(|w| {
                let tables = (w.tables.iter())
                    .map(|(old, new)| {
                        let read = (w.parity.as_ref())
                            .and_then(|p| p.tables.iter().find(|t| t.old.table == *old));
                        api::WaveTableView {
                            old: old.clone(),
                            new: new.clone(),
                            read: read.is_some(),
                            rows: read.map(|t| t.old.rows),
                            differences: read.map(|t| t.differences.clone()).unwrap_or_default(),
                        }
                    })
                    .collect();
                let (open, gate) = match &w.gate {
                    Gate::Open { signed_by } => (true, vec![format!("signed off by {signed_by}")]),
                    Gate::Closed { why } => (false, why.clone()),
                };
                api::WaveView {
                    id: w.id.clone(),
                    open,
                    gate,
                    parity_hash: w.parity.as_ref().map(|p| p.hash.clone()),
                    tables,
                    repoints: (w.proposals.iter())
                        .map(|p| api::WaveRepointView {
                            id: p.id.clone(),
                            state: serde_json::to_value(p.state)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_string))
                                .unwrap_or_default(),
                            file: p.repoint.file.clone(),
                            content_hash: p.content_hash.clone(),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// `dataward migration [NAME]`: the waves of one migration, or of all.
    pub(super) fn migration_answer(&self, name: Option<&str>) -> Result<serde_json::Value> {
        if let Some(name) = name {
            if !self.config.migration.iter().any(|m| m.name == name) {
                let known: Vec<&str> = (self.config.migration.iter())
                    .map(|m| m.name.as_str())
                    .collect();
                anyhow::bail!(
                    "no [[migration]] is named {name:?} (configured: {})",
                    match known.is_empty() {
                        true => "none".to_string(),
                        false => known.join(", "),
                    }
                );
            }
        }
        let waves: Vec<WaveView> = (self.wave_views().into_iter())
            .filter(|w| name.is_none_or(|n| w.migration == n))
            .collect();
        Ok(json!({ "waves": waves }))
    }

    /// Each turn: every side asked of a worker (kept when answered), and a sign-off a
    /// new reading overtook recorded as such, once.
    pub(super) fn waves_turn(&mut self) -> Result<()> {
        if self.config.migration.is_empty() {
            return Ok(());
        }
        let mut asks = Vec::new();
        for migration in &self.config.migration {
            let every = crate::config::parse_duration(&migration.parity_every)
                .ok()
                .and_then(|d| chrono::TimeDelta::from_std(d).ok())
                .unwrap_or(chrono::TimeDelta::minutes(5));
            for wave in &migration.waves {
                for table in &wave.tables {
                    let (old_wh, new_wh) = migration.sides(table);
                    let day = table.day_column.clone();
                    asks.push((old_wh.to_string(), table.old.clone(), day.clone(), every));
                    asks.push((new_wh.to_string(), table.new.clone(), day, every));
                }
            }
        }
        for (warehouse, table, day, every) in asks {
            let key = side_key(&warehouse, &table);
            let read_lately =
                (self.waves.asked_in.get(&key)).is_some_and(|at| self.now_time < *at + every);
            if read_lately {
                continue;
            }
            let name = warehouse.clone();
            let lookup = self.probe(
                &warehouse,
                key.clone(),
                None,
                Box::new(move |wh| {
                    Ok(Answer::MigrationSide(read_side(
                        wh,
                        &name,
                        &table,
                        day.as_deref(),
                    )?))
                }),
            );
            match lookup {
                Some(Lookup::Pending) => {}
                Some(Lookup::Known(Answer::MigrationSide(side))) => {
                    self.evidence.forget(&key);
                    self.waves.asked_in.insert(key.clone(), self.now_time);
                    self.waves.unreadable.remove(&key);
                    self.waves.sides.insert(key, side);
                }
                other => {
                    self.evidence.forget(&key);
                    self.waves.asked_in.insert(key.clone(), self.now_time);
                    if let Some(why) = other.and_then(|l| l.unavailable()) {
                        tracing::warn!(%why, "migration side not read");
                        self.waves.unreadable.insert(key, why);
                    }
                }
            }
        }
        self.record_overtaken()?;
        self.propose_repoints()
    }

    /// Every repoint diff the lineage now gives becomes a proposal of its wave, once
    /// (by its content hash); a pending one the lineage no longer gives is superseded.
    fn propose_repoints(&mut self) -> Result<()> {
        for view in self.wave_views() {
            let owners = self.wave_owners(&view.migration).join(", ");
            let current: Vec<(String, &Repoint)> = (view.repoints.iter())
                .map(|r| (repoint_hash(&view.id, r), r))
                .collect();
            let known = self.waves.repoints.entry(view.id.clone()).or_default();
            let mut superseded = false;
            for proposal in known.iter_mut() {
                let given = current.iter().any(|(h, _)| *h == proposal.content_hash);
                if proposal.state == RepointState::Pending && !given {
                    proposal.state = RepointState::Superseded;
                    superseded = true;
                }
            }
            let mut new = Vec::new();
            for (hash, repoint) in current {
                if known.iter().any(|p| p.content_hash == hash) {
                    continue;
                }
                let id = format!("{}-R{}", view.id, known.len() + new.len() + 1);
                new.push(RepointProposal {
                    id,
                    repoint: repoint.clone(),
                    content_hash: hash,
                    state: RepointState::Pending,
                    decided_by: None,
                });
            }
            if superseded || !new.is_empty() {
                self.waves.changed.insert(view.id.clone());
            }
            for proposal in new {
                let seq = self.record(
                    "migration_repoint_proposal",
                    ENGINE_ACTOR,
                    json!({"wave": view.id, "proposal": proposal.id,
                           "content_hash": proposal.content_hash,
                           "reader": proposal.repoint.reader, "file": proposal.repoint.file,
                           "old": proposal.repoint.old, "new": proposal.repoint.new,
                           "undo": "the file put back: the same diff reversed",
                           "owner": owners}),
                )?;
                tracing::info!(seq, proposal = %proposal.id, "repoint proposed");
                self.notices.push(format!(
                    "{}: repoint of {} ({}) proposed as {} (hash {}) to {owners}",
                    view.id,
                    proposal.repoint.reader,
                    proposal.repoint.file,
                    proposal.id,
                    proposal.content_hash
                ));
                (self.waves.repoints.entry(view.id.clone()).or_default()).push(proposal);
            }
        }
        Ok(())
    }

    /// The roles that own a migration's domain.
    fn wave_owners(&self, migration: &str) -> Vec<String> {
        let domain = (self.config.migration.iter())
            .find(|m| m.name == migration)
            .map(|m| m.domain.clone())
            .unwrap_or_default();
        (self.config.domain.iter())
            .find(|d| d.name == domain)
            .map(|d| d.owners.clone())
            .unwrap_or_default()
    }

    /// Only an owner of the migration's domain decides its waves and their repoints.
    fn ensure_wave_owner(&self, migration: &str, actor: &Actor, what: &str) -> Result<()> {
        let owners = self.wave_owners(migration);
        if actor.roles(&self.config).iter().any(|r| owners.contains(r)) {
            return Ok(());
        }
        let domain = (self.config.migration.iter())
            .find(|m| m.name == migration)
            .map(|m| m.domain.clone())
            .unwrap_or_default();
        Err(Refusal::new(
            RefusalKind::Policy,
            format!(
                "{} holds none of the roles that own {domain} ({}): only they {what}",
                actor.display(),
                owners.join(", ")
            ),
        )
        .into())
    }

    /// The wave a repoint proposal (`MIG-...-R<n>`) belongs to, and its index there.
    fn find_repoint(&self, id: &str) -> Option<(String, usize)> {
        self.waves.repoints.iter().find_map(|(wave, proposals)| {
            let at = proposals
                .iter()
                .position(|p| p.id.eq_ignore_ascii_case(id))?;
            Some((wave.clone(), at))
        })
    }

    /// Approve, reject or roll back a wave (`MIG-<migration>-<wave>`: its sign-off) or
    /// one of its repoints (`MIG-<migration>-<wave>-R<n>`).
    pub(super) fn decide_wave(
        &mut self,
        id: &str,
        content_hash: Option<&str>,
        reason: &str,
        actor: &Actor,
        verdict: Verdict,
    ) -> Result<Vec<Event>> {
        if let Some((wave, at)) = self.find_repoint(id) {
            return self.decide_repoint(&wave, at, content_hash, reason, actor, verdict);
        }
        match (verdict, content_hash) {
            (Verdict::Approved, Some(hash)) => self.sign_off_wave(id, hash, reason, actor),
            (Verdict::Rejected, Some(hash)) => self.reject_wave(id, hash, reason, actor),
            (Verdict::RolledBack, None) => self.roll_back_wave(id, reason, actor),
            _ => anyhow::bail!("a wave is signed off, rejected or rolled back"),
        }
    }

    fn decide_repoint(
        &mut self,
        wave: &str,
        at: usize,
        content_hash: Option<&str>,
        reason: &str,
        actor: &Actor,
        verdict: Verdict,
    ) -> Result<Vec<Event>> {
        self.ensure_chain_trusted()?;
        actor.person()?;
        let proposal = self.waves.repoints[wave][at].clone();
        let id = proposal.id.clone();
        if let Some(seen) = content_hash {
            stale_refusal(&id, &proposal.content_hash, seen)?;
        }
        let migration = (self.wave_views().into_iter())
            .find(|v| v.id == wave)
            .map(|v| v.migration)
            .context("a repoint of a configured wave")?;
        self.ensure_wave_owner(&migration, actor, "decide its repoints")?;
        let wanted = match verdict {
            Verdict::RolledBack => RepointState::Approved,
            _ => RepointState::Pending,
        };
        if proposal.state != wanted {
            let by = proposal
                .decided_by
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            return Err(Refusal::new(
                RefusalKind::AlreadyDecided,
                format!("{id} is {:?}{by}", proposal.state),
            )
            .into());
        }
        anyhow::ensure!(
            !self.intent_pending(&id)?,
            "{id} already has a change in flight"
        );
        let decided = Decided {
            incident: wave.to_string(),
            proposal: id.clone(),
            verdict,
            actor: actor.to_json(),
            actor_display: actor.display(),
            content_hash: proposal.content_hash.clone(),
            reason: reason.to_string(),
        };
        let file = &proposal.repoint;
        let effect = match verdict {
            Verdict::Approved => Effect::WriteFile {
                file: file.file.clone(),
                from: file.old.clone(),
                to: file.new.clone(),
            },
            Verdict::RolledBack => Effect::WriteFile {
                file: file.file.clone(),
                from: file.new.clone(),
                to: file.old.clone(),
            },
            _ => return self.record_repoint_decision(&decided, None),
        };
        // The file is written after this commits; the decision is recorded once it is.
        self.intend(&id, effect, Completion::Decision(decided), true)?;
        Ok(Vec::new())
    }

    /// Records a repoint's decision whose effect (the file written or put back) is in
    /// place.
    pub(super) fn record_repoint_decision(
        &mut self,
        decided: &Decided,
        action: Option<&str>,
    ) -> Result<Vec<Event>> {
        let (wave, at) = self
            .find_repoint(&decided.proposal)
            .with_context(|| format!("no repoint {}", decided.proposal))?;
        let proposal = self.waves.repoints[&wave][at].clone();
        let mut payload = json!({"wave": wave, "proposal": proposal.id,
            "verdict": decided.verdict, "content_hash": decided.content_hash,
            "file": proposal.repoint.file, "reason": decided.reason});
        if let Some(action) = action {
            payload["effect"] = json!(action);
        }
        let seq = self.record("migration_repoint_decision", &decided.actor, payload)?;
        let entry = &mut self.waves.repoints.get_mut(&wave).expect("found")[at];
        entry.state = match decided.verdict {
            Verdict::Approved => RepointState::Approved,
            Verdict::RolledBack => RepointState::RolledBack,
            _ => RepointState::Rejected,
        };
        entry.decided_by = Some(decided.actor_display.clone());
        let done = match decided.verdict {
            Verdict::Approved => format!("{} is repointed", proposal.repoint.file),
            Verdict::RolledBack => format!("{} is put back", proposal.repoint.file),
            _ => "rejected; nothing was changed".to_string(),
        };
        self.notices.push(format!(
            "{}: {done} ({})",
            proposal.id, decided.actor_display
        ));
        self.waves.changed.insert(wave);
        Ok(vec![self.event(EventKind::Decision {
            proposal: proposal.id,
            verdict: decided.verdict,
            actor: decided.actor_display.clone(),
            seq,
        })])
    }

    /// An owner will not sign a wave off on the parity they read: recorded, and that
    /// reading cannot be signed off after (a rejection is final for its content). A
    /// sign-off on it is withdrawn.
    fn reject_wave(
        &mut self,
        id: &str,
        parity_hash: &str,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        self.ensure_chain_trusted()?;
        actor.person()?;
        anyhow::ensure!(!reason.trim().is_empty(), "a rejection needs a reason");
        let view = (self.wave_views().into_iter())
            .find(|w| w.id.eq_ignore_ascii_case(id))
            .ok_or_else(|| Refusal::new(RefusalKind::NotFound, format!("no wave {id}")))?;
        self.ensure_wave_owner(&view.migration, actor, "reject a wave")?;
        let Some(parity) = &view.parity else {
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!(
                    "{}: parity has not been read yet: nothing to reject",
                    view.id
                ),
            )
            .into());
        };
        stale_refusal(&view.id, &parity.hash, parity_hash)?;
        let withdrawn = self.waves.signed.remove(&view.id);
        let seq = self.record(
            "migration_sign_off_rejected",
            &actor.to_json(),
            json!({"wave": view.id, "parity_hash": parity.hash, "reason": reason,
                   "failures": parity.failures(),
                   "withdrawn_sign_off": withdrawn.as_ref().map(|s| &s.by)}),
        )?;
        self.waves.rejected.insert(
            view.id.clone(),
            Rejection {
                by: actor.display(),
                parity_hash: parity.hash.clone(),
                reason: reason.to_string(),
                at: self.now(),
            },
        );
        self.waves.changed.insert(view.id.clone());
        self.notices.push(format!(
            "{}: {} rejected parity {}: the gate stays closed",
            view.id,
            actor.display(),
            parity.hash
        ));
        Ok(vec![self.event(EventKind::Decision {
            proposal: view.id,
            verdict: Verdict::Rejected,
            actor: actor.display(),
            seq,
        })])
    }

    /// A signed wave whose parity now reads another hash: its gate closes again.
    fn record_overtaken(&mut self) -> Result<()> {
        for (id, parity) in self.wave_parities() {
            let (Some(parity), Some(signed)) = (parity, self.waves.signed.get(&id).cloned()) else {
                continue;
            };
            if signed.parity_hash == parity.hash {
                self.waves.stale.remove(&id);
                continue;
            }
            if !self.waves.stale.insert(id.clone()) {
                continue;
            }
            let seq = self.record(
                "migration_gate_closed",
                ENGINE_ACTOR,
                json!({"wave": id, "signed_on": signed.parity_hash, "now": parity.hash,
                       "failures": parity.failures()}),
            )?;
            let text = format!(
                "{id}: parity reads {} now, not the {} {} signed off on: the gate is closed",
                parity.hash, signed.parity_hash, signed.by
            );
            tracing::info!(seq, "{text}");
            self.notices.push(text);
        }
        Ok(())
    }

    /// An owner signs a wave off on the parity hash they read: `approve MIG-... HASH`.
    pub(super) fn sign_off_wave(
        &mut self,
        id: &str,
        parity_hash: &str,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        self.ensure_chain_trusted()?;
        actor.person()?;
        let view = (self.wave_views().into_iter())
            .find(|w| w.id.eq_ignore_ascii_case(id))
            .ok_or_else(|| Refusal::new(RefusalKind::NotFound, format!("no wave {id}")))?;
        self.ensure_wave_owner(&view.migration, actor, "sign a wave off")?;
        if let Some(r) =
            (self.waves.rejected.get(&view.id)).filter(|r| r.parity_hash == parity_hash)
        {
            return Err(Refusal::new(
                RefusalKind::AlreadyDecided,
                format!(
                    "{}: {} rejected parity {} ({}); a rejection is final for that reading",
                    view.id, r.by, r.parity_hash, r.reason
                ),
            )
            .into());
        }
        if let Err(why) = may_sign_off(view.parity.as_ref(), parity_hash) {
            let kind = match view
                .parity
                .as_ref()
                .map(|p| p.hash.starts_with(parity_hash))
            {
                Some(false) => RefusalKind::StaleHash,
                _ => RefusalKind::Policy,
            };
            return Err(Refusal::new(kind, format!("{}: {why}", view.id)).into());
        }
        let parity = view.parity.expect("may_sign_off found it");
        let tables: Vec<serde_json::Value> = (parity.tables.iter())
            .map(|t| {
                json!({"old": t.old.table, "new": t.new.table, "rows": t.new.rows,
                       "columns": t.new.columns.len(), "days": t.new.days.len()})
            })
            .collect();
        let seq = self.record(
            "migration_sign_off",
            &actor.to_json(),
            json!({"wave": view.id, "parity_hash": parity.hash, "tables": tables,
                   "reason": reason}),
        )?;
        let signed = SignOff {
            by: actor.display(),
            parity_hash: parity.hash.clone(),
            at: self.now(),
        };
        self.waves.stale.remove(&view.id);
        self.waves.rolled_back.remove(&view.id);
        self.waves.signed.insert(view.id.clone(), signed);
        self.waves.changed.insert(view.id.clone());
        self.notices.push(format!(
            "{}: signed off by {}; the gate is open",
            view.id,
            actor.display()
        ));
        Ok(vec![self.event(EventKind::Decision {
            proposal: view.id,
            verdict: Verdict::Approved,
            actor: actor.display(),
            seq,
        })])
    }

    /// Writes the waves changed since the last write (inside the transaction).
    pub(super) fn persist_waves(&mut self) -> Result<()> {
        for id in std::mem::take(&mut self.waves.changed) {
            let record = WaveRecord {
                sign_off: self.waves.signed.get(&id).cloned(),
                rejected: self.waves.rejected.get(&id).cloned(),
                repoints: self.waves.repoints.get(&id).cloned().unwrap_or_default(),
                rolled_back: self.waves.rolled_back.get(&id).cloned(),
            };
            self.state
                .put_wave_sign_off(&id, &serde_json::to_string(&record)?)?;
        }
        Ok(())
    }

    /// Reads the sign-offs back from the state database.
    pub(super) fn load_waves(&mut self) -> Result<()> {
        let (mut signed, mut rejected, mut repoints) =
            (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        let mut rolled_back = BTreeMap::new();
        for (id, doc) in self.state.wave_sign_offs()? {
            let stored: StoredWave = serde_json::from_str(&doc)
                .with_context(|| format!("wave {id} in the state database"))?;
            let record = match stored {
                StoredWave::SignOff(sign_off) => WaveRecord {
                    sign_off: Some(sign_off),
                    ..WaveRecord::default()
                },
                StoredWave::Record(record) => record,
            };
            if let Some(s) = record.sign_off {
                signed.insert(id.clone(), s);
            }
            if let Some(r) = record.rejected {
                rejected.insert(id.clone(), r);
            }
            if let Some(r) = record.rolled_back {
                rolled_back.insert(id.clone(), r);
            }
            repoints.insert(id, record.repoints);
        }
        self.waves.signed = signed;
        self.waves.rejected = rejected;
        self.waves.repoints = repoints;
        self.waves.rolled_back = rolled_back;
        self.waves.changed.clear();
        Ok(())
    }
}

/// Table names, file paths and the differences read from warehouses are outside text.
impl crate::sanitize::Sanitize for api::WaveView {
    fn sanitize(&mut self) {
        let api::WaveView {
            id,
            open: _,
            gate,
            parity_hash,
            tables,
            repoints,
        } = self;
        id.sanitize();
        gate.sanitize();
        parity_hash.sanitize();
        for table in tables {
            let api::WaveTableView {
                old,
                new,
                read: _,
                rows: _,
                differences,
            } = table;
            old.sanitize();
            new.sanitize();
            differences.sanitize();
        }
        for repoint in repoints {
            let api::WaveRepointView {
                id,
                state,
                file,
                content_hash,
            } = repoint;
            for text in [id, state, file, content_hash] {
                text.sanitize();
            }
        }
    }
}
