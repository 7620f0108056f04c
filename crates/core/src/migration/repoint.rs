//! What still reads a wave's old names, and the diffs that repoint dbt to the new ones.
//!
//! The readers are the old table's direct children in the lineage (the manifest, the
//! notes' readers, and what OpenLineage events taught it). A dbt model among them
//! whose SQL names the old table, as `source('name', 'table')`, `ref('model')` or the
//! plain `schema.table`, gets a diff of its file to the new table: `source(...)` or
//! `ref(...)` when dbt knows the new table, else its plain name. The rollback of each
//! diff is the same diff backwards. Readers dbt does not build (a dashboard, a job in
//! the notes) are listed for their owners to move; no diff is guessed for them.

use petgraph::Direction;
use serde::{Deserialize, Serialize};

use crate::lineage::{Lineage, LineageError, Node, NodeKind};

/// A node that reads an old name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reader {
    pub unique_id: String,
    pub name: String,
    pub kind: String,
    pub owner: Option<String>,
    /// Whether a diff below repoints it.
    pub repointed: bool,
}

/// One file changed: `old` text to `new` text. Its rollback is `new` back to `old`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repoint {
    pub reader: String,
    pub file: String,
    pub old: String,
    pub new: String,
}

impl Repoint {
    /// The undo: the same file put back.
    pub fn rollback(&self) -> Repoint {
        Repoint {
            reader: self.reader.clone(),
            file: self.file.clone(),
            old: self.new.clone(),
            new: self.old.clone(),
        }
    }
}

/// The readers of `old` and the diffs repointing the dbt models among them to `new`.
/// An old name the lineage does not know has no readers to show (said by the caller).
pub fn plan(lineage: &Lineage, old: &str, new: &str) -> Option<(Vec<Reader>, Vec<Repoint>)> {
    let old_nodes = same_relation(lineage, old)?;
    let new_node = same_relation(lineage, new).and_then(|nodes| {
        // A seed and a source can share a relation: dbt SQL reads a source as a source.
        let mut nodes: Vec<&Node> = nodes.into_iter().map(|i| lineage.node(i)).collect();
        nodes.sort_by_key(|n| n.kind != NodeKind::Source);
        nodes.first().copied()
    });
    let plain_new = new.to_string();
    let new_call = new_node.and_then(dbt_call);
    let mut readers = Vec::new();
    let mut diffs = Vec::new();
    let mut children: Vec<_> = (old_nodes.iter())
        .flat_map(|from| {
            lineage
                .graph()
                .neighbors_directed(*from, Direction::Outgoing)
        })
        .collect();
    children.sort_by(|a, b| lineage.node(*a).unique_id.cmp(&lineage.node(*b).unique_id));
    children.dedup();
    for child in children {
        let node = lineage.node(child);
        let mut repointed = false;
        if let (NodeKind::Model, Some(sql), Some(file)) = (&node.kind, &node.raw_sql, &node.file) {
            let mut changed = sql.clone();
            for call in old_nodes.iter().filter_map(|i| dbt_call(lineage.node(*i))) {
                changed = match &new_call {
                    Some(to) => replace_call(&changed, &call, to, false),
                    // No dbt call names the new table: `{{ source(...) }}` becomes its
                    // plain name, braces and all.
                    None => replace_call(&changed, &call, &plain_new, true),
                };
            }
            // Plain SQL names the table outside Jinja: a dbt call goes in braces there.
            let in_sql = match &new_call {
                Some(call) => format!("{{{{ {call} }}}}"),
                None => plain_new.clone(),
            };
            changed = replace_word(&changed, old, &in_sql);
            if changed != *sql {
                repointed = true;
                diffs.push(Repoint {
                    reader: node.unique_id.clone(),
                    file: file.clone(),
                    old: sql.clone(),
                    new: changed,
                });
            }
        }
        readers.push(Reader {
            unique_id: node.unique_id.clone(),
            name: node.name.clone(),
            kind: node.resource_type.clone(),
            owner: node.owner.clone(),
            repointed,
        });
    }
    Some((readers, diffs))
}

/// Every node that is `name`: more than one when a seed and a source (or a model)
/// share the relation, as a project that seeds its own raw tables has. None when the
/// lineage does not know it.
fn same_relation(lineage: &Lineage, name: &str) -> Option<Vec<petgraph::graph::NodeIndex>> {
    match lineage.resolve(name) {
        Ok(index) => Some(vec![index]),
        Err(LineageError::Ambiguous { candidates, .. }) => Some(
            (candidates.iter())
                .filter_map(|id| lineage.resolve(id).ok())
                .collect(),
        ),
        Err(_) => None,
    }
}

/// How dbt SQL names `node`: `source('name', 'table')` or `ref('model')`.
fn dbt_call(node: &Node) -> Option<String> {
    match node.kind {
        NodeKind::Source => {
            // source.<package>.<source name>.<table>
            let parts: Vec<&str> = node.unique_id.splitn(4, '.').collect();
            let [_, _, source, table] = parts.as_slice() else {
                return None;
            };
            Some(format!("source('{source}', '{table}')"))
        }
        NodeKind::Model | NodeKind::Seed | NodeKind::Snapshot => {
            Some(format!("ref('{}')", node.name))
        }
        _ => None,
    }
}

/// `text` with every dbt call equal to `call` (quotes single or double, any spacing
/// inside the parentheses) replaced by `to`; with `unbrace`, a call standing alone in
/// `{{ }}` is replaced braces and all (`to` is plain SQL, not Jinja).
fn replace_call(text: &str, call: &str, to: &str, unbrace: bool) -> String {
    let wanted = canonical(call);
    let name = &call[..call.find('(').unwrap_or(0) + 1];
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(name) {
        let before_ok = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let Some(close) = rest[at..].find(')') else {
            break;
        };
        let candidate = &rest[at..at + close + 1];
        if before_ok && canonical(candidate) == wanted {
            let (head, tail) = (rest[..at].trim_end(), rest[at + close + 1..].trim_start());
            if unbrace && head.ends_with("{{") && tail.starts_with("}}") {
                out.push_str(&head[..head.len() - 2]);
                out.push_str(to);
                rest = &tail[2..];
                continue;
            }
            out.push_str(&rest[..at]);
            out.push_str(to);
        } else {
            out.push_str(&rest[..at + close + 1]);
        }
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    out
}

fn canonical(call: &str) -> String {
    call.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '"' { '\'' } else { c })
        .collect::<String>()
        .to_ascii_lowercase()
}

/// `text` with `schema.table` replaced where it stands as a whole name (not inside a
/// longer identifier), matched without regard to case.
fn replace_word(text: &str, name: &str, to: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let wanted = name.to_ascii_lowercase();
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
    let mut out = String::new();
    let mut last = 0;
    let mut from = 0;
    while let Some(found) = lower[from..].find(&wanted) {
        let at = from + found;
        let end = at + wanted.len();
        let before = text[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[end..].chars().next().is_none_or(|c| !ident(c));
        if before && after {
            out.push_str(&text[last..at]);
            out.push_str(to);
            last = end;
        }
        from = end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"{
      "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
      "sources": {
        "source.shop.legacy.orders": {"unique_id": "source.shop.legacy.orders",
          "resource_type": "source", "name": "orders", "source_name": "legacy",
          "schema": "legacy", "database": "db",
          "relation_name": "\"db\".\"legacy\".\"orders\""},
        "source.shop.core.orders": {"unique_id": "source.shop.core.orders",
          "resource_type": "source", "name": "orders", "source_name": "core",
          "schema": "core", "database": "db",
          "relation_name": "\"db\".\"core\".\"orders\""}
      },
      "nodes": {
        "model.shop.stg_orders": {"unique_id": "model.shop.stg_orders",
          "resource_type": "model", "name": "stg_orders", "schema": "analytics",
          "database": "db", "relation_name": "\"db\".\"analytics\".\"stg_orders\"",
          "original_file_path": "models/stg_orders.sql",
          "raw_code": "select * from {{ source(\"legacy\" , 'orders') }} where id > 0",
          "config": {"materialized": "view"},
          "depends_on": {"nodes": ["source.shop.legacy.orders"]}},
        "model.shop.order_audit": {"unique_id": "model.shop.order_audit",
          "resource_type": "model", "name": "order_audit", "schema": "analytics",
          "database": "db", "relation_name": "\"db\".\"analytics\".\"order_audit\"",
          "original_file_path": "models/order_audit.sql",
          "raw_code": "select count(*) from legacy.orders join legacy.orders_old using (id)",
          "config": {"materialized": "table"},
          "depends_on": {"nodes": ["source.shop.legacy.orders"]}}
      }
    }"#;

    #[test]
    fn models_reading_the_old_name_get_a_diff_to_the_new_and_its_rollback() {
        let lineage = Lineage::from_json(MANIFEST, "manifest.json").unwrap();
        let (readers, diffs) = plan(&lineage, "legacy.orders", "core.orders").unwrap();
        let names: Vec<&str> = readers.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["order_audit", "stg_orders"]);
        assert!(readers.iter().all(|r| r.repointed));
        assert_eq!(diffs.len(), 2);
        // A plain name is repointed to the new source; a longer name that starts the
        // same is left alone.
        assert_eq!(
            diffs[0].new,
            "select count(*) from {{ source('core', 'orders') }} join legacy.orders_old using (id)"
        );
        assert_eq!(
            diffs[1].new,
            "select * from {{ source('core', 'orders') }} where id > 0"
        );
        assert_eq!(diffs[1].file, "models/stg_orders.sql");
        let undo = diffs[1].rollback();
        assert_eq!(undo.new, diffs[1].old);
        assert_eq!(undo.old, diffs[1].new);
        assert!(plan(&lineage, "nowhere.orders", "core.orders").is_none());
    }
}
