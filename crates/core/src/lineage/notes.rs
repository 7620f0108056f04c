//! Context notes: what the team knows that dbt does not.
//!
//! A notes file is TOML with two kinds of entries:
//!
//! ```toml
//! # Readers: dashboards, notebooks, reverse-ETL syncs and scheduled jobs that read
//! # from the warehouse. Each becomes a graph node whose parents are what it reads.
//! [[reader]]
//! id = "dashboard.onsale_pacing"      # unique across the manifest and the notes
//! kind = "dashboard"                  # dashboard | notebook | sync | job
//! name = "Revenue overview"           # optional; defaults to the id
//! reads = ["model.shop.fct_revenue"]
//! owner = "analytics-owner"           # optional
//! schedule = "15 * * * *"             # optional, for jobs
//!
//! # Writers: systems that load tables, and the setting that decides what they do on
//! # a change the warehouse cannot apply in place, with the values it can take.
//! [[writer]]
//! id = "loader.payments"
//! name = "payments loader"
//! writes = ["raw.payments"]
//! owner = "platform-owner"
//! setting = "on_incompatible_change"
//! value = "recreate"
//! [[writer.option]]
//! value = "recreate"
//! effect = "recreate"        # recreate | pause_table | pause_writer | fail | apply_in_place
//! [[writer.option]]
//! value = "pause"
//! effect = "pause_table"
//! note = "resumed by hand from the loader's console"   # optional
//!
//! # Moves: a path or a name that changed (a storage migration, a schema renamed), so a
//! # run that fails on the old one is traced to the move.
//! [[moved]]
//! from = "/mnt/exports"              # a path (its prefix) or a name, as errors quote it
//! to = "/data/exports"
//! note = "storage migration, 1 Nov"  # optional
//!
//! # Owners: a role for every node whose unique_id or relation name matches one of
//! # the globs, unless the node already has an owner. The first matching entry wins.
//! [[owner]]
//! role = "analytics-owner"
//! covers = ["model.shop.*", "ANALYTICS.*"]
//! ```
//!
//! `reads` entries are resolved exactly like `dataward lineage --from`: a unique_id, a
//! relation name (`db.schema.table` or `schema.table`, any case), a node name, or
//! another reader's id. An entry that matches nothing, or more than one node, is an
//! error naming the reader. A reader that reads itself, directly or through other
//! readers, is an error naming the cycle.
//!
//! In `covers`, `*` matches any run of characters (nothing else is special); matching
//! ignores case and is tried against the unique_id, the relation name without quotes,
//! and its `schema.table` form.

use std::collections::HashMap;
use std::path::Path;

use petgraph::graph::NodeIndex;
use petgraph::Direction;
use serde::Deserialize;

use super::{relation_forms, Lineage, LineageError, Node, NodeKind};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notes {
    #[serde(default, rename = "reader")]
    pub readers: Vec<Reader>,
    #[serde(default, rename = "owner")]
    pub owners: Vec<OwnerRule>,
    #[serde(default, rename = "writer")]
    pub writers: Vec<Writer>,
    #[serde(default)]
    pub moved: Vec<Moved>,
    /// The file the notes came from, for error messages.
    #[serde(skip)]
    pub origin: String,
}

/// A path or a name the team moved: what was `from` is `to` now.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Moved {
    pub from: String,
    pub to: String,
    pub note: Option<String>,
}

impl Moved {
    /// Does `used` (a path or a name an error quotes) name what moved: the same name,
    /// or a path under the moved one?
    pub fn covers(&self, used: &str) -> bool {
        let from = self.from.trim_end_matches('/');
        used.eq_ignore_ascii_case(from)
            || used
                .strip_prefix(from)
                .is_some_and(|rest| rest.starts_with('/') && from.contains('/'))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reader {
    pub id: String,
    pub kind: ReaderKind,
    pub name: Option<String>,
    pub reads: Vec<String>,
    pub owner: Option<String>,
    pub schedule: Option<String>,
}

/// A system that loads tables (a CDC mover, an ingestion stream) and the setting that
/// decides what it does with a change the warehouse cannot apply in place.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Writer {
    pub id: String,
    pub name: Option<String>,
    pub writes: Vec<String>,
    pub owner: Option<String>,
    pub setting: Option<String>,
    pub value: Option<String>,
    /// The values the setting can take, with what each does: a note to the writer's
    /// owner says what each would have meant for the incident at hand.
    #[serde(default, rename = "option")]
    pub options: Vec<WriterOption>,
}

/// One value of a writer's setting and what it does to the table on a change the
/// warehouse cannot apply in place.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct WriterOption {
    pub value: String,
    pub effect: OptionEffect,
    /// Anything else the team wants the note to say about it.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionEffect {
    /// Drop the table, re-create it with the new type and load it again from scratch.
    Recreate,
    /// Stop loading this table only; it keeps its rows and old type.
    PauseTable,
    /// Stop the whole writer: every table it loads.
    PauseWriter,
    /// Refuse the change and fail at once.
    Fail,
    /// Change the column's type in place, keeping the rows.
    ApplyInPlace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReaderKind {
    Dashboard,
    Notebook,
    Sync,
    Job,
}

impl ReaderKind {
    fn node_kind(self) -> NodeKind {
        match self {
            ReaderKind::Dashboard => NodeKind::Dashboard,
            ReaderKind::Notebook => NodeKind::Notebook,
            ReaderKind::Sync => NodeKind::Sync,
            ReaderKind::Job => NodeKind::Job,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerRule {
    pub role: String,
    pub covers: Vec<String>,
}

impl Notes {
    pub fn load(path: &Path) -> Result<Notes, LineageError> {
        let text = std::fs::read_to_string(path).map_err(|e| LineageError::Read {
            file: path.display().to_string(),
            problem: e.to_string(),
        })?;
        Notes::parse(&text, &path.display().to_string())
    }

    /// Parse notes text; `origin` names the file in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Notes, LineageError> {
        let mut notes: Notes = toml::from_str(text).map_err(|e| LineageError::Notes {
            file: origin.to_string(),
            entry: "TOML".to_string(),
            // TOML errors quote the offending line.
            problem: crate::config::redact_secrets(e.to_string().trim_end()),
        })?;
        notes.origin = origin.to_string();
        let mut seen = HashMap::new();
        for reader in &notes.readers {
            if reader.id.trim().is_empty() {
                return Err(notes.error("a reader", "its id is empty"));
            }
            if seen.insert(reader.id.as_str(), ()).is_some() {
                return Err(notes.error(&reader_entry(&reader.id), "the id is used twice"));
            }
        }
        for writer in &notes.writers {
            let entry = format!("writer {:?}", writer.id);
            if let (Some(value), false) = (&writer.value, writer.options.is_empty()) {
                if !writer.options.iter().any(|o| &o.value == value) {
                    let listed: Vec<&str> =
                        writer.options.iter().map(|o| o.value.as_str()).collect();
                    return Err(notes.error(
                        &entry,
                        format!(
                            "value {value:?} is not one of its options ({})",
                            listed.join(", ")
                        ),
                    ));
                }
            }
            if !writer.options.is_empty() && writer.setting.is_none() {
                return Err(notes.error(&entry, "lists options but names no setting"));
            }
        }
        for moved in &notes.moved {
            if moved.from.trim().is_empty() || moved.to.trim().is_empty() {
                return Err(notes.error(
                    &format!("moved {:?}", moved.from),
                    "from and to must both name something",
                ));
            }
        }
        for rule in &notes.owners {
            if rule.covers.is_empty() {
                return Err(notes.error(
                    &format!("owner {:?}", rule.role),
                    "covers is empty; list at least one glob",
                ));
            }
        }
        Ok(notes)
    }

    fn error(&self, entry: &str, problem: impl Into<String>) -> LineageError {
        LineageError::Notes {
            file: self.origin.clone(),
            entry: entry.to_string(),
            problem: problem.into(),
        }
    }

    /// Add the readers to the graph and fill owners from the owner rules.
    pub(super) fn apply(&self, lineage: &mut Lineage) -> Result<(), LineageError> {
        // All readers first, so a reader can read one defined further down the file.
        let mut reader_nodes = Vec::new();
        for reader in &self.readers {
            if lineage.index_of(&reader.id).is_some() {
                return Err(self.error(
                    &reader_entry(&reader.id),
                    "this id is already a node in the manifest (or an earlier notes file)",
                ));
            }
            let kind = reader.kind.node_kind();
            reader_nodes.push(lineage.add_node(Node {
                owner: reader.owner.clone(),
                schedule: reader.schedule.clone(),
                ..Node::bare(
                    reader.id.clone(),
                    reader.name.clone().unwrap_or_else(|| reader.id.clone()),
                    kind,
                    kind.as_str().to_string(),
                )
            }));
        }
        for (reader, &reader_index) in self.readers.iter().zip(&reader_nodes) {
            for read in &reader.reads {
                let parent = lineage.resolve(read).map_err(|e| {
                    let problem = match e {
                        LineageError::Ambiguous { candidates, .. } => format!(
                            "reads {read:?}, which matches several nodes: {}; use a unique_id",
                            candidates.join(", ")
                        ),
                        _ => format!(
                            "reads {read:?}, which is no unique_id, relation name, \
                             node name or reader id"
                        ),
                    };
                    self.error(&reader_entry(&reader.id), problem)
                })?;
                // The graph drops self-loops, so a reader naming itself is caught here.
                if parent == reader_index {
                    return Err(self.error(
                        &reader_entry(&reader.id),
                        format!("reads itself through a cycle: {0} reads {0}", reader.id),
                    ));
                }
                lineage.add_edge(parent, reader_index);
            }
        }
        self.check_reader_cycles(lineage, &reader_nodes)?;
        for writer in &self.writers {
            for table in &writer.writes {
                lineage.resolve(table).map_err(|e| {
                    self.error(
                        &format!("writer {:?}", writer.id),
                        format!("writes {table:?}: {e}"),
                    )
                })?;
            }
            lineage.writers.push(writer.clone());
        }
        for moved in &self.moved {
            lineage.moved.push(moved.clone());
        }
        self.fill_owners(lineage);
        Ok(())
    }

    /// Manifest nodes never read readers, so any cycle runs through readers only.
    fn check_reader_cycles(
        &self,
        lineage: &Lineage,
        reader_nodes: &[NodeIndex],
    ) -> Result<(), LineageError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Unvisited,
            OnPath,
            Done,
        }
        let is_reader = |index: NodeIndex| reader_nodes.contains(&index);
        let mut marks: HashMap<NodeIndex, Mark> = HashMap::new();

        // Depth-first over "reads" edges; meeting a node already on the path is a cycle.
        fn visit(
            lineage: &Lineage,
            index: NodeIndex,
            is_reader: &dyn Fn(NodeIndex) -> bool,
            marks: &mut HashMap<NodeIndex, Mark>,
            path: &mut Vec<NodeIndex>,
        ) -> Option<Vec<NodeIndex>> {
            marks.insert(index, Mark::OnPath);
            path.push(index);
            for read in lineage
                .graph()
                .neighbors_directed(index, Direction::Incoming)
            {
                if !is_reader(read) {
                    continue;
                }
                match marks.get(&read).copied().unwrap_or(Mark::Unvisited) {
                    Mark::OnPath => {
                        let start = path.iter().position(|&p| p == read).unwrap_or(0);
                        let mut cycle = path[start..].to_vec();
                        cycle.push(read);
                        return Some(cycle);
                    }
                    Mark::Unvisited => {
                        if let Some(cycle) = visit(lineage, read, is_reader, marks, path) {
                            return Some(cycle);
                        }
                    }
                    Mark::Done => {}
                }
            }
            path.pop();
            marks.insert(index, Mark::Done);
            None
        }

        for &reader in reader_nodes {
            if marks.contains_key(&reader) {
                continue;
            }
            if let Some(cycle) = visit(lineage, reader, &is_reader, &mut marks, &mut Vec::new()) {
                let names: Vec<&str> = cycle
                    .iter()
                    .map(|&index| lineage.node(index).unique_id.as_str())
                    .collect();
                return Err(self.error(
                    &reader_entry(names[0]),
                    format!("reads itself through a cycle: {}", names.join(" reads ")),
                ));
            }
        }
        Ok(())
    }

    /// Owners from the rules, kept with the graph so nodes learned later (from
    /// OpenLineage events) get theirs the same way.
    fn fill_owners(&self, lineage: &mut Lineage) {
        lineage.owner_rules.extend(self.owners.iter().cloned());
        fill_owners(&self.owners, lineage);
    }
}

/// Every node without an owner gets the role of the first rule covering it.
pub(super) fn fill_owners(rules: &[OwnerRule], lineage: &mut Lineage) {
    for node in lineage.graph.node_weights_mut() {
        if node.owner.is_some() {
            continue;
        }
        let mut names = vec![node.unique_id.to_lowercase()];
        if let Some(relation) = &node.relation_name {
            names.extend(relation_forms(relation));
        }
        node.owner = rules
            .iter()
            .find(|rule| {
                rule.covers.iter().any(|glob| {
                    let glob = glob.to_lowercase();
                    names.iter().any(|name| glob_matches(&glob, name))
                })
            })
            .map(|rule| rule.role.clone());
    }
}

fn reader_entry(id: &str) -> String {
    format!("reader {id:?}")
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_matches(glob: &str, text: &str) -> bool {
    let pieces: Vec<&str> = glob.split('*').collect();
    if pieces.len() == 1 {
        return glob == text;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    // Middle pieces must appear in order between the fixed start and end.
    let mut rest = &text[first.len()..text.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_matches("model.shop.*", "model.shop.fct_sales"));
        assert!(!glob_matches("model.shop.*", "model.other.fct_sales"));
        assert!(glob_matches("shop.*", "shop.orders"));
        assert!(glob_matches("*.orders", "wh.shop.orders"));
        assert!(glob_matches("a*b*c", "axxbyyc"));
        assert!(!glob_matches("a*b*c", "axxcyyb"));
        assert!(!glob_matches("ab*ba", "aba"));
        assert!(glob_matches("exact", "exact"));
        assert!(!glob_matches("exact", "exactly"));
    }

    #[test]
    fn unknown_keys_and_kinds_are_errors() {
        let err = Notes::parse(
            "[[reader]]\nid = \"x\"\nkind = \"report\"\nreads = []\n",
            "notes.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("notes.toml: TOML: "), "{err}");
        assert!(err.contains("report"), "{err}");
        let err = Notes::parse("[[owner]]\nrole = \"r\"\ncover = []\n", "notes.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("cover"), "{err}");
    }

    #[test]
    fn duplicate_reader_ids_are_errors() {
        let text = "[[reader]]\nid = \"job.a\"\nkind = \"job\"\nreads = []\n\
                    [[reader]]\nid = \"job.a\"\nkind = \"job\"\nreads = []\n";
        let err = Notes::parse(text, "notes.toml").unwrap_err().to_string();
        assert_eq!(err, "notes.toml: reader \"job.a\": the id is used twice");
    }
}
