use super::*;
use rusqlite::types::Value;

fn warehouse() -> (tempfile::TempDir, SqliteWarehouse) {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("wh.db");
    let raw = dir.path().join("raw.db");
    Connection::open(&main).unwrap();
    let conn = Connection::open(&raw).unwrap();
    conn.execute_batch(
        "CREATE TABLE orders (id INTEGER, zip_code VARCHAR(12));
         INSERT INTO orders VALUES (1, '12'), (2, '7');",
    )
    .unwrap();
    let attach = BTreeMap::from([("RAW".to_string(), raw)]);
    (dir, SqliteWarehouse::new(&main, attach))
}

#[test]
fn counts_and_columns_through_attached_schema() {
    let (_dir, wh) = warehouse();
    let rel = Relation::parse("RAW.orders").unwrap();
    assert_eq!(wh.row_count(&rel).unwrap(), 2);
    let cols = wh.columns(&rel).unwrap();
    assert_eq!(cols[1].data_type, "VARCHAR(12)");
    assert!(wh
        .columns(&Relation::parse("RAW.nope").unwrap())
        .unwrap()
        .is_empty());
}

#[test]
fn numeric_casts_fail_like_a_real_warehouse() {
    let (_dir, wh) = warehouse();
    let sql = "select cast(zip_code as integer) as s from RAW.orders";
    assert_eq!(wh.dry_run(sql).unwrap(), 2);
    wh.connect()
        .unwrap()
        .execute("INSERT INTO RAW.orders VALUES (3, 'N/A')", [])
        .unwrap();
    let err = wh.dry_run(sql).unwrap_err().to_string();
    assert!(
        err.contains("Numeric value 'N/A' is not recognized"),
        "{err}"
    );
    // A cast to text is untouched and still runs.
    assert_eq!(
        wh.dry_run("select cast(zip_code as varchar(12)) from RAW.orders")
            .unwrap(),
        3
    );
}

#[test]
fn a_dry_run_cannot_write() {
    let (_dir, wh) = warehouse();
    wh.connect()
        .unwrap()
        .execute_batch("CREATE TABLE main.t (id INTEGER); INSERT INTO main.t VALUES (1);")
        .unwrap();
    for sql in [
        "delete from t",
        "with x as (select 1) delete from t",
        "delete from RAW.orders returning 1",
        "insert into t values (2) returning id",
        "drop table t",
    ] {
        assert!(wh.dry_run(sql).is_err(), "{sql} ran");
    }
    let count = |rel: &str| wh.row_count(&Relation::parse(rel).unwrap()).unwrap();
    assert_eq!(count("t"), 1);
    assert_eq!(count("RAW.orders"), 2);
}

#[test]
fn rewrite_handles_nesting_and_leaves_other_casts() {
    assert_eq!(
        strict_casts("CAST(abs(cast(x AS int)) AS bigint)"),
        "dataward_strict_cast(abs(dataward_strict_cast(x, 'int')), 'bigint')"
    );
    assert_eq!(
        strict_casts("cast(x as text), broadcast(y)"),
        "cast(x as text), broadcast(y)"
    );
}

/// A payments table with ISO-text, epoch-number and date-only timestamps.
fn payments() -> (tempfile::TempDir, SqliteWarehouse) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wh.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE payments (id INTEGER, amount REAL, zip_code TEXT, at, day TEXT);
             INSERT INTO payments VALUES
               (1, 10.0, '1000', '2024-05-13T00:00:00Z', '2024-05-13'),
               (2, NULL, '1000', '2024-05-13T09:30:00Z', '2024-05-13'),
               (3, 12.0, NULL,   '2024-05-13T18:00:00Z', '2024-05-13'),
               (4, NULL, NULL,   '2024-05-14 08:00:00',  '2024-05-14'),
               (5, 14.0, '1000', 1715644800 + 13 * 3600, '2024-05-14'),
               (6, NULL, '1000', '2024-05-14T11:59:59Z', '2024-05-14'),
               (7, 16.0, '1000', '2024-05-12T23:00:00Z', '2024-05-12');",
        )
        .unwrap();
    (dir, SqliteWarehouse::new(&path, BTreeMap::new()))
}

fn day(text: &str) -> chrono::NaiveDate {
    parse_day(text).unwrap()
}

#[test]
fn missing_keys_counts_what_one_table_holds_on_a_day_that_the_other_has_on_none() {
    let (_dir, wh) = payments();
    let conn = wh.connect().unwrap();
    // The model holds payment 1 (Monday) and payment 4 (on Tuesday): of Monday's
    // 1, 2 and 3, it is missing 2 and 3, of one zip code (3's is null).
    conn.execute_batch(
        "CREATE TABLE fct (id INTEGER, zip_code TEXT, at TEXT);
         INSERT INTO fct VALUES (1, '1000', '2024-05-13T00:00:00Z'), (4, NULL, '2024-05-14');",
    )
    .unwrap();
    let (from, into) = (
        Relation::parse("payments").unwrap(),
        Relation::parse("fct").unwrap(),
    );
    let gap = |day: &str, also: &[String]| {
        wh.missing_keys(&KeyGap {
            from: &from,
            from_time: "at",
            into: &into,
            day: parse_day(day).unwrap(),
            key: "id",
            also,
        })
        .unwrap()
    };
    assert_eq!(gap("2024-05-13", &["zip_code".to_string()]), vec![2, 1]);
    // Tuesday: 5 and 6 missing (4 is held); 5 was stored as Unix seconds.
    assert_eq!(gap("2024-05-14", &[]), vec![2]);
    assert_eq!(gap("2024-05-20", &[]), vec![0]);
}

#[test]
fn daily_counts_split_each_day_at_the_time_of_day() {
    let (_dir, wh) = payments();
    let rel = Relation::parse("payments").unwrap();
    let noon = NaiveTime::from_hms_opt(12, 0, 0).unwrap();
    // From Monday 2024-05-13 00:00 UTC: Sunday's row is before the window.
    let counts = wh.daily_counts(&rel, "at", 1_715_558_400, noon).unwrap();
    assert_eq!(
        counts,
        vec![
            DayCount {
                day: day("2024-05-13"),
                rows: 3,
                before_cutoff: 2,
                at_midnight: 1
            },
            DayCount {
                day: day("2024-05-14"),
                rows: 3,
                before_cutoff: 2,
                at_midnight: 0
            },
        ]
    );
    // A date column: every row at midnight, all of them before any cutoff.
    let dates = wh.daily_counts(&rel, "day", 1_715_558_400, noon).unwrap();
    assert!(dates
        .iter()
        .all(|d| d.at_midnight == d.rows && d.before_cutoff == d.rows));
}

#[test]
fn null_counts_can_be_limited_to_rows_loaded_since() {
    let (_dir, wh) = payments();
    let rel = Relation::parse("payments").unwrap();
    let columns = ["amount".to_string(), "zip_code".to_string()];
    let all = wh.null_counts(&rel, &columns, None).unwrap();
    assert_eq!((all.rows, all.nulls.clone()), (7, vec![3, 2]));
    // Since Tuesday 2024-05-14 00:00 UTC: rows 4, 5 and 6.
    let recent = wh
        .null_counts(&rel, &columns, Some(("at", 1_715_644_800)))
        .unwrap();
    assert_eq!((recent.rows, recent.nulls), (3, vec![2, 1]));
    let none = wh
        .null_counts(&rel, &columns, Some(("at", 1_900_000_000)))
        .unwrap();
    assert_eq!((none.rows, none.nulls), (0, vec![0, 0]));
    // The timestamp column's name is quoted, never pasted: no rows match a column
    // that does not exist (SQLite reads an unknown quoted name as a string).
    let evil = wh.null_counts(&rel, &columns, Some(("at\" OR 1=1 --", 0)));
    assert!(!matches!(evil, Ok(ref c) if c.rows > 0), "{evil:?}");
}

#[test]
fn counts_the_values_that_would_not_cast() {
    let (_dir, wh) = warehouse();
    wh.connect()
        .unwrap()
        .execute_batch(
            "CREATE TABLE RAW.payments (id INTEGER, amount VARCHAR(12), paid REAL);
             INSERT INTO RAW.payments VALUES
               (1, '12', 1.5), (2, ' 7 ', 2), (3, '', NULL), (4, 'A-3', 3e10),
               (5, NULL, 4), (6, 'A-3', 5), (7, '1.5', 6), (8, '3000000000', 7),
               (9, 12, 8);",
        )
        .unwrap();
    let rel = Relation::parse("RAW.payments").unwrap();
    let count = |column: &str, target: &str| {
        wh.count_uncastable(&rel, column, target)
            .unwrap()
            .map(|u| (u.rows, u.examples))
    };
    let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect();
    // '' does not cast to an integer; NULL is not a value; 'A-3' counts twice.
    assert_eq!(
        count("amount", "integer"),
        Some((5, strings(&["", "1.5", "3000000000"])))
    );
    assert_eq!(
        count("amount", "BIGINT"),
        Some((4, strings(&["", "1.5", "A-3"])))
    );
    assert_eq!(
        count("amount", "numeric(10, 2)"),
        Some((3, strings(&["", "A-3"])))
    );
    assert_eq!(count("amount", "date").unwrap().0, 8);
    assert_eq!(count("amount", "varchar"), Some((0, Vec::new())));
    assert_eq!(count("amount", "timestamp"), None);
    // A stored real casts to an integer while it is in range.
    assert_eq!(
        count("paid", "integer"),
        Some((1, strings(&["30000000000.0"])))
    );
    // A column that is not there is the query's error, not a count.
    assert!(matches!(
        wh.count_uncastable(&rel, "nope", "integer"),
        Err(WarehouseError::Query(_))
    ));
    // It reads only.
    assert_eq!(wh.row_count(&rel).unwrap(), 9);
}

/// A mart in an attached schema: an integer key, a decimal, a short text, a column
/// with no declared type holding every storage class, and a generated column.
fn shipments() -> (tempfile::TempDir, SqliteWarehouse, Relation) {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("wh.db");
    let analytics = dir.path().join("analytics.db");
    Connection::open(&main).unwrap();
    Connection::open(&analytics)
        .unwrap()
        .execute_batch(
            "CREATE TABLE fct_shipments (
                 id INTEGER PRIMARY KEY, day TEXT NOT NULL, amount NUMERIC(10, 2),
                 carrier VARCHAR(12) CHECK (length(carrier) <= 12), payload,
                 doubled GENERATED ALWAYS AS (amount * 2));
             CREATE INDEX fct_shipments_day ON fct_shipments (day);
             INSERT INTO fct_shipments (id, day, amount, carrier, payload) VALUES
               (1, '2024-05-11', 10.5, 'ann', x'00ff'),
               (2, '2024-05-11', NULL, 'bob', 12),
               (3, '2024-05-12', 7, NULL, 'text'),
               (4, '2024-05-12', 3.25, 'cy', 2.5);",
        )
        .unwrap();
    let attach = BTreeMap::from([("ANALYTICS".to_string(), analytics)]);
    let rel = Relation::parse("ANALYTICS.fct_shipments").unwrap();
    (dir, SqliteWarehouse::new(&main, attach), rel)
}

/// Every row, every column (generated ones too), each value with its storage class.
fn contents(wh: &SqliteWarehouse, rel: &Relation) -> Vec<Vec<Value>> {
    let conn = wh.connect().unwrap();
    let mut stmt = conn
        .prepare(&format!("SELECT * FROM {} ORDER BY id", rel.quoted()))
        .unwrap();
    let width = stmt.column_count();
    stmt.query_map([], |r| (0..width).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The table's own definition and its indexes, as SQLite keeps them.
fn definition(wh: &SqliteWarehouse) -> Vec<String> {
    let conn = wh.connect().unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT sql FROM ANALYTICS.sqlite_schema
             WHERE tbl_name = 'fct_shipments' ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Restores as the engine does once a backfill's run has finished: the table as it
/// stands now printed as the table the backfill left, so nothing changed since.
fn restore_as_left(
    wh: &(impl Warehouse + ?Sized),
    rel: &Relation,
    version: &TableVersion,
) -> Result<u64, WarehouseError> {
    let mut version = version.clone();
    version.after = Some(wh.day_prints(rel, None).unwrap_or_default());
    wh.restore_table(rel, &version).map(|r| r.rows)
}

fn refusal<T: std::fmt::Debug>(result: Result<T, WarehouseError>) -> String {
    match result {
        Err(WarehouseError::Refused(message)) => message,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_version_puts_the_table_back_exactly() {
    let (_dir, wh, rel) = shipments();
    let before = contents(&wh, &rel);
    let defined = definition(&wh);
    let version = wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
    assert_eq!(version.table, "ANALYTICS.fct_shipments");
    assert_eq!(
        version.copy,
        "ANALYTICS.dataward_versions__analytics__fct_shipments__inc_0003_p1"
    );
    assert_eq!(version.rows, 4);
    assert!(version.taken_at.is_some(), "{version:?}");
    // The copy has the table's columns with their declared types; the generated
    // one is computed again on restore.
    let copy = Relation::parse(&version.copy).unwrap();
    let mut expected = wh.columns(&rel).unwrap();
    expected.retain(|c| c.name != "doubled");
    assert_eq!(wh.columns(&copy).unwrap(), expected);

    // The backfill goes wrong: a day deleted, values changed, a row added.
    wh.connect()
        .unwrap()
        .execute_batch(
            "DELETE FROM ANALYTICS.fct_shipments WHERE day = '2024-05-11';
             UPDATE ANALYTICS.fct_shipments SET amount = amount + 1, payload = 'x';
             INSERT INTO ANALYTICS.fct_shipments (id, day) VALUES (9, '2024-05-13');",
        )
        .unwrap();
    assert_ne!(contents(&wh, &rel), before);
    assert_eq!(restore_as_left(&wh, &rel, &version).unwrap(), 4);
    assert_eq!(contents(&wh, &rel), before);
    // The same table, not a new one: its definition and index are as they were.
    assert_eq!(definition(&wh), defined);
    // The copy stays until its retention ends, and restores again.
    assert_eq!(restore_as_left(&wh, &rel, &version).unwrap(), 4);
    assert_eq!(contents(&wh, &rel), before);

    // A table in the main database gets its copy there.
    let conn = wh.connect().unwrap();
    conn.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2);")
        .unwrap();
    let t = Relation::parse("t").unwrap();
    let version = wh.snapshot_table(&t, "INC-0003-P1").unwrap();
    assert_eq!(version.copy, "main.dataward_versions__main__t__inc_0003_p1");
    conn.execute("DELETE FROM t", []).unwrap();
    assert_eq!(restore_as_left(&wh, &t, &version).unwrap(), 2);
    assert_eq!(wh.row_count(&t).unwrap(), 2);
}

#[test]
fn a_version_is_never_overwritten() {
    let (_dir, wh, rel) = shipments();
    let before = contents(&wh, &rel);
    let version = wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
    wh.connect()
        .unwrap()
        .execute("DELETE FROM ANALYTICS.fct_shipments WHERE id > 1", [])
        .unwrap();
    // The same tag, however spelled, names the same version.
    for tag in ["INC-0003-P1", "inc_0003_p1"] {
        let message = refusal(wh.snapshot_table(&rel, tag));
        assert!(message.contains(&version.copy), "{message}");
    }
    // The first copy still holds the table as it was.
    assert_eq!(restore_as_left(&wh, &rel, &version).unwrap(), 4);
    assert_eq!(contents(&wh, &rel), before);
    // Another tag is another version.
    assert_eq!(wh.snapshot_table(&rel, "INC-0003-P2").unwrap().rows, 4);
}

#[test]
fn a_version_is_found_again_by_its_tag() {
    let (_dir, wh, rel) = shipments();
    assert_eq!(wh.find_version(&rel, "INC-0003-P1").unwrap(), None);
    let version = wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
    wh.connect()
        .unwrap()
        .execute("DELETE FROM ANALYTICS.fct_shipments WHERE id > 1", [])
        .unwrap();
    let found = wh.find_version(&rel, "inc_0003_p1").unwrap().unwrap();
    assert_eq!((&found.copy, found.rows), (&version.copy, version.rows));
    assert_eq!(found.taken_at, None);
    assert_eq!(wh.find_version(&rel, "INC-0003-P2").unwrap(), None);
}

#[test]
fn a_restore_is_refused_when_a_column_changed_type() {
    let (_dir, wh, rel) = shipments();
    let version = wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
    // SQLite's way to change a column's type: a new table in the old one's place.
    wh.connect()
        .unwrap()
        .execute_batch(
            "BEGIN;
             CREATE TABLE ANALYTICS.new_shipments (
                 id INTEGER PRIMARY KEY, day TEXT NOT NULL, amount NUMERIC(10, 2),
                 carrier INTEGER, payload, doubled GENERATED ALWAYS AS (amount * 2));
             INSERT INTO ANALYTICS.new_shipments (id, day, amount, carrier, payload)
               SELECT id, day, amount, carrier, payload FROM ANALYTICS.fct_shipments
               WHERE id < 3;
             DROP TABLE ANALYTICS.fct_shipments;
             ALTER TABLE ANALYTICS.new_shipments RENAME TO fct_shipments;
             COMMIT;",
        )
        .unwrap();
    let changed = contents(&wh, &rel);
    let message = refusal(restore_as_left(&wh, &rel, &version));
    assert_eq!(
        message,
        format!(
            "cannot restore ANALYTICS.fct_shipments from {}: column carrier is \
             INTEGER in the table but VARCHAR(12) in the copy",
            version.copy
        )
    );
    assert_eq!(contents(&wh, &rel), changed);
}

#[test]
fn only_the_tables_own_unchanged_copy_is_restored() {
    let (_dir, wh, rel) = shipments();
    let version = wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
    let conn = wh.connect().unwrap();
    conn.execute("DELETE FROM ANALYTICS.fct_shipments WHERE id = 4", [])
        .unwrap();
    let changed = contents(&wh, &rel);

    // A version of another table.
    conn.execute_batch("CREATE TABLE other (id INTEGER);")
        .unwrap();
    let other = Relation::parse("other").unwrap();
    let message = refusal(restore_as_left(&wh, &other, &version));
    assert!(message.contains("ANALYTICS.fct_shipments"), "{message}");
    // A "version" whose copy is not one of ours: nothing is read or dropped.
    for copy in [
        "ANALYTICS.fct_shipments",
        "ANALYTICS.dataward_versions__X",
        "other",
    ] {
        let forged = TableVersion {
            copy: copy.to_string(),
            ..version.clone()
        };
        refusal(restore_as_left(&wh, &rel, &forged));
        refusal(wh.drop_version(&forged));
    }
    // A copy that changed since it was taken is not the table as it was.
    conn.execute(
        &format!(
            "INSERT INTO {} (id, day) VALUES (7, 'x')",
            Relation::parse(&version.copy).unwrap().quoted()
        ),
        [],
    )
    .unwrap();
    let message = refusal(restore_as_left(&wh, &rel, &version));
    assert!(
        message.contains("5 rows") && message.contains('4'),
        "{message}"
    );
    assert_eq!(contents(&wh, &rel), changed);
    // A copy that is gone.
    wh.drop_version(&version).unwrap();
    let message = refusal(restore_as_left(&wh, &rel, &version));
    assert!(
        message.contains("missing") && message.contains(&version.copy),
        "{message}"
    );
    assert_eq!(contents(&wh, &rel), changed);
    // No table, no version of it.
    refusal(wh.snapshot_table(&Relation::parse("ANALYTICS.nope").unwrap(), "t1"));
    conn.execute_batch("CREATE VIEW v AS SELECT 1 AS a")
        .unwrap();
    refusal(wh.snapshot_table(&Relation::parse("v").unwrap(), "t1"));
}

#[test]
fn dropping_a_version_twice_is_fine() {
    let (_dir, wh, rel) = shipments();
    let version = wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
    let copy = Relation::parse(&version.copy).unwrap();
    assert_eq!(wh.row_count(&copy).unwrap(), 4);
    wh.drop_version(&version).unwrap();
    assert!(wh.columns(&copy).unwrap().is_empty());
    wh.drop_version(&version).unwrap();
    // The table itself is untouched, and the tag is free again.
    assert_eq!(wh.row_count(&rel).unwrap(), 4);
    wh.snapshot_table(&rel, "INC-0003-P1").unwrap();
}

#[test]
fn a_hostile_tag_or_type_is_never_sql() {
    let (_dir, wh, rel) = shipments();
    let conn = wh.connect().unwrap();
    conn.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
        .unwrap();
    let version = wh.snapshot_table(&rel, "x\"; drop table t; --").unwrap();
    assert_eq!(
        version.copy,
        "ANALYTICS.dataward_versions__analytics__fct_shipments__x_drop_table_t"
    );
    assert_eq!(wh.row_count(&Relation::parse("t").unwrap()).unwrap(), 1);
    assert_eq!(restore_as_left(&wh, &rel, &version).unwrap(), 4);
    // A declared type the copy could only repeat by pasting it is refused.
    conn.execute_batch("CREATE TABLE odd (a \"int\"\"); drop table t; --\")")
        .unwrap();
    let message = refusal(wh.snapshot_table(&Relation::parse("odd").unwrap(), "t1"));
    assert!(message.contains("column a"), "{message}");
    assert_eq!(wh.row_count(&Relation::parse("t").unwrap()).unwrap(), 1);
}

#[test]
fn a_missing_file_is_unreachable_not_an_error() {
    let wh = SqliteWarehouse::new(Path::new("/nonexistent/wh.db"), BTreeMap::new());
    assert!(matches!(
        wh.row_count(&Relation::parse("t").unwrap()),
        Err(WarehouseError::Unreachable(_))
    ));
}
