//! The logger writes to `dataward.log` in the XDG state directory, 0600, and a second
//! `init` changes nothing. Its own test binary: the logger is global to a process and
//! this test points XDG_STATE_HOME at a temporary directory. Two engines of one account
//! share that file, and each line names the data directory of the engine that wrote it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[test]
fn init_logs_to_a_private_file_in_the_state_directory_and_a_second_init_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_STATE_HOME", dir.path());
    std::env::remove_var("DATAWARD_LOG");

    let data = dir.path().join("data");
    let path = dataward::logging::init(false, &data)
        .unwrap()
        .expect("a file");
    assert_eq!(path, dir.path().join("dataward").join("dataward.log"));
    tracing::info!(answer = 42, "first line");
    // Neither a second file logger nor a switch to stderr: the first call decides.
    assert_eq!(
        dataward::logging::init(false, &data).unwrap(),
        Some(path.clone())
    );
    assert_eq!(
        dataward::logging::init(true, &data).unwrap(),
        Some(path.clone())
    );
    tracing::warn!("second line");
    tracing::debug!("below the default level");

    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("first line") && text.contains("answer=42"),
        "{text}"
    );
    assert!(
        text.contains("WARN") && text.contains("second line"),
        "{text}"
    );
    assert!(!text.contains("below the default level"), "{text}");
    let tag = format!("[{}] ", data.display());
    assert!(text.lines().all(|l| l.starts_with(&tag)), "{text}");
    assert!(
        !text.contains('\x1b'),
        "no ANSI escapes in a file: {text:?}"
    );
}

/// `dataward serve` on `data`, logging to the default log under `state`.
fn serve(root: &Path, state: &Path, data: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .arg("--data-dir")
        .arg(data)
        .arg("serve")
        .arg("--config")
        .arg(root.join("dataward.toml"))
        .env("XDG_STATE_HOME", state)
        .env_remove("DATAWARD_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_engines_of_one_account_share_the_log_and_each_line_names_its_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    rusqlite::Connection::open(root.join("shop.db"))
        .unwrap()
        .execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
        .unwrap();
    std::fs::write(
        root.join("dataward.toml"),
        "[warehouse.shop]\nkind = \"sqlite\"\npath = \"shop.db\"\n\n\
         [[monitor]]\nname = \"orders\"\nwarehouse = \"shop\"\ntable = \"orders\"\n\
         checks = [\"row_count\"]\nevery = \"1h\"\n",
    )
    .unwrap();
    let state = root.join("state");
    let (prod, staging) = (root.join("prod"), root.join("staging"));
    let log = state.join("dataward").join("dataward.log");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut engines = Vec::new();
    for data in [&prod, &staging] {
        engines.push(serve(root, &state, data));
        // One at a time: each says it serves before the next starts.
        let socket = data.join(dataward::engine::server::SOCKET);
        for _ in 0..600 {
            if read().contains(&format!("serving {}", socket.display())) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    for engine in &mut engines {
        // Ours to stop: the engines this test started, by their ids.
        Command::new("kill")
            .args(["-TERM", &engine.id().to_string()])
            .status()
            .unwrap();
        engine.wait().unwrap();
    }
    let text = read();
    let (prod_tag, staging_tag) = (
        format!("[{}] ", prod.display()),
        format!("[{}] ", staging.display()),
    );
    for line in text.lines() {
        assert!(
            line.starts_with(&prod_tag) || line.starts_with(&staging_tag),
            "a line that names no data directory: {line:?} in\n{text}"
        );
    }
    for tag in [&prod_tag, &staging_tag] {
        let stopped = text
            .lines()
            .filter(|l| {
                l.starts_with(tag.as_str()) && l.ends_with("dataward::engine::server: stopped")
            })
            .count();
        assert_eq!(stopped, 1, "{tag}: {text}");
    }
}
