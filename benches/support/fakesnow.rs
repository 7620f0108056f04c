//! A fakesnow server (`fakesnow -s`: Snowflake's HTTP protocol on loopback, DuckDB
//! underneath) from the venv `.ci/snowflake.sh` installs, as tests/snowflake.rs starts
//! it, counting the queries it is sent from its own access log.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub struct Fakesnow {
    child: Child,
    pub port: u16,
    /// The ADBC Snowflake driver's library, from the same venv.
    pub library: PathBuf,
    /// Queries the server was sent (its access log's query-request lines).
    queries: Arc<AtomicU64>,
}

impl Drop for Fakesnow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fakesnow {
    /// Starts the server, or says what is missing and returns None.
    pub fn start() -> Option<Fakesnow> {
        let venv = PathBuf::from(
            std::env::var("SNOWFLAKE_VENV").unwrap_or_else(|_| "/opt/dataward/snowflake".into()),
        );
        let library = std::fs::read_dir(venv.join("lib"))
            .ok()?
            .flatten()
            .map(|python| {
                python
                    .path()
                    .join("site-packages/adbc_driver_snowflake/libadbc_driver_snowflake.so")
            })
            .find(|path| path.is_file());
        let fakesnow = venv.join("bin/fakesnow");
        let (Some(library), true) = (library, fakesnow.is_file()) else {
            println!(
                "skipped: fakesnow and the ADBC Snowflake driver are not in {} (run .ci/snowflake.sh)",
                venv.display()
            );
            return None;
        };
        let mut child = Command::new(fakesnow)
            .args(["-s", "--host", "127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fakesnow");
        let queries = Arc::new(AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        // Both streams read to their end, so the server never blocks on a pipe; Uvicorn
        // prints its port on one and may log requests on either.
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let (tx, queries) = (tx.clone(), queries.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if line.contains("/queries/v1/query-request") {
                        queries.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                        let digits: String =
                            rest.chars().take_while(char::is_ascii_digit).collect();
                        let _ = tx.send(digits.parse::<u16>().ok());
                    }
                }
            });
        }
        let mut server = Fakesnow {
            child,
            port: 0,
            library,
            queries,
        };
        server.port = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .ok()
            .flatten()
            .expect("fakesnow printed no port within a minute");
        Some(server)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Queries the server has been sent so far.
    pub fn queries(&self) -> u64 {
        self.queries.load(Ordering::Relaxed)
    }
}
