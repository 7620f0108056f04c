//! Migration waves on a real PostgreSQL server started by the test: a wave whose new
//! side lost a column fails parity on that table, its gate stays closed and its
//! sign-off is refused; after the fix parity holds, the owner signs off on the parity's
//! hash and the gate opens; a later change to either side changes the hash and closes
//! the gate again until the owner signs off anew.
//! Skips (with a message) when the server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1.

#[path = "support/pg.rs"]
mod pg;

use dataward::clock::Timestamp;
use dataward::config::Config;
use dataward::migration::parity::{read_wave, WaveParity};
use dataward::migration::{gate, may_sign_off, Gate, SignOff};
use dataward::warehouse::{self, Warehouse, WarehouseError};
use pg::{start_or_skip, PgServer};

const URL_ENV: &str = "DW_MIGRATION_TEST_PG_URL";

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
    std::env::set_var(URL_ENV, &pg.url);
    let config = Config::parse(PLAN, std::path::Path::new("dataward.toml")).unwrap();

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
