//! `dataward serve` on team state (`[state] url_env`): which of the team's engines runs.
//! A standby waits here until its contender takes the lease; the leader's contender
//! then renews on a thread of its own while the engine runs, and the moment it finds
//! the lease gone (another engine took a later term while this one was stopped or cut
//! off) it stops the engine. The fence refuses every write at the old term anyway;
//! stopping says so plainly instead of failing write after write.

use std::path::Path;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::hub::HubMessage;
use super::Predecessor;
use crate::store::place::TeamState;
use crate::store::postgres::{self, Contender, Role, LEASE_FOR, STEP_EVERY};

/// This engine leads its team at `term`; `host` says where (host name and socket).
pub struct Leading {
    pub term: u64,
    pub host: String,
    pub from: Option<Predecessor>,
    contender: Contender,
}

/// The name of this host, for the lease and the messages that name the leader.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// How the lease names this engine: its host (host name and socket) and its holder
/// (that and this process).
pub fn names(data_dir: &Path) -> (String, String) {
    let host = format!(
        "{}:{}",
        host_name(),
        super::server::socket_path(data_dir).display()
    );
    let holder = holder(&host, std::process::id());
    (host, holder)
}

/// How the lease names the engine of process `pid` serving `host` (host name and socket).
pub fn holder(host: &str, pid: u32) -> String {
    format!("{host} (pid {pid})")
}

/// Stands by until this engine leads its team (None: a quit signal came first).
pub fn wait_to_lead(team: &TeamState, data_dir: &Path) -> Result<Option<Leading>> {
    let (host, holder) = names(data_dir);
    let mut contender = Contender::new(team.source.clone(), &team.team, &holder, &host, LEASE_FOR);
    // Who led before, as the lease named it when this engine started or last looked.
    let mut before = postgres::inspect(&team.source, &team.team)?.lease;
    let mut said_standby = None;
    loop {
        if crate::signals::quit_signal().is_some() {
            return Ok(None);
        }
        match contender.step() {
            Ok(Role::Leader { term }) => {
                return Ok(Some(Leading {
                    term,
                    host,
                    from: before.map(|lease| Predecessor {
                        term: lease.term,
                        host: lease.host,
                    }),
                    contender,
                }));
            }
            Ok(Role::Standby { lease }) => {
                if let Some(lease) = &lease {
                    if said_standby != Some(lease.term) {
                        let said = format!("standby: {} leads at term {}", lease.host, lease.term);
                        eprintln!("dataward serve: {}", crate::sanitize::for_terminal(&said));
                        tracing::info!("{said}");
                        said_standby = Some(lease.term);
                    }
                }
                before = lease.or(before);
            }
            Err(e) => tracing::warn!("team leadership: {e:#}"),
        }
        std::thread::sleep(STEP_EVERY);
    }
}

/// Why the leader stopped leading, once it did.
#[derive(Clone, Default)]
pub struct Deposed(Arc<Mutex<Option<String>>>);

impl Deposed {
    pub fn reason(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The error a deposed leader's `serve` ends with: its own exit status (1), apart
/// from an engine that could not run (2).
#[derive(Debug)]
pub struct DeposedStop(pub String);

impl std::fmt::Display for DeposedStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeposedStop {}

/// Renews the lease on a thread of its own while the engine runs; once it is lost, the
/// hub is told to stop and [`Deposed`] says why.
pub fn keep(leading: Leading, hub: Sender<HubMessage>) -> Result<Deposed> {
    let deposed = Deposed::default();
    let said = deposed.clone();
    let Leading {
        term,
        mut contender,
        ..
    } = leading;
    std::thread::Builder::new()
        .name("dataward-lease".into())
        .spawn(move || loop {
            std::thread::sleep(STEP_EVERY);
            let why = match contender.step() {
                Ok(Role::Leader { term: now }) if now == term => continue,
                Ok(Role::Leader { term: now }) => {
                    format!("this engine led term {term} and now holds {now}")
                }
                Ok(Role::Standby { lease: Some(lease) }) => format!(
                    "{} leads at term {}; this engine led term {term}",
                    lease.host, lease.term
                ),
                Ok(Role::Standby { lease: None }) => {
                    format!("the team's lease is gone; this engine led term {term}")
                }
                Err(e) if contender.term() == Some(term) => {
                    tracing::warn!("renewing the lease: {e:#}");
                    continue;
                }
                Err(e) => {
                    format!("the lease could not be renewed ({e:#}); this engine led term {term}")
                }
            };
            let why = format!("deposed: {why}; it writes nothing more and stops");
            tracing::error!("{why}");
            *said.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            let _ = hub.send(HubMessage::Stop);
            return;
        })?;
    Ok(deposed)
}
