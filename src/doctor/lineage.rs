//! dbt's artifacts and the team's notes: the manifest loads, the catalog loads, the
//! notes load and every name in them resolves, as the engine will read them.

use super::Line;
use crate::config::Config;
use crate::lineage::{Lineage, Notes};

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
    if let Some(notes) = &settings.notes {
        let path = config.resolve(notes);
        let loaded = Notes::load(&path).and_then(|notes| {
            let counts = (notes.readers.len(), notes.writers.len(), notes.owners.len());
            lineage.with_notes(&notes).map(|_| counts)
        });
        lines.push(match loaded {
            Ok((readers, writers, owners)) => Line::ok(
                "notes",
                format!(
                    "{} loads: {readers} reader{}, {writers} writer{}, {owners} owner rule{}; every name resolves",
                    path.display(),
                    s(readers),
                    s(writers),
                    s(owners)
                ),
            ),
            Err(e) => Line::bad(
                "notes",
                e.to_string(),
                "correct the entry named: a name is a unique_id, a relation (schema.table) or a node's name in the manifest",
            ),
        });
    }
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

fn s(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
