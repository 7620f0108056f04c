//! Intents and held schedules on PostgreSQL (see `store::intents`): an intent is
//! pending from its commit until it is closed, as on SQLite.

use anyhow::Result;

use super::PgState;
use crate::clock::Timestamp;
use crate::store::intents::{IntentStore, NewIntent, StoredIntent};

impl PgState {
    fn exists(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> Result<bool> {
        Ok(self.query(&format!("SELECT EXISTS ({sql})"), params)?[0].get(0))
    }
}

impl IntentStore for PgState {
    fn add_intent(&self, intent: &NewIntent) -> Result<i64> {
        let added = self.write_query(
            "INSERT INTO intent (team, created_at, subject, effect, completion, by_person,
                                 client_request, asker_uid)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            &[
                &self.team,
                &intent.created_at.to_string(),
                &intent.subject,
                &intent.effect,
                &intent.completion,
                &intent.by_person,
                &intent.client_request,
                &intent.asker_uid.map(i64::from),
            ],
        )?;
        Ok(added[0].get(0))
    }

    fn intent_pending_for(&self, subject: &str) -> Result<bool> {
        self.exists(
            "SELECT 1 FROM intent WHERE team = $1 AND subject = $2 AND status = 'pending'",
            &[&self.team, &subject],
        )
    }

    fn pending_intents(&self) -> Result<Vec<StoredIntent>> {
        Ok(self
            .query(
                "SELECT id, subject, effect, completion, by_person, client_request, asker_uid
                 FROM intent WHERE team = $1 AND status = 'pending' ORDER BY id",
                &[&self.team],
            )?
            .iter()
            .map(|r| StoredIntent {
                id: r.get(0),
                subject: r.get(1),
                effect: r.get(2),
                completion: r.get(3),
                by_person: r.get(4),
                client_request: r.get(5),
                asker_uid: r.get::<_, Option<i64>>(6).map(|uid| uid as u32),
            })
            .collect())
    }

    fn close_intent(&self, id: i64, status: &str, outcome: &str) -> Result<()> {
        self.execute(
            "UPDATE intent SET status = $3, outcome = $4 WHERE team = $1 AND id = $2",
            &[&self.team, &id, &status, &outcome],
        )?;
        Ok(())
    }

    fn run_pending(&self, job: &str, key: &str) -> Result<bool> {
        self.exists(
            "SELECT 1 FROM intent WHERE team = $1 AND status = 'pending'
               AND (effect::jsonb) ->> 'effect' = 'queue_run'
               AND (effect::jsonb) ->> 'job' = $2 AND (effect::jsonb) ->> 'key' = $3",
            &[&self.team, &job, &key],
        )
    }

    fn held_schedule(&self, proposal: &str) -> Result<Option<String>> {
        Ok(self
            .query(
                "SELECT before FROM held_schedule WHERE team = $1 AND proposal = $2",
                &[&self.team, &proposal],
            )?
            .first()
            .map(|r| r.get(0)))
    }

    fn keep_held_schedule(
        &self,
        proposal: &str,
        job: &str,
        before: &str,
        at: Timestamp,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO held_schedule (team, proposal, job, before, taken_at)
             VALUES ($1, $2, $3, $4, $5)",
            &[&self.team, &proposal, &job, &before, &at.to_string()],
        )?;
        Ok(())
    }

    fn forget_held_schedule(&self, proposal: &str) -> Result<()> {
        self.execute(
            "DELETE FROM held_schedule WHERE team = $1 AND proposal = $2",
            &[&self.team, &proposal],
        )?;
        Ok(())
    }
}
