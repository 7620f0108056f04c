//! `dataward lineage`: the blast radius of a node (and optionally of a column change:
//! every use of the column in each model, with what the new type does to it), as JSON
//! for scripts or as an indented tree for a person. Without `--manifest` it asks the
//! engine serving the data directory, whose lineage also holds what OpenLineage events
//! taught it (jobs and datasets no manifest or notes name).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;

use crate::sanitize::{Sanitize, Sanitized};

use crate::lineage::{
    BlastRadius, ColumnChange, ColumnFinding, Impact, Lineage, Node, Risk, Summary, UseFinding,
};

/// Children shown under one node in the text tree before a "+N more" row.
const FAN_OUT_CAP: usize = 12;

#[derive(Debug, Clone, clap::Args)]
pub struct LineageArgs {
    /// The dbt manifest.json (schema v7 to v12). Without it, the engine serving the
    /// data directory is asked: its lineage (the config's manifest and notes, and the
    /// jobs and datasets OpenLineage events named).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The dbt catalog.json, for column types.
    #[arg(long, value_name = "FILE", requires = "manifest")]
    pub catalog: Option<PathBuf>,
    /// Context notes (TOML): readers dbt does not know, and owners.
    #[arg(long, value_name = "FILE", requires = "manifest")]
    pub notes: Option<PathBuf>,
    /// The changed node: a unique_id, a relation name or a node name.
    #[arg(long, value_name = "NODE")]
    pub from: String,
    /// The changed column: report which models read it and how each uses it.
    #[arg(long, value_name = "COL", requires = "manifest")]
    pub column: Option<String>,
    /// The column's new type, for the break-risk judgement of each use (default: its
    /// type in the catalog).
    #[arg(long, value_name = "TYPE", requires = "column")]
    pub new_type: Option<String>,
    /// Print JSON instead of a tree.
    #[arg(long)]
    pub json: bool,
}

/// Load, compute, print. Bad input is an error (the caller exits 2 with its message).
pub fn run(
    args: LineageArgs,
    data_dir: impl FnOnce() -> anyhow::Result<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let report = match &args.manifest {
        Some(_) => build_report(&args)?,
        None => served_report(&data_dir()?, &args.from)?,
    };
    if args.json {
        println!("{}", crate::sanitize::json(&report, true)?);
    } else {
        print!("{}", render_tree(&Sanitized::new(report)));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `dataward lineage` prints, as data.
#[derive(Debug, Serialize)]
pub struct Report {
    pub from: FromNode,
    /// Exactly the nodes downstream of `from`, sorted by (depth, unique_id).
    pub nodes: Vec<ReportNode>,
    /// `break_risks` lists the nodes with a use the new type breaks, `depends_on_data`
    /// those with a use that runs only while every value converts (and none that breaks).
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<ColumnReport>,
}

#[derive(Debug, Serialize)]
pub struct FromNode {
    pub unique_id: String,
    pub name: String,
    pub resource_type: String,
    pub relation_name: Option<String>,
    pub materialized: Option<String>,
    pub owner: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ReportNode {
    pub unique_id: String,
    pub name: String,
    pub resource_type: String,
    pub depth: u32,
    pub parents: Vec<String>,
    pub materialized: Option<String>,
    pub owner: Option<String>,
    /// Learned from OpenLineage events: when last seen in one (the producer's clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<String>,
    /// With `--column`, for models and snapshots that have SQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<ColumnFinding>,
}

/// The column change as it was judged.
#[derive(Debug, Serialize)]
pub struct ColumnReport {
    pub name: String,
    /// The type the break-risk judgement used, if any.
    pub new_type: Option<String>,
    /// `"--new-type"` or `"catalog"`; null when no type was known.
    pub new_type_from: Option<&'static str>,
    /// False when no new type was known: uses are listed, none is judged a risk.
    pub break_risk_judged: bool,
    /// Nodes with a use that runs only while every value converts (and none that
    /// breaks): the warehouse can count the values that would not. The same list as
    /// `summary.depends_on_data`, here too because scripts read it here.
    pub depends_on_data: Vec<String>,
    /// Said when something limits the findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub fn build_report(args: &LineageArgs) -> anyhow::Result<Report> {
    let manifest = args.manifest.as_deref().context("--manifest")?;
    let mut lineage = Lineage::load_telling(
        manifest,
        args.notes.as_deref(),
        &mut crate::progress::bytes_on_stderr("loading manifest"),
    )?;
    if let Some(catalog) = &args.catalog {
        lineage = lineage.with_catalog(catalog)?;
    }
    let from = lineage.resolve(&args.from).context("--from")?;
    let from_node = lineage.node(from);

    let column = args
        .column
        .as_deref()
        .map(|column| judged_column(from_node, column, args.new_type.as_deref()));
    let change = column.as_ref().map(|report| ColumnChange {
        column: report.name.clone(),
        new_type: report.new_type.clone().unwrap_or_default(),
    });
    let blast = lineage.blast_radius(from, change.as_ref());
    Ok(report_from(&lineage, from_node, blast, column))
}

/// Where the new type comes from: `--new-type`, else the catalog's type of the column
/// on the changed node, else nowhere (and the report says so).
fn judged_column(from: &Node, column: &str, new_type: Option<&str>) -> ColumnReport {
    let (new_type, new_type_from) = match (new_type, from.column_type(column)) {
        (Some(given), _) => (Some(given.to_string()), Some("--new-type")),
        (None, Some(catalog)) => (Some(catalog.to_string()), Some("catalog")),
        (None, None) => (None, None),
    };
    let note = match (&new_type, from.columns.is_empty()) {
        (Some(_), _) => None,
        (None, true) => Some(format!(
            "no new type for {column}: pass --new-type TYPE or --catalog FILE; \
             uses are listed without a break-risk judgement"
        )),
        (None, false) => Some(format!(
            "the catalog lists no column {column} on {}; pass --new-type TYPE; \
             uses are listed without a break-risk judgement",
            from.unique_id
        )),
    };
    ColumnReport {
        name: column.to_string(),
        break_risk_judged: new_type.is_some(),
        depends_on_data: Vec::new(),
        new_type,
        new_type_from,
        note,
    }
}

fn report_from(
    lineage: &Lineage,
    from: &Node,
    blast: BlastRadius,
    mut column: Option<ColumnReport>,
) -> Report {
    let summary = blast.summary;
    if let Some(column) = &mut column {
        column.depends_on_data = summary.depends_on_data.clone();
    }
    let nodes = blast
        .nodes
        .into_iter()
        .map(|impact| {
            let resource_type = lineage
                .index_of(&impact.unique_id)
                .map(|index| lineage.node(index).resource_type.clone())
                .unwrap_or_else(|| impact.kind.as_str().to_string());
            report_node(impact, resource_type)
        })
        .collect();
    Report {
        from: FromNode {
            unique_id: from.unique_id.clone(),
            name: from.name.clone(),
            resource_type: from.resource_type.clone(),
            relation_name: from.relation_name.clone(),
            materialized: from.materialized.clone(),
            owner: from.owner.clone(),
        },
        nodes,
        summary,
        column,
    }
}

fn report_node(impact: Impact, resource_type: String) -> ReportNode {
    ReportNode {
        unique_id: impact.unique_id,
        name: impact.name,
        resource_type,
        depth: impact.depth,
        parents: impact.parents,
        materialized: impact.materialized,
        owner: impact.owner,
        learned: impact.learned.map(learned_text),
        column: impact.column,
    }
}

fn learned_text(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The blast radius as the engine serving `data_dir` sees it.
fn served_report(data_dir: &std::path::Path, from: &str) -> anyhow::Result<Report> {
    use serde_json::Value;
    let mut engine =
        crate::engine::client::Client::connect(data_dir, true)?.with_context(|| {
            format!(
                "no engine serves {}: start `dataward serve`, or pass --manifest",
                data_dir.display()
            )
        })?;
    let answer = engine
        .ask(crate::engine::api::Question::Lineage {
            from: from.to_string(),
        })?
        .map_err(|reason| anyhow::anyhow!("--from: {reason}"))?;
    let text = |value: &Value| value.as_str().map(str::to_string);
    let node = &answer["from"];
    let blast = &answer["blast"];
    let nodes = blast["nodes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|n| ReportNode {
            unique_id: text(&n["unique_id"]).unwrap_or_default(),
            name: text(&n["name"]).unwrap_or_default(),
            resource_type: text(&n["kind"]).unwrap_or_default(),
            depth: n["depth"].as_u64().unwrap_or_default() as u32,
            parents: serde_json::from_value(n["parents"].clone()).unwrap_or_default(),
            materialized: text(&n["materialized"]),
            owner: text(&n["owner"]),
            learned: text(&n["learned"])
                .and_then(|t| t.parse().ok())
                .map(learned_text),
            column: None,
        })
        .collect();
    Ok(Report {
        from: FromNode {
            unique_id: text(&node["unique_id"]).unwrap_or_default(),
            name: text(&node["name"]).unwrap_or_default(),
            resource_type: text(&node["resource_type"]).unwrap_or_default(),
            relation_name: text(&node["relation_name"]),
            materialized: text(&node["materialized"]),
            owner: text(&node["owner"]),
        },
        nodes,
        summary: serde_json::from_value(blast["summary"].clone())
            .context("the engine's blast radius summary")?,
        column: None,
    })
}

/// Every field of the report, destructured without `..`: see [`Sanitize`]. Names,
/// owners, types and SQL come from a manifest, a catalog and notes anyone may write.
impl Sanitize for Report {
    fn sanitize(&mut self) {
        let Report {
            from:
                FromNode {
                    unique_id,
                    name,
                    resource_type,
                    relation_name,
                    materialized,
                    owner,
                },
            nodes,
            summary:
                Summary {
                    total: _,
                    by_kind,
                    by_materialization,
                    owners,
                    break_risks,
                    depends_on_data: summary_depends_on_data,
                },
            column,
        } = self;
        for text in [unique_id, name, resource_type] {
            text.sanitize();
        }
        for text in [relation_name, materialized, owner] {
            text.sanitize();
        }
        by_kind.sanitize();
        by_materialization.sanitize();
        owners.sanitize();
        break_risks.sanitize();
        summary_depends_on_data.sanitize();
        for ReportNode {
            unique_id,
            name,
            resource_type,
            depth: _,
            parents,
            materialized,
            owner,
            learned,
            column,
        } in nodes
        {
            for text in [unique_id, name, resource_type] {
                text.sanitize();
            }
            learned.sanitize();
            materialized.sanitize();
            owner.sanitize();
            parents.sanitize();
            if let Some(ColumnFinding {
                reads: _,
                uses,
                method: _, // one of our own constants
            }) = column
            {
                for UseFinding {
                    kind: _, // an enum of ours
                    expression,
                    column,
                    risk,
                    reason, // quotes literals and types from the SQL
                    method: _,
                } in uses
                {
                    expression.sanitize();
                    column.sanitize();
                    reason.sanitize();
                    if let Risk::DependsOnData { target_type } = risk {
                        target_type.sanitize();
                    }
                }
            }
        }
        if let Some(ColumnReport {
            name,
            new_type,
            new_type_from: _, // one of our own constants
            break_risk_judged: _,
            depends_on_data,
            note,
        }) = column
        {
            name.sanitize();
            new_type.sanitize();
            depends_on_data.sanitize();
            note.sanitize();
        }
    }
}

/// An indented tree: each node is expanded under the first parent that reaches it and
/// marked "(see above)" under the others, so a wide DAG prints in one pass instead of
/// repeating shared subtrees. Past `FAN_OUT_CAP` children a "+N more" row stands in.
pub fn render_tree(report: &Sanitized<Report>) -> String {
    let report: &Report = report;
    let mut children_of: HashMap<&str, Vec<&ReportNode>> = HashMap::new();
    for node in &report.nodes {
        for parent in &node.parents {
            children_of.entry(parent.as_str()).or_default().push(node);
        }
    }
    let mut out = String::new();
    let from = &report.from;
    let _ = writeln!(
        out,
        "{} ({}) — {} downstream",
        from.unique_id, from.resource_type, report.summary.total
    );
    if let Some(column) = &report.column {
        let _ = match (&column.new_type, column.new_type_from) {
            (Some(new_type), Some(source)) => writeln!(
                out,
                "column {}: new type {new_type} (from {source})",
                column.name
            ),
            _ => writeln!(out, "column {}: new type unknown", column.name),
        };
        if let Some(note) = &column.note {
            let _ = writeln!(out, "note: {note}");
        }
    }
    let mut expanded = HashSet::new();
    write_children(&children_of, &from.unique_id, 1, &mut expanded, &mut out);
    write_summary(report, &mut out);
    out
}

fn write_children<'a>(
    children_of: &HashMap<&str, Vec<&'a ReportNode>>,
    parent: &str,
    depth: usize,
    expanded: &mut HashSet<&'a str>,
    out: &mut String,
) {
    let Some(children) = children_of.get(parent) else {
        return;
    };
    let indent = "  ".repeat(depth);
    for (shown, child) in children.iter().enumerate() {
        if shown == FAN_OUT_CAP {
            let _ = writeln!(out, "{indent}+{} more", children.len() - FAN_OUT_CAP);
            break;
        }
        if !expanded.insert(child.unique_id.as_str()) {
            let _ = writeln!(out, "{indent}{} (see above)", child.name);
            continue;
        }
        let _ = writeln!(out, "{indent}{}", label(child));
        if let Some(finding) = &child.column {
            for found in &finding.uses {
                let _ = writeln!(out, "{indent}  {}", use_line(found));
            }
            if finding.reads && finding.uses.is_empty() {
                let _ = writeln!(out, "{indent}  · reads the column [{}]", finding.method);
            }
        }
        write_children(children_of, &child.unique_id, depth + 1, expanded, out);
    }
}

/// One use under its model, its risk in words and a glyph (never by colour alone), e.g.
/// ``! BREAKS · arithmetic `amount / 100` — PostgreSQL has no operator text / integer:
/// the model fails on its next run [sqlparser]``.
fn use_line(found: &UseFinding) -> String {
    let risk = match &found.risk {
        Risk::Breaks => "! BREAKS".to_string(),
        Risk::DependsOnData { target_type } => format!("? DEPENDS ON THE DATA ({target_type})"),
        Risk::Safe => "· safe".to_string(),
    };
    format!(
        "{risk} · {} `{}` — {} [{}]",
        found.kind.as_str(),
        found.expression,
        found.reason,
        found.method
    )
}

/// e.g. `fct_payments (model, table) · billing-owner`
fn label(node: &ReportNode) -> String {
    let mut label = format!("{} ({}", node.name, node.resource_type);
    if let Some(materialized) = &node.materialized {
        label.push_str(", ");
        label.push_str(materialized);
    }
    label.push(')');
    if let Some(owner) = &node.owner {
        label.push_str(" · ");
        label.push_str(owner);
    }
    if let Some(seen) = &node.learned {
        label.push_str(" · learned from events, last seen ");
        label.push_str(seen);
    }
    label
}

fn write_summary(report: &Report, out: &mut String) {
    let summary = &report.summary;
    let counts = |map: &std::collections::BTreeMap<String, usize>| {
        map.iter()
            .map(|(key, count)| format!("{count} {key}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "\nsummary: {} downstream", summary.total);
    if !summary.by_kind.is_empty() {
        let _ = writeln!(out, "  by kind: {}", counts(&summary.by_kind));
    }
    if !summary.by_materialization.is_empty() {
        let _ = writeln!(
            out,
            "  by materialization: {}",
            counts(&summary.by_materialization)
        );
    }
    if !summary.owners.is_empty() {
        let _ = writeln!(out, "  owners: {}", summary.owners.join(", "));
    }
    if report.column.is_some() {
        let _ = if summary.break_risks.is_empty() {
            writeln!(out, "  break risks: none")
        } else {
            writeln!(out, "  break risks: {}", summary.break_risks.join(", "))
        };
        if !summary.depends_on_data.is_empty() {
            let _ = writeln!(
                out,
                "  depends on the data: {}",
                summary.depends_on_data.join(", ")
            );
        }
    }
}
