//! Migration waves' sign-offs (engine/waves.rs), each a JSON document under its wave's
//! id (MIG-name-wave).

use anyhow::Result;
use rusqlite::{params, Connection};

pub trait WaveStore {
    fn put_wave_sign_off(&self, wave: &str, doc: &str) -> Result<()>;
    /// (wave, document) of every sign-off kept.
    fn wave_sign_offs(&self) -> Result<Vec<(String, String)>>;
}

impl WaveStore for Connection {
    fn put_wave_sign_off(&self, wave: &str, doc: &str) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO migration_sign_off (wave, doc) VALUES (?1, ?2)
             ON CONFLICT (wave) DO UPDATE SET doc = excluded.doc",
        )?
        .execute(params![wave, doc])?;
        Ok(())
    }

    fn wave_sign_offs(&self) -> Result<Vec<(String, String)>> {
        let mut stmt =
            self.prepare_cached("SELECT wave, doc FROM migration_sign_off ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
