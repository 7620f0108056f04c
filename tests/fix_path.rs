//! The fix path on a real dbt project, as a new user walks it: a project in the
//! jaffle_shop shape (a source, a staging model reading it through `{{ source() }}`
//! with a `{#- -#}` comment, a `config()` and a `var()` from dbt_project.yml, a model
//! reading that through `{{ ref() }}`), built by real dbt (dbt-core and dbt-postgres
//! in the venv .ci/dbt.sh makes, `$DATAWARD_DBT_VENV` else /opt/dataward/dbt) into a
//! throwaway PostgreSQL;
//! `dataward serve` watching the source with the dbt_core orchestrator running the
//! project's job; every decision made through the CLI. Model files end with a newline,
//! as real files do. Skips (with a line on stderr) without dbt or PostgreSQL, unless
//! DATAWARD_REQUIRE_ALL=1. Waits are bounded; nothing is asserted about how long
//! anything took.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::dbt::{dbt_or_skip, write};
use support::pg::{start_or_skip, PgServer};

/// Bounds a wait for something that must happen, so a broken fix path fails instead
/// of hanging.
const PATIENCE: Duration = Duration::from_secs(240);
const JOB: &str = "job.jaffle_every_ten_minutes";
const URL_ENV: &str = "JAFFLE_PG_URL";

const STG_PAYMENTS: &str = "{{ config(materialized='table') }}

with source as (
    {#-
    Normally we would select from the table here, but we are using seeds to load
    our data in this project
    #}
    select * from {{ source('jaffle_shop', 'payments') }}

),

renamed as (

    select
        id as payment_id,
        order_id,
        payment_method,

        -- `amount` is currently stored in cents, so we convert it to dollars
        amount / 100 as amount

    from source
    where payment_method <> '{{ var(\"excluded_payment_method\") }}'

)

select * from renamed
";

const STG_ORDERS: &str = "with source as (
    select * from {{ source('jaffle_shop', 'orders') }}
)

select id as order_id, user_id as customer_id, order_date, status
from source
";

const ORDERS: &str = "{{ config(materialized='table') }}

with orders as (
    select * from {{ ref('stg_orders') }}
),

payments as (
    select * from {{ ref('stg_payments') }}
),

order_payments as (
    select order_id, sum(amount) as amount
    from payments
    group by order_id
)

select
    orders.order_id,
    orders.customer_id,
    orders.order_date,
    orders.status,
    coalesce(order_payments.amount, 0) as amount
from orders
left join order_payments on orders.order_id = order_payments.order_id
where orders.order_date >= '{{ var(\"start_date\") }}'
";

const SOURCES_YML: &str = "version: 2

sources:
  - name: jaffle_shop
    schema: raw
    tables:
      - name: orders
      - name: payments
";

/// The team's notes: the job that runs the project every ten minutes, and who owns it.
const NOTES: &str = r#"[[reader]]
id = "job.jaffle_every_ten_minutes"
kind = "job"
name = "dbt every ten minutes"
reads = ["model.jaffle_shop.stg_payments", "model.jaffle_shop.stg_orders", "model.jaffle_shop.orders"]
owner = "analytics-owner"
schedule = "*/10 * * * *"

[[owner]]
role = "analytics-owner"
covers = ["model.jaffle_shop.*", "analytics.*", "raw.*", "source.jaffle_shop.*"]
"#;

/// A jaffle_shop-shaped project built into `pg`, with a dataward config watching
/// raw.payments and running the project's job through the dbt_core orchestrator.
struct Jaffle {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    profiles: PathBuf,
    config: PathBuf,
    data: PathBuf,
    dbt: PathBuf,
    url: String,
}

impl Jaffle {
    fn new(pg: &PgServer, dbt: &Path) -> Jaffle {
        pg.execute(
            "CREATE SCHEMA raw;
             CREATE TABLE raw.orders (id int PRIMARY KEY, user_id int, order_date date, status text);
             INSERT INTO raw.orders
               SELECT n, n % 13, date '2024-01-01' + n, CASE WHEN n % 5 = 0 THEN 'returned' ELSE 'completed' END
               FROM generate_series(1, 99) AS n;
             CREATE TABLE raw.payments (id int PRIMARY KEY, order_id int, payment_method text, amount int);
             INSERT INTO raw.payments
               SELECT n, n % 99 + 1, CASE WHEN n % 3 = 0 THEN 'coupon' ELSE 'credit_card' END, n * 100
               FROM generate_series(1, 113) AS n;",
        );
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = root.join("jaffle_shop");
        write(
            &project.join("dbt_project.yml"),
            "name: jaffle_shop\nversion: \"1.0\"\nconfig-version: 2\nprofile: jaffle_shop\n\
             model-paths: [\"models\"]\nvars:\n  start_date: '2024-01-01'\n  excluded_payment_method: gift_card\n\
             models:\n  jaffle_shop:\n    +materialized: table\n\
             flags:\n  send_anonymous_usage_stats: false\n",
        );
        write(&project.join("models/staging/sources.yml"), SOURCES_YML);
        write(
            &project.join("models/staging/stg_payments.sql"),
            STG_PAYMENTS,
        );
        write(&project.join("models/staging/stg_orders.sql"), STG_ORDERS);
        write(&project.join("models/orders.sql"), ORDERS);
        let profiles = root.join("profiles");
        write(
            &profiles.join("profiles.yml"),
            &format!(
                "jaffle_shop:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n      \
                 host: 127.0.0.1\n      port: {}\n      user: postgres\n      password: \"\"\n      \
                 dbname: postgres\n      schema: analytics\n      threads: 1\n",
                pg.port
            ),
        );
        write(&root.join("notes.toml"), NOTES);
        let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let config = root.join("dataward.toml");
        write(
            &config,
            &format!(
                r#"[warehouse.dw]
kind = "postgres"
url_env = "{URL_ENV}"

[[monitor]]
name = "raw_payments"
warehouse = "dw"
table = "raw.payments"
checks = ["schema"]
every = "1s"

[lineage]
manifest = "jaffle_shop/target/manifest.json"
notes = "notes.toml"
project_dir = "jaffle_shop"

[verify]
settle = "1s"

[people.{me}]
name = "On call"
roles = ["analytics-owner"]

[[domain]]
name = "analytics"
covers = ["analytics.*", "raw.*", "model.jaffle_shop.*", "source.jaffle_shop.*", "{JOB}"]
owners = ["analytics-owner"]

[orchestrator]
kind = "dbt_core"
project_dir = "jaffle_shop"
dbt = "{dbt}"
profiles_dir = "profiles"

[orchestrator.jobs]
"{JOB}" = "dbt build"
"#,
                dbt = dbt.display()
            ),
        );
        let jaffle = Jaffle {
            data: root.join("data"),
            root,
            project,
            profiles,
            config,
            dbt: dbt.to_path_buf(),
            url: pg.url.clone(),
            _dir: dir,
        };
        jaffle.dbt(&["build"]);
        jaffle
    }

    fn dbt(&self, args: &[&str]) -> Output {
        let output = Command::new(&self.dbt)
            .args(args)
            .current_dir(&self.project)
            .env("DBT_PROFILES_DIR", &self.profiles)
            .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
            .output()
            .expect("run dbt");
        assert!(
            output.status.success(),
            "dbt {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `dataward ARGS` as the on-call engineer runs it.
    fn dataward(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("--data-dir")
            .arg(&self.data)
            .args(args)
            .env(URL_ENV, &self.url)
            .output()
            .expect("run dataward")
    }

    /// `dataward serve` in the background; killed when dropped.
    fn serve(&self) -> Serve {
        let log = std::fs::File::create(self.root.join("serve.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
            .arg("--data-dir")
            .arg(&self.data)
            .args(["serve", "--log-stderr", "--config"])
            .arg(&self.config)
            .env(URL_ENV, &self.url)
            .current_dir(&self.root)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Serve(child)
    }

    fn file(&self, path: &str) -> Vec<u8> {
        std::fs::read(self.project.join(path)).unwrap()
    }

    /// Some observation of raw.payments's schema is stored: the engine knows its
    /// columns, so the next change is a change.
    fn schema_observed(&self) -> bool {
        let path = self.data.join("dataward.db");
        let Ok(db) = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        ) else {
            return false;
        };
        db.query_row(
            "SELECT count(*) FROM observation WHERE monitor = 'raw_payments' AND check_kind = 'schema'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n > 0)
    }

    fn show(&self) -> Option<Value> {
        let out = self.dataward(&["show", "INC-0001", "--json"]);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    }

    fn serve_log(&self) -> String {
        std::fs::read_to_string(self.root.join("serve.log")).unwrap_or_default()
    }
}

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn setup(test: &str) -> Option<(PgServer, Jaffle)> {
    let dbt = dbt_or_skip(test)?;
    let pg = start_or_skip(test)?;
    let jaffle = Jaffle::new(&pg, &dbt);
    Some((pg, jaffle))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Waits for `done` to give a value; `state` says where things stood when it never did.
fn until<T>(what: &str, state: impl Fn() -> String, mut done: impl FnMut() -> Option<T>) -> T {
    let give_up = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = done() {
            return value;
        }
        assert!(
            Instant::now() < give_up,
            "never happened: {what}\n{}",
            state()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn proposal(incident: &Value, kind: &str) -> (String, String) {
    let p = incident["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} proposal: {incident:#}"));
    (
        p["id"].as_str().unwrap().to_string(),
        p["content_hash"].as_str().unwrap().to_string(),
    )
}

/// Serves, lets the engine learn raw.payments's columns, changes `amount` from integer
/// to text upstream, and waits for the incident with its hold and its diff.
fn type_change_incident(jaffle: &Jaffle, pg: &PgServer) -> (Serve, Value) {
    let serve = jaffle.serve();
    until(
        "the engine observes raw.payments",
        || jaffle.serve_log(),
        || jaffle.schema_observed().then_some(()),
    );
    pg.execute("ALTER TABLE raw.payments ALTER COLUMN amount TYPE text USING amount::text");
    let incident = until(
        "an incident with a hold and a diff",
        || format!("{:#?}\n{}", jaffle.show(), jaffle.serve_log()),
        || {
            jaffle.show().filter(|i| {
                ["hold", "diff"].iter().all(|kind| {
                    i["proposals"]
                        .as_array()
                        .is_some_and(|p| p.iter().any(|p| p["kind"] == *kind))
                })
            })
        },
    );
    (serve, incident)
}

fn approve(jaffle: &Jaffle, (id, hash): &(String, String)) -> String {
    let out = jaffle.dataward(&["approve", id, "--hash", hash, "--reason", "on call"]);
    assert!(out.status.success(), "approving {id}: {}", text(&out));
    text(&out)
}

/// Queues the hold's run once the run gate lets it through, and waits until the
/// incident resolves by itself: verified, nothing closed by hand.
fn run_and_resolve(jaffle: &Jaffle) -> Value {
    let last = std::cell::RefCell::new(String::new());
    until(
        "the run gate lets the hold's run through",
        || format!("{}\n{:#?}", last.borrow(), jaffle.show()),
        || {
            let run = jaffle.dataward(&["run", "INC-0001"]);
            *last.borrow_mut() = text(&run);
            run.status.success().then_some(())
        },
    );
    until(
        "the incident verifies and resolves",
        || format!("{:#?}\n{}", jaffle.show(), jaffle.serve_log()),
        || {
            let incident = jaffle.show()?;
            // A failed verification sends it back to Open with its checks: say them.
            if let Some(failed) = incident["checks"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["passed"] == false))
            {
                if incident["status"] == "open" && incident["run_status"] == "success" {
                    panic!("verification failed: {failed:#}\n{incident:#}");
                }
            }
            (incident["status"] == "resolved").then_some(incident)
        },
    )
}

/// The fix path end to end: a column's type changes at the source, the staging model
/// that divides it breaks, its diff is approved through the CLI and written, the run
/// gate dry-runs the approved model (its Jinja rendered from the manifest), the job's
/// real dbt run builds on it, verification passes and the incident resolves by
/// itself; then rolling the diff back leaves the file byte for byte as it was.
#[test]
fn a_type_change_upstream_is_approved_run_verified_and_resolved_and_rolls_back_byte_for_byte() {
    let Some((pg, jaffle)) = setup("a_type_change_upstream_is_approved_run_verified") else {
        return;
    };
    let before = jaffle.file("models/staging/stg_payments.sql");
    let (_serve, incident) = type_change_incident(&jaffle, &pg);
    let hold = proposal(&incident, "hold");
    let diff = proposal(&incident, "diff");
    approve(&jaffle, &hold);
    let said = approve(&jaffle, &diff);
    assert!(
        said.contains(&format!("{} approved (chain #", diff.0)),
        "{said}"
    );
    let written = String::from_utf8(jaffle.file("models/staging/stg_payments.sql")).unwrap();
    assert!(
        written.contains("then cast(amount as numeric) end / 100 as amount"),
        "{written}"
    );
    // Only the use changed: the rest is the file as it was, its final newline too.
    assert_eq!(
        written.replace(
            r"case when amount ~ '^\s*[-+]?[0-9]+(\.[0-9]+)?\s*$' then cast(amount as numeric) end / 100",
            "amount / 100"
        )
        .as_bytes(),
        before.as_slice()
    );

    let resolved = run_and_resolve(&jaffle);
    assert_eq!(resolved["run_status"], "success", "{resolved:#}");
    let checks = resolved["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["passed"] == true), "{resolved:#}");
    let model_check = checks
        .iter()
        .find(|c| c["name"] == "model.jaffle_shop.stg_payments runs on today's data")
        .unwrap_or_else(|| panic!("no model check: {resolved:#}"));
    assert_eq!(model_check["detail"], "113 rows, no error", "{resolved:#}");
    // dbt built the approved model: amount is read as text and still in dollars.
    let mut client = pg.client();
    let total: f64 = client
        .query_one("SELECT sum(amount)::float8 FROM analytics.orders", &[])
        .unwrap()
        .get(0);
    assert_eq!(total, (1..=113).sum::<i64>() as f64);

    // The undo writes back the file as it was, byte for byte.
    let out = jaffle.dataward(&["rollback", &diff.0, "--reason", "back to the original"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(jaffle.file("models/staging/stg_payments.sql"), before);
}

/// The cause goes away by itself: the column gets its original type back before the
/// diff is decided. The hold's run is let through on the tables as they are now, and
/// verification judges the untouched file and the restored column as they are now:
/// the incident resolves, and nothing of the project was changed.
#[test]
fn an_incident_whose_cause_went_away_verifies_on_the_tables_and_files_as_they_are_now() {
    let Some((pg, jaffle)) = setup("an_incident_whose_cause_went_away_verifies") else {
        return;
    };
    let before = jaffle.file("models/staging/stg_payments.sql");
    let (_serve, incident) = type_change_incident(&jaffle, &pg);
    approve(&jaffle, &proposal(&incident, "hold"));
    pg.execute("ALTER TABLE raw.payments ALTER COLUMN amount TYPE integer USING amount::integer");
    let resolved = run_and_resolve(&jaffle);
    let checks = resolved["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["passed"] == true), "{resolved:#}");
    let diff = resolved["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "diff")
        .unwrap();
    assert_eq!(diff["state"], "withdrawn", "{resolved:#}");
    assert_eq!(jaffle.file("models/staging/stg_payments.sql"), before);
}

/// A file that did change since the proposal is refused at approval with what differs,
/// line by line; a file that differs only as dbt does not read (its line endings, a
/// final newline) is the same file, and keeps its own line endings when written.
#[test]
fn approval_compares_the_file_as_dbt_reads_it_and_names_what_differs() {
    let Some((pg, jaffle)) = setup("approval_compares_the_file_as_dbt_reads_it") else {
        return;
    };
    let path = jaffle.project.join("models/staging/stg_payments.sql");
    let (_serve, incident) = type_change_incident(&jaffle, &pg);
    let diff = proposal(&incident, "diff");

    // Someone edits the file: the approval is refused, naming the line.
    let edited = STG_PAYMENTS.replace("payment_method,\n", "payment_method as method,\n");
    std::fs::write(&path, &edited).unwrap();
    let out = jaffle.dataward(&["approve", &diff.0, "--hash", &diff.1]);
    assert!(!out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("models/staging/stg_payments.sql no longer matches the proposal: line 17: the file has `        payment_method as method,`, the proposal `        payment_method,`"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);

    // Saved again with Windows line endings and no final newline: what dbt reads is
    // unchanged, so it is approved, and written with the file's own line endings.
    let crlf = STG_PAYMENTS.trim_end().replace('\n', "\r\n");
    std::fs::write(&path, &crlf).unwrap();
    approve(&jaffle, &diff);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("then cast(amount as numeric) end / 100 as amount\r\n"));
    assert!(!written.replace("\r\n", "").contains('\n'), "{written:?}");
    assert!(!written.ends_with('\n'));
    let out = jaffle.dataward(&["rollback", &diff.0, "--reason", "undo"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), crlf);
}

/// The run gate dry-runs the approved model before it lets the hold's run through.
/// Through `dataward serve`, that dry run is blocked on a locked source table: `run` is
/// still answered (not yet: the dry run is out) while the dry run waits, and once the
/// lock is let go the run goes through and the incident verifies and resolves.
#[test]
fn a_dry_run_blocked_on_a_locked_table_delays_no_request() {
    let Some((pg, jaffle)) = setup("a_dry_run_blocked_on_a_locked_table_delays_no_request") else {
        return;
    };
    let (_serve, incident) = type_change_incident(&jaffle, &pg);
    approve(&jaffle, &proposal(&incident, "hold"));
    approve(&jaffle, &proposal(&incident, "diff"));
    let mut holder = pg.client();
    let mut lock = holder.transaction().unwrap();
    lock.batch_execute("LOCK TABLE raw.payments IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let mut watcher = pg.client();
    let dry_runs_waiting = |watcher: &mut postgres::Client| -> i64 {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                 WHERE c.relname = 'payments' AND NOT l.granted",
                &[],
            )
            .unwrap()
            .get(0)
    };
    // The first `run` asks for the dry run; each answered while it waits for the lock.
    let run = jaffle.dataward(&["run", "INC-0001"]);
    until(
        "the dry run waits for the lock",
        || jaffle.serve_log(),
        || (dry_runs_waiting(&mut watcher) > 0).then_some(()),
    );
    let again = jaffle.dataward(&["run", "INC-0001"]);
    assert!(
        dry_runs_waiting(&mut watcher) > 0,
        "`run` was answered only once the dry run returned:\n{}\n{}",
        text(&run),
        text(&again)
    );
    assert!(!again.status.success(), "not through yet: {}", text(&again));
    lock.rollback().unwrap();
    let resolved = run_and_resolve(&jaffle);
    assert_eq!(resolved["run_status"], "success", "{resolved:#}");
}
