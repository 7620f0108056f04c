//! A whole wave rolled back: `rollback MIG-<migration>-<wave>` puts back every repoint
//! of the wave that stands applied, each as a recorded decision (`rolled_back`, the
//! file put back through an intent, as one repoint's rollback is), and closes the
//! wave's gate again: its sign-off is withdrawn until an owner signs anew.
//!
//! All or nothing at the door: each file is read first, and when any no longer holds
//! what its repoint wrote (someone changed it since), nothing is rolled back and the
//! refusal names every such file, so no wave is left half put back by a file nobody
//! looked at.

use super::*;
use crate::propose::file_text;

/// The last rollback of a wave, kept for its gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaveRollback {
    pub by: String,
    pub reason: String,
    pub at: Timestamp,
    /// The repoints it put back.
    pub repoints: Vec<String>,
}

impl WaveRollback {
    /// Why the gate is closed after it (until a new sign-off).
    pub fn why(&self) -> String {
        format!(
            "{} rolled the wave back at {} ({}): sign off again once it is moved",
            self.by, self.at, self.reason
        )
    }
}

impl Engine {
    /// Rolls back every applied repoint of wave `id` and closes its gate.
    pub(super) fn roll_back_wave(
        &mut self,
        id: &str,
        reason: &str,
        actor: &Actor,
    ) -> Result<Vec<Event>> {
        self.ensure_chain_trusted()?;
        actor.person()?;
        anyhow::ensure!(!reason.trim().is_empty(), "a roll back needs a reason");
        let view = (self.wave_views().into_iter())
            .find(|w| w.id.eq_ignore_ascii_case(id))
            .ok_or_else(|| Refusal::new(RefusalKind::NotFound, format!("no wave {id}")))?;
        self.ensure_wave_owner(&view.migration, actor, "roll a wave back")?;
        let applied: Vec<RepointProposal> = (view.proposals.iter())
            .filter(|p| p.state == RepointState::Approved)
            .cloned()
            .collect();
        let signed = self.waves.signed.get(&view.id).cloned();
        if applied.is_empty() && signed.is_none() {
            return Err(Refusal::new(
                RefusalKind::Invalid,
                format!(
                    "{}: no repoint stands applied and the wave is not signed off: nothing \
                     to roll back",
                    view.id
                ),
            )
            .into());
        }
        let mut changed = Vec::new();
        for proposal in &applied {
            anyhow::ensure!(
                !self.intent_pending(&proposal.id)?,
                "{} already has a change in flight; wait for it to finish",
                proposal.id
            );
            let file = &proposal.repoint.file;
            let path = self.project_file(file)?;
            let current =
                std::fs::read_to_string(&path).with_context(|| format!("{}", path.display()))?;
            let wrote = &proposal.repoint.new;
            if let Some(difference) = file_text::first_difference(&current, wrote, "the repoint") {
                changed.push(format!("{file} ({}): {difference}", proposal.id));
            }
        }
        if !changed.is_empty() {
            return Err(Refusal::new(
                RefusalKind::StaleHash,
                format!(
                    "{}: nothing is rolled back: changed since it was repointed: {}; put \
                     it back as the repoint wrote it, or roll the other repoints back one \
                     by one",
                    view.id,
                    changed.join("; ")
                ),
            )
            .into());
        }
        let ids: Vec<String> = applied.iter().map(|p| p.id.clone()).collect();
        let files: Vec<String> = (applied.iter()).map(|p| p.repoint.file.clone()).collect();
        let seq = self.record(
            "migration_wave_rolled_back",
            &actor.to_json(),
            json!({"wave": view.id, "reason": reason, "repoints": ids, "files": files,
                   "withdrawn_sign_off": signed.as_ref().map(|s| &s.parity_hash)}),
        )?;
        self.waves.signed.remove(&view.id);
        self.waves.stale.remove(&view.id);
        self.waves.rolled_back.insert(
            view.id.clone(),
            WaveRollback {
                by: actor.display(),
                reason: reason.to_string(),
                at: self.now(),
                repoints: ids.clone(),
            },
        );
        self.waves.changed.insert(view.id.clone());
        // Each file is put back after this commits; each repoint's rollback is
        // recorded once its file is.
        for proposal in &applied {
            let decided = Decided {
                incident: view.id.clone(),
                proposal: proposal.id.clone(),
                verdict: Verdict::RolledBack,
                actor: actor.to_json(),
                actor_display: actor.display(),
                content_hash: proposal.content_hash.clone(),
                reason: reason.to_string(),
            };
            let effect = Effect::WriteFile {
                file: proposal.repoint.file.clone(),
                from: proposal.repoint.new.clone(),
                to: proposal.repoint.old.clone(),
            };
            self.intend(&proposal.id, effect, Completion::Decision(decided), true)?;
        }
        self.notices.push(format!(
            "{}: rolled back by {} ({}); the gate is closed",
            view.id,
            actor.display(),
            match ids.is_empty() {
                true => "no repoint stood applied".to_string(),
                false => format!("putting back {}", ids.join(", ")),
            }
        ));
        Ok(vec![self.event(EventKind::Decision {
            proposal: view.id,
            verdict: Verdict::RolledBack,
            actor: actor.display(),
            seq,
        })])
    }
}
