//! Shell completions and the man page come from the same clap definition as the
//! command line itself, so a new subcommand is in both without anyone writing it.

use std::process::Command;

fn dataward(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .output()
        .expect("run dataward");
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn completions_name_every_subcommand_and_its_flags() {
    let bash = dataward(&["completions", "bash"]);
    assert!(bash.contains("complete -F _dataward"), "{bash}");
    for word in [
        "init",
        "doctor",
        "--dbt-project",
        "--send-test",
        "completions",
        "man",
        "migration",
    ] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    let zsh = dataward(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef dataward"), "{zsh}");
    assert!(zsh.contains("--dbt-project"), "{zsh}");
    let fish = dataward(&["completions", "fish"]);
    assert!(fish.contains("complete -c dataward"), "{fish}");
}

#[test]
fn the_man_page_is_roff_listing_the_subcommands() {
    let man = dataward(&["man"]);
    assert!(
        man.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        &man[..200.min(man.len())]
    );
    assert!(man.contains(".TH dataward 1"), "{man}");
    for word in ["init", "doctor", "check", "serve"] {
        assert!(man.contains(word), "the man page lacks {word}");
    }
}
