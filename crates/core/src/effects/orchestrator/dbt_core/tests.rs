use super::*;

#[test]
fn orchestrator_dbt_core_commands_split_without_a_shell() {
    assert_eq!(
        words("dbt build --select tag:hourly").unwrap(),
        ["dbt", "build", "--select", "tag:hourly"]
    );
    assert_eq!(
        words(r#"dbt run --vars '{"day": "2024-05-11"}' -s "a b" c\ d"#).unwrap(),
        [
            "dbt",
            "run",
            "--vars",
            r#"{"day": "2024-05-11"}"#,
            "-s",
            "a b",
            "c d"
        ]
    );
    assert_eq!(
        words("dbt run; touch /tmp/x | cat $(id) > out").unwrap(),
        ["dbt", "run;", "touch", "/tmp/x", "|", "cat", "$(id)", ">", "out"]
    );
    assert_eq!(words("dbt run ''").unwrap(), ["dbt", "run", ""]);
    for bad in [
        "rm -rf /",
        "dbt",
        "dbtx run",
        "\"dbt\" run",
        "dbt run\nrm -rf /",
        "dbt run 'open",
        "dbt run \"open",
        "dbt run \\",
    ] {
        assert!(words(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn orchestrator_dbt_core_target_comes_from_the_config_only() {
    let settings = Settings {
        project_dir: PathBuf::from("/p"),
        dbt: PathBuf::from("/bin/dbt"),
        profiles_dir: None,
        target: Some("prod".into()),
        jobs: BTreeMap::new(),
        data_dir: PathBuf::from("/d"),
        state: StateToRead(PathBuf::from("/d/dataward.db").into()),
    };
    assert_eq!(
        settings.arguments("dbt build -s x").unwrap(),
        ["build", "-s", "x", "--target", "prod"]
    );
    assert!(settings.arguments("dbt build --target dev").is_err());
    assert!(settings.arguments("dbt build --target=dev").is_err());
}

#[test]
fn orchestrator_dbt_core_this_process_is_alive_and_a_gone_one_is_not() {
    assert!(alive(me()));
    let mut parts: Vec<&str> = me().split(' ').collect();
    parts[2] = "1"; // the same pid, started at another time: a reused pid
    assert!(!alive(&parts.join(" ")));
    assert!(!alive("not an owner"));
}

#[test]
fn orchestrator_dbt_core_a_long_output_keeps_its_end_and_says_it_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.log");
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!("line {i}\n"));
    }
    std::fs::write(&log, &text).unwrap();
    let tail = tail_of(&log);
    assert!(tail.len() as u64 <= OUTPUT_TAIL + 200, "{}", tail.len());
    assert!(
        tail.starts_with("[output cut: its first "),
        "{}",
        &tail[..100]
    );
    assert!(tail.contains(&log.display().to_string()));
    assert!(tail.ends_with("line 19999\n"));
    // The kept part starts at a whole line.
    assert!(tail.lines().nth(1).unwrap().starts_with("line "));
    assert_eq!(last_lines(&tail).lines().count(), DETAIL_LINES);
    std::fs::write(&log, "short\n").unwrap();
    assert_eq!(tail_of(&log), "short\n");
}
