//! Reaching the team's state database: the URL the config's `[state] url_env` names,
//! a server new enough, and errors that name where the URL came from but never the
//! URL itself (it carries the password).

use std::time::Duration;

use anyhow::{anyhow, Result};
use postgres::{Client, NoTls};

use crate::config::redact_secrets;

/// The oldest server the team state runs on: what the schema and the leadership need
/// (advisory locks, `EXECUTE FUNCTION` triggers, `make_interval`) is all there in 13.
const OLDEST_SERVER: u32 = 130_000;

/// Where a URL came from, for messages: "config.toml: [state] url_env (DW_STATE_URL)".
#[derive(Debug, Clone)]
pub struct Source {
    pub url: String,
    pub named_by: String,
}

/// Connects and refuses a server older than 13. `application_name` tells the sessions
/// of dataward apart in `pg_stat_activity` (which engine, what for).
pub fn connect(source: &Source, application_name: &str) -> Result<Client> {
    let mut config: postgres::Config = source.url.parse().map_err(|e: postgres::Error| {
        anyhow!(
            "{}: not a PostgreSQL URL: {}",
            source.named_by,
            redact_secrets(&e.to_string())
        )
    })?;
    config.application_name(application_name);
    config.connect_timeout(Duration::from_secs(5));
    // This side notices a server that vanished within seconds instead of hanging.
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(5));
    let mut client = config.connect(NoTls).map_err(|e| {
        anyhow!(
            "{}: cannot reach the state database: {}",
            source.named_by,
            describe(&e)
        )
    })?;
    let version: String = client
        .query_one("SHOW server_version_num", &[])
        .map_err(|e| anyhow!("{}: {}", source.named_by, describe(&e)))?
        .get(0);
    if let Some(refused) = too_old(&version) {
        return Err(anyhow!("{}: {refused}", source.named_by));
    }
    // And the server notices a host that vanished (a network cut) within seconds too,
    // so its sessions, and the leadership lock one of them may hold, do not linger for
    // the kernel's two hours. (Ignored on a Unix socket, where nothing can be cut.)
    client
        .batch_execute(
            "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; \
             SET tcp_keepalives_count = 2",
        )
        .map_err(|e| anyhow!("{}: {}", source.named_by, describe(&e)))?;
    Ok(client)
}

/// Why a server answering `server_version_num` cannot keep team state, if it cannot.
pub fn too_old(server_version_num: &str) -> Option<String> {
    let number: u32 = server_version_num.trim().parse().ok()?;
    (number < OLDEST_SERVER).then(|| {
        format!(
            "the state database is PostgreSQL {} (server_version_num {number}); team state \
             needs PostgreSQL 13 or later: upgrade the server, or leave [state] out to keep \
             the state in SQLite on this host",
            crate::warehouse::postgres::server::major(number)
        )
    })
}

/// A PostgreSQL error as one line: the server's own message when it sent one, the
/// cause (refused, timed out) otherwise; anything like a password redacted.
pub fn describe(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    };
    redact_secrets(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_before_13_are_refused_naming_their_version() {
        let refused = too_old("120010").unwrap();
        assert!(refused.contains("PostgreSQL 12 "), "{refused}");
        assert!(refused.contains("13 or later"), "{refused}");
        assert!(too_old("90624").unwrap().contains("PostgreSQL 9.6 "));
        assert_eq!(too_old("130000"), None);
        assert_eq!(too_old("150010"), None);
    }

    #[test]
    fn a_bad_url_is_named_by_where_it_came_from_without_its_password() {
        let source = Source {
            url: "postgres://team:s3cret@host:notaport/db".to_string(),
            named_by: "dw.toml: [state] url_env (DW_STATE)".to_string(),
        };
        let err = format!("{:#}", connect(&source, "test").err().unwrap());
        assert!(
            err.starts_with("dw.toml: [state] url_env (DW_STATE): "),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "{err}");
    }
}
