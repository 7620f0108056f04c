//! The store's two implementations behave the same: every area's checks (in
//! store_conformance/areas.rs) run on a fresh SQLite state database and on a fresh team
//! in a real throwaway PostgreSQL, and the engine cannot tell which it has. What is
//! written reads back the same, in the same order; intents and outbox rows move from
//! pending to done alike; a transaction that fails leaves nothing. On PostgreSQL every
//! area's write is fenced: refused outside a write transaction, and refused by term once
//! another engine leads the team.
//!
//! PostgreSQL is skipped (with a message) when its server binaries are missing, unless
//! DATAWARD_REQUIRE_ALL=1. The areas are checks of one test each per implementation, so
//! one server serves them all (a team per area).

#[path = "store_conformance/areas.rs"]
mod areas;
mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use areas::*;
use dataward::config::CheckKind;
use dataward::lineage::openlineage::Position;
use dataward::store::postgres::{Contender, PgState, Role, Source};
use dataward::store::prelude::*;
use support::pg::{start_or_skip, PgServer};

type Check = fn(&dyn Store);
type Write = fn(&dyn Store) -> Result<()>;

/// Every area's behaviour checks.
const AREAS: &[(&str, Check)] = &[
    ("incidents", incidents),
    ("requests", requests),
    ("intents", intents),
    ("outbox", outbox),
    ("observations", observations),
    ("minutes", minutes),
    ("baselines", baselines),
    ("quiet", quiet),
    ("access and waves", access_and_waves),
    ("lineage events", lineage_events),
];

/// One write of each area, on an empty store: what the fence must stop.
const WRITES: &[(&str, Write)] = &[
    ("incident", |s| s.put_incident("INC-0001", "open", "{}")),
    ("request", |s| s.put_request("INC-0001-P1", "{}")),
    ("request outcome", |s| {
        s.keep_request_outcome("req-1", 1001, at("2026-03-01T09:00:00Z"), "{}")
    }),
    ("intent", |s| {
        s.add_intent(&intent("INC-0001-P1", None)).map(drop)
    }),
    ("held schedule", |s| {
        s.keep_held_schedule("P1", "job", "{}", at("2026-03-01T09:00:00Z"))
    }),
    ("outbox", |s| {
        s.enqueue_alert("pd", "pagerduty", &alert("k", "opened", 1), 0)
            .map(drop)
    }),
    ("observation", |s| {
        s.insert_observation(&observation("orders", 1.0, "2026-03-01T09:00:00Z"))
    }),
    ("observation mark", |s| s.start_observation_mark("mark")),
    ("minutes", |s| {
        s.set_minute_source("orders", "shop.orders", 0)
    }),
    ("minute day", |s| s.insert_day("orders", 1, 2, &[1, 2])),
    ("volume restart", |s| {
        s.add_volume_restart("orders", "2026-03-01", 2.0, "INC-0001", 3)
    }),
    ("learned restart", |s| {
        s.add_learned_restart(&learned(1, 2, 3))
    }),
    ("snooze", |s| s.add_snooze(&snooze(3, "orders"))),
    ("baseline leave", |s| {
        s.leave_baselines(
            "orders",
            at("2026-03-01T00:00:00Z"),
            at("2026-03-02T00:00:00Z"),
            "x",
        )
    }),
    ("access request", |s| s.put_access_request("ACC-0001", "{}")),
    ("wave sign-off", |s| s.put_wave_sign_off("MIG-a-1", "{}")),
    ("lineage event", |s| {
        s.insert_lineage_events(
            &[(
                "test".into(),
                event("r1", "START", "2026-03-01T09:00:00Z", Some(5)),
            )],
            at("2026-03-01T09:00:00Z"),
        )
        .map(drop)
    }),
    ("lineage file", |s| {
        s.set_lineage_file_position(
            "a.jsonl",
            Position {
                offset: 3,
                lines: 1,
                file_id: Some(7),
            },
        )
    }),
];

#[test]
fn every_area_behaves_alike_on_sqlite() {
    let mut failed = Vec::new();
    for (area, check) in AREAS {
        let dir = tempfile::tempdir().unwrap();
        let conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
        if let Err(why) = catch(|| check(&conn)) {
            failed.push(format!("{area}: {why}"));
        }
    }
    assert!(failed.is_empty(), "on SQLite:\n{}", failed.join("\n"));
}

#[test]
fn every_area_behaves_alike_on_postgresql() {
    let Some(pg) = start_or_skip("every_area_behaves_alike_on_postgresql") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for (n, (area, check)) in AREAS.iter().enumerate() {
        let (_contender, state) = lead(&pg, &format!("team-{n}"), root.path());
        if let Err(why) = catch(|| check(&state)) {
            failed.push(format!("{area}: {why}"));
        }
    }
    assert!(failed.is_empty(), "on PostgreSQL:\n{}", failed.join("\n"));
    // Each area wrote as a team of its own: a team that wrote nothing reads nothing of
    // theirs, as a fresh SQLite database does.
    let (_contender, elsewhere) = lead(&pg, "elsewhere", root.path());
    let dir = tempfile::tempdir().unwrap();
    let fresh = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    assert_eq!(
        everything(&elsewhere),
        everything(&fresh),
        "another team's rows seen"
    );
}

/// A transaction that fails midway keeps nothing of any area's write, on either store.
#[test]
fn a_failed_transaction_leaves_nothing_in_any_area() {
    let dir = tempfile::tempdir().unwrap();
    let conn = dataward::store::open(&dir.path().join("dataward.db")).unwrap();
    rolled_back_leave_nothing(&conn, "SQLite");
    let Some(pg) = start_or_skip("a_failed_transaction_leaves_nothing_in_any_area") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (_contender, state) = lead(&pg, "payments", root.path());
    rolled_back_leave_nothing(&state, "PostgreSQL");
}

fn rolled_back_leave_nothing(s: &dyn Store, name: &str) {
    let empty = everything(s);
    s.begin_write().unwrap();
    for (what, write) in WRITES {
        write(s).unwrap_or_else(|e| panic!("{name}: {what}: {e:#}"));
    }
    assert_ne!(everything(s), empty, "{name}: the writes are seen inside");
    s.rollback_write().unwrap();
    assert_eq!(
        everything(s),
        empty,
        "{name}: a rolled back transaction kept something"
    );
    // And a key written twice fails the transaction, which then keeps nothing.
    let twice = write(s, |s| {
        s.keep_held_schedule("P1", "job", "{}", at("2026-03-01T09:00:00Z"))?;
        s.keep_held_schedule("P1", "job", "{}", at("2026-03-01T09:00:00Z"))
    });
    assert!(twice.is_err(), "{name}: a schedule held twice");
    assert_eq!(s.held_schedule("P1").unwrap(), None, "{name}");
}

/// On PostgreSQL every area's write is fenced: outside a write transaction it is
/// refused, not written unfenced; once another engine leads the team under a higher
/// term, the deposed engine's transaction is refused with who leads; nothing of either
/// is written.
#[test]
fn every_write_on_postgresql_is_fenced_by_the_term() {
    let Some(pg) = start_or_skip("every_write_on_postgresql_is_fenced_by_the_term") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let lease = Duration::from_millis(500);
    let state = PgState::open(&source(&pg), "payments", &root.path().join("old"), lease).unwrap();
    let mut old = Contender::new(source(&pg), "payments", "old", "old-host", lease);
    let Role::Leader { term } = old.step().unwrap() else {
        panic!("old should lead: nobody else runs");
    };
    state.set_term(Some(term));
    let empty = everything(&state);

    for (what, write) in WRITES {
        let refused = format!("{:#}", write(&state).expect_err(what));
        assert!(
            refused.contains("outside a write transaction"),
            "{what}: {refused}"
        );
    }
    assert_eq!(
        everything(&state),
        empty,
        "a write outside a transaction was kept"
    );

    // The old leader stops renewing (its session ends); a new one takes over.
    drop(old);
    let mut new = Contender::new(source(&pg), "payments", "new", "new-host", lease);
    let new_term = wait_to_lead(&mut new);
    assert!(new_term > term);
    for (what, write) in WRITES {
        let tried = (|| -> Result<()> {
            state.begin_write()?;
            write(&state)?;
            state.commit_write()
        })();
        let refused = format!("{:#}", tried.expect_err(what));
        assert!(
            refused.contains(&format!(
                "deposed: term {new_term} now leads (host new-host)"
            )),
            "{what}: {refused}"
        );
        assert!(
            !state.in_write(),
            "{what}: the refused transaction was left open"
        );
    }
    assert_eq!(
        everything(&state),
        empty,
        "a deposed engine's write was kept"
    );
}

// ---- helpers ----

/// Everything every area reads back, to compare before and after.
fn everything(s: &dyn Store) -> String {
    let observations = s.observations_after(0).unwrap();
    format!(
        "{:?}",
        (
            (
                s.incident_docs().unwrap(),
                s.request_docs().unwrap(),
                s.request_outcome("req-1", 1001).unwrap()
            ),
            (
                s.pending_intents().unwrap().len(),
                s.held_schedule("P1").unwrap(),
                s.meta("mark").unwrap()
            ),
            (s.outbox_destinations().unwrap().len(), observations.len()),
            (
                s.minute_source("orders").unwrap(),
                s.days("orders").unwrap()
            ),
            (
                s.volume_restarts("orders").unwrap(),
                s.learned_restart("orders", CheckKind::RowCount, "")
                    .unwrap()
            ),
            (
                s.running_snoozes().unwrap(),
                s.left_baselines("orders").unwrap()
            ),
            (
                s.access_request_docs().unwrap(),
                s.wave_sign_offs().unwrap()
            ),
            (
                s.lineage_event_count().unwrap(),
                s.lineage_file_position("a.jsonl").unwrap()
            ),
        )
    )
}

fn catch(check: impl FnOnce()) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn source(pg: &PgServer) -> Source {
    Source {
        url: pg.url.clone(),
        named_by: "test: [state] url_env (TEST_STATE_URL)".to_string(),
    }
}

/// An engine leading `team`, its host's data directory under `root`.
fn lead(pg: &PgServer, team: &str, root: &Path) -> (Contender, PgState) {
    let lease = Duration::from_secs(60);
    let state = PgState::open(&source(pg), team, &root.join(team), lease).unwrap();
    let mut contender = Contender::new(source(pg), team, team, "this-host", lease);
    let term = wait_to_lead(&mut contender);
    state.set_term(Some(term));
    (contender, state)
}

fn wait_to_lead(contender: &mut Contender) -> u64 {
    for _ in 0..600 {
        if let Role::Leader { term } = contender.step().unwrap() {
            return term;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no lead within a minute");
}
