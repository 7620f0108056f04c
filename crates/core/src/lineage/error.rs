//! Errors from loading lineage inputs and resolving names.
//!
//! Every message names the file it came from and what is wrong, because the person
//! reading it is usually on call and needs to fix the input, not read a backtrace.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineageError {
    /// The file could not be read at all.
    Read { file: String, problem: String },
    /// The manifest is not valid JSON, not a manifest, or a field has the wrong shape.
    /// `json_path` is written like `$.nodes["model.x"].depends_on.nodes`.
    Manifest {
        file: String,
        json_path: String,
        problem: String,
    },
    /// The catalog is not valid JSON, not a catalog, or a field has the wrong shape.
    Catalog {
        file: String,
        json_path: String,
        problem: String,
    },
    /// dbt's run_results.json is not valid JSON, not run results, or a field has the
    /// wrong shape.
    RunResults {
        file: String,
        json_path: String,
        problem: String,
    },
    /// The context notes are not valid, or an entry refers to something unknown.
    /// `entry` names the entry, e.g. `reader "dashboard.onsale_pacing"`.
    Notes {
        file: String,
        entry: String,
        problem: String,
    },
    /// Jinja in a model that dataward cannot render without dbt, with its line; `within`
    /// names the model it is in when that is a model read through `ref()`.
    Unrendered {
        within: Option<String>,
        line: usize,
        jinja: String,
        why: String,
    },
    /// No node has that unique_id, relation name or name.
    NotFound { name: String },
    /// Several nodes match the name; the person must pick one of the candidates.
    Ambiguous {
        name: String,
        candidates: Vec<String>,
    },
}

impl fmt::Display for LineageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineageError::Read { file, problem } => write!(f, "{file}: cannot read: {problem}"),
            LineageError::Manifest {
                file,
                json_path,
                problem,
            }
            | LineageError::Catalog {
                file,
                json_path,
                problem,
            }
            | LineageError::RunResults {
                file,
                json_path,
                problem,
            } => write!(f, "{file}: {json_path}: {problem}"),
            LineageError::Notes {
                file,
                entry,
                problem,
            } => write!(f, "{file}: {entry}: {problem}"),
            LineageError::Unrendered {
                within,
                line,
                jinja,
                why,
            } => {
                if let Some(model) = within {
                    write!(f, "in {model}, read through ref(), ")?;
                }
                write!(f, "line {line}: {jinja}: {why}")
            }
            LineageError::NotFound { name } => write!(
                f,
                "no node is called {name:?} (tried unique_id, relation name and name)"
            ),
            LineageError::Ambiguous { name, candidates } => write!(
                f,
                "{name:?} matches {} nodes; use one of their unique_ids: {}",
                candidates.len(),
                candidates.join(", ")
            ),
        }
    }
}

impl std::error::Error for LineageError {}
