//! Warehouses reached through Arrow ADBC: the warehouse's own driver, a shared library,
//! loaded at run time by the ADBC driver manager, and the Arrow record batches its
//! queries return read into the plain values the checks need.
//!
//! A driver is named in the config by a path (`driver = "/opt/duckdb/libduckdb.so"`, or
//! a manifest `.../duckdb.toml`) or by an ADBC driver manifest name (`driver =
//! "duckdb"`), looked up the ADBC way: `<name>.toml` or `lib<name>.so` in each folder of
//! `ADBC_DRIVER_PATH`, then `~/.config/adbc/drivers`, then `/etc/adbc/drivers`, then
//! the system's library path. `dbc install duckdb` puts a manifest where this finds it.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};

use adbc_core::options::{AdbcVersion, OptionDatabase, OptionValue};
use adbc_core::{CancelHandle, Connection, Database, Driver as _, Statement, LOAD_FLAG_DEFAULT};
use adbc_driver_manager::search::DriverLibrary;
use adbc_driver_manager::{ManagedConnection, ManagedDatabase, ManagedDriver, ManagedStatement};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatchReader};
use arrow_schema::DataType;

use super::{query_log, Limit, WarehouseError};

pub mod warehouse;

/// What a warehouse kind needs to find its driver.
pub struct DriverKind {
    /// The manifest name looked up when the config names no driver, e.g. `duckdb`.
    pub name: &'static str,
    /// The library's init function when no manifest names one (DuckDB's library
    /// exports `duckdb_adbc_init`, not the ADBC default `AdbcDriverInit`).
    pub entrypoint: Option<&'static [u8]>,
    /// What to install when it is not found, as a person would type it.
    pub install: &'static str,
}

/// A driver loaded, and where it was found.
pub struct Driver {
    managed: ManagedDriver,
    pub found: Found,
}

/// Where a driver was found, for `doctor` and for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The shared library loaded.
    pub library: PathBuf,
    /// The manifest that named it, when it was found through one.
    pub manifest: Option<PathBuf>,
    /// The manifest's `version`, when it has one.
    pub version: Option<String>,
}

/// The folders searched for a driver manifest or library by name, in order, as the
/// ADBC driver manager searches them (folders that do not exist included, so an error
/// can name them).
pub fn search_folders() -> Vec<PathBuf> {
    let mut folders = Vec::new();
    if let Some(paths) = std::env::var_os("ADBC_DRIVER_PATH") {
        folders.extend(std::env::split_paths(&paths));
    }
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")));
    if let Some(config_home) = config_home {
        folders.push(config_home.join("adbc").join("drivers"));
    }
    folders.push(PathBuf::from("/etc/adbc/drivers"));
    folders
}

/// Whether the config's `driver` is a path (to a library or a manifest) rather than a
/// manifest name.
pub fn is_path(driver: &str) -> bool {
    driver.contains('/') || Path::new(driver).extension().is_some()
}

/// A manifest's `version`, read as the ADBC manifest format has it.
fn manifest_version(manifest: &Path) -> Option<String> {
    let text = std::fs::read_to_string(manifest).ok()?;
    let table: toml::Table = text.parse().ok()?;
    table.get("version")?.as_str().map(str::to_string)
}

/// Loads the driver `wanted` names (a path, already resolved, or a manifest name).
pub fn load(wanted: &str, kind: &DriverKind) -> Result<Driver, WarehouseError> {
    let manifest = if is_path(wanted) {
        Some(PathBuf::from(wanted)).filter(|p| p.extension().is_some_and(|e| e == "toml"))
    } else {
        search_folders()
            .into_iter()
            .map(|folder| folder.join(format!("{wanted}.toml")))
            .find(|path| path.is_file())
    };
    let hit = DriverLibrary::search(wanted, LOAD_FLAG_DEFAULT, None).map_err(|e| {
        if e.status == adbc_core::error::Status::NotFound {
            not_found(wanted, kind)
        } else {
            WarehouseError::Unreachable(format!(
                "the ADBC driver {wanted:?} could not be loaded: {}. {}",
                e.message, kind.install
            ))
        }
    })?;
    let entrypoint = hit.resolve_entrypoint(kind.entrypoint).into_owned();
    let version = AdbcVersion::V110;
    // Found by name on the system's library path, the hit holds the bare name.
    let managed = if hit.lib_path.is_absolute() || is_path(wanted) {
        ManagedDriver::load_dynamic_from_filename(&hit.lib_path, Some(&entrypoint), version)
    } else {
        ManagedDriver::load_dynamic_from_name(wanted, Some(&entrypoint), version)
    }
    .map_err(|e| {
        WarehouseError::Unreachable(format!(
            "the ADBC driver {} could not be started (entrypoint {}): {}",
            hit.lib_path.display(),
            String::from_utf8_lossy(&entrypoint),
            e.message
        ))
    })?;
    Ok(Driver {
        managed,
        found: Found {
            library: hit.lib_path.clone(),
            version: manifest.as_deref().and_then(manifest_version),
            manifest,
        },
    })
}

fn not_found(wanted: &str, kind: &DriverKind) -> WarehouseError {
    if is_path(wanted) {
        return WarehouseError::Unreachable(format!(
            "no ADBC driver at {wanted}: the file does not exist. {}",
            kind.install
        ));
    }
    let folders: Vec<String> = search_folders()
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let env = if std::env::var_os("ADBC_DRIVER_PATH").is_some() {
        ""
    } else {
        " (ADBC_DRIVER_PATH is not set)"
    };
    WarehouseError::Unreachable(format!(
        "no ADBC driver {wanted:?} found: looked for {wanted}.toml (a driver manifest) or \
         lib{wanted}.so in {}{env}, then on the system's library path. {}",
        folders.join(", "),
        kind.install
    ))
}

impl Driver {
    /// A database with the driver's own options (`uri`, `path`, `access_mode`, ...).
    pub fn open(&self, options: &[(&str, &str)]) -> Result<OpenDatabase, WarehouseError> {
        let options = options.iter().map(|(key, value)| {
            let key = match *key {
                "uri" => OptionDatabase::Uri,
                other => OptionDatabase::Other(other.to_string()),
            };
            (key, OptionValue::String(value.to_string()))
        });
        let mut managed = self.managed.clone();
        let database = managed
            .new_database_with_opts(options)
            .map_err(|e| WarehouseError::Unreachable(e.message))?;
        Ok(OpenDatabase { database })
    }
}

/// An open database of a driver.
pub struct OpenDatabase {
    database: ManagedDatabase,
}

impl OpenDatabase {
    pub fn connect(&self) -> Result<Session, WarehouseError> {
        let connection = self
            .database
            .new_connection()
            .map_err(|e| WarehouseError::Unreachable(e.message))?;
        query_log::session_opened();
        Ok(Session {
            connection,
            limit: None,
            cancelled: false,
        })
    }
}

/// One connection: statements run one after another on it, so `BEGIN` ... `COMMIT`
/// sent as SQL hold for the statements between them.
pub struct Session {
    connection: ManagedConnection,
    limit: Option<Limit>,
    /// A statement was cancelled at its limit: the warehouse may still be running it
    /// on this connection, so it is not used again.
    cancelled: bool,
}

/// A value of a result's cell, as the checks read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

impl Value {
    /// A count or another whole number; a null reads as 0 (a sum over no rows).
    pub fn count(&self) -> Result<u64, WarehouseError> {
        match self {
            Value::Null => Ok(0),
            Value::Int(n) if *n >= 0 => Ok(*n as u64),
            other => Err(WarehouseError::Query(format!(
                "expected a count, got {other:?}"
            ))),
        }
    }

    pub fn int(&self) -> Result<Option<i64>, WarehouseError> {
        match self {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            Value::Float(f) if f.fract() == 0.0 => Ok(Some(*f as i64)),
            other => Err(WarehouseError::Query(format!(
                "expected a whole number, got {other:?}"
            ))),
        }
    }

    pub fn text(&self) -> Option<String> {
        match self {
            Value::Text(text) => Some(text.clone()),
            _ => None,
        }
    }
}

fn failed(e: adbc_core::error::Error) -> WarehouseError {
    WarehouseError::Query(e.message)
}

impl Session {
    /// Every statement from now on is cancelled once it runs past `limit`.
    pub fn set_limit(&mut self, limit: Option<Limit>) {
        self.limit = limit;
    }

    /// Whether a statement was cancelled at the limit on this connection.
    pub fn was_cancelled(&self) -> bool {
        self.cancelled
    }

    /// Runs a query and reads every row of its result. Recorded in the query log
    /// (see [`query_log`]), and not sent past the poll's query guard.
    pub fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>, WarehouseError> {
        query_log::may_send()?;
        let statement = self.statement(sql)?;
        // The rows are read within the limit too: a driver may stream a result while
        // it is still being computed.
        let rows = self.within_limit(statement, |s| read_rows(s.execute().map_err(failed)?));
        // Logged once sent, failed or not: a failed query was still sent.
        let returned = rows.as_ref().map_or(0, |rows| rows.len() as u64);
        query_log::sent(sql, returned, None);
        rows
    }

    /// Runs a statement that returns no rows; the rows it changed when the driver says.
    pub fn execute(&mut self, sql: &str) -> Result<Option<u64>, WarehouseError> {
        query_log::may_send()?;
        let statement = self.statement(sql)?;
        let changed = self.within_limit(statement, |s| s.execute_update().map_err(failed));
        query_log::sent(sql, 0, None);
        Ok(changed?.and_then(|n| u64::try_from(n).ok()))
    }

    fn statement(&mut self, sql: &str) -> Result<ManagedStatement, WarehouseError> {
        let mut statement = self.connection.new_statement().map_err(failed)?;
        statement.set_sql_query(sql).map_err(failed)?;
        Ok(statement)
    }

    /// `run` on the statement, cancelled through the driver if it is still running
    /// when the limit has passed; a statement cancelled fails with a timeout naming
    /// the warehouse and its limit, whatever the driver's own error says.
    fn within_limit<T>(
        &mut self,
        mut statement: ManagedStatement,
        run: impl FnOnce(&mut ManagedStatement) -> Result<T, WarehouseError>,
    ) -> Result<T, WarehouseError> {
        let Some(limit) = self.limit.clone() else {
            return run(&mut statement);
        };
        let cancel: Box<dyn CancelHandle> = statement.get_cancel_handle();
        let (finished, watch) = mpsc::channel::<()>();
        let watched = &limit;
        let (result, cancelled) = std::thread::scope(|scope| {
            let watchdog = scope.spawn(move || match watch.recv_timeout(watched.timeout) {
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = cancel.try_cancel() {
                        tracing::warn!(
                            "warehouse {:?}: the driver could not cancel a statement past \
                             its check_timeout: {}",
                            watched.warehouse,
                            e.message
                        );
                    }
                    true
                }
                _ => false,
            });
            let result = run(&mut statement);
            drop(finished);
            (result, watchdog.join().unwrap_or(false))
        });
        self.cancelled |= cancelled;
        match result {
            Err(_) if cancelled => Err(limit.timed_out()),
            other => other,
        }
    }

    /// The first row of a query that returns one.
    pub fn query_one(&mut self, sql: &str) -> Result<Vec<Value>, WarehouseError> {
        self.query(sql)?
            .into_iter()
            .next()
            .ok_or_else(|| WarehouseError::Query(format!("no row from {sql}")))
    }
}

/// Every row of a result, each cell read as a [`Value`].
fn read_rows(
    reader: Box<dyn RecordBatchReader + Send + 'static>,
) -> Result<Vec<Vec<Value>>, WarehouseError> {
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| WarehouseError::Query(e.to_string()))?;
        let columns = batch.columns();
        for row in 0..batch.num_rows() {
            rows.push(
                columns
                    .iter()
                    .map(|column| cell(column.as_ref(), row))
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
    }
    Ok(rows)
}

/// One cell. The types the checks' queries return: whole numbers, floats, decimals,
/// text and booleans; anything else is cast to text in the SQL.
fn cell(array: &dyn Array, row: usize) -> Result<Value, WarehouseError> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    let whole = |n: i128| {
        i64::try_from(n).map_err(|_| WarehouseError::Query(format!("{n} is out of range")))
    };
    Ok(match array.data_type() {
        DataType::Int8 => Value::Int(array.as_primitive::<Int8Type>().value(row).into()),
        DataType::Int16 => Value::Int(array.as_primitive::<Int16Type>().value(row).into()),
        DataType::Int32 => Value::Int(array.as_primitive::<Int32Type>().value(row).into()),
        DataType::Int64 => Value::Int(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt8 => Value::Int(array.as_primitive::<UInt8Type>().value(row).into()),
        DataType::UInt16 => Value::Int(array.as_primitive::<UInt16Type>().value(row).into()),
        DataType::UInt32 => Value::Int(array.as_primitive::<UInt32Type>().value(row).into()),
        DataType::UInt64 => {
            Value::Int(whole(array.as_primitive::<UInt64Type>().value(row).into())?)
        }
        DataType::Float32 => Value::Float(array.as_primitive::<Float32Type>().value(row).into()),
        DataType::Float64 => Value::Float(array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal128(_, 0) => {
            Value::Int(whole(array.as_primitive::<Decimal128Type>().value(row))?)
        }
        DataType::Decimal128(_, scale) => {
            let raw = array.as_primitive::<Decimal128Type>().value(row);
            Value::Float(raw as f64 / 10f64.powi((*scale).into()))
        }
        DataType::Utf8 => Value::Text(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => Value::Text(array.as_string::<i64>().value(row).to_string()),
        DataType::Utf8View => Value::Text(array.as_string_view().value(row).to_string()),
        DataType::Boolean => Value::Bool(array.as_boolean().value(row)),
        other => {
            return Err(WarehouseError::Query(format!(
                "a result column of type {other} (expected numbers or text)"
            )))
        }
    })
}
