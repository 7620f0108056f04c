//! The fast way to read a manifest: straight into the few fields we use, skipping
//! everything else as it is parsed. A 100k-node manifest is half a gigabyte of JSON;
//! building a `serde_json::Value` of it first costs seconds and gigabytes.
//!
//! It returns `None` on anything unexpected, and the caller then walks the manifest
//! as a `Value` to name the problem. It must never accept a manifest the walker would
//! refuse, nor read one differently: the tests compare both on real manifests.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{is_relation, ManifestContents, NodeKind, OLDEST_SCHEMA};
use crate::lineage::{Node, Window};

type Section = BTreeMap<String, RawNode>;

/// The manifest's top level, read by hand ([`TopLevel`]) rather than derived, so each
/// entry of the large sections can say how far into the text the reader is.
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

/// Reads the manifest; `progress` hears how far into the text the reader is, `(byte
/// offset, text length)`, after each entry of a section, `child_map` and `parent_map`,
/// and at the end.
pub(super) fn parse(text: &str, progress: &mut dyn FnMut(u64, u64)) -> Option<ManifestContents> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let mut at = At {
        base: text.as_ptr() as usize,
        total: text.len() as u64,
        progress,
    };
    let manifest = TopLevel { at: &mut at }.deserialize(&mut reader).ok()?;
    reader.end().ok()?;
    (at.progress)(at.total, at.total);
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

/// Where the reader is: the text's start, its length, and who hears of it.
struct At<'r> {
    base: usize,
    total: u64,
    progress: &'r mut dyn FnMut(u64, u64),
}

impl At<'_> {
    /// A key read in place from the text (one without escapes) points into it: its
    /// offset is how far the reader has come.
    fn passed(&mut self, key: &Key) {
        if let Key::InText(offset, _) = key {
            let offset = offset.saturating_sub(self.base) as u64;
            (self.progress)(offset.min(self.total), self.total);
        }
    }
}

/// Reads the top level as the derived reader would: `metadata` and `nodes` required,
/// the other sections optional (or null), a known field twice refused, any other key
/// skipped unread.
struct TopLevel<'a, 'r> {
    at: &'a mut At<'r>,
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_, '_> {
    type Value = RawManifest;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RawManifest, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_, '_> {
    type Value = RawManifest;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a dbt manifest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawManifest, A::Error> {
        fn once<T, E: de::Error>(
            slot: &mut Option<T>,
            name: &'static str,
            value: T,
        ) -> Result<(), E> {
            if slot.replace(value).is_some() {
                return Err(E::duplicate_field(name));
            }
            Ok(())
        }
        let mut metadata = None;
        let mut nodes = None;
        let mut sections: [Option<Option<Section>>; 7] = Default::default();
        let mut child_map = None;
        let mut parent_map = None;
        while let Some(key) = map.next_key::<String>()? {
            let section = OPTIONAL_SECTIONS.iter().position(|s| *s == key);
            match (key.as_str(), section) {
                ("metadata", _) => once(&mut metadata, "metadata", map.next_value()?)?,
                ("nodes", _) => {
                    let value = map.next_value_seed(Entries::<RawNode>::new(&mut *self.at))?;
                    once(&mut nodes, "nodes", value)?;
                }
                (_, Some(i)) => {
                    let value =
                        map.next_value_seed(Nullable(Entries::<RawNode>::new(&mut *self.at)))?;
                    once(&mut sections[i], OPTIONAL_SECTIONS[i], value)?;
                }
                ("child_map", _) => {
                    let value = map.next_value_seed(Nullable(Entries::new(&mut *self.at)))?;
                    once(&mut child_map, "child_map", value)?;
                }
                ("parent_map", _) => {
                    let value = map.next_value_seed(Nullable(Entries::new(&mut *self.at)))?;
                    once(&mut parent_map, "parent_map", value)?;
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let [sources, exposures, metrics, semantic_models, saved_queries, unit_tests, functions] =
            sections;
        Ok(RawManifest {
            metadata: metadata.ok_or_else(|| de::Error::missing_field("metadata"))?,
            nodes: nodes.ok_or_else(|| de::Error::missing_field("nodes"))?,
            sources: sources.flatten(),
            exposures: exposures.flatten(),
            metrics: metrics.flatten(),
            semantic_models: semantic_models.flatten(),
            saved_queries: saved_queries.flatten(),
            unit_tests: unit_tests.flatten(),
            functions: functions.flatten(),
            child_map: child_map.flatten(),
            parent_map: parent_map.flatten(),
        })
    }
}

/// The sections besides `nodes`, in [`RawManifest`]'s order.
const OPTIONAL_SECTIONS: [&str; 7] = [
    "sources",
    "exposures",
    "metrics",
    "semantic_models",
    "saved_queries",
    "unit_tests",
    "functions",
];

/// `null` or what the inner seed reads.
struct Nullable<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Nullable<S> {
    type Value = Option<S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for Nullable<S> {
    type Value = Option<S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("null or an object")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(deserializer).map(Some)
    }
}

/// An object of `unique_id -> T`, telling the reader's place after each entry (a later
/// duplicate key wins, as in a derived map).
struct Entries<'a, 'r, T> {
    at: &'a mut At<'r>,
    value: std::marker::PhantomData<T>,
}

impl<'a, 'r, T> Entries<'a, 'r, T> {
    fn new(at: &'a mut At<'r>) -> Self {
        Entries {
            at,
            value: std::marker::PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Entries<'_, '_, T> {
    type Value = BTreeMap<String, T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Entries<'_, '_, T> {
    type Value = BTreeMap<String, T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object keyed by unique_id")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = BTreeMap::new();
        while let Some(key) = map.next_key::<Key>()? {
            let value: T = map.next_value()?;
            self.at.passed(&key);
            entries.insert(key.into_string(), value);
        }
        Ok(entries)
    }
}

/// A key, and where it sits in the text when it was read in place.
enum Key {
    /// Its address in the text, and the key.
    InText(usize, String),
    Copied(String),
}

impl Key {
    fn into_string(self) -> String {
        match self {
            Key::InText(_, key) | Key::Copied(key) => key,
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key, E> {
                Ok(Key::InText(key.as_ptr() as usize, key.to_string()))
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(Key::Copied(key.to_string()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
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
        learned: None,
    }
}

fn meta_owner(meta: Option<&Value>) -> Option<String> {
    let owner = meta?.get("owner")?.as_str()?;
    (!owner.is_empty()).then(|| owner.to_string())
}
