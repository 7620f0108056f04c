//! Access requests on PostgreSQL, each the team's JSON document under its id.

use anyhow::Result;

use super::PgState;
use crate::store::access::AccessStore;

impl AccessStore for PgState {
    fn put_access_request(&self, id: &str, doc: &str) -> Result<()> {
        self.execute(
            "INSERT INTO access_request (team, id, doc) VALUES ($1, $2, $3)
             ON CONFLICT (team, id) DO UPDATE SET doc = excluded.doc",
            &[&self.team, &id, &doc],
        )?;
        Ok(())
    }

    fn access_request_docs(&self) -> Result<Vec<(String, String)>> {
        self.pairs("SELECT id, doc FROM access_request WHERE team = $1 ORDER BY ord")
    }
}
