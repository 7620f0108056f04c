//! Incidents and approval requests on PostgreSQL, each the team's JSON document under
//! its id (see `store::incidents`).

use anyhow::Result;

use super::PgState;
use crate::store::incidents::IncidentStore;

impl PgState {
    /// (text, text) pairs a query returns, the team its first parameter.
    pub(super) fn pairs(&self, sql: &str) -> Result<Vec<(String, String)>> {
        Ok(self
            .query(sql, &[&self.team])?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
    }
}

impl IncidentStore for PgState {
    fn put_incident(&self, id: &str, status: &str, doc: &str) -> Result<()> {
        self.execute(
            "INSERT INTO incident (team, id, status, doc) VALUES ($1, $2, $3, $4)
             ON CONFLICT (team, id) DO UPDATE SET status = excluded.status, doc = excluded.doc",
            &[&self.team, &id, &status, &doc],
        )?;
        Ok(())
    }

    fn put_request(&self, proposal: &str, doc: &str) -> Result<()> {
        self.execute(
            "INSERT INTO request (team, proposal, doc) VALUES ($1, $2, $3)
             ON CONFLICT (team, proposal) DO UPDATE SET doc = excluded.doc",
            &[&self.team, &proposal, &doc],
        )?;
        Ok(())
    }

    fn incident_docs(&self) -> Result<Vec<(String, String)>> {
        self.pairs("SELECT id, doc FROM incident WHERE team = $1 ORDER BY ord")
    }

    fn request_docs(&self) -> Result<Vec<(String, String)>> {
        self.pairs("SELECT proposal, doc FROM request WHERE team = $1")
    }

    fn followed_runs(&self) -> Result<Vec<(String, String)>> {
        self.pairs(
            "SELECT (doc::jsonb) -> 'run' ->> 'job', (doc::jsonb) -> 'run' ->> 'id'
             FROM incident
             WHERE team = $1 AND jsonb_typeof((doc::jsonb) -> 'run') = 'object'
               AND coalesce(jsonb_typeof((doc::jsonb) -> 'run' -> 'finished'), 'null') = 'null'
             ORDER BY id",
        )
    }
}
