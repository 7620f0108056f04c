//! Snowflake as a warehouse, through the ADBC Snowflake driver (the Go driver's shared
//! library, `AdbcDriverInit`), loaded at run time (see [`super::adbc`]).
//!
//! Names in the config are read as Snowflake reads SQL: a plain name (letters, digits,
//! `_`, `$`) is folded to upper case, as Snowflake stores an unquoted identifier; any
//! other is taken exactly as written. Every name reaches SQL quoted.
//!
//! Times are read as Unix seconds (`DATE_PART(EPOCH_SECOND, ...)`), so days and
//! minutes are UTC whatever the session's zone; a `TIMESTAMP_NTZ` is taken as UTC.
//!
//! Snowflake has no read-only transaction: reads that must not write (a dry run, the
//! uncastable count) run in a transaction always rolled back, one statement per query
//! (the driver refuses several), and a read-only role is the real guard.
use std::path::PathBuf;

use chrono::NaiveTime;

use super::adbc::warehouse::{AdbcWarehouse, Dialect};
use super::adbc::{DriverKind, Session, Value};
use super::{CastTarget, Column, Planned, Relation, TableScan, WarehouseError};

pub mod grant;
mod sql;
use sql::*;
pub use sql::{
    daily_counts_sql, fold, load_times_sql, null_counts_sql, quote, row_count_sql, scan_sql,
};

/// How the Snowflake driver is found when the config names none.
pub const DRIVER: DriverKind = DriverKind {
    name: "snowflake",
    entrypoint: None,
    install: "Install the ADBC Snowflake driver with `dbc install snowflake`, or set \
              `driver` in the warehouse's section to the path of \
              libadbc_driver_snowflake.so (in PyPI's adbc-driver-snowflake wheel)",
};

/// How to log in; the secret itself is read only when the warehouse is first used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// The environment variable holding the password.
    Password { env: String },
    /// A private key (PEM), encrypted when a passphrase is named.
    KeyPair {
        key: PrivateKey,
        /// The environment variable holding the passphrase of an encrypted key.
        passphrase_env: Option<String>,
    },
    /// The environment variable holding an OAuth token.
    OAuth { env: String },
}

/// Where a key pair's private key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrivateKey {
    /// A file, which must be readable by its owner only.
    File(PathBuf),
    /// The environment variable holding the key itself.
    Env(String),
}

/// Where and as whom, as the config gives it.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The warehouse's name in the config, for what a failed login says.
    pub name: String,
    pub account: String,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub protocol: Option<String>,
    pub database: String,
    pub schema: Option<String>,
    pub warehouse: Option<String>,
    pub role: Option<String>,
    pub user: String,
    pub login: Option<Login>,
}

/// Snowflake's dialect, with where and as whom it logs in.
pub struct Snowflake {
    settings: Settings,
}

pub type SnowflakeWarehouse = AdbcWarehouse<Snowflake>;

impl AdbcWarehouse<Snowflake> {
    /// Nothing is loaded, read or logged in to until the first call.
    pub fn new(settings: Settings, driver: Option<String>) -> SnowflakeWarehouse {
        AdbcWarehouse::with_dialect(Snowflake { settings }, driver)
    }
}

impl Snowflake {
    /// The driver's options: the account, where it answers, and the login with its
    /// secret read now.
    fn options(&self) -> Result<Vec<(String, String)>, WarehouseError> {
        let s = &self.settings;
        let mut options = vec![
            ("adbc.snowflake.sql.account".to_string(), s.account.clone()),
            ("adbc.snowflake.sql.db".to_string(), s.database.clone()),
            ("username".to_string(), s.user.clone()),
            (
                "adbc.snowflake.sql.client_option.disable_telemetry".to_string(),
                "true".to_string(),
            ),
            (
                "adbc.snowflake.sql.client_option.login_timeout".to_string(),
                "30s".to_string(),
            ),
        ];
        let optional = [
            ("adbc.snowflake.sql.uri.host", s.host.clone()),
            ("adbc.snowflake.sql.uri.port", s.port.map(|p| p.to_string())),
            ("adbc.snowflake.sql.uri.protocol", s.protocol.clone()),
            ("adbc.snowflake.sql.schema", s.schema.as_deref().map(fold)),
            (
                "adbc.snowflake.sql.warehouse",
                s.warehouse.as_deref().map(fold),
            ),
            ("adbc.snowflake.sql.role", s.role.as_deref().map(fold)),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                options.push((key.to_string(), value));
            }
        }
        let secret = |env: &str, what: &str| {
            std::env::var(env).map_err(|_| {
                WarehouseError::Unreachable(format!(
                    "{env} is not set: the Snowflake {what} is read from it"
                ))
            })
        };
        match &s.login {
            Some(Login::Password { env }) => {
                options.push(("password".to_string(), secret(env, "password")?));
            }
            Some(Login::OAuth { env }) => {
                options.push((
                    "adbc.snowflake.sql.auth_type".to_string(),
                    "auth_oauth".to_string(),
                ));
                options.push((
                    "adbc.snowflake.sql.client_option.auth_token".to_string(),
                    secret(env, "OAuth token")?,
                ));
            }
            Some(Login::KeyPair {
                key,
                passphrase_env,
            }) => {
                options.push((
                    "adbc.snowflake.sql.auth_type".to_string(),
                    "auth_jwt".to_string(),
                ));
                let client_option = |name: &str| format!("adbc.snowflake.sql.client_option.{name}");
                match (key, passphrase_env) {
                    // The driver reads the file itself (PKCS#1 or unencrypted PKCS#8).
                    (PrivateKey::File(file), None) => {
                        private_key_readable_by_owner_only(file)?;
                        options
                            .push((client_option("jwt_private_key"), file.display().to_string()));
                    }
                    // An encrypted key, or one given inline, goes to the driver as PEM
                    // text with its passphrase: the driver decrypts it client-side.
                    (key, passphrase_env) => {
                        let pem = match key {
                            PrivateKey::File(file) => {
                                private_key_readable_by_owner_only(file)?;
                                std::fs::read_to_string(file).map_err(|e| {
                                    WarehouseError::Unreachable(format!(
                                        "private key {}: {e}",
                                        file.display()
                                    ))
                                })?
                            }
                            PrivateKey::Env(env) => secret(env, "private key")?,
                        };
                        options.push((client_option("jwt_private_key_pkcs8_value"), pem));
                        if let Some(env) = passphrase_env {
                            options.push((
                                client_option("jwt_private_key_pkcs8_password"),
                                secret(env, "private key's passphrase")?,
                            ));
                        }
                    }
                }
            }
            None => {}
        }
        Ok(options)
    }

    /// The schema a relation is in: its own, the config's, or the session's.
    fn schema_sql(&self, schema: Option<&str>) -> String {
        match schema.or(self.settings.schema.as_deref()) {
            Some(schema) => literal(&fold(schema)),
            None => "CURRENT_SCHEMA()".to_string(),
        }
    }

    /// The database's `INFORMATION_SCHEMA`.
    fn catalog(&self, view: &str) -> String {
        format!(
            "{}.INFORMATION_SCHEMA.{view}",
            quote(&self.settings.database)
        )
    }

    /// Where the account answers, as the driver is told.
    fn endpoint(&self) -> String {
        let s = &self.settings;
        let host = s
            .host
            .clone()
            .unwrap_or_else(|| format!("{}.snowflakecomputing.com", s.account));
        let protocol = s.protocol.as_deref().unwrap_or("https");
        match s.port {
            Some(port) => format!("{protocol}://{host}:{port}"),
            None => format!("{protocol}://{host}"),
        }
    }

    /// The SQL of [`Warehouse::columns_of`]: one catalog query for a schema's tables.
    pub fn columns_sql(&self, schema: Option<&str>, tables: &[String]) -> String {
        let names: Vec<String> = tables.iter().map(|t| literal(&fold(t))).collect();
        format!(
            "SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH,
                    NUMERIC_PRECISION, NUMERIC_SCALE
             FROM {catalog}
             WHERE TABLE_SCHEMA = {schema} AND TABLE_NAME IN ({names})
             ORDER BY TABLE_NAME, ORDINAL_POSITION",
            catalog = self.catalog("COLUMNS"),
            schema = self.schema_sql(schema),
            names = if names.is_empty() {
                "NULL".to_string()
            } else {
                names.join(", ")
            },
        )
    }
}

/// The warehouse's clock, as `YYYY-MM-DDTHH:MM:SSZ`.
fn warehouse_now(s: &mut Session) -> Result<crate::clock::Timestamp, WarehouseError> {
    let row = s.query_one("SELECT DATE_PART(EPOCH_SECOND, CURRENT_TIMESTAMP())")?;
    let seconds = row[0].int()?.unwrap_or_default();
    crate::clock::Timestamp::from_unix(seconds).ok_or_else(|| {
        WarehouseError::Query(format!(
            "Snowflake's clock read {seconds} s since 1970: not a time"
        ))
    })
}

/// Refuses a private key file that anyone but its owner could read.
fn private_key_readable_by_owner_only(file: &std::path::Path) -> Result<(), WarehouseError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file)
        .map_err(|e| WarehouseError::Unreachable(format!("private key {}: {e}", file.display())))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(WarehouseError::Unreachable(format!(
            "private key {} is readable by others (mode {mode:o}): `chmod 600 {}` first",
            file.display(),
            file.display()
        )));
    }
    Ok(())
}

impl Snowflake {
    /// What a login that failed on the private key says: the warehouse and the config
    /// keys it comes from (the driver names neither), the driver's own reason, never
    /// the key or its passphrase.
    fn key_refused(&self, e: WarehouseError) -> WarehouseError {
        let Some(Login::KeyPair {
            key,
            passphrase_env,
        }) = &self.settings.login
        else {
            return e;
        };
        let reason = e.message().to_string();
        let lower = reason.to_ascii_lowercase();
        if !lower.contains("private key") && !lower.contains("pkcs8") {
            return e;
        }
        let at = format!("warehouse.{}", self.settings.name);
        let key = match key {
            PrivateKey::File(file) => format!("{at}.private_key_file ({})", file.display()),
            PrivateKey::Env(env) => format!("{at}.private_key_env (${env})"),
        };
        let passphrase = match passphrase_env {
            Some(env) => {
                format!(" with the passphrase in ${env} ({at}.private_key_passphrase_env)")
            }
            None => String::new(),
        };
        WarehouseError::Unreachable(format!(
            "warehouse {:?}: the private key of {key} could not be read{passphrase}: {}",
            self.settings.name,
            reason.trim()
        ))
    }
}

impl Dialect for Snowflake {
    const DRIVER: DriverKind = DRIVER;
    // Calls run at once, each on a session of its own, up to the poll's
    // max_concurrent; one login (the database) for them all.
    const ONE_CALL_AT_A_TIME: bool = false;
    const BEGIN: &'static str = "BEGIN";
    const WRITES_APART: bool = false;
    // DDL commits on its own in Snowflake: no transaction around it.
    const DDL_IN_TRANSACTION: bool = false;
    const READS_CAN_WRITE: bool = false;
    const COUNTS_WRITTEN_ROWS: bool = false;

    fn database_options(&self) -> Result<Vec<(String, String)>, WarehouseError> {
        self.options()
    }
    fn open_failed(&self, e: WarehouseError) -> WarehouseError {
        self.key_refused(e)
    }
    fn prepare(&self, _session: &mut Session, _write: bool) -> Result<(), WarehouseError> {
        Ok(())
    }
    fn release(&self, _session: &mut Session) -> Result<(), WarehouseError> {
        Ok(())
    }

    fn fold(name: &str) -> String {
        fold(name)
    }
    fn quote(name: &str) -> String {
        quote(name)
    }
    fn literal(text: &str) -> String {
        literal(text)
    }
    fn epoch_sql(column: &str) -> String {
        epoch_sql(column)
    }
    fn timestamp(seconds: i64) -> String {
        timestamp_ntz(seconds)
    }
    fn at_or_after(column: &str, since: i64) -> String {
        at_or_after(column, since)
    }
    fn to_text(sql: &str) -> String {
        format!("TO_VARCHAR({sql})")
    }
    fn uncastable_sql(target: CastTarget) -> String {
        uncastable_sql(target)
    }
    fn scan_sql(scan: &TableScan) -> String {
        scan_sql(scan)
    }
    fn row_count_sql(relation: &Relation) -> String {
        row_count_sql(relation)
    }
    fn null_counts_sql(
        relation: &Relation,
        columns: &[String],
        since: Option<(&str, i64)>,
    ) -> String {
        null_counts_sql(relation, columns, since)
    }
    fn load_times_sql(relation: &Relation, column: &str, since: i64, limit: usize) -> String {
        load_times_sql(relation, column, since, limit)
    }
    fn daily_counts_sql(
        relation: &Relation,
        column: &str,
        since: i64,
        cutoff: NaiveTime,
    ) -> String {
        daily_counts_sql(relation, column, since, cutoff)
    }
    fn columns_sql(&self, schema: Option<&str>, tables: &[String]) -> String {
        self.columns_sql(schema, tables)
    }
    fn column(row: &[Value]) -> Column {
        let text = |i: usize| row[i].text().unwrap_or_default();
        let number = |i: usize| row[i].int().ok().flatten();
        Column {
            name: text(1),
            data_type: type_name(&text(2), number(3), number(4), number(5)),
        }
    }
    fn tables_sql(&self, what: &str, relation: &Relation) -> String {
        format!(
            "SELECT {what} FROM {} WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            self.catalog("TABLES"),
            self.schema_sql(relation.schema.as_deref()),
            literal(&fold(&relation.table))
        )
    }
    fn dry_run_sql(select: &str) -> String {
        // Every column computed: the row turned into one value references them all,
        // so a failing cast in a column nobody counts still fails here.
        format!("SELECT COUNT(OBJECT_CONSTRUCT_KEEP_NULL(*)) FROM ({select}) AS dry_run")
    }
    /// Each row hashed, the hashes summed per UTC day.
    fn prints_sql(source: &Relation, columns: &[Column], column: Option<&str>) -> String {
        let day = match column {
            Some(column) => format!(
                "TO_VARCHAR(TO_DATE(TO_TIMESTAMP_NTZ({})))",
                epoch_sql(column)
            ),
            None => "CAST(NULL AS VARCHAR)".to_string(),
        };
        // Each row hashed by its canonical text (`row_print`), as every engine hashes it.
        format!(
            "SELECT {day}, COUNT(*), COALESCE(SUM({hash}), 0)
             FROM {table} GROUP BY 1 ORDER BY 1 NULLS FIRST",
            hash = super::row_print::row_hash_sql(&ROW_PRINT, columns, quote),
            table = quoted(source)
        )
    }
    fn versions_copy(source: &Relation, tag: &str) -> Result<Relation, WarehouseError> {
        versions_copy(source, tag)
    }
    /// A zero-copy `CLONE`: the copy costs no storage until the table changes.
    fn snapshot(
        _wh: &SnowflakeWarehouse,
        s: &mut Session,
        source: &Relation,
        copy: &Relation,
    ) -> Result<(), WarehouseError> {
        s.execute(&format!(
            "CREATE TABLE {} CLONE {}",
            quoted(copy),
            quoted(source)
        ))?;
        Ok(())
    }
    fn now(s: &mut Session) -> Result<crate::clock::Timestamp, WarehouseError> {
        warehouse_now(s)
    }
    fn drop_copy(
        _wh: &SnowflakeWarehouse,
        s: &mut Session,
        copy: &Relation,
    ) -> Result<(), WarehouseError> {
        s.execute(&format!("DROP TABLE IF EXISTS {}", quoted(copy)))?;
        Ok(())
    }
    /// `EXPLAIN USING TEXT`: Snowflake compiles the query and reads nothing. Where
    /// EXPLAIN itself is refused (fakesnow, DuckDB underneath, cannot parse it), the
    /// query is compiled alone under `WHERE FALSE`, so a missing table, column or
    /// grant still fails here, and the answer says plainly that there is no plan and
    /// why.
    fn plan(wh: &SnowflakeWarehouse, sql: &str) -> Result<Planned, WarehouseError> {
        let explained = wh.with_session(false, |s| s.query(&format!("EXPLAIN USING TEXT {sql}")));
        let refused = match explained {
            Ok(rows) => {
                let plan = rows
                    .first()
                    .and_then(|row| row.first().and_then(Value::text))
                    .unwrap_or_default();
                return Ok(Planned::Plan(
                    plan.lines()
                        .map(str::trim)
                        .find(|line| !line.is_empty())
                        .unwrap_or("planned")
                        .to_string(),
                ));
            }
            Err(WarehouseError::Query(refused)) => refused,
            Err(other) => return Err(other),
        };
        // The query's own error, if it has one, is the one to report.
        wh.with_session(false, |s| {
            s.query(&format!(
                "SELECT COUNT(*) FROM ({sql}) AS compiled WHERE FALSE"
            ))
        })?;
        let refused = refused.split_whitespace().collect::<Vec<_>>().join(" ");
        Ok(Planned::Unplanned(format!(
            "no plan: {} refused EXPLAIN USING TEXT ({}), so each query was compiled \
             under WHERE FALSE instead (nothing read)",
            wh.dialect.endpoint(),
            refused.chars().take(160).collect::<String>()
        )))
    }
}

/// The warehouse the config's section describes.
pub fn from_config(
    config: &crate::config::Config,
    name: &str,
    wh: &crate::config::WarehouseConfig,
) -> SnowflakeWarehouse {
    let key = match (&wh.private_key_file, &wh.private_key_env) {
        (Some(file), _) => Some(PrivateKey::File(config.resolve(file))),
        (_, Some(env)) => Some(PrivateKey::Env(env.clone())),
        _ => None,
    };
    let login = match (&wh.password_env, key, &wh.token_env) {
        (Some(env), _, _) => Some(Login::Password { env: env.clone() }),
        (_, Some(key), _) => Some(Login::KeyPair {
            key,
            passphrase_env: wh.private_key_passphrase_env.clone(),
        }),
        (_, _, Some(env)) => Some(Login::OAuth { env: env.clone() }),
        _ => None,
    };
    let settings = Settings {
        name: name.to_string(),
        account: wh.account.clone().unwrap_or_default(),
        host: wh.host.clone(),
        port: wh.port,
        protocol: wh.protocol.clone(),
        database: wh.database.clone().unwrap_or_default(),
        schema: wh.schema.clone(),
        warehouse: wh.warehouse.clone(),
        role: wh.role.clone(),
        user: wh.user.clone().unwrap_or_default(),
        login,
    };
    let driver = super::adbc::warehouse::driver_wanted(config, wh.driver.as_deref());
    SnowflakeWarehouse::new(settings, driver)
}

/// The canonical row text in Snowflake's SQL.
const ROW_PRINT: super::row_print::Spelling = super::row_print::Spelling {
    text: |e| format!("TO_VARCHAR({e})"),
    chars: "LENGTH",
    epoch_micros: |e| format!("TO_VARCHAR(DATE_PART(epoch_microsecond, {e}))"),
    date: |e| format!("TO_VARCHAR({e}, 'YYYY-MM-DD')"),
    md5_32: |e| super::row_print::md5_32_from_hex_digits(&format!("MD5({e})")),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warehouse::MinuteWindow;

    #[test]
    fn plain_names_fold_to_upper_case_and_every_name_is_quoted() {
        assert_eq!(quote("events"), "\"EVENTS\"");
        assert_eq!(quote("loaded_at$1"), "\"LOADED_AT$1\"");
        // Only a quoted name could hold these: taken as written.
        assert_eq!(quote("Mixed Case"), "\"Mixed Case\"");
        assert_eq!(quote("1st"), "\"1st\"");
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("it's \\"), "'it''s \\\\'");
    }

    /// The WHERE of `sql`: what Snowflake prunes micro-partitions by.
    fn where_of(sql: &str) -> &str {
        let at = sql
            .find("WHERE ")
            .unwrap_or_else(|| panic!("no WHERE in {sql}"));
        &sql[at + "WHERE ".len()..]
    }

    #[test]
    fn every_time_window_compares_the_raw_column_with_a_constant() {
        let relation = Relation::parse("analytics.events").unwrap();
        let null_columns = vec!["kind".to_string()];
        // 2024-05-10T12:00:00Z; the windows a day, two days and 98 days back.
        let now = 1_715_342_400;
        let scan = TableScan {
            relation: &relation,
            null_columns: &null_columns,
            nulls_since: Some(("loaded_at", now - 86_400)),
            minutes: Some(MinuteWindow {
                column: "loaded_at",
                from: now - 2 * 86_400,
                older_from: now - 98 * 86_400,
                cutoff: 12 * 3600,
            }),
        };
        let sql = scan_sql(&scan);
        // A day before the earliest window (98 days back, 2024-02-02T12:00:00Z).
        assert!(
            sql.contains("WHERE \"LOADED_AT\" >= '2024-02-01 12:00:00'::TIMESTAMP_NTZ GROUP BY 1"),
            "{sql}"
        );
        // The rows before it are the table's count (metadata) less the rows read.
        assert!(
            sql.contains(
                "SELECT NULL, CAST((SELECT COUNT(*) FROM \"ANALYTICS\".\"EVENTS\") - \
                 (SELECT COALESCE(SUM(total), 0) FROM recent) AS BIGINT), 0, 0, 0, 0"
            ),
            "{sql}"
        );
        let since = now - 86_400;
        let cutoff = NaiveTime::from_hms_opt(12, 0, 0).unwrap();
        for sql in [
            null_counts_sql(&relation, &null_columns, Some(("loaded_at", since))),
            load_times_sql(&relation, "loaded_at", since, 10),
            daily_counts_sql(&relation, "loaded_at", since, cutoff),
        ] {
            assert!(
                where_of(&sql).starts_with(
                    "\"LOADED_AT\" >= '2024-05-08 12:00:00'::TIMESTAMP_NTZ AND \
                     DATE_PART(EPOCH_SECOND, \"LOADED_AT\") >= 1715256000"
                ),
                "{sql}"
            );
        }
        // Nulls over every row: the whole table is read, as it must be.
        let whole = TableScan {
            nulls_since: None,
            ..scan
        };
        assert!(!scan_sql(&whole).contains("WHERE"), "{}", scan_sql(&whole));
    }

    #[test]
    fn types_keep_the_size_that_changes_what_fits() {
        assert_eq!(type_name("NUMBER", None, Some(38), Some(0)), "NUMBER(38,0)");
        assert_eq!(type_name("TEXT", Some(16_777_216), None, None), "TEXT");
        assert_eq!(type_name("TEXT", Some(20), None, None), "TEXT(20)");
        assert_eq!(
            type_name("TIMESTAMP_NTZ", None, None, None),
            "TIMESTAMP_NTZ"
        );
    }
}
