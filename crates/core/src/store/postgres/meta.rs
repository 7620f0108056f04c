//! `meta` on PostgreSQL: small facts by name (the chain's log id).

use anyhow::Result;

use super::PgState;
use crate::store::meta::MetaStore;

impl MetaStore for PgState {
    fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .query(
                "SELECT value FROM meta WHERE team = $1 AND key = $2",
                &[&self.team, &key],
            )?
            .first()
            .map(|r| r.get(0)))
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.execute(
            "INSERT INTO meta (team, key, value) VALUES ($1, $2, $3)
             ON CONFLICT (team, key) DO UPDATE SET value = excluded.value",
            &[&self.team, &key, &value],
        )?;
        Ok(())
    }

    fn create_meta(&self, key: &str, value: &str) -> Result<()> {
        self.execute(
            "INSERT INTO meta (team, key, value) VALUES ($1, $2, $3)",
            &[&self.team, &key, &value],
        )?;
        Ok(())
    }
}
