//! Table versions: the copy of a table taken before a backfill changes it, its name in
//! the versions schema, what changed since (day fingerprints), and whether it can be
//! restored exactly.

use super::*;

/// A copy of a table taken before a change, to restore it exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TableVersion {
    /// The table as the config names it, e.g. `analytics.fct_shipments`.
    pub table: String,
    /// The copy's relation, e.g. `dataward_versions.analytics__fct_shipments__inc_0003_p1`.
    pub copy: String,
    /// Rows copied.
    pub rows: u64,
    /// When the copy was taken, by the warehouse's clock; None for a copy found again,
    /// taken by an earlier attempt (written [`EARLIER`]).
    #[serde(with = "taken_at")]
    pub taken_at: Option<Timestamp>,
    /// What the backfill rebuilt in the table: all its undo puts back. None (a version
    /// from before scopes were kept): the whole table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<BackfillScope>,
    /// The table day by day just after the backfill's run finished: what its undo
    /// compares the table with, so rows loaded since are never undone with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<DayPrint>>,
}

/// What a backfill rebuilt in one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BackfillScope {
    /// The table's event-time column, whose UTC days tell one load from another. None:
    /// the table has none, and is compared whole.
    pub column: Option<String>,
    /// The days rebuilt, `[first, end)` as `YYYY-MM-DD` on `column`. None: the whole
    /// table was rebuilt (a full refresh, a model materialized as a table).
    pub days: Option<(String, String)>,
}

impl BackfillScope {
    /// `[start, end)` in Unix seconds, with the column, when only some days were rebuilt.
    pub fn range(&self) -> Option<(&str, i64, i64)> {
        let column = self.column.as_deref()?;
        let (first, end) = self.days.as_ref()?;
        let seconds = |day: &str| {
            NaiveDate::parse_from_str(day, "%Y-%m-%d").ok().map(|d| {
                d.and_hms_opt(0, 0, 0)
                    .expect("midnight")
                    .and_utc()
                    .timestamp()
            })
        };
        Some((column, seconds(first)?, seconds(end)?))
    }

    fn contains(&self, day: Option<&str>) -> bool {
        match (&self.days, day) {
            (None, _) => true,
            // A row with no event time is outside every range of days.
            (Some(_), None) => false,
            (Some((first, end)), Some(day)) => day >= first.as_str() && day < end.as_str(),
        }
    }

    /// The days as people read them.
    pub fn describe(&self) -> String {
        match &self.days {
            Some((first, end)) => format!(
                "rows with {} from {first} up to {end}",
                self.column.as_deref().unwrap_or("?")
            ),
            None => "the whole table".to_string(),
        }
    }
}

/// One UTC day of a table (None: rows with no event time, or the whole table when it
/// has no event-time column): its rows and the sum of a hash of each row, so a row
/// added, removed or changed on that day changes the print.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DayPrint {
    pub day: Option<String>,
    pub rows: u64,
    pub sum: i64,
}

/// A day whose rows differ between two prints of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayChange {
    pub day: Option<String>,
    pub now: u64,
    pub after: u64,
}

impl DayChange {
    /// The rows that came or went; on a day whose count held, the rows now there (some
    /// of them changed).
    pub fn rows(&self) -> u64 {
        if self.now == self.after {
            self.now
        } else {
            self.now.abs_diff(self.after)
        }
    }

    fn describe(&self, by_day: bool) -> String {
        let on = match (&self.day, by_day) {
            (Some(day), _) => format!(" on {day}"),
            (None, true) => " with no event time".to_string(),
            (None, false) => String::new(),
        };
        format!(
            "{} rows{on} ({} now, {} after the backfill)",
            self.rows(),
            self.now,
            self.after
        )
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Rows put back from the copy (within the scope).
    pub rows: u64,
    /// Days outside the scope that changed since the backfill: left as they are.
    pub kept: Vec<DayChange>,
}

/// The days that differ between `after` and `now`, in day order.
pub fn day_changes(after: &[DayPrint], now: &[DayPrint]) -> Vec<DayChange> {
    let mut days: Vec<Option<&str>> = after.iter().chain(now).map(|p| p.day.as_deref()).collect();
    days.sort();
    days.dedup();
    let find = |prints: &[DayPrint], day: Option<&str>| {
        prints
            .iter()
            .find(|p| p.day.as_deref() == day)
            .map(|p| (p.rows, p.sum))
            .unwrap_or((0, 0))
    };
    days.into_iter()
        .filter(|&day| find(after, day) != find(now, day))
        .map(|day| DayChange {
            day: day.map(str::to_string),
            now: find(now, day).0,
            after: find(after, day).0,
        })
        .collect()
}

/// Refuses the undo of a backfill in `relation` when what it would put back has changed
/// since the backfill's run: rows loaded since would be lost with it. Returns the days
/// outside what the backfill rebuilt that changed since: the undo leaves them.
pub fn check_unchanged_since(
    relation: &Relation,
    version: &TableVersion,
    now: &[DayPrint],
) -> Result<Vec<DayChange>, WarehouseError> {
    let Some(after) = &version.after else {
        return Err(WarehouseError::Refused(format!(
            "cannot roll back {relation}: its backfill's run was not seen to finish, so \
             there is no record of the table after it to tell rows loaded since from its \
             own"
        )));
    };
    let scope = version.scope.clone().unwrap_or(BackfillScope {
        column: None,
        days: None,
    });
    let (inside, outside): (Vec<DayChange>, Vec<DayChange>) = day_changes(after, now)
        .into_iter()
        .partition(|c| scope.contains(c.day.as_deref()));
    if inside.is_empty() {
        return Ok(outside);
    }
    let rows: u64 = inside.iter().map(DayChange::rows).sum();
    let days: Vec<String> = inside
        .iter()
        .map(|c| c.describe(scope.column.is_some()))
        .collect();
    let why = if scope.column.is_none() {
        " (it has no event-time column, so the backfill's rows and later ones cannot \
         be told apart)"
    } else {
        ""
    };
    Err(WarehouseError::Refused(format!(
        "cannot roll back {relation}: {rows} rows in {} changed since the backfill ran{why}: \
         {}; restoring the copy would undo them too",
        scope.describe(),
        days.join(", ")
    )))
}

/// Where PostgreSQL keeps copies (a schema), and how SQLite names them (a prefix).
pub const VERSIONS: &str = "dataward_versions";

/// `taken_at` of a version found again rather than taken now, as it is written.
pub const EARLIER: &str = "by an earlier attempt";

/// `taken_at` as intents and chain records have always held it: the time, or
/// [`EARLIER`].
mod taken_at {
    use super::{Timestamp, EARLIER};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => s.collect_str(at),
            None => s.serialize_str(EARLIER),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        let text = String::deserialize(d)?;
        if text == EARLIER {
            return Ok(None);
        }
        Timestamp::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

impl TableVersion {
    /// When the copy was taken, as people read it: the time, or "by an earlier attempt".
    pub fn taken(&self) -> String {
        self.taken_at
            .map_or_else(|| EARLIER.to_string(), |at| format!("at {at}"))
    }
}

/// The longest identifier PostgreSQL keeps whole (NAMEDATALEN - 1 bytes); a longer one
/// is silently cut, so two copies' names could meet.
const MAX_NAME: usize = 63;

/// The longest tag kept, once sanitized: a proposal id, not a sentence.
const MAX_TAG: usize = 30;

/// Lowercase ASCII letters and digits kept, every other run of characters one `_`,
/// none at either end: `x"; drop table t; --` is `x_drop_table_t`.
fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The name of `schema.table`'s copy for `tag`: `<schema>__<table>__<tag>`, each part
/// sanitized to `[a-z0-9_]`, so a tag can never reach SQL as anything but a name.
///
/// Different tables never share a name: when a part is not already plain (lowercase,
/// no `__`, no `_` at an end) or the name would pass 63 bytes, `<schema>__<table>` is
/// cut to fit and followed by `_` and 8 hex digits of a hash of the exact schema and
/// table. The tag is kept whole; tags that sanitize alike (`INC-0003-P1`, `inc_0003_p1`)
/// are one tag. Refused when the tag has no letter or digit, or is longer than 30 once
/// sanitized. (SQLite, whose names ignore case, passes them lowercased.)
pub fn version_name(schema: &str, table: &str, tag: &str) -> Result<String, WarehouseError> {
    let clean_tag = sanitize(tag);
    if clean_tag.is_empty() || clean_tag.len() > MAX_TAG {
        return Err(WarehouseError::Refused(format!(
            "a version tag needs 1 to {MAX_TAG} letters, digits and separators, like \
             INC-0003-P1; {tag:?} is not one"
        )));
    }
    // Sanitizing leaves no `__` and no `_` at an end: the parts of a plain name can be
    // told apart again, so two plain tables never meet.
    let plain = |part: &str| sanitize(part) == part;
    let name = format!("{schema}__{table}__{clean_tag}");
    if plain(schema) && plain(table) && name.len() <= MAX_NAME {
        return Ok(name);
    }
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{schema}\0{table}").as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let mut stem = format!("{}__{}", sanitize(schema), sanitize(table));
    stem.truncate(MAX_NAME - clean_tag.len() - hash.len() - 3);
    Ok(format!("{stem}_{hash}__{clean_tag}"))
}

/// Where the copy of `source` (as found, in its schema) tagged `tag` lives, in a
/// warehouse with schemas: schema `dataward_versions`, named by [`version_name`].
pub fn versions_copy(source: &Relation, tag: &str) -> Result<Relation, WarehouseError> {
    let schema = source.schema.as_deref().expect("found in a schema");
    Ok(Relation {
        schema: Some(VERSIONS.to_string()),
        table: version_name(schema, &source.table, tag)?,
    })
}

/// `dataward_versions.<name>` and nothing else: a stored version edited to name a real
/// table is never read into one or dropped.
pub fn own_versions_copy(copy: &str) -> Result<Relation, WarehouseError> {
    match Relation::parse(copy) {
        Ok(relation)
            if relation.schema.as_deref() == Some(VERSIONS) && is_version_name(&relation.table) =>
        {
            Ok(relation)
        }
        _ => Err(WarehouseError::Refused(format!(
            "{copy:?} is not a table version's copy ({VERSIONS}.<name>)"
        ))),
    }
}

/// Whether `name` could be a copy's table name: nothing but `[a-z0-9_]`. Restore and
/// drop check this (and the engine's own place for copies) before they touch anything,
/// so a stored version edited to name a real table is refused.
/// The copy a version names, when the version is of `relation` and `own_name` (the
/// warehouse's own naming rule) accepts the copy as one of ours.
pub fn own_copy(
    relation: &Relation,
    version: &TableVersion,
    own_name: fn(&str) -> Result<Relation, WarehouseError>,
) -> Result<Relation, WarehouseError> {
    if version.table != relation.to_string() {
        return Err(WarehouseError::Refused(format!(
            "{} is a version of {}, not of {relation}",
            version.copy, version.table
        )));
    }
    own_name(&version.copy)
}

pub fn is_version_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The refusal of a restore whose copy no longer holds the rows it was taken with.
pub fn changed_copy(relation: &Relation, version: &TableVersion, rows: u64) -> WarehouseError {
    WarehouseError::Refused(format!(
        "cannot restore {relation}: its copy {} holds {rows} rows, but {} were taken {}; \
         it changed since, so it is not the table as it was",
        version.copy,
        version.rows,
        version.taken()
    ))
}

/// Refuses a restore unless `copy` has exactly the columns of `table`, by name and type
/// (order aside: rows are put back by column name). Every difference is named.
pub fn check_restorable(
    table: &str,
    table_columns: &[Column],
    copy: &str,
    copy_columns: &[Column],
) -> Result<(), WarehouseError> {
    let mut problems = Vec::new();
    for column in table_columns {
        match copy_columns.iter().find(|c| c.name == column.name) {
            None => problems.push(format!(
                "column {} ({}) is in the table but not in the copy",
                column.name, column.data_type
            )),
            Some(kept) if kept.data_type != column.data_type => problems.push(format!(
                "column {} is {} in the table but {} in the copy",
                column.name, column.data_type, kept.data_type
            )),
            Some(_) => {}
        }
    }
    for kept in copy_columns {
        if !table_columns.iter().any(|c| c.name == kept.name) {
            problems.push(format!(
                "column {} ({}) is in the copy but no longer in the table",
                kept.name, kept.data_type
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(WarehouseError::Refused(format!(
            "cannot restore {table} from {copy}: {}",
            problems.join("; ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version as intents and chain records hold it reads back as it was: a time, or
    /// taken by an earlier attempt; anything else is refused naming its text.
    #[test]
    fn taken_at_reads_a_time_or_an_earlier_attempt() {
        let kept = |taken_at: &str| {
            serde_json::from_value::<TableVersion>(serde_json::json!({
                "table": "analytics.orders", "copy": "dataward_versions.orders__p1",
                "rows": 3, "taken_at": taken_at}))
        };
        for text in ["2026-11-24T14:05:00Z", EARLIER] {
            let version = kept(text).unwrap();
            assert_eq!(serde_json::to_value(&version).unwrap()["taken_at"], text);
        }
        assert_eq!(kept(EARLIER).unwrap().taken(), EARLIER);
        assert_eq!(
            kept("2026-11-24T14:05:00Z").unwrap().taken(),
            "at 2026-11-24T14:05:00Z"
        );
        let error = kept("noon").unwrap_err().to_string();
        assert!(error.contains("\"noon\""), "{error}");
    }
}
