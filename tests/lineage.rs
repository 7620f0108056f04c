//! Lineage against real dbt manifests (from `../shared`) and small fixtures we wrote.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use dataward::lineage::{ColumnChange, Lineage, LineageError, NodeKind, Risk, UseKind};
use serde_json::Value;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/lineage");

/// A real dbt artifact from `../shared/fixtures/dbt`, or `None` (with a line saying so)
/// when the folder is missing on this machine. CI sets DATAWARD_REQUIRE_ALL=1 so a
/// missing folder fails there instead of silently passing.
fn shared_manifest(name: &str) -> Option<PathBuf> {
    let shared = Path::new(SHARED);
    if !shared.is_dir() {
        if std::env::var("DATAWARD_REQUIRE_ALL").as_deref() == Ok("1") {
            panic!("{} is missing and DATAWARD_REQUIRE_ALL=1", shared.display());
        }
        println!("skipping: {} is missing", shared.display());
        return None;
    }
    Some(shared.join("fixtures/dbt").join(name))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

/// The reference answer, computed without any of our code: breadth-first over the
/// manifest's own child_map, giving each downstream unique_id its minimum depth.
fn child_map_closure(manifest: &Value, from: &str) -> BTreeMap<String, u32> {
    let child_map = manifest["child_map"].as_object().expect("child_map");
    let mut depths = BTreeMap::new();
    let mut queue = VecDeque::from([(from.to_string(), 0u32)]);
    while let Some((id, depth)) = queue.pop_front() {
        let children = child_map.get(&id).and_then(Value::as_array);
        for child in children.into_iter().flatten() {
            let child = child.as_str().expect("child ids are strings").to_string();
            if child != from && !depths.contains_key(&child) {
                depths.insert(child.clone(), depth + 1);
                queue.push_back((child, depth + 1));
            }
        }
    }
    depths
}

/// For every source and model of a manifest, our downstream set and depths equal the
/// child_map closure. Returns the kinds reached, so callers can check tests etc. are in.
fn check_closures(file: &str) -> Option<BTreeSet<NodeKind>> {
    let path = shared_manifest(file)?;
    let text = std::fs::read_to_string(&path).unwrap();
    let manifest: Value = serde_json::from_str(&text).unwrap();
    let lineage = Lineage::from_json(&text, file).unwrap();

    let mut starts: Vec<String> = manifest["sources"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    starts.extend(
        manifest["nodes"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, node)| node["resource_type"] == "model")
            .map(|(id, _)| id.clone()),
    );
    assert!(
        starts.len() > 5,
        "{file}: too few sources and models to mean anything"
    );

    let mut kinds_reached = BTreeSet::new();
    for start in &starts {
        let expected = child_map_closure(&manifest, start);
        let blast = lineage.blast_radius(lineage.resolve(start).unwrap(), None);
        let actual: BTreeMap<String, u32> = blast
            .nodes
            .iter()
            .map(|impact| (impact.unique_id.clone(), impact.depth))
            .collect();
        assert_eq!(actual, expected, "{file}: downstream of {start}");
        kinds_reached.extend(blast.nodes.iter().map(|impact| impact.kind));
    }
    Some(kinds_reached)
}

#[test]
fn hubspot_downstream_matches_child_map() {
    if let Some(kinds) = check_closures("hubspot-manifest.json") {
        assert!(kinds.contains(&NodeKind::Model) && kinds.contains(&NodeKind::Test));
    }
}

#[test]
fn jaffle_shop_downstream_matches_child_map() {
    if let Some(kinds) = check_closures("jaffle_shop-manifest.json") {
        for kind in [NodeKind::Test, NodeKind::Metric, NodeKind::SemanticModel] {
            assert!(kinds.contains(&kind), "{kind:?} not reached");
        }
    }
}

#[test]
fn ad_reporting_v7_downstream_matches_child_map() {
    if let Some(kinds) = check_closures("ad_reporting-v7-manifest.json") {
        assert!(kinds.contains(&NodeKind::Test) && kinds.contains(&NodeKind::Metric));
    }
}

#[test]
fn real_manifests_keep_node_fields() {
    let Some(path) = shared_manifest("hubspot-manifest.json") else {
        return;
    };
    let lineage = Lineage::load(&path, None).unwrap();
    let node = lineage.node(lineage.resolve("hubspot__daily_ticket_history").unwrap());
    assert_eq!(node.kind, NodeKind::Model);
    assert_eq!(node.materialized.as_deref(), Some("incremental"));
    assert_eq!(node.incremental_strategy.as_deref(), Some("delete+insert"));
    assert!(node
        .sql
        .as_deref()
        .is_some_and(|sql| sql.contains("select")));

    let Some(path) = shared_manifest("ad_reporting-v7-manifest.json") else {
        return;
    };
    let lineage = Lineage::load(&path, None).unwrap();
    let source = lineage.node(
        lineage
            .resolve("source.google_ads_source.google_ads.account_history")
            .unwrap(),
    );
    assert_eq!(source.kind, NodeKind::Source);
    assert!(source.relation_name.is_some());
}

#[test]
fn a_models_key_comes_from_its_unique_key_or_its_unique_test_on_real_manifests() {
    let Some(path) = shared_manifest("jaffle_shop-manifest.json") else {
        return;
    };
    let lineage = Lineage::load(&path, None).unwrap();
    let key = |name: &str| lineage.key_of(lineage.resolve(name).unwrap());
    // jaffle_shop declares its keys with `unique` tests.
    assert_eq!(key("model.jaffle_shop.orders").as_deref(), Some("order_id"));
    assert_eq!(
        key("model.jaffle_shop.stg_customers").as_deref(),
        Some("customer_id")
    );
    assert_eq!(key("model.jaffle_shop.metricflow_time_spine"), None);
    let Some(path) = shared_manifest("hubspot-manifest.json") else {
        return;
    };
    let lineage = Lineage::load(&path, None).unwrap();
    // hubspot's incremental models set `unique_key`.
    let node = lineage
        .resolve("model.hubspot.hubspot__daily_ticket_history")
        .unwrap();
    assert_eq!(lineage.key_of(node).as_deref(), Some("ticket_day_id"));
}

#[test]
fn resolution_on_real_manifests() {
    let Some(path) = shared_manifest("hubspot-manifest.json") else {
        return;
    };
    let lineage = Lineage::load(&path, None).unwrap();
    let id = "model.hubspot.hubspot__daily_ticket_history";
    let by_id = lineage.resolve(id).unwrap();
    for name in [
        "hubspot__daily_ticket_history",
        r#""postgres"."public_hubspot"."hubspot__daily_ticket_history""#,
        "POSTGRES.PUBLIC_HUBSPOT.HUBSPOT__DAILY_TICKET_HISTORY",
        "Public_Hubspot.Hubspot__Daily_Ticket_History",
        "`public_hubspot`.`hubspot__daily_ticket_history`",
    ] {
        assert_eq!(lineage.resolve(name).unwrap(), by_id, "{name}");
    }
    // Never a substring match.
    assert!(matches!(
        lineage.resolve("hubspot__daily_ticket"),
        Err(LineageError::NotFound { .. })
    ));

    let Some(path) = shared_manifest("jaffle_shop-manifest.json") else {
        return;
    };
    let lineage = Lineage::load(&path, None).unwrap();
    let error = lineage.resolve("orders").unwrap_err();
    assert_eq!(
        error,
        LineageError::Ambiguous {
            name: "orders".into(),
            candidates: vec![
                "metric.jaffle_shop.orders".into(),
                "model.jaffle_shop.orders".into(),
                "semantic_model.jaffle_shop.orders".into(),
            ],
        }
    );
    let message = error.to_string();
    assert!(message.contains("model.jaffle_shop.orders"), "{message}");
    // The relation name is not ambiguous: only the model is a table.
    let model = lineage.resolve("main.orders").unwrap();
    assert_eq!(lineage.node(model).unique_id, "model.jaffle_shop.orders");
}

fn seat_section() -> ColumnChange {
    ColumnChange {
        column: "seat_section".into(),
        new_type: "VARCHAR(12)".into(),
    }
}

#[test]
fn column_findings_on_the_cast_manifest() {
    let lineage = Lineage::load(&fixture("cast_manifest.json"), None).unwrap();
    let from = lineage.resolve("TICKETING.ORDERS").unwrap();
    let blast = lineage.blast_radius(from, Some(&seat_section()));

    let finding = |id: &str| {
        blast
            .impact(id)
            .unwrap_or_else(|| panic!("{id} not downstream"))
            .column
            .clone()
            .unwrap_or_else(|| panic!("{id} has no column finding"))
    };

    // This manifest names no warehouse: a text value cast with CAST or `::` converts or
    // fails the model, so those casts depend on the data; try_cast gives null instead.
    let seat_map = finding("model.ticketing.int_seat_map");
    assert!(seat_map.reads);
    assert_eq!(seat_map.uses.len(), 2, "the select and the join both cast");
    for found in &seat_map.uses {
        assert_eq!(found.kind, UseKind::Cast);
        assert_eq!(found.expression, "cast(o.seat_section as integer)");
        assert_eq!(found.column, "o.seat_section");
        assert_eq!(
            found.risk,
            Risk::DependsOnData {
                target_type: "integer".into()
            }
        );
        assert_eq!(found.method, "tokens");
    }

    let numbers = finding("model.ticketing.seat_numbers");
    assert_eq!(numbers.uses.len(), 1);
    assert_eq!(numbers.uses[0].kind, UseKind::Cast);
    assert_eq!(numbers.uses[0].expression, "seat_section::int");
    assert_eq!(
        numbers.uses[0].risk,
        Risk::DependsOnData {
            target_type: "int".into()
        }
    );

    let safe = finding("model.ticketing.seat_sections_safe");
    assert_eq!(safe.uses.len(), 1);
    assert_eq!(safe.uses[0].kind, UseKind::Cast);
    assert_eq!(safe.uses[0].expression, "try_cast(seat_section as int)");
    assert_eq!(
        safe.uses[0].risk,
        Risk::Safe,
        "try_cast returns null instead of failing"
    );

    let pacing = finding("model.ticketing.fct_sales_pacing");
    assert!(pacing.reads);
    assert!(pacing.uses.is_empty());

    // Only models and snapshots get a finding.
    assert!(blast
        .impact("exposure.ticketing.box_office_report")
        .unwrap()
        .column
        .is_none());

    assert!(blast.summary.break_risks.is_empty());
    assert_eq!(
        blast.summary.depends_on_data,
        vec![
            "model.ticketing.int_seat_map",
            "model.ticketing.seat_numbers"
        ]
    );
}

#[test]
fn blast_radius_includes_tests_exposures_and_readers() {
    let lineage = Lineage::load(
        &fixture("cast_manifest.json"),
        Some(&fixture("ticketing_notes.toml")),
    )
    .unwrap();
    let from = lineage.resolve("source.ticketing.app.orders").unwrap();
    let blast = lineage.blast_radius(from, None);
    let rows: Vec<(u32, &str)> = blast
        .nodes
        .iter()
        .map(|impact| (impact.depth, impact.unique_id.as_str()))
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, "model.ticketing.stg_orders"),
            (2, "model.ticketing.fct_sales_pacing"),
            (2, "model.ticketing.int_seat_map"),
            (2, "model.ticketing.seat_numbers"),
            (2, "model.ticketing.seat_sections_safe"),
            (2, "test.ticketing.not_null_stg_orders_seat_section.ab12"),
            (3, "dashboard.onsale_pacing"),
            (3, "exposure.ticketing.box_office_report"),
            (3, "job.hourly_dbt"),
            (4, "sync.section_labels"),
        ]
    );
    let job = blast.impact("job.hourly_dbt").unwrap();
    assert_eq!(
        job.parents,
        vec![
            "model.ticketing.int_seat_map",
            "model.ticketing.seat_numbers"
        ]
    );
    assert_eq!(job.kind.as_str(), "job");
    let job_node = lineage.node(lineage.resolve("job.hourly_dbt").unwrap());
    assert_eq!(job_node.schedule.as_deref(), Some("15 * * * *"));

    // Owners: the manifest's own first, then the first matching rule.
    let owner = |id: &str| blast.impact(id).unwrap().owner.clone();
    assert_eq!(
        owner("model.ticketing.stg_orders").as_deref(),
        Some("ticketing-eng")
    );
    assert_eq!(
        owner("model.ticketing.int_seat_map").as_deref(),
        Some("seat-map-owner")
    );
    assert_eq!(
        owner("model.ticketing.seat_numbers").as_deref(),
        Some("ticketing-owner")
    );
    assert_eq!(
        owner("dashboard.onsale_pacing").as_deref(),
        Some("analytics-owner")
    );
    assert_eq!(
        owner("exposure.ticketing.box_office_report").as_deref(),
        Some("Box office")
    );
    assert_eq!(owner("job.hourly_dbt").as_deref(), Some("ticketing-owner"));

    assert_eq!(blast.summary.total, 10);
    assert_eq!(blast.summary.by_kind["model"], 5);
    assert_eq!(blast.summary.by_kind["dashboard"], 1);
    assert_eq!(blast.summary.by_materialization["table"], 2);
    assert!(blast
        .summary
        .owners
        .contains(&"analytics-owner".to_string()));

    // The tree shows the job under both models it reads, each with the sync below it.
    let tree = blast.to_tree(10);
    let job_rows: Vec<usize> = tree
        .iter()
        .filter(|row| row.unique_id == "job.hourly_dbt")
        .map(|row| row.depth)
        .collect();
    assert_eq!(job_rows, vec![3, 3]);
    assert_eq!(
        tree.iter()
            .filter(|r| r.unique_id == "sync.section_labels")
            .count(),
        2
    );
    let capped = blast.to_tree(2);
    let more = capped.iter().find(|row| row.is_more).unwrap();
    assert_eq!((more.depth, more.label.as_str()), (2, "+3 more"));

    // The result is plain serde data for the engine.
    let json = serde_json::to_value(&blast).unwrap();
    assert_eq!(json["nodes"][0]["kind"], "model");
}

fn manifest_error(text: &str) -> String {
    Lineage::from_json(text, "bad-manifest.json")
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_manifests_are_named_errors() {
    let good = std::fs::read_to_string(fixture("cast_manifest.json")).unwrap();

    let truncated = manifest_error(&good[..good.len() / 2]);
    assert!(
        truncated.starts_with("bad-manifest.json: $: not valid JSON"),
        "{truncated}"
    );
    assert!(truncated.contains("truncated"), "{truncated}");

    // The first textual occurrence is in seat_numbers.
    let wrong_type = good.replacen(
        r#""nodes": ["model.ticketing.stg_orders"]"#,
        r#""nodes": "model.ticketing.stg_orders""#,
        1,
    );
    assert_ne!(wrong_type, good);
    assert_eq!(
        manifest_error(&wrong_type),
        r#"bad-manifest.json: $.nodes["model.ticketing.seat_numbers"].depends_on.nodes: expected an array of strings, found a string"#
    );

    let v1 = good.replace("manifest/v12.json", "manifest/v1.json");
    let message = manifest_error(&v1);
    assert!(
        message.contains("$.metadata.dbt_schema_version"),
        "{message}"
    );
    assert!(message.contains("v1 is too old"), "{message}");

    assert_eq!(
        manifest_error(""),
        "bad-manifest.json: $: the file is empty; expected a dbt manifest.json"
    );

    let not_manifest = manifest_error(r#"{"hello": "world"}"#);
    assert!(
        not_manifest.contains("$.metadata: missing"),
        "{not_manifest}"
    );

    let error = Lineage::load(Path::new("/nonexistent/manifest.json"), None).unwrap_err();
    assert!(error
        .to_string()
        .starts_with("/nonexistent/manifest.json: cannot read"));
}

fn notes_error(text: &str) -> String {
    Lineage::load(&fixture("cast_manifest.json"), None)
        .unwrap()
        .with_notes_str(text, "notes.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn notes_with_a_cycle_are_refused() {
    let message = notes_error(
        r#"
[[reader]]
id = "job.a"
kind = "job"
reads = ["model.ticketing.fct_sales_pacing", "sync.c"]

[[reader]]
id = "notebook.b"
kind = "notebook"
reads = ["job.a"]

[[reader]]
id = "sync.c"
kind = "sync"
reads = ["notebook.b"]
"#,
    );
    assert!(
        message.starts_with("notes.toml: reader \"job.a\": reads itself"),
        "{message}"
    );
    assert!(
        message.contains("job.a reads sync.c reads notebook.b reads job.a"),
        "{message}"
    );

    let itself = notes_error("[[reader]]\nid = \"job.x\"\nkind = \"job\"\nreads = [\"job.x\"]\n");
    assert!(
        itself.contains("reads itself through a cycle: job.x reads job.x"),
        "{itself}"
    );
}

#[test]
fn notes_naming_unknown_or_ambiguous_nodes_are_refused() {
    let message = notes_error(
        "[[reader]]\nid = \"dashboard.pacing\"\nkind = \"dashboard\"\nreads = [\"fct_sales_pace\"]\n",
    );
    assert_eq!(
        message,
        "notes.toml: reader \"dashboard.pacing\": reads \"fct_sales_pace\", which is no unique_id, \
         relation name, node name or reader id"
    );

    let clash = notes_error(
        "[[reader]]\nid = \"model.ticketing.stg_orders\"\nkind = \"job\"\nreads = []\n",
    );
    assert!(clash.contains("already a node"), "{clash}");

    let bad_toml = notes_error("[[reader]]\nid = \"x\"\nkind = \"dashboard\"\n");
    assert!(bad_toml.starts_with("notes.toml: TOML: "), "{bad_toml}");
    assert!(bad_toml.contains("reads"), "{bad_toml}");
}

#[test]
fn notes_with_an_ambiguous_name_list_the_candidates() {
    let text = r#"{
      "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v10.json"},
      "nodes": {
        "model.a.orders": {"resource_type": "model", "name": "orders"},
        "model.b.orders": {"resource_type": "model", "name": "orders"}
      }
    }"#;
    let message = Lineage::from_json(text, "two.json")
        .unwrap()
        .with_notes_str(
            "[[reader]]\nid = \"sync.x\"\nkind = \"sync\"\nreads = [\"orders\"]\n",
            "notes.toml",
        )
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("matches several nodes: model.a.orders, model.b.orders"),
        "{message}"
    );
}

#[test]
fn hubspot_catalog_attaches_column_types() {
    let Some(manifest) = shared_manifest("hubspot-manifest.json") else {
        return;
    };
    let catalog = manifest.with_file_name("hubspot-catalog.json");
    let lineage = Lineage::load(&manifest, None)
        .unwrap()
        .with_catalog(&catalog)
        .unwrap();
    let company = lineage.node(lineage.resolve("source.hubspot.hubspot.company").unwrap());
    assert_eq!(company.columns[0].name, "id", "columns in table order");
    assert_eq!(company.column_type("ID"), Some("bigint"));
    assert_eq!(
        company.column_type("_fivetran_synced"),
        Some("timestamp without time zone")
    );
    let with_types = lineage
        .graph()
        .node_weights()
        .filter(|node| !node.columns.is_empty())
        .count();
    assert!(with_types > 200, "only {with_types} nodes got types");
}

// ---------------------------------------------------------------------------------
// dbt v2 (the Fusion engine, dbt Core v2): tests/fixtures/dbt_v2, whose README says
// which file a real dbt wrote and which was written by hand from dbt's schema.

fn dbt_v2(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dbt_v2")
        .join(name)
}

#[test]
fn dbt_v2_manifest_and_run_results_load_and_every_result_names_a_node_in_lineage() {
    use dataward::lineage::run_results::{self, NodeStatus};
    let lineage = Lineage::load(&dbt_v2("manifest.json"), None).unwrap();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dbt_v2("manifest.json")).unwrap()).unwrap();
    for from in ["source.shop.raw.payments", "seed.shop.raw_orders"] {
        let expected = child_map_closure(&manifest, from);
        let start = lineage.resolve(from).unwrap();
        let found: BTreeSet<String> = lineage
            .graph()
            .node_indices()
            .filter(|&n| n != start && lineage.is_downstream(start, n))
            .map(|n| lineage.node(n).unique_id.clone())
            .collect();
        assert_eq!(
            found,
            expected.keys().cloned().collect::<BTreeSet<_>>(),
            "{from}"
        );
    }

    let run = run_results::load(&dbt_v2("run_results.json")).unwrap();
    assert_eq!(
        run.generated_at.map(|at| at.to_string()).as_deref(),
        Some("2026-12-02T13:48:02Z")
    );
    let mut statuses = BTreeMap::new();
    for result in &run.results {
        assert!(
            lineage.resolve(&result.unique_id).is_ok(),
            "{}",
            result.unique_id
        );
        *statuses
            .entry(result.status.as_str().to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(
        statuses,
        BTreeMap::from([
            ("error".to_string(), 1),
            ("fail".to_string(), 1),
            ("pass".to_string(), 2),
            ("skipped".to_string(), 4),
            ("success".to_string(), 2),
        ])
    );
    let failed = run.get("model.shop.stg_payments").unwrap();
    assert_eq!(failed.status, NodeStatus::Error);
    assert!(failed.message.as_deref().unwrap().contains(
        "No function matches the given name and argument types '/(VARCHAR, INTEGER_LITERAL)'"
    ));
    let skipped = run.get("model.shop.orders").unwrap();
    assert_eq!(
        skipped.message.as_deref(),
        Some("Skipped due to upstream failure")
    );
}

#[test]
fn dbt_v2_run_statuses_are_read_in_any_case_and_reused_is_not_a_failure() {
    use dataward::lineage::run_results::{self, NodeStatus};
    let run = run_results::load(&dbt_v2("run_results_by_hand.json")).unwrap();
    let read: Vec<(&str, &str, bool)> = run
        .results
        .iter()
        .map(|r| {
            (
                r.unique_id.as_str(),
                r.status.as_str(),
                r.status.is_failure(),
            )
        })
        .collect();
    assert_eq!(
        read,
        vec![
            ("seed.shop.raw_orders", "reused", false),
            ("model.shop.stg_orders", "reused", false),
            ("model.shop.stg_payments", "error", true),
            ("model.shop.orders", "skipped", false),
            ("model.shop.customers", "success", false),
            (
                "test.shop.not_null_stg_orders_amount.2546645448",
                "fail",
                true
            ),
            (
                "test.shop.unique_stg_orders_order_id.e3b841c71a",
                "pass",
                false
            ),
            (
                "test.shop.not_null_stg_orders_order_id.81cfe2fe64",
                "warn",
                false
            ),
            (
                "test.shop.unique_customers_customer_id.c5af1ff4b1",
                "runtime error",
                true
            ),
        ]
    );
    // Every status is one dbt documents: none is kept as an unknown word.
    assert!(
        run.results
            .iter()
            .all(|r| !matches!(r.status, NodeStatus::Other(_))),
        "{:?}",
        run.results
    );
    // Results without message, failures, compiled or timing.
    let reused = run.get("model.shop.stg_orders").unwrap();
    assert_eq!(
        (reused.message.as_deref(), reused.completed_at),
        (None, None)
    );
    let failed_test = run
        .get("test.shop.not_null_stg_orders_amount.2546645448")
        .unwrap();
    assert_eq!(failed_test.message, None);
    assert_eq!(
        run.get("model.shop.stg_payments")
            .unwrap()
            .completed_at
            .map(|at| at.to_string())
            .as_deref(),
        Some("2026-12-02T14:04:59Z")
    );
}
