//! Reading a dbt `manifest.json` (schema v7 to v12).
//!
//! The manifest is walked as plain `serde_json::Value` rather than deserialized into
//! structs: dbt adds keys in every release and older schemas lack some, so we read only
//! the fields we need, tolerate everything else, and can name the exact JSON path when
//! a field we do need has the wrong shape.

mod typed;

use serde_json::{Map, Value};

use super::json_fields::{parse_json, quoted, schema_version, FieldReader};
use super::{LineageError, Node, NodeKind, Window};

/// The oldest manifest schema we read. v7 is dbt 1.3; older ones spell too much
/// differently (and dbt itself stopped reading them).
const OLDEST_SCHEMA: u32 = 7;

/// Top-level sections whose entries become graph nodes. `saved_queries`, `unit_tests`
/// and `functions` are not in the brief's list but dbt puts them in `child_map`, so we
/// load them (as `NodeKind::Other`) to keep the graph faithful to the manifest.
const NODE_SECTIONS: &[&str] = &[
    "nodes",
    "sources",
    "exposures",
    "metrics",
    "semantic_models",
    "saved_queries",
    "unit_tests",
    "functions",
];

/// What the graph builder needs from a manifest.
#[derive(Debug, PartialEq)]
pub(crate) struct ManifestContents {
    pub nodes: Vec<Node>,
    /// (parent unique_id, child unique_id), possibly with duplicates; the graph
    /// builder deduplicates.
    pub edges: Vec<(String, String)>,
    /// `metadata.adapter_type`: the warehouse, and so the SQL dialect.
    pub adapter_type: Option<String>,
}

/// The typed reader (`typed`) is several times faster and lighter than walking a
/// `serde_json::Value`, but when it fails it cannot say where in dbt's terms. So it goes
/// first, and on any failure the walker runs and names the file, JSON path and problem
/// (or, where the typed reader was stricter than needed, returns the contents).
#[cfg(test)]
pub(crate) fn parse_manifest(text: &str, file: &str) -> Result<ManifestContents, LineageError> {
    parse_manifest_telling(text, file, &mut |_, _| {})
}

/// [`parse_manifest`], telling `progress` how far into the text the typed reader is
/// (`(bytes read, text length)`). The walker, for a manifest the typed reader gave up
/// on, tells only its end.
pub(crate) fn parse_manifest_telling(
    text: &str,
    file: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ManifestContents, LineageError> {
    if let Some(contents) = typed::parse(text, progress) {
        return Ok(contents);
    }
    let contents = parse_by_walking(text, file)?;
    progress(text.len() as u64, text.len() as u64);
    Ok(contents)
}

/// Reads the manifest as a `serde_json::Value`, checking every field it uses.
fn parse_by_walking(text: &str, file: &str) -> Result<ManifestContents, LineageError> {
    let reader = FieldReader::for_manifest(file);
    let root = parse_json(&reader, text, "a dbt manifest.json")?;
    let root = reader.object(&root, "$", "a JSON object (a dbt manifest)")?;
    check_schema_version(&reader, root)?;
    let adapter_type = match root.get("metadata").and_then(Value::as_object) {
        Some(metadata) => {
            reader.optional_string(metadata, "adapter_type", "$.metadata.adapter_type")?
        }
        None => None,
    };

    let mut contents = ManifestContents {
        nodes: Vec::new(),
        edges: Vec::new(),
        adapter_type,
    };
    for section in NODE_SECTIONS {
        let path = format!("$.{section}");
        let Some(entries) = reader.optional_object(root, section, &path)? else {
            if *section == "nodes" {
                return Err(reader.error(&path, "missing; a manifest must have a nodes object"));
            }
            continue;
        };
        for (unique_id, value) in entries {
            let node_path = format!("{path}[{}]", quoted(unique_id));
            let fields = reader.object(value, &node_path, "an object")?;
            contents
                .nodes
                .push(read_node(&reader, unique_id, fields, &node_path)?);
            let depends_path = format!("{node_path}.depends_on");
            if let Some(depends_on) = reader.optional_object(fields, "depends_on", &depends_path)? {
                let nodes_path = format!("{depends_path}.nodes");
                for parent in reader.optional_strings(depends_on, "nodes", &nodes_path)? {
                    contents.edges.push((parent, unique_id.clone()));
                }
            }
        }
    }

    // child_map and parent_map repeat depends_on in most manifests, but not always
    // (tests attached by dbt, or a hand-edited manifest), so we take the union.
    if let Some(child_map) = reader.optional_object(root, "child_map", "$.child_map")? {
        for (parent, _) in child_map {
            let path = format!("$.child_map[{}]", quoted(parent));
            for child in reader.optional_strings(child_map, parent, &path)? {
                contents.edges.push((parent.clone(), child));
            }
        }
    }
    if let Some(parent_map) = reader.optional_object(root, "parent_map", "$.parent_map")? {
        for (child, _) in parent_map {
            let path = format!("$.parent_map[{}]", quoted(child));
            for parent in reader.optional_strings(parent_map, child, &path)? {
                contents.edges.push((parent, child.clone()));
            }
        }
    }
    Ok(contents)
}

/// `https://schemas.getdbt.com/dbt/manifest/v12.json` -> 12.
fn manifest_schema_version(url: &str) -> Option<u32> {
    let rest = url.split("/manifest/v").nth(1)?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Refuse anything that is not a v7+ manifest, saying what it looks like instead.
fn check_schema_version(
    reader: &FieldReader,
    root: &Map<String, Value>,
) -> Result<(), LineageError> {
    let path = "$.metadata.dbt_schema_version";
    let version_url = schema_version(reader, root, "manifest")?;
    // e.g. https://schemas.getdbt.com/dbt/manifest/v12.json
    let Some(rest) = version_url.split("/manifest/v").nth(1) else {
        return Err(reader.error(
            path,
            format!("expected a dbt manifest schema, found {version_url:?}"),
        ));
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let version: u32 = digits.parse().map_err(|_| {
        reader.error(
            path,
            format!("cannot read a schema version from {version_url:?}"),
        )
    })?;
    if version < OLDEST_SCHEMA {
        return Err(reader.error(
            path,
            format!(
                "manifest schema v{version} is too old; dataward reads v{OLDEST_SCHEMA} to v12 \
                 (dbt 1.3 or newer): regenerate it with a newer dbt"
            ),
        ));
    }
    // Newer schemas are read as well: we only read long-stable fields and tolerate
    // unknown keys, and refusing a fresh manifest in the middle of an incident helps nobody.
    Ok(())
}

fn read_node(
    reader: &FieldReader,
    unique_id: &str,
    fields: &Map<String, Value>,
    path: &str,
) -> Result<Node, LineageError> {
    let field = |key: &str| format!("{path}.{key}");
    let resource_type = reader
        .optional_string(fields, "resource_type", &field("resource_type"))?
        .unwrap_or_else(|| unique_id.split('.').next().unwrap_or("").to_string());
    let kind = NodeKind::from_resource_type(&resource_type);
    let name = reader
        .optional_string(fields, "name", &field("name"))?
        .unwrap_or_else(|| {
            unique_id
                .rsplit('.')
                .next()
                .unwrap_or(unique_id)
                .to_string()
        });

    let config_path = field("config");
    let config = reader.optional_object(fields, "config", &config_path)?;
    let (materialized, incremental_strategy) = match config {
        Some(config) => (
            reader.optional_string(
                config,
                "materialized",
                &format!("{config_path}.materialized"),
            )?,
            reader.optional_string(
                config,
                "incremental_strategy",
                &format!("{config_path}.incremental_strategy"),
            )?,
        ),
        None => (None, None),
    };
    let microbatch = match config {
        Some(config) if incremental_strategy.as_deref() == Some("microbatch") => {
            let key = |k: &str| format!("{config_path}.{k}");
            Some(Window::microbatch(
                reader.optional_string(config, "event_time", &key("event_time"))?,
                reader
                    .optional_string(config, "batch_size", &key("batch_size"))?
                    .as_deref(),
                reader.optional_count(config, "lookback", &key("lookback"))?,
                reader.optional_string(config, "begin", &key("begin"))?,
            ))
        }
        _ => None,
    };

    let owner = if kind == NodeKind::Exposure {
        exposure_owner(reader, fields, &field("owner"))?
    } else {
        meta_owner(config).or_else(|| meta_owner(Some(fields)))
    };

    // Compiled SQL is what actually runs; raw SQL (with Jinja) is the fallback.
    // compiled_sql/raw_sql are the v7-era names.
    let mut sql = None;
    for key in ["compiled_code", "compiled_sql", "raw_code", "raw_sql"] {
        if let Some(text) = reader.optional_string(fields, key, &field(key))? {
            if !text.trim().is_empty() {
                sql = Some(text);
                break;
            }
        }
    }

    let mut raw_sql = None;
    for key in ["raw_code", "raw_sql"] {
        if raw_sql.is_none() {
            raw_sql = reader.optional_string(fields, key, &field(key))?;
        }
    }
    let file =
        reader.optional_string(fields, "original_file_path", &field("original_file_path"))?;
    let window = Window::of_model(materialized.as_deref(), microbatch, raw_sql.as_deref());

    let mut relation_name =
        reader.optional_string(fields, "relation_name", &field("relation_name"))?;
    if relation_name.is_none() && is_relation(kind, materialized.as_deref()) {
        relation_name = build_relation_name(reader, fields, path)?;
    }

    Ok(Node {
        unique_id: unique_id.to_string(),
        name,
        kind,
        resource_type,
        relation_name,
        materialized,
        incremental_strategy,
        window,
        owner,
        sql,
        schedule: None,
        raw_sql,
        file,
        columns: Vec::new(),
        unique_key: unique_key(config.and_then(|c| c.get("unique_key"))),
        unique_test: unique_test(fields.get("test_metadata"), fields.get("column_name")),
        learned: None,
    })
}

/// A model's `unique_key` when it is one column (`"id"` or `["id"]`); a key of several
/// columns identifies no single entity, so it is left out. Read leniently: it is a hint.
pub(super) fn unique_key(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(column) if !column.trim().is_empty() => Some(column.trim().to_string()),
        Value::Array(columns) if columns.len() == 1 => unique_key(columns.first()),
        _ => None,
    }
}

/// The column a generic `unique` test checks: its `column_name`, or the test's
/// `kwargs.column_name`.
pub(super) fn unique_test(metadata: Option<&Value>, column_name: Option<&Value>) -> Option<String> {
    let metadata = metadata?;
    if metadata.get("name").and_then(Value::as_str) != Some("unique") {
        return None;
    }
    column_name
        .and_then(Value::as_str)
        .or_else(|| {
            metadata
                .get("kwargs")
                .and_then(|k| k.get("column_name"))
                .and_then(Value::as_str)
        })
        .map(|c| c.trim_matches('"').to_string())
        .filter(|c| !c.is_empty())
}

/// Only these kinds are tables or views in the warehouse. Tests and ephemeral models
/// have a database and schema in the manifest too, but no relation we could look up.
fn is_relation(kind: NodeKind, materialized: Option<&str>) -> bool {
    match kind {
        NodeKind::Source | NodeKind::Seed | NodeKind::Snapshot => true,
        NodeKind::Model => materialized != Some("ephemeral"),
        _ => false,
    }
}

/// `database.schema.alias` (or identifier, or name), when the manifest did not give one.
fn build_relation_name(
    reader: &FieldReader,
    fields: &Map<String, Value>,
    path: &str,
) -> Result<Option<String>, LineageError> {
    let get = |key: &str| reader.optional_string(fields, key, &format!("{path}.{key}"));
    let database = get("database")?;
    let Some(schema) = get("schema")? else {
        return Ok(None);
    };
    let table = match get("alias")? {
        Some(alias) => alias,
        None => match get("identifier")? {
            Some(identifier) => identifier,
            None => match get("name")? {
                Some(name) => name,
                None => return Ok(None),
            },
        },
    };
    let mut parts: Vec<String> = database.into_iter().collect();
    parts.push(schema);
    parts.push(table);
    Ok(Some(parts.join(".")))
}

/// Exposures carry `owner: {name, email}`; the name is friendlier, the email will do.
fn exposure_owner(
    reader: &FieldReader,
    fields: &Map<String, Value>,
    path: &str,
) -> Result<Option<String>, LineageError> {
    let Some(owner) = reader.optional_object(fields, "owner", path)? else {
        return Ok(None);
    };
    let name = reader.optional_string(owner, "name", &format!("{path}.name"))?;
    let email = reader.optional_string(owner, "email", &format!("{path}.email"))?;
    Ok(name.filter(|n| !n.is_empty()).or(email))
}

/// `meta.owner` is free-form user data, so anything but a non-empty string is ignored
/// rather than refused.
fn meta_owner(fields: Option<&Map<String, Value>>) -> Option<String> {
    let owner = fields?.get("meta")?.get("owner")?.as_str()?;
    (!owner.is_empty()).then(|| owner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineage::{Period, WindowSource, DEFAULT_LOOKBACK};

    fn manifest(nodes: &str) -> String {
        format!(
            r#"{{"metadata": {{"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"}},
                "nodes": {nodes}, "sources": {{}}}}"#
        )
    }

    fn error_text(text: &str) -> String {
        parse_manifest(text, "manifest.json")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn depends_on_as_a_string_names_the_path() {
        let text = manifest(
            r#"{"model.x.a": {"resource_type": "model", "name": "a", "depends_on": {"nodes": "model.x.b"}}}"#,
        );
        assert_eq!(
            error_text(&text),
            r#"manifest.json: $.nodes["model.x.a"].depends_on.nodes: expected an array of strings, found a string"#
        );
    }

    #[test]
    fn old_schema_is_refused() {
        let text = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v1.json"}, "nodes": {}}"#;
        let message = error_text(text);
        assert!(
            message.contains("manifest schema v1 is too old"),
            "{message}"
        );
    }

    #[test]
    fn a_catalog_is_not_a_manifest() {
        let text = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/catalog/v1.json"}, "nodes": {}}"#;
        let message = error_text(text);
        assert!(
            message.contains("expected a dbt manifest schema"),
            "{message}"
        );
    }

    #[test]
    fn empty_and_truncated_files() {
        assert!(error_text("  \n").contains("the file is empty"));
        let message = error_text(r#"{"metadata": {"dbt_schema_ver"#);
        assert!(message.contains("not valid JSON"), "{message}");
        assert!(message.contains("truncated"), "{message}");
    }

    #[test]
    fn fields_fall_back_in_order() {
        let text = manifest(
            r#"{"model.x.a": {"resource_type": "model", "name": "a", "database": "db", "schema": "s",
                 "alias": "a_table", "config": {"materialized": "table", "meta": {"owner": "team-a"}},
                 "compiled_sql": "select 1", "raw_sql": "select {{ 1 }}"},
                "model.x.e": {"resource_type": "model", "name": "e", "database": "db", "schema": "s",
                 "config": {"materialized": "ephemeral"}, "meta": {"owner": "team-e"}, "raw_code": "select 2"}}"#,
        );
        let contents = parse_manifest(&text, "manifest.json").unwrap();
        let a = contents.nodes.iter().find(|n| n.name == "a").unwrap();
        assert_eq!(a.relation_name.as_deref(), Some("db.s.a_table"));
        assert_eq!(a.owner.as_deref(), Some("team-a"));
        assert_eq!(a.sql.as_deref(), Some("select 1"));
        let e = contents.nodes.iter().find(|n| n.name == "e").unwrap();
        assert_eq!(e.relation_name, None, "ephemeral models are not relations");
        assert_eq!(e.owner.as_deref(), Some("team-e"));
        assert_eq!(e.sql.as_deref(), Some("select 2"));
    }

    /// Both readers on one manifest text: the typed one must read it, and the same way.
    fn assert_readers_agree(text: &str, name: &str) {
        let typed = typed::parse(text, &mut |_, _| {})
            .unwrap_or_else(|| panic!("{name}: the typed reader gave up"));
        let walked = parse_by_walking(text, name).unwrap();
        assert_eq!(typed, walked, "{name}");
    }

    #[test]
    fn a_microbatch_models_batches_and_lookback_are_read() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/lineage");
        let text = std::fs::read_to_string(format!("{fixtures}/microbatch_manifest.json")).unwrap();
        let contents = parse_by_walking(&text, "microbatch_manifest.json").unwrap();
        let node = |id: &str| contents.nodes.iter().find(|n| n.unique_id == id).unwrap();
        assert_eq!(
            node("model.shop.fct_daily_events").window,
            Some(Window {
                column: Some("happened_at".into()),
                period: Some(Period::Day),
                lookback: 1,
                source: WindowSource::Microbatch {
                    begin: Some("2024-01-01".into())
                },
            })
        );
        // No lookback in the config: dbt's default.
        let weekly = node("model.shop.fct_weekly").window.clone().unwrap();
        assert_eq!(weekly.lookback, DEFAULT_LOOKBACK);
        assert_eq!(weekly.period, Some(Period::Month));
        // A view with an event_time is not a microbatch model.
        assert_eq!(node("model.shop.stg_events").window, None);
        let bad = text.replace("\"lookback\": 1", "\"lookback\": \"one\"");
        let error = parse_by_walking(&bad, "bad.json").unwrap_err().to_string();
        assert!(error.contains("lookback"), "{error}");
    }

    #[test]
    fn an_incremental_models_filter_is_its_window_and_both_readers_read_it() {
        let text = manifest(
            r#"{"model.x.fct": {"resource_type": "model", "name": "fct",
                 "config": {"materialized": "incremental", "incremental_strategy": "merge"},
                 "raw_code": "select * from {{ ref('stg') }}\n{% if is_incremental() %}\nwhere loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'\n{% endif %}"},
                "model.x.tbl": {"resource_type": "model", "name": "tbl",
                 "config": {"materialized": "table"},
                 "raw_code": "select 1 {% if is_incremental() %} where t >= current_date - 2 {% endif %}"}}"#,
        );
        assert_readers_agree(&text, "filter manifest");
        let contents = parse_by_walking(&text, "m.json").unwrap();
        let node = |name: &str| contents.nodes.iter().find(|n| n.name == name).unwrap();
        let window = node("fct").window.clone().unwrap();
        assert_eq!(window.lookback, 1);
        assert_eq!(window.column.as_deref(), Some("loaded_at"));
        assert_eq!(
            window.source,
            WindowSource::Filter {
                text: "loaded_at >= (select max(loaded_at) from {{ this }}) - interval '1 day'"
                    .into(),
                anchor: crate::lineage::Anchor::NewestRow,
            }
        );
        // Only an incremental model has a window.
        assert_eq!(node("tbl").window, None);
    }

    #[test]
    fn a_models_key_is_its_one_column_unique_key_or_a_unique_test() {
        let text = manifest(
            r#"{"model.x.one": {"resource_type": "model", "name": "one",
                 "config": {"materialized": "incremental", "unique_key": "event_id"}},
                "model.x.listed": {"resource_type": "model", "name": "listed",
                 "config": {"materialized": "incremental", "unique_key": ["event_id"]}},
                "model.x.pair": {"resource_type": "model", "name": "pair",
                 "config": {"materialized": "incremental", "unique_key": ["day", "account_id"]}},
                "test.x.unique_pair_row_id": {"resource_type": "test", "name": "unique_pair_row_id",
                 "column_name": "row_id", "test_metadata": {"name": "unique", "kwargs": {"column_name": "row_id"}},
                 "depends_on": {"nodes": ["model.x.pair"]}},
                "test.x.not_null_pair_day": {"resource_type": "test", "name": "not_null_pair_day",
                 "column_name": "day", "test_metadata": {"name": "not_null"},
                 "depends_on": {"nodes": ["model.x.pair"]}}}"#,
        );
        assert_readers_agree(&text, "keys manifest");
        let contents = parse_by_walking(&text, "m.json").unwrap();
        let node = |name: &str| contents.nodes.iter().find(|n| n.name == name).unwrap();
        assert_eq!(node("one").unique_key.as_deref(), Some("event_id"));
        assert_eq!(node("listed").unique_key.as_deref(), Some("event_id"));
        assert_eq!(node("pair").unique_key, None, "two columns are no one key");
        assert_eq!(
            node("unique_pair_row_id").unique_test.as_deref(),
            Some("row_id")
        );
        assert_eq!(node("not_null_pair_day").unique_test, None);
    }

    #[test]
    fn typed_and_walking_readers_agree() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/lineage");
        // Every manifest among the fixtures, so a new one is covered without a list.
        let mut seen = 0;
        for entry in std::fs::read_dir(fixtures).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with("_manifest.json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert_readers_agree(&text, &name);
            seen += 1;
        }
        assert!(seen >= 3, "only {seen} manifests in {fixtures}");
        let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures/dbt");
        if !std::path::Path::new(shared).is_dir() {
            if std::env::var("DATAWARD_REQUIRE_ALL").as_deref() == Ok("1") {
                panic!("{shared} is missing and DATAWARD_REQUIRE_ALL=1");
            }
            println!("skipping the shared manifests: {shared} is missing");
            return;
        }
        for name in [
            "hubspot-manifest.json",
            "jaffle_shop-manifest.json",
            "ad_reporting-v7-manifest.json",
        ] {
            let text = std::fs::read_to_string(format!("{shared}/{name}")).unwrap();
            assert_readers_agree(&text, name);
        }
    }

    #[test]
    fn the_reader_tells_how_far_into_the_text_it_is_after_each_entry() {
        let mut nodes = Vec::new();
        for i in 0..200 {
            nodes.push(format!(
                r#""model.x.m{i}": {{"resource_type": "model", "name": "m{i}", "raw_code": "select {i}"}}"#
            ));
        }
        let text = manifest(&format!("{{{}}}", nodes.join(",\n")));
        let total = text.len() as u64;
        let mut heard = Vec::new();
        let contents =
            parse_manifest_telling(&text, "m.json", &mut |done, of| heard.push((done, of)))
                .unwrap();
        assert_eq!(contents.nodes.len(), 200);
        assert!(heard.len() > 200, "after each node: {}", heard.len());
        assert!(heard.iter().all(|(_, of)| *of == total));
        assert!(
            heard.windows(2).all(|w| w[0].0 <= w[1].0),
            "never backwards"
        );
        // The 100th node's key is about halfway in, and the end is told.
        let halfway = heard[99].0 as f64 / total as f64;
        assert!((0.4..0.6).contains(&halfway), "{halfway}");
        assert_eq!(heard.last(), Some(&(total, total)));

        // A manifest only the walker reads still tells its end.
        let odd = manifest(r#"{"model.x.a": {"name": "a", "meta": ["odd"], "owner": 3}}"#);
        let mut heard = Vec::new();
        parse_manifest_telling(&odd, "m.json", &mut |done, of| heard.push((done, of))).unwrap();
        let total = odd.len() as u64;
        assert_eq!(heard, [(total, total)]);
    }

    #[test]
    fn the_typed_reader_gives_up_where_the_walker_refuses() {
        let wrong =
            manifest(r#"{"model.x.a": {"name": "a", "depends_on": {"nodes": "model.x.b"}}}"#);
        assert!(typed::parse(&wrong, &mut |_, _| {}).is_none());
        let old = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v6.json"}, "nodes": {}}"#;
        assert!(typed::parse(old, &mut |_, _| {}).is_none());
        let no_nodes = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"}}"#;
        assert!(typed::parse(no_nodes, &mut |_, _| {}).is_none());
        let twice = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
                        "nodes": {}, "sources": {}, "sources": {}}"#;
        assert!(typed::parse(twice, &mut |_, _| {}).is_none());
        let null_nodes = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
                            "nodes": null}"#;
        assert!(typed::parse(null_nodes, &mut |_, _| {}).is_none());
        let null_sections = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
                               "nodes": {}, "sources": null, "child_map": null, "extra": [1, {"a": 2}]}"#;
        assert!(typed::parse(null_sections, &mut |_, _| {}).is_some());
        // Odd shapes that the walker tolerates still read the same, through the walker.
        let odd_meta = manifest(
            r#"{"model.x.a": {"name": "a", "meta": ["not", "an", "object"], "owner": 3}}"#,
        );
        assert!(parse_manifest(&odd_meta, "m.json").is_ok());
    }
}
