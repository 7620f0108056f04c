//! The command line: parse, then call into the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::PossibleValuesParser;
use clap::{ArgGroup, CommandFactory, Parser, Subcommand};

use dataward::engine::api::Command;
use dataward::{config, demo};

#[derive(Parser)]
#[command(
    name = "dataward",
    version,
    about = "A terminal incident console for on-call data engineers"
)]
struct Cli {
    /// Where the state database and the demo estate live (default: the XDG data dir).
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// The console's config (default: the XDG config path, ~/.config/dataward/config.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A console that can look but not decide: approve, reject, roll back, forward, run,
    /// close, reopen and the org stop are gone (the demo's console too).
    #[arg(long)]
    read_only: bool,
    /// The console's theme: dark, light, ansi16, colorblind, or a theme file (TOML of
    /// roles, `base = NAME` and only what it changes); over the config's [console] theme.
    #[arg(long, value_name = "NAME|FILE")]
    theme: Option<String>,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the embedded demo: the real engine on a small estate, on a virtual clock.
    Demo {
        /// The story to play.
        #[arg(
            default_value = demo::STORIES[0],
            value_parser = PossibleValuesParser::new(demo::STORIES.iter().copied()),
        )]
        story: String,
        /// Virtual seconds per real second (60 plays a minute a second); by default the
        /// story's own pace, which plays it in a minute or two.
        #[arg(long)]
        speed: Option<f64>,
        /// Print the timeline instead of opening the console.
        #[arg(long)]
        headless: bool,
        /// With --headless: one JSON object per line.
        #[arg(long, requires = "headless")]
        json: bool,
        /// With --headless: play the owner with this role, as a recorded demo stand-in.
        #[arg(long, value_name = "ROLE", requires = "headless")]
        approve_as: Option<String>,
    },
    /// Run the monitors in a config and print their verdicts; exit 1 on any breach
    /// (but one whose monitor is snoozed or in a maintenance window: shown, quiet).
    Check {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Poll every check once and exit (otherwise keep polling on schedule).
        #[arg(long)]
        once: bool,
        /// One JSON object per check and line, then one per warehouse polled with what
        /// the poll cost it (`{"poll": ...}`).
        #[arg(long)]
        json: bool,
        /// After each poll, every SQL statement it sent, per warehouse and monitor, as
        /// sent (identifiers quoted in the warehouse's dialect), with the rows each
        /// returned and what the poll cost.
        #[arg(long)]
        explain: bool,
    },
    /// Run a detector over a `date,value` CSV history and print every verdict (--csv),
    /// or replay a monitored table's own history with injected faults of each kind and
    /// print what the volume check caught and its false alarms (--inject).
    #[command(group(ArgGroup::new("history").required(true).args(["csv", "inject"])))]
    Backtest {
        /// A `date,value` history, header required.
        #[arg(long, value_name = "FILE")]
        csv: Option<PathBuf>,
        /// With --csv, the detector: volume (the default) or row_count. With --inject,
        /// the name of a monitor in the config.
        #[arg(long, value_name = "KIND|NAME")]
        monitor: Option<String>,
        /// With --csv: scores the flags against labelled windows: a JSON object from
        /// each CSV file's name to its `[["first_day", "last_day"], ...]` windows;
        /// prints precision, recall and F1.
        #[arg(long, value_name = "WINDOWS.json", conflicts_with = "inject")]
        labels: Option<PathBuf>,
        /// Replay the table of the monitor --monitor names, read from its warehouse,
        /// with injected faults.
        #[arg(long, conflicts_with = "csv")]
        inject: bool,
        /// With --inject: the config naming the monitor (default: the XDG config path).
        #[arg(long, value_name = "FILE", conflicts_with = "csv")]
        config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The blast radius of a node in a dbt project: what reads it, how far down, who owns it.
    Lineage(dataward::cli::lineage::LineageArgs),
    /// Migration waves of the [[migration]] plans: each table's parity (rows, columns
    /// and types, nulls, day-by-day hashes) between its old and new name, and each
    /// wave's gate, open once parity holds and an owner signed off on its hash
    /// (`approve MIG-<migration>-<wave> --hash HASH`). Exit 1 while a gate is closed.
    Migration(dataward::cli::migration::MigrationArgs),
    /// Recompute the whole chain; exit 1 naming the first bad record.
    Verify {
        #[arg(long)]
        json: bool,
        /// Also check a saved JSON receipt against the chain.
        #[arg(long, value_name = "FILE")]
        receipt: Option<PathBuf>,
    },
    /// The org-wide stop: set it (--reason), lift it (--lift, two different people), or
    /// show it. Exit 1 while a stop is set.
    Stop {
        #[arg(long, conflicts_with = "lift")]
        reason: Option<String>,
        #[arg(long)]
        lift: bool,
    },
    /// Print the receipt of an incident, of an access request (ACC-0001) or of a migration
    /// wave (MIG-<migration>-<wave>).
    Receipt {
        /// An incident id, or an access request's.
        incident: String,
        #[arg(long, conflicts_with = "json")]
        md: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run the engine as a service in the foreground: monitors, expiry, runs; consoles
    /// and commands attach over DATA/dataward.sock. SIGTERM finishes the turn in hand.
    Serve {
        /// The policy and monitors (default: the XDG config path).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Log to stderr instead of the file in the XDG state directory.
        #[arg(long)]
        log_stderr: bool,
    },
    /// What is open (with --all, resolved incidents too).
    Incidents {
        #[arg(long)]
        json: bool,
        #[arg(long)]
        all: bool,
    },
    /// One incident whole: cause, evidence, blast radius, proposals with content hash,
    /// status and who may decide.
    Show {
        incident: String,
        #[arg(long)]
        json: bool,
    },
    /// Approve the proposal whose content hash you read (`dataward show`).
    Approve {
        proposal: String,
        #[arg(long, value_name = "HASH")]
        hash: String,
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Reject it: final for that content.
    Reject {
        proposal: String,
        #[arg(long, value_name = "HASH")]
        hash: String,
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Apply an approved proposal's undo.
    Rollback {
        proposal: String,
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Send a note to the owner of the other system.
    Forward { proposal: String },
    /// Queue the run an approved hold planned.
    Run { incident: String },
    /// Close an incident by hand (its owner), with the reason; the receipt says so.
    Resolve {
        incident: String,
        #[arg(long)]
        reason: String,
    },
    /// Open a resolved incident again.
    Reopen {
        incident: String,
        #[arg(long)]
        reason: String,
    },
    /// Accept the new level of an incident's breach as the normal (its owner): volume,
    /// row count or null rate; that check's baseline restarts there, and the incident
    /// closes.
    Accept {
        incident: String,
        #[arg(long)]
        reason: String,
    },
    /// "This was fine" (the incident's owner): its breach leaves the baselines, and the
    /// incident closes as expected; the receipt says who and why.
    Expected {
        incident: String,
        #[arg(long)]
        reason: String,
    },
    /// No alert and no new incident for a monitor (or an incident's monitor) for
    /// DURATION (30m, 2h, 3d; at most 7d), on the engine's clock; its breaches are still
    /// recorded. It ends by itself.
    Snooze {
        /// A monitor's name, or an incident id.
        target: String,
        duration: String,
        #[arg(long)]
        reason: String,
    },
    /// Ask for a privilege on a table (schema.table) or a schema for a role or account,
    /// for DAYS (default 90): the policy's [[access]] rules judge it (a schema is
    /// narrowed to its tables they allow; the days cut to their max_days), then the
    /// exact GRANT is proposed to the domain's owners, or sent to them for review.
    /// dataward runs nothing: it records the grant once the catalog shows it, and
    /// proposes the REVOKE at expiry.
    RequestAccess {
        /// schema.table, or a schema.
        target: String,
        /// select, insert, update, delete, truncate or references.
        #[arg(long)]
        privilege: String,
        /// The role or account the grant goes to.
        #[arg(long = "for", value_name = "ACCOUNT_OR_ROLE")]
        grantee: String,
        #[arg(long)]
        reason: String,
        /// How long the grant lasts, in days (default 90; the policy may allow fewer).
        #[arg(long)]
        days: Option<u32>,
    },
    /// The alert outbox per destination: what waits, the next retry, the last error, the
    /// dedup key. Exit 1 when an alert was given up.
    Outbox {
        #[arg(long)]
        json: bool,
    },
    /// Check everything the config needs, one line each with ✓ or ✗ and what to do:
    /// warehouses reachable, every monitor's table, columns and query plan (EXPLAIN,
    /// nothing scanned), the manifest, catalog and notes, the orchestrator and alert
    /// endpoints, permissions, the engine's socket. Exit 0 when all are ✓, else 1.
    Doctor {
        /// The config (default: the XDG config path).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Send a test alert to every [[alert]] destination (resolved at once); without
        /// it no alert is sent.
        #[arg(long)]
        send_test: bool,
    },
    /// Print a shell completion script: `dataward completions bash > /etc/bash_completion.d/dataward`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `dataward man > /usr/local/share/man/man1/dataward.1`.
    Man,
    /// A first config from a dbt project: its profile's warehouse, a monitor for every
    /// source and table, lineage, owners and domains. Reads dbt's artifacts, runs
    /// nothing; never overwrites a config (a rerun writes FILE.new beside it and shows
    /// the difference). Exit 2 when the warehouse's adapter cannot be watched yet.
    Init {
        /// The dbt project folder (holding dbt_project.yml and target/manifest.json).
        #[arg(long, value_name = "DIR")]
        dbt_project: PathBuf,
        /// The profile in profiles.yml (default: the one dbt_project.yml names).
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        /// The profile's target (default: the profile's own `target`).
        #[arg(long, value_name = "NAME")]
        target: Option<String>,
        /// Where to write the config (default: the XDG config path); the notes file goes
        /// beside it.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The kinds of orchestrator the binary brings beside the engine's own.
    dataward::demo::control::register();
    // A listing piped into `head` ends quietly, as other commands do. The engine, the
    // console and the demo keep Rust's default (a closed client socket is an error to
    // handle, never a signal that kills the service).
    if matches!(
        cli.command,
        Some(
            Cmd::Incidents { .. }
                | Cmd::Show { .. }
                | Cmd::Lineage(_)
                | Cmd::Migration(_)
                | Cmd::Receipt { .. }
                | Cmd::Verify { .. }
                | Cmd::Backtest { .. }
                | Cmd::Check { .. }
                | Cmd::Outbox { .. }
                | Cmd::Doctor { .. }
                | Cmd::Completions { .. }
                | Cmd::Man
        )
    ) {
        // SAFETY: setting a signal disposition before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // An error may quote a config line, a manifest, a warehouse's message or an
            // argument: shown like everything else from outside, escapes visible.
            let message = format!("{e:#}");
            eprintln!(
                "dataward: {}",
                dataward::sanitize::for_terminal_multiline(&message)
            );
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Only the commands that use the data directory look at it (and refuse a loose one).
    let data_dir = || config::data_dir(cli.data_dir.as_deref());
    // The config a decision's engine runs with: where its state is, should it die
    // mid-request.
    let state_config = cli.config.clone().or_else(config::default_config_path);
    let decide =
        |command| dataward::engine::cli::decide(&data_dir()?, state_config.as_deref(), command);
    let Some(command) = cli.command else {
        // Attach to the engine serving the data directory, starting one in the
        // background (with this config) when none does.
        let config = cli.config.or_else(config::default_config_path);
        let farewell =
            dataward::engine::attach::run_console(config, &data_dir()?, cli.read_only, cli.theme)?;
        println!("dataward: {farewell}");
        return Ok(ExitCode::SUCCESS);
    };
    match command {
        Cmd::Demo {
            story,
            speed,
            headless,
            json,
            approve_as,
        } => {
            anyhow::ensure!(speed.is_none_or(|s| s > 0.0), "--speed must be above zero");
            // The demo never shares the live data directory: by default it plays in one
            // of its own beside it.
            let data_dir = match &cli.data_dir {
                Some(_) => data_dir()?,
                None => data_dir()?.join("demo"),
            };
            let options = demo::DemoOptions {
                data_dir,
                story,
                speed,
                approve_as,
                read_only: cli.read_only,
                console_config: cli.config.clone().or_else(config::default_config_path),
                theme: cli.theme.clone(),
            };
            if headless {
                demo::run_headless(options, json)?;
            } else {
                demo::run_console(options)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Lineage(args) => dataward::cli::lineage::run(args, data_dir),
        Cmd::Migration(args) => dataward::cli::migration::run(args, &data_dir()?),
        Cmd::Check {
            config,
            once,
            json,
            explain,
        } => dataward::monitor::cli::check(&config, once, json, explain, &data_dir()?),
        Cmd::Backtest {
            csv: Some(csv),
            monitor,
            labels,
            json,
            ..
        } => dataward::monitor::cli::backtest(
            &csv,
            monitor.as_deref().unwrap_or("volume"),
            labels.as_deref(),
            json,
        ),
        Cmd::Backtest {
            monitor,
            config,
            json,
            ..
        } => {
            // clap has seen to --csv or --inject.
            let monitor = monitor.ok_or_else(|| {
                anyhow::anyhow!(
                    "backtest --inject needs --monitor NAME: the monitor in the config whose table to replay"
                )
            })?;
            let config = config
                .or(cli.config)
                .or_else(config::default_config_path)
                .ok_or_else(|| {
                    anyhow::anyhow!("no home directory for the default config; pass --config FILE")
                })?;
            dataward::monitor::inject::run(&config, &monitor, json)
        }
        Cmd::Verify { json, receipt } => {
            dataward::cli::chain::verify(&data_dir()?, json, receipt.as_deref())
        }
        Cmd::Receipt {
            incident,
            md: _,
            json,
        } => dataward::cli::chain::receipt(&data_dir()?, &incident, json),
        Cmd::Stop { reason, lift } => dataward::engine::cli::stop(
            &data_dir()?,
            state_config.as_deref(),
            reason.as_deref(),
            lift,
        ),
        Cmd::Serve { config, log_stderr } => {
            if let Some(log) = dataward::logging::init(log_stderr, &data_dir()?)? {
                eprintln!("dataward serve: logging to {}", log.display());
            }
            let config = config
                .or(cli.config)
                .or_else(config::default_config_path)
                .ok_or_else(|| {
                    anyhow::anyhow!("no home directory for the default config; pass --config FILE")
                })?;
            anyhow::ensure!(
                config.exists(),
                "no config at {}; pass --config FILE",
                config.display()
            );
            let served = dataward::engine::server::serve(&dataward::engine::server::ServeOptions {
                config,
                data_dir: data_dir()?,
            });
            // Started in the background by a console, nobody reads stderr: the log says why.
            if let Err(e) = &served {
                tracing::error!("dataward serve stopped: {e:#}");
                // Deposed: another engine leads now; this one did as it should (exit 1).
                if let Some(deposed) = e.downcast_ref::<dataward::engine::leadership::DeposedStop>()
                {
                    eprintln!("dataward: {}", dataward::sanitize::for_terminal(&deposed.0));
                    return Ok(ExitCode::from(1));
                }
            }
            served?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Incidents { json, all } => dataward::engine::cli::list(&data_dir()?, json, all),
        Cmd::Show { incident, json } => dataward::engine::cli::show(&data_dir()?, &incident, json),
        Cmd::Approve {
            proposal,
            hash,
            reason,
        } => decide(Command::Approve {
            proposal,
            content_hash: hash,
            reason,
        }),
        Cmd::Reject {
            proposal,
            hash,
            reason,
        } => decide(Command::Reject {
            proposal,
            content_hash: hash,
            reason,
        }),
        Cmd::Rollback { proposal, reason } => decide(Command::RollBack { proposal, reason }),
        Cmd::Forward { proposal } => decide(Command::Forward { proposal }),
        Cmd::Run { incident } => decide(Command::QueueRun { incident }),
        Cmd::Resolve { incident, reason } => decide(Command::Resolve { incident, reason }),
        Cmd::Reopen { incident, reason } => decide(Command::Reopen { incident, reason }),
        Cmd::Accept { incident, reason } => decide(Command::Accept { incident, reason }),
        Cmd::Expected { incident, reason } => decide(Command::Expected { incident, reason }),
        Cmd::Snooze {
            target,
            duration,
            reason,
        } => dataward::cli::feedback::snooze(
            &data_dir()?,
            state_config.as_deref(),
            target,
            &duration,
            reason,
        ),
        Cmd::RequestAccess {
            target,
            privilege,
            grantee,
            reason,
            days,
        } => decide(Command::RequestAccess {
            target,
            privilege,
            grantee,
            reason,
            days,
        }),
        Cmd::Outbox { json } => dataward::cli::outbox::run(&data_dir()?, json),
        Cmd::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "dataward", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Man => {
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Doctor { config, send_test } => {
            let config = config
                .or(cli.config)
                .or_else(config::default_config_path)
                .ok_or_else(|| {
                    anyhow::anyhow!("no home directory for the default config; pass --config FILE")
                })?;
            dataward::doctor::run(&dataward::doctor::DoctorOptions {
                config,
                data_dir: data_dir()?,
                send_test,
            })
        }
        Cmd::Init {
            dbt_project,
            profile,
            target,
            out,
        } => dataward::init::run(&dataward::init::InitOptions {
            dbt_project,
            profile,
            target,
            out,
            data_dir: data_dir()?,
            data_dir_named: cli.data_dir.is_some(),
        }),
    }
}
