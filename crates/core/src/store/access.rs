//! The engine's memory of access requests (`access_request`), each kept as its JSON
//! document under its id.

use anyhow::Result;
use rusqlite::{params, Connection};

pub trait AccessStore {
    /// Writes (or rewrites) an access request's document.
    fn put_access_request(&self, id: &str, doc: &str) -> Result<()>;
    /// (id, document) of every access request, in the order they were first written.
    fn access_request_docs(&self) -> Result<Vec<(String, String)>>;
}

impl AccessStore for Connection {
    fn put_access_request(&self, id: &str, doc: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO access_request (id, doc) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET doc = excluded.doc",
        )?
        .execute(params![id, doc])?;
        Ok(())
    }

    fn access_request_docs(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self.prepare_cached("SELECT id, doc FROM access_request ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
