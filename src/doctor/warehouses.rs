//! Each warehouse, reached with the credentials the config names: the environment
//! variable holding a PostgreSQL URL is set, the server answers, and the login works
//! (the server's error code and message when it does not).

use std::collections::BTreeMap;
use std::str::FromStr;

use super::Line;
use crate::config::Config;
use crate::warehouse::{self, Warehouse, WarehouseError};

/// The warehouses that answered, by name, for the monitor lines; a line for each
/// warehouse goes to `lines`.
pub fn check(config: &Config, lines: &mut Vec<Line>) -> BTreeMap<String, Reached> {
    let mut reached = BTreeMap::new();
    for (name, wh) in &config.warehouse {
        let what = format!("warehouse {name}");
        let who = match wh.kind.as_str() {
            "postgres" => {
                let var = wh.url_env.as_deref().unwrap_or_default();
                match std::env::var(var) {
                    Ok(url) => who(&url, var),
                    Err(_) => {
                        lines.push(Line::bad(
                            what,
                            format!("{var} is not set: the warehouse's URL is read from it"),
                            format!(
                                "export {var}=\"postgresql://USER:PASSWORD@HOST:5432/DBNAME\" \
                                 (dataward init printed the line for your profile)"
                            ),
                        ));
                        continue;
                    }
                }
            }
            "duckdb" => match duckdb_driver(config, name, wh, &what, lines) {
                Some(who) => who,
                None => continue,
            },
            "snowflake" => match snowflake_driver(config, name, wh, lines) {
                Some(who) => who,
                None => continue,
            },
            _ => {
                let path = config.resolve(wh.path.as_deref().unwrap_or(std::path::Path::new("")));
                if !path.exists() {
                    lines.push(Line::bad(
                        what,
                        format!("{} does not exist", path.display()),
                        "correct `path` (relative paths are read from the config's folder)",
                    ));
                    continue;
                }
                Who {
                    shown: format!("sqlite {}", path.display()),
                    user: None,
                }
            }
        };
        let opened = match warehouse::open(config, name) {
            Ok(opened) => opened,
            Err(e) => {
                lines.push(Line::bad(
                    what,
                    format!("{e:#}"),
                    "correct the URL in the variable",
                ));
                continue;
            }
        };
        // One catalog query: it needs a connection, a login and a working session.
        match opened.columns_of(None, &["dataward_doctor_probe".to_string()]) {
            Ok(_) => {
                let verb = if !matches!(wh.kind.as_str(), "postgres" | "snowflake") {
                    "opens"
                } else {
                    "reachable"
                };
                lines.push(Line::ok(what, format!("{verb} as {}", who.shown)));
                reached.insert(
                    name.clone(),
                    Reached {
                        warehouse: opened,
                        user: who.user,
                        kind: wh.kind.clone(),
                    },
                );
            }
            Err(e) => lines.push(Line::bad(
                what,
                format!("not reachable as {}: {}", who.shown, message(&e)),
                fix_for(&e),
            )),
        }
    }
    reached
}

/// An ADBC driver, found and loaded, on a line of its own: where it was found (the
/// library, the manifest that named it) and its version, or every folder looked in and
/// what to install. False when it was not found.
fn driver_line(
    name: &str,
    found: Result<crate::warehouse::adbc::Found, WarehouseError>,
    version: Option<String>,
    install: &str,
    lines: &mut Vec<Line>,
) -> bool {
    let what = format!("driver {name}");
    match found {
        Ok(found) => {
            let version = version
                .or_else(|| found.version.clone())
                .unwrap_or_else(|| "version unknown".to_string());
            let manifest = match &found.manifest {
                Some(manifest) => format!(", named by {}", manifest.display()),
                None => String::new(),
            };
            lines.push(Line::ok(
                what,
                format!("{version}: {}{manifest}", found.library.display()),
            ));
            true
        }
        Err(e) => {
            lines.push(Line::bad(what, message(&e), install));
            false
        }
    }
}

/// DuckDB's driver (its own library), then the database file: who the warehouse line
/// shows.
fn duckdb_driver(
    config: &Config,
    name: &str,
    wh: &crate::config::WarehouseConfig,
    what: &str,
    lines: &mut Vec<Line>,
) -> Option<Who> {
    use crate::warehouse::duckdb;
    let path = duckdb::database_path(
        config,
        wh.path.as_deref().unwrap_or(std::path::Path::new("")),
    );
    let opened =
        duckdb::DuckdbWarehouse::new(&path, duckdb::driver_wanted(config, wh.driver.as_deref()));
    let found = opened.driver_found();
    let version = opened.library_version().ok().map(|v| format!("DuckDB {v}"));
    let install = "dbc install duckdb (the ADBC driver manifest), or set `driver` in the \
                   warehouse's section to the path of DuckDB's libduckdb.so";
    if !driver_line(name, found, version, install, lines) {
        return None;
    }
    if path != duckdb::MEMORY && !std::path::Path::new(&path).is_file() {
        lines.push(Line::bad(
            what,
            format!("{path} does not exist"),
            "correct `path` (relative paths are read from the config's folder)",
        ));
        return None;
    }
    Some(Who {
        shown: format!("duckdb {path}"),
        user: None,
    })
}

/// The ADBC Snowflake driver, then the account, database and user the warehouse line
/// shows (the login itself is tried by the catalog query after).
fn snowflake_driver(
    config: &Config,
    name: &str,
    wh: &crate::config::WarehouseConfig,
    lines: &mut Vec<Line>,
) -> Option<Who> {
    let opened = crate::warehouse::snowflake::from_config(config, name, wh);
    let install = "dbc install snowflake (the ADBC driver manifest), or set `driver` in the \
                   warehouse's section to the path of libadbc_driver_snowflake.so (PyPI's \
                   adbc-driver-snowflake wheel holds it)";
    if !driver_line(name, opened.driver_found(), None, install, lines) {
        return None;
    }
    let user = wh.user.clone().unwrap_or_default();
    Some(Who {
        shown: format!(
            "snowflake {}/{} as {user}",
            wh.account.as_deref().unwrap_or_default(),
            wh.database.as_deref().unwrap_or_default()
        ),
        user: Some(user),
    })
}

/// A warehouse that answered.
pub struct Reached {
    pub warehouse: Box<dyn Warehouse + Sync>,
    /// The login, for a GRANT to suggest.
    pub user: Option<String>,
    pub kind: String,
}

struct Who {
    shown: String,
    user: Option<String>,
}

/// Who the URL logs in as, and where, without its password.
fn who(url: &str, var: &str) -> Who {
    match postgres::Config::from_str(url) {
        Ok(parsed) => {
            let host = parsed
                .get_hosts()
                .first()
                .map(|h| match h {
                    postgres::config::Host::Tcp(name) => name.clone(),
                    postgres::config::Host::Unix(path) => path.display().to_string(),
                })
                .unwrap_or_else(|| "localhost".to_string());
            let port = parsed.get_ports().first().copied().unwrap_or(5432);
            let user = parsed.get_user().map(str::to_string);
            Who {
                shown: format!(
                    "{}@{host}:{port}/{} (${var})",
                    user.as_deref().unwrap_or("?"),
                    parsed.get_dbname().unwrap_or("?"),
                ),
                user,
            }
        }
        Err(_) => Who {
            shown: format!("${var}"),
            user: None,
        },
    }
}

/// The server's message (code and text), without the error kind's prefix.
pub fn message(e: &WarehouseError) -> String {
    match e {
        WarehouseError::Unreachable(m)
        | WarehouseError::Query(m)
        | WarehouseError::Refused(m)
        | WarehouseError::Skipped(m) => m.clone(),
    }
}

fn fix_for(e: &WarehouseError) -> String {
    let text = message(e);
    let code = text.split(':').next().unwrap_or("");
    match code {
        "28P01" | "28000" => {
            "the login was refused: check the user and password in the URL (and pg_hba.conf)".into()
        }
        "3D000" => "the database does not exist: correct the database name in the URL".into(),
        _ if text.contains("is not set") => "export the variable the config's url_env names".into(),
        _ => {
            "check the host, port and network (is the server up, and does it listen there?)".into()
        }
    }
}
