//! The waves (`W`) and access requests (`A`) overlays act, end to end: `dataward serve`
//! on a real PostgreSQL server started by the test, with a migration wave whose
//! repoint rewrites a real dbt file (jaffle_shop's staging model) and a request the
//! policy sends to review, filed by another unix account. The console in tmux, as the
//! domain's owner, selects the repoint and approves it (the file is rewritten), then
//! selects the review and approves it (the grant is proposed): keystrokes only.
//! Skips (with a message) without root, tmux, the server binaries or ../shared.

mod any_user;
#[path = "support/binary.rs"]
mod binary;
#[path = "support/pg.rs"]
mod pg;
#[path = "support/tmux.rs"]
mod terminal;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use binary::text;
use pg::start_or_skip;
use terminal::{tmux, tmux_available, wait_for, Session};

const URL_ENV: &str = "DW_OVERLAYS_TEST_PG_URL";

#[test]
fn a_repoint_and_a_review_are_approved_from_their_overlays() {
    let test = "the overlays act";
    if !tmux_available() || !any_user::with_team(test) {
        return;
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/dbt/jaffle_shop-manifest.json");
    if !manifest.is_file() {
        assert!(
            std::env::var("DATAWARD_REQUIRE_ALL").is_err(),
            "{test}: needs {}",
            manifest.display()
        );
        eprintln!("{test}: skipped: needs {} (../shared)", manifest.display());
        return;
    }
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    pg.execute(
        "CREATE SCHEMA raw;
         CREATE TABLE raw.raw_orders (id int, amount int, ordered_at timestamptz);
         INSERT INTO raw.raw_orders
           SELECT i, i * 7, '2026-03-01T00:00:00Z'::timestamptz + (i || ' hours')::interval
           FROM generate_series(1, 50) AS i;
         CREATE SCHEMA core;
         CREATE TABLE core.orders AS SELECT * FROM raw.raw_orders;
         CREATE SCHEMA hr;
         CREATE TABLE hr.people (name text);
         CREATE ROLE intern NOLOGIN;",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
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
    // The console runs as this account (root): it owns both domains.
    let me = dataward::approve::Actor::current().user.unwrap();
    let config = dir.path().join("team.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[warehouse.pg]
kind = "postgres"
url_env = "{URL_ENV}"

[lineage]
manifest = "{manifest}"
project_dir = "{project}"

[people.{me}]
name = "Owner"
roles = ["shop-owner", "hr-owner"]

[people.dw-obs]
name = "Requester"
roles = []

[[domain]]
name = "shop"
covers = ["raw.*", "core.*"]
owners = ["shop-owner"]

[[domain]]
name = "hr"
covers = ["hr.*"]
owners = ["hr-owner"]

[[access]]
name = "hr needs review"
warehouse = "pg"
domains = ["hr"]
privileges = ["select"]
grantees = ["*"]
review = true

[[migration]]
name = "jaffle"
domain = "shop"
warehouse = "pg"
parity_every = "1s"

[[migration.waves]]
name = "orders"
tables = [{{ old = "raw.raw_orders", new = "core.orders", day_column = "ordered_at" }}]

[serve]
group = "dw-team"
"#,
            manifest = manifest.display(),
            project = project.display(),
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let _engine = binary::Engine(
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .args(["serve", "--log-stderr", "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(&data)
            .env(URL_ENV, &pg.url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Another account asks for HR: the policy sends it to review.
    let started = Instant::now();
    let filed = loop {
        let out = any_user::as_user(
            "dw-obs",
            &[
                "request-access",
                "hr.people",
                "--privilege",
                "select",
                "--for",
                "intern",
                "--reason",
                "onboarding",
            ],
            &data,
        );
        let said = text(&out);
        if out.status.success() {
            break said;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "{said}");
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        filed.contains("ACC-0001") && filed.contains("asks for review"),
        "{filed}"
    );

    let name = format!("dataward-overlays-{}", std::process::id());
    let command = format!(
        "sh -c 'env XDG_STATE_HOME={} {} --config {} --data-dir {}; sleep 600'",
        dir.path().join("xdg-state").display(),
        env!("CARGO_BIN_EXE_dataward"),
        config.display(),
        data.display()
    );
    let session = Session::open(&name, (120, 40), &command);
    let s = session.0.as_str();
    wait_for(s, "Incidents");

    // W: the wave first, then its repoint; j selects the repoint, a approves it on the
    // hash shown, Enter sends, and the overlay comes back with the repoint approved.
    tmux(&["send-keys", "-t", s, "W"]);
    wait_for(s, "parity holds");
    wait_for(s, "repoint MIG-jaffle-orders-R1");
    tmux(&["send-keys", "-t", s, "j"]);
    wait_for(s, "▶   repoint MIG-jaffle-orders-R1");
    tmux(&["send-keys", "-t", s, "a"]);
    let boxed = wait_for(s, "Approve MIG-jaffle-orders-R1");
    assert!(boxed.contains("content hash"), "{boxed}");
    tmux(&["send-keys", "-t", s, "-l", "moving to core"]);
    tmux(&["send-keys", "-t", s, "Enter"]);
    wait_for(s, "(approved)");
    let repointed = std::fs::read_to_string(&file).unwrap();
    assert!(repointed.contains("core.orders"), "{repointed}");
    assert!(!repointed.contains("raw_orders"), "{repointed}");

    // A: the review, approved by the owner on its hash: the grant is proposed.
    tmux(&["send-keys", "-t", s, "Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux(&["send-keys", "-t", s, "A"]);
    wait_for(s, "▶ ? ACC-0001  review");
    tmux(&["send-keys", "-t", s, "a"]);
    wait_for(s, "Approve ACC-0001");
    tmux(&["send-keys", "-t", s, "Enter"]);
    let after = wait_for(s, "ACC-0001  proposed");
    assert!(after.contains("proposal ACC-0001-P1"), "{after}");

    // Both decisions are on the chain as the owner's, as the CLI's would be.
    let out = binary::dataward(&["verify", "--json"], &data);
    assert!(out.status.success(), "{}", text(&out));
    let out = binary::dataward(&["receipt", "ACC-0001"], &data);
    assert!(text(&out).contains("Review approved by"), "{}", text(&out));
}
