//! Migration waves on a real PostgreSQL server started by the test: a wave whose new
//! side lost a column fails parity on that table, its gate stays closed and its
//! sign-off is refused; after the fix parity holds, the owner signs off on the parity's
//! hash and the gate opens; a later change to either side changes the hash and closes
//! the gate again until the owner signs off anew.
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1.

mod any_user;
#[path = "support/binary.rs"]
mod binary;
#[path = "support/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use binary::text;
use chrono::{NaiveDateTime, TimeDelta};
use dataward::approve::{Actor, LoginUid};
use dataward::clock::Timestamp;
use dataward::config::Config;
use dataward::engine::api::{Command, Outcome, Question};
use dataward::engine::Engine;
use dataward::migration::parity::{read_wave, WaveParity};
use dataward::migration::{gate, may_sign_off, Gate, SignOff};
use dataward::warehouse::{self, Warehouse, WarehouseError};
use pg::{start_or_skip, PgServer};

/// Each test's own variable: the tests run at once, each with its own server.
fn plan(url_env: &str) -> String {
    PLAN.replace("DW_MIGRATION_TEST_PG_URL", url_env)
}

pub const PLAN: &str = r#"
[warehouse.pg]
kind = "postgres"
url_env = "DW_MIGRATION_TEST_PG_URL"

[people.alice]
name = "Alice"
roles = ["sales-owner"]

[[domain]]
name = "sales"
covers = ["legacy.*", "core.*"]
owners = ["sales-owner"]

[[migration]]
name = "orders-to-core"
domain = "sales"
warehouse = "pg"
parity_every = "1s"

[[migration.waves]]
name = "first"
tables = [
  { old = "legacy.orders", new = "core.orders", day_column = "ordered_at" },
  { old = "legacy.refunds", new = "core.refunds" },
]
"#;

/// The old tables with rows over three days, and their copies under the new names,
/// the orders' copy made without its `note` column.
pub fn estate(pg: &PgServer) {
    pg.execute(
        "CREATE SCHEMA legacy;
         CREATE TABLE legacy.orders (id int, amount numeric(10,2), note text,
                                     ordered_at timestamptz);
         INSERT INTO legacy.orders
           SELECT i, i * 1.5, CASE WHEN i % 3 = 0 THEN NULL ELSE 'n' || i END,
                  '2026-03-01T00:00:00Z'::timestamptz + (i || ' hours')::interval
           FROM generate_series(1, 60) AS i;
         CREATE TABLE legacy.refunds (id int, order_id int);
         INSERT INTO legacy.refunds SELECT i, i * 2 FROM generate_series(1, 10) AS i;
         CREATE SCHEMA core;
         CREATE TABLE core.orders AS SELECT id, amount, ordered_at FROM legacy.orders;
         CREATE TABLE core.refunds AS SELECT * FROM legacy.refunds;",
    );
}

fn read(config: &Config) -> WaveParity {
    let migration = &config.migration[0];
    let mut open = |name: &str| -> Result<Box<dyn Warehouse + Sync>, WarehouseError> {
        warehouse::open(config, name).map_err(|e| WarehouseError::Query(format!("{e:#}")))
    };
    read_wave(migration, &migration.waves[0], &mut open).unwrap()
}

fn closed(gate: Gate) -> Vec<String> {
    match gate {
        Gate::Closed { why } => why,
        Gate::Open { signed_by } => panic!("open, signed by {signed_by}"),
    }
}

#[test]
fn a_wave_with_a_dropped_column_stays_closed_until_fixed_and_signed_off_on_its_parity() {
    let Some(pg) = start_or_skip("migration waves") else {
        return;
    };
    estate(&pg);
    std::env::set_var("DW_MIGRATION_TEST_PARITY_URL", &pg.url);
    let config = Config::parse(
        &plan("DW_MIGRATION_TEST_PARITY_URL"),
        std::path::Path::new("dataward.toml"),
    )
    .unwrap();

    // The orders lost a column on the new side: that table fails, the refunds hold.
    let failing = read(&config);
    assert!(!failing.holds());
    assert_eq!(
        failing.failures(),
        vec!["legacy.orders → core.orders: column note is dropped on the new side".to_string()]
    );
    assert!(failing.tables[1].differences.is_empty());
    assert_eq!(failing.tables[0].old.rows, 60);
    assert_eq!(failing.tables[0].old.nulls, vec![0, 0, 20, 0]);
    assert_eq!(
        failing.tables[0].old.days.len(),
        3,
        "{:?}",
        failing.tables[0].old.days
    );
    let why = closed(gate(Some(&failing), None));
    assert!(why[0].contains("column note is dropped"), "{why:?}");
    let refused = may_sign_off(Some(&failing), &failing.hash).unwrap_err();
    assert!(
        refused.contains("fails, so it cannot be signed off"),
        "{refused}"
    );

    // Fixed: the new side gets the column and its values back.
    pg.execute(
        "ALTER TABLE core.orders ADD COLUMN note text;
         UPDATE core.orders n SET note = o.note FROM legacy.orders o WHERE o.id = n.id;",
    );
    let moved = read(&config);
    // The column came back at the end: same figures, another order of columns.
    assert_eq!(
        moved.failures(),
        vec!["legacy.orders → core.orders: the columns are in another order".to_string()]
    );
    pg.execute(
        "DROP TABLE core.orders;
         CREATE TABLE core.orders AS SELECT * FROM legacy.orders;",
    );
    let holding = read(&config);
    assert!(holding.holds(), "{:?}", holding.failures());
    assert_ne!(holding.hash, failing.hash);

    // A sign-off on the failing reading's hash, or on a shortened hash, is refused.
    let refused = may_sign_off(Some(&holding), &failing.hash).unwrap_err();
    assert!(refused.contains("changed"), "{refused}");
    let refused = may_sign_off(Some(&holding), &holding.hash[..12]).unwrap_err();
    assert!(refused.contains("full content hash"), "{refused}");
    may_sign_off(Some(&holding), &holding.hash).unwrap();
    let signed = SignOff {
        by: "alice".into(),
        parity_hash: holding.hash.clone(),
        at: Timestamp::parse("2026-03-04T09:00:00Z").unwrap(),
    };
    assert!(closed(gate(Some(&holding), None))
        .iter()
        .any(|w| w.contains("no owner has signed off")));
    assert_eq!(
        gate(Some(&holding), Some(&signed)),
        Gate::Open {
            signed_by: "alice".into()
        }
    );

    // A row changed on the old side after the sign-off: another reading, another hash,
    // and the sign-off no longer opens the gate.
    pg.execute("UPDATE legacy.orders SET amount = amount + 1 WHERE id = 7;");
    let drifted = read(&config);
    assert_eq!(
        drifted.failures(),
        vec!["legacy.orders → core.orders: day 2026-03-01: the rows' hashes differ".to_string()]
    );
    let why = closed(gate(Some(&drifted), Some(&signed)));
    assert!(why.iter().any(|w| w.contains("sign off again")), "{why:?}");
}

/// The engine of the jaffle_shop migration as the repoint tests configure it: the shop
/// domain owned by Alice (Bob owns nothing), the manifest and dbt project given, one
/// wave (`wave` is its TOML body), and a first tick at a fixed time.
fn jaffle_engine(
    dir: &Path,
    manifest: &Path,
    project: &Path,
    url_env: &str,
    wave: &str,
) -> (Engine, Actor, Actor) {
    let path = dir.join("dataward.toml");
    let config = format!(
        r#"
[warehouse.pg]
kind = "postgres"
url_env = "{url_env}"

[lineage]
manifest = "{}"
project_dir = "{}"

[people.alice]
name = "Alice"
roles = ["shop-owner"]

[people.bob]
name = "Bob"
roles = []

[[domain]]
name = "shop"
covers = ["raw.*", "core.*"]
owners = ["shop-owner"]

[[migration]]
name = "jaffle"
domain = "shop"
warehouse = "pg"

[[migration.waves]]
{wave}
"#,
        manifest.display(),
        project.display()
    );
    std::fs::write(&path, &config).unwrap();
    let state = dataward::store::open(&dir.join("dataward.db")).unwrap();
    let (alice, bob) = (person("alice", 5002), person("bob", 5003));
    let mut engine =
        Engine::new(Config::parse(&config, &path).unwrap(), state, None, &alice).unwrap();
    let now: NaiveDateTime = "2026-03-04T09:00:00".parse().unwrap();
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    engine.tick(now).unwrap();
    (engine, alice, bob)
}

fn person(user: &str, uid: u32) -> Actor {
    Actor {
        uid,
        loginuid: LoginUid::Unset,
        user: Some(user.to_string()),
        claims: BTreeMap::new(),
        stand_in: None,
    }
}

fn refused(outcome: Outcome) -> String {
    match outcome {
        Outcome::Refused { reason } => reason.message,
        Outcome::Accepted { events, .. } => panic!("accepted: {events:?}"),
    }
}

/// The engine's answer to `dataward migration`: (parity hash, gate) of the one wave.
fn wave(engine: &Engine) -> (String, serde_json::Value) {
    let answer = engine
        .answer_question(&Question::Migration {
            name: Some("orders-to-core".into()),
        })
        .unwrap();
    let wave = &answer["waves"][0];
    assert_eq!(wave["id"], "MIG-orders-to-core-first");
    let hash = wave["parity"]["hash"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (hash, wave["gate"].clone())
}

#[test]
fn the_engine_reads_parity_off_its_thread_and_only_the_owner_signs_off_on_its_hash() {
    let Some(pg) = start_or_skip("migration waves on the engine") else {
        return;
    };
    estate(&pg);
    std::env::set_var("DW_MIGRATION_TEST_ENGINE_URL", &pg.url);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dataward.toml");
    let plan = format!(
        "{}\n[people.bob]\nname = \"Bob\"\nroles = []\n",
        plan("DW_MIGRATION_TEST_ENGINE_URL")
    );
    std::fs::write(&path, &plan).unwrap();
    let open = || {
        let config = Config::parse(&plan, &path).unwrap();
        let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
        Engine::new(config, state, None, &person("alice", 5002)).unwrap()
    };
    let (alice, bob) = (person("alice", 5002), person("bob", 5003));
    let mut engine = open();
    let mut now: NaiveDateTime = "2026-03-04T09:00:00".parse().unwrap();
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    engine.tick(now).unwrap();

    let sign = |hash: &str| Command::Approve {
        proposal: "MIG-orders-to-core-first".into(),
        content_hash: hash.into(),
        reason: "counts and days match".into(),
    };
    let (failing, gate) = wave(&engine);
    assert_eq!(failing.len(), 64, "{gate}");
    let why = gate["closed"]["why"].to_string();
    assert!(
        why.contains("column note is dropped on the new side"),
        "{why}"
    );
    let why = refused(engine.request(sign(&failing), &alice));
    assert!(why.contains("fails, so it cannot be signed off"), "{why}");

    pg.execute(
        "DROP TABLE core.orders;
         CREATE TABLE core.orders AS SELECT * FROM legacy.orders;",
    );
    now += TimeDelta::minutes(1);
    engine.tick(now).unwrap();
    let (holding, gate) = wave(&engine);
    assert_ne!(holding, failing);
    assert_eq!(
        gate["closed"]["why"][0], "no owner has signed off",
        "{gate}"
    );
    let why = refused(engine.request(sign(&failing), &alice));
    assert!(why.contains("changed"), "{why}");
    let why = refused(engine.request(sign(&holding), &bob));
    assert!(why.contains("holds none of the roles"), "{why}");
    match engine.request(sign(&holding), &alice) {
        Outcome::Accepted { .. } => {}
        Outcome::Refused { reason } => panic!("refused: {}", reason.message),
    }
    assert_eq!(wave(&engine).1["open"]["signed_by"], "alice (uid 5002)");

    // The sign-off outlives a restart, and the chain holds it and verifies.
    drop(engine);
    let mut engine = open();
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    now += TimeDelta::minutes(1);
    engine.tick(now).unwrap();
    let (_, gate) = wave(&engine);
    assert!(gate.get("open").is_some(), "{gate}");
    let verified = engine
        .answer_question(&Question::Verify {
            saved_receipt: None,
        })
        .unwrap();
    assert_eq!(verified["report"]["ok"], true, "{verified}");
    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let records = dataward::chain::records(&state).unwrap();
    let signed = records
        .iter()
        .find(|r| r.kind == "migration_sign_off")
        .expect("the sign-off is on the chain");
    let payload: serde_json::Value = serde_json::from_str(&signed.payload).unwrap();
    assert_eq!(payload["parity_hash"], holding.as_str());

    // A row changed after the sign-off: the gate closes, recorded once.
    pg.execute("DELETE FROM core.refunds WHERE id = 3;");
    now += TimeDelta::minutes(1);
    engine.tick(now).unwrap();
    let (_, gate) = wave(&engine);
    let why = gate["closed"]["why"].to_string();
    assert!(why.contains("rows: 10 old, 9 new"), "{gate}");
    assert!(why.contains("sign off again"), "{gate}");
}

#[test]
fn through_serve_dataward_migration_shows_the_gate_and_the_owner_signs_off_from_the_cli() {
    if !any_user::with_team("migration waves through serve") {
        return;
    }
    let Some(pg) = start_or_skip("migration waves through serve") else {
        return;
    };
    estate(&pg);
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("team.toml");
    let team = plan("DW_MIGRATION_TEST_SERVE_URL").replace("[people.alice]", "[people.dw-alice]")
        + "\n[people.dw-obs]\nname = \"Obs\"\nroles = []\n\n[serve]\ngroup = \"dw-team\"\n";
    std::fs::write(&config, team).unwrap();
    let data = dir.path().join("data");
    let _engine = binary::Engine(
        Process::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .env("DW_MIGRATION_TEST_SERVE_URL", &pg.url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let run = |user: &str, args: &[&str]| any_user::as_user(user, args, &data);
    // Asked until the engine serves and has read both sides of every table.
    let until = |wanted: &str| {
        let started = Instant::now();
        loop {
            let out = run("dw-obs", &["migration", "orders-to-core"]);
            let said = text(&out);
            if said.contains(wanted) {
                return (out, said);
            }
            assert!(started.elapsed() < Duration::from_secs(90), "{said}");
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    let (out, said) = until("parity hash");
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("MIG-orders-to-core-first  gate closed"),
        "{said}"
    );
    assert!(
        said.contains("differs: column note is dropped on the new side"),
        "{said}"
    );
    let hash = |said: &str| {
        said.split("parity hash ")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap()
            .to_string()
    };
    let out = run(
        "dw-alice",
        &[
            "approve",
            "MIG-orders-to-core-first",
            "--hash",
            &hash(&said),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("cannot be signed off"),
        "{}",
        text(&out)
    );

    pg.execute(
        "DROP TABLE core.orders;
         CREATE TABLE core.orders AS SELECT * FROM legacy.orders;",
    );
    // Parity holds: the only reason left is the sign-off, and the line that gives it.
    let (_, said) = until("sign off: dataward approve MIG-orders-to-core-first --hash");
    assert!(!said.contains("differs:"), "{said}");
    let out = run(
        "dw-obs",
        &[
            "approve",
            "MIG-orders-to-core-first",
            "--hash",
            &hash(&said),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = run(
        "dw-alice",
        &[
            "approve",
            "MIG-orders-to-core-first",
            "--hash",
            &hash(&said),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let (out, said) = until("gate open");
    assert!(out.status.success(), "{said}");
    assert!(said.contains("signed off by dw-alice"), "{said}");
    let out = run("dw-obs", &["migration", "no-such-plan"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("no [[migration]] is named"),
        "{}",
        text(&out)
    );
}

/// The real jaffle_shop manifest in ../shared, or why the test cannot run.
fn jaffle_or_skip(test: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/dbt/jaffle_shop-manifest.json");
    if path.is_file() {
        return Some(path);
    }
    let message = format!("{test}: skipped: needs {} (../shared)", path.display());
    if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    None
}

#[test]
fn the_readers_of_an_old_name_in_a_real_manifest_get_repoints_the_owner_approves_and_rolls_back() {
    let test = "repoints from a real manifest";
    let Some(manifest) = jaffle_or_skip(test) else {
        return;
    };
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    // jaffle_shop's source ecom.raw_orders is raw.raw_orders; it moves to core.orders,
    // a name dbt does not know yet. The new side keeps its amounts as bigint where the
    // old has integer, and its prices as numeric(12,4) where the old has numeric(10,2):
    // the same values, told apart by type names only.
    pg.execute(
        "CREATE SCHEMA raw;
         CREATE TABLE raw.raw_orders (id int, store_id int, amount int, price numeric(10,2),
                                      ordered_at timestamptz);
         INSERT INTO raw.raw_orders
           SELECT i, i % 4, i * 7, i * 1.25,
                  '2026-03-01T00:00:00Z'::timestamptz + (i || ' hours')::interval
           FROM generate_series(1, 50) AS i;
         CREATE SCHEMA core;
         CREATE TABLE core.orders (id int, store_id int, amount bigint, price numeric(12,4),
                                   ordered_at timestamptz);
         INSERT INTO core.orders SELECT * FROM raw.raw_orders;",
    );
    std::env::set_var("DW_MIGRATION_TEST_REPOINT_URL", &pg.url);
    let dir = tempfile::tempdir().unwrap();
    // The dbt project's file as the manifest read it.
    let parsed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let stg_orders = parsed["nodes"]["model.jaffle_shop.stg_orders"]["raw_code"]
        .as_str()
        .unwrap()
        .to_string();
    let project = dir.path().join("dbt");
    let file = project.join("models/staging/stg_orders.sql");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &stg_orders).unwrap();
    let (mut engine, alice, bob) = jaffle_engine(
        dir.path(),
        &manifest,
        &project,
        "DW_MIGRATION_TEST_REPOINT_URL",
        r#"name = "orders"
tables = [{ old = "raw.raw_orders", new = "core.orders", day_column = "ordered_at" }]"#,
    );
    let view = |engine: &Engine| {
        engine
            .answer_question(&Question::Migration { name: None })
            .unwrap()["waves"][0]
            .clone()
    };
    let wave = view(&engine);

    // Types spelled apart hold the same values: parity holds.
    assert_eq!(
        wave["parity"]["tables"][0]["differences"],
        serde_json::json!([]),
        "{wave}"
    );
    // What reads the old name, from the real manifest: the staging model.
    let readers = &wave["readers"][0];
    assert_eq!(readers[0], "raw.raw_orders");
    assert_eq!(
        readers[1][0]["unique_id"], "model.jaffle_shop.stg_orders",
        "{readers}"
    );
    let proposal = wave["proposals"][0].clone();
    assert_eq!(proposal["id"], "MIG-jaffle-orders-R1", "{wave}");
    assert_eq!(proposal["state"], "pending");
    let repointed = proposal["repoint"]["new"].as_str().unwrap().to_string();
    // dbt does not know core.orders: the source call becomes the plain name, braces and
    // all (`{{ core.orders }}` would not compile).
    assert!(
        repointed.contains("select * from core.orders\n"),
        "{repointed}"
    );
    assert!(!repointed.contains("raw_orders"), "{repointed}");
    let hash = proposal["content_hash"].as_str().unwrap().to_string();
    let decide = |verdict: &str, hash: &str| match verdict {
        "approve" => Command::Approve {
            proposal: "MIG-jaffle-orders-R1".into(),
            content_hash: hash.into(),
            reason: "moving to core".into(),
        },
        "reject" => Command::Reject {
            proposal: "MIG-jaffle-orders-R1".into(),
            content_hash: hash.into(),
            reason: "not yet".into(),
        },
        _ => Command::RollBack {
            proposal: "MIG-jaffle-orders-R1".into(),
            reason: "readers broke".into(),
        },
    };

    let why = refused(engine.request(decide("approve", &hash), &bob));
    assert!(why.contains("holds none of the roles"), "{why}");
    let why = refused(engine.request(decide("approve", &hash[..12]), &alice));
    assert!(why.contains("MIG-jaffle-orders-R1"), "{why}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), stg_orders);
    match engine.request(decide("approve", &hash), &alice) {
        Outcome::Accepted { .. } => {}
        Outcome::Refused { reason } => panic!("refused: {}", reason.message),
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), repointed);
    assert_eq!(view(&engine)["proposals"][0]["state"], "approved");
    let why = refused(engine.request(decide("reject", &hash), &alice));
    assert!(why.contains("Approved"), "{why}");

    // The undo: the file put back.
    match engine.request(decide("rollback", &hash), &alice) {
        Outcome::Accepted { .. } => {}
        Outcome::Refused { reason } => panic!("refused: {}", reason.message),
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), stg_orders);
    assert_eq!(view(&engine)["proposals"][0]["state"], "rolled_back");

    // An owner rejects the wave on its parity: it cannot be signed off on that reading.
    let parity = view(&engine)["parity"]["hash"]
        .as_str()
        .unwrap()
        .to_string();
    let wave_decision = |approve: bool| {
        let (proposal, content_hash) = ("MIG-jaffle-orders".to_string(), parity.clone());
        match approve {
            true => Command::Approve {
                proposal,
                content_hash,
                reason: "fine".into(),
            },
            false => Command::Reject {
                proposal,
                content_hash,
                reason: "the refunds are not moved yet".into(),
            },
        }
    };
    match engine.request(wave_decision(false), &alice) {
        Outcome::Accepted { .. } => {}
        Outcome::Refused { reason } => panic!("refused: {}", reason.message),
    }
    let why = refused(engine.request(wave_decision(true), &alice));
    assert!(why.contains("rejection is final"), "{why}");
    let gate = view(&engine)["gate"]["closed"]["why"].to_string();
    assert!(gate.contains("the refunds are not moved yet"), "{gate}");

    // The wave's receipt: the repoint with its decisions, the rejection; a saved copy
    // verifies against the chain, and an altered one does not.
    let answer = engine
        .answer_question(&Question::Receipt {
            incident: "MIG-jaffle-orders".into(),
        })
        .unwrap();
    let receipt = answer["receipt"].clone();
    assert_eq!(receipt["wave"], "MIG-jaffle-orders", "{receipt}");
    let repoint = &receipt["repoints"][0];
    assert_eq!(repoint["content_hash"], hash.as_str());
    assert_eq!(repoint["file"], "models/staging/stg_orders.sql");
    let verdicts: Vec<&str> = (repoint["decisions"].as_array().unwrap().iter())
        .map(|d| d["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["approved", "rolled_back"]);
    assert_eq!(repoint["applied"], false);
    assert_eq!(receipt["rejections"][0]["parity_hash"], parity.as_str());
    let markdown = answer["markdown"].as_str().unwrap();
    assert!(
        markdown.contains("Rollback: the file put back"),
        "{markdown}"
    );
    let verify = |saved: &serde_json::Value| {
        engine
            .answer_question(&Question::Verify {
                saved_receipt: Some(saved.to_string()),
            })
            .unwrap()["receipt_problem"]
            .clone()
    };
    assert_eq!(verify(&receipt), serde_json::Value::Null);
    let mut altered = receipt.clone();
    altered["repoints"][0]["applied"] = true.into();
    let problem = verify(&altered);
    assert!(problem.to_string().contains("repoints"), "{problem}");

    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let records = dataward::chain::records(&state).unwrap();
    let kinds: Vec<&str> = records.iter().map(|r| r.kind.as_str()).collect();
    for kind in [
        "migration_repoint_proposal",
        "migration_repoint_decision",
        "migration_sign_off_rejected",
    ] {
        assert!(kinds.contains(&kind), "{kind} not in {kinds:?}");
    }
}

#[test]
fn a_whole_wave_rolls_back_its_applied_repoints_refusing_a_file_changed_since_and_its_gate_closes()
{
    let test = "a whole wave rolls back";
    let Some(manifest) = jaffle_or_skip(test) else {
        return;
    };
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    pg.execute(
        "CREATE SCHEMA raw;
         CREATE TABLE raw.raw_orders (id int, amount int);
         INSERT INTO raw.raw_orders SELECT i, i * 7 FROM generate_series(1, 20) AS i;
         CREATE TABLE raw.raw_customers (id int, name text);
         INSERT INTO raw.raw_customers SELECT i, 'c' || i FROM generate_series(1, 5) AS i;
         CREATE SCHEMA core;
         CREATE TABLE core.orders AS SELECT * FROM raw.raw_orders;
         CREATE TABLE core.customers AS SELECT * FROM raw.raw_customers;",
    );
    std::env::set_var("DW_MIGRATION_TEST_WAVE_ROLLBACK_URL", &pg.url);
    let dir = tempfile::tempdir().unwrap();
    let parsed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let project = dir.path().join("dbt");
    let mut originals = BTreeMap::new();
    for model in ["stg_orders", "stg_customers"] {
        let node = &parsed["nodes"][format!("model.jaffle_shop.{model}")];
        let file = node["original_file_path"].as_str().unwrap().to_string();
        let text = node["raw_code"].as_str().unwrap().to_string();
        let path = project.join(&file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        originals.insert(file, text);
    }
    let (mut engine, alice, bob) = jaffle_engine(
        dir.path(),
        &manifest,
        &project,
        "DW_MIGRATION_TEST_WAVE_ROLLBACK_URL",
        r#"name = "raw"
tables = [
  { old = "raw.raw_orders", new = "core.orders" },
  { old = "raw.raw_customers", new = "core.customers" },
]"#,
    );
    let view = |engine: &Engine| {
        engine
            .answer_question(&Question::Migration { name: None })
            .unwrap()["waves"][0]
            .clone()
    };
    let accept = |outcome: Outcome| match outcome {
        Outcome::Accepted { .. } => {}
        Outcome::Refused { reason } => panic!("refused: {}", reason.message),
    };
    // Both repoints applied, and the wave signed off: its gate is open.
    let wave = view(&engine);
    let proposals = wave["proposals"].as_array().unwrap().clone();
    assert_eq!(proposals.len(), 2, "{wave}");
    for p in &proposals {
        accept(engine.request(
            Command::Approve {
                proposal: p["id"].as_str().unwrap().into(),
                content_hash: p["content_hash"].as_str().unwrap().into(),
                reason: "moving to core".into(),
            },
            &alice,
        ));
    }
    let parity = wave["parity"]["hash"].as_str().unwrap().to_string();
    accept(engine.request(
        Command::Approve {
            proposal: "MIG-jaffle-raw".into(),
            content_hash: parity.clone(),
            reason: "parity holds".into(),
        },
        &alice,
    ));
    assert!(
        view(&engine)["gate"]["open"].is_object(),
        "{}",
        view(&engine)
    );
    let repointed: BTreeMap<String, String> = (originals.keys())
        .map(|f| (f.clone(), std::fs::read_to_string(project.join(f)).unwrap()))
        .collect();
    for (file, text) in &repointed {
        assert_ne!(text, &originals[file], "{file} was repointed");
    }
    let roll_back = || Command::RollBack {
        proposal: "MIG-jaffle-raw".into(),
        reason: "the customers' readers broke".into(),
    };

    // Only an owner; and a file changed since it was repointed refuses the whole wave,
    // naming that file: nothing is put back.
    let why = refused(engine.request(roll_back(), &bob));
    assert!(why.contains("holds none of the roles"), "{why}");
    let touched = "models/staging/stg_customers.sql";
    let edited = format!("{}\n-- hand edit\nselect 1\n", repointed[touched]);
    std::fs::write(project.join(touched), &edited).unwrap();
    let why = refused(engine.request(roll_back(), &alice));
    assert!(why.contains("nothing is rolled back"), "{why}");
    assert!(why.contains(touched), "{why}");
    assert!(!why.contains("stg_orders.sql"), "{why}");
    let file_now = |f: &str| std::fs::read_to_string(project.join(f)).unwrap();
    assert_eq!(
        file_now("models/staging/stg_orders.sql"),
        repointed["models/staging/stg_orders.sql"]
    );
    assert_eq!(file_now(touched), edited);
    assert!(view(&engine)["gate"]["open"].is_object());

    // Put back as the repoint wrote it, the wave rolls back whole: every file as it
    // was, every repoint rolled back as a recorded decision, the gate closed again.
    std::fs::write(project.join(touched), &repointed[touched]).unwrap();
    accept(engine.request(roll_back(), &alice));
    for (file, text) in &originals {
        assert_eq!(&file_now(file), text, "{file}");
    }
    let wave = view(&engine);
    for p in wave["proposals"].as_array().unwrap() {
        assert_eq!(p["state"], "rolled_back", "{wave}");
    }
    let why = wave["gate"]["closed"]["why"].to_string();
    assert!(why.contains("rolled the wave back"), "{why}");
    let again = refused(engine.request(roll_back(), &alice));
    assert!(again.contains("nothing to roll back"), "{again}");

    // The receipt shows it, and a saved copy verifies.
    let answer = engine
        .answer_question(&Question::Receipt {
            incident: "MIG-jaffle-raw".into(),
        })
        .unwrap();
    let receipt = answer["receipt"].clone();
    let rollback = &receipt["rollbacks"][0];
    assert_eq!(rollback["withdrawn_sign_off"], parity.as_str(), "{receipt}");
    assert_eq!(rollback["repoints"].as_array().unwrap().len(), 2);
    for repoint in receipt["repoints"].as_array().unwrap() {
        let verdicts: Vec<&str> = (repoint["decisions"].as_array().unwrap().iter())
            .map(|d| d["verdict"].as_str().unwrap())
            .collect();
        assert_eq!(verdicts, ["approved", "rolled_back"], "{repoint}");
        assert_eq!(repoint["applied"], false);
    }
    let markdown = answer["markdown"].as_str().unwrap();
    assert!(
        markdown.contains("Wave rolled back by") && markdown.contains("the gate closed"),
        "{markdown}"
    );
    let problem = engine
        .answer_question(&Question::Verify {
            saved_receipt: Some(receipt.to_string()),
        })
        .unwrap()["receipt_problem"]
        .clone();
    assert_eq!(problem, serde_json::Value::Null);
}
