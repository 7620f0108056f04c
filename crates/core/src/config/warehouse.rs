//! A `[warehouse.NAME]` section: where the data is and how to reach it, each kind
//! taking only its own keys, a secret never written in the file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::{
    duration_key, is_env_var_name, redact, Bad, Config, MAX_CHECK_TIMEOUT, MAX_CONCURRENT,
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarehouseConfig {
    /// "sqlite", "postgres", "duckdb" or "snowflake".
    pub kind: String,
    /// SQLite and DuckDB: the database file (DuckDB: or `:memory:`).
    pub path: Option<PathBuf>,
    /// DuckDB: its ADBC driver, by manifest name (looked up in ADBC_DRIVER_PATH,
    /// ~/.config/adbc/drivers, /etc/adbc/drivers) or by the path of the library or
    /// manifest. Default: the manifest name `duckdb`.
    pub driver: Option<String>,
    /// PostgreSQL: the name of the environment variable holding the connection URL. The
    /// URL (and its password) never sits in a shared file.
    pub url_env: Option<String>,
    /// PostgreSQL: how many checks may run against this warehouse at once.
    pub max_concurrent: Option<usize>,
    /// How long one check may take before it is abandoned ("30s"), and one query before
    /// the warehouse stops it (PostgreSQL's statement_timeout, the ADBC driver's cancel,
    /// SQLite's interrupt).
    pub check_timeout: Option<String>,
    /// At most this many statements sent to this warehouse per poll (session setup
    /// included): past it the poll stops sending, and the checks not run are reported
    /// as skipped by the guard. The next poll starts afresh.
    pub max_queries_per_poll: Option<u64>,
    /// Extra SQLite files attached under a schema name, e.g. BILLING = "billing.db".
    #[serde(default)]
    pub attach: BTreeMap<String, PathBuf>,
    // Snowflake: where and as whom. The secret is never here: a password or an OAuth
    // token is read from the environment variable named, a private key from a file
    // only its owner can read.
    /// The account identifier, e.g. `myorg-myaccount`.
    pub account: Option<String>,
    /// Where the account answers, when not `<account>.snowflakecomputing.com` (a proxy,
    /// a private link, a local test server), with its port and protocol.
    pub host: Option<String>,
    pub port: Option<u16>,
    pub protocol: Option<String>,
    /// The database every monitored table is in, and the schema of a table named
    /// without one.
    pub database: Option<String>,
    pub schema: Option<String>,
    /// The virtual warehouse the checks run on, and the role they run as.
    pub warehouse: Option<String>,
    pub role: Option<String>,
    pub user: Option<String>,
    /// Password login: the environment variable holding the password.
    pub password_env: Option<String>,
    /// Key-pair login: the private key file (PEM, PKCS#8), readable by its owner only.
    pub private_key_file: Option<PathBuf>,
    /// Key-pair login: the environment variable holding the private key itself (PEM).
    pub private_key_env: Option<String>,
    /// Key-pair login with an encrypted key: the environment variable holding its
    /// passphrase.
    pub private_key_passphrase_env: Option<String>,
    /// OAuth login: the environment variable holding the token.
    pub token_env: Option<String>,
    /// Never accepted: present only so a secret written into the config is refused by
    /// name (see `validate_snowflake`).
    pub password: Option<toml::Value>,
    pub token: Option<toml::Value>,
    pub private_key: Option<toml::Value>,
    pub private_key_passphrase: Option<toml::Value>,
}

impl WarehouseConfig {
    /// The keys given, by name: a warehouse of another kind refuses them.
    fn snowflake_keys(&self) -> Vec<&'static str> {
        [
            ("account", self.account.is_some()),
            ("host", self.host.is_some()),
            ("port", self.port.is_some()),
            ("protocol", self.protocol.is_some()),
            ("database", self.database.is_some()),
            ("schema", self.schema.is_some()),
            ("warehouse", self.warehouse.is_some()),
            ("role", self.role.is_some()),
            ("user", self.user.is_some()),
            ("password_env", self.password_env.is_some()),
            ("private_key_file", self.private_key_file.is_some()),
            ("private_key_env", self.private_key_env.is_some()),
            (
                "private_key_passphrase_env",
                self.private_key_passphrase_env.is_some(),
            ),
            ("token_env", self.token_env.is_some()),
            ("password", self.password.is_some()),
            ("token", self.token.is_some()),
            ("private_key", self.private_key.is_some()),
            (
                "private_key_passphrase",
                self.private_key_passphrase.is_some(),
            ),
        ]
        .into_iter()
        .filter_map(|(key, given)| given.then_some(key))
        .collect()
    }
}

impl Config {
    pub(super) fn validate_warehouse(&self, name: &str, wh: &WarehouseConfig) -> Result<(), Bad> {
        let at = format!("warehouse.{name}");
        if wh.driver.is_some() && wh.kind != "duckdb" && wh.kind != "snowflake" {
            return Err(Bad::key(
                "driver",
                format!(
                    "{at}.driver: an ADBC driver is for a duckdb warehouse or a snowflake warehouse, not {:?}",
                    wh.kind
                ),
            ));
        }
        if wh.kind != "snowflake" {
            if let Some(key) = wh.snowflake_keys().first().copied() {
                return Err(Bad::key(
                    key,
                    format!(
                        "{at}.{key}: a snowflake key, not one of a {:?} warehouse",
                        wh.kind
                    ),
                ));
            }
        }
        match wh.kind.as_str() {
            "sqlite" => {
                if wh.path.is_none() {
                    return Err(Bad::section(format!(
                        "{at}: a sqlite warehouse needs `path`"
                    )));
                }
            }
            "duckdb" => {
                if wh.path.is_none() {
                    return Err(Bad::section(format!(
                        "{at}: a duckdb warehouse needs `path`: its database file, or \":memory:\""
                    )));
                }
                for (key, given) in [
                    ("url_env", wh.url_env.is_some()),
                    ("attach", !wh.attach.is_empty()),
                ] {
                    if given {
                        return Err(Bad::key(key, format!("{at}.{key}: not a duckdb key; a duckdb warehouse takes `path` and `driver`")));
                    }
                }
                if wh.driver.as_deref().is_some_and(|d| d.trim().is_empty()) {
                    return Err(Bad::key("driver", format!("{at}.driver: empty; name an ADBC driver manifest (\"duckdb\") or the path of DuckDB's library")));
                }
            }
            "snowflake" => validate_snowflake(&at, wh)?,
            "postgres" => {
                if wh.path.is_some() || !wh.attach.is_empty() {
                    let key = if wh.path.is_some() { "path" } else { "attach" };
                    return Err(Bad::key(key, format!("{at}: `path` and `attach` are for sqlite; a postgres warehouse takes `url_env`")));
                }
                let Some(var) = &wh.url_env else {
                    return Err(Bad::section(format!("{at}: a postgres warehouse needs `url_env`, the name of an environment variable holding its URL")));
                };
                if !is_env_var_name(var) {
                    return Err(Bad::key("url_env", format!("{at}.url_env: {} is not an environment variable name; put the URL in the environment, never in this file", redact(var))));
                }
            }
            other => {
                return Err(Bad::key(
                    "kind",
                    format!(
                        "{at}.kind: unknown kind {other:?} (expected \"sqlite\", \"postgres\", \"duckdb\" or \"snowflake\")"
                    ),
                ))
            }
        }
        if let Some(n) = wh.max_concurrent {
            if !(1..=MAX_CONCURRENT).contains(&n) {
                return Err(Bad::key(
                    "max_concurrent",
                    format!("{at}.max_concurrent: {n} is not between 1 and {MAX_CONCURRENT}"),
                ));
            }
        }
        if wh.max_queries_per_poll == Some(0) {
            return Err(Bad::key(
                "max_queries_per_poll",
                format!(
                    "{at}.max_queries_per_poll: 0 would send nothing; set at least 1, or \
                     remove it for no limit"
                ),
            ));
        }
        if let Some(t) = &wh.check_timeout {
            duration_key(
                "check_timeout",
                &format!("{at}.check_timeout"),
                t,
                MAX_CHECK_TIMEOUT,
            )?;
        }
        Ok(())
    }
}

/// A snowflake warehouse: where, as whom, and exactly one way to log in, its secret
/// outside the config.
fn validate_snowflake(at: &str, wh: &WarehouseConfig) -> Result<(), Bad> {
    let sf = wh;
    for (key, given) in [
        ("password", sf.password.is_some()),
        ("token", sf.token.is_some()),
        ("private_key", sf.private_key.is_some()),
        (
            "private_key_passphrase",
            sf.private_key_passphrase.is_some(),
        ),
    ] {
        if given {
            return Err(Bad::key(
                key,
                format!(
                    "{at}.{key}: a secret is never written in the config; name the \
                     environment variable holding it (`password_env`, `token_env`, \
                     `private_key_env`, `private_key_passphrase_env`) or the key file \
                     (`private_key_file`, mode 0600) instead, and remove this line"
                ),
            ));
        }
    }
    for (key, given) in [
        ("path", wh.path.is_some()),
        ("url_env", wh.url_env.is_some()),
        ("attach", !wh.attach.is_empty()),
    ] {
        if given {
            return Err(Bad::key(key, format!("{at}.{key}: not a snowflake key; a snowflake warehouse takes `account`, `database`, `user` and one of `password_env`, `private_key_file`, `private_key_env`, `token_env`")));
        }
    }
    for (key, value) in [
        ("account", &sf.account),
        ("database", &sf.database),
        ("user", &sf.user),
    ] {
        match value {
            None => {
                return Err(Bad::section(format!(
                    "{at}: a snowflake warehouse needs `{key}`"
                )))
            }
            Some(v) if v.trim().is_empty() => {
                return Err(Bad::key(key, format!("{at}.{key}: empty")))
            }
            Some(_) => {}
        }
    }
    let logins: Vec<&str> = [
        ("password_env", sf.password_env.is_some()),
        ("private_key_file", sf.private_key_file.is_some()),
        ("private_key_env", sf.private_key_env.is_some()),
        ("token_env", sf.token_env.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, given)| given.then_some(key))
    .collect();
    match logins.as_slice() {
        [] => return Err(Bad::section(format!("{at}: a snowflake warehouse needs one way to log in: `password_env` or `token_env` (an environment variable's name), or a private key: `private_key_file` or `private_key_env`"))),
        [_] => {}
        [_, second, ..] => return Err(Bad::key(second, format!("{at}: one way to log in, not {}", logins.join(" and ")))),
    }
    if sf.private_key_passphrase_env.is_some()
        && sf.private_key_file.is_none()
        && sf.private_key_env.is_none()
    {
        return Err(Bad::key("private_key_passphrase_env", format!("{at}.private_key_passphrase_env: a passphrase with no private key; set `private_key_file` or `private_key_env`")));
    }
    for (key, var) in [
        ("password_env", &sf.password_env),
        ("token_env", &sf.token_env),
        ("private_key_env", &sf.private_key_env),
        ("private_key_passphrase_env", &sf.private_key_passphrase_env),
    ] {
        if let Some(var) = var {
            if !is_env_var_name(var) {
                return Err(Bad::key(key, format!("{at}.{key}: {} is not an environment variable name; put the secret in the environment, never in this file", redact(var))));
            }
        }
    }
    if let Some(protocol) = &sf.protocol {
        if protocol != "https" && protocol != "http" {
            return Err(Bad::key(
                "protocol",
                format!("{at}.protocol: {protocol:?} (expected \"https\" or \"http\")"),
            ));
        }
    }
    if wh.driver.as_deref().is_some_and(|d| d.trim().is_empty()) {
        return Err(Bad::key("driver", format!("{at}.driver: empty; name an ADBC driver manifest (\"snowflake\") or the path of the driver's library")));
    }
    Ok(())
}
