//! Lineage: the dbt manifest plus the team's context notes, as one graph, and the blast
//! radius of a change (everything downstream of a node, and which models read or cast a
//! changed column).
//!
//! The graph is a `petgraph` `DiGraph` whose edges point from parent to child, so
//! "downstream" is following outgoing edges.

mod blast;
mod catalog;
mod columns;
mod error;
mod json_fields;
mod learned;
mod manifest;
mod notes;
pub mod openlineage;
mod render;
pub mod run_results;
mod window;

use std::collections::HashMap;
use std::path::Path;

use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

pub use blast::{BlastRadius, Impact, Summary, TreeRow};
pub use catalog::CatalogColumn;
pub use columns::origin::{passed_through, PassedThrough};
pub use columns::{
    find_column_use, use_sites, ColumnChange, ColumnFinding, Dialect, Risk, UseFinding, UseKind,
    UseSite, Wants, PARSER, TOKENS,
};
pub use error::LineageError;
pub use learned::{job_id, LearnedJob};
pub use notes::{Moved, Notes, OptionEffect, OwnerRule, Reader, ReaderKind, Writer, WriterOption};
pub use render::{compiled_with_change, project_vars, Vars};
pub use window::{filter_numbers, Anchor, Period, Window, WindowSource, DEFAULT_LOOKBACK};

/// What a graph node is. Readers from the context notes (dashboards, notebooks, syncs,
/// jobs) are nodes too, so the blast radius reaches past what dbt knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Source,
    Seed,
    Model,
    Snapshot,
    Test,
    Analysis,
    Exposure,
    Metric,
    SemanticModel,
    Dashboard,
    Notebook,
    Sync,
    Job,
    /// A dataset seen only in OpenLineage events (see `learned.rs`).
    Dataset,
    /// Anything else dbt puts in the graph (saved queries, unit tests, ...).
    Other,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Source => "source",
            NodeKind::Seed => "seed",
            NodeKind::Model => "model",
            NodeKind::Snapshot => "snapshot",
            NodeKind::Test => "test",
            NodeKind::Analysis => "analysis",
            NodeKind::Exposure => "exposure",
            NodeKind::Metric => "metric",
            NodeKind::SemanticModel => "semantic_model",
            NodeKind::Dashboard => "dashboard",
            NodeKind::Notebook => "notebook",
            NodeKind::Sync => "sync",
            NodeKind::Job => "job",
            NodeKind::Dataset => "dataset",
            NodeKind::Other => "other",
        }
    }

    /// From dbt's `resource_type` (also the first segment of a unique_id).
    pub fn from_resource_type(resource_type: &str) -> NodeKind {
        match resource_type {
            "source" => NodeKind::Source,
            "seed" => NodeKind::Seed,
            "model" => NodeKind::Model,
            "snapshot" => NodeKind::Snapshot,
            "test" => NodeKind::Test,
            "analysis" => NodeKind::Analysis,
            "exposure" => NodeKind::Exposure,
            "metric" => NodeKind::Metric,
            "semantic_model" => NodeKind::SemanticModel,
            _ => NodeKind::Other,
        }
    }
}

/// One node of the lineage graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    pub unique_id: String,
    pub name: String,
    pub kind: NodeKind,
    /// dbt's `resource_type` as written (or the reader kind), kept for `Other` nodes.
    pub resource_type: String,
    /// As dbt wrote it (e.g. `"db"."schema"."table"`), or `db.schema.table` built from
    /// the node's fields when dbt left it out.
    pub relation_name: Option<String>,
    pub materialized: Option<String>,
    pub incremental_strategy: Option<String>,
    /// How far back each run reaches, for an incremental model whose microbatch config
    /// or SQL filter says so.
    pub window: Option<Window>,
    pub owner: Option<String>,
    /// Compiled SQL when the manifest has it, else the raw (Jinja) SQL.
    pub sql: Option<String>,
    /// Cron schedule of a job from the context notes.
    pub schedule: Option<String>,
    /// The SQL as written in the project (Jinja unrendered), where diffs apply.
    pub raw_sql: Option<String>,
    /// The project file the node comes from (`original_file_path`).
    pub file: Option<String>,
    /// Column types from the catalog, in the table's order; empty without a catalog.
    pub columns: Vec<CatalogColumn>,
    /// A model's `unique_key` config when it names one column.
    pub unique_key: Option<String>,
    /// A test node that is dbt's `unique` test: the column it checks.
    pub unique_test: Option<String>,
    /// Learned from OpenLineage events (not the manifest or the notes): when last seen.
    pub learned: Option<chrono::DateTime<chrono::Utc>>,
}

impl Lineage {
    /// The column that identifies one row of a model: its single-column `unique_key`,
    /// else the column a `unique` test on it alone checks.
    pub fn key_of(&self, model: NodeIndex) -> Option<String> {
        let node = self.node(model);
        node.unique_key.clone().or_else(|| {
            self.graph
                .neighbors_directed(model, petgraph::Direction::Outgoing)
                .filter(|&test| {
                    self.graph
                        .neighbors_directed(test, petgraph::Direction::Incoming)
                        .all(|parent| parent == model)
                })
                .find_map(|test| self.node(test).unique_test.clone())
        })
    }
}

impl Node {
    /// A node known only by its id, name and kind (not from the manifest: a reader the
    /// notes name, a job or dataset learned from events, an id no section defines).
    pub fn bare(unique_id: String, name: String, kind: NodeKind, resource_type: String) -> Node {
        Node {
            unique_id,
            name,
            kind,
            resource_type,
            relation_name: None,
            materialized: None,
            incremental_strategy: None,
            window: None,
            owner: None,
            sql: None,
            schedule: None,
            raw_sql: None,
            file: None,
            columns: Vec::new(),
            unique_key: None,
            unique_test: None,
            learned: None,
        }
    }

    /// The catalog's type for a column, matched without case (warehouses differ in
    /// how they fold names).
    pub fn column_type(&self, column: &str) -> Option<&str> {
        self.columns
            .iter()
            .find(|c| c.name.eq_ignore_ascii_case(column))
            .map(|c| c.data_type.as_str())
    }
}

/// The lineage graph with a lookup by unique_id.
#[derive(Debug, Clone)]
pub struct Lineage {
    graph: DiGraph<Node, ()>,
    by_unique_id: HashMap<String, NodeIndex>,
    /// Systems that load tables (from the notes); upstream of everything, so not nodes.
    writers: Vec<notes::Writer>,
    /// The notes' owner rules, for nodes learned after them (`learned.rs`).
    owner_rules: Vec<notes::OwnerRule>,
    /// Paths and names the notes say moved.
    moved: Vec<notes::Moved>,
    /// The SQL dialect of the project, from the manifest's `metadata.adapter_type`.
    dialect: Dialect,
}

/// Does the SQL after a relation give it a name (`... o`, `... as o`)?
fn aliased(rest: &str) -> bool {
    let word: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '"')
        .collect();
    const NOT_AN_ALIAS: &[&str] = &[
        "",
        "where",
        "group",
        "order",
        "limit",
        "join",
        "left",
        "right",
        "inner",
        "full",
        "cross",
        "on",
        "union",
        "having",
        "window",
        "natural",
        "using",
        "except",
        "intersect",
        "offset",
        "fetch",
        "for",
        "qualify",
    ];
    !NOT_AN_ALIAS.contains(&word.to_ascii_lowercase().as_str())
}

/// `name` as a quoted identifier.
fn quoted_name(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Lineage {
    /// Load a manifest and, optionally, context notes.
    pub fn load(manifest: &Path, notes: Option<&Path>) -> Result<Lineage, LineageError> {
        Lineage::load_telling(manifest, notes, &mut |_, _| {})
    }

    /// [`Lineage::load`], telling `progress` how much of the manifest is read: `(bytes,
    /// the file's size)`, often (after each node), ending with the size. Pair it with
    /// [`crate::progress::Throttle`] to say it only when it takes long.
    pub fn load_telling(
        manifest: &Path,
        notes: Option<&Path>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Lineage, LineageError> {
        let text = read_file(manifest)?;
        let lineage = Lineage::from_json_telling(&text, &manifest.display().to_string(), progress)?;
        match notes {
            Some(path) => lineage.with_notes(&Notes::load(path)?),
            None => Ok(lineage),
        }
    }

    /// Build from manifest text; `origin` names the file in error messages.
    pub fn from_json(text: &str, origin: &str) -> Result<Lineage, LineageError> {
        Lineage::from_json_telling(text, origin, &mut |_, _| {})
    }

    /// [`Lineage::from_json`], telling `progress` how far into `text` it has read.
    pub fn from_json_telling(
        text: &str,
        origin: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Lineage, LineageError> {
        let contents = manifest::parse_manifest_telling(text, origin, progress)?;
        let mut lineage = Lineage {
            graph: DiGraph::new(),
            by_unique_id: HashMap::new(),
            writers: Vec::new(),
            owner_rules: Vec::new(),
            moved: Vec::new(),
            dialect: Dialect::from_adapter_type(contents.adapter_type.as_deref()),
        };
        for node in contents.nodes {
            lineage.add_node(node);
        }
        for (parent, child) in &contents.edges {
            let parent = lineage.node_or_placeholder(parent);
            let child = lineage.node_or_placeholder(child);
            lineage.add_edge(parent, child);
        }
        Ok(lineage)
    }

    /// Add column types from a dbt `catalog.json`.
    pub fn with_catalog(self, path: &Path) -> Result<Lineage, LineageError> {
        let text = read_file(path)?;
        self.with_catalog_str(&text, &path.display().to_string())
    }

    /// Add column types from catalog text; `origin` names the file in error messages.
    /// Catalog entries for nodes the manifest does not have are skipped: a catalog
    /// generated on another run may list a disabled model, and its types are no help.
    pub fn with_catalog_str(mut self, text: &str, origin: &str) -> Result<Lineage, LineageError> {
        for entry in catalog::parse_catalog(text, origin)? {
            if let Some(index) = self.index_of(&entry.unique_id) {
                self.graph[index].columns = entry.columns;
            }
        }
        Ok(self)
    }

    /// The SQL dialect the project's models are written in.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Add context notes given as TOML text; `origin` names the file in error messages.
    pub fn with_notes_str(self, text: &str, origin: &str) -> Result<Lineage, LineageError> {
        let notes = Notes::parse(text, origin)?;
        self.with_notes(&notes)
    }

    /// Add already parsed context notes: readers become nodes, owners fill gaps.
    pub fn with_notes(mut self, notes: &Notes) -> Result<Lineage, LineageError> {
        notes.apply(&mut self)?;
        Ok(self)
    }

    /// Every system the notes say loads tables.
    pub fn writers(&self) -> &[notes::Writer] {
        &self.writers
    }

    /// What the notes say moved.
    pub fn moved(&self) -> &[notes::Moved] {
        &self.moved
    }

    /// The systems recorded in the notes as loading this node's table.
    pub fn writers_of(&self, index: NodeIndex) -> Vec<&notes::Writer> {
        self.writers
            .iter()
            .filter(|w| w.writes.iter().any(|t| self.resolve(t).ok() == Some(index)))
            .collect()
    }

    /// Does `to` read from `from`, directly or through other nodes?
    pub fn is_downstream(&self, from: NodeIndex, to: NodeIndex) -> bool {
        from != to && petgraph::algo::has_path_connecting(&self.graph, from, to, None)
    }

    /// Find a node by exact name: a unique_id; or a relation name, case-insensitively,
    /// as `db.schema.table` or `schema.table` (quotes and backticks ignored); or a node
    /// name. Never by substring: a wrong guess during an incident is worse than an error.
    pub fn resolve(&self, name: &str) -> Result<NodeIndex, LineageError> {
        if let Some(&index) = self.by_unique_id.get(name) {
            return Ok(index);
        }
        let wanted_relation = normalize_relation(name);
        let mut candidates: Vec<NodeIndex> =
            self.graph
                .node_indices()
                .filter(|&index| {
                    let node = &self.graph[index];
                    node.name == name
                        || node.relation_name.as_deref().is_some_and(|relation| {
                            relation_forms(relation).contains(&wanted_relation)
                        })
                })
                .collect();
        match candidates.len() {
            0 => Err(LineageError::NotFound {
                name: name.to_string(),
            }),
            1 => Ok(candidates[0]),
            _ => {
                candidates.sort_by(|a, b| self.graph[*a].unique_id.cmp(&self.graph[*b].unique_id));
                Err(LineageError::Ambiguous {
                    name: name.to_string(),
                    candidates: candidates
                        .into_iter()
                        .map(|index| self.graph[index].unique_id.clone())
                        .collect(),
                })
            }
        }
    }

    pub fn node(&self, index: NodeIndex) -> &Node {
        &self.graph[index]
    }

    /// Number of nodes (manifest nodes and readers).
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// The graph itself, for callers that want to walk it their own way.
    pub fn graph(&self) -> &DiGraph<Node, ()> {
        &self.graph
    }

    pub fn blast_radius(&self, from: NodeIndex, column: Option<&ColumnChange>) -> BlastRadius {
        blast::blast_radius(self, from, column)
    }

    /// The node with this unique_id, if the manifest has it.
    pub fn index_of(&self, unique_id: &str) -> Option<NodeIndex> {
        self.by_unique_id.get(unique_id).copied()
    }

    fn add_node(&mut self, node: Node) -> NodeIndex {
        let unique_id = node.unique_id.clone();
        let index = self.graph.add_node(node);
        self.by_unique_id.insert(unique_id, index);
        index
    }

    /// Edges may name ids that no section defines (a node type this version does not
    /// know yet). Keeping them as `Other` nodes keeps the downstream closure complete.
    fn node_or_placeholder(&mut self, unique_id: &str) -> NodeIndex {
        if let Some(index) = self.index_of(unique_id) {
            return index;
        }
        let resource_type = unique_id.split('.').next().unwrap_or("").to_string();
        let name = unique_id.rsplit('.').next().unwrap_or(unique_id);
        let kind = NodeKind::from_resource_type(&resource_type);
        self.add_node(Node::bare(
            unique_id.to_string(),
            name.to_string(),
            kind,
            resource_type,
        ))
    }

    /// Adds parent -> child once; self-loops are dropped (they carry no lineage).
    fn add_edge(&mut self, parent: NodeIndex, child: NodeIndex) {
        if parent != child {
            self.graph.update_edge(parent, child, ());
        }
    }
}

fn read_file(path: &Path) -> Result<String, LineageError> {
    std::fs::read_to_string(path).map_err(|e| LineageError::Read {
        file: path.display().to_string(),
        problem: e.to_string(),
    })
}

/// Lowercase, without double quotes or backticks: `"DB"."Sch"."T"` -> `db.sch.t`.
pub(crate) fn normalize_relation(relation: &str) -> String {
    relation
        .chars()
        .filter(|c| *c != '"' && *c != '`')
        .collect::<String>()
        .to_lowercase()
}

/// The forms a relation can be named by: in full, and as `schema.table`.
pub(crate) fn relation_forms(relation: &str) -> Vec<String> {
    let full = normalize_relation(relation);
    let parts: Vec<&str> = full.split('.').collect();
    let mut forms = vec![full.clone()];
    if parts.len() > 2 {
        forms.push(parts[parts.len() - 2..].join("."));
    }
    forms
}

/// `schema.table` of a node's relation: the form a query in that database accepts.
fn relation_of(node: &Node, jinja: &str) -> Result<String, LineageError> {
    let relation = node
        .relation_name
        .as_deref()
        .ok_or_else(|| LineageError::NotFound {
            name: format!("a relation for {jinja}"),
        })?;
    let parts: Vec<&str> = relation.split('.').collect();
    Ok(parts[parts.len().saturating_sub(2)..].join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{
      "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
      "nodes": {
        "model.a.orders": {"resource_type": "model", "name": "orders",
          "relation_name": "\"WH\".\"BILLING\".\"ORDERS_V\"", "config": {"materialized": "view"},
          "depends_on": {"nodes": ["source.a.app.orders"]}},
        "model.b.orders": {"resource_type": "model", "name": "orders",
          "relation_name": "\"WH\".\"OTHER\".\"ORDERS\"", "config": {"materialized": "table"},
          "depends_on": {"nodes": ["model.a.orders"]}}
      },
      "sources": {
        "source.a.app.orders": {"resource_type": "source", "name": "orders_src",
          "database": "WH", "schema": "BILLING", "identifier": "ORDERS"}
      },
      "child_map": {"source.a.app.orders": ["model.a.orders", "model.a.orders"]}
    }"#;

    #[test]
    fn a_config_call_renders_to_nothing() {
        let manifest = r#"{
          "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
          "nodes": {"model.a.payments": {"resource_type": "model", "name": "payments",
            "relation_name": "\"WH\".\"A\".\"PAYMENTS\"", "config": {"materialized": "table"}}},
          "sources": {}, "child_map": {}
        }"#;
        let lineage = Lineage::from_json(manifest, "m.json").unwrap();
        let sql = "{{ config(materialized='incremental', lookback=1) }}\nselect * from {{ ref('payments') }}";
        assert_eq!(
            lineage.render(sql).unwrap(),
            "\nselect * from \"A\".\"PAYMENTS\""
        );
    }

    #[test]
    fn an_inlined_model_gets_a_name_only_where_it_has_none() {
        let manifest = r#"{
          "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
          "nodes": {"model.a.stg": {"resource_type": "model", "name": "stg",
            "relation_name": "\"A\".\"STG\"", "config": {"materialized": "table"},
            "raw_code": "select 1 as x"}},
          "sources": {}, "child_map": {}
        }"#;
        let lineage = Lineage::from_json(manifest, "m.json").unwrap();
        assert_eq!(
            lineage
                .render_inline("select * from {{ ref('stg') }}\n")
                .unwrap(),
            "select * from (select 1 as x) as \"stg\"\n"
        );
        assert_eq!(
            lineage
                .render_inline("select * from {{ ref('stg') }} s where s.x = 1")
                .unwrap(),
            "select * from (select 1 as x) s where s.x = 1"
        );
        assert_eq!(
            lineage
                .render_inline("select * from {{ ref('stg') }} where x = 1")
                .unwrap(),
            "select * from (select 1 as x) as \"stg\" where x = 1"
        );
    }

    #[test]
    fn resolves_exactly_and_never_by_substring() {
        let lineage = Lineage::from_json(SMALL, "small.json").unwrap();
        let by_id = lineage.resolve("model.b.orders").unwrap();
        assert_eq!(lineage.node(by_id).unique_id, "model.b.orders");
        let source = lineage.resolve("billing.orders").unwrap();
        assert_eq!(lineage.node(source).unique_id, "source.a.app.orders");
        let source = lineage.resolve("\"wh\".`Billing`.ORDERS").unwrap();
        assert_eq!(lineage.node(source).unique_id, "source.a.app.orders");
        assert!(matches!(
            lineage.resolve("order"),
            Err(LineageError::NotFound { .. })
        ));
        match lineage.resolve("orders") {
            Err(LineageError::Ambiguous { candidates, .. }) => {
                assert_eq!(candidates, vec!["model.a.orders", "model.b.orders"])
            }
            other => panic!("expected ambiguity, got {other:?}"),
        }
    }

    #[test]
    fn edges_are_deduplicated() {
        let lineage = Lineage::from_json(SMALL, "small.json").unwrap();
        assert_eq!(lineage.len(), 3);
        assert_eq!(lineage.graph().edge_count(), 2);
    }
}
