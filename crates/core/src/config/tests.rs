use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
    assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
    assert!(parse_duration("5").is_err());
    assert!(parse_duration("0m").is_err());
    assert!(parse_duration("5 weeks").is_err());
}

#[test]
fn errors_name_the_file_and_the_key() {
    let origin = Path::new("/etc/dataward.toml");
    let err = Config::parse(
        "[[monitor]]\nwarehouse = \"x\"\ntable = \"t\"\nchecks = [\"row_count\"]\n",
        origin,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/etc/dataward.toml"), "{err}");
    assert!(err.contains("unknown warehouse"), "{err}");

    let err = Config::parse(
        "[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\ntypo = 1\n",
        origin,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("typo"), "{err}");
    assert!(err.contains("line 4"), "{err}");
}

#[test]
fn a_postgres_url_in_the_file_is_refused() {
    let origin = Path::new("/etc/dataward.toml");
    let err = Config::parse(
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"postgres://u:secret@h/db\"\n",
        origin,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not an environment variable name"), "{err}");
    assert!(!err.contains("secret"), "{err}");
    let ok = Config::parse(
        "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"DATAWARD_PG_URL\"\n",
        origin,
    );
    assert!(ok.is_ok());
}

#[test]
fn the_example_config_is_valid() {
    let text = include_str!("../../../../config.example.toml");
    let config = Config::parse(text, Path::new("config.example.toml")).unwrap();
    assert!(config.warehouse.values().any(|w| w.kind == "postgres"));
    assert!(config.warehouse.values().any(|w| w.kind == "duckdb"));
    assert!(config.warehouse.values().any(|w| w.kind == "snowflake"));
}

/// A minimal valid config with one extra line in the monitor.
fn with_monitor_line(line: &str) -> String {
    format!(
        "[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\n\n[[monitor]]\nwarehouse = \"a\"\ntable = \"t\"\nchecks = [\"row_count\"]\n{line}\n"
    )
}

#[test]
fn durations_that_overflow_are_refused_naming_the_key_and_line() {
    let origin = Path::new("/etc/dw.toml");
    for (line, key) in [
        ("every = \"100000000d\"", "every"),
        ("every = \"18446744073709551615s\"", "every"),
        ("every = \"18446744073709551615m\"", "every"),
        ("every = \"99999999999999999999999s\"", "every"),
        ("lookback = \"9999999999d\"", "lookback"),
        ("warn_after = \"3651d\"", "warn_after"),
        ("error_after = \"87601h\"", "error_after"),
    ] {
        let err = Config::parse(&with_monitor_line(line), origin)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/etc/dw.toml: line 9"), "{line}: {err}");
        assert!(err.contains(key), "{line}: {err}");
        assert!(err.contains("10 years"), "{line}: {err}");
    }
    // Ten years exactly is the limit, and fine.
    assert!(Config::parse(&with_monitor_line("lookback = \"3650d\""), origin).is_ok());
}

#[test]
fn every_duration_and_number_key_is_bounded() {
    let origin = Path::new("c.toml");
    let wh = |extra: &str| format!("[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\n{extra}\n");
    for (text, key, line) in [
        (wh("max_concurrent = 9223372036854775807"), "max_concurrent", 4),
        (wh("max_concurrent = 0"), "max_concurrent", 4),
        (wh("check_timeout = \"3650d\""), "check_timeout", 4),
        (
            "[verify]\nsettle = \"100000000d\"\n".to_string(),
            "settle",
            2,
        ),
        (
            "[[domain]]\nname = \"d\"\ncovers = [\"*\"]\nowners = [\"o\"]\napproval_ttl = \"18446744073709551615s\"\n"
                .to_string(),
            "approval_ttl",
            5,
        ),
    ] {
        let err = Config::parse(&text, origin).unwrap_err().to_string();
        assert!(err.contains(key), "{text}: {err}");
        assert!(err.contains(&format!("line {line}")), "{text}: {err}");
    }
}

#[test]
fn errors_that_quote_a_line_hide_secrets() {
    let origin = Path::new("c.toml");
    for (line, secret) in [
        ("password = \"hunter2\"", "hunter2"),
        ("url = \"postgres://me:s3cretpw@db:5432/x\"", "s3cretpw"),
        ("token = \"ghp_abcdefghijklmnop1234\"", "abcdefghijklmnop"),
        ("api_key = \"AKIAIOSFODNN7EXAMPLE\"", "IOSFODNN7"),
        ("dsn = \"host=db password=tiger user=me\"", "tiger"),
        (
            "url_env = \"xoxb-1234-abcdefghijklmnop\"",
            "abcdefghijklmnop",
        ),
        ("bearer = \"ghp_aBcDeFgHiJkLmNoPqRsT1234\"", "aBcDeFgHiJ"),
    ] {
        let text = format!("[warehouse.pg]\nkind = \"postgres\"\n{line}\n");
        let err = Config::parse(&text, origin).unwrap_err().to_string();
        assert!(!err.contains(secret), "{line}: {err}");
        assert!(err.contains("line 3"), "{line}: {err}");
    }
}

#[test]
fn redaction_keeps_what_is_not_secret() {
    assert_eq!(
        redact_secrets("postgres://me:pw@db:5432/x?sslmode=require"),
        "postgres://me:***@db:5432/x?sslmode=require"
    );
    assert_eq!(
        redact_secrets("3 | password = \"hunter 2\" # old"),
        "3 | password = \"***\" # old"
    );
    assert_eq!(
        redact_secrets("host=db password=tiger user=me"),
        "host=db password=*** user=me"
    );
    assert_eq!(
        redact_secrets("https://h/x?access_token=abc&page=2"),
        "https://h/x?access_token=***&page=2"
    );
    let plain = "c.toml: line 9: monitor[0] (t).every: \"5x\": unknown unit \"x\" (s, m, h, d)";
    assert_eq!(redact_secrets(plain), plain);
}

#[test]
fn holidays_are_dates_every_monitor_carries_and_a_bad_one_names_its_line() {
    let text = format!(
        "holidays = [\"2026-12-25\", \"2026-12-26\"]\n{}",
        with_monitor_line("timestamp_column = \"at\"")
    );
    let config = Config::parse(&text, Path::new("dataward.toml")).unwrap();
    assert_eq!(
        config.monitor[0].holidays,
        [
            chrono::NaiveDate::from_ymd_opt(2026, 12, 25).unwrap(),
            chrono::NaiveDate::from_ymd_opt(2026, 12, 26).unwrap()
        ]
    );
    let bad = text.replace("2026-12-26", "26/12/2026");
    let err = format!(
        "{:#}",
        Config::parse(&bad, Path::new("dataward.toml")).unwrap_err()
    );
    assert!(
        err.contains("holidays: \"26/12/2026\" is not a date like 2026-12-25"),
        "{err}"
    );
    assert!(err.contains("line "), "{err}");
}

#[test]
fn volume_needs_a_timestamp_column() {
    let err = Config::parse(
        "[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\n[[monitor]]\nwarehouse = \"a\"\ntable = \"t\"\nchecks = [\"volume\"]\n",
        Path::new("c.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("needs `timestamp_column`"), "{err}");
    assert!(err.contains("c.toml: line 4"), "{err}");
}

#[test]
fn null_window_is_a_duration_and_a_bad_one_names_the_monitor() {
    let origin = Path::new("c.toml");
    let text = |window: &str| {
        format!(
            "[warehouse.a]\nkind = \"sqlite\"\npath = \"a.db\"\n\n[[monitor]]\nname = \"payments_nulls\"\n\
             warehouse = \"a\"\ntable = \"payments\"\nchecks = [\"null_rate\"]\n\
             timestamp_column = \"loaded_at\"\nnull_window = \"{window}\"\n"
        )
    };
    let config = Config::parse(&text("6h"), origin).unwrap();
    assert_eq!(config.monitor[0].null_window.as_deref(), Some("6h"));
    for bad in ["6", "1w", "3651d"] {
        let err = Config::parse(&text(bad), origin).unwrap_err().to_string();
        assert!(err.contains("c.toml: line 11"), "{bad}: {err}");
        assert!(err.contains("payments_nulls"), "{bad}: {err}");
        assert!(err.contains("null_window"), "{bad}: {err}");
    }
}

#[test]
fn a_duckdb_warehouse_takes_a_path_and_a_driver_and_names_the_line_of_a_wrong_key() {
    let origin = Path::new("/etc/dataward.toml");
    let err = |text: &str| Config::parse(text, origin).unwrap_err().to_string();
    let ok = Config::parse(
        "[warehouse.d]\nkind = \"duckdb\"\npath = \":memory:\"\ndriver = \"duckdb\"\n",
        origin,
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
    let e = err("[warehouse.d]\nkind = \"duckdb\"\n");
    assert!(e.contains("needs `path`") && e.contains(":memory:"), "{e}");
    let e = err("[warehouse.d]\nkind = \"duckdb\"\npath = \":memory:\"\nurl_env = \"X\"\n");
    assert!(
        e.contains("line 4") && e.contains("not a duckdb key"),
        "{e}"
    );
    let e = err("[warehouse.d]\nkind = \"duckdb\"\npath = \":memory:\"\ndriver = \" \"\n");
    assert!(e.contains("line 4") && e.contains("driver"), "{e}");
    let e = err("[warehouse.s]\nkind = \"sqlite\"\npath = \"a.db\"\ndriver = \"duckdb\"\n");
    assert!(
        e.contains("line 4") && e.contains("duckdb warehouse"),
        "{e}"
    );
    let e = err("[warehouse.x]\nkind = \"bigquery\"\n");
    assert!(
        e.contains("\"duckdb\"") && e.contains("\"snowflake\""),
        "{e}"
    );
    // A Snowflake key on another kind names its line.
    let e = err("[warehouse.d]\nkind = \"duckdb\"\npath = \":memory:\"\naccount = \"a\"\n");
    assert!(e.contains("line 4") && e.contains("a snowflake key"), "{e}");
}

#[test]
fn state_names_an_environment_variable_and_its_url_is_checked_without_printing_it() {
    let origin = Path::new("/etc/dw.toml");
    let config = Config::parse("[state]\nurl_env = \"DW_TEST_STATE_URL\"\n", origin).unwrap();
    let state = config.state.as_ref().unwrap();
    assert_eq!(state.team, "default");
    let unset = format!("{:#}", state.url(origin).unwrap_err());
    assert!(
        unset.starts_with(
            "/etc/dw.toml: [state] url_env: environment variable DW_TEST_STATE_URL is not set"
        ),
        "{unset}"
    );
    // SAFETY: no other test reads or sets DW_TEST_STATE_URL.
    unsafe { std::env::set_var("DW_TEST_STATE_URL", "mysql://team:s3cret@db/state") };
    let wrong = format!("{:#}", state.url(origin).unwrap_err());
    assert!(wrong.contains("does not hold a postgres:// URL"), "{wrong}");
    assert!(!wrong.contains("s3cret"), "{wrong}");
    unsafe { std::env::set_var("DW_TEST_STATE_URL", "postgres://team:s3cret@db/state") };
    assert_eq!(
        state.url(origin).unwrap(),
        "postgres://team:s3cret@db/state"
    );

    let pasted = "[state]\nteam = \"payments\"\nurl_env = \"postgres://team:s3cret@db/state\"\n";
    let err = format!("{:#}", Config::parse(pasted, origin).unwrap_err());
    assert!(
        err.starts_with("/etc/dw.toml: line 3: state.url_env:"),
        "{err}"
    );
    assert!(err.contains("not an environment variable name"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    assert!(Config::parse("[state]\nurl_env = \"X\"\nteem = \"a\"\n", origin).is_err());
}
