//! Lineage learned from OpenLineage run events: the jobs the schedulers reported and the
//! datasets they read and wrote join the graph, as the notes' readers do, so a table's
//! blast radius reaches an Airflow task that reads it without anyone writing it down.
//!
//! A dataset is the graph's node when its name resolves to one (`db.schema.table` is a
//! relation name, as `--from` reads it); otherwise it becomes a node of its own. A job
//! whose every output is already a node (a dbt model `dbt-ol` reported) adds only the
//! edges from what it read to what it wrote: the manifest has the model already. Any
//! other job is a node between its inputs and outputs. Every node added is marked with
//! when it was last seen in an event.

use chrono::{DateTime, Utc};
use petgraph::graph::NodeIndex;

use super::openlineage::{Dataset, JobName};
use super::{Lineage, Node, NodeKind};

/// One job as the events kept show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedJob {
    pub job: JobName,
    /// The latest event time of any of its events.
    pub last_seen: DateTime<Utc>,
    pub inputs: Vec<Dataset>,
    pub outputs: Vec<Dataset>,
}

/// The node id of a job learned from events.
pub fn job_id(job: &JobName) -> String {
    format!("openlineage.job.{}/{}", job.namespace, job.name)
}

fn dataset_id(dataset: &Dataset) -> String {
    format!("openlineage.dataset.{}/{}", dataset.namespace, dataset.name)
}

impl Lineage {
    /// A graph of nothing, for an engine with no manifest: events fill it.
    pub fn empty() -> Lineage {
        Lineage {
            graph: Default::default(),
            by_unique_id: Default::default(),
            writers: Vec::new(),
            owner_rules: Vec::new(),
            moved: Vec::new(),
            dialect: super::Dialect::from_adapter_type(None),
        }
    }

    /// This graph with the jobs and datasets learned from events joined to it.
    pub fn with_learned(mut self, jobs: &[LearnedJob]) -> Lineage {
        for learned in jobs {
            if learned.inputs.is_empty() && learned.outputs.is_empty() {
                // A run that read and wrote nothing (dbt-ol's invocation, a DAG run):
                // nothing downstream of anything.
                continue;
            }
            // Known from the manifest or the notes, not from an earlier event: a job
            // seen again still stands between what it reads and writes.
            let outputs_known = !learned.outputs.is_empty()
                && learned.outputs.iter().all(|output| {
                    self.known_node(output)
                        .is_some_and(|index| self.graph[index].learned.is_none())
                });
            let inputs: Vec<NodeIndex> = learned
                .inputs
                .iter()
                .map(|input| self.dataset_node(input, learned.last_seen))
                .collect();
            let outputs: Vec<NodeIndex> = learned
                .outputs
                .iter()
                .map(|output| self.dataset_node(output, learned.last_seen))
                .collect();
            if outputs_known {
                for &input in &inputs {
                    for &output in &outputs {
                        self.add_edge(input, output);
                    }
                }
                continue;
            }
            let job = self.learned_node(
                job_id(&learned.job),
                learned.job.name.clone(),
                NodeKind::Job,
                None,
                learned.last_seen,
            );
            for &input in &inputs {
                self.add_edge(input, job);
            }
            for &output in &outputs {
                self.add_edge(job, output);
            }
        }
        let rules = std::mem::take(&mut self.owner_rules);
        super::notes::fill_owners(&rules, &mut self);
        self.owner_rules = rules;
        self
    }

    /// The node a dataset already is: one learned before, or the one its name resolves
    /// to (exactly; an ambiguous name is no node).
    fn known_node(&self, dataset: &Dataset) -> Option<NodeIndex> {
        self.index_of(&dataset_id(dataset))
            .or_else(|| self.resolve(&dataset.name).ok())
    }

    fn dataset_node(&mut self, dataset: &Dataset, seen: DateTime<Utc>) -> NodeIndex {
        match self.known_node(dataset) {
            Some(index) => {
                let node = &mut self.graph[index];
                if node.learned.is_some_and(|at| at < seen) {
                    node.learned = Some(seen);
                }
                index
            }
            None => self.learned_node(
                dataset_id(dataset),
                dataset.name.clone(),
                NodeKind::Dataset,
                Some(dataset.name.clone()),
                seen,
            ),
        }
    }

    fn learned_node(
        &mut self,
        unique_id: String,
        name: String,
        kind: NodeKind,
        relation_name: Option<String>,
        seen: DateTime<Utc>,
    ) -> NodeIndex {
        if let Some(index) = self.index_of(&unique_id) {
            let node = &mut self.graph[index];
            node.learned = node.learned.max(Some(seen));
            return index;
        }
        self.add_node(Node {
            relation_name,
            learned: Some(seen),
            ..Node::bare(unique_id, name, kind, kind.as_str().to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"{
      "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
      "nodes": {
        "model.shop.orders": {"resource_type": "model", "name": "orders",
          "relation_name": "\"shop\".\"public\".\"orders\"", "config": {"materialized": "table"},
          "depends_on": {"nodes": []}},
        "model.shop.revenue": {"resource_type": "model", "name": "revenue",
          "relation_name": "\"shop\".\"public\".\"revenue\"", "config": {"materialized": "table"},
          "depends_on": {"nodes": ["model.shop.orders"]}}
      },
      "sources": {}, "child_map": {"model.shop.orders": ["model.shop.revenue"]}
    }"#;

    fn dataset(name: &str) -> Dataset {
        Dataset {
            namespace: "postgres://db:5432".into(),
            name: name.into(),
        }
    }

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    /// An Airflow task reading a model is in the model's blast radius, marked learned;
    /// a dbt model's own job adds no node; a run with no datasets adds nothing.
    #[test]
    fn jobs_from_events_join_the_blast_radius() {
        let lineage = Lineage::from_json(MANIFEST, "m.json")
            .unwrap()
            .with_notes_str(
                "[[owner]]\nrole = \"exports-owner\"\ncovers = [\"openlineage.job.airflow/*\"]\n\
                 [[owner]]\nrole = \"crm-owner\"\ncovers = [\"crm.*\"]\n",
                "notes.toml",
            )
            .unwrap();
        let before = lineage.len();
        let jobs = vec![
            LearnedJob {
                job: JobName {
                    namespace: "airflow".into(),
                    name: "exports.push_revenue".into(),
                },
                last_seen: at("2026-03-01T02:10:00Z"),
                inputs: vec![dataset("shop.public.revenue")],
                outputs: vec![dataset("crm.public.revenue_export")],
            },
            LearnedJob {
                job: JobName {
                    namespace: "dbt".into(),
                    name: "shop.public.shop.revenue".into(),
                },
                last_seen: at("2026-03-01T02:00:00Z"),
                inputs: vec![dataset("shop.public.orders")],
                outputs: vec![dataset("shop.public.revenue")],
            },
            LearnedJob {
                job: JobName {
                    namespace: "dbt".into(),
                    name: "dbt-run-shop".into(),
                },
                last_seen: at("2026-03-01T02:00:00Z"),
                inputs: vec![],
                outputs: vec![],
            },
        ];
        let lineage = lineage.with_learned(&jobs);
        // The Airflow task and the export table it writes.
        assert_eq!(lineage.len(), before + 2);
        let orders = lineage.resolve("model.shop.orders").unwrap();
        let blast = lineage.blast_radius(orders, None);
        let ids: Vec<(&str, u32, bool)> = blast
            .nodes
            .iter()
            .map(|n| (n.unique_id.as_str(), n.depth, n.learned.is_some()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("model.shop.revenue", 1, false),
                ("openlineage.job.airflow/exports.push_revenue", 2, true),
                (
                    "openlineage.dataset.postgres://db:5432/crm.public.revenue_export",
                    3,
                    true
                ),
            ]
        );
        assert_eq!(blast.nodes[1].kind, NodeKind::Job);
        // The notes' owner rules cover what events taught, as they cover the manifest.
        assert_eq!(blast.summary.owners, vec!["crm-owner", "exports-owner"]);
        assert_eq!(blast.nodes[1].learned, Some(at("2026-03-01T02:10:00Z")));
        // Learned again (the next batch of events) is the same graph: one node each,
        // the job still between its datasets.
        let again = lineage.clone().with_learned(&jobs);
        assert_eq!(again.len(), lineage.len());
        assert_eq!(again.graph().edge_count(), lineage.graph().edge_count());
    }
}
