//! The blast radius arrives as a flat DAG (each node names its parents). Here it becomes
//! a tree: a node appears under each of its parents, so every path from the change is
//! visible. A DAG can hold cycles (bad manifests do) and fan out widely, so expansion
//! stops at a node already on the path and caps the children shown under one parent.
//! This runs once per snapshot change, never per frame.

use std::collections::{HashMap, HashSet};

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use tui_tree_widget::TreeItem;

use crate::console::theme::Theme;
use crate::console::widgets::cut_spans;
use crate::engine::api::BlastNode;

/// Children shown under one parent before the rest fold into a "+N more" row.
pub const MAX_CHILDREN: usize = 12;
/// Rows in the whole tree: a DAG with many diamonds expands exponentially into paths.
pub const MAX_ROWS: usize = 2_000;

/// Identifier of the "+N more" row; blast node ids never start with `+`.
const MORE_ID: &str = "+more";

/// One row of the expanded tree, before styling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    /// Unique among its siblings; a path of these identifies a row.
    pub id: String,
    pub what: RowKind,
    pub children: Vec<TreeRow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    /// A blast node, by index into the incident's `blast`.
    Node(usize),
    /// The node is already on the path from the root: shown, not expanded again.
    Cycle(usize),
    /// Children left out by the fan-out cap or the row budget.
    More(usize),
}

/// Expand the DAG into tree rows. Roots are the nodes with no parent inside the blast
/// radius (their parent is the changed table itself).
pub fn build(blast: &[BlastNode]) -> Vec<TreeRow> {
    let index_of: HashMap<&str, usize> = blast
        .iter()
        .enumerate()
        .map(|(index, node)| (node.id.as_str(), index))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); blast.len()];
    let mut roots = Vec::new();
    for (index, node) in blast.iter().enumerate() {
        let mut has_parent_inside = false;
        for parent in &node.parents {
            if let Some(&parent_index) = index_of.get(parent.as_str()) {
                has_parent_inside = true;
                // A node listing the same parent twice is still one row under it.
                if !children[parent_index].contains(&index) {
                    children[parent_index].push(index);
                }
            }
        }
        if !has_parent_inside {
            roots.push(index);
        }
    }
    let mut budget = MAX_ROWS;
    let mut path = HashSet::new();
    expand(&roots, blast, &children, &mut path, &mut budget)
}

fn expand(
    indexes: &[usize],
    blast: &[BlastNode],
    children: &[Vec<usize>],
    path: &mut HashSet<usize>,
    budget: &mut usize,
) -> Vec<TreeRow> {
    let mut rows = Vec::new();
    for (shown, &index) in indexes.iter().enumerate() {
        if shown == MAX_CHILDREN || *budget == 0 {
            rows.push(TreeRow {
                id: MORE_ID.to_string(),
                what: RowKind::More(indexes.len() - shown),
                children: Vec::new(),
            });
            break;
        }
        *budget -= 1;
        let id = blast[index].id.clone();
        if path.contains(&index) {
            rows.push(TreeRow {
                id,
                what: RowKind::Cycle(index),
                children: Vec::new(),
            });
            continue;
        }
        path.insert(index);
        let below = expand(&children[index], blast, children, path, budget);
        path.remove(&index);
        rows.push(TreeRow {
            id,
            what: RowKind::Node(index),
            children: below,
        });
    }
    rows
}

/// Paths of every row that has children: the tree opens fully the first time.
pub fn all_parent_paths(rows: &[TreeRow]) -> HashSet<Vec<String>> {
    let mut paths = HashSet::new();
    let mut prefix = Vec::new();
    collect_parents(rows, &mut prefix, &mut paths);
    paths
}

fn collect_parents(rows: &[TreeRow], prefix: &mut Vec<String>, out: &mut HashSet<Vec<String>>) {
    for row in rows {
        if row.children.is_empty() {
            continue;
        }
        prefix.push(row.id.clone());
        out.insert(prefix.clone());
        collect_parents(&row.children, prefix, out);
        prefix.pop();
    }
}

/// Paths of the rows a person can currently see, top to bottom, given what is open.
pub fn visible_paths(rows: &[TreeRow], opened: &HashSet<Vec<String>>) -> Vec<Vec<String>> {
    let mut visible = Vec::new();
    let mut prefix = Vec::new();
    collect_visible(rows, opened, &mut prefix, &mut visible);
    visible
}

fn collect_visible(
    rows: &[TreeRow],
    opened: &HashSet<Vec<String>>,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    for row in rows {
        prefix.push(row.id.clone());
        out.push(prefix.clone());
        if !row.children.is_empty() && opened.contains(prefix.as_slice()) {
            collect_visible(&row.children, opened, prefix, out);
        }
        prefix.pop();
    }
}

/// True when the row at `path` has children (it can be opened or closed).
pub fn has_children(rows: &[TreeRow], path: &[String]) -> bool {
    let mut level = rows;
    let mut found = None;
    for id in path {
        let Some(row) = level.iter().find(|row| &row.id == id) else {
            return false;
        };
        level = &row.children;
        found = Some(row);
    }
    found.is_some_and(|row| !row.children.is_empty())
}

/// Columns tui-tree-widget puts before a label: the selection mark ("▶ ") and the
/// node's symbol ("▾ "), plus two a level of depth.
const LABEL_INDENT: usize = 4;

/// Styled items for tui-tree-widget, each label cut with `…` to what is left of `width`
/// at its depth. Built when the rows, the theme or the pane's width change (see
/// `TreeView::items`), never per frame.
pub fn items(
    rows: &[TreeRow],
    blast: &[BlastNode],
    theme: &Theme,
    width: u16,
) -> Vec<TreeItem<'static, String>> {
    items_at(rows, blast, theme, width as usize, 0)
}

fn items_at(
    rows: &[TreeRow],
    blast: &[BlastNode],
    theme: &Theme,
    width: usize,
    depth: usize,
) -> Vec<TreeItem<'static, String>> {
    let room = width.saturating_sub(LABEL_INDENT + 2 * depth);
    rows.iter()
        .map(|row| {
            let label = Line::from(cut_spans(label(row, blast, theme).spans, room));
            let children = items_at(&row.children, blast, theme, width, depth + 1);
            // Ids are unique among siblings by construction (children are de-duplicated
            // and there is at most one "+N more" row), so this cannot fail; a leaf is the
            // safe fallback all the same.
            TreeItem::new(row.id.clone(), label.clone(), children)
                .unwrap_or_else(|_| TreeItem::new_leaf(row.id.clone(), label))
        })
        .collect()
}

fn label(row: &TreeRow, blast: &[BlastNode], theme: &Theme) -> Line<'static> {
    match row.what {
        RowKind::More(hidden) => Line::from(Span::styled(format!("+{hidden} more"), theme.muted)),
        RowKind::Cycle(index) => Line::from(vec![
            Span::raw(blast[index].name.clone()),
            Span::styled("  ↻ cycle, not expanded", theme.warn),
        ]),
        RowKind::Node(index) => {
            let node = &blast[index];
            let mut spans = vec![
                Span::raw(node.name.clone()),
                Span::styled(format!("  {}", node.kind), theme.muted),
            ];
            if node.break_risk {
                spans.push(Span::styled("  ⚠ break risk", theme.crit));
            }
            if let Some(finding) = &node.finding {
                let style = if node.break_risk {
                    theme.crit
                } else {
                    Style::default()
                };
                spans.push(Span::styled(format!(": {finding}"), style));
            }
            if let Some(seen) = node.learned {
                spans.push(Span::styled(
                    format!("  · learned from events, last seen {seen}"),
                    theme.muted,
                ));
            }
            Line::from(spans)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, parents: &[&str]) -> BlastNode {
        BlastNode {
            id: id.to_string(),
            name: id.to_string(),
            kind: "model".to_string(),
            depth: 1,
            parents: parents.iter().map(|p| p.to_string()).collect(),
            finding: None,
            break_risk: false,
            learned: None,
        }
    }

    /// A job learned from OpenLineage events says so on its row, with when it was last
    /// seen, in words (never colour alone).
    #[test]
    fn a_node_learned_from_events_is_marked() {
        let mut task = node("openlineage.job.airflow/exports.push", &[]);
        task.name = "exports.push".into();
        task.kind = "job".into();
        task.learned = Some(crate::clock::Timestamp::parse("2026-11-02T02:10:00Z").unwrap());
        let blast = vec![node("model.a", &[]), task];
        let rows = build(&blast);
        let text = |row: &TreeRow| -> String {
            label(row, &blast, &Theme::fallback())
                .spans
                .iter()
                .map(|s| s.content.to_string())
                .collect()
        };
        assert_eq!(text(&rows[0]), "model.a  model");
        assert_eq!(
            text(&rows[1]),
            "exports.push  job  · learned from events, last seen 2026-11-02T02:10:00Z"
        );
    }

    fn shape(rows: &[TreeRow]) -> String {
        rows.iter()
            .map(|row| {
                let head = match row.what {
                    RowKind::Node(_) => row.id.clone(),
                    RowKind::Cycle(_) => format!("{}(cycle)", row.id),
                    RowKind::More(n) => format!("+{n}"),
                };
                if row.children.is_empty() {
                    head
                } else {
                    format!("{head}[{}]", shape(&row.children))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_node_appears_under_each_parent() {
        let blast = [
            node("stg", &["source"]),
            node("a", &["stg"]),
            node("b", &["stg"]),
            node("job", &["a", "b"]),
        ];
        assert_eq!(shape(&build(&blast)), "stg[a[job] b[job]]");
    }

    #[test]
    fn cycles_are_shown_once_and_not_expanded() {
        let blast = [
            node("a", &["source"]),
            node("b", &["a", "c"]),
            node("c", &["b"]),
        ];
        assert_eq!(shape(&build(&blast)), "a[b[c[b(cycle)]]]");
    }

    #[test]
    fn a_pure_cycle_without_roots_shows_nothing_rather_than_looping() {
        let blast = [node("a", &["b"]), node("b", &["a"])];
        assert_eq!(build(&blast), Vec::new());
    }

    #[test]
    fn wide_fan_out_folds_into_more_row() {
        let mut blast = vec![node("root", &[])];
        for n in 0..MAX_CHILDREN + 5 {
            blast.push(node(&format!("child{n}"), &["root"]));
        }
        let rows = build(&blast);
        let children = &rows[0].children;
        assert_eq!(children.len(), MAX_CHILDREN + 1);
        assert_eq!(children.last().unwrap().what, RowKind::More(5));
    }

    #[test]
    fn diamonds_stop_at_the_row_budget() {
        // Ten layers of two nodes each, every node a child of both nodes above:
        // 2^10 paths per leaf, far past the budget.
        let mut blast = vec![node("l0a", &[]), node("l0b", &[])];
        for layer in 1..20 {
            let above = [format!("l{}a", layer - 1), format!("l{}b", layer - 1)];
            let parents: Vec<&str> = above.iter().map(String::as_str).collect();
            blast.push(node(&format!("l{layer}a"), &parents));
            blast.push(node(&format!("l{layer}b"), &parents));
        }
        let rows = build(&blast);
        let opened = all_parent_paths(&rows);
        let visible = visible_paths(&rows, &opened);
        assert!(visible.len() <= MAX_ROWS * 2, "{} rows", visible.len());
    }

    #[test]
    fn visible_paths_follow_what_is_open() {
        let blast = [node("stg", &[]), node("a", &["stg"])];
        let rows = build(&blast);
        let closed = HashSet::new();
        assert_eq!(visible_paths(&rows, &closed), vec![vec!["stg".to_string()]]);
        let opened = all_parent_paths(&rows);
        assert_eq!(visible_paths(&rows, &opened).len(), 2);
        assert!(has_children(&rows, &["stg".to_string()]));
        assert!(!has_children(&rows, &["stg".to_string(), "a".to_string()]));
    }
}
