//! Migration waves (`[[migration]]`) in the engine. Each turn both sides of every
//! table of every wave are asked of a worker (a probe, as the access catalog is: the
//! engine's thread never waits on a warehouse), and the latest sides make the wave's
//! parity (`crate::migration::parity`). An owner of the migration's domain signs a
//! wave off with `approve MIG-<migration>-<wave> <parity hash>`: refused unless parity
//! holds and the hash is the current one whole. The sign-off is a chain record holding
//! the parity it was given on, and is kept in the state database; a later reading with
//! another hash closes the gate again (recorded once) until an owner signs anew.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::evidence::{Answer, Lookup};
use super::*;
use crate::migration::parity::{compare, read_side, Side, TableParity, WaveParity};
use crate::migration::repoint::{self, Reader, Repoint};
use crate::migration::{gate, may_sign_off, Gate, SignOff};

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
    /// Waves whose sign-off was seen overtaken by a reading (recorded once).
    stale: BTreeSet<String>,
    changed: BTreeSet<String>,
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
                out.push(WaveView {
                    rollbacks: repoints.iter().map(Repoint::rollback).collect(),
                    readers,
                    repoints,
                    gate: gate(parity.as_ref(), signed.as_ref()),
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
        self.record_overtaken()
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
        let migration = (self.config.migration.iter())
            .find(|m| m.name == view.migration)
            .expect("a wave of a configured migration");
        let owners = (self.config.domain.iter())
            .find(|d| d.name == migration.domain)
            .map(|d| d.owners.clone())
            .unwrap_or_default();
        if !actor.roles(&self.config).iter().any(|r| owners.contains(r)) {
            return Err(Refusal::new(
                RefusalKind::Policy,
                format!(
                    "{} holds none of the roles that own {} ({}): only they sign a wave off",
                    actor.display(),
                    migration.domain,
                    owners.join(", ")
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

    /// Writes the sign-offs changed since the last write (inside the transaction).
    pub(super) fn persist_waves(&mut self) -> Result<()> {
        for id in std::mem::take(&mut self.waves.changed) {
            if let Some(signed) = self.waves.signed.get(&id) {
                self.state
                    .put_wave_sign_off(&id, &serde_json::to_string(signed)?)?;
            }
        }
        Ok(())
    }

    /// Reads the sign-offs back from the state database.
    pub(super) fn load_waves(&mut self) -> Result<()> {
        let mut signed = BTreeMap::new();
        for (id, doc) in self.state.wave_sign_offs()? {
            let sign_off: SignOff = serde_json::from_str(&doc)
                .with_context(|| format!("sign-off of {id} in the state database"))?;
            signed.insert(id, sign_off);
        }
        self.waves.signed = signed;
        self.waves.changed.clear();
        Ok(())
    }
}
