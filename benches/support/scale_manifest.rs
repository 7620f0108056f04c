//! Scales a real dbt manifest up to a given number of nodes, for the lineage benchmark.
//!
//! The project's nodes (every section the lineage graph reads) are copied whole, each
//! copy with renamed ids (`model.hubspot.x` -> `model.hubspot.x__c7`), names and
//! relations, and its `depends_on` rewired to the same copy. Copies are then joined by
//! cross links: in every copy after the first, a few terminal models (models no other
//! model reads) also read a model of an earlier copy. That is how a large project looks
//! (many domains, loosely joined); links only run from earlier to later copies, so the
//! graph stays acyclic, and because a terminal model is never a link's source, a link
//! adds one hop instead of chaining through every copy. `child_map` and `parent_map`
//! are rebuilt from `depends_on`. Macros and docs are kept once, as in a real project.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value};

const SECTIONS: &[&str] = &[
    "nodes",
    "sources",
    "exposures",
    "metrics",
    "semantic_models",
    "saved_queries",
    "unit_tests",
];

/// Cross links into each copy after the first.
const LINKS_PER_COPY: usize = 4;

/// A manifest with at least `target_nodes` nodes, built from `base`.
pub fn scale(base: &Value, target_nodes: usize) -> Value {
    let base_nodes: Vec<(&str, &str, &Value)> = SECTIONS
        .iter()
        .filter_map(|section| Some((*section, base.get(*section)?.as_object()?)))
        .flat_map(|(section, entries)| {
            entries
                .iter()
                .map(move |(id, node)| (section, id.as_str(), node))
        })
        .collect();
    let copies = target_nodes.div_ceil(base_nodes.len()).max(1);

    // Models read by no other model (tests and exposures may read them).
    let mut read_by_a_model: HashMap<&str, bool> = HashMap::new();
    for (_, id, node) in &base_nodes {
        read_by_a_model.entry(id).or_insert(false);
        if id.starts_with("model.") {
            for parent in depends_on(node) {
                read_by_a_model.insert(parent, true);
            }
        }
    }
    let models: Vec<&str> = base_nodes
        .iter()
        .map(|(_, id, _)| *id)
        .filter(|id| id.starts_with("model."))
        .collect();
    let terminal: Vec<&str> = models
        .iter()
        .copied()
        .filter(|id| !read_by_a_model[id])
        .collect();
    let inner: Vec<&str> = models
        .iter()
        .copied()
        .filter(|id| read_by_a_model[id])
        .collect();

    let mut out = base.as_object().cloned().unwrap_or_default();
    let mut sections: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    let mut random = XorShift(0x5eed_1234_abcd_0001);
    for copy in 0..copies {
        for (section, id, node) in &base_nodes {
            let mut node = (*node).clone();
            rename_node(&mut node, copy);
            if copy > 0 && !terminal.is_empty() && !inner.is_empty() {
                // Pick this copy's linked models by position, so each gets at most one.
                let slot = terminal.iter().position(|t| t == id);
                if slot.is_some_and(|slot| slot < LINKS_PER_COPY) {
                    let earlier = random.below(copy);
                    let parent = inner[random.below(inner.len())];
                    add_parent(&mut node, renamed(parent, earlier));
                }
            }
            sections
                .entry(section)
                .or_default()
                .insert(renamed(id, copy), node);
        }
    }

    let mut child_map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut parent_map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entries in sections.values() {
        for (id, node) in entries {
            child_map.entry(id.clone()).or_default();
            let parents: Vec<String> = depends_on(node).map(str::to_string).collect();
            for parent in &parents {
                child_map
                    .entry(parent.clone())
                    .or_default()
                    .push(id.clone());
            }
            parent_map.insert(id.clone(), parents);
        }
    }
    for (section, entries) in sections {
        out.insert(section.to_string(), Value::Object(entries));
    }
    out.insert("child_map".into(), serde_json::to_value(child_map).unwrap());
    out.insert(
        "parent_map".into(),
        serde_json::to_value(parent_map).unwrap(),
    );
    Value::Object(out)
}

fn depends_on(node: &Value) -> impl Iterator<Item = &str> {
    node.pointer("/depends_on/nodes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Copy 0 keeps the real ids, so the real project stays inside the scaled one.
fn renamed(id: &str, copy: usize) -> String {
    if copy == 0 {
        id.to_string()
    } else {
        format!("{id}__c{copy}")
    }
}

fn rename_node(node: &mut Value, copy: usize) {
    if copy == 0 {
        return;
    }
    let Some(fields) = node.as_object_mut() else {
        return;
    };
    for key in ["unique_id", "name", "alias", "identifier"] {
        if let Some(Value::String(text)) = fields.get_mut(key) {
            *text = renamed(text, copy);
        }
    }
    if let Some(Value::String(relation)) = fields.get_mut("relation_name") {
        // `"db"."schema"."table"` -> `"db"."schema"."table__cN"`
        let quote = relation.ends_with('"');
        let bare = relation.trim_end_matches('"').to_string();
        *relation = format!("{}{}", renamed(&bare, copy), if quote { "\"" } else { "" });
    }
    if let Some(Value::Array(parents)) = fields
        .get_mut("depends_on")
        .and_then(|d| d.get_mut("nodes"))
    {
        for parent in parents {
            if let Value::String(id) = parent {
                *id = renamed(id, copy);
            }
        }
    }
}

fn add_parent(node: &mut Value, parent: String) {
    if let Some(Value::Array(parents)) = node.get_mut("depends_on").and_then(|d| d.get_mut("nodes"))
    {
        parents.push(Value::String(parent));
    }
}

/// A small deterministic generator, so every run builds the same manifest.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}
