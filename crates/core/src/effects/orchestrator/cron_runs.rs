//! What a dbt Core project says ran in it: a hold on a dbt Core job cannot pause the
//! cron (or any scheduler dataward does not drive) that runs it, so whether that
//! schedule stopped is read from the runs it leaves. dbt writes
//! `target/run_results.json` at the end of every invocation, with when it was written
//! and, from dbt 1.8 on, the command line it ran (`args.invocation_command`). dbt v2
//! records only the subcommand (`args` is `{"command": "build", "which": "build"}`,
//! whatever `--select` it was given), and dbt before 1.8 no command line either: from
//! such a record no job can be told from another, so the check says it cannot tell
//! rather than guess (a guess either missed a held job that kept running or took every
//! build for a plain `dbt build` job).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::Value;

/// What dbt's record says of a held job since its hold.
#[derive(Debug, Clone, PartialEq)]
pub enum SinceHold {
    /// Nothing ran the job since (dbt wrote no record since, or a record of another
    /// command, or of dataward's own run).
    NotRun,
    /// The job ran: when its invocation ended (RFC 3339).
    Ran(crate::clock::Timestamp),
    /// dbt ran something since that its record does not say, or the record cannot be
    /// read: why, naming the file.
    CannotTell(String),
}

/// dbt's last invocation in a project, as its `run_results.json` records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// When dbt wrote the record: the end of the invocation.
    pub at: DateTime<Utc>,
    /// The record: `run_results.json`.
    pub record: PathBuf,
    /// The command as typed (`args.invocation_command`), or why the record does not
    /// say which command dbt ran.
    pub command: Result<String, String>,
}

impl Invocation {
    /// Whether this invocation ran `job_command` (a `dbt ...` line): the same words,
    /// leaving out where it ran (`--target`, `--profiles-dir`, `--project-dir`), which a
    /// cron line and dataward's own runs may each add. `Err` says, naming the record,
    /// why it cannot be told.
    pub fn ran(&self, job_command: &str) -> Result<bool, String> {
        match &self.command {
            Ok(command) => Ok(words_that_say_what(command) == words_that_say_what(job_command)),
            Err(why) => Err(format!(
                "cannot tell which job dbt ran at {}: {}: {why}",
                self.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                self.record.display()
            )),
        }
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

/// The last invocation recorded in `project_dir/target/run_results.json`: `Ok(None)`
/// when dbt has not written one there; `Err` when one is there but says nothing
/// readable of when it ran (naming the file and what is wrong), as then nobody can
/// tell whether a job ran.
pub fn last_invocation(project_dir: &Path) -> Result<Option<Invocation>, String> {
    let record = project_dir.join("target/run_results.json");
    let text = match std::fs::read_to_string(&record) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", record.display())),
    };
    let unreadable = |what: String| format!("{}: {what}", record.display());
    let results: Value = serde_json::from_str(&text)
        .map_err(|e| unreadable(format!("not JSON as dbt writes it: {e}")))?;
    let at = results["metadata"]["generated_at"]
        .as_str()
        .ok_or_else(|| {
            unreadable("no metadata.generated_at: when dbt ran is not recorded".into())
        })?;
    let at = DateTime::parse_from_rfc3339(at)
        .map_err(|e| unreadable(format!("metadata.generated_at {at:?} is not a time: {e}")))?
        .with_timezone(&Utc);
    let args = &results["args"];
    let command = match args["invocation_command"].as_str() {
        Some(command) => Ok(command.to_string()),
        None => Err(not_recorded(
            args,
            results["metadata"]["dbt_version"].as_str().unwrap_or(""),
        )),
    };
    Ok(Some(Invocation {
        at,
        record,
        command,
    }))
}

/// Why a record without `args.invocation_command` does not say which job ran.
fn not_recorded(args: &Value, dbt_version: &str) -> String {
    let said = match args["which"].as_str().or(args["command"].as_str()) {
        Some(which) if dbt_version.starts_with("2.") => {
            format!("dbt v2 writes only `{which}`")
        }
        Some(which) => format!("its `args` say only `{which}`; dbt records it from 1.8 on"),
        None => "its `args` name no command at all".to_string(),
    };
    format!("dbt did not record the command it ran ({said})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(command: &str) -> Invocation {
        Invocation {
            at: crate::clock::Clock::wall().now(),
            record: PathBuf::from("target/run_results.json"),
            command: Ok(command.into()),
        }
    }

    #[test]
    fn an_invocation_is_the_jobs_whatever_target_or_folders_it_names() {
        let cron = invocation(
            "/opt/dbt/bin/dbt build --select tag:hourly --target prod --profiles-dir=/etc/dbt",
        );
        assert_eq!(cron.ran("dbt build --select tag:hourly"), Ok(true));
        assert_eq!(cron.ran("dbt build --select tag:nightly"), Ok(false));
        assert_eq!(cron.ran("dbt run --select tag:hourly"), Ok(false));
    }

    fn written(dir: &Path, run_results: &str) {
        std::fs::create_dir_all(dir.join("target")).unwrap();
        std::fs::write(dir.join("target/run_results.json"), run_results).unwrap();
    }

    #[test]
    fn the_last_invocation_is_read_from_run_results() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(last_invocation(dir.path()), Ok(None));
        written(
            dir.path(),
            r#"{"metadata": {"generated_at": "2026-12-02T11:40:03.123456Z"},
                "args": {"which": "build", "invocation_command": "dbt build --select tag:hourly"},
                "results": []}"#,
        );
        let last = last_invocation(dir.path()).unwrap().unwrap();
        assert_eq!(last.at.to_rfc3339(), "2026-12-02T11:40:03.123456+00:00");
        assert_eq!(last.ran("dbt build --select tag:hourly"), Ok(true));
    }

    /// dbt before 1.8 records no command line either: no job is told from another,
    /// neither a plain `dbt build` (it once took every build for it) nor a selection.
    #[test]
    fn a_record_without_the_command_line_cannot_say_which_job_ran() {
        let dir = tempfile::tempdir().unwrap();
        written(
            dir.path(),
            r#"{"metadata": {"generated_at": "2026-12-02T11:40:03Z", "dbt_version": "1.7.4"},
                "args": {"which": "build", "select": ["tag:hourly"]}, "results": []}"#,
        );
        let last = last_invocation(dir.path()).unwrap().unwrap();
        for job in ["dbt build", "dbt build --select tag:hourly"] {
            let why = last.ran(job).unwrap_err();
            assert!(
                why.starts_with("cannot tell which job dbt ran at 2026-12-02T11:40:03Z: "),
                "{why}"
            );
            assert!(why.contains("target/run_results.json"), "{why}");
            assert!(
                why.ends_with(
                    "dbt did not record the command it ran (its `args` say only `build`; \
                     dbt records it from 1.8 on)"
                ),
                "{why}"
            );
        }
    }

    /// A record there that says nothing readable of when dbt ran is named, not taken
    /// for no run at all.
    #[test]
    fn a_record_that_cannot_be_read_is_named_with_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        written(dir.path(), r#"{"metadata": {"generated_at": "#);
        let why = last_invocation(dir.path()).unwrap_err();
        assert!(
            why.contains("target/run_results.json: not JSON as dbt writes it"),
            "{why}"
        );
        written(dir.path(), r#"{"metadata": {}, "args": {}}"#);
        let why = last_invocation(dir.path()).unwrap_err();
        assert!(
            why.ends_with(
                "target/run_results.json: no metadata.generated_at: when dbt ran is not recorded"
            ),
            "{why}"
        );
    }
}
