//! `[state]`: where the team's state lives. Absent, it is the SQLite file in the data
//! directory (one host); with `url_env`, a PostgreSQL database the team's engines share,
//! one of them leading at a time (see `store::postgres`).

use std::path::Path;

use anyhow::{bail, Result};
use serde::Deserialize;

use super::{is_env_var_name, redact, Bad, Config, Step};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateConfig {
    /// The environment variable holding the PostgreSQL URL (never the URL itself: it
    /// carries the password).
    pub url_env: String,
    /// The team whose engines share the database: names the leadership lock and lease.
    /// One team per database (or per schema, with `options=-csearch_path=...` in the
    /// URL).
    #[serde(default = "default_team")]
    pub team: String,
}

fn default_team() -> String {
    "default".to_string()
}

impl StateConfig {
    /// The URL from the environment, checked to be a PostgreSQL URL. Errors name the
    /// config file and key, and never the URL (it may hold a password).
    pub fn url(&self, origin: &Path) -> Result<String> {
        let var = &self.url_env;
        let at = format!("{}: [state] url_env", origin.display());
        let Ok(url) = std::env::var(var) else {
            bail!("{at}: environment variable {var} is not set; export it with the state database's postgres:// URL");
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            bail!(
                "{at}: environment variable {var} does not hold a postgres:// URL (it starts {:?})",
                url.chars()
                    .take_while(|c| *c != ':')
                    .take(12)
                    .collect::<String>()
            );
        }
        Ok(url)
    }
}

pub(super) fn validate(config: &Config, text: &str) -> Result<()> {
    let Some(state) = &config.state else {
        return Ok(());
    };
    let bad = if !is_env_var_name(&state.url_env) {
        Some(Bad::key(
            "url_env",
            format!(
                "state.url_env: {} is not an environment variable name; put the URL in the environment, never in this file",
                redact(&state.url_env)
            ),
        ))
    } else if state.team.trim().is_empty() || state.team.chars().any(char::is_control) {
        Some(Bad::key(
            "team",
            "state.team: name the team in plain text (it names the leadership lease)".to_string(),
        ))
    } else {
        None
    };
    match bad {
        Some(bad) => Err(bad.at(text, &[Step::Key("state")])),
        None => Ok(()),
    }
}
