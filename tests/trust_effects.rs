//! What dataward's effects do to things beyond its own database: a backfill's undo never
//! takes rows loaded since with it. Through the real binary on the demo's SQLite estate,
//! and on a real PostgreSQL through the warehouse's own restore.

mod support;

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use dataward::warehouse::postgres::PostgresWarehouse;
use dataward::warehouse::{BackfillScope, Relation, Warehouse};

fn dataward(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("the binary runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `dataward serve`, stopped when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(config: &Path, data: &Path) -> Served {
    let child = Command::new(env!("CARGO_BIN_EXE_dataward"))
        .args(["serve", "--log-stderr", "--config"])
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let served = Served(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while UnixStream::connect(data.join("dataward.sock")).is_err() {
        assert!(Instant::now() < deadline, "the engine never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    served
}

/// The demo estate's analytics database.
fn analytics(data: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(data.join("estate/analytics.db")).unwrap()
}

fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

const COPY: &str = "dataward_versions__analytics__fct_deliveries__inc_0001_p3";

/// Loads `rows` deliveries on `day`, as a run after the backfill would.
fn load(conn: &rusqlite::Connection, day: &str, rows: usize, tag: &str) {
    for n in 0..rows {
        conn.execute(
            "INSERT INTO fct_deliveries (delivery_id, courier_id, delivered_at, delivered_on, fee_cents)
             VALUES (?1, 7, ?2, ?3, 500)",
            [
                format!("{tag}-{n:04}"),
                format!("{day}T{:02}:{:02}:00Z", n / 60 % 24, n % 60),
                day.to_string(),
            ],
        )
        .unwrap();
    }
}

#[test]
fn rolling_back_a_backfill_refuses_when_its_tables_changed_since_and_else_keeps_the_rows_loaded_since(
) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    // The payouts story: Saturday 2026-11-28 backfilled (INC-0001-P3) at 01:20; the
    // nightly job at 02:00 then loaded Sunday and Monday and rebuilt the payouts.
    let demo = dataward(
        &[
            "demo",
            "payouts",
            "--headless",
            "--json",
            "--approve-as",
            "payouts-owner",
            "--speed",
            "100000000",
        ],
        data,
    );
    assert!(demo.status.success(), "{}", text(&demo));
    let stdout = String::from_utf8_lossy(&demo.stdout);
    assert!(
        stdout.contains(r#""proposal":"INC-0001-P3""#) && stdout.contains("backfill_queued"),
        "{stdout}"
    );
    let conn = analytics(data);
    let rows = |sql: &str| count(&conn, sql);
    let loaded_since = "SELECT count(*) FROM fct_deliveries WHERE delivered_on >= '2026-11-29' \
                        AND delivery_id NOT IN (SELECT delivery_id FROM {COPY})"
        .replace("{COPY}", COPY);
    assert!(
        rows(&loaded_since) > 0,
        "the nightly loaded rows after the backfill"
    );
    // Someone also loads three late rows into the backfilled Saturday.
    load(&conn, "2026-11-28", 3, "LATE");
    let saturday = "SELECT count(*) FROM fct_deliveries WHERE delivered_on = '2026-11-28'";
    let (total, on_saturday, since) = (
        rows("SELECT count(*) FROM fct_deliveries"),
        rows(saturday),
        rows(&loaded_since),
    );
    let payouts = "SELECT count(*) FROM fct_courier_payouts";
    let payouts_now = rows(payouts);
    let _engine = serve(&data.join("estate/dataward.toml"), data);

    // The undo would take the late rows and the nightly's payouts with it: refused,
    // naming each table, its rows and its days; nothing is touched.
    let refused = dataward(
        &["rollback", "INC-0001-P3", "--reason", "figures were final"],
        data,
    );
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert!(
        said.contains(
            "cannot roll back analytics.fct_deliveries: 3 rows in rows with delivered_at from \
             2026-11-28 up to 2026-11-29 changed since the backfill ran: 3 rows on 2026-11-28"
        ),
        "the refusal names the rows and the day: {said}"
    );
    assert!(
        said.contains("cannot roll back analytics.fct_courier_payouts: ")
            && said.contains(
                "in the whole table changed since the backfill ran (it has no event-time column"
            ),
        "{said}"
    );
    assert!(said.contains("nothing was restored"), "{said}");
    assert_eq!(rows("SELECT count(*) FROM fct_deliveries"), total);
    assert_eq!(rows(saturday), on_saturday);
    assert_eq!(
        rows(&loaded_since),
        since,
        "the rows loaded since are all there"
    );
    assert_eq!(rows(payouts), payouts_now);
    // The chain says no undo happened.
    let show = dataward(&["show", "INC-0001", "--json"], data);
    assert!(!text(&show).contains("restored"), "{}", text(&show));

    // Put both tables back as the backfill left them but for the rows loaded since:
    // the late rows gone, and the payouts as the model builds them from the days the
    // backfill's run saw (up to Saturday; Sunday and Monday came with the nightly).
    conn.execute(
        "DELETE FROM fct_deliveries WHERE delivery_id LIKE 'LATE-%'",
        [],
    )
    .unwrap();
    conn.execute_batch(
        "DELETE FROM fct_courier_payouts;
         INSERT INTO fct_courier_payouts
           SELECT courier_id, date(delivered_on, 'weekday 1', '-7 days') AS week_start,
                  count(*) AS deliveries, sum(fee_cents) / 100.0 AS payout
           FROM fct_deliveries WHERE delivered_on <= '2026-11-28' GROUP BY 1, 2;",
    )
    .unwrap();
    let rolled = dataward(
        &["rollback", "INC-0001-P3", "--reason", "figures were final"],
        data,
    );
    let said = text(&rolled);
    assert!(rolled.status.success(), "{said}");
    // Saturday as it was before the backfill, and the rows loaded since all there.
    assert_eq!(
        rows(saturday),
        rows(&format!(
            "SELECT count(*) FROM {COPY} WHERE delivered_on = '2026-11-28'"
        ))
    );
    assert_eq!(
        rows(&loaded_since),
        since,
        "the rows loaded since survive: {said}"
    );
    let other_days = "SELECT count(*) FROM {} WHERE delivered_on < '2026-11-28'";
    assert_eq!(
        rows(&other_days.replace("{}", "fct_deliveries")),
        rows(&other_days.replace("{}", COPY))
    );
    // It says exactly what it restored, and what it kept.
    assert!(
        said.contains(
            "restored analytics.fct_deliveries's rows with delivered_at from 2026-11-28 up to \
             2026-11-29 as before the backfill"
        ),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "kept {since} rows changed since the backfill outside it, on 2026-11-29, 2026-11-30"
        )),
        "{said}"
    );
    assert!(
        said.contains("restored analytics.fct_courier_payouts whole as before the backfill"),
        "{said}"
    );
    let receipt = dataward(&["receipt", "INC-0001", "--md"], data);
    assert!(
        text(&receipt).contains(&format!("kept {since} rows changed since the backfill")),
        "{}",
        text(&receipt)
    );
}

/// The rows loaded since a backfill survive its undo, on SQLite through the warehouse's
/// own calls: Saturday put back as the copy has it, Monday left as loaded.
#[test]
fn sqlite_restores_only_the_backfilled_days_and_keeps_the_rows_loaded_since() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE fct_deliveries (delivery_id TEXT, courier_id INT, delivered_at TEXT, \
         delivered_on TEXT, fee_cents INT);",
    )
    .unwrap();
    load(&conn, "2026-11-27", 40, "FRI");
    load(&conn, "2026-11-28", 10, "SAT");
    let warehouse = dataward::warehouse::sqlite::SqliteWarehouse::new(&path, Default::default());
    let relation = Relation::parse("fct_deliveries").unwrap();
    let mut version = warehouse.snapshot_table(&relation, "INC-0001-P3").unwrap();
    version.scope = Some(BackfillScope {
        column: Some("delivered_at".into()),
        days: Some(("2026-11-28".into(), "2026-11-29".into())),
    });
    // The backfill fills Saturday; its run finished; then the next run loads Monday.
    load(&conn, "2026-11-28", 30, "BACKFILL");
    version.after = Some(
        warehouse
            .day_prints(&relation, Some("delivered_at"))
            .unwrap(),
    );
    load(&conn, "2026-11-30", 250, "MON");
    let restored = warehouse.restore_table(&relation, &version).unwrap();
    assert_eq!(restored.rows, 10);
    assert_eq!(restored.kept.len(), 1);
    assert_eq!(restored.kept[0].day.as_deref(), Some("2026-11-30"));
    assert_eq!(restored.kept[0].rows(), 250);
    let rows = |sql: &str| count(&conn, sql);
    assert_eq!(
        rows("SELECT count(*) FROM fct_deliveries WHERE delivery_id LIKE 'MON-%'"),
        250
    );
    assert_eq!(
        rows("SELECT count(*) FROM fct_deliveries WHERE delivery_id LIKE 'BACKFILL-%'"),
        0
    );
    assert_eq!(rows("SELECT count(*) FROM fct_deliveries"), 40 + 10 + 250);
}

/// The same rule on a real PostgreSQL, through the warehouse's own calls: what the
/// backfill rebuilt is put back, what was loaded since stays, and a change since in the
/// rebuilt days is refused with its rows and days.
#[test]
fn postgres_restores_only_the_backfilled_days_and_refuses_a_change_since_in_them() {
    let Some(pg) = support::pg::start_or_skip("postgres_restores_only_the_backfilled_days") else {
        return;
    };
    pg.execute(
        "CREATE SCHEMA analytics;
         CREATE TABLE analytics.deliveries (id text PRIMARY KEY, delivered_at timestamptz, fee int);
         INSERT INTO analytics.deliveries
           SELECT 'd' || n, timestamptz '2026-11-26 00:00:00+00' + n * interval '1 hour', n
           FROM generate_series(0, 71) AS n;
         DELETE FROM analytics.deliveries WHERE delivered_at >= '2026-11-28' AND id <> 'd48';",
    );
    let warehouse = PostgresWarehouse::new(&pg.url, 2, Duration::from_secs(10)).unwrap();
    let relation = Relation::parse("analytics.deliveries").unwrap();
    let mut version = warehouse.snapshot_table(&relation, "INC-0009-P1").unwrap();
    version.scope = Some(BackfillScope {
        column: Some("delivered_at".into()),
        days: Some(("2026-11-28".into(), "2026-11-29".into())),
    });
    // The backfill fills Saturday; the engine prints the table once its run finished.
    pg.execute(
        "INSERT INTO analytics.deliveries
           SELECT 'd' || n, timestamptz '2026-11-26 00:00:00+00' + n * interval '1 hour', n
           FROM generate_series(49, 71) AS n;",
    );
    version.after = Some(
        warehouse
            .day_prints(&relation, Some("delivered_at"))
            .unwrap(),
    );
    let count = |sql: &str| -> i64 { pg.client().query_one(sql, &[]).unwrap().get(0) };

    // A late row changed on Saturday since: refused, with the rows and the day.
    pg.execute("UPDATE analytics.deliveries SET fee = 999 WHERE id = 'd50'");
    let refused = warehouse.restore_table(&relation, &version).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("24 rows on 2026-11-28 (24 now, 24 after the backfill)"),
        "{refused}"
    );
    assert_eq!(
        count("SELECT count(*) FROM analytics.deliveries WHERE fee = 999"),
        1
    );
    pg.execute("UPDATE analytics.deliveries SET fee = 50 WHERE id = 'd50'");

    // The next run loads Sunday: the undo puts Saturday back and keeps Sunday.
    pg.execute(
        "INSERT INTO analytics.deliveries
           SELECT 'n' || n, timestamptz '2026-11-29 00:00:00+00' + n * interval '1 minute', n
           FROM generate_series(0, 249) AS n;",
    );
    let restored = warehouse.restore_table(&relation, &version).unwrap();
    assert_eq!(restored.rows, 1, "Saturday as the copy holds it: d48 alone");
    assert_eq!(
        restored.kept.iter().map(|c| c.rows()).sum::<u64>(),
        250,
        "{restored:?}"
    );
    assert_eq!(
        count("SELECT count(*) FROM analytics.deliveries WHERE delivered_at >= '2026-11-28' AND delivered_at < '2026-11-29'"),
        1
    );
    assert_eq!(
        count("SELECT count(*) FROM analytics.deliveries WHERE id LIKE 'n%'"),
        250
    );
    assert_eq!(
        count("SELECT count(*) FROM analytics.deliveries"),
        48 + 1 + 250
    );
}
