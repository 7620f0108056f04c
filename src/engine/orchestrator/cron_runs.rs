//! What a dbt Core project says ran in it: a hold on a dbt Core job cannot pause the
//! cron (or any scheduler dataward does not drive) that runs it, so whether that
//! schedule stopped is read from the runs it leaves. dbt writes
//! `target/run_results.json` at the end of every invocation, with when it was written
//! and the command it ran.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// dbt's last invocation in a project, as its `run_results.json` records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// When dbt wrote the record: the end of the invocation.
    pub at: DateTime<Utc>,
    /// The command as typed (`args.invocation_command`, dbt 1.8 on), else `dbt WHICH`.
    pub command: String,
}

impl Invocation {
    /// Whether this invocation ran `job_command` (a `dbt ...` line): the same words,
    /// leaving out where it ran (`--target`, `--profiles-dir`, `--project-dir`), which a
    /// cron line and dataward's own runs may each add.
    pub fn ran(&self, job_command: &str) -> bool {
        words_that_say_what(&self.command) == words_that_say_what(job_command)
    }
}

fn words_that_say_what(command: &str) -> Vec<&str> {
    const WHERE: [&str; 6] = [
        "--target",
        "-t",
        "--profiles-dir",
        "--project-dir",
        "--target-path",
        "--log-path",
    ];
    let mut words = Vec::new();
    let mut skip_next = false;
    // The executable may be a path to dbt (`/opt/venv/bin/dbt build`): from `dbt` on.
    for word in command
        .split_whitespace()
        .skip_while(|w| !w.ends_with("dbt"))
        .skip(1)
    {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        if WHERE.contains(&word) {
            skip_next = true;
        } else if !WHERE.iter().any(|w| word.starts_with(&format!("{w}="))) {
            words.push(word);
        }
    }
    words
}

/// The last invocation recorded in `project_dir/target/run_results.json`; `None` when
/// dbt has not written one there (or it cannot be read as one).
pub fn last_invocation(project_dir: &Path) -> Option<Invocation> {
    let text = std::fs::read_to_string(project_dir.join("target/run_results.json")).ok()?;
    let results: Value = serde_json::from_str(&text).ok()?;
    let at = results["metadata"]["generated_at"].as_str()?;
    let at = DateTime::parse_from_rfc3339(at).ok()?.with_timezone(&Utc);
    let args = &results["args"];
    let command = match args["invocation_command"].as_str() {
        Some(command) => command.to_string(),
        None => format!("dbt {}", args["which"].as_str()?),
    };
    Some(Invocation { at, command })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invocation_is_the_jobs_whatever_target_or_folders_it_names() {
        let at = Utc::now();
        let cron = Invocation {
            at,
            command:
                "/opt/dbt/bin/dbt build --select tag:hourly --target prod --profiles-dir=/etc/dbt"
                    .into(),
        };
        assert!(cron.ran("dbt build --select tag:hourly"));
        assert!(!cron.ran("dbt build --select tag:nightly"));
        assert!(!cron.ran("dbt run --select tag:hourly"));
    }

    #[test]
    fn the_last_invocation_is_read_from_run_results() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(last_invocation(dir.path()), None);
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(
            dir.path().join("target/run_results.json"),
            r#"{"metadata": {"generated_at": "2026-12-02T11:40:03.123456Z"},
                "args": {"which": "build", "invocation_command": "dbt build --select tag:hourly"},
                "results": []}"#,
        )
        .unwrap();
        let last = last_invocation(dir.path()).unwrap();
        assert_eq!(last.at.to_rfc3339(), "2026-12-02T11:40:03.123456+00:00");
        assert!(last.ran("dbt build --select tag:hourly"));
    }
}
