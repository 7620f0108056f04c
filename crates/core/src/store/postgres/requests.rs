//! What came of people's requests on PostgreSQL (see `store::requests`).

use anyhow::Result;

use super::PgState;
use crate::clock::Timestamp;
use crate::store::requests::RequestStore;

impl RequestStore for PgState {
    fn request_outcome(&self, client_request: &str, asker_uid: u32) -> Result<Option<String>> {
        Ok(self
            .query(
                "SELECT outcome FROM request_outcome
                 WHERE team = $1 AND client_request = $2 AND asker_uid = $3",
                &[&self.team, &client_request, &i64::from(asker_uid)],
            )?
            .first()
            .map(|r| r.get(0)))
    }

    fn keep_request_outcome(
        &self,
        client_request: &str,
        asker_uid: u32,
        at: Timestamp,
        outcome: &str,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO request_outcome (team, client_request, asker_uid, at, outcome)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (team, client_request) DO NOTHING",
            &[
                &self.team,
                &client_request,
                &i64::from(asker_uid),
                &at.to_string(),
                &outcome,
            ],
        )?;
        Ok(())
    }

    fn request_in_flight(&self, client_request: &str) -> Result<bool> {
        Ok(self.query(
            "SELECT EXISTS (SELECT 1 FROM intent
                   WHERE team = $1 AND client_request = $2 AND status = 'pending')",
            &[&self.team, &client_request],
        )?[0]
            .get(0))
    }
}
