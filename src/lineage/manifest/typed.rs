//! The fast way to read a manifest: straight into the few fields we use, skipping
//! everything else as it is parsed. A 100k-node manifest is half a gigabyte of JSON;
//! building a `serde_json::Value` of it first costs seconds and gigabytes.
//!
//! It returns `None` on anything unexpected, and the caller then walks the manifest
//! as a `Value` to name the problem. It must never accept a manifest the walker would
//! refuse, nor read one differently: the tests compare both on real manifests.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{is_relation, ManifestContents, NodeKind, OLDEST_SCHEMA};
use crate::lineage::{Node, Window};

type Section = BTreeMap<String, RawNode>;

#[derive(Deserialize)]
struct RawManifest {
    metadata: RawMetadata,
    nodes: Section,
    sources: Option<Section>,
    exposures: Option<Section>,
    metrics: Option<Section>,
    semantic_models: Option<Section>,
    saved_queries: Option<Section>,
    unit_tests: Option<Section>,
    functions: Option<Section>,
    child_map: Option<BTreeMap<String, Option<Vec<String>>>>,
    parent_map: Option<BTreeMap<String, Option<Vec<String>>>>,
}

#[derive(Deserialize)]
struct RawMetadata {
    dbt_schema_version: String,
    adapter_type: Option<String>,
}

#[derive(Deserialize)]
struct RawNode {
    resource_type: Option<String>,
    test_metadata: Option<Value>,
    column_name: Option<Value>,
    name: Option<String>,
    config: Option<RawConfig>,
    /// Free-form user data: any shape is accepted, only a string `owner` is used.
    meta: Option<Value>,
    /// Read for exposures only; an odd shape elsewhere sends us to the walker.
    owner: Option<RawOwner>,
    compiled_code: Option<String>,
    compiled_sql: Option<String>,
    raw_code: Option<String>,
    raw_sql: Option<String>,
    original_file_path: Option<String>,
    relation_name: Option<String>,
    database: Option<String>,
    schema: Option<String>,
    alias: Option<String>,
    identifier: Option<String>,
    depends_on: Option<RawDependsOn>,
}

#[derive(Deserialize)]
struct RawConfig {
    materialized: Option<String>,
    incremental_strategy: Option<String>,
    meta: Option<Value>,
    event_time: Option<String>,
    batch_size: Option<String>,
    lookback: Option<u32>,
    begin: Option<String>,
    unique_key: Option<Value>,
}

#[derive(Deserialize)]
struct RawOwner {
    name: Option<String>,
    email: Option<String>,
}

#[derive(Deserialize)]
struct RawDependsOn {
    nodes: Option<Vec<String>>,
}

pub(super) fn parse(text: &str) -> Option<ManifestContents> {
    let manifest: RawManifest = serde_json::from_str(text).ok()?;
    let version = super::manifest_schema_version(&manifest.metadata.dbt_schema_version)?;
    if version < OLDEST_SCHEMA {
        return None;
    }
    let sections = [
        Some(manifest.nodes),
        manifest.sources,
        manifest.exposures,
        manifest.metrics,
        manifest.semantic_models,
        manifest.saved_queries,
        manifest.unit_tests,
        manifest.functions,
    ];
    let mut contents = ManifestContents {
        nodes: Vec::new(),
        edges: Vec::new(),
        adapter_type: manifest.metadata.adapter_type,
    };
    for (unique_id, mut raw) in sections.into_iter().flatten().flatten() {
        let parents = raw
            .depends_on
            .take()
            .and_then(|depends_on| depends_on.nodes)
            .unwrap_or_default();
        for parent in parents {
            contents.edges.push((parent, unique_id.clone()));
        }
        contents.nodes.push(node(unique_id, raw));
    }
    for (parent, children) in manifest.child_map.unwrap_or_default() {
        for child in children.unwrap_or_default() {
            contents.edges.push((parent.clone(), child));
        }
    }
    for (child, parents) in manifest.parent_map.unwrap_or_default() {
        for parent in parents.unwrap_or_default() {
            contents.edges.push((parent, child.clone()));
        }
    }
    Some(contents)
}

/// The same fields, fallbacks and precedence as the walker's `read_node`.
fn node(unique_id: String, raw: RawNode) -> Node {
    let resource_type = raw
        .resource_type
        .unwrap_or_else(|| unique_id.split('.').next().unwrap_or("").to_string());
    let kind = NodeKind::from_resource_type(&resource_type);
    let name = raw.name.clone().unwrap_or_else(|| {
        unique_id
            .rsplit('.')
            .next()
            .unwrap_or(&unique_id)
            .to_string()
    });
    let unique_test = super::unique_test(raw.test_metadata.as_ref(), raw.column_name.as_ref());
    let unique_key = super::unique_key(raw.config.as_ref().and_then(|c| c.unique_key.as_ref()));
    let (materialized, incremental_strategy, config_meta, microbatch) = match raw.config {
        Some(config) => {
            let microbatch =
                (config.incremental_strategy.as_deref() == Some("microbatch")).then(|| {
                    Window::microbatch(
                        config.event_time,
                        config.batch_size.as_deref(),
                        config.lookback,
                        config.begin,
                    )
                });
            (
                config.materialized,
                config.incremental_strategy,
                config.meta,
                microbatch,
            )
        }
        None => (None, None, None, None),
    };
    let owner = if kind == NodeKind::Exposure {
        raw.owner
            .and_then(|owner| owner.name.filter(|n| !n.is_empty()).or(owner.email))
    } else {
        meta_owner(config_meta.as_ref()).or_else(|| meta_owner(raw.meta.as_ref()))
    };
    let raw_sql = raw.raw_code.clone().or_else(|| raw.raw_sql.clone());
    let window = Window::of_model(materialized.as_deref(), microbatch, raw_sql.as_deref());
    let sql = [
        raw.compiled_code,
        raw.compiled_sql,
        raw.raw_code,
        raw.raw_sql,
    ]
    .into_iter()
    .flatten()
    .find(|text| !text.trim().is_empty());
    let mut relation_name = raw.relation_name;
    if relation_name.is_none() && is_relation(kind, materialized.as_deref()) {
        let table = raw.alias.or(raw.identifier).or(raw.name);
        relation_name = match (raw.schema, table) {
            (Some(schema), Some(table)) => Some(
                raw.database
                    .into_iter()
                    .chain([schema, table])
                    .collect::<Vec<_>>()
                    .join("."),
            ),
            _ => None,
        };
    }
    Node {
        unique_id,
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
        file: raw.original_file_path,
        columns: Vec::new(),
        unique_key,
        unique_test,
    }
}

fn meta_owner(meta: Option<&Value>) -> Option<String> {
    let owner = meta?.get("owner")?.as_str()?;
    (!owner.is_empty()).then(|| owner.to_string())
}
