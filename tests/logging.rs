//! The logger writes to `dataward.log` in the XDG state directory, 0600, and a second
//! `init` changes nothing. Its own test binary: the logger is global to a process and
//! this test points XDG_STATE_HOME at a temporary directory.

use std::os::unix::fs::PermissionsExt;

#[test]
fn init_logs_to_a_private_file_in_the_state_directory_and_a_second_init_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("XDG_STATE_HOME", dir.path());
    std::env::remove_var("DATAWARD_LOG");

    let path = dataward::logging::init(false).unwrap().expect("a file");
    assert_eq!(path, dir.path().join("dataward").join("dataward.log"));
    tracing::info!(answer = 42, "first line");
    // Neither a second file logger nor a switch to stderr: the first call decides.
    assert_eq!(dataward::logging::init(false).unwrap(), Some(path.clone()));
    assert_eq!(dataward::logging::init(true).unwrap(), Some(path.clone()));
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
    assert!(
        !text.contains('\x1b'),
        "no ANSI escapes in a file: {text:?}"
    );
}
