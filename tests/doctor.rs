//! `dataward doctor` on the config `dataward init` wrote for a dbt project of our own,
//! built by real dbt into a throwaway PostgreSQL (tests/support/dbt.rs), logging in as
//! a role that may only read: every line ✓ and exit 0; then, after the test drops a
//! table, revokes a grant and loosens the config's mode, a ✗ on exactly those lines with
//! the server's error and what to do, and exit 1. Needs dbt (the .ci/dbt.sh venv) and
//! PostgreSQL server binaries; skips without them unless DATAWARD_REQUIRE_ALL=1.

mod support;

use std::os::unix::fs::PermissionsExt;

use support::dbt::{dbt_or_skip, text, Shop};
use support::pg::start_or_skip;

/// The report's line for `what` (`✓ what  detail`), and the fix line under it, if any.
fn line<'a>(report: &'a str, what: &str) -> (&'a str, Option<&'a str>) {
    let lines: Vec<&str> = report.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.get(4..)
                .is_some_and(|rest| rest.starts_with(&format!("{what} ")))
        })
        .unwrap_or_else(|| panic!("no line for {what} in\n{report}"));
    let fix = lines
        .get(at + 1)
        .filter(|next| next.trim_start().starts_with('→'));
    (lines[at], fix.copied())
}

#[test]
fn doctor_is_all_ticks_then_names_the_dropped_table_and_the_revoked_grant() {
    let test = "doctor_is_all_ticks_then_names_the_dropped_table_and_the_revoked_grant";
    let Some(dbt) = dbt_or_skip(test) else { return };
    let Some(pg) = start_or_skip(test) else {
        return;
    };
    let shop = Shop::new(&pg, &dbt);
    shop.build();
    let output = shop.init(&[]);
    assert!(output.status.success(), "{:?}", text(&output));
    // dataward reads as a role that may only read what it watches.
    pg.execute(
        "CREATE ROLE watcher LOGIN;
         GRANT USAGE ON SCHEMA raw, analytics TO watcher;
         GRANT SELECT ON ALL TABLES IN SCHEMA raw, analytics TO watcher;",
    );
    let url = format!("postgresql://watcher@127.0.0.1:{}/postgres", pg.port);
    let config = shop.config();
    let doctor = || {
        shop.dataward(
            &[
                "--data-dir",
                shop.data().to_str().unwrap(),
                "doctor",
                "--config",
                config.to_str().unwrap(),
            ],
            &[("DATAWARD_SHOP_URL", &url)],
        )
    };

    let output = doctor();
    let (report, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{report}\n{stderr}");
    assert!(!report.lines().any(|l| l.starts_with('✗')), "{report}");
    assert!(report.ends_with(": all good\n"), "{report}");
    let (warehouse, _) = line(&report, "warehouse shop");
    assert!(
        warehouse.contains(&format!(
            "reachable as watcher@127.0.0.1:{}/postgres ($DATAWARD_SHOP_URL)",
            pg.port
        )),
        "{warehouse}"
    );
    let (orders, _) = line(&report, "monitor raw.orders");
    assert!(orders.starts_with("✓ "), "{orders}");
    assert!(
        orders.contains("raw.orders: 5 columns, _loaded_at timestamp with time zone"),
        "{orders}"
    );
    assert!(
        orders.contains("row_count, schema, freshness, volume plans ("),
        "{orders}"
    );
    for what in [
        "monitor dim_customers",
        "monitor fct_events",
        "monitor billing.payments",
        "manifest",
        "catalog",
        "notes",
        "engine",
    ] {
        let (found, _) = line(&report, what);
        assert!(found.starts_with("✓ "), "{found}");
    }
    assert!(
        line(&report, "notes").0.contains("every name resolves"),
        "{report}"
    );
    assert!(
        line(&report, "engine").0.contains("none runs on"),
        "{report}"
    );

    // A table is dropped, a grant revoked, and the config made writable by its group.
    pg.execute(
        "DROP TABLE analytics.dim_customers;
         REVOKE SELECT ON raw.orders FROM watcher;",
    );
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o660)).unwrap();
    let output = doctor();
    let (report, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}\n{stderr}");
    let (dropped, fix) = line(&report, "monitor dim_customers");
    assert!(
        dropped.starts_with("✗ ")
            && dropped.contains("analytics.dim_customers: 42P01: relation \"analytics.dim_customers\" does not exist"),
        "{dropped}"
    );
    assert!(
        fix.unwrap()
            .contains("the table is not there: build it (`dbt build`"),
        "{report}"
    );
    let (revoked, fix) = line(&report, "monitor raw.orders");
    assert!(
        revoked.starts_with("✗ ")
            && revoked.contains("raw.orders: 42501: permission denied for table orders"),
        "{revoked}"
    );
    assert!(
        fix.unwrap()
            .contains("GRANT SELECT ON \"raw\".\"orders\" TO watcher;"),
        "{report}"
    );
    let loose = report
        .lines()
        .find(|l| l.starts_with("✗ permissions"))
        .unwrap_or_else(|| panic!("no permissions cross in\n{report}"));
    assert!(
        loose.contains("is writable by its group (mode 660)"),
        "{loose}"
    );
    // Everything else still holds.
    for what in [
        "warehouse shop",
        "monitor raw.events",
        "monitor fct_events",
        "manifest",
        "notes",
    ] {
        assert!(line(&report, what).0.starts_with("✓ "), "{what}: {report}");
    }
    assert!(report.ends_with(" ✓, 3 ✗\n"), "{report}");

    // The variable the config names is not set: the warehouse line says which, and its
    // monitors are not checked.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let output = shop.dataward(
        &[
            "--data-dir",
            shop.data().to_str().unwrap(),
            "doctor",
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let (report, _) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}");
    let (warehouse, fix) = line(&report, "warehouse shop");
    assert!(
        warehouse.contains("DATAWARD_SHOP_URL is not set"),
        "{warehouse}"
    );
    assert!(
        fix.unwrap().contains("export DATAWARD_SHOP_URL="),
        "{report}"
    );
    assert!(
        line(&report, "monitor fct_events")
            .0
            .contains("not checked: warehouse shop did not answer"),
        "{report}"
    );
}
