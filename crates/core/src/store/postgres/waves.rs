//! Migration waves' sign-offs on PostgreSQL, each the team's JSON document under its
//! wave's id.

use anyhow::Result;

use super::PgState;
use crate::store::waves::WaveStore;

impl WaveStore for PgState {
    fn put_wave_sign_off(&self, wave: &str, doc: &str) -> Result<()> {
        self.execute(
            "INSERT INTO migration_sign_off (team, wave, doc) VALUES ($1, $2, $3)
             ON CONFLICT (team, wave) DO UPDATE SET doc = excluded.doc",
            &[&self.team, &wave, &doc],
        )?;
        Ok(())
    }

    fn wave_sign_offs(&self) -> Result<Vec<(String, String)>> {
        self.pairs("SELECT wave, doc FROM migration_sign_off WHERE team = $1 ORDER BY ord")
    }
}
