//! The `[openlineage]` section: where `dataward serve` takes OpenLineage run events in.
//!
//! ```toml
//! [openlineage]
//! listen = "127.0.0.1:5050"          # HTTP: POST /api/v1/lineage (loopback only)
//! socket = "openlineage.sock"        # and/or the same over a Unix socket
//! token_env = "DATAWARD_OL_TOKEN"    # the bearer token every request must carry
//! file = "openlineage.jsonl"         # a file transport's JSONL, tailed
//! queue = 64                         # requests waiting for the engine before 503s
//! ```
//!
//! The listener answers anything that can reach it, so it listens on loopback (or a
//! socket the file system guards) and every request carries the token: a missing or
//! empty token would let any local process write lineage, so the config is refused.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::{Bad, Config, Step};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenLineageConfig {
    /// `127.0.0.1:PORT` (or `[::1]:PORT`): HTTP on loopback.
    pub listen: Option<String>,
    /// A Unix socket path for the same HTTP (relative to the config's folder).
    pub socket: Option<PathBuf>,
    /// The environment variable holding the bearer token. Required with a listener.
    pub token_env: Option<String>,
    /// A file transport's JSONL file to tail (relative to the config's folder).
    pub file: Option<PathBuf>,
    /// Requests accepted and waiting for the engine to store them; one more is answered
    /// 503 with Retry-After, so a flood costs bounded memory and loses nothing.
    #[serde(default = "default_queue")]
    pub queue: usize,
}

fn default_queue() -> usize {
    64
}

/// The most requests that may wait: each holds up to a request body in memory.
const MAX_QUEUE: usize = 4096;

impl OpenLineageConfig {
    /// The loopback address to listen on, read.
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        self.listen.as_deref().and_then(|text| text.parse().ok())
    }

    /// The bearer token, read from `token_env` now (validation made sure it is set).
    pub fn token(&self) -> Option<String> {
        let name = self.token_env.as_deref()?;
        std::env::var(name).ok().filter(|t| !t.trim().is_empty())
    }
}

pub(super) fn validate(config: &Config, text: &str) -> anyhow::Result<()> {
    let Some(ol) = &config.openlineage else {
        return Ok(());
    };
    validate_one(ol).map_err(|bad| bad.at(text, &[Step::Key("openlineage")]))
}

fn validate_one(ol: &OpenLineageConfig) -> Result<(), Bad> {
    if ol.listen.is_none() && ol.socket.is_none() && ol.file.is_none() {
        return Err(Bad::section(
            "openlineage: names no way in: set listen, socket or file".to_string(),
        ));
    }
    if let Some(listen) = &ol.listen {
        let addr: SocketAddr = listen.parse().map_err(|_| {
            Bad::key(
                "listen",
                format!("openlineage.listen: {listen:?} is not an address like 127.0.0.1:5050"),
            )
        })?;
        if !addr.ip().is_loopback() {
            return Err(Bad::key(
                "listen",
                format!(
                    "openlineage.listen: {listen:?} is not a loopback address; the listener \
                     takes lineage from whoever reaches it, so it listens on 127.0.0.1 or ::1 \
                     (or a Unix socket)"
                ),
            ));
        }
    }
    if ol.listen.is_some() || ol.socket.is_some() {
        let Some(name) = &ol.token_env else {
            return Err(Bad::section(
                "openlineage: a listener needs token_env, the environment variable holding \
                 the bearer token senders present"
                    .to_string(),
            ));
        };
        if !super::is_env_var_name(name) {
            return Err(Bad::key(
                "token_env",
                format!("openlineage.token_env: {name:?} is not an environment variable name"),
            ));
        }
        if ol.token().is_none() {
            return Err(Bad::key(
                "token_env",
                format!(
                    "openlineage.token_env: the environment variable {name} is not set or \
                     empty; set it to the token senders present (OPENLINEAGE_API_KEY for dbt-ol)"
                ),
            ));
        }
    } else if ol.token_env.is_some() {
        return Err(Bad::key(
            "token_env",
            "openlineage.token_env: set without listen or socket; a file needs no token"
                .to_string(),
        ));
    }
    if ol.queue == 0 || ol.queue > MAX_QUEUE {
        return Err(Bad::key(
            "queue",
            format!(
                "openlineage.queue: {} is not between 1 and {MAX_QUEUE}",
                ol.queue
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::Config;

    fn parse(section: &str) -> Result<Config, String> {
        Config::parse(section, Path::new("team.toml")).map_err(|e| format!("{e:#}"))
    }

    /// The listener refuses to be reachable off the host or without a token, and says
    /// which file, line and key.
    #[test]
    fn a_listener_is_loopback_with_a_token() {
        std::env::set_var("DW_TEST_OL_TOKEN", "s3cret");
        std::env::set_var("DW_TEST_OL_EMPTY", "");
        let ok =
            parse("[openlineage]\nlisten = \"127.0.0.1:5050\"\ntoken_env = \"DW_TEST_OL_TOKEN\"\n")
                .unwrap();
        let ol = ok.openlineage.unwrap();
        assert_eq!(ol.token().as_deref(), Some("s3cret"));
        assert_eq!(ol.queue, 64);

        let wide =
            parse("[openlineage]\nlisten = \"0.0.0.0:5050\"\ntoken_env = \"DW_TEST_OL_TOKEN\"\n")
                .unwrap_err();
        assert!(
            wide.starts_with("team.toml: line 2: openlineage.listen"),
            "{wide}"
        );
        assert!(wide.contains("not a loopback address"), "{wide}");

        let no_token = parse("[openlineage]\nlisten = \"127.0.0.1:5050\"\n").unwrap_err();
        assert!(
            no_token.contains("team.toml: line 1: openlineage: a listener needs token_env"),
            "{no_token}"
        );

        let empty =
            parse("[openlineage]\nsocket = \"ol.sock\"\ntoken_env = \"DW_TEST_OL_EMPTY\"\n")
                .unwrap_err();
        assert!(
            empty.starts_with("team.toml: line 3: openlineage.token_env"),
            "{empty}"
        );
        assert!(
            empty.contains("DW_TEST_OL_EMPTY is not set or empty"),
            "{empty}"
        );

        let nothing = parse("[openlineage]\nqueue = 3\n").unwrap_err();
        assert!(nothing.contains("names no way in"), "{nothing}");
        assert!(parse("[openlineage]\nfile = \"events.jsonl\"\n").is_ok());
    }
}
