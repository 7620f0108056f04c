//! Parity between the two sides of a moved table, read by dataward on both: the rows,
//! the columns and their types, each column's nulls, and each day's rows with the sum
//! of a hash of every row (`Warehouse::day_prints`, the print a backfill is checked
//! by), so a row added, lost or changed on a day shows on that day. Only reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{MigrationConfig, TableMove, WaveConfig};
use crate::warehouse::{Column, DayPrint, Relation, Warehouse, WarehouseError};

/// One side of a table as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    pub warehouse: String,
    pub table: String,
    /// False when the catalog has no such table: the rest is empty.
    pub found: bool,
    pub rows: u64,
    pub columns: Vec<Column>,
    /// Nulls of each column, in column order.
    pub nulls: Vec<u64>,
    /// By day of the table's `day_column` (one whole-table print without one), by day.
    pub days: Vec<DayPrint>,
}

/// Reads one side of `table`. A table that is not there is a side `found: false` (a
/// parity failure, not an error); a warehouse that cannot be read is an error.
pub fn read_side(
    warehouse: &dyn Warehouse,
    warehouse_name: &str,
    table: &str,
    day_column: Option<&str>,
) -> Result<Side, WarehouseError> {
    let relation = Relation::parse(table)?;
    let columns = warehouse.columns(&relation)?;
    let mut side = Side {
        warehouse: warehouse_name.to_string(),
        table: table.to_string(),
        found: !columns.is_empty(),
        rows: 0,
        columns,
        nulls: Vec::new(),
        days: Vec::new(),
    };
    if !side.found {
        return Ok(side);
    }
    let names: Vec<String> = side.columns.iter().map(|c| c.name.clone()).collect();
    let counts = warehouse.null_counts(&relation, &names, None)?;
    side.rows = counts.rows;
    side.nulls = counts.nulls;
    // A day column the new side lost is a difference already; its days are left empty
    // rather than failing the read. Found as this warehouse spells it (Snowflake folds
    // unquoted names to upper case).
    let day_column = day_column.and_then(|c| column_named(&names, c));
    side.days = warehouse.day_prints(&relation, day_column)?;
    side.days.sort_by(|a, b| a.day.cmp(&b.day));
    Ok(side)
}

/// The column of `names` called `wanted`: spelled the same, else the one that differs
/// only in case. Warehouses fold unquoted names (PostgreSQL to lower case, Snowflake to
/// upper), so a table moved between them keeps its columns under another case.
fn column_named<'a>(names: &'a [String], wanted: &str) -> Option<&'a str> {
    (names.iter().find(|n| *n == wanted))
        .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(wanted)))
        .map(String::as_str)
}

/// Opens a warehouse by its name in the config.
pub type OpenWarehouse<'a> =
    dyn FnMut(&str) -> Result<Box<dyn Warehouse + Sync>, WarehouseError> + 'a;

/// Both sides of one table and what differs between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableParity {
    pub old: Side,
    pub new: Side,
    /// Empty when parity holds.
    pub differences: Vec<String>,
}

/// Every table of a wave, read at one time, and the hash an owner's sign-off is bound
/// to: another reading with any figure changed has another hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaveParity {
    pub migration: String,
    pub wave: String,
    pub tables: Vec<TableParity>,
    pub hash: String,
}

impl WaveParity {
    pub fn new(migration: &str, wave: &str, tables: Vec<TableParity>) -> WaveParity {
        let content = serde_json::json!({"migration": migration, "wave": wave, "tables": tables});
        let digest = Sha256::digest(content.to_string().as_bytes());
        WaveParity {
            migration: migration.to_string(),
            wave: wave.to_string(),
            tables,
            hash: digest.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    pub fn holds(&self) -> bool {
        self.tables.iter().all(|t| t.differences.is_empty())
    }

    /// Each difference, named by its table: why the gate stays closed.
    pub fn failures(&self) -> Vec<String> {
        (self.tables.iter())
            .flat_map(|t| {
                (t.differences.iter())
                    .map(move |d| format!("{} → {}: {d}", t.old.table, t.new.table))
            })
            .collect()
    }
}

/// Reads both sides of every table of `wave`, opening each warehouse by name with
/// `open` (a worker's connections; never the engine's thread).
pub fn read_wave(
    migration: &MigrationConfig,
    wave: &WaveConfig,
    open: &mut OpenWarehouse<'_>,
) -> Result<WaveParity, WarehouseError> {
    let mut tables = Vec::new();
    for table in &wave.tables {
        tables.push(read_table(migration, table, open)?);
    }
    Ok(WaveParity::new(&migration.name, &wave.name, tables))
}

fn read_table(
    migration: &MigrationConfig,
    table: &TableMove,
    open: &mut OpenWarehouse<'_>,
) -> Result<TableParity, WarehouseError> {
    let (old_wh, new_wh) = migration.sides(table);
    let day = table.day_column.as_deref();
    let old = read_side(open(old_wh)?.as_ref(), old_wh, &table.old, day)?;
    let new = read_side(open(new_wh)?.as_ref(), new_wh, &table.new, day)?;
    let differences = compare(&old, &new);
    Ok(TableParity {
        old,
        new,
        differences,
    })
}

/// What kind of values a column type holds, as both sides' warehouses may spell it:
/// an integer is an integer at any width (`integer`, `BIGINT`, Snowflake's
/// `NUMBER(38,0)`), a decimal at any precision and scale, text at any length. Types
/// of one kind are compared by their values (the nulls and the rows' hashes, which
/// the warehouse reads in a form that does not carry the width or the scale), not by
/// their names.
pub fn type_kind(data_type: &str) -> String {
    let t = data_type.trim().to_ascii_lowercase();
    let base = t.split('(').next().unwrap_or_default().trim();
    let scale_zero = t
        .split_once(',')
        .is_some_and(|(_, s)| s.trim_end_matches(')').trim() == "0");
    let whole_number = base == "number" && (scale_zero || !t.contains(','));
    if t.starts_with("timestamp") {
        let zoned = (t.contains("with time zone") && !t.contains("without"))
            || matches!(base, "timestamptz" | "timestamp_tz" | "timestamp_ltz");
        return if zoned { "timestamptz" } else { "timestamp" }.to_string();
    }
    match base {
        "smallint" | "integer" | "int" | "int2" | "int4" | "int8" | "bigint" | "tinyint"
        | "byteint" | "hugeint" => "integer".to_string(),
        // NUMBER(38,0) and a bare NUMBER hold whole numbers on Snowflake.
        "number" if whole_number => "integer".to_string(),
        "number" | "numeric" | "decimal" => "decimal".to_string(),
        "text" | "varchar" | "character varying" | "string" | "char" | "character" | "bpchar"
        | "nvarchar" => "text".to_string(),
        "real" | "float4" | "float" | "float8" | "double precision" | "double" => {
            "float".to_string()
        }
        "datetime" => "timestamp".to_string(),
        "bool" | "boolean" => "boolean".to_string(),
        _ => t,
    }
}

/// What differs between the sides, in words an owner can act on.
pub fn compare(old: &Side, new: &Side) -> Vec<String> {
    let mut out = Vec::new();
    for side in [old, new] {
        if !side.found {
            out.push(format!("{} is not in {}", side.table, side.warehouse));
        }
    }
    if !out.is_empty() {
        return out;
    }
    if old.rows != new.rows {
        out.push(format!("rows: {} old, {} new", old.rows, new.rows));
    }
    let names = |side: &Side| {
        side.columns
            .iter()
            .map(|c| c.name.clone())
            .collect::<Vec<_>>()
    };
    let (old_names, new_names) = (names(old), names(new));
    let new_columns: BTreeMap<&str, (usize, &Column)> = (new.columns.iter().enumerate())
        .map(|(i, c)| (c.name.as_str(), (i, c)))
        .collect();
    for (i, column) in old.columns.iter().enumerate() {
        let found = column_named(&new_names, &column.name).and_then(|n| new_columns.get(n));
        let Some((j, other)) = found else {
            out.push(format!("column {} is dropped on the new side", column.name));
            continue;
        };
        if type_kind(&other.data_type) != type_kind(&column.data_type) {
            out.push(format!(
                "column {}: {} old, {} new",
                column.name, column.data_type, other.data_type
            ));
        }
        let (was, is) = (old.nulls.get(i), new.nulls.get(*j));
        if was != is {
            out.push(format!(
                "column {}: {} nulls old, {} new",
                column.name,
                was.copied().unwrap_or_default(),
                is.copied().unwrap_or_default()
            ));
        }
    }
    for column in &new.columns {
        if column_named(&old_names, &column.name).is_none() {
            out.push(format!("column {} is only on the new side", column.name));
        }
    }
    if !out.is_empty() {
        // Each row's hash covers every column, so the days differ with the columns:
        // said once above rather than once a day.
        return out;
    }
    let same_order = old_names.len() == new_names.len()
        && (old_names.iter().zip(&new_names)).all(|(a, b)| a.eq_ignore_ascii_case(b));
    if !same_order {
        out.push("the columns are in another order".to_string());
        return out;
    }
    let new_days: BTreeMap<&Option<String>, &DayPrint> =
        new.days.iter().map(|d| (&d.day, d)).collect();
    for day in &old.days {
        let name = day.day.as_deref().unwrap_or("(no day)");
        match new_days.get(&day.day) {
            None => out.push(format!("day {name}: {} rows old, none new", day.rows)),
            Some(other) if other.rows != day.rows => out.push(format!(
                "day {name}: {} rows old, {} new",
                day.rows, other.rows
            )),
            Some(other) if other.sum != day.sum => {
                out.push(format!("day {name}: the rows' hashes differ"))
            }
            Some(_) => {}
        }
    }
    for day in &new.days {
        if !old.days.iter().any(|d| d.day == day.day) {
            let name = day.day.as_deref().unwrap_or("(no day)");
            out.push(format!("day {name}: none old, {} rows new", day.rows));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::type_kind;

    #[test]
    fn types_of_one_kind_spelled_apart_by_warehouses_are_the_same_kind() {
        for (a, b) in [
            ("integer", "BIGINT"),
            ("INTEGER", "NUMBER(38,0)"),
            ("NUMERIC(10,2)", "numeric(12,4)"),
            ("numeric(10,2)", "NUMBER(12,2)"),
            ("text", "VARCHAR(16777216)"),
            ("character varying(12)", "TEXT"),
            ("timestamp with time zone", "TIMESTAMP_TZ"),
            ("timestamp(6) without time zone", "TIMESTAMP_NTZ(9)"),
        ] {
            assert_eq!(type_kind(a), type_kind(b), "{a} vs {b}");
        }
        for (a, b) in [
            ("integer", "numeric(10,2)"),
            ("integer", "text"),
            ("timestamp with time zone", "timestamp without time zone"),
            ("date", "timestamp"),
        ] {
            assert_ne!(type_kind(a), type_kind(b), "{a} vs {b}");
        }
    }
}
