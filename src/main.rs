//! The command line: parse, then call into the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use dataward::{chain, config, demo, incident::receipt, store};

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
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Story {
    Ticketing,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the embedded demo: the real engine on a small estate, on a virtual clock.
    Demo {
        #[arg(value_enum, default_value = "ticketing")]
        story: Story,
        /// Virtual seconds per real second (60 plays a minute a second).
        #[arg(long, default_value_t = 60.0)]
        speed: f64,
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
    /// The blast radius of a node in a dbt project: what reads it, how far down, who owns it.
    Lineage(dataward::lineage::cli::LineageArgs),
    /// Recompute the whole chain; exit 1 naming the first bad record.
    Verify {
        #[arg(long)]
        json: bool,
    },
    /// Print the receipt of an incident.
    Receipt {
        incident: String,
        #[arg(long, conflicts_with = "json")]
        md: bool,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dataward: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let data_dir = config::data_dir(cli.data_dir.as_deref())?;
    let Some(command) = cli.command else {
        anyhow::bail!("the console needs a config; try `dataward demo` (a config-driven console comes with `dataward --config FILE`)");
    };
    match command {
        Cmd::Demo {
            story: Story::Ticketing,
            speed,
            headless,
            json,
            approve_as,
        } => {
            anyhow::ensure!(speed > 0.0, "--speed must be above zero");
            let options = demo::DemoOptions {
                data_dir,
                speed,
                approve_as,
            };
            if headless {
                demo::run_headless(options, json)?;
            } else {
                demo::run_console(options)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Lineage(args) => dataward::lineage::cli::run(args),
        Cmd::Verify { json } => {
            let path = data_dir.join("dataward.db");
            anyhow::ensure!(path.exists(), "no state database at {}", path.display());
            let conn = store::open(&path)?;
            let report = chain::verify(&conn)?;
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else if let Some(bad) = &report.first_bad {
                println!(
                    "chain BROKEN at record #{}: {} ({} records read)",
                    bad.seq, bad.reason, report.records
                );
            } else {
                println!(
                    "chain ok: {} records, head {}",
                    report.records,
                    report.head.as_deref().unwrap_or("(empty)")
                );
            }
            Ok(if report.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Receipt {
            incident,
            md: _,
            json,
        } => {
            let path = data_dir.join("dataward.db");
            anyhow::ensure!(path.exists(), "no state database at {}", path.display());
            let conn = store::open(&path)?;
            let receipt = receipt::build(&chain::records(&conn)?, &incident)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&receipt)?);
            } else {
                print!("{}", receipt.to_markdown());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
