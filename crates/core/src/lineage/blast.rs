//! The blast radius of a change: every node downstream of one node, how far away it is,
//! who owns it, and (for a column change) what its SQL does with the column.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use petgraph::graph::NodeIndex;
use petgraph::Direction;
use serde::Serialize;

use super::columns::{find_column_use, ColumnChange, ColumnFinding, Risk};
use super::{Lineage, NodeKind};

#[derive(Debug, Clone, Serialize)]
pub struct BlastRadius {
    /// unique_id of the changed node.
    pub from: String,
    /// Every downstream node, sorted by (depth, unique_id).
    pub nodes: Vec<Impact>,
    pub summary: Summary,
}

/// One downstream node.
#[derive(Debug, Clone, Serialize)]
pub struct Impact {
    pub unique_id: String,
    pub name: String,
    pub kind: NodeKind,
    /// Shortest distance from the changed node; 1 is a direct child.
    pub depth: u32,
    /// Every parent that is the changed node or itself downstream of it, sorted.
    pub parents: Vec<String>,
    pub materialized: Option<String>,
    pub owner: Option<String>,
    /// Set for models and snapshots with SQL when a column change was given.
    pub column: Option<ColumnFinding>,
    /// Learned from OpenLineage events: when last seen in one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Summary {
    pub total: usize,
    /// e.g. {"model": 3, "dashboard": 1}
    pub by_kind: BTreeMap<String, usize>,
    /// e.g. {"table": 2, "view": 1}; nodes without a materialization are not counted.
    pub by_materialization: BTreeMap<String, usize>,
    /// Every owner reached, sorted.
    pub owners: Vec<String>,
    /// Models with a use of the changed column the new type breaks whatever the data
    /// ([`Risk::Breaks`]), in the order of `nodes`.
    pub break_risks: Vec<String>,
    /// Models with a use that runs only while every value converts
    /// ([`Risk::DependsOnData`]) and none that breaks: the warehouse can count the
    /// values that would not. In the order of `nodes`.
    pub depends_on_data: Vec<String>,
}

/// One row of the blast radius drawn as a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeRow {
    /// 0 is the changed node itself.
    pub depth: usize,
    /// The node on this row; for a `"+N more"` row, the parent whose children were cut.
    pub unique_id: String,
    pub label: String,
    pub is_more: bool,
}

pub(super) fn blast_radius(
    lineage: &Lineage,
    from: NodeIndex,
    column: Option<&ColumnChange>,
) -> BlastRadius {
    let graph = lineage.graph();

    // Breadth-first, so the first time we see a node is at its minimum depth.
    let mut depth_of: HashMap<NodeIndex, u32> = HashMap::new();
    let mut queue = VecDeque::from([(from, 0u32)]);
    while let Some((index, depth)) = queue.pop_front() {
        for child in graph.neighbors_directed(index, Direction::Outgoing) {
            if child != from && !depth_of.contains_key(&child) {
                depth_of.insert(child, depth + 1);
                queue.push_back((child, depth + 1));
            }
        }
    }

    let mut nodes: Vec<Impact> = depth_of
        .iter()
        .map(|(&index, &depth)| {
            let node = lineage.node(index);
            let mut parents: Vec<String> = graph
                .neighbors_directed(index, Direction::Incoming)
                .filter(|parent| *parent == from || depth_of.contains_key(parent))
                .map(|parent| lineage.node(parent).unique_id.clone())
                .collect();
            parents.sort();
            parents.dedup();
            let reads_sql = matches!(node.kind, NodeKind::Model | NodeKind::Snapshot);
            let column = match (column, &node.sql) {
                (Some(change), Some(sql)) if reads_sql => {
                    Some(find_column_use(sql, change, lineage.dialect()))
                }
                _ => None,
            };
            Impact {
                unique_id: node.unique_id.clone(),
                name: node.name.clone(),
                kind: node.kind,
                depth,
                parents,
                materialized: node.materialized.clone(),
                owner: node.owner.clone(),
                column,
                learned: node.learned,
            }
        })
        .collect();
    nodes.sort_by(|a, b| (a.depth, &a.unique_id).cmp(&(b.depth, &b.unique_id)));

    let summary = summarize(&nodes);
    BlastRadius {
        from: lineage.node(from).unique_id.clone(),
        nodes,
        summary,
    }
}

fn summarize(nodes: &[Impact]) -> Summary {
    let mut summary = Summary {
        total: nodes.len(),
        ..Summary::default()
    };
    let mut owners = BTreeSet::new();
    for impact in nodes {
        *summary
            .by_kind
            .entry(impact.kind.as_str().to_string())
            .or_default() += 1;
        if let Some(materialized) = &impact.materialized {
            *summary
                .by_materialization
                .entry(materialized.clone())
                .or_default() += 1;
        }
        if let Some(owner) = &impact.owner {
            owners.insert(owner.clone());
        }
        if let Some(finding) = &impact.column {
            if finding.uses.iter().any(|u| u.risk.is_breaks()) {
                summary.break_risks.push(impact.unique_id.clone());
            } else if finding
                .uses
                .iter()
                .any(|u| matches!(u.risk, Risk::DependsOnData { .. }))
            {
                summary.depends_on_data.push(impact.unique_id.clone());
            }
        }
    }
    summary.owners = owners.into_iter().collect();
    summary
}

impl BlastRadius {
    pub fn impact(&self, unique_id: &str) -> Option<&Impact> {
        self.nodes
            .iter()
            .find(|impact| impact.unique_id == unique_id)
    }

    /// Does this node read the changed column itself, not a column of the same name a
    /// model in between computed from it? True for the changed node's direct readers,
    /// and below a model only when that model passes the column through as it is
    /// (reads it and does nothing else with it). A parent outside the blast radius is
    /// the changed node.
    pub fn sees_column(&self, unique_id: &str) -> bool {
        let Some(impact) = self.impact(unique_id) else {
            return true;
        };
        impact
            .parents
            .iter()
            .any(|parent| match self.impact(parent) {
                None => true,
                Some(p) => {
                    p.column
                        .as_ref()
                        .is_some_and(|c| c.reads && c.uses.is_empty())
                        && self.sees_column(parent)
                }
            })
    }

    /// The direct children of a node within the blast radius, in (depth, unique_id)
    /// order. A console can expand the tree lazily with this.
    pub fn children(&self, unique_id: &str) -> Vec<&Impact> {
        self.nodes
            .iter()
            .filter(|impact| impact.parents.iter().any(|parent| parent == unique_id))
            .collect()
    }

    /// The DAG expanded into a tree rooted at the changed node: a node appears under
    /// each of its parents. A node never appears under itself on one path, and after
    /// `fan_out_cap` children a parent gets one `"+N more"` row instead of the rest.
    ///
    /// Expanding a DAG repeats shared subtrees, so on a large graph this can be long;
    /// a console that shows only what is expanded should walk `children` instead.
    pub fn to_tree(&self, fan_out_cap: usize) -> Vec<TreeRow> {
        let mut children_of: HashMap<&str, Vec<&Impact>> = HashMap::new();
        for impact in &self.nodes {
            for parent in &impact.parents {
                children_of.entry(parent.as_str()).or_default().push(impact);
            }
        }
        let mut rows = vec![TreeRow {
            depth: 0,
            unique_id: self.from.clone(),
            label: self.from.clone(),
            is_more: false,
        }];
        let mut path = vec![self.from.as_str()];
        add_children(&children_of, &mut path, fan_out_cap, &mut rows);
        rows
    }
}

fn add_children<'a>(
    children_of: &HashMap<&str, Vec<&'a Impact>>,
    path: &mut Vec<&'a str>,
    fan_out_cap: usize,
    rows: &mut Vec<TreeRow>,
) {
    let parent = *path.last().expect("the path always holds the root");
    let children: Vec<&Impact> = children_of
        .get(parent)
        .map(|children| {
            children
                .iter()
                .copied()
                .filter(|child| !path.contains(&child.unique_id.as_str()))
                .collect()
        })
        .unwrap_or_default();
    for (shown, child) in children.iter().enumerate() {
        if shown == fan_out_cap {
            rows.push(TreeRow {
                depth: path.len(),
                unique_id: parent.to_string(),
                label: format!("+{} more", children.len() - fan_out_cap),
                is_more: true,
            });
            break;
        }
        rows.push(TreeRow {
            depth: path.len(),
            unique_id: child.unique_id.clone(),
            label: tree_label(child),
            is_more: false,
        });
        path.push(child.unique_id.as_str());
        add_children(children_of, path, fan_out_cap, rows);
        path.pop();
    }
}

/// e.g. `fct_sales_pacing (model, table) · analytics-owner`
fn tree_label(impact: &Impact) -> String {
    let mut label = format!("{} ({}", impact.name, impact.kind.as_str());
    if let Some(materialized) = &impact.materialized {
        label.push_str(", ");
        label.push_str(materialized);
    }
    label.push(')');
    if let Some(owner) = &impact.owner {
        label.push_str(" · ");
        label.push_str(owner);
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a -> b -> d, a -> c -> d, d -> e
    fn diamond() -> Lineage {
        let node = |id: &str, parents: &[&str]| {
            format!(
                r#""{id}": {{"resource_type": "model", "name": "{id}", "config": {{"materialized": "table"}},
                    "depends_on": {{"nodes": {parents:?}}}}}"#
            )
        };
        let nodes = [
            node("model.p.a", &[]),
            node("model.p.b", &["model.p.a"]),
            node("model.p.c", &["model.p.a"]),
            node("model.p.d", &["model.p.b", "model.p.c"]),
            node("model.p.e", &["model.p.d"]),
        ]
        .join(",");
        let text = format!(
            r#"{{"metadata": {{"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"}},
                 "nodes": {{{nodes}}}}}"#
        );
        Lineage::from_json(&text, "diamond.json").unwrap()
    }

    #[test]
    fn depths_parents_and_order() {
        let lineage = diamond();
        let blast = lineage.blast_radius(lineage.resolve("model.p.a").unwrap(), None);
        let rows: Vec<(u32, &str)> = blast
            .nodes
            .iter()
            .map(|i| (i.depth, i.unique_id.as_str()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (1, "model.p.b"),
                (1, "model.p.c"),
                (2, "model.p.d"),
                (3, "model.p.e")
            ]
        );
        assert_eq!(
            blast.impact("model.p.d").unwrap().parents,
            vec!["model.p.b", "model.p.c"]
        );
        assert_eq!(blast.summary.by_kind["model"], 4);
        assert_eq!(blast.summary.by_materialization["table"], 4);
    }

    #[test]
    fn parents_outside_the_radius_are_left_out() {
        let lineage = diamond();
        let blast = lineage.blast_radius(lineage.resolve("model.p.b").unwrap(), None);
        assert_eq!(
            blast.impact("model.p.d").unwrap().parents,
            vec!["model.p.b"]
        );
    }

    #[test]
    fn tree_repeats_shared_children_and_caps_fan_out() {
        let lineage = diamond();
        let blast = lineage.blast_radius(lineage.resolve("model.p.a").unwrap(), None);
        let tree: Vec<(usize, String)> = blast
            .to_tree(10)
            .into_iter()
            .map(|row| (row.depth, row.unique_id))
            .collect();
        let expected = [
            (0, "model.p.a"),
            (1, "model.p.b"),
            (2, "model.p.d"),
            (3, "model.p.e"),
            (1, "model.p.c"),
            (2, "model.p.d"),
            (3, "model.p.e"),
        ];
        let expected: Vec<(usize, String)> = expected
            .iter()
            .map(|(d, id)| (*d, id.to_string()))
            .collect();
        assert_eq!(tree, expected);

        let capped = blast.to_tree(1);
        let more: Vec<&TreeRow> = capped.iter().filter(|row| row.is_more).collect();
        assert_eq!(more.len(), 1);
        assert_eq!(more[0].label, "+1 more");
        assert_eq!(more[0].unique_id, "model.p.a");
        assert_eq!(more[0].depth, 1);
    }
}
