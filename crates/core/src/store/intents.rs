//! Intents (`intent`): effects outside the database, committed before they are carried
//! out and closed with what came of them; and the schedule a hold found before it
//! paused a job (`held_schedule`), which its roll back puts back. The effect, its
//! completion and the schedule are kept as the engine's JSON.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Timestamp;

/// An intent to commit.
pub struct NewIntent<'a> {
    pub created_at: Timestamp,
    /// The proposal or incident it is for: one pending intent per subject.
    pub subject: &'a str,
    pub effect: &'a str,
    pub completion: &'a str,
    pub by_person: bool,
    /// The client request that made it, and the asker's uid (a person's intent only).
    pub client_request: Option<&'a str>,
    pub asker_uid: Option<u32>,
}

/// A pending intent as the store keeps it.
pub struct StoredIntent {
    pub id: i64,
    pub subject: String,
    pub effect: String,
    pub completion: String,
    pub by_person: bool,
    pub client_request: Option<String>,
    pub asker_uid: Option<u32>,
}

pub trait IntentStore {
    /// Commits an intent, pending; returns its id.
    fn add_intent(&self, intent: &NewIntent) -> Result<i64>;
    /// Is an intent for `subject` pending?
    fn intent_pending_for(&self, subject: &str) -> Result<bool>;
    /// Every pending intent, oldest first.
    fn pending_intents(&self) -> Result<Vec<StoredIntent>>;
    /// Closes an intent as `status` (done, withdrawn) with what came of it.
    fn close_intent(&self, id: i64, status: &str, outcome: &str) -> Result<()>;
    /// Is an intent pending to queue the run `key` of `job`?
    fn run_pending(&self, job: &str, key: &str) -> Result<bool>;
    /// The schedule kept for `proposal`'s hold, if one was read.
    fn held_schedule(&self, proposal: &str) -> Result<Option<String>>;
    fn keep_held_schedule(
        &self,
        proposal: &str,
        job: &str,
        before: &str,
        at: Timestamp,
    ) -> Result<()>;
    fn forget_held_schedule(&self, proposal: &str) -> Result<()>;
}

impl IntentStore for Connection {
    fn add_intent(&self, intent: &NewIntent) -> Result<i64> {
        self.prepare_cached(
            "INSERT INTO intent (created_at, subject, effect, completion, by_person,
                                 client_request, asker_uid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            intent.created_at.to_string(),
            intent.subject,
            intent.effect,
            intent.completion,
            intent.by_person,
            intent.client_request,
            intent.asker_uid,
        ])?;
        Ok(self.last_insert_rowid())
    }

    fn intent_pending_for(&self, subject: &str) -> Result<bool> {
        Ok(self
            .prepare_cached(
                "SELECT count(*) > 0 FROM intent WHERE subject = ?1 AND status = 'pending'",
            )?
            .query_row([subject], |r| r.get(0))?)
    }

    fn pending_intents(&self) -> Result<Vec<StoredIntent>> {
        let mut stmt = self.prepare_cached(
            "SELECT id, subject, effect, completion, by_person, client_request, asker_uid
             FROM intent WHERE status = 'pending' ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(StoredIntent {
                id: r.get(0)?,
                subject: r.get(1)?,
                effect: r.get(2)?,
                completion: r.get(3)?,
                by_person: r.get(4)?,
                client_request: r.get(5)?,
                asker_uid: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn close_intent(&self, id: i64, status: &str, outcome: &str) -> Result<()> {
        self.prepare_cached("UPDATE intent SET status = ?2, outcome = ?3 WHERE id = ?1")?
            .execute(params![id, status, outcome])?;
        Ok(())
    }

    fn run_pending(&self, job: &str, key: &str) -> Result<bool> {
        Ok(self
            .prepare_cached(
                "SELECT count(*) > 0 FROM intent WHERE status = 'pending'
                   AND json_extract(effect, '$.effect') = 'queue_run'
                   AND json_extract(effect, '$.job') = ?1 AND json_extract(effect, '$.key') = ?2",
            )?
            .query_row(params![job, key], |r| r.get(0))?)
    }

    fn held_schedule(&self, proposal: &str) -> Result<Option<String>> {
        Ok(self
            .prepare_cached("SELECT before FROM held_schedule WHERE proposal = ?1")?
            .query_row([proposal], |r| r.get(0))
            .optional()?)
    }

    fn keep_held_schedule(
        &self,
        proposal: &str,
        job: &str,
        before: &str,
        at: Timestamp,
    ) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO held_schedule (proposal, job, before, taken_at)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![proposal, job, before, at.to_string()])?;
        Ok(())
    }

    fn forget_held_schedule(&self, proposal: &str) -> Result<()> {
        self.prepare_cached("DELETE FROM held_schedule WHERE proposal = ?1")?
            .execute([proposal])?;
        Ok(())
    }
}
