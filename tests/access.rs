//! Access requests on a real PostgreSQL server started by the test: a schema request
//! narrowed by the policy, approved by the domain's owner, the GRANT dataward wrote run
//! by hand as the superuser and seen in the catalog, revoked at expiry (the engine on a
//! virtual clock: no test waits for a day to pass), the receipt and the chain checked; a
//! request the policy sends to review; bad and hostile input. Then the same through
//! `dataward serve` and the command line, as the team runs it.
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1.

mod any_user;
#[path = "support/binary.rs"]
mod binary;
#[path = "support/http.rs"]
mod http;
#[path = "support/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use binary::text;
use chrono::{NaiveDateTime, TimeDelta};
use dataward::approve::{Actor, LoginUid};
use dataward::config::Config;
use dataward::engine::api::{Command, EventKind, Outcome, Question};
use dataward::engine::Engine;
use pg::{start_or_skip, PgServer};

const URL_ENV: &str = "DW_ACCESS_TEST_PG_URL";

/// The estate: a schema whose salaries table the policy keeps from analysts, an HR
/// schema the policy sends to review, and the roles grants go to (one with a name
/// made to break out of a statement).
fn estate(pg: &PgServer) {
    pg.execute(
        "CREATE SCHEMA sales;
         CREATE TABLE sales.orders (id int);
         CREATE TABLE sales.refunds (id int);
         CREATE TABLE sales.salaries_by_rep (rep text, pay numeric);
         CREATE SCHEMA hr;
         CREATE TABLE hr.people (name text);
         CREATE ROLE analyst_ann NOLOGIN;
         CREATE ROLE intern NOLOGIN;
         CREATE ROLE \"analyst_x\"\"; DROP TABLE sales.orders; --\" NOLOGIN;",
    );
}

fn policy(requester: &str, owner: &str, extra: &str) -> String {
    format!(
        r#"
[warehouse.pg]
kind = "postgres"
url_env = "{URL_ENV}"

[people.{requester}]
name = "Requester"
roles = ["analyst"]

[people.{owner}]
name = "Owner"
roles = ["sales-owner", "hr-owner"]

[people.dw-bob]
name = "Bob"
roles = []

[[domain]]
name = "sales"
covers = ["sales.*"]
owners = ["sales-owner"]

[[domain]]
name = "hr"
covers = ["hr.*"]
owners = ["hr-owner"]

[[access]]
name = "analysts read sales"
warehouse = "pg"
tables = ["sales.orders", "sales.refunds"]
privileges = ["select"]
grantees = ["analyst_*"]
max_days = 30

[[access]]
name = "hr needs review"
warehouse = "pg"
domains = ["hr"]
privileges = ["select"]
grantees = ["*"]
review = true
{extra}"#
    )
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

fn at(text: &str) -> NaiveDateTime {
    text.parse().unwrap()
}

/// What an accepted request said, as the CLI prints it; a refusal panics with why.
fn accepted(outcome: Outcome) -> Vec<String> {
    match outcome {
        Outcome::Accepted { events, .. } => events
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::Access { change, text, .. } => Some(format!("{change}: {text}")),
                EventKind::Decision {
                    proposal, verdict, ..
                } => Some(format!("decision: {proposal} {verdict:?}")),
                _ => None,
            })
            .collect(),
        Outcome::Refused { reason } => panic!("refused: {}", reason.message),
    }
}

fn refused(outcome: Outcome) -> String {
    match outcome {
        Outcome::Refused { reason } => reason.message,
        Outcome::Accepted { events, .. } => panic!("accepted: {events:?}"),
    }
}

/// The hash and the statements in a line that proposes them: "(hash H)", then one
/// statement a line.
fn hash_and_statements(said: &str) -> (String, Vec<String>) {
    let hash = said
        .split("(hash ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no hash in {said}"))
        .to_string();
    let statements = said
        .lines()
        .filter(|l| l.starts_with("GRANT") || l.starts_with("REVOKE"))
        .map(str::to_string)
        .collect();
    (hash, statements)
}

fn ask(target: &str, privilege: &str, grantee: &str, days: Option<u32>) -> Command {
    Command::RequestAccess {
        target: target.into(),
        privilege: privilege.into(),
        grantee: grantee.into(),
        reason: "quarterly revenue review".into(),
        days,
    }
}

fn held(pg: &PgServer, role: &str, table: &str) -> bool {
    pg.client()
        .query_one(
            "SELECT has_table_privilege($1, $2::text::regclass, 'SELECT')",
            &[&role, &table],
        )
        .unwrap()
        .get(0)
}

#[test]
fn a_schema_request_is_narrowed_approved_seen_granted_revoked_at_expiry_and_receipted() {
    let Some(pg) = start_or_skip("access requests on the engine") else {
        return;
    };
    estate(&pg);
    std::env::set_var(URL_ENV, &pg.url);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dataward.toml");
    let policy_text = policy("ann", "alice", "");
    std::fs::write(&path, &policy_text).unwrap();
    let config = Config::parse(&policy_text, &path).unwrap();
    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let (ann, alice, bob) = (
        person("ann", 5001),
        person("alice", 5002),
        person("dw-bob", 5003),
    );
    let mut engine = Engine::new(config, state, None, &alice).unwrap();
    let mut now = at("2026-03-01T09:00:00");
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    engine.tick(now).unwrap(); // reads the catalog

    // The schema, narrowed to the two tables the policy lets analysts read; 90 days
    // asked by default, cut to the rule's 30.
    let said = accepted(engine.request(ask("sales", "select", "analyst_ann", None), &ann));
    let filed = said.join("\n");
    assert!(
        filed.contains("select on sales.orders, sales.refunds for analyst_ann, 30 days"),
        "{filed}"
    );
    assert!(filed.contains("left out, no rule allows them: sales.salaries_by_rep"));
    assert!(filed.contains("90 days asked; the policy allows at most 30"));
    assert!(filed.contains("proposed as ACC-0001-P1"), "{filed}");
    let (hash, grants) = hash_and_statements(&filed);
    assert_eq!(
        grants,
        vec![
            r#"GRANT SELECT ON "sales"."orders" TO "analyst_ann";"#,
            r#"GRANT SELECT ON "sales"."refunds" TO "analyst_ann";"#
        ]
    );

    // Only the domain's owner decides, on the whole hash; the asker does not.
    let approve = |hash: &str| Command::Approve {
        proposal: "ACC-0001-P1".into(),
        content_hash: hash.into(),
        reason: String::new(),
    };
    let why = refused(engine.request(approve(&hash), &ann));
    assert!(why.contains("nobody approves their own request"), "{why}");
    let why = refused(engine.request(approve(&hash), &bob));
    assert!(why.contains("holds none of the roles"), "{why}");
    // The asker's own login, through another account (sudo keeps the login uid).
    let mut ann_as_alice = person("alice", 5002);
    ann_as_alice.loginuid = LoginUid::Set(5001);
    let why = refused(engine.request(approve(&hash), &ann_as_alice));
    assert!(why.contains("nobody approves their own request"), "{why}");
    let why = refused(engine.request(approve(&hash[..12]), &alice));
    assert!(why.contains("full content hash"), "{why}");
    let said = accepted(engine.request(approve(&hash), &alice)).join("\n");
    assert!(said.contains("ACC-0001-P1 Approved"), "{said}");
    assert!(
        said.contains("proposes the revoke at 2026-03-31T09:00:00Z"),
        "{said}"
    );

    // The engine restarts: the approved request is read back from the state database.
    drop(engine);
    let config = Config::parse(&policy_text, &path).unwrap();
    let state = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &alice).unwrap();
    engine.set_clock(dataward::clock::Clock::starting_at(now));

    // dataward runs nothing: the catalog shows no grant until the owner runs it.
    now += TimeDelta::minutes(1);
    let events = engine.tick(now).unwrap();
    assert!(!format!("{events:?}").contains("grant_seen"), "{events:?}");
    assert!(!held(&pg, "analyst_ann", "sales.orders"));
    for statement in &grants {
        pg.execute(statement);
    }
    now += TimeDelta::minutes(1);
    let events = engine.tick(now).unwrap();
    assert!(format!("{events:?}").contains("grant_seen"), "{events:?}");
    assert!(held(&pg, "analyst_ann", "sales.orders"));
    assert!(!held(&pg, "analyst_ann", "sales.salaries_by_rep"));

    // A day short of expiry nothing happens; at expiry the revoke is proposed.
    now = at("2026-03-30T09:00:00");
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    let events = engine.tick(now).unwrap();
    assert!(!format!("{events:?}").contains("revoke"), "{events:?}");
    now = at("2026-03-31T09:00:00");
    let events = engine.tick(now).unwrap();
    let revoke = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Access { change, text, .. } if change == "revoke_proposed" => {
                Some(text.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no revoke at expiry: {events:?}"));
    let (_, revokes) = hash_and_statements(&revoke);
    assert_eq!(
        revokes,
        vec![
            r#"REVOKE SELECT ON "sales"."orders" FROM "analyst_ann";"#,
            r#"REVOKE SELECT ON "sales"."refunds" FROM "analyst_ann";"#
        ]
    );
    for statement in &revokes {
        pg.execute(statement);
    }
    now += TimeDelta::minutes(1);
    let events = engine.tick(now).unwrap();
    assert!(format!("{events:?}").contains("revoke_seen"), "{events:?}");

    // The receipt holds all of it, read back from the chain, and the chain verifies.
    let answer = engine
        .answer_question(&Question::Receipt {
            incident: "ACC-0001".into(),
        })
        .unwrap();
    let receipt = answer["markdown"].as_str().unwrap();
    for expected in [
        "Asked by ann (uid 5001)",
        "quarterly revenue review",
        "Policy: propose (rules: analysts read sales)",
        "Left out (no rule allows them): sales.salaries_by_rep",
        &format!("Grant ACC-0001-P1 (hash {hash})"),
        r#"GRANT SELECT ON "sales"."orders" TO "analyst_ann";"#,
        "approved by alice (uid 5002)",
        "Grant seen in the catalog at 2026-03-01T09:02:00Z",
        "Revoke ACC-0001-P2 (expired",
        r#"REVOKE SELECT ON "sales"."refunds" FROM "analyst_ann";"#,
        "Revoke seen in the catalog at 2026-03-31T09:01:00Z",
    ] {
        assert!(receipt.contains(expected), "{expected}\n{receipt}");
    }
    let conn = dataward::store::open_read_only(&dir.path().join("dataward.db")).unwrap();
    let report = dataward::chain::verify(&conn).unwrap();
    assert!(report.ok, "{report:?}");
    // With no engine serving, the command reads the same receipt from the chain.
    let printed = binary::dataward(&["receipt", "ACC-0001"], dir.path());
    assert!(printed.status.success(), "{}", text(&printed));
    assert_eq!(text(&printed), receipt);
    // `dataward verify --receipt` checks a saved ACC receipt against the chain.
    let saved = binary::dataward(&["receipt", "ACC-0001", "--json"], dir.path());
    assert!(saved.status.success(), "{}", text(&saved));
    let saved_path = dir.path().join("ACC-0001.json");
    std::fs::write(&saved_path, &saved.stdout).unwrap();
    let path = saved_path.to_str().unwrap();
    let verified = binary::dataward(&["verify", "--receipt", path], dir.path());
    assert!(verified.status.success(), "{}", text(&verified));
    assert!(
        text(&verified).contains("matches the chain"),
        "{}",
        text(&verified)
    );
    let altered = String::from_utf8(saved.stdout.clone())
        .unwrap()
        .replace("analyst_ann", "analyst_eve");
    std::fs::write(&saved_path, altered).unwrap();
    let verified = binary::dataward(&["verify", "--receipt", path], dir.path());
    assert_eq!(verified.status.code(), Some(1), "{}", text(&verified));
    assert!(text(&verified).contains("ALTERED"), "{}", text(&verified));
    let shown = binary::dataward(&["show", "ACC-0001"], dir.path());
    assert_eq!(shown.status.code(), Some(2), "{}", text(&shown));
    assert!(text(&shown).contains("`dataward receipt ACC-0001` shows it"));

    // The policy sends HR to review: nothing is proposed, the owners are named.
    let said = accepted(engine.request(ask("hr.people", "select", "intern", Some(7)), &ann));
    let said = said.join("\n");
    assert!(said.contains("review: ACC-0002"), "{said}");
    assert!(
        said.contains("nothing is proposed; sent to hr-owner"),
        "{said}"
    );
    let why = refused(engine.request(
        Command::Approve {
            proposal: "ACC-0002-P1".into(),
            content_hash: hash.clone(),
            reason: String::new(),
        },
        &alice,
    ));
    assert!(why.contains("no proposal ACC-0002-P1"), "{why}");

    // Bad input is refused, saying what is wrong, and records nothing.
    let before = dataward::chain::verify(&conn).unwrap().records;
    for (command, says) in [
        (
            ask("sales.nope", "select", "analyst_ann", None),
            "no table or schema \"sales.nope\"",
        ),
        (
            ask("sales", "all", "analyst_ann", None),
            "not a table privilege",
        ),
        (
            ask("sales", "insert", "analyst_ann", None),
            "no [[access]] rule",
        ),
        (
            ask("sales", "select", "nobody_here", None),
            "has no role \"nobody_here\"",
        ),
        (
            ask(
                "sales\"; DROP TABLE sales.orders; --",
                "select",
                "analyst_ann",
                None,
            ),
            "no table or schema",
        ),
    ] {
        let why = refused(engine.request(command, &ann));
        assert!(why.contains(says), "{says}: {why}");
    }
    assert_eq!(dataward::chain::verify(&conn).unwrap().records, before);

    // A role whose name tries to end the statement gets a grant to exactly that role:
    // the statement dataward wrote runs as one GRANT, and the table is still there.
    let hostile = "analyst_x\"; DROP TABLE sales.orders; --";
    let said = accepted(engine.request(ask("sales.orders", "select", hostile, Some(1)), &ann));
    let (hash, grants) = hash_and_statements(&said.join("\n"));
    assert_eq!(
        grants,
        vec![r#"GRANT SELECT ON "sales"."orders" TO "analyst_x""; DROP TABLE sales.orders; --";"#]
    );
    accepted(engine.request(
        Command::Approve {
            proposal: "ACC-0003-P1".into(),
            content_hash: hash,
            reason: String::new(),
        },
        &alice,
    ));
    pg.execute(&grants[0]);
    assert!(held(&pg, hostile, "sales.orders"));
    now += TimeDelta::minutes(1);
    let events = engine.tick(now).unwrap();
    assert!(
        format!("{events:?}").contains("ACC-0003: the grant is in place"),
        "{events:?}"
    );

    // A grant nobody decides expires after the domain's approval_ttl (30m): never
    // granted, and no longer approvable.
    let said =
        accepted(engine.request(ask("sales.refunds", "select", "analyst_ann", Some(3)), &ann));
    let (hash, _) = hash_and_statements(&said.join("\n"));
    now += TimeDelta::minutes(31);
    let events = engine.tick(now).unwrap();
    assert!(
        format!("{events:?}").contains("ACC-0004-P1 expired unanswered; nothing was granted"),
        "{events:?}"
    );
    let why = refused(engine.request(
        Command::Approve {
            proposal: "ACC-0004-P1".into(),
            content_hash: hash,
            reason: String::new(),
        },
        &alice,
    ));
    assert!(why.contains("expired unanswered"), "{why}");
    assert!(dataward::chain::verify(&conn).unwrap().ok);
}

/// `dataward serve` as the team runs it: the requester and the owner are two accounts
/// of the team's group, each talking to the engine over its socket.
#[test]
fn through_serve_a_request_is_proposed_approved_by_the_owner_and_its_grant_seen() {
    if !any_user::with_team("access requests through serve") {
        return;
    }
    let Some(pg) = start_or_skip("access requests through serve") else {
        return;
    };
    estate(&pg);
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("team.toml");
    std::fs::write(
        &config,
        policy("dw-obs", "dw-alice", "\n[serve]\ngroup = \"dw-team\"\n"),
    )
    .unwrap();
    let data = dir.path().join("data");
    let _engine = binary::Engine(
        Process::new(env!("CARGO_BIN_EXE_dataward"))
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
    let run = |user: &str, args: &[&str]| any_user::as_user(user, args, &data);
    // The socket is the team's once the engine has made it so.
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    let started = Instant::now();
    while mode(&data.join("dataward.sock")).ok() != Some(0o660) {
        assert!(started.elapsed() < Duration::from_secs(60), "no socket");
        std::thread::sleep(Duration::from_millis(25));
    }
    // Asked until the engine serves and has read the catalog once.
    let started = Instant::now();
    let filed = loop {
        let out = run(
            "dw-obs",
            &[
                "request-access",
                "sales",
                "--privilege",
                "select",
                "--for",
                "analyst_ann",
                "--reason",
                "quarterly revenue review",
                "--days",
                "14",
            ],
        );
        let said = text(&out);
        if out.status.success() {
            break said;
        }
        assert!(
            said.contains("not been read yet") || said.contains("no engine is running"),
            "{said}"
        );
        assert!(started.elapsed() < Duration::from_secs(60), "{said}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        filed.contains("select on sales.orders, sales.refunds for analyst_ann, 14 days"),
        "{filed}"
    );
    assert!(filed.contains("left out, no rule allows them: sales.salaries_by_rep"));
    let (hash, grants) = hash_and_statements(&filed);
    assert_eq!(grants.len(), 2, "{filed}");

    // The asker may not approve; the owner does.
    let out = run("dw-obs", &["approve", "ACC-0001-P1", "--hash", &hash]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("nobody approves their own request"),
        "{}",
        text(&out)
    );
    let out = run("dw-alice", &["approve", "ACC-0001-P1", "--hash", &hash]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("ACC-0001-P1 approved"),
        "{}",
        text(&out)
    );

    // The owner runs the statements; dataward sees them on a later turn.
    for statement in &grants {
        pg.execute(statement);
    }
    let started = Instant::now();
    let receipt = loop {
        let out = run("dw-alice", &["receipt", "ACC-0001"]);
        let said = text(&out);
        assert!(out.status.success(), "{said}");
        if said.contains("Grant seen in the catalog") {
            break said;
        }
        assert!(started.elapsed() < Duration::from_secs(90), "{said}");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(receipt.contains("approved by dw-alice"), "{receipt}");
    assert!(receipt.contains("Asked by dw-obs"), "{receipt}");

    // Review, and bad input, from the command line.
    let out = run(
        "dw-obs",
        &[
            "request-access",
            "hr",
            "--privilege",
            "select",
            "--for",
            "intern",
            "--reason",
            "onboarding",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("nothing is proposed; sent to hr-owner"),
        "{}",
        text(&out)
    );
    let out = run(
        "dw-obs",
        &[
            "request-access",
            "sales.nope",
            "--privilege",
            "select",
            "--for",
            "analyst_ann",
            "--reason",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no table or schema"), "{}", text(&out));
    let verify = run("dw-alice", &["verify"]);
    assert!(verify.status.success(), "{}", text(&verify));
}

#[test]
fn a_request_the_policy_sends_to_review_pages_the_domains_owner_through_the_outbox() {
    let Some(pg) = start_or_skip("access review pages the owner") else {
        return;
    };
    estate(&pg);
    let url_env = "DW_ACCESS_TEST_REVIEW_URL";
    std::env::set_var(url_env, &pg.url);
    // The HR domain's pager, and the sales domain's: only the first hears of a review
    // of an HR table.
    let hr_pager = http::FakeApi::start(http::Api::PagerDuty, "hr-routing-key");
    let other = http::FakeApi::start(http::Api::PagerDuty, "other-routing-key");
    std::env::set_var("DW_ACCESS_TEST_HR_PD", &hr_pager.secret);
    std::env::set_var("DW_ACCESS_TEST_OTHER_PD", &other.secret);
    let alerts = format!(
        r#"
[[alert]]
name = "hr-pager"
kind = "pagerduty"
routing_key_env = "DW_ACCESS_TEST_HR_PD"
base_url = "{}"
domains = ["hr"]

[[alert]]
name = "other"
kind = "pagerduty"
routing_key_env = "DW_ACCESS_TEST_OTHER_PD"
base_url = "{}"
domains = ["sales"]
"#,
        hr_pager.base_url(),
        other.base_url()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dataward.toml");
    let policy_text = policy("ann", "alice", &alerts).replace(URL_ENV, url_env);
    std::fs::write(&path, &policy_text).unwrap();
    let config = Config::parse(&policy_text, &path).unwrap();
    let db = dir.path().join("dataward.db");
    let state = dataward::store::open(&db).unwrap();
    let (ann, alice) = (person("ann", 5001), person("alice", 5002));
    let mut engine = Engine::new(config.clone(), state, None, &alice).unwrap();
    let now = at("2026-03-01T09:00:00");
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    engine.tick(now).unwrap(); // reads the catalog

    let said = accepted(engine.request(ask("hr.people", "select", "intern", Some(7)), &ann));
    assert!(said.join("\n").contains("review: ACC-0001"), "{said:?}");
    // A request the policy proposes pages nobody: it waits for the owner as a
    // proposal, as an incident's do.
    accepted(engine.request(ask("sales.orders", "select", "analyst_ann", None), &ann));
    drop(engine);

    deliver(&config, &db);
    let paged: Vec<serde_json::Value> = hr_pager.requests().iter().map(|r| r.json()).collect();
    assert_eq!(paged.len(), 1, "{paged:#?}");
    let page = &paged[0];
    assert_eq!(page["event_action"], "trigger");
    assert!(
        page["dedup_key"].as_str().unwrap().ends_with("-ACC-0001"),
        "{page}"
    );
    let summary = page["payload"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("ACC-0001 needs review: select on hr.people for intern"),
        "{summary}"
    );
    assert!(other.requests().is_empty(), "{:#?}", other.requests().len());

    // The review is decided by the domain's owner only, on the review's hash; the
    // decision resolves the page, and the receipt shows it.
    let state = dataward::store::open(&db).unwrap();
    let mut engine = Engine::new(config.clone(), state, None, &alice).unwrap();
    engine.set_clock(dataward::clock::Clock::starting_at(now));
    engine.tick(now).unwrap();
    let bob = person("dw-bob", 5003);
    let receipt = receipt_md(&engine, "ACC-0001");
    assert!(
        receipt.contains("asks the owners to review it"),
        "{receipt}"
    );
    let review_hash = review_hash_said(&receipt);
    let approve = |hash: &str| Command::Approve {
        proposal: "ACC-0001".into(),
        content_hash: hash.into(),
        reason: "the intern starts on payroll".into(),
    };
    let why = refused(engine.request(approve(&review_hash), &bob));
    assert!(why.contains("holds none of the roles"), "{why}");
    let why = refused(engine.request(approve(&review_hash), &ann));
    assert!(why.contains("nobody reviews their own request"), "{why}");
    let why = refused(engine.request(approve(&review_hash[..12]), &alice));
    assert!(why.contains("ACC-0001"), "{why}");
    let said = accepted(engine.request(approve(&review_hash), &alice)).join("\n");
    assert!(said.contains("decision: ACC-0001 Approved"), "{said}");
    assert!(said.contains("proposed as ACC-0001-P1"), "{said}");
    let (grant_hash, statements) = hash_and_statements(&said);
    assert_eq!(
        statements,
        vec!["GRANT SELECT ON \"hr\".\"people\" TO \"intern\";".to_string()]
    );
    // The grant is then a proposal as any: the asker still cannot approve it.
    let grant = |hash: &str| Command::Approve {
        proposal: "ACC-0001-P1".into(),
        content_hash: hash.into(),
        reason: String::new(),
    };
    let why = refused(engine.request(grant(&grant_hash), &ann));
    assert!(why.contains("nobody approves their own request"), "{why}");
    accepted(engine.request(grant(&grant_hash), &alice));
    let why = refused(engine.request(approve(&review_hash), &alice));
    assert!(why.contains("not waiting for review"), "{why}");

    // Another review, rejected: final, with the reason; nothing is proposed.
    let said = accepted(engine.request(ask("hr.people", "select", "analyst_ann", None), &ann));
    assert!(said.join("\n").contains("review: ACC-0003"), "{said:?}");
    let (second, _) = hash_and_statements(&said.join("\n"));
    let reject = Command::Reject {
        proposal: "ACC-0003".into(),
        content_hash: second.clone(),
        reason: "analysts do not read HR".into(),
    };
    let said = accepted(engine.request(reject, &alice)).join("\n");
    assert!(
        said.contains("rejected: ACC-0003: the review is rejected"),
        "{said}"
    );
    let why = refused(engine.request(
        Command::Approve {
            proposal: "ACC-0003".into(),
            content_hash: second,
            reason: String::new(),
        },
        &alice,
    ));
    assert!(why.contains("not waiting for review"), "{why}");
    let receipt = receipt_md(&engine, "ACC-0001");
    assert!(
        receipt.contains("- Review approved by") && receipt.contains(&review_hash),
        "{receipt}"
    );
    assert!(receipt.contains("## Grant ACC-0001-P1"), "{receipt}");
    let receipt = receipt_md(&engine, "ACC-0003");
    assert!(
        receipt.contains("- Review rejected by") && receipt.contains("analysts do not read HR"),
        "{receipt}"
    );
    assert!(receipt.contains("the review was rejected"), "{receipt}");
    drop(engine);

    deliver(&config, &db);
    let paged: Vec<serde_json::Value> = hr_pager.requests().iter().map(|r| r.json()).collect();
    let actions: Vec<(&str, &str)> = paged
        .iter()
        .map(|p| {
            (
                p["event_action"].as_str().unwrap(),
                p["dedup_key"].as_str().unwrap(),
            )
        })
        .collect();
    let key = |id: &str| {
        paged
            .iter()
            .find(|p| p["dedup_key"].as_str().unwrap().ends_with(id))
            .map(|p| p["dedup_key"].as_str().unwrap())
            .unwrap()
    };
    assert_eq!(
        actions,
        vec![
            ("trigger", key("-ACC-0001")),
            ("resolve", key("-ACC-0001")),
            ("trigger", key("-ACC-0003")),
            ("resolve", key("-ACC-0003")),
        ],
        "{paged:#?}"
    );
    let resolved = paged[3]["payload"]["custom_details"].to_string();
    assert!(resolved.contains("rejected by"), "{resolved}");
    assert!(other.requests().is_empty(), "{:#?}", other.requests().len());
}

fn receipt_md(engine: &Engine, id: &str) -> String {
    let answer = engine
        .answer_question(&Question::Receipt {
            incident: id.into(),
        })
        .unwrap();
    answer["markdown"].as_str().unwrap().to_string()
}

/// The hash a receipt says a waiting review is decided on.
fn review_hash_said(receipt: &str) -> String {
    let after = receipt
        .split("(review hash ")
        .nth(1)
        .unwrap_or_else(|| panic!("no review hash in {receipt}"));
    after.split(')').next().unwrap().to_string()
}

/// Every destination's outbox delivered, as the relay does (on a virtual clock).
fn deliver(config: &Config, db: &std::path::Path) {
    let config = std::sync::Arc::new(config.clone());
    let client = dataward::notify::client(Duration::from_secs(5)).unwrap();
    for (name, _) in config.alert_destinations() {
        let mut carrier = dataward::notify::relay::Carrier::new(
            config.clone(),
            &name,
            db,
            dataward::notify::relay::Marks::on(dataward::store::open(db).unwrap()),
            client.clone(),
            dataward::notify::relay::Backoff::default(),
            dataward::notify::relay::Jitter::new(1),
        )
        .unwrap();
        let mut clock = 1_790_000_000_000;
        for _ in 0..50 {
            let (done, next) = carrier.step(clock).unwrap();
            if let dataward::notify::relay::Done::GaveUp { error, .. } = &done {
                panic!("{name}: {error}");
            }
            match next {
                dataward::notify::relay::Next::Idle => break,
                dataward::notify::relay::Next::Now => {}
                dataward::notify::relay::Next::At(at) => clock = clock.max(at),
            }
        }
    }
}
