//! What `init` needs from dbt's artifacts: every table dbt knows (sources with their
//! `loaded_at_field` and `freshness:` block, models with their materialization and
//! microbatch `event_time`), owners and groups, and the exposures.
//!
//! The manifest is read once; the same text also goes through the lineage reader the
//! engine uses ([`Lineage::from_json`]), so a manifest `init` accepts is one the engine
//! accepts, and a bad one is reported with its JSON path. Column types come from
//! catalog.json when there is one. Nothing is run.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;
use serde_json::Value;

use super::project::DbtProject;
use crate::lineage::{CatalogColumn, Lineage};
use crate::progress::bytes_told;

/// The artifacts read, and what they hold.
pub struct Artifacts {
    pub manifest: PathBuf,
    pub catalog: Option<PathBuf>,
    pub run_results: Option<PathBuf>,
    /// `metadata.adapter_type`.
    pub adapter_type: Option<String>,
    pub tables: Vec<TableNode>,
    pub exposures: Vec<Exposure>,
    /// dbt's `not_null` and `relationships` tests, each on the column it names.
    pub column_tests: Vec<ColumnTest>,
    /// Group name -> its owner, as people read it.
    pub groups: BTreeMap<String, Option<String>>,
    /// Column types by unique_id, from the catalog.
    pub columns: HashMap<String, Vec<CatalogColumn>>,
    /// The manifest's size in bytes and how long reading it took.
    pub manifest_bytes: u64,
    pub read_time: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TableKind {
    Source,
    Model,
    Snapshot,
    Seed,
}

/// A source, model, snapshot or seed.
#[derive(Debug, Clone)]
pub struct TableNode {
    pub unique_id: String,
    pub kind: TableKind,
    pub name: String,
    /// A source's source name (`raw` of `source('raw', 'orders')`).
    pub source_name: Option<String>,
    pub database: Option<String>,
    pub schema: Option<String>,
    /// The table's name in the warehouse (alias, identifier, or name).
    pub identifier: String,
    pub materialized: Option<String>,
    pub incremental_strategy: Option<String>,
    pub event_time: Option<String>,
    pub loaded_at_field: Option<String>,
    /// dbt 1.10's `loaded_at_query`: freshness from a query, not a column.
    pub loaded_at_query: bool,
    pub freshness: Freshness,
    pub owner: Option<String>,
    pub group: Option<String>,
    /// A model's SQL as written (Jinja unrendered).
    pub raw_sql: Option<String>,
}

/// A dbt test that fails on a null in a column (`not_null`), or names one a null would
/// break (`relationships`).
#[derive(Debug, Clone)]
pub struct ColumnTest {
    /// `not_null` or `relationships`.
    pub test: String,
    /// The node tested (a source or model's unique_id).
    pub node: String,
    pub column: String,
}

/// A source's `freshness:` block, as dbt resolved it for the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// Not given at all.
    Absent,
    /// `freshness: null`: freshness turned off for the table.
    Off,
    Block {
        /// As dataward durations ("6h", "1d").
        warn_after: Option<String>,
        error_after: Option<String>,
        /// dbt's `filter`, which dataward does not apply.
        filter: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub struct Exposure {
    pub unique_id: String,
    pub name: String,
    pub kind: Option<String>,
    pub owner: Option<String>,
    pub url: Option<String>,
    pub depends_on: Vec<String>,
}

#[derive(Deserialize)]
struct RawManifest {
    metadata: RawMetadata,
    nodes: BTreeMap<String, RawNode>,
    #[serde(default)]
    sources: BTreeMap<String, RawNode>,
    #[serde(default)]
    exposures: BTreeMap<String, RawExposure>,
    #[serde(default)]
    groups: Option<BTreeMap<String, RawGroup>>,
}

#[derive(Deserialize)]
struct RawMetadata {
    project_name: Option<String>,
    adapter_type: Option<String>,
}

#[derive(Deserialize)]
struct RawNode {
    resource_type: Option<String>,
    name: Option<String>,
    package_name: Option<String>,
    source_name: Option<String>,
    database: Option<String>,
    schema: Option<String>,
    alias: Option<String>,
    identifier: Option<String>,
    loaded_at_field: Option<String>,
    loaded_at_query: Option<Value>,
    /// Absent, null (turned off) or a block: `Option<Option<..>>` tells them apart.
    #[serde(default, deserialize_with = "present")]
    freshness: Option<Option<Value>>,
    meta: Option<Value>,
    source_meta: Option<Value>,
    group: Option<String>,
    config: Option<RawConfig>,
    raw_code: Option<String>,
    /// Before dbt 1.3 the SQL as written was `raw_sql`.
    raw_sql: Option<String>,
    test_metadata: Option<RawTestMetadata>,
    attached_node: Option<String>,
    depends_on: Option<RawDependsOn>,
}

#[derive(Deserialize)]
struct RawTestMetadata {
    name: Option<String>,
    #[serde(default)]
    kwargs: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct RawConfig {
    materialized: Option<String>,
    incremental_strategy: Option<String>,
    event_time: Option<Value>,
    meta: Option<Value>,
    group: Option<String>,
    loaded_at_field: Option<String>,
    #[serde(default, deserialize_with = "present")]
    freshness: Option<Option<Value>>,
}

#[derive(Deserialize)]
struct RawExposure {
    name: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    owner: Option<Value>,
    url: Option<String>,
    depends_on: Option<RawDependsOn>,
}

#[derive(Deserialize)]
struct RawDependsOn {
    nodes: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct RawGroup {
    name: Option<String>,
    owner: Option<Value>,
}

/// A field that is present (even as null) is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<Value>>, D::Error> {
    Option::<Value>::deserialize(d).map(Some)
}

impl Artifacts {
    /// Reads `target/manifest.json` (and catalog.json, run_results.json when there)
    /// of `project`, and checks the manifest is that project's. `progress` is told how
    /// far the manifest's loading got, once it has taken a second, then once a second.
    pub fn read(project: &DbtProject, progress: &mut dyn FnMut(&str)) -> Result<Artifacts> {
        let manifest = project.target_path.join("manifest.json");
        let shown = manifest.display().to_string();
        let started = Instant::now();
        super::project::check_within(&manifest, &project.dir)?;
        let text = match std::fs::read_to_string(&manifest) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{shown} does not exist: dataward reads what dbt already wrote and runs nothing. \
                 Make it with `dbt parse` in {} (any dbt build, run or compile writes it too); \
                 `dbt docs generate` also writes catalog.json, the column types",
                project.dir.display()
            ),
            Err(e) => bail!("{shown}: cannot read it: {e}"),
        };
        let manifest_bytes = text.len() as u64;
        // The engine's reader first: it names the JSON path of anything it cannot use.
        // A load that takes over a second says how far it got.
        let mut told = bytes_told(&format!("loading {shown}"), Instant::now, |line| {
            progress(line)
        });
        let lineage =
            Lineage::from_json_telling(&text, &shown, &mut told).map_err(|e| anyhow!("{e}"))?;
        drop(told);
        let raw: RawManifest = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{shown}: not a dbt manifest dataward can read: {e}"))?;
        drop(text);
        check_project(&raw, project, &shown)?;

        let catalog = Some(project.target_path.join("catalog.json")).filter(|p| p.is_file());
        if let Some(catalog) = &catalog {
            super::project::check_within(catalog, &project.dir)?;
        }
        let lineage = match &catalog {
            Some(path) => lineage.with_catalog(path).map_err(|e| anyhow!("{e}"))?,
            None => lineage,
        };
        let run_results =
            Some(project.target_path.join("run_results.json")).filter(|p| p.is_file());

        let groups: BTreeMap<String, Option<String>> = raw
            .groups
            .unwrap_or_default()
            .into_values()
            .filter_map(|g| Some((g.name?, g.owner.as_ref().and_then(owner_text))))
            .collect();
        let mut tables = Vec::new();
        let mut column_tests = Vec::new();
        for (unique_id, node) in raw.nodes.into_iter().chain(raw.sources) {
            if let Some(test) = column_test(&node) {
                column_tests.push(test);
                continue;
            }
            if let Some(table) = table_node(unique_id, node) {
                tables.push(table);
            }
        }
        tables.sort_by(|a, b| (a.kind, &a.unique_id).cmp(&(b.kind, &b.unique_id)));
        let mut columns = HashMap::new();
        for table in &tables {
            if let Ok(index) = lineage.resolve(&table.unique_id) {
                let node = lineage.node(index);
                if node.unique_id == table.unique_id && !node.columns.is_empty() {
                    columns.insert(table.unique_id.clone(), node.columns.clone());
                }
            }
        }
        let exposures = raw
            .exposures
            .into_iter()
            .map(|(unique_id, e)| Exposure {
                name: e.name.unwrap_or_else(|| unique_id.clone()),
                unique_id,
                kind: e.kind,
                owner: e.owner.as_ref().and_then(owner_text),
                url: e.url,
                depends_on: e.depends_on.and_then(|d| d.nodes).unwrap_or_default(),
            })
            .collect();
        let read_time = started.elapsed();
        Ok(Artifacts {
            manifest,
            catalog,
            run_results,
            adapter_type: raw.metadata.adapter_type,
            tables,
            exposures,
            column_tests,
            groups,
            columns,
            manifest_bytes,
            read_time,
        })
    }

    /// The catalog's columns of a table, if the catalog lists it.
    pub fn columns_of(&self, unique_id: &str) -> Option<&[CatalogColumn]> {
        self.columns.get(unique_id).map(Vec::as_slice)
    }
}

/// A manifest written for another project would fill the config with its tables.
fn check_project(raw: &RawManifest, project: &DbtProject, file: &str) -> Result<()> {
    let belongs = match &raw.metadata.project_name {
        Some(name) => *name == project.name,
        // Before dbt 1.6 the metadata did not name the project: its own nodes do.
        None => raw
            .nodes
            .values()
            .chain(raw.sources.values())
            .any(|n| n.package_name.as_deref() == Some(project.name.as_str())),
    };
    if belongs {
        return Ok(());
    }
    let theirs = match &raw.metadata.project_name {
        Some(name) => format!("project {name:?}"),
        None => "another project (none of its nodes is in this package)".to_string(),
    };
    bail!(
        "{file} was written for {theirs}, not for {:?} ({}): run `dbt parse` in {} to make this project's",
        project.name,
        project.dir.join("dbt_project.yml").display(),
        project.dir.display()
    )
}

fn table_node(unique_id: String, node: RawNode) -> Option<TableNode> {
    let resource_type = node
        .resource_type
        .clone()
        .unwrap_or_else(|| unique_id.split('.').next().unwrap_or("").to_string());
    let kind = match resource_type.as_str() {
        "source" => TableKind::Source,
        "model" => TableKind::Model,
        "snapshot" => TableKind::Snapshot,
        "seed" => TableKind::Seed,
        _ => return None,
    };
    let name = node.name.clone().unwrap_or_else(|| {
        unique_id
            .rsplit('.')
            .next()
            .unwrap_or(&unique_id)
            .to_string()
    });
    let config = node.config.as_ref();
    let identifier = node
        .alias
        .clone()
        .or(node.identifier.clone())
        .unwrap_or_else(|| name.clone());
    let freshness = match node
        .freshness
        .clone()
        .or_else(|| config.and_then(|c| c.freshness.clone()))
    {
        None => Freshness::Absent,
        Some(None) | Some(Some(Value::Null)) => Freshness::Off,
        Some(Some(block)) => freshness_block(&block),
    };
    let owner = [
        config.and_then(|c| c.meta.as_ref()),
        node.meta.as_ref(),
        node.source_meta.as_ref(),
    ]
    .into_iter()
    .flatten()
    .find_map(|meta| meta.get("owner").and_then(owner_text));
    Some(TableNode {
        kind,
        name,
        source_name: node.source_name,
        database: node.database,
        schema: node.schema,
        identifier,
        materialized: config.and_then(|c| c.materialized.clone()),
        incremental_strategy: config.and_then(|c| c.incremental_strategy.clone()),
        event_time: config
            .and_then(|c| c.event_time.as_ref())
            .and_then(Value::as_str)
            .map(str::to_string),
        loaded_at_field: node
            .loaded_at_field
            .or_else(|| config.and_then(|c| c.loaded_at_field.clone()))
            .filter(|f| !f.trim().is_empty()),
        loaded_at_query: node
            .loaded_at_query
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|q| !q.trim().is_empty()),
        freshness,
        owner,
        group: node.group.or_else(|| config.and_then(|c| c.group.clone())),
        raw_sql: node.raw_code.or(node.raw_sql),
        unique_id,
    })
}

/// A `not_null` or `relationships` test of one column, and the node it tests: its
/// `attached_node`, else (a source's test, or an older manifest) the one node it
/// depends on other than a relationships test's `to`.
fn column_test(node: &RawNode) -> Option<ColumnTest> {
    if node.resource_type.as_deref() != Some("test") {
        return None;
    }
    let metadata = node.test_metadata.as_ref()?;
    let test = metadata.name.as_deref()?;
    if !matches!(test, "not_null" | "relationships") {
        return None;
    }
    let column = metadata.kwargs.get("column_name")?.as_str()?.to_string();
    let tested = node.attached_node.clone().or_else(|| {
        let model = metadata.kwargs.get("model").and_then(Value::as_str)?;
        let depends: Vec<&String> = node.depends_on.as_ref()?.nodes.as_ref()?.iter().collect();
        // `{{ get_where_subquery(source('raw', 'orders')) }}`: the node whose name ends
        // the call's last argument.
        let called = model.rsplit(['(', ',']).next().unwrap_or(model);
        let name = called.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        let mut matching = depends
            .into_iter()
            .filter(|id| id.rsplit('.').next() == Some(name));
        match (matching.next(), matching.next()) {
            (Some(one), None) => Some(one.clone()),
            _ => None,
        }
    })?;
    Some(ColumnTest {
        test: test.to_string(),
        node: tested,
        column,
    })
}

/// `{"warn_after": {"count": 6, "period": "hour"}, ...}` as durations.
fn freshness_block(block: &Value) -> Freshness {
    let after = |key: &str| -> Option<String> {
        let time = block.get(key)?;
        let count = time.get("count")?.as_u64().filter(|&c| c > 0)?;
        let unit = match time.get("period")?.as_str()? {
            "minute" => "m",
            "hour" => "h",
            "day" => "d",
            _ => return None,
        };
        Some(format!("{count}{unit}"))
    };
    let warn_after = after("warn_after");
    let error_after = after("error_after");
    let filter = block
        .get("filter")
        .and_then(Value::as_str)
        .filter(|f| !f.trim().is_empty())
        .map(str::to_string);
    if warn_after.is_none() && error_after.is_none() && filter.is_none() {
        return Freshness::Absent;
    }
    Freshness::Block {
        warn_after,
        error_after,
        filter,
    }
}

/// An owner as people read it: a string, or dbt's `{name, email}`.
fn owner_text(owner: &Value) -> Option<String> {
    match owner {
        Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_string()),
        Value::Object(fields) => {
            let field = |key: &str| {
                fields
                    .get(key)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
            };
            match (field("name"), field("email")) {
                (Some(name), Some(email)) => Some(format!("{name} <{email}>")),
                (Some(one), None) | (None, Some(one)) => Some(one.to_string()),
                (None, None) => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_blocks_become_durations() {
        let block = serde_json::json!({
            "warn_after": {"count": 6, "period": "hour"},
            "error_after": {"count": 1, "period": "day"},
            "filter": null
        });
        assert_eq!(
            freshness_block(&block),
            Freshness::Block {
                warn_after: Some("6h".into()),
                error_after: Some("1d".into()),
                filter: None
            }
        );
        // dbt writes an empty block as counts of null: no thresholds.
        let empty = serde_json::json!({
            "warn_after": {"count": null, "period": null},
            "error_after": {"count": null, "period": null}
        });
        assert_eq!(freshness_block(&empty), Freshness::Absent);
    }

    #[test]
    fn owners_read_as_people_write_them() {
        assert_eq!(
            owner_text(&serde_json::json!({"name": "Finance", "email": "f@x.io"})).as_deref(),
            Some("Finance <f@x.io>")
        );
        assert_eq!(
            owner_text(&serde_json::json!({"name": null, "email": "f@x.io"})).as_deref(),
            Some("f@x.io")
        );
        assert_eq!(owner_text(&serde_json::json!("  ")), None);
    }
}
