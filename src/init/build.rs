//! The config and the notes file `init` writes, as text a person reads and edits: every
//! monitor says which dbt node it watches and where its thresholds came from, and every
//! table left out is listed with why.
//!
//! The text depends only on the project and its artifacts (no date, no order that
//! varies), so a rerun on an unchanged project writes the same bytes, and on a changed
//! one a diff shows only what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use super::artifacts::{Artifacts, ColumnTest, Freshness, TableKind, TableNode};
use super::project::{
    Connection, DbtProject, Password, Postgres, Snowflake, SnowflakeLogin, Target,
};
use crate::lineage::{passed_through, CatalogColumn, Dialect};
use crate::warehouse::quote_ident;

mod warehouse;
pub use warehouse::*;

/// What `init` writes and what it says about it.
pub struct Generated {
    pub config: String,
    pub notes: String,
    pub warehouse: String,
    pub url_env: Option<String>,
    /// The line to export the warehouse's URL, password left as a reference.
    pub export_hint: Option<String>,
    /// Said about the URL's role and its password.
    pub password_note: Option<String>,
    /// The SQL that makes the URL's read-only role, for the schemas watched.
    pub grants: Vec<String>,
    /// Why the adapter cannot be watched yet, when it cannot.
    pub unsupported: Option<String>,
    pub monitors: usize,
    pub checks: usize,
    /// Columns whose null rate is watched because a dbt test names them.
    pub null_columns: usize,
    pub domains: usize,
    pub exposures: usize,
    /// One line per table (or kind of node) left out or watched in part, with why.
    pub skipped: Vec<String>,
}

/// Everything the text is built from.
pub struct Inputs<'a> {
    pub project: &'a DbtProject,
    pub target: &'a Target,
    pub artifacts: &'a Artifacts,
    /// The notes file's name as the config names it (beside the config).
    pub notes_name: &'a str,
    /// The unix account running `init`, as the kernel attests it.
    pub account: Option<String>,
}

/// One monitor to write.
struct Monitor {
    name: String,
    unique_id: String,
    table: String,
    checks: Vec<&'static str>,
    timestamp_column: Option<(String, &'static str)>,
    warn_after: Option<String>,
    error_after: Option<String>,
    /// null_rate: each column watched, with the dbt tests that named it.
    null_columns: BTreeMap<String, Vec<String>>,
    notes: Vec<String>,
}

pub fn generate(inputs: &Inputs) -> Generated {
    let Inputs {
        target, artifacts, ..
    } = inputs;
    let warehouse = identifier(&target.profile);
    let mut skipped = Vec::new();
    let (warehouse_block, url_env, export_hint, password_note, unsupported) =
        warehouse_block(&warehouse, target);
    let database = match &target.connection {
        Connection::Postgres(pg) => Some(pg.dbname.as_str()),
        Connection::Duckdb(duck) => Some(duck.database.as_str()),
        Connection::Snowflake(sf) => Some(sf.database.as_str()),
        Connection::Unsupported { .. } => None,
    };

    let mut monitors = Vec::new();
    let mut views = 0;
    let mut ephemeral = 0;
    let mut seeds = 0;
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for table in &artifacts.tables {
        let what = describe(table);
        match (table.kind, table.materialized.as_deref()) {
            (TableKind::Seed, _) => {
                seeds += 1;
                continue;
            }
            (TableKind::Model, Some("view")) => {
                views += 1;
                continue;
            }
            (TableKind::Model, Some("ephemeral")) => {
                ephemeral += 1;
                continue;
            }
            (TableKind::Model, Some("table" | "incremental")) | (TableKind::Snapshot, _) => {}
            (TableKind::Source, _) => {}
            (TableKind::Model, other) => {
                *others
                    .entry(other.unwrap_or("no materialization").to_string())
                    .or_default() += 1;
                continue;
            }
        }
        let Some(schema) = table.schema.as_deref() else {
            skipped.push(format!("{what}: no schema in the manifest: not watched"));
            continue;
        };
        if schema.contains('.') || table.identifier.contains('.') {
            skipped.push(format!(
                "{what}: {schema}.{} has a dot in a name, which a monitor's table cannot hold: not watched",
                table.identifier
            ));
            continue;
        }
        if let (Some(theirs), Some(ours)) = (table.database.as_deref(), database) {
            if !theirs.eq_ignore_ascii_case(ours) {
                skipped.push(format!(
                    "{what}: in database {theirs:?}, and the warehouse is {ours:?} \
                     (one database per warehouse): not watched"
                ));
                continue;
            }
        }
        monitors.push(monitor(table, schema, artifacts, &mut skipped));
    }
    watch_tested_columns(&mut monitors, artifacts);
    name_monitors(&mut monitors);
    if seeds > 0 {
        skipped.push(format!(
            "{seeds} seed{}: CSV files in the repository, loaded by `dbt seed`: not watched",
            plural(seeds)
        ));
    }
    if views > 0 {
        skipped.push(format!(
            "{views} view{}: computed when read, so watched through the tables {} read{}",
            plural(views),
            if views == 1 { "it" } else { "they" },
            if views == 1 { "s" } else { "" }
        ));
    }
    if ephemeral > 0 {
        skipped.push(format!(
            "{ephemeral} ephemeral model{}: no table in the warehouse",
            plural(ephemeral)
        ));
    }
    for (materialized, count) in others {
        skipped.push(format!(
            "{count} model{} materialized as {materialized}: not a table dataward can watch yet",
            plural(count)
        ));
    }

    let domains = domains(inputs, &monitors);
    let checks = monitors.iter().map(|m| m.checks.len()).sum();
    let null_columns = monitors.iter().map(|m| m.null_columns.len()).sum();
    let mut config = String::new();
    header(&mut config, inputs);
    config.push_str(&warehouse_block);
    let grants = match &target.connection {
        Connection::Postgres(pg) => {
            let schemas: BTreeSet<String> = monitors
                .iter()
                .filter_map(|m| {
                    m.table
                        .split_once('.')
                        .map(|(schema, _)| schema.to_string())
                })
                .collect();
            read_only_grants(pg, &schemas)
        }
        // A DuckDB file has no roles: dataward attaches it read-only. Snowflake's
        // read-only role is described in the warehouse's section.
        Connection::Duckdb(_) | Connection::Snowflake(_) | Connection::Unsupported { .. } => {
            Vec::new()
        }
    };
    if !grants.is_empty() {
        let _ = writeln!(
            config,
            "# dataward only reads: the URL names a read-only role, not dbt's user. `dataward\n\
             # init` printed the SQL that makes it (run it in psql as a superuser or the\n\
             # schemas' owner, then put the password you gave it where the URL says PASSWORD):"
        );
        for line in &grants {
            let _ = writeln!(config, "#   {}", c(line));
        }
        config.push('\n');
    }
    write_monitors(&mut config, &monitors, &warehouse, unsupported.is_some());
    lineage_block(&mut config, inputs);
    orchestrator_block(&mut config, inputs);
    people_and_domains(&mut config, inputs, &domains);
    let notes = notes(inputs);
    Generated {
        config,
        notes,
        warehouse,
        url_env,
        export_hint,
        password_note,
        grants,
        unsupported,
        monitors: monitors.len(),
        checks,
        null_columns,
        domains: domains.len(),
        exposures: artifacts.exposures.len(),
        skipped,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// How a line about a table names it: `source raw.orders`, `model fct_orders`.
fn describe(table: &TableNode) -> String {
    match (table.kind, &table.source_name) {
        (TableKind::Source, Some(source)) => format!("source {source}.{}", table.name),
        (TableKind::Source, None) => format!("source {}", table.name),
        (TableKind::Model, _) => format!("model {}", table.name),
        (TableKind::Snapshot, _) => format!("snapshot {}", table.name),
        (TableKind::Seed, _) => format!("seed {}", table.name),
    }
}

/// `[a-z0-9_]`, for a warehouse name and the variable named after it.
fn identifier(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_string();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("dbt_{out}")
    } else {
        out
    }
}

/// A role name from an owner: an email's local part, else the words joined by `-`.
fn role_of(owner: &str) -> String {
    // "Finance Team <finance@x.io>": the name, as people call the team.
    let name = owner.split('<').next().unwrap_or(owner).trim();
    let name = if name.is_empty() { owner } else { name };
    let name = match name.split_once('@') {
        Some((local, _)) if !name.contains(' ') => local,
        _ => name,
    };
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "owner".to_string()
    } else {
        out
    }
}

/// Text from the project in a comment: one line, whatever it holds (a newline in an
/// owner's name must not start a line of TOML).
fn c(text: &str) -> String {
    crate::sanitize::for_terminal(text).into_owned()
}

/// A TOML basic string.
pub fn quote(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// A TOML key: bare where it can be.
fn key(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        text.to_string()
    } else {
        quote(text)
    }
}

fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| quote(i)).collect();
    format!("[{}]", quoted.join(", "))
}

fn header(out: &mut String, inputs: &Inputs) {
    let Inputs {
        project, target, ..
    } = inputs;
    let _ = writeln!(
        out,
        "# dataward config, written by `dataward init` from the dbt project {:?}\n\
         # ({}), profile {:?}, target {:?} ({}).\n\
         #\n\
         # Yours to edit: a later `dataward init` writes its version beside this file (as\n\
         # FILE.new) and shows the difference; it never overwrites this one. Every key is\n\
         # explained in config.example.toml. `dataward doctor --config FILE` checks that\n\
         # everything named here can be reached and read.\n\
         #\n\
         # Monitors poll every 5m (add `every = \"1h\"` to one to poll it less often).\n",
        project.name,
        c(&project.dir.display().to_string()),
        target.profile,
        target.name,
        c(&target.file.display().to_string()),
    );
}

/// A plain column name (what a monitor reads), not an expression.
fn is_column_name(text: &str) -> bool {
    let text = text.trim();
    let bare = text.trim_matches('"');
    !bare.is_empty()
        && !bare.starts_with(|c: char| c.is_ascii_digit())
        && bare
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        && (text == bare || (text.starts_with('"') && text.ends_with('"') && text.len() > 2))
}

/// Does a catalog type hold a time (or a date)?
fn is_time_type(data_type: &str) -> bool {
    let t = data_type.to_ascii_lowercase();
    t.contains("timestamp") || t == "date" || t.starts_with("datetime")
}

/// Why a column cannot be a monitor's timestamp column, or `None` when it can.
fn unusable_column(column: &str, columns: Option<&[CatalogColumn]>, role: &str) -> Option<String> {
    if !is_column_name(column) {
        return Some(format!(
            "its {role} {column:?} is an expression; a monitor reads a column"
        ));
    }
    let columns = columns?;
    let bare = column.trim().trim_matches('"');
    match columns.iter().find(|c| c.name.eq_ignore_ascii_case(bare)) {
        None => Some(format!(
            "its {role} {bare:?} is not a column of the table (catalog.json)"
        )),
        Some(found) if !is_time_type(&found.data_type) => Some(format!(
            "its {role} {bare:?} is {}, not a timestamp (catalog.json)",
            found.data_type
        )),
        Some(_) => None,
    }
}

fn monitor(
    table: &TableNode,
    schema: &str,
    artifacts: &Artifacts,
    skipped: &mut Vec<String>,
) -> Monitor {
    let what = describe(table);
    let columns = artifacts.columns_of(&table.unique_id);
    let mut monitor = Monitor {
        name: match (&table.kind, &table.source_name) {
            (TableKind::Source, Some(source)) => format!("{source}.{}", table.name),
            _ => table.name.clone(),
        },
        unique_id: table.unique_id.clone(),
        table: format!("{schema}.{}", table.identifier),
        checks: vec!["row_count", "schema"],
        timestamp_column: None,
        warn_after: None,
        error_after: None,
        null_columns: BTreeMap::new(),
        notes: Vec::new(),
    };
    match table.kind {
        TableKind::Source => match (&table.loaded_at_field, table.loaded_at_query) {
            (None, true) => skipped.push(format!(
                "{what}: its freshness is a query (loaded_at_query), and dataward reads a column: row count and schema only"
            )),
            (None, false) => skipped.push(format!(
                "{what}: no loaded_at_field, so no freshness or volume check: row count and schema only \
                 (add loaded_at_field in dbt, or timestamp_column here)"
            )),
            (Some(field), _) => match unusable_column(field, columns, "loaded_at_field") {
                Some(why) => skipped.push(format!(
                    "{what}: {why}: no freshness or volume check"
                )),
                None => {
                    let column = field.trim().trim_matches('"').to_string();
                    monitor.timestamp_column = Some((column.clone(), "dbt's loaded_at_field"));
                    match &table.freshness {
                        Freshness::Off => {
                            skipped.push(format!(
                                "{what}: `freshness: null` in dbt turns freshness off: no freshness check (volume still reads {column})"
                            ));
                            monitor.checks.push("volume");
                        }
                        Freshness::Absent => {
                            monitor.checks.extend(["freshness", "volume"]);
                            monitor.notes.push(
                                "no freshness block in dbt: freshness learns the table's own cadence"
                                    .to_string(),
                            );
                        }
                        Freshness::Block {
                            warn_after,
                            error_after,
                            filter,
                        } => {
                            monitor.checks.extend(["freshness", "volume"]);
                            monitor.warn_after = warn_after.clone();
                            monitor.error_after = error_after.clone();
                            if let Some(filter) = filter {
                                monitor.notes.push(format!(
                                    "dbt's freshness filter ({filter}) is not applied: freshness reads every row"
                                ));
                            }
                        }
                    }
                }
            },
        },
        TableKind::Model if table.incremental_strategy.as_deref() == Some("microbatch") => {
            match &table.event_time {
                None => skipped.push(format!(
                    "{what}: a microbatch model without event_time: row count and schema only"
                )),
                Some(column) => match unusable_column(column, columns, "event_time") {
                    Some(why) => skipped.push(format!("{what}: {why}: no volume check")),
                    None => {
                        let column = column.trim().trim_matches('"').to_string();
                        monitor.checks.push("volume");
                        monitor.timestamp_column =
                            Some((column, "the microbatch model's event_time"));
                    }
                },
            }
        }
        _ => {}
    }
    monitor
}

/// Watches the null rate of every column a dbt `not_null` or `relationships` test
/// names: on the tested table when it is watched, and on the source column a model
/// (through other models) passes on to it unchanged, so a null spike in a load is
/// seen where it lands, before the test fails on a table built from it.
fn watch_tested_columns(monitors: &mut [Monitor], artifacts: &Artifacts) {
    let dialect = Dialect::from_adapter_type(artifacts.adapter_type.as_deref());
    let table = |unique_id: &str| artifacts.tables.iter().find(|t| t.unique_id == unique_id);
    for ColumnTest { test, node, column } in &artifacts.column_tests {
        let Some(tested) = table(node) else { continue };
        if !is_column_name(column) {
            continue;
        }
        let column = column.trim().trim_matches('"').to_string();
        let named_by = format!("dbt's {test} test on {}.{column}", tested.name);
        if let Some(m) = monitors
            .iter_mut()
            .find(|m| m.unique_id == tested.unique_id)
        {
            watch_nulls(m, &column, named_by.clone());
        }
        // Back through the models that pass the column on as it is, to a source.
        let (mut at, mut name) = (tested, column);
        let mut path = Vec::new();
        while at.kind == TableKind::Model && path.len() < 32 {
            let Some(passed) = at
                .raw_sql
                .as_deref()
                .and_then(|sql| passed_through(sql, &name, dialect))
            else {
                break;
            };
            let Some(from) = relation_named(&artifacts.tables, &passed.relation) else {
                break;
            };
            path.push(if passed.column == name {
                format!("{} reads {name}", at.name)
            } else {
                format!("{}: {} as {name}", at.name, passed.column)
            });
            (at, name) = (from, passed.column);
        }
        if at.kind == TableKind::Source && !path.is_empty() {
            if let Some(m) = monitors.iter_mut().find(|m| m.unique_id == at.unique_id) {
                let why = format!("{named_by} reads it straight through ({})", path.join("; "));
                watch_nulls(m, &name, why);
            }
        }
    }
}

fn watch_nulls(monitor: &mut Monitor, column: &str, why: String) {
    if !monitor.checks.contains(&"null_rate") {
        monitor.checks.push("null_rate");
    }
    let reasons = monitor.null_columns.entry(column.to_string()).or_default();
    if !reasons.contains(&why) {
        reasons.push(why);
    }
}

/// The table a `ref('x')` or `source('s', 't')` call (as written in `{{ }}`) names.
fn relation_named<'a>(tables: &'a [TableNode], call: &str) -> Option<&'a TableNode> {
    let (function, args) = call.split_once('(')?;
    let args: Vec<&str> = args
        .trim_end()
        .strip_suffix(')')?
        .split(',')
        .map(|a| a.trim().trim_matches(|c| c == '\'' || c == '"'))
        .collect();
    let mut found = tables
        .iter()
        .filter(|t| match (function.trim(), args.as_slice()) {
            ("ref", [.., name]) => t.kind != TableKind::Source && t.name == *name,
            ("source", [source, name]) => {
                t.kind == TableKind::Source
                    && t.source_name.as_deref() == Some(*source)
                    && t.name == *name
            }
            _ => false,
        });
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// Names as people say them (`raw.orders`, `fct_orders`); where two would meet, both
/// take their unique_id instead.
fn name_monitors(monitors: &mut [Monitor]) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for m in monitors.iter() {
        *seen.entry(m.name.to_ascii_lowercase()).or_default() += 1;
    }
    for m in monitors.iter_mut() {
        if seen[&m.name.to_ascii_lowercase()] > 1 {
            m.name = m.unique_id.clone();
        }
    }
}

fn write_monitors(out: &mut String, monitors: &[Monitor], warehouse: &str, commented: bool) {
    let sources = monitors
        .iter()
        .filter(|m| m.unique_id.starts_with("source."))
        .count();
    let _ = writeln!(
        out,
        "# Monitors: {} dbt source{} (row count, schema; freshness and volume on the\n\
         # loaded_at_field, with dbt's warn_after and error_after), and {} table{} dbt\n\
         # builds (row count, schema; volume on a microbatch model's event_time). Null\n\
         # rates on the columns dbt's not_null and relationships tests name, and on the\n\
         # source columns models pass on to them unchanged.{}\n",
        sources,
        plural(sources),
        monitors.len() - sources,
        plural(monitors.len() - sources),
        if commented {
            "\n# Commented out until the warehouse can be watched."
        } else {
            ""
        }
    );
    let prefix = if commented { "# " } else { "" };
    for m in monitors {
        let mut block = String::new();
        let _ = writeln!(block, "[[monitor]]");
        let _ = writeln!(block, "name = {:<32} # {}", quote(&m.name), c(&m.unique_id));
        let _ = writeln!(block, "warehouse = {}", quote(warehouse));
        let _ = writeln!(block, "table = {}", quote(&m.table));
        let checks: Vec<String> = m.checks.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(block, "checks = {}", list(&checks));
        if let Some((column, from)) = &m.timestamp_column {
            let _ = writeln!(block, "timestamp_column = {:<20} # {from}", quote(column));
        }
        if let Some(warn) = &m.warn_after {
            let _ = writeln!(
                block,
                "warn_after = {:<26} # dbt's freshness warn_after",
                quote(warn)
            );
        }
        if let Some(error) = &m.error_after {
            let _ = writeln!(
                block,
                "error_after = {:<25} # dbt's freshness error_after",
                quote(error)
            );
        }
        if !m.null_columns.is_empty() {
            let columns: Vec<String> = m.null_columns.keys().cloned().collect();
            let _ = writeln!(block, "null_columns = {}", list(&columns));
            for (column, reasons) in &m.null_columns {
                for why in reasons {
                    let _ = writeln!(block, "# null_rate({}): {}", c(column), c(why));
                }
            }
            if m.timestamp_column.is_none() {
                let _ = writeln!(
                    block,
                    "# null_rate reads the whole table (no timestamp_column): a bad load shows\n\
                     # diluted by every older row; set timestamp_column to measure recent rows"
                );
            }
        }
        for note in &m.notes {
            let _ = writeln!(block, "# {}", c(note));
        }
        for line in block.lines() {
            let _ = writeln!(out, "{prefix}{line}");
        }
        out.push('\n');
    }
}

fn lineage_block(out: &mut String, inputs: &Inputs) {
    let artifacts = inputs.artifacts;
    let _ = writeln!(
        out,
        "# dbt's artifacts (read, never run) and the team's context notes.\n[lineage]"
    );
    let _ = writeln!(
        out,
        "manifest = {}",
        quote(&artifacts.manifest.display().to_string())
    );
    match &artifacts.catalog {
        Some(catalog) => {
            let _ = writeln!(out, "catalog = {}", quote(&catalog.display().to_string()));
        }
        None => {
            let _ = writeln!(
                out,
                "# catalog = {}   # `dbt docs generate` makes it: column types",
                quote(
                    &inputs
                        .project
                        .target_path
                        .join("catalog.json")
                        .display()
                        .to_string()
                )
            );
        }
    }
    let _ = writeln!(out, "notes = {}", quote(inputs.notes_name));
    let _ = writeln!(
        out,
        "project_dir = {}",
        quote(&inputs.project.dir.display().to_string())
    );
    match &artifacts.run_results {
        Some(path) => {
            let _ = writeln!(out, "run_results = {}", quote(&path.display().to_string()));
        }
        None => {
            let _ = writeln!(
                out,
                "# run_results = {}   # after a dbt run: a model it could not build below an open incident joins it",
                quote(
                    &inputs
                        .project
                        .target_path
                        .join("run_results.json")
                        .display()
                        .to_string()
                )
            );
        }
    }
    out.push('\n');
}

fn orchestrator_block(out: &mut String, inputs: &Inputs) {
    let profiles_dir = inputs
        .target
        .file
        .parent()
        .unwrap_or(Path::new("."))
        .display()
        .to_string();
    let _ = writeln!(
        out,
        "# Runs and holds: with no [orchestrator], dataward proposes and the owner runs.\n\
         # To let dataward run approved dbt commands itself in the project (see README,\n\
         # Orchestrators), uncomment and map each job id of notes.toml to its command:\n\
         # [orchestrator]\n\
         # kind = \"dbt_core\"\n\
         # project_dir = {}\n\
         # profiles_dir = {}\n\
         # target = {}\n\
         # [orchestrator.jobs]\n\
         # \"job.dbt_build\" = \"dbt build\"\n",
        quote(&inputs.project.dir.display().to_string()),
        quote(&profiles_dir),
        quote(&inputs.target.name),
    );
}

/// A domain: who owns a part of the project.
struct Domain {
    name: String,
    /// Where it comes from, for the comment.
    from: String,
    role: String,
    covers: BTreeSet<String>,
}

/// Domains from dbt's groups (a model's group, the group's owner), then from owners
/// (`meta.owner` of models and sources, an exposure's `owner`), then one for the rest.
fn domains(inputs: &Inputs, monitors: &[Monitor]) -> Vec<Domain> {
    let artifacts = inputs.artifacts;
    let table_of: BTreeMap<&str, &str> = monitors
        .iter()
        .map(|m| (m.unique_id.as_str(), m.table.as_str()))
        .collect();
    let mut by_group: BTreeMap<String, Domain> = BTreeMap::new();
    let mut by_owner: BTreeMap<String, Domain> = BTreeMap::new();
    let add = |domain: &mut Domain, unique_id: &str| {
        domain.covers.insert(unique_id.to_string());
        if let Some(table) = table_of.get(unique_id) {
            domain.covers.insert(table.to_string());
        }
    };
    let owner_domain = |owner: &str, by_owner: &mut BTreeMap<String, Domain>| {
        let role = role_of(owner);
        by_owner
            .entry(role.clone())
            .or_insert_with(|| Domain {
                name: role.clone(),
                from: format!("owner {owner}"),
                role,
                covers: BTreeSet::new(),
            })
            .name
            .clone()
    };
    for table in &artifacts.tables {
        if let Some(group) = &table.group {
            let owner = artifacts.groups.get(group).cloned().flatten();
            let domain = by_group.entry(group.clone()).or_insert_with(|| Domain {
                name: identifier(group),
                from: match &owner {
                    Some(owner) => format!("dbt group {group}, owned by {owner}"),
                    None => format!("dbt group {group}"),
                },
                role: owner.as_deref().map_or_else(|| role_of(group), role_of),
                covers: BTreeSet::new(),
            });
            add(domain, &table.unique_id);
        } else if let Some(owner) = &table.owner {
            let key = owner_domain(owner, &mut by_owner);
            let domain = by_owner.get_mut(&key).expect("just made");
            add(domain, &table.unique_id);
        }
    }
    for exposure in &artifacts.exposures {
        if let Some(owner) = &exposure.owner {
            // An exposure its group's owner owns is that group's.
            let group = artifacts
                .groups
                .iter()
                .find(|(_, o)| o.as_deref() == Some(owner.as_str()))
                .and_then(|(group, _)| by_group.get_mut(group));
            if let Some(domain) = group {
                domain.covers.insert(exposure.unique_id.clone());
                continue;
            }
            let key = owner_domain(owner, &mut by_owner);
            let domain = by_owner.get_mut(&key).expect("just made");
            domain.covers.insert(exposure.unique_id.clone());
        }
    }
    let mut domains: Vec<Domain> = by_group.into_values().collect();
    let taken: BTreeSet<String> = domains.iter().map(|d| d.name.clone()).collect();
    for mut domain in by_owner.into_values() {
        if taken.contains(&domain.name) {
            domain.name = format!("{}-owned", domain.name);
        }
        domains.push(domain);
    }
    let project = identifier(&inputs.project.name);
    domains.push(Domain {
        name: project.clone(),
        from: "everything no domain above covers".to_string(),
        role: format!("{project}-owner"),
        covers: ["*".to_string()].into(),
    });
    domains
}

fn people_and_domains(out: &mut String, inputs: &Inputs, domains: &[Domain]) {
    let roles: BTreeSet<&str> = domains.iter().map(|d| d.role.as_str()).collect();
    let roles: Vec<String> = roles.into_iter().map(str::to_string).collect();
    match &inputs.account {
        Some(account) => {
            let _ = writeln!(
                out,
                "# People: unix accounts (as the kernel attests them, never $USER) and their\n\
                 # roles. To start, the account that ran `dataward init` holds every role below;\n\
                 # add each owner's account and give the roles to the people they name.\n\
                 [people.{}]\n\
                 name = {}\n\
                 roles = {}\n",
                key(account),
                quote(account),
                list(&roles)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "# People: unix accounts and their roles. The account running `dataward init`\n\
                 # has no name in the password database; add yours:\n\
                 # [people.ACCOUNT]\n\
                 # name = \"Your Name\"\n\
                 # roles = {}\n",
                list(&roles)
            );
        }
    }
    let _ = writeln!(
        out,
        "# Domains: who approves what, from dbt's groups and owners. The first domain whose\n\
         # covers match a table or dbt node is its domain. L2: dataward proposes, the owner\n\
         # approves and runs (config.example.toml explains L0 to L4).\n"
    );
    for domain in domains {
        let covers: Vec<String> = domain.covers.iter().cloned().collect();
        let _ = writeln!(
            out,
            "[[domain]]\nname = {}\n# {}\ncovers = {}\nowners = {}\nautonomy = \"L2\"\n",
            quote(&domain.name),
            c(&domain.from),
            if covers.len() > 3 {
                format!(
                    "[\n{}]",
                    covers
                        .iter()
                        .map(|c| format!("  {},\n", quote(c)))
                        .collect::<String>()
                )
            } else {
                list(&covers)
            },
            list(std::slice::from_ref(&domain.role)),
        );
    }
}

/// The notes file: the exposures dbt knows, and commented examples of what it does not.
fn notes(inputs: &Inputs) -> String {
    let artifacts = inputs.artifacts;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# dataward context notes for the dbt project {:?}: what the team knows that dbt\n\
         # does not. Written by `dataward init`; yours to edit (a later init writes its\n\
         # version beside this file). The format is in config.example.toml.\n",
        inputs.project.name
    );
    if artifacts.exposures.is_empty() {
        let _ = writeln!(
            out,
            "# The manifest has no exposures: every dashboard, sync and job that reads the\n\
             # warehouse is only known if it is written here.\n"
        );
    } else {
        let _ = writeln!(
            out,
            "# Exposures dbt already knows (the blast radius reaches them; nothing to add):"
        );
        for e in &artifacts.exposures {
            let reads: Vec<&str> = e
                .depends_on
                .iter()
                .map(|id| id.rsplit('.').next().unwrap_or(id))
                .collect();
            let mut line = format!(
                "{} ({}) reads {}",
                e.unique_id,
                e.kind.as_deref().unwrap_or("exposure"),
                if reads.is_empty() {
                    "nothing listed".to_string()
                } else {
                    reads.join(", ")
                }
            );
            if let Some(owner) = &e.owner {
                let _ = write!(line, "; owner {owner}");
            }
            if let Some(url) = &e.url {
                let _ = write!(line, "; {url}");
            }
            let _ = write!(out, "#   {}", c(&line));
            out.push('\n');
        }
        out.push('\n');
    }
    let example_model = artifacts
        .tables
        .iter()
        .find(|t| {
            t.kind == TableKind::Model
                && matches!(t.materialized.as_deref(), Some("table" | "incremental"))
        })
        .map_or_else(
            || format!("model.{}.MODEL", inputs.project.name),
            |t| t.unique_id.clone(),
        );
    let example_source = artifacts
        .tables
        .iter()
        .find(|t| t.kind == TableKind::Source)
        .map_or_else(|| "SCHEMA.TABLE".to_string(), |t| t.unique_id.clone());
    let _ = writeln!(
        out,
        "# Dashboards, notebooks and syncs dbt does not know: uncomment and edit.\n\
         # [[reader]]\n\
         # id = \"dashboard.example\"\n\
         # kind = \"dashboard\"                 # dashboard | notebook | sync | job\n\
         # name = \"Example dashboard\"\n\
         # reads = [{}]\n\
         # owner = \"analytics-owner\"\n\
         #\n\
         # The scheduled jobs that run dbt (a hold pauses them; with [orchestrator.jobs]\n\
         # in the config, dataward can run them):\n\
         # [[reader]]\n\
         # id = \"job.dbt_build\"\n\
         # kind = \"job\"\n\
         # name = \"nightly dbt build\"\n\
         # reads = [{}]\n\
         # schedule = \"0 2 * * *\"\n\
         #\n\
         # The systems that load the sources (a CDC mover, an ingestion tool), so the\n\
         # diagnosis knows a table's writer:\n\
         # [[writer]]\n\
         # id = \"loader.example\"\n\
         # name = \"example loader\"\n\
         # writes = [{}]\n\
         # owner = \"platform-owner\"",
        quote(&example_model),
        quote(&example_model),
        quote(&example_source),
    );
    out
}

#[cfg(test)]
mod tests;
