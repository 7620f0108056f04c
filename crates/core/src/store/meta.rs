//! Small facts the state database keeps by name (`meta`): the chain's log id, the
//! engine's observation mark, the demo's clock.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

pub trait MetaStore {
    fn meta(&self, key: &str) -> Result<Option<String>>;
    /// Sets `key`, replacing what it held.
    fn set_meta(&self, key: &str, value: &str) -> Result<()>;
    /// Sets `key` only if it holds nothing yet; a second writer's value is an error
    /// (what the chain's log id needs: one, created once).
    fn create_meta(&self, key: &str, value: &str) -> Result<()>;
}

impl MetaStore for Connection {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )?
        .execute(params![key, value])?;
        Ok(())
    }

    fn create_meta(&self, key: &str, value: &str) -> Result<()> {
        self.prepare_cached("INSERT INTO meta (key, value) VALUES (?1, ?2)")?
            .execute(params![key, value])?;
        Ok(())
    }
}
