//! The person's console settings: `[console]` and `[keys]` in the config, `--theme`,
//! a theme file that changes only what it sets, and errors that name the file and line.

#[path = "support/tmux.rs"]
mod terminal;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use terminal::{screen, tmux, tmux_available, wait_for, Session};

fn alive(session: &str) -> bool {
    Command::new("tmux")
        .args(["has-session", "-t", session])
        .output()
        .unwrap()
        .status
        .success()
}

fn demo(name: &str, data_dir: &Path, extra: &str) -> Session {
    let name = format!("dataward-config-{name}-{}", std::process::id());
    let command = format!(
        "{} {extra} demo --speed 300 --data-dir {}",
        env!("CARGO_BIN_EXE_dataward"),
        data_dir.display()
    );
    Session::open(&name, (120, 40), &command)
}

/// `[keys.list] quit = "Q"` moves the list's quit off q; `[console] theme` picks the
/// theme; help lists the new key.
#[test]
fn the_configs_keys_and_theme_apply() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[console]\ntheme = \"light\"\n\n[keys]\nrun = \"ctrl-x\"\n\n[keys.list]\nquit = \"Q\"\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let session = demo("keys", &data, &format!("--config {}", config.display()));
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    tmux(&["send-keys", "-t", s, "q"]);
    std::thread::sleep(Duration::from_secs(1));
    assert!(alive(s), "q no longer quits the list");
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "theme"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "theme light (available");
    tmux(&["send-keys", "-t", s, "?"]);
    let help = wait_for(s, "Keys (Esc closes)");
    assert!(!help.contains(" q                   quit"), "{help}");
    tmux(&["send-keys", "-t", s, "/"]);
    tmux(&["send-keys", "-t", s, "-l", "run for this"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    let found = wait_for(s, "/run for this: 1 of 1");
    assert!(found.contains("Ctrl-X"), "{found}");
    tmux(&["send-keys", "-t", s, "Escape"]);
    tmux(&["send-keys", "-t", s, "Q"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(s) {
        assert!(Instant::now() < deadline, "Q did not quit:\n{}", screen(s));
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `--theme FILE`: a user theme over its base changes only what it sets.
#[test]
fn a_theme_file_changes_only_what_it_sets() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let theme = dir.path().join("mine.toml");
    std::fs::write(&theme, "base = \"light\"\n\n[crit]\nfg = \"#ff00ff\"\n").unwrap();
    let data = dir.path().join("data");
    let session = demo("theme", &data, &format!("--theme {}", theme.display()));
    let s = session.0.as_str();
    wait_for(s, "INC-0001");
    let coloured = tmux(&["capture-pane", "-p", "-e", "-t", s]);
    // The open incident's status is crit: the file's colour.
    assert!(coloured.contains("38;2;255;0;255"), "{coloured}");
    tmux(&["send-keys", "-t", s, ":"]);
    tmux(&["send-keys", "-t", s, "-l", "theme"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "theme light (available");
}

fn dataward(args: &[&str], data: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A broken theme file, or a broken `[keys]`, is refused before anything starts, with
/// the file and the line.
#[test]
fn a_broken_theme_or_key_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let theme = dir.path().join("mine.toml");
    std::fs::write(&theme, "[ok]\nfg = \"green\"\n\n[warn]\nfg = \"yelow\"\n").unwrap();
    let theme_arg = theme.to_str().unwrap();
    let (code, stderr) = dataward(&["--theme", theme_arg, "demo"], &data);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "theme file {}, line 5: warn.fg: 'yelow' is not a colour",
            theme.display()
        )),
        "{stderr}"
    );
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[console]\nmouse = true\n\n[keys]\nrun = \"ctrl-\"\n",
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    for args in [
        &["--config", config_arg, "demo"][..],
        &["--config", config_arg],
    ] {
        let (code, stderr) = dataward(args, &data);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "config {}, line 5: keys.run: \"ctrl-\" is not a key",
                config.display()
            )),
            "{args:?}: {stderr}"
        );
    }
    let (code, stderr) = dataward(&["--theme", "neon", "demo"], &data);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--theme: unknown theme 'neon'"), "{stderr}");
    assert!(!data.join("dataward.db").exists(), "nothing started");
}
