//! Dataset names from OpenLineage events, read per its naming spec
//! (https://openlineage.io/docs/spec/naming), and found among the warehouses dataward's
//! config names, so an event's dataset can be matched to a monitored table.
//!
//! The spec's forms dataward has warehouses for:
//! - PostgreSQL: namespace `postgres://{host}:{port}`, name `{database}.{schema}.{table}`;
//! - Snowflake: namespace `snowflake://{organization}-{account}`, name
//!   `{database}.{schema}.{table}`;
//! - DuckDB: namespace `duckdb://{file}` (dbt-ol writes the path as its profile has it,
//!   often relative to the project), name `{database}.{schema}.{table}`, the database
//!   being the file's stem;
//! - SQLite: the spec names no form; read like DuckDB (`sqlite://{file}`,
//!   `[{schema}.]{table}`);
//! - files: namespace `file` or `file://{host}`, name the path.
//!
//! Anything else is kept as `Other`, still a node for lineage, never matched to a table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::events::Dataset;
use crate::config::WarehouseConfig;

/// Where a dataset lives: its namespace, read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Source {
    Postgres { host: String, port: u16 },
    Snowflake { account: String },
    DuckDb { path: String },
    Sqlite { path: String },
    File { host: Option<String> },
    Other { scheme: String, authority: String },
}

/// PostgreSQL's port when the namespace leaves it out.
const POSTGRES_PORT: u16 = 5432;

impl Source {
    /// Read a dataset namespace. Never fails: a form we do not know is `Other`.
    pub fn parse(namespace: &str) -> Source {
        let (scheme, authority) = match namespace.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest.to_string()),
            None => (namespace.to_ascii_lowercase(), String::new()),
        };
        match scheme.as_str() {
            "postgres" | "postgresql" => {
                let (host, port) = split_port(&authority);
                Source::Postgres {
                    host,
                    port: port.unwrap_or(POSTGRES_PORT),
                }
            }
            "snowflake" => Source::Snowflake {
                account: snowflake_account(&authority),
            },
            "duckdb" => Source::DuckDb { path: authority },
            "sqlite" => Source::Sqlite { path: authority },
            "file" => Source::File {
                host: (!authority.is_empty()).then_some(authority),
            },
            _ => Source::Other { scheme, authority },
        }
    }
}

/// `host:port`, `[v6]:port`, or a host alone.
fn split_port(authority: &str) -> (String, Option<u16>) {
    let authority = authority.trim_end_matches('/');
    if let Some(rest) = authority.strip_prefix('[') {
        if let Some((host, tail)) = rest.split_once(']') {
            let port = tail.strip_prefix(':').and_then(|p| p.parse().ok());
            return (host.to_string(), port);
        }
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host.to_string(), Some(port)),
            Err(_) => (authority.to_string(), None),
        },
        _ => (authority.to_string(), None),
    }
}

/// Account identifiers compare in lower case, with or without the
/// `.snowflakecomputing.com` a host name carries.
fn snowflake_account(text: &str) -> String {
    let text = text.trim_end_matches('/').to_ascii_lowercase();
    text.strip_suffix(".snowflakecomputing.com")
        .unwrap_or(&text)
        .to_string()
}

/// Where a warehouse of the config is, as an event would name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Postgres {
        host: String,
        port: u16,
        database: String,
    },
    Snowflake {
        account: String,
        /// The config's `database`: tables in it are named `SCHEMA.TABLE` in the config.
        database: Option<String>,
    },
    DuckDb {
        path: PathBuf,
    },
    Sqlite {
        path: PathBuf,
        /// The config's `attach`: schema name to file.
        attached: BTreeMap<String, PathBuf>,
    },
}

impl Place {
    /// A `[warehouse.NAME]` section's place. PostgreSQL's is in its connection URL
    /// (the value of its `url_env`, which the caller reads: the domain reads no
    /// environment), as a URL or `key=value` string. `None` when the section does not say
    /// enough (no URL, a Unix-socket host, a kind we do not know).
    pub fn of(warehouse: &WarehouseConfig, postgres_url: Option<&str>) -> Option<Place> {
        match warehouse.kind.as_str() {
            "postgres" => {
                let config: postgres::Config = postgres_url?.parse().ok()?;
                let host = config.get_hosts().iter().find_map(|host| match host {
                    postgres::config::Host::Tcp(name) => Some(name.clone()),
                    #[cfg(unix)]
                    postgres::config::Host::Unix(_) => None,
                })?;
                Some(Place::Postgres {
                    host,
                    port: config.get_ports().first().copied().unwrap_or(POSTGRES_PORT),
                    database: config
                        .get_dbname()
                        .map(str::to_string)
                        .or_else(|| config.get_user().map(str::to_string))?,
                })
            }
            "snowflake" => Some(Place::Snowflake {
                account: snowflake_account(warehouse.account.as_deref()?),
                database: warehouse.database.clone(),
            }),
            "duckdb" => Some(Place::DuckDb {
                path: warehouse.path.clone()?,
            }),
            "sqlite" => Some(Place::Sqlite {
                path: warehouse.path.clone()?,
                attached: warehouse
                    .attach
                    .iter()
                    .map(|(schema, path)| (schema.to_ascii_lowercase(), path.clone()))
                    .collect(),
            }),
            _ => None,
        }
    }
}

/// The table `dataset` is in the warehouse at `place`, named as dataward's config names
/// a monitored table there (`schema.table`; Snowflake with a configured database:
/// `SCHEMA.TABLE`; SQLite: `table`, or `schema.table` for an attached file); `None` when
/// the dataset is elsewhere. Names keep the event's case; the config's are compared to
/// them without regard to case.
pub fn table_in(dataset: &Dataset, place: &Place) -> Option<String> {
    let parts: Vec<&str> = dataset.name.split('.').collect();
    match (Source::parse(&dataset.namespace), place) {
        (
            Source::Postgres { host, port },
            Place::Postgres {
                host: at,
                port: at_port,
                database,
            },
        ) => match parts.as_slice() {
            [db, schema, table]
                if port == *at_port
                    && same_host(&host, at)
                    && db.eq_ignore_ascii_case(database) =>
            {
                Some(format!("{schema}.{table}"))
            }
            _ => None,
        },
        (
            Source::Snowflake { account },
            Place::Snowflake {
                account: at,
                database,
            },
        ) => {
            if account != *at {
                return None;
            }
            match (parts.as_slice(), database) {
                ([db, schema, table], Some(database)) if db.eq_ignore_ascii_case(database) => {
                    Some(format!("{schema}.{table}"))
                }
                ([_, _, _], None) => Some(dataset.name.clone()),
                _ => None,
            }
        }
        (Source::DuckDb { path }, Place::DuckDb { path: at }) if same_file(&path, at) => {
            match parts.as_slice() {
                [_, schema, table] | [schema, table] => Some(format!("{schema}.{table}")),
                _ => None,
            }
        }
        (Source::Sqlite { path }, Place::Sqlite { path: at, attached }) => {
            let in_main = same_file(&path, at);
            match parts.as_slice() {
                [table] if in_main => Some(table.to_string()),
                [schema, table] if in_main && schema.eq_ignore_ascii_case("main") => {
                    Some(table.to_string())
                }
                [schema, table] => attached
                    .get(&schema.to_ascii_lowercase())
                    .filter(|file| same_file(&path, file))
                    .map(|_| format!("{schema}.{table}")),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Loopback has several names; a producer on the same machine may use any of them.
fn same_host(a: &str, b: &str) -> bool {
    let loopback = |h: &str| matches!(h, "localhost" | "127.0.0.1" | "::1");
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    a == b || (loopback(&a) && loopback(&b))
}

/// The event's path names the configured file: the same path, or, when the producer
/// wrote it relative to a folder we do not know (dbt-ol writes the profile's `path`
/// as given), the configured path ends with it.
fn same_file(event_path: &str, configured: &Path) -> bool {
    let event = Path::new(event_path);
    let event = event.strip_prefix(".").unwrap_or(event);
    event == configured || (event.is_relative() && configured.ends_with(event))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(namespace: &str, name: &str) -> Dataset {
        Dataset {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    fn warehouse(toml_text: &str) -> WarehouseConfig {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn namespaces_read_per_the_naming_spec() {
        assert_eq!(
            Source::parse("postgres://db.internal:6543"),
            Source::Postgres {
                host: "db.internal".into(),
                port: 6543
            }
        );
        assert_eq!(
            Source::parse("postgres://[::1]"),
            Source::Postgres {
                host: "::1".into(),
                port: 5432
            }
        );
        assert_eq!(
            Source::parse("snowflake://MyOrg-MyAccount.snowflakecomputing.com"),
            Source::Snowflake {
                account: "myorg-myaccount".into()
            }
        );
        assert_eq!(
            Source::parse("duckdb://shop.duckdb"),
            Source::DuckDb {
                path: "shop.duckdb".into()
            }
        );
        assert_eq!(Source::parse("file"), Source::File { host: None });
        assert_eq!(
            Source::parse("kafka://broker:9092"),
            Source::Other {
                scheme: "kafka".into(),
                authority: "broker:9092".into()
            }
        );
    }

    #[test]
    fn a_postgres_dataset_is_found_in_the_warehouse_its_url_names() {
        let wh = warehouse("kind = \"postgres\"\nurl_env = \"PG_URL\"");
        let place = Place::of(&wh, Some("postgres://dw:secret@127.0.0.1:55432/analytics")).unwrap();
        let ours = dataset("postgres://localhost:55432", "analytics.public.payments");
        assert_eq!(table_in(&ours, &place).as_deref(), Some("public.payments"));
        for elsewhere in [
            dataset("postgres://localhost:5432", "analytics.public.payments"),
            dataset("postgres://other:55432", "analytics.public.payments"),
            dataset("postgres://localhost:55432", "billing.public.payments"),
            dataset("postgres://localhost:55432", "public.payments"),
        ] {
            assert_eq!(table_in(&elsewhere, &place), None, "{elsewhere:?}");
        }
        let dsn = Place::of(&wh, Some("host=db.internal port=5433 dbname=analytics")).unwrap();
        assert_eq!(
            table_in(
                &dataset("postgres://db.internal:5433", "analytics.s.t"),
                &dsn
            )
            .as_deref(),
            Some("s.t")
        );
        assert_eq!(Place::of(&wh, None), None, "no URL, no place");
    }

    #[test]
    fn a_snowflake_dataset_is_named_as_the_config_names_tables() {
        let wh = warehouse(
            "kind = \"snowflake\"\naccount = \"myorg-acct\"\ndatabase = \"ANALYTICS\"\nuser = \"u\"\npassword_env = \"P\"",
        );
        let place = Place::of(&wh, None).unwrap();
        let ds = dataset("snowflake://MYORG-ACCT", "ANALYTICS.BILLING.PAYMENTS");
        assert_eq!(table_in(&ds, &place).as_deref(), Some("BILLING.PAYMENTS"));
        let other_db = dataset("snowflake://myorg-acct", "RAW.BILLING.PAYMENTS");
        assert_eq!(table_in(&other_db, &place), None);
    }

    #[test]
    fn sqlite_tables_are_found_in_the_main_file_or_an_attached_one() {
        let wh = warehouse(
            "kind = \"sqlite\"\npath = \"/data/app.db\"\n[attach]\nBILLING = \"/data/billing.db\"",
        );
        let place = Place::of(&wh, None).unwrap();
        let main = dataset("sqlite:///data/app.db", "main.orders");
        assert_eq!(table_in(&main, &place).as_deref(), Some("orders"));
        let attached = dataset("sqlite:///data/billing.db", "BILLING.invoices");
        assert_eq!(
            table_in(&attached, &place).as_deref(),
            Some("BILLING.invoices")
        );
        let stranger = dataset("sqlite:///elsewhere.db", "orders");
        assert_eq!(table_in(&stranger, &place), None);
    }

    #[test]
    fn a_relative_duckdb_path_matches_the_configured_file_it_ends() {
        let place = Place::DuckDb {
            path: "/srv/dbt/shop/shop.duckdb".into(),
        };
        for namespace in [
            "duckdb://shop.duckdb",
            "duckdb://./shop.duckdb",
            "duckdb:///srv/dbt/shop/shop.duckdb",
        ] {
            let ds = dataset(namespace, "shop.main.fct_orders");
            assert_eq!(
                table_in(&ds, &place).as_deref(),
                Some("main.fct_orders"),
                "{namespace}"
            );
        }
        let other = dataset("duckdb://other.duckdb", "other.main.fct_orders");
        assert_eq!(table_in(&other, &place), None);
    }
}
