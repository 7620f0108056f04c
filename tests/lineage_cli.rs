//! `dataward lineage` through the real binary: column findings on manifests we wrote,
//! bad input (exit 2 with a message naming the file and what is wrong), and the JSON
//! node set against a plain child_map closure on the shared real manifests.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lineage");

fn fixture(name: &str) -> String {
    Path::new(FIXTURES).join(name).display().to_string()
}

/// A real dbt artifact from `../shared/fixtures/dbt`, or `None` when the folder is
/// missing here; with DATAWARD_REQUIRE_ALL=1 (CI) a missing folder fails instead.
fn shared(name: &str) -> Option<String> {
    let dir = Path::new(SHARED);
    if !dir.is_dir() {
        if std::env::var("DATAWARD_REQUIRE_ALL").as_deref() == Ok("1") {
            panic!("{} is missing and DATAWARD_REQUIRE_ALL=1", dir.display());
        }
        println!("skipping: {} is missing", dir.display());
        return None;
    }
    Some(dir.join("fixtures/dbt").join(name).display().to_string())
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn lineage(args: &[&str]) -> Run {
    let data_dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .arg("--data-dir")
        .arg(data_dir.path())
        .arg("lineage")
        .args(args)
        .output()
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn lineage_json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let run = lineage(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

fn node<'a>(report: &'a Value, unique_id: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["unique_id"] == unique_id)
        .unwrap_or_else(|| panic!("{unique_id} is not downstream"))
}

/// (kind, expression, risk level, method) of each use found in a node.
fn uses(report: &Value, unique_id: &str) -> Vec<(String, String, String, String)> {
    node(report, unique_id)["column"]["uses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["kind"].as_str().unwrap().to_string(),
                u["expression"].as_str().unwrap().to_string(),
                u["risk"]["level"].as_str().unwrap().to_string(),
                u["method"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn found(
    kind: &str,
    expression: &str,
    level: &str,
    method: &str,
) -> (String, String, String, String) {
    (kind.into(), expression.into(), level.into(), method.into())
}

/// The target type of the `index`th use in a node, which its risk names when it depends
/// on the data.
fn risk_target(report: &Value, unique_id: &str, index: usize) -> Value {
    node(report, unique_id)["column"]["uses"][index]["risk"]["target_type"].clone()
}

/// The reason given for the `index`th use in a node.
fn reason(report: &Value, unique_id: &str, index: usize) -> String {
    node(report, unique_id)["column"]["uses"][index]["reason"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn casts_of_text_depend_on_the_data_and_are_found_by_the_parser() {
    let manifest = fixture("ticketing_snowflake_manifest.json");
    let catalog = fixture("ticketing_snowflake_catalog.json");
    let report = lineage_json(&[
        "--manifest",
        &manifest,
        "--catalog",
        &catalog,
        "--from",
        "wh.ticketing.orders",
        "--column",
        "seat_section",
    ]);
    assert_eq!(report["from"]["unique_id"], "source.ticketing.app.orders");
    // The new type comes from the catalog's entry for the changed source.
    assert_eq!(report["column"]["new_type"], "VARCHAR(12)");
    assert_eq!(report["column"]["new_type_from"], "catalog");
    assert_eq!(report["column"]["break_risk_judged"], true);

    let seat_map = "cast(o.seat_section as integer)";
    // Text cast to an integer runs while every value converts: Snowflake's CAST fails
    // on the first that does not.
    assert_eq!(
        uses(&report, "model.ticketing.int_seat_map"),
        vec![
            found("cast", seat_map, "depends_on_data", "sqlparser"),
            found("cast", seat_map, "depends_on_data", "sqlparser"),
        ],
        "the select and the join both cast"
    );
    assert_eq!(
        risk_target(&report, "model.ticketing.int_seat_map", 1),
        "integer"
    );
    let seat_map_use = &node(&report, "model.ticketing.int_seat_map")["column"]["uses"][0];
    assert_eq!(seat_map_use["risk"]["target_type"], "integer");
    assert_eq!(seat_map_use["column"], "o.seat_section");
    assert!(
        reason(&report, "model.ticketing.int_seat_map", 0).contains("TRY_CAST would give null"),
        "{seat_map_use}"
    );
    // The proposal's diff searches the file as written for this exact text.
    let text = std::fs::read_to_string(&manifest).unwrap();
    let written: Value = serde_json::from_str(&text).unwrap();
    let raw = written["nodes"]["model.ticketing.int_seat_map"]["raw_code"]
        .as_str()
        .unwrap();
    assert_eq!(raw.matches(seat_map).count(), 2);

    assert_eq!(
        uses(&report, "model.ticketing.seat_numbers"),
        vec![found(
            "cast",
            "seat_section::number(4, 0)",
            "depends_on_data",
            "sqlparser"
        )]
    );
    assert_eq!(
        risk_target(&report, "model.ticketing.seat_numbers", 0),
        "number(4, 0)"
    );
    assert_eq!(
        uses(&report, "model.ticketing.seat_sections_safe"),
        vec![found(
            "cast",
            "try_cast(seat_section as int)",
            "safe",
            "sqlparser"
        )],
        "try_cast gives null instead of failing"
    );
    // The comment's cast and the string literal are not findings; a cast to text is safe.
    let labels = node(&report, "model.ticketing.section_labels_text");
    assert_eq!(labels["column"]["reads"], true);
    assert_eq!(
        uses(&report, "model.ticketing.section_labels_text"),
        vec![found(
            "cast",
            "cast(seat_section as varchar)",
            "safe",
            "sqlparser"
        )]
    );
    // Downstream but never touching the column.
    let pacing = node(&report, "model.ticketing.fct_sales_pacing");
    assert_eq!(pacing["column"]["reads"], false);
    assert_eq!(pacing["column"]["method"], "sqlparser");
    // Only raw SQL with a macro call: the parser cannot read it, tokens can.
    let with_macro = node(&report, "model.ticketing.seat_map_macro");
    assert_eq!(with_macro["column"]["method"], "tokens");
    assert_eq!(
        uses(&report, "model.ticketing.seat_map_macro"),
        vec![found(
            "cast",
            "seat_section::int",
            "depends_on_data",
            "tokens"
        )]
    );

    // Nothing breaks whatever the data; three models depend on it.
    assert_eq!(report["summary"]["break_risks"], serde_json::json!([]));
    assert_eq!(
        report["column"]["depends_on_data"],
        serde_json::json!([
            "model.ticketing.int_seat_map",
            "model.ticketing.seat_map_macro",
            "model.ticketing.seat_numbers"
        ])
    );
    assert_eq!(
        report["summary"]["depends_on_data"],
        report["column"]["depends_on_data"]
    );
}

#[test]
fn new_type_flag_wins_and_without_a_type_nothing_is_judged() {
    let manifest = fixture("ticketing_snowflake_manifest.json");
    let catalog = fixture("ticketing_snowflake_catalog.json");
    let common = [
        "--manifest",
        manifest.as_str(),
        "--from",
        "source.ticketing.app.orders",
        "--column",
        "SEAT_SECTION",
    ];

    let mut args = common.to_vec();
    args.extend(["--catalog", &catalog, "--new-type", "BIGINT"]);
    let report = lineage_json(&args);
    assert_eq!(report["column"]["new_type_from"], "--new-type");
    // A number to a number: every cast works, but Snowflake's TRY_CAST takes only text.
    assert_eq!(
        report["summary"]["break_risks"],
        serde_json::json!(["model.ticketing.seat_sections_safe"])
    );
    assert!(reason(&report, "model.ticketing.seat_sections_safe", 0)
        .starts_with("Snowflake's TRY_CAST takes only text"));
    assert_eq!(
        uses(&report, "model.ticketing.seat_numbers"),
        vec![found(
            "cast",
            "seat_section::number(4, 0)",
            "depends_on_data",
            "sqlparser"
        )],
        "a BIGINT may not fit in NUMBER(4, 0)"
    );

    let report = lineage_json(&common);
    assert_eq!(report["column"]["break_risk_judged"], false);
    assert_eq!(report["column"]["new_type"], Value::Null);
    let note = report["column"]["note"].as_str().unwrap();
    assert!(note.contains("without a break-risk judgement"), "{note}");
    assert_eq!(report["summary"]["break_risks"], serde_json::json!([]));
    assert_eq!(report["column"]["depends_on_data"], serde_json::json!([]));
    // The casts are still listed, just not judged.
    let seat_map = "cast(o.seat_section as integer)";
    assert_eq!(
        uses(&report, "model.ticketing.int_seat_map"),
        vec![
            found("cast", seat_map, "safe", "sqlparser"),
            found("cast", seat_map, "safe", "sqlparser"),
        ]
    );
    assert_eq!(
        reason(&report, "model.ticketing.int_seat_map", 0),
        "new type unknown: not judged"
    );

    let run = lineage(&common);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("new type unknown"), "{}", run.stdout);
}

#[test]
fn bigquery_safe_cast_is_no_risk_and_cast_is() {
    let report = lineage_json(&[
        "--manifest",
        &fixture("bigquery_manifest.json"),
        "--from",
        "raw.courier_events",
        "--column",
        "zone_code",
        "--new-type",
        "STRING",
    ]);
    // SAFE_CAST gives null on a value that does not convert; CAST fails the model.
    assert_eq!(
        uses(&report, "model.couriers.stg_deliveries"),
        vec![
            found(
                "cast",
                "safe_cast(d.zone_code as int64)",
                "safe",
                "sqlparser"
            ),
            found(
                "cast",
                "cast(zone_code as int64)",
                "depends_on_data",
                "sqlparser"
            ),
        ]
    );
    assert_eq!(
        risk_target(&report, "model.couriers.stg_deliveries", 1),
        "int64"
    );
    assert_eq!(report["summary"]["break_risks"], serde_json::json!([]));
    assert_eq!(
        report["column"]["depends_on_data"],
        serde_json::json!(["model.couriers.stg_deliveries"])
    );
}

#[test]
fn text_output_is_an_indented_tree_with_a_fan_out_cap() {
    let run = lineage(&[
        "--manifest",
        &fixture("cast_manifest.json"),
        "--notes",
        &fixture("ticketing_notes.toml"),
        "--from",
        "source.ticketing.app.orders",
        "--column",
        "seat_section",
        "--new-type",
        "varchar(12)",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "source.ticketing.app.orders (source) — 10 downstream"
    );
    assert!(lines.contains(&"  stg_orders (model, view) · ticketing-eng"));
    assert!(lines.contains(&"    int_seat_map (model, table) · seat-map-owner"));
    // Text cast to an integer depends on the data (this manifest names no warehouse).
    assert!(
        lines.contains(
            &"      ? DEPENDS ON THE DATA (integer) · cast `cast(o.seat_section as integer)` \
              — runs while every value converts to integer; the warehouse fails the model \
              on the first value that does not convert, e.g. 'A-3' [tokens]"
        ),
        "{}",
        run.stdout
    );
    assert!(
        lines.contains(&"      Hourly dbt build (see above)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  break risks: none\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("  depends on the data: model.ticketing.int_seat_map, "),
        "{}",
        run.stdout
    );

    // Fifteen children of one source: twelve shown, then "+3 more".
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<String> = (0..15)
        .map(|i| {
            format!(
                r#""model.p.m{i:02}": {{"resource_type": "model", "name": "m{i:02}",
                    "depends_on": {{"nodes": ["source.p.s.t"]}}}}"#
            )
        })
        .collect();
    let wide = format!(
        r#"{{"metadata": {{"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v11.json"}},
            "nodes": {{{}}}, "sources": {{"source.p.s.t": {{"resource_type": "source", "name": "t"}}}}}}"#,
        children.join(",")
    );
    let path = dir.path().join("wide.json");
    std::fs::write(&path, wide).unwrap();
    let run = lineage(&[
        "--manifest",
        path.to_str().unwrap(),
        "--from",
        "source.p.s.t",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("  m11 (model)\n  +3 more\n"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("m12 (model)"));
}

/// Writes `text` to a file in `dir` and returns its path.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Runs the command, expects exit 2, and returns stderr.
fn refused(args: &[&str]) -> String {
    let run = lineage(args);
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    run.stderr
}

#[test]
fn bad_manifests_exit_2_naming_file_and_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture("ticketing_snowflake_manifest.json")).unwrap();
    let from = ["--from", "source.ticketing.app.orders"];
    let with = |file: &str| {
        let mut args = vec!["--manifest", file];
        args.extend(from);
        refused(&args)
    };

    let empty = write(dir.path(), "empty.json", "");
    assert_eq!(
        with(&empty),
        format!("dataward: {empty}: $: the file is empty; expected a dbt manifest.json\n")
    );

    let truncated = write(dir.path(), "truncated.json", &good[..good.len() / 3]);
    let message = with(&truncated);
    assert!(
        message.starts_with(&format!(
            "dataward: {truncated}: $: not valid JSON at line "
        )),
        "{message}"
    );
    assert!(message.contains("(the file looks truncated)"), "{message}");

    let wrong = good.replacen(
        r#""nodes": ["model.ticketing.stg_orders", "seed.ticketing.seat_labels"]"#,
        r#""nodes": "model.ticketing.stg_orders""#,
        1,
    );
    assert_ne!(wrong, good);
    let wrong = write(dir.path(), "wrong.json", &wrong);
    assert_eq!(
        with(&wrong),
        format!(
            "dataward: {wrong}: $.nodes[\"model.ticketing.int_seat_map\"].depends_on.nodes: \
             expected an array of strings, found a string\n"
        )
    );

    let number_name = good.replacen(r#""name": "seat_numbers""#, r#""name": 7"#, 1);
    let number_name = write(dir.path(), "number_name.json", &number_name);
    assert_eq!(
        with(&number_name),
        format!(
            "dataward: {number_name}: $.nodes[\"model.ticketing.seat_numbers\"].name: \
             expected a string, found a number\n"
        )
    );

    let v1 = write(
        dir.path(),
        "v1.json",
        &good.replace("manifest/v12.json", "manifest/v1.json"),
    );
    let message = with(&v1);
    assert!(
        message.starts_with(&format!(
            "dataward: {v1}: $.metadata.dbt_schema_version: manifest schema v1 is too old"
        )),
        "{message}"
    );

    let missing = dir.path().join("nope.json").display().to_string();
    assert!(with(&missing).starts_with(&format!("dataward: {missing}: cannot read")));
}

#[test]
fn bad_catalogs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = fixture("ticketing_snowflake_manifest.json");
    let with = |catalog: &str| {
        refused(&[
            "--manifest",
            &manifest,
            "--catalog",
            catalog,
            "--from",
            "source.ticketing.app.orders",
        ])
    };
    let good = std::fs::read_to_string(fixture("ticketing_snowflake_catalog.json")).unwrap();
    let wrong = write(
        dir.path(),
        "catalog.json",
        &good.replacen(r#""type": "TEXT""#, r#""type": ["TEXT"]"#, 1),
    );
    assert_eq!(
        with(&wrong),
        format!(
            "dataward: {wrong}: $.nodes[\"model.ticketing.stg_orders\"].columns[\"SEAT_SECTION\"].type: \
             expected a string, found an array\n"
        )
    );
    let message = with(&manifest);
    assert!(
        message.contains("$.metadata.dbt_schema_version: expected a dbt catalog schema"),
        "{message}"
    );
    let truncated = write(dir.path(), "cut.json", &good[..40]);
    assert!(with(&truncated).contains("truncated"));
}

#[test]
fn bad_notes_exit_2_naming_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = fixture("ticketing_snowflake_manifest.json");
    let with = |notes: &str| {
        refused(&[
            "--manifest",
            &manifest,
            "--notes",
            notes,
            "--from",
            "source.ticketing.app.orders",
        ])
    };
    let cycle = write(
        dir.path(),
        "cycle.toml",
        "[[reader]]\nid = \"job.a\"\nkind = \"job\"\nreads = [\"int_seat_map\", \"sync.b\"]\n\n\
         [[reader]]\nid = \"sync.b\"\nkind = \"sync\"\nreads = [\"job.a\"]\n",
    );
    assert_eq!(
        with(&cycle),
        format!(
            "dataward: {cycle}: reader \"job.a\": reads itself through a cycle: \
             job.a reads sync.b reads job.a\n"
        )
    );
    let unknown = write(
        dir.path(),
        "unknown.toml",
        "[[reader]]\nid = \"dashboard.x\"\nkind = \"dashboard\"\nreads = [\"int_seat_mapp\"]\n",
    );
    assert_eq!(
        with(&unknown),
        format!(
            "dataward: {unknown}: reader \"dashboard.x\": reads \"int_seat_mapp\", which is no \
             unique_id, relation name, node name or reader id\n"
        )
    );
}

#[test]
fn from_must_name_one_node() {
    let Some(jaffle) = shared("jaffle_shop-manifest.json") else {
        return;
    };
    let message = refused(&["--manifest", &jaffle, "--from", "orders"]);
    assert_eq!(
        message,
        "dataward: --from: \"orders\" matches 3 nodes; use one of their unique_ids: \
         metric.jaffle_shop.orders, model.jaffle_shop.orders, semantic_model.jaffle_shop.orders\n"
    );
    let message = refused(&["--manifest", &jaffle, "--from", "order"]);
    assert!(message.contains("no node is called \"order\""), "{message}");
}

/// The downstream set by a plain breadth-first walk over `child_map`.
fn child_map_closure(manifest: &Value, start: &str) -> BTreeSet<String> {
    let child_map = manifest["child_map"].as_object().unwrap();
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([start.to_string()]);
    while let Some(id) = queue.pop_front() {
        for child in child_map
            .get(&id)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let child = child.as_str().unwrap().to_string();
            if child != start && seen.insert(child.clone()) {
                queue.push_back(child);
            }
        }
    }
    seen
}

/// For the first, middle and last source and model of a shared manifest, the CLI's
/// `nodes` is exactly the child_map closure.
fn check_cli_closures(file: &str) {
    let Some(path) = shared(file) else {
        return;
    };
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let pick = |ids: Vec<String>| -> Vec<String> {
        let mut ids = ids;
        ids.sort();
        let picked = [0, ids.len() / 2, ids.len() - 1].map(|i| ids[i].clone());
        picked.into_iter().collect()
    };
    let mut starts = pick(
        manifest["sources"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect(),
    );
    starts.extend(pick(
        manifest["nodes"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, n)| n["resource_type"] == "model")
            .map(|(id, _)| id.clone())
            .collect(),
    ));
    let mut nonempty = 0;
    for start in &starts {
        let report = lineage_json(&["--manifest", &path, "--from", start]);
        let actual: BTreeSet<String> = report["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["unique_id"].as_str().unwrap().to_string())
            .collect();
        let expected = child_map_closure(&manifest, start);
        assert_eq!(actual, expected, "{file}: downstream of {start}");
        assert_eq!(report["summary"]["total"], expected.len());
        nonempty += usize::from(!expected.is_empty());
    }
    assert!(
        nonempty >= 3,
        "{file}: the picks reach too little to mean anything"
    );
}

#[test]
fn json_nodes_match_child_map_on_hubspot() {
    check_cli_closures("hubspot-manifest.json");
}

#[test]
fn json_nodes_match_child_map_on_jaffle_shop() {
    check_cli_closures("jaffle_shop-manifest.json");
}

#[test]
fn json_nodes_match_child_map_on_ad_reporting_v7() {
    check_cli_closures("ad_reporting-v7-manifest.json");
}

#[test]
fn json_nodes_include_readers_from_the_notes() {
    let report = lineage_json(&[
        "--manifest",
        &fixture("cast_manifest.json"),
        "--notes",
        &fixture("ticketing_notes.toml"),
        "--from",
        "model.ticketing.int_seat_map",
    ]);
    let nodes: Vec<(&str, &str, u64)> = report["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["unique_id"].as_str().unwrap(),
                n["resource_type"].as_str().unwrap(),
                n["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        nodes,
        vec![
            ("job.hourly_dbt", "job", 1),
            ("sync.section_labels", "sync", 2)
        ]
    );
    let job = node(&report, "job.hourly_dbt");
    assert_eq!(
        job["parents"],
        serde_json::json!(["model.ticketing.int_seat_map"])
    );
    assert_eq!(job["owner"], "ticketing-owner");
    assert!(job.get("column").is_none(), "no --column, no findings");
}

/// A project on `adapter` where `payments.amount` is about to become text: one model
/// divides it, one casts it and compares it with zero, one sums it (raw Jinja only).
fn payments_manifest(dir: &Path, adapter: &str) -> String {
    let compiled = |sql: &str| {
        sql.replace(
            "{{ source('app', 'payments') }}",
            "\"db\".\"app\".\"payments\"",
        )
    };
    let model = |name: &str, sql: &str, with_compiled: bool| {
        let mut model = serde_json::json!({
            "resource_type": "model", "name": name, "package_name": "billing",
            "config": {"materialized": "view"},
            "raw_code": sql,
            "depends_on": {"nodes": ["source.billing.app.payments"]}
        });
        if with_compiled {
            model["compiled_code"] = Value::String(compiled(sql));
        }
        model
    };
    let manifest = serde_json::json!({
        "metadata": {
            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
            "adapter_type": adapter
        },
        "sources": {"source.billing.app.payments": {
            "resource_type": "source", "name": "payments", "source_name": "app",
            "package_name": "billing", "schema": "app", "identifier": "payments"
        }},
        "nodes": {
            "model.billing.payment_units": model(
                "payment_units",
                "select id, amount / 100 as units from {{ source('app', 'payments') }}",
                true,
            ),
            "model.billing.payment_ids": model(
                "payment_ids",
                "select cast(p.amount as integer) as amount_no\nfrom {{ source('app', 'payments') }} p\nwhere p.amount > 0",
                true,
            ),
            "model.billing.payment_totals": model(
                "payment_totals",
                "select sum(amount) as total from {{ source('app', 'payments') }}",
                false,
            ),
        }
    });
    write(
        dir,
        &format!("{adapter}_payments.json"),
        &manifest.to_string(),
    )
}

#[test]
fn arithmetic_on_a_column_that_becomes_text_breaks_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = payments_manifest(dir.path(), "postgres");
    let args = [
        "--manifest",
        manifest.as_str(),
        "--from",
        "source.billing.app.payments",
        "--column",
        "amount",
        "--new-type",
        "text",
    ];
    let report = lineage_json(&args);
    assert_eq!(
        uses(&report, "model.billing.payment_units"),
        vec![found("arithmetic", "amount / 100", "breaks", "sqlparser")]
    );
    assert_eq!(
        reason(&report, "model.billing.payment_units", 0),
        "PostgreSQL has no operator text / integer: the model fails on its next run"
    );
    // The cast depends on the data; the comparison with a number breaks.
    assert_eq!(
        uses(&report, "model.billing.payment_ids"),
        vec![
            found(
                "cast",
                "cast(p.amount as integer)",
                "depends_on_data",
                "sqlparser"
            ),
            found("comparison", "p.amount > 0", "breaks", "sqlparser"),
        ]
    );
    // Raw Jinja only: the token scan finds the aggregate.
    assert_eq!(
        uses(&report, "model.billing.payment_totals"),
        vec![found("function", "sum(amount)", "breaks", "tokens")]
    );
    assert_eq!(
        reason(&report, "model.billing.payment_totals", 0),
        "PostgreSQL has no function sum(text): the model fails on its next run"
    );
    assert_eq!(
        report["summary"]["break_risks"],
        serde_json::json!([
            "model.billing.payment_ids",
            "model.billing.payment_totals",
            "model.billing.payment_units"
        ])
    );
    assert_eq!(report["column"]["depends_on_data"], serde_json::json!([]));

    let run = lineage(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines.contains(
            &"    ! BREAKS · arithmetic `amount / 100` — PostgreSQL has no operator \
              text / integer: the model fails on its next run [sqlparser]"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "  break risks: model.billing.payment_ids, model.billing.payment_totals, \
             model.billing.payment_units\n"
        ),
        "{}",
        run.stdout
    );

    // To a wider number nothing is at risk.
    let mut wider = args.to_vec();
    wider[7] = "bigint";
    let report = lineage_json(&wider);
    assert_eq!(report["summary"]["break_risks"], serde_json::json!([]));
    assert_eq!(
        uses(&report, "model.billing.payment_units"),
        vec![found("arithmetic", "amount / 100", "safe", "sqlparser")]
    );
}

#[test]
fn snowflake_converts_text_for_arithmetic_and_bigquery_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let judge = |adapter: &str, new_type: &str| {
        let manifest = payments_manifest(dir.path(), adapter);
        lineage_json(&[
            "--manifest",
            &manifest,
            "--from",
            "source.billing.app.payments",
            "--column",
            "amount",
            "--new-type",
            new_type,
        ])
    };
    let snowflake = judge("snowflake", "VARCHAR");
    assert_eq!(
        uses(&snowflake, "model.billing.payment_units"),
        vec![found(
            "arithmetic",
            "amount / 100",
            "depends_on_data",
            "sqlparser"
        )]
    );
    assert_eq!(snowflake["summary"]["break_risks"], serde_json::json!([]));
    assert_eq!(
        snowflake["column"]["depends_on_data"],
        serde_json::json!([
            "model.billing.payment_ids",
            "model.billing.payment_totals",
            "model.billing.payment_units"
        ])
    );
    let bigquery = judge("bigquery", "STRING");
    assert_eq!(
        uses(&bigquery, "model.billing.payment_units"),
        vec![found("arithmetic", "amount / 100", "breaks", "sqlparser")]
    );
}
