//! Each monitor: its table exists and can be read with the warehouse's login, its
//! timestamp and null columns exist with types the checks can use, and the one query
//! a poll runs for it plans (`EXPLAIN`: nothing is read).

use std::collections::BTreeMap;

use super::warehouses::{message, Reached};
use super::Line;
use crate::config::{parse_duration, CheckKind, Config, MonitorConfig};
use crate::monitor::checks::{Windows, LOAD_TIMES};
use crate::warehouse::{
    CheckQuery, Column, MinuteWindow, Planned, Relation, TableScan, WarehouseError,
};

pub fn check(config: &Config, reached: &BTreeMap<String, Reached>) -> Vec<Line> {
    config
        .monitor
        .iter()
        .map(|monitor| {
            let what = format!("monitor {}", Config::monitor_name(monitor));
            match reached.get(&monitor.warehouse) {
                Some(wh) => one(monitor, wh, what),
                None => Line::bad(
                    what,
                    format!(
                        "{}: not checked: warehouse {} did not answer",
                        monitor.table, monitor.warehouse
                    ),
                    format!("fix warehouse {} first (above)", monitor.warehouse),
                ),
            }
        })
        .collect()
}

fn one(monitor: &MonitorConfig, wh: &Reached, what: String) -> Line {
    let table = &monitor.table;
    let relation = match Relation::parse(table) {
        Ok(relation) => relation,
        Err(e) => return Line::bad(what, message(&e), "write `table` as schema.table"),
    };
    let columns = match wh.warehouse.columns(&relation) {
        Ok(columns) => columns,
        Err(e) => {
            return Line::bad(
                what,
                format!("{table}: {}", message(&e)),
                fix(&e, &relation, wh),
            )
        }
    };
    let timestamp = monitor.timestamp_column.as_deref();
    let wants_time = monitor.checks.iter().any(|c| c.needs_timestamp_column())
        || (monitor.checks.contains(&CheckKind::NullRate) && timestamp.is_some());
    // Only a table the login can see has columns; one it cannot see is judged by the
    // plan below, which says why (gone, or not granted).
    if !columns.is_empty() {
        if let (Some(column), true) = (timestamp, wants_time) {
            match find(&columns, column) {
                None => {
                    return Line::bad(
                        what,
                        format!("{table} has no column {column:?} (timestamp_column)"),
                        format!("set timestamp_column to one of: {}", names(&columns)),
                    )
                }
                Some(found) if wh.kind == "postgres" && !is_time(&found.data_type) => {
                    return Line::bad(
                        what,
                        format!(
                            "{table}.{column} is {}, not a timestamp or date",
                            found.data_type.to_lowercase()
                        ),
                        "freshness and volume read a timestamp (or date) column: name one, or cast the column in the model",
                    )
                }
                Some(_) => {}
            }
        }
        for column in monitor.null_columns.iter().flatten() {
            if find(&columns, column).is_none() {
                return Line::bad(
                    what,
                    format!("{table} has no column {column:?} (null_columns)"),
                    format!(
                        "null_columns names columns of the table: {}",
                        names(&columns)
                    ),
                );
            }
        }
    }
    let null_columns: Vec<String> = if monitor.checks.contains(&CheckKind::NullRate) {
        match &monitor.null_columns {
            Some(listed) => listed.clone(),
            None => columns.iter().map(|c| c.name.clone()).collect(),
        }
    } else {
        Vec::new()
    };
    let now = crate::clock::Clock::wall().now().timestamp();
    let lookback = monitor
        .lookback
        .as_deref()
        .and_then(|l| parse_duration(l).ok())
        .map_or(98 * 86_400, |d| d.as_secs() as i64);
    let window = parse_duration(monitor.null_window.as_deref().unwrap_or("1d"))
        .map_or(86_400, |d| d.as_secs() as i64);
    let scan = TableScan {
        relation: &relation,
        null_columns: &null_columns,
        nulls_since: timestamp
            .filter(|_| !null_columns.is_empty())
            .map(|column| (column, now - window)),
        minutes: timestamp
            .filter(|_| monitor.checks.iter().any(|c| c.needs_timestamp_column()))
            .map(|column| MinuteWindow {
                column,
                from: now - 2 * 86_400,
                older_from: now - lookback,
                cutoff: now.rem_euclid(86_400) / 60 * 60,
            }),
    };
    let planned = match wh.warehouse.plan(&CheckQuery::Scan(scan)) {
        Ok(planned) => planned,
        Err(e) => {
            return Line::bad(
                what,
                format!("{table}: {}", message(&e)),
                fix(&e, &relation, wh),
            )
        }
    };
    // Then each check's own query, which a poll falls back to when the scan fails.
    let mut unplanned = None;
    let mut each_planned = Vec::new();
    for check in &monitor.checks {
        match plan_check(wh, monitor, *check, &relation, &null_columns) {
            Ok(Planned::Plan(_)) => each_planned.push(check.as_str()),
            Ok(Planned::Unplanned(why)) => {
                each_planned.push(check.as_str());
                unplanned.get_or_insert(why);
            }
            Ok(Planned::NotPlanned) => {}
            Err(e) => {
                return Line::bad(
                    what,
                    format!("{table}: {}'s own query: {}", check.as_str(), message(&e)),
                    fix(&e, &relation, wh),
                )
            }
        }
    }
    let mut detail = format!(
        "{table}: {} column{}",
        columns.len(),
        if columns.len() == 1 { "" } else { "s" }
    );
    if let (Some(column), true) = (timestamp, wants_time) {
        if let Some(found) = find(&columns, column) {
            detail.push_str(&format!(
                ", {} {}",
                found.name,
                found.data_type.to_lowercase()
            ));
        }
    }
    let checks: Vec<&str> = monitor.checks.iter().map(|c| c.as_str()).collect();
    match planned {
        Planned::Plan(plan) => {
            let plan = plan.split("  (").next().unwrap_or("").trim();
            detail.push_str(&format!("; {} plans ({plan})", checks.join(", ")));
        }
        Planned::Unplanned(why) => {
            unplanned.get_or_insert(why);
        }
        Planned::NotPlanned => {}
    }
    if !each_planned.is_empty() {
        let verb = if unplanned.is_some() {
            "compile"
        } else {
            "plan"
        };
        detail.push_str(&format!(
            "; the poll's scan and each check's own query {verb} ({})",
            each_planned.join(", ")
        ));
    }
    // The warehouse would not EXPLAIN: said once, plainly, with why.
    if let Some(why) = unplanned {
        detail.push_str(&format!("; {why}"));
    }
    Line::ok(what, detail)
}

/// Plans the query `check` runs on its own (see `monitor::checks::measure`).
fn plan_check(
    wh: &Reached,
    monitor: &MonitorConfig,
    check: CheckKind,
    relation: &Relation,
    null_columns: &[String],
) -> Result<Planned, WarehouseError> {
    let windows = Windows::of(monitor, crate::clock::Clock::wall().now());
    let timestamp = monitor.timestamp_column.as_deref();
    let tables = std::slice::from_ref(&relation.table);
    let query = match (check, timestamp) {
        (CheckKind::RowCount, _) => CheckQuery::RowCount(relation),
        (CheckKind::Schema, _) => CheckQuery::Columns {
            schema: relation.schema.as_deref(),
            tables,
        },
        (CheckKind::NullRate, _) if null_columns.is_empty() => return Ok(Planned::NotPlanned),
        (CheckKind::NullRate, _) => CheckQuery::NullCounts {
            relation,
            columns: null_columns,
            since: windows
                .nulls_since
                .as_ref()
                .map(|(column, at)| (column.as_str(), *at)),
        },
        (CheckKind::Freshness, Some(column)) => CheckQuery::LoadTimes {
            relation,
            column,
            since: windows.lookback_since,
            limit: LOAD_TIMES,
        },
        (CheckKind::Volume, Some(column)) => CheckQuery::DailyCounts {
            relation,
            column,
            since: windows.first_day,
            cutoff: windows.cutoff,
        },
        // Without a timestamp column the config does not load: nothing to plan.
        (CheckKind::Freshness | CheckKind::Volume, None) => return Ok(Planned::NotPlanned),
        // Not a monitor's check: the config refuses it in `checks`.
        (CheckKind::FailedRun, _) => return Ok(Planned::NotPlanned),
    };
    wh.warehouse.plan(&query)
}

fn find<'c>(columns: &'c [Column], name: &str) -> Option<&'c Column> {
    columns
        .iter()
        .find(|c| c.name == name)
        .or_else(|| columns.iter().find(|c| c.name.eq_ignore_ascii_case(name)))
}

fn names(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// As information_schema names PostgreSQL's types.
fn is_time(data_type: &str) -> bool {
    let t = data_type.to_ascii_uppercase();
    t.starts_with("TIMESTAMP") || t == "DATE"
}

/// What to do about a plan the server refused, from its SQLSTATE (or SQLite's message).
fn fix(e: &WarehouseError, relation: &Relation, wh: &Reached) -> String {
    let text = message(e);
    // PostgreSQL's SQLSTATE, or SQLite's words for the same faults.
    let code = match text.split(':').next().unwrap_or("").trim() {
        _ if text.starts_with("no such table") => "42P01",
        _ if text.starts_with("no such column") => "42703",
        code => code,
    };
    let user = wh.user.as_deref().unwrap_or("the warehouse's user");
    match code {
        "42P01" => "the table is not there: build it (`dbt build`, or the load that fills it), or correct `table` if it moved; then rerun `dataward doctor`".to_string(),
        "3F000" => format!(
            "the schema {} is not there: correct `table`, or build it",
            relation.schema.as_deref().unwrap_or("public")
        ),
        "42501" if text.contains("schema") => format!(
            "GRANT USAGE ON SCHEMA {} TO {user};",
            relation.schema.as_deref().unwrap_or("public")
        ),
        "42501" => format!("GRANT SELECT ON {} TO {user};", relation.quoted()),
        "42703" => "a column the monitor names is not in the table: correct timestamp_column or null_columns".to_string(),
        "42883" | "42804" => "the timestamp_column's type cannot be compared with a time: name a timestamp or date column".to_string(),
        _ if matches!(e, WarehouseError::Unreachable(_)) => {
            "the warehouse stopped answering: see its line above".to_string()
        }
        _ => "correct the monitor so its query runs (the message above is the warehouse's)".to_string(),
    }
}
