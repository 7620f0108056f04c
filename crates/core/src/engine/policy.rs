//! The policy in force, reloaded while the engine runs: the config and the notes it
//! names. A reload is held to the check a start makes ([`Config::load_policy`]): a
//! file someone else could have written is refused, the running policy stays, and the
//! refusal goes on the chain and on every console's top line. A config that does not
//! parse is different: its files are ours, so what the team meant is unknown, and every
//! decision is denied until it is fixed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{anyhow, Result};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{Engine, Incident, ENGINE_ACTOR};
use crate::approve::request::RequestState;
use crate::config::{Config, PolicyError};
use crate::lineage::Lineage;
use crate::propose;
use crate::propose::{ProposalKind, ProposalState};

/// What identifies a file's content and who may change it, without reading it: a
/// replaced file, a rewrite, a chmod or a chown each move it.
pub(super) type FileStamp = Option<(u64, u64, u64, i64, i64, i64, i64, u32, u32)>;

fn stamp(path: &Path) -> FileStamp {
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.mode(),
        m.uid(),
    ))
}

fn stamps(config: &Config) -> Vec<FileStamp> {
    config
        .policy_files()
        .iter()
        .map(|(_, path)| stamp(path))
        .collect()
}

fn hash_file(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    Sha256::digest(&text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The lineage the config names: its manifest, catalog and notes.
pub(super) fn load_lineage(
    config: &Config,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Option<Lineage>> {
    let Some(l) = &config.lineage else {
        return Ok(None);
    };
    let notes = l.notes.as_ref().map(|n| config.resolve(n));
    let mut lineage =
        Lineage::load_telling(&config.resolve(&l.manifest), notes.as_deref(), progress)
            .map_err(|e| anyhow!("{e}"))?;
    if let Some(catalog) = &l.catalog {
        lineage = lineage
            .with_catalog(&config.resolve(catalog))
            .map_err(|e| anyhow!("{e}"))?;
    }
    Ok(Some(lineage))
}

impl Engine {
    /// What the top line says about the engine's own trust (see `Snapshot::trust_alarm`).
    pub(super) fn trust_alarm(&self) -> Option<String> {
        self.database_alarm.clone().or(self.policy_refused.clone())
    }

    /// The chain holds the hash of the policy in force (the config's, and the notes'
    /// when it names notes) whenever it changes. Runs on every tick, reading the files
    /// only when one of them moved.
    pub(super) fn record_policy(&mut self) -> Result<()> {
        let now = stamps(&self.config);
        if !self.policy_hash.is_empty() && now == self.policy_stamp {
            return Ok(());
        }
        self.policy_stamp = now;
        let first = self.policy_hash.is_empty();
        let mut error = None;
        if !first {
            match Config::load_policy(&self.config.origin) {
                Ok(config) => self.take_policy(config)?,
                Err(PolicyError::Untrusted(e)) => return self.refuse_policy(format!("{e:#}")),
                Err(PolicyError::Invalid(e)) => error = Some(format!("{e:#}")),
            }
        }
        let files = self.config.policy_files();
        let config_hash = hash_file(&files[0].1);
        let notes_hash = files.get(1).map(|(_, notes)| hash_file(notes));
        let hash = format!("{config_hash} {}", notes_hash.as_deref().unwrap_or(""));
        if hash == self.policy_hash {
            self.policy_refused = None;
            return Ok(());
        }
        let last: Option<(Option<String>, Option<String>)> = self
            .state
            .last_record_of_kind("policy")
            .ok()
            .flatten()
            .map(|record| {
                let payload: serde_json::Value =
                    serde_json::from_str(&record.payload).unwrap_or_default();
                let text = |key: &str| payload[key].as_str().map(str::to_string);
                (text("config_hash"), text("notes_hash"))
            });
        if last != Some((Some(config_hash.clone()), notes_hash.clone())) || error.is_some() {
            let mut payload = json!({
                "config": self.config.origin.display().to_string(),
                "config_hash": config_hash,
                "error": error,
            });
            if let (Some((_, notes)), Some(notes_hash)) = (files.get(1), &notes_hash) {
                payload["notes"] = json!(notes.display().to_string());
                payload["notes_hash"] = json!(notes_hash);
            }
            let at = self.now();
            self.record_at(at, "policy", ENGINE_ACTOR, payload)?;
        }
        if let Some(e) = &error {
            self.notices.push(format!(
                "policy cannot be evaluated, every decision is denied: {e}"
            ));
        }
        self.policy_error = error;
        self.policy_refused = None;
        self.policy_hash = hash;
        Ok(())
    }

    /// A policy file someone else could have written: not a word of it is taken.
    fn refuse_policy(&mut self, reason: String) -> Result<()> {
        tracing::error!("policy change refused, the running policy stays: {reason}");
        let payload = json!({
            "config": self.config.origin.display().to_string(),
            "reason": reason,
        });
        let at = self.now();
        self.record_at(at, "policy_refused", ENGINE_ACTOR, payload)?;
        let line = format!("POLICY CHANGE REFUSED, the running policy stays: {reason}");
        self.notices.push(line.clone());
        self.policy_refused = Some(line);
        Ok(())
    }

    /// Puts a reloaded policy in force: the notes are read again when they changed, and
    /// who may decide each pending proposal is worked out again from them.
    fn take_policy(&mut self, config: Config) -> Result<()> {
        let notes_of = |c: &Config| c.policy_files().get(1).map(|(_, p)| p.clone());
        let lineage_changed = notes_of(&config) != notes_of(&self.config)
            || config.lineage.as_ref().map(|l| (&l.manifest, &l.catalog))
                != self
                    .config
                    .lineage
                    .as_ref()
                    .map(|l| (&l.manifest, &l.catalog))
            || self.policy_hash.split(' ').nth(1)
                != notes_of(&config).map(|n| hash_file(&n)).as_deref();
        if lineage_changed {
            match load_lineage(&config, &mut |_, _| {}) {
                Ok(lineage) => {
                    self.lineage = lineage;
                    self.join_learned_lineage()?;
                }
                Err(e) => {
                    // The old lineage stays: the notes are ours but do not load.
                    self.notices
                        .push(format!("the notes do not load, the old ones stay: {e:#}"));
                    tracing::warn!("the lineage does not load, the old one stays: {e:#}");
                }
            }
        }
        self.config = config;
        // Who may decide or close each incident comes from the policy, and each
        // monitor's period (when a figure is stale) too.
        self.incidents.mark_all();
        self.latest.forget_views();
        // Its maintenance windows may have changed.
        self.refresh_quiet();
        self.reassign_pending()
    }

    /// A pending proposal's owner comes from the lineage (the manifest's `meta.owner`,
    /// the notes' `[[owner]]`); when that changed, the proposal names the new owner,
    /// its content hash changes with it (an approval of the old content no longer
    /// matches), and the chain records it as proposed again.
    fn reassign_pending(&mut self) -> Result<()> {
        let Some(lineage) = &self.lineage else {
            return Ok(());
        };
        let mut changed = Vec::new();
        for (i, incident) in self.incidents.iter().enumerate() {
            for (p, proposal) in incident.proposals.iter().enumerate() {
                let pending = proposal.state == ProposalState::Pending
                    && proposal.kind != ProposalKind::Note
                    && self
                        .requests
                        .get(&proposal.id)
                        .is_some_and(|r| r.state == RequestState::Pending);
                if !pending {
                    continue;
                }
                let Ok(node) = lineage.resolve(&proposal.target) else {
                    continue;
                };
                let owner = propose::owner_of(&lineage.node(node).owner);
                if owner != proposal.owner {
                    changed.push((i, p, owner));
                }
            }
        }
        for (i, p, owner) in changed {
            let incident: &mut Incident = &mut self.incidents[i];
            let proposal = &mut incident.proposals[p];
            let before = std::mem::replace(&mut proposal.owner, owner);
            proposal.content_hash = propose::content_hash(proposal);
            let proposal = proposal.clone();
            let id = incident.id.clone();
            if let Some(request) = self.requests.get_mut(&proposal.id) {
                request.owner = proposal.owner.clone();
                request.content_hash = proposal.content_hash.clone();
            }
            let at = self.now();
            self.record_at(
                at,
                "proposal",
                ENGINE_ACTOR,
                json!({
                    "incident": id, "proposal": proposal.id, "kind": proposal.kind,
                    "title": proposal.title, "owner": proposal.owner, "target": proposal.target,
                    "content_hash": proposal.content_hash, "content": proposal.body,
                    "undo": proposal.undo, "verify": proposal.verify, "owner_was": before,
                }),
            )?;
            self.notices.push(format!(
                "{} now goes to {} (was {before}): the policy changed",
                proposal.id, proposal.owner
            ));
        }
        Ok(())
    }
}
