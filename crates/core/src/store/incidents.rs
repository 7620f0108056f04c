//! The engine's memory of incidents and approval requests (`incident`, `request`), each
//! kept as its JSON document under its id.

use anyhow::Result;
use rusqlite::{params, Connection};

pub trait IncidentStore {
    /// Writes (or rewrites) an incident's document and status.
    fn put_incident(&self, id: &str, status: &str, doc: &str) -> Result<()>;
    /// Writes (or rewrites) the approval request of `proposal`.
    fn put_request(&self, proposal: &str, doc: &str) -> Result<()>;
    /// (id, document) of every incident, in the order they were first written.
    fn incident_docs(&self) -> Result<Vec<(String, String)>>;
    /// (proposal, document) of every approval request.
    fn request_docs(&self) -> Result<Vec<(String, String)>>;
    /// (job, run id) of every run queued for an incident and not finished, by incident.
    fn followed_runs(&self) -> Result<Vec<(String, String)>>;
}

fn pairs(conn: &Connection, sql: &str) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl IncidentStore for Connection {
    fn put_incident(&self, id: &str, status: &str, doc: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO incident (id, status, doc) VALUES (?1, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, doc = excluded.doc",
        )?
        .execute(params![id, status, doc])?;
        Ok(())
    }

    fn put_request(&self, proposal: &str, doc: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO request (proposal, doc) VALUES (?1, ?2)
             ON CONFLICT (proposal) DO UPDATE SET doc = excluded.doc",
        )?
        .execute(params![proposal, doc])?;
        Ok(())
    }

    fn incident_docs(&self) -> Result<Vec<(String, String)>> {
        pairs(self, "SELECT id, doc FROM incident ORDER BY rowid")
    }

    fn request_docs(&self) -> Result<Vec<(String, String)>> {
        pairs(self, "SELECT proposal, doc FROM request")
    }

    fn followed_runs(&self) -> Result<Vec<(String, String)>> {
        pairs(
            self,
            "SELECT json_extract(doc, '$.run.job'), CAST(json_extract(doc, '$.run.id') AS TEXT)
             FROM incident
             WHERE json_type(doc, '$.run') = 'object'
               AND coalesce(json_type(doc, '$.run.finished'), 'null') = 'null'
             ORDER BY id",
        )
    }
}
