//! `dataward init --dbt-project DIR`: a first config from what a dbt project already
//! knows. It reads `dbt_project.yml`, the profile's target in `profiles.yml`, and the
//! artifacts dbt wrote (`target/manifest.json`, `catalog.json` when there), runs
//! nothing, and writes a config and a notes file a person can read and edit.
//!
//! One job per file: [`project`] reads the project and its profile, [`artifacts`] the
//! manifest and catalog, [`build`] makes the text, [`write`] puts it down without ever
//! overwriting a file that holds something else.

pub mod artifacts;
pub mod build;
pub mod project;
pub mod write;
mod yaml;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};

use crate::config::Config;
use crate::lineage::Notes;
use crate::sanitize;

pub use write::Written;

pub struct InitOptions {
    pub dbt_project: PathBuf,
    pub profile: Option<String>,
    pub target: Option<String>,
    /// The config to write (default: the XDG config path).
    pub out: Option<PathBuf>,
    /// The data directory: made 0700 if missing.
    pub data_dir: PathBuf,
    /// Whether the data directory was named on the command line (then the commands
    /// printed name it too).
    pub data_dir_named: bool,
}

/// What `init` did, for the command line and for tests.
pub struct Outcome {
    pub config: Written,
    pub notes: Written,
    pub generated: build::Generated,
    /// What to print.
    pub report: String,
}

/// Runs `init` and prints its report; exit 2 (after writing) when the warehouse's
/// adapter is not one dataward can watch.
pub fn run(options: &InitOptions) -> Result<ExitCode> {
    let outcome = init(options, &mut |line| {
        eprintln!("dataward init: {}", sanitize::for_terminal(line))
    })?;
    print!("{}", sanitize::for_terminal_multiline(&outcome.report));
    if let Some(why) = &outcome.generated.unsupported {
        eprintln!("dataward: {}", sanitize::for_terminal(why));
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// Does the work; `progress` hears of slow steps (a large manifest).
pub fn init(options: &InitOptions, progress: &mut dyn FnMut(&str)) -> Result<Outcome> {
    let project = project::DbtProject::read(&options.dbt_project)?;
    let profiles = project::profiles_file(&project)?;
    let target = project::Target::read(
        &profiles,
        &project,
        options.profile.as_deref(),
        options.target.as_deref(),
    )?;
    let artifacts = artifacts::Artifacts::read(&project, progress)?;
    // Only a warehouse dataward can watch needs the manifest's tables to be its own; an
    // unsupported one is written commented out, whatever the manifest says.
    let supported = matches!(
        target.connection,
        project::Connection::Postgres(_)
            | project::Connection::Duckdb(_)
            | project::Connection::Snowflake(_)
    );
    if let (Some(adapter), true) = (&artifacts.adapter_type, supported) {
        if *adapter != target.adapter {
            bail!(
                "{} was written by dbt's {adapter} adapter, but target {:?} of profile {:?} is {} \
                 ({}: line {}): run `dbt parse --target {}` in {} so the manifest names that \
                 warehouse's tables",
                artifacts.manifest.display(),
                target.name,
                target.profile,
                target.adapter,
                target.file.display(),
                target.adapter_line,
                target.name,
                project.dir.display()
            );
        }
    }
    let out = match &options.out {
        Some(out) => absolute(out)?,
        None => crate::config::default_config_path()
            .ok_or_else(|| anyhow!("no home directory for the default config; pass --out FILE"))?,
    };
    let notes_name = notes_name(&out);
    let account = crate::approve::Actor::current().user;
    let generated = build::generate(&build::Inputs {
        project: &project,
        target: &target,
        artifacts: &artifacts,
        notes_name: &notes_name,
        account,
    });
    // What is written must load as the engine loads it: a failure here is ours.
    Config::parse(&generated.config, &out)
        .map_err(|e| anyhow!("init made a config that does not load (a dataward bug): {e:#}"))?;
    let notes_path = out.with_file_name(&notes_name);
    Notes::parse(&generated.notes, &notes_path.display().to_string())
        .map_err(|e| anyhow!("init made notes that do not load (a dataward bug): {e}"))?;

    crate::store::files::ensure_private_dir(&options.data_dir)?;
    let notes = write::write(&notes_path, &generated.notes)?;
    let config = write::write(&out, &generated.config)?;
    Config::load(config.path())?;

    let report = report(
        options, &project, &target, &artifacts, &generated, &config, &notes,
    );
    Ok(Outcome {
        config,
        notes,
        generated,
        report,
    })
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Ok(std::env::current_dir()?.join(path))
    }
}

/// `notes.toml` beside `config.toml`; `NAME.notes.toml` beside any other `NAME.toml`.
fn notes_name(config: &Path) -> String {
    match config.file_stem().and_then(|s| s.to_str()) {
        Some("config") | None => "notes.toml".to_string(),
        Some(stem) => format!("{stem}.notes.toml"),
    }
}

fn report(
    options: &InitOptions,
    project: &project::DbtProject,
    target: &project::Target,
    artifacts: &artifacts::Artifacts,
    generated: &build::Generated,
    config: &Written,
    notes: &Written,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "dbt project {:?} ({}), profile {:?}, target {:?} ({}, from {})",
        project.name,
        one(project.dir.display()),
        target.profile,
        target.name,
        one(&target.adapter),
        one(target.file.display())
    );
    let _ = writeln!(
        out,
        "read {} ({:.1} MB, {} ms){}",
        one(artifacts.manifest.display()),
        artifacts.manifest_bytes as f64 / 1e6,
        artifacts.read_time.as_millis(),
        match &artifacts.catalog {
            Some(catalog) => format!(" and {}", one(catalog.display())),
            None => "; no catalog.json (`dbt docs generate` makes it: column types, so \
                     timestamp columns are checked before they are used)"
                .to_string(),
        }
    );
    let summary = format!(
        "1 warehouse, {} monitor{} ({} checks), {} domain{}",
        generated.monitors,
        if generated.monitors == 1 { "" } else { "s" },
        generated.checks,
        generated.domains,
        if generated.domains == 1 { "" } else { "s" },
    );
    describe_written(&mut out, config, &summary);
    if generated.null_columns > 0 {
        let _ = writeln!(
            out,
            "null rates watched on {} column{} that dbt's not_null and relationships tests \
             name (or that models pass on to them unchanged): the config says which test, \
             beside each",
            generated.null_columns,
            if generated.null_columns == 1 { "" } else { "s" }
        );
    }
    let notes_summary = format!(
        "the context notes, named after the config and named by its [lineage] notes: {} \
         exposure{} listed, commented examples for dashboards, jobs and loaders",
        generated.exposures,
        if generated.exposures == 1 { "" } else { "s" }
    );
    describe_written(&mut out, notes, &notes_summary);
    let _ = writeln!(
        out,
        "data directory {} (0700)",
        one(options.data_dir.display())
    );
    if !generated.skipped.is_empty() {
        let _ = writeln!(out, "left out, or watched in part:");
        for line in grouped(&generated.skipped) {
            let _ = writeln!(out, "  - {}", one(&line));
        }
    }
    if generated.unsupported.is_some() {
        return out;
    }
    let config_path = shell(config.path());
    let data = if options.data_dir_named {
        format!(" --data-dir {}", shell(&options.data_dir))
    } else {
        String::new()
    };
    let _ = writeln!(out, "next:");
    if let Some(note) = &generated.password_note {
        let _ = writeln!(out, "  # {}", one(note));
    }
    for line in &generated.grants {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(hint) = &generated.export_hint {
        let _ = writeln!(out, "  {}", one(hint));
    }
    let _ = writeln!(out, "  dataward doctor --config {config_path}{data}");
    let _ = writeln!(out, "  dataward check --config {config_path} --once{data}");
    let _ = writeln!(out, "  dataward serve --config {config_path}{data}");
    out
}

/// Lines `subject: reason`, those sharing a reason said once with every subject.
fn grouped(lines: &[String]) -> Vec<String> {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in lines {
        let Some((subject, reason)) = line.split_once(": ") else {
            groups.push((line, Vec::new()));
            continue;
        };
        match groups
            .iter_mut()
            .find(|(r, s)| *r == reason && !s.is_empty())
        {
            Some((_, subjects)) => subjects.push(subject),
            None => groups.push((reason, vec![subject])),
        }
    }
    groups
        .into_iter()
        .map(|(reason, subjects)| match subjects.as_slice() {
            [] => reason.to_string(),
            [one] => format!("{one}: {reason}"),
            many => format!("{} ({} of them): {reason}", many.join(", "), many.len()),
        })
        .collect()
}

fn describe_written(out: &mut String, written: &Written, summary: &str) {
    match written {
        Written::New(path) => {
            let _ = writeln!(out, "wrote {} (0600): {summary}", one(path.display()));
        }
        Written::Unchanged(path) => {
            let _ = writeln!(
                out,
                "{} already holds this ({summary}): nothing written",
                one(path.display())
            );
        }
        Written::Beside { old, new, diff } => {
            let _ = writeln!(
                out,
                "{} holds something else (the project changed, or it was edited): \
                 left as it is; wrote {} (0600) beside it: {summary}. The difference:",
                one(old.display()),
                one(new.display())
            );
            for line in diff.lines() {
                let _ = writeln!(out, "    {}", one(line));
            }
            let _ = writeln!(
                out,
                "  keep your edits and merge by hand, or take the new one: mv {} {}",
                shell(new),
                shell(old)
            );
        }
    }
}

/// One line of the report from anything the project named (a path, a model's name): a
/// newline in it must not start a line of its own.
fn one(text: impl std::fmt::Display) -> String {
    sanitize::for_terminal(&text.to_string()).into_owned()
}

/// A path in a command a person pastes into a shell.
fn shell(path: &Path) -> String {
    sanitize::shell_word(&path.display().to_string())
}
