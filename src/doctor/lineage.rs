//! dbt's artifacts and the team's notes: the manifest loads, the catalog loads, the
//! notes load and every name in them resolves, as the engine will read them; and every
//! model and job has someone who may decide a proposal on it.

use super::Line;
use crate::approve;
use crate::config::Config;
use crate::lineage::{Lineage, NodeKind, Notes};

pub fn check(config: &Config) -> Vec<Line> {
    let Some(settings) = &config.lineage else {
        return vec![Line::ok(
            "lineage",
            "no [lineage]: incidents will have no blast radius (add the dbt manifest to get one)",
        )];
    };
    let mut lines = Vec::new();
    let manifest = config.resolve(&settings.manifest);
    let loaded = Lineage::load_telling(
        &manifest,
        None,
        &mut crate::progress::bytes_on_stderr("loading manifest"),
    );
    let lineage = match loaded {
        Ok(lineage) => {
            lines.push(Line::ok(
                "manifest",
                format!("{} loads: {} nodes", manifest.display(), lineage.len()),
            ));
            lineage
        }
        Err(e) => {
            lines.push(Line::bad(
                "manifest",
                e.to_string(),
                "make it again with `dbt parse` in the project (or correct [lineage] manifest)",
            ));
            return lines;
        }
    };
    let lineage = match &settings.catalog {
        Some(catalog) => {
            let catalog = config.resolve(catalog);
            match lineage.clone().with_catalog(&catalog) {
                Ok(with) => {
                    lines.push(Line::ok("catalog", format!("{} loads", catalog.display())));
                    with
                }
                Err(e) => {
                    lines.push(Line::bad(
                        "catalog",
                        e.to_string(),
                        "make it again with `dbt docs generate` (or remove [lineage] catalog)",
                    ));
                    lineage
                }
            }
        }
        None => lineage,
    };
    let mut lineage = lineage;
    if let Some(notes) = &settings.notes {
        let path = config.resolve(notes);
        let loaded = Notes::load(&path).and_then(|notes| {
            let counts = (notes.readers.len(), notes.writers.len(), notes.owners.len());
            lineage
                .clone()
                .with_notes(&notes)
                .map(|with| (with, counts))
        });
        lines.push(match loaded {
            Ok((with, (readers, writers, owners))) => {
                lineage = with;
                Line::ok(
                    "notes",
                    format!(
                        "{} loads: {readers} reader{}, {writers} writer{}, {owners} owner rule{}; every name resolves",
                        path.display(),
                        s(readers),
                        s(writers),
                        s(owners)
                    ),
                )
            }
            Err(e) => Line::bad(
                "notes",
                e.to_string(),
                "correct the entry named: a name is a unique_id, a relation (schema.table) or a node's name in the manifest",
            ),
        });
    }
    lines.push(owners(config, &lineage));
    for (key, path) in [
        ("project_dir", settings.project_dir.as_ref()),
        ("run_results", settings.run_results.as_ref()),
    ] {
        if let Some(path) = path {
            let path = config.resolve(path);
            if !path.exists() {
                lines.push(Line::bad(
                    "lineage",
                    format!("[lineage] {key}: {} does not exist", path.display()),
                    format!("correct {key}, or remove it"),
                ));
            }
        }
    }
    lines
}

/// Who would decide a proposal on each model, snapshot and job (a diff or a backfill
/// changes a model, a hold a job), by the one rule the engine decides by
/// (`approve::deciders`), and whether anyone in `[people]` holds that role. Each one
/// nobody could decide is named: its proposals would wait for ever.
fn owners(config: &Config, lineage: &Lineage) -> Line {
    let mut named = 0;
    let mut by_domain = 0;
    let mut nobody = Vec::new();
    for node in lineage.graph().node_weights() {
        if !matches!(
            node.kind,
            NodeKind::Model | NodeKind::Snapshot | NodeKind::Job
        ) {
            continue;
        }
        let owner = node.owner.as_deref().unwrap_or_default();
        match approve::deciders(config, &node.unique_id, owner) {
            Err(_) => nobody.push(format!("{} (no [[domain]] covers it)", node.unique_id)),
            Ok(roles) if !roles.iter().any(|role| held(config, role)) => nobody.push(format!(
                "{} ({}: held by nobody in [people])",
                node.unique_id,
                roles.join(", ")
            )),
            Ok(roles) if roles == [owner] => named += 1,
            Ok(_) => by_domain += 1,
        }
    }
    let total = named + by_domain + nobody.len();
    if nobody.is_empty() {
        return Line::ok(
            "owners",
            format!(
                "each of {total} models, snapshots and jobs has someone who may decide: \
                 {named} the owner dbt or the notes name, {by_domain} their domain's owners"
            ),
        );
    }
    const NAMED: usize = 8;
    let more = nobody.len().saturating_sub(NAMED);
    let mut list = nobody
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        list.push_str(&format!(", and {more} more"));
    }
    Line::bad(
        "owners",
        format!(
            "{} of {total} models, snapshots and jobs have nobody who may decide a proposal on them: {list}",
            nobody.len()
        ),
        "cover them with a [[domain]] (covers = [\"job.*\"], owners = [\"ROLE\"]) and give \
         that role to someone in [people]; a dbt meta.owner or a notes owner names who \
         decides only when it is an owner role of the domain",
    )
}

/// Whether anyone in `[people]` holds `role`.
fn held(config: &Config, role: &str) -> bool {
    !approve::accounts_holding(config, &[role.to_string()]).is_empty()
}

fn s(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
