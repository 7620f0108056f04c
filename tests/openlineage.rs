//! OpenLineage in: events as dbt-ol and Airflow's provider emit them, read from the
//! file transport's JSONL; bad input refused with its line and reason, nothing lost.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use dataward::lineage::openlineage::{
    parse_event, read_from, table_in, Dataset, EventType, Limits, Place, Position, Source, TailRead,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openlineage")
        .join(name)
}

fn fixture_lines(name: &str) -> Vec<String> {
    fs::read_to_string(fixture(name))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn read_all(path: &Path, from: Position) -> TailRead {
    read_from(path, from, Limits::default()).unwrap()
}

fn append(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

#[test]
fn a_failed_dbt_ol_run_reads_as_the_model_failing_under_its_invocation() {
    let read = read_all(&fixture("dbt_ol_run_fail.jsonl"), Position::default());
    assert!(read.refused.is_empty(), "{:?}", read.refused);
    assert_eq!(read.events.len(), 4);
    assert_eq!(read.unread_bytes, 0);
    let kinds: Vec<(EventType, &str)> = read
        .events
        .iter()
        .map(|(_, e)| (e.event_type, e.job.name.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (EventType::Start, "dbt-run-shop_duck"),
            (EventType::Start, "shop.main.shop_duck.fct_orders"),
            (EventType::Fail, "shop.main.shop_duck.fct_orders"),
            (EventType::Fail, "dbt-run-shop_duck"),
        ]
    );
    let (line, model_fail) = &read.events[2];
    assert_eq!(*line, 3);
    let invocation = &read.events[0].1;
    let parent = model_fail
        .run
        .parent
        .as_ref()
        .expect("a model's run has its invocation as parent");
    assert_eq!(parent.run_id, invocation.run.run_id);
    assert_eq!(parent.job, invocation.job);
    assert_eq!(
        model_fail.inputs,
        [Dataset {
            namespace: "duckdb://shop.duckdb".into(),
            name: "shop.raw.orders".into()
        }]
    );
    // dbt-ol 1.54 sends no errorMessage for a model (the README says so): none is invented.
    assert_eq!(model_fail.run.error, None);
    assert_eq!(
        model_fail.event_time.to_rfc3339(),
        "2026-12-03T06:41:46.040373+00:00"
    );
}

#[test]
fn a_successful_dbt_ol_run_names_each_models_output() {
    let read = read_all(&fixture("dbt_ol_run_ok.jsonl"), Position::default());
    assert!(read.refused.is_empty(), "{:?}", read.refused);
    let completed: Vec<(&str, &str)> = read
        .events
        .iter()
        .filter(|(_, e)| e.event_type == EventType::Complete)
        .flat_map(|(_, e)| {
            e.outputs
                .iter()
                .map(|o| (e.job.name.as_str(), o.dataset.name.as_str()))
        })
        .collect();
    assert_eq!(
        completed,
        [
            ("shop.main.shop_duck.fct_orders", "shop.main.fct_orders"),
            (
                "shop.main.shop_duck.customer_orders",
                "shop.main.customer_orders"
            ),
        ]
    );
    let place = Place::DuckDb {
        path: "/srv/dbt/shop/shop.duckdb".into(),
    };
    let tables: Vec<Option<String>> = read
        .events
        .iter()
        .flat_map(|(_, e)| e.outputs.iter())
        .map(|o| table_in(&o.dataset, &place))
        .collect();
    assert!(
        tables.contains(&Some("main.customer_orders".to_string())),
        "{tables:?}"
    );
}

#[test]
fn an_airflow_task_failure_carries_its_error_parent_and_the_rows_its_sibling_wrote() {
    let read = read_all(&fixture("airflow_task_fail.jsonl"), Position::default());
    assert!(read.refused.is_empty(), "{:?}", read.refused);
    assert_eq!(read.events.len(), 6);
    let (_, load) = &read.events[2];
    assert_eq!(load.event_type, EventType::Complete);
    assert_eq!(load.outputs[0].row_count, Some(1840));
    assert_eq!(
        Source::parse(&load.outputs[0].dataset.namespace),
        Source::Postgres {
            host: "warehouse-db.internal".into(),
            port: 5432
        }
    );
    let place = Place::Postgres {
        host: "warehouse-db.internal".into(),
        port: 5432,
        database: "billing".into(),
    };
    assert_eq!(
        table_in(&load.outputs[0].dataset, &place).as_deref(),
        Some("public.payments")
    );
    let (line, failed) = &read.events[4];
    assert_eq!(*line, 5);
    assert_eq!(failed.event_type, EventType::Fail);
    assert_eq!(failed.job.name, "billing_daily.export_invoices");
    let error = failed.run.error.as_ref().expect("the failed task says why");
    assert!(error
        .message
        .contains("/mnt/exports/invoices/2026-11-01.csv"));
    assert_eq!(error.programming_language, "python");
    assert!(error.stack_trace.as_deref().unwrap().contains("line 41"));
    let parent = failed.run.parent.as_ref().unwrap();
    assert_eq!(parent.job.name, "billing_daily");
    assert_eq!(parent.run_id, read.events[0].1.run.run_id);
}

/// Recorded from Airflow 3.1.3's own OpenLineage provider (2.9.0): the failed task's
/// FAIL carries Python's error and the DAG run as its parent, and maps to a failed run.
#[test]
fn the_airflow_providers_own_task_failure_reads_as_a_failed_run() {
    let read = read_all(
        &fixture("airflow_provider_task_fail.jsonl"),
        Position::default(),
    );
    assert!(read.refused.is_empty(), "{:?}", read.refused);
    let kinds: Vec<_> = read.events.iter().map(|(_, e)| e.event_type).collect();
    assert_eq!(
        kinds,
        [
            EventType::Start,
            EventType::Complete,
            EventType::Start,
            EventType::Fail
        ]
    );
    let (_, failed) = &read.events[3];
    assert_eq!(failed.job.name, "exports.push");
    let error = failed.run.error.as_ref().expect("the failed task says why");
    assert!(
        error
            .message
            .contains("No such file or directory: '/mnt/exports/accounts.csv'"),
        "{}",
        error.message
    );
    assert_eq!(error.programming_language, "python");
    let parent = failed.run.parent.as_ref().unwrap();
    assert_eq!(parent.job.name, "exports");
    assert_eq!(
        parent.run_id,
        read.events[0].1.run.parent.as_ref().unwrap().run_id
    );
    let run = dataward::incident::failed_run::FailedRun::from_openlineage(failed, &|_| None)
        .expect("a FAIL is a failed run");
    assert_eq!(run.job, "exports.push");
    assert_eq!(run.parent_run.as_deref(), Some(parent.run_id.as_str()));
    assert!(run.error.contains("/mnt/exports/accounts.csv"));
}

#[test]
fn the_tail_resumes_where_it_stopped_and_waits_for_a_partial_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let lines = fixture_lines("airflow_task_fail.jsonl");
    append(&path, format!("{}\n{}\n", lines[0], lines[1]).as_bytes());
    // The transport is halfway through writing the third line.
    let (head, tail) = lines[2].split_at(lines[2].len() / 2);
    append(&path, head.as_bytes());

    let first = read_all(&path, Position::default());
    assert!(
        first.refused.is_empty(),
        "a line being written is not an error: {:?}",
        first.refused
    );
    assert_eq!(first.events.len(), 2);
    assert_eq!(first.next.lines, 2);
    assert_eq!(
        first.next.offset as usize,
        lines[0].len() + lines[1].len() + 2
    );
    assert_eq!(first.unread_bytes as usize, head.len());
    assert!(!first.limited);

    // Reading again before the write ends finds nothing new and keeps the position.
    let again = read_all(&path, first.next);
    assert!(again.events.is_empty() && again.refused.is_empty());
    assert_eq!(again.next, first.next);

    append(&path, format!("{tail}\n{}\n", lines[3]).as_bytes());
    let second = read_all(&path, first.next);
    assert!(second.refused.is_empty(), "{:?}", second.refused);
    let numbers: Vec<u64> = second.events.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [3, 4]);
    assert_eq!(second.events[0].1.outputs[0].row_count, Some(1840));
    assert_eq!(second.unread_bytes, 0);
    assert!(!second.restarted);
}

#[test]
fn a_truncated_or_replaced_file_is_read_again_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let lines = fixture_lines("dbt_ol_run_ok.jsonl");
    append(
        &path,
        format!("{}\n{}\n{}\n", lines[0], lines[1], lines[2]).as_bytes(),
    );
    let before = read_all(&path, Position::default());
    assert_eq!(before.events.len(), 3);

    // Truncated and rewritten shorter: the old offset is past its end.
    fs::write(&path, format!("{}\n", lines[3])).unwrap();
    let after = read_all(&path, before.next);
    assert!(after.restarted);
    assert_eq!(after.events.len(), 1);
    assert_eq!(after.events[0].0, 1, "line numbers start again too");
    assert_eq!(after.events[0].1.event_type, EventType::Complete);

    // Rotated: a new file at the same path, longer than the old offset.
    let rotated = dir.path().join("events.jsonl.1");
    fs::rename(&path, &rotated).unwrap();
    let all = lines.join("\n") + "\n";
    fs::write(&path, &all).unwrap();
    let rotated_read = read_all(&path, after.next);
    assert!(
        rotated_read.restarted,
        "another inode at the path is another file"
    );
    assert_eq!(rotated_read.events.len(), lines.len());
}

#[test]
fn bad_lines_are_refused_by_line_and_reason_and_the_good_ones_around_them_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let good = fixture_lines("airflow_task_fail.jsonl");
    let mut unknown: serde_json::Value = serde_json::from_str(&good[1]).unwrap();
    unknown["eventType"] = "RESTARTED".into();
    let mut wrong_type: serde_json::Value = serde_json::from_str(&good[2]).unwrap();
    wrong_type["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] = "many".into();
    let mut no_run_id: serde_json::Value = serde_json::from_str(&good[3]).unwrap();
    no_run_id["run"].as_object_mut().unwrap().remove("runId");
    let mut bad_time: serde_json::Value = serde_json::from_str(&good[4]).unwrap();
    bad_time["eventTime"] = "2026-11-02 02:01:15".into();
    let text = [
        good[0].clone(),
        "{\"eventType\": \"START\", \"eventTime\": ".to_string(),
        unknown.to_string(),
        String::new(),
        wrong_type.to_string(),
        no_run_id.to_string(),
        bad_time.to_string(),
        good[5].clone(),
    ]
    .join("\n")
        + "\n";
    append(&path, text.as_bytes());

    let read = read_all(&path, Position::default());
    let kept: Vec<u64> = read.events.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        kept,
        [1, 8],
        "the blank line 4 is skipped, the good lines kept"
    );
    let name = path.display().to_string();
    let refused: Vec<String> = read
        .refused
        .iter()
        .map(|e| e.to_string().replacen(&name, "events.jsonl", 1))
        .collect();
    assert_eq!(refused.len(), 5, "{refused:#?}");
    assert!(
        refused[0].starts_with("events.jsonl line 2: not JSON: EOF"),
        "{}",
        refused[0]
    );
    assert_eq!(
        refused[1],
        "events.jsonl line 3: $.eventType: \"RESTARTED\" is not an OpenLineage event type (one of START, RUNNING, COMPLETE, FAIL, ABORT, OTHER)"
    );
    assert_eq!(
        refused[2],
        "events.jsonl line 5: $.outputs[0].outputFacets.outputStatistics.rowCount: expected a whole number of rows, 0 or more, found the string \"many\""
    );
    assert_eq!(
        refused[3],
        "events.jsonl line 6: $.run.runId: missing; the spec requires it"
    );
    assert!(
        refused[4].starts_with(
            "events.jsonl line 7: $.eventTime: \"2026-11-02 02:01:15\" is not an RFC 3339 time with an offset"
        ),
        "{}",
        refused[4]
    );
    assert_eq!(read.next.lines, 8);
    assert_eq!(read.unread_bytes, 0);
}

/// Read the file to its end in reads within `limits`: the line numbers seen, and how
/// many reads it took.
fn drain(path: &Path, limits: Limits) -> (Vec<u64>, usize) {
    let mut position = Position::default();
    let mut seen = Vec::new();
    let mut reads = 0;
    loop {
        let read = read_from(path, position, limits).unwrap();
        assert!(read.events.len() <= limits.max_lines);
        assert!(read.refused.is_empty());
        seen.extend(read.events.iter().map(|(n, _)| *n));
        position = read.next;
        reads += 1;
        if !read.limited {
            assert_eq!(read.unread_bytes, 0);
            return (seen, reads);
        }
        assert!(read.unread_bytes > 0, "a limited read says what is left");
    }
}

#[test]
fn a_flood_is_read_in_bounded_pieces_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let line = &fixture_lines("airflow_task_fail.jsonl")[4];
    let count = 250;
    append(&path, (line.clone() + "\n").repeat(count).as_bytes());
    let every_line: Vec<u64> = (1..=count as u64).collect();

    // Capped by lines: 100, 100, 50.
    let by_lines = Limits {
        max_lines: 100,
        max_bytes: 8 * 1024 * 1024,
    };
    assert_eq!(drain(&path, by_lines), (every_line.clone(), 3));

    // Capped by bytes: each read stops at the last whole line within 64 KiB.
    let by_bytes = Limits {
        max_lines: 1_000,
        max_bytes: 64 * 1024,
    };
    let per_read = by_bytes.max_bytes / (line.len() + 1);
    let (seen, reads) = drain(&path, by_bytes);
    assert_eq!(seen, every_line);
    assert_eq!(reads, count.div_ceil(per_read));
}

#[test]
fn a_line_longer_than_a_read_is_refused_and_stepped_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let good = fixture_lines("airflow_task_fail.jsonl");
    let huge = format!("{{\"padding\": \"{}\"}}", "x".repeat(200_000));
    append(&path, format!("{huge}\n{}\n", good[0]).as_bytes());
    let limits = Limits {
        max_lines: 10,
        max_bytes: 16 * 1024,
    };
    let first = read_from(&path, Position::default(), limits).unwrap();
    assert_eq!(first.refused.len(), 1);
    assert_eq!(first.refused[0].line, 1);
    assert!(first.refused[0]
        .to_string()
        .contains("over the 16384 bytes one read takes"));
    let second = read_from(&path, first.next, limits).unwrap();
    assert_eq!(second.events.len(), 1);
    assert_eq!(second.events[0].0, 2);
}

#[test]
fn a_request_body_is_refused_whole_with_what_is_wrong() {
    assert_eq!(
        parse_event("[1, 2]").unwrap_err().to_string(),
        "expected an OpenLineage run event (a JSON object), found an array"
    );
    assert!(parse_event("not json")
        .unwrap_err()
        .to_string()
        .starts_with("not JSON:"));
    let good = &fixture_lines("airflow_task_fail.jsonl")[1];
    let mut no_job_name: serde_json::Value = serde_json::from_str(good).unwrap();
    no_job_name["job"].as_object_mut().unwrap().remove("name");
    assert_eq!(
        parse_event(&no_job_name.to_string())
            .unwrap_err()
            .to_string(),
        "$.job.name: missing; the spec requires it"
    );
    let mut number_name: serde_json::Value = serde_json::from_str(good).unwrap();
    number_name["inputs"][0]["name"] = 7.into();
    assert_eq!(
        parse_event(&number_name.to_string())
            .unwrap_err()
            .to_string(),
        "$.inputs[0].name: expected a string, found the number 7"
    );
    // Unknown facets and keys are ignored; OTHER and a missing type read as Other.
    let mut other: serde_json::Value = serde_json::from_str(good).unwrap();
    other["eventType"] = "OTHER".into();
    other["run"]["facets"]["someVendorFacet"] = serde_json::json!({"anything": [1, 2]});
    other["futureKey"] = true.into();
    assert_eq!(
        parse_event(&other.to_string()).unwrap().event_type,
        EventType::Other
    );
    other.as_object_mut().unwrap().remove("eventType");
    assert_eq!(
        parse_event(&other.to_string()).unwrap().event_type,
        EventType::Other
    );
}

#[test]
fn dbt_ol_on_postgres_names_tables_the_config_monitors_and_counts_the_rows_written() {
    let config: dataward::config::WarehouseConfig =
        toml::from_str("kind = \"postgres\"\nurl_env = \"SHOP_URL\"").unwrap();
    let place = Place::of(&config, Some("postgresql://postgres@localhost:55473/shop")).unwrap();

    let ok = read_all(&fixture("dbt_ol_postgres_ok.jsonl"), Position::default());
    assert!(ok.refused.is_empty(), "{:?}", ok.refused);
    let (_, built) = ok
        .events
        .iter()
        .find(|(_, e)| e.event_type == EventType::Complete && !e.outputs.is_empty())
        .expect("the model's COMPLETE");
    assert_eq!(built.outputs[0].row_count, Some(120));
    assert_eq!(
        table_in(&built.outputs[0].dataset, &place).as_deref(),
        Some("analytics.order_amounts")
    );
    assert_eq!(
        table_in(&built.inputs[0], &place).as_deref(),
        Some("raw.orders")
    );

    // The same model after `amount` was dropped from raw.orders: a FAIL naming what it
    // read, with no error text (dbt-ol 1.54 sends none; run_results.json has it).
    let failed = read_all(
        &fixture("dbt_ol_postgres_column_dropped.jsonl"),
        Position::default(),
    );
    assert!(failed.refused.is_empty(), "{:?}", failed.refused);
    let fails: Vec<&str> = failed
        .events
        .iter()
        .filter(|(_, e)| e.event_type == EventType::Fail)
        .map(|(_, e)| e.job.name.as_str())
        .collect();
    assert_eq!(
        fails,
        ["shop.analytics.shop_pg.order_amounts", "dbt-run-shop_pg"]
    );
    let (_, model) = &failed.events[2];
    assert_eq!(
        table_in(&model.inputs[0], &place).as_deref(),
        Some("raw.orders")
    );
    assert!(model.outputs.is_empty());
    assert_eq!(model.run.error, None);
    assert_eq!(
        model.run.dbt_invocation_id.as_deref(),
        Some("f3108b20-c701-4fa4-bfd9-bd091173362e"),
        "the key to the run_results.json that holds the error"
    );
}
