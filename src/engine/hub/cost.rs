//! What a change to one incident costs the hub, on a real engine with real incidents.

#![cfg(test)]

use super::*;
use crate::config::Config;
use crate::engine::api::Command;
use std::sync::mpsc;

const INCIDENTS: usize = 12;

/// An engine whose every monitored table is far below its recorded row count, so
/// each opens an incident on the first tick.
fn engine_with_incidents(dir: &std::path::Path) -> (Engine, Actor) {
    let me = Actor::current();
    let wh = rusqlite::Connection::open(dir.join("wh.db")).unwrap();
    let mut config = format!(
        "[warehouse.local]\nkind = \"sqlite\"\npath = \"wh.db\"\n\n\
         [people.{:?}]\nname = \"on call\"\nroles = [\"owner\"]\n\n\
         [[domain]]\nname = \"all\"\ncovers = [\"*\"]\nowners = [\"owner\"]\n\n",
        me.user.clone().unwrap_or_default()
    );
    for t in 0..INCIDENTS {
        wh.execute_batch(&format!(
            "CREATE TABLE t{t} (id INTEGER); INSERT INTO t{t} VALUES (1);"
        ))
        .unwrap();
        config.push_str(&format!(
            "[[monitor]]\nwarehouse = \"local\"\ntable = \"t{t}\"\nchecks = [\"row_count\"]\n\
             every = \"1h\"\nexpected_rows = 100000\n\n"
        ));
    }
    let path = dir.join("dataward.toml");
    std::fs::write(&path, &config).unwrap();
    let config = Config::parse(&config, &path).unwrap();
    let state = crate::store::open(&dir.join("dataward.db")).unwrap();
    let mut engine = Engine::new(config, state, None, &me).unwrap();
    engine.tick(crate::clock::Clock::wall().naive()).unwrap();
    (engine, me)
}

/// A client attached to `hub` as the socket attaches one, with its outbox.
fn attach(hub: &mut Hub, client: ClientId, read_only: bool) -> Outbox {
    let outbox = Outbox::new();
    let message = HubMessage::Attach {
        client,
        actor: Actor::current(),
        who: format!("client {client}"),
        read_only,
        outbox: outbox.clone(),
    };
    hub.handle(message, &mut crate::engine::live::WallClock::new())
        .unwrap();
    outbox
}

/// Who is attached, as the last presence list waiting in `outbox` says.
fn last_presence(outbox: &Outbox) -> Vec<PresenceView> {
    outbox.close();
    let mut last = Vec::new();
    while let Some(item) = outbox.next() {
        if let ServerMessage::Presence { attached } = &item.message {
            last = attached.clone();
        }
    }
    last
}

#[test]
fn a_flood_of_presence_reaches_the_others_at_most_once_an_interval_and_its_latest_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = engine_with_incidents(dir.path());
    let (tx, inbox) = mpsc::channel();
    let mut hub = Hub::new(engine, inbox, tx, Box::new(|_| {}));
    hub.publish(false);
    let ids: Vec<String> = (hub.published.snapshot.incidents.iter())
        .map(|i| i.id.clone())
        .collect();
    let watcher = attach(&mut hub, 1, false);
    let flooder = attach(&mut hub, 2, true);
    let before = hub.presence_broadcasts;

    // A thousand changes within one interval (after the attaches' own): one list
    // goes out, the rest wait.
    let at = Instant::now() + PRESENCE_EVERY;
    for n in 0..1000 {
        flooder.tell_presence(Some(ids[n % ids.len()].clone()), None);
        hub.presence(2, at);
    }
    assert_eq!(
        hub.presence_broadcasts - before,
        1,
        "one list to everyone for a thousand changes within {PRESENCE_EVERY:?}"
    );
    // Once the interval is over, the latest goes out; nothing is lost.
    hub.flush_presence(at + PRESENCE_EVERY);
    assert_eq!(hub.presence_broadcasts - before, 2);
    hub.flush_presence(at + PRESENCE_EVERY * 3);
    assert_eq!(hub.presence_broadcasts - before, 2, "nothing new to send");
    let seen = last_presence(&watcher);
    let flooding = seen.iter().find(|p| p.who == "client 2").unwrap();
    assert_eq!(flooding.viewing.as_ref(), Some(&ids[999 % ids.len()]));
}

#[test]
fn a_change_to_one_incident_builds_the_view_of_that_incident_only() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, me) = engine_with_incidents(dir.path());
    let (tx, inbox) = mpsc::channel();
    let mut hub = Hub::new(engine, inbox, tx, Box::new(|_| {}));
    hub.publish(false);
    let incidents = hub.published.snapshot.incidents.clone();
    assert_eq!(incidents.len(), INCIDENTS, "every table opened one");

    let before = hub.engine.views_built();
    let events = hub.engine.handle(
        Command::Resolve {
            incident: incidents[3].id.clone(),
            reason: "loaded by hand".into(),
        },
        &me,
    );
    assert!(!events.is_empty(), "the resolve did something");
    hub.publish(false);
    let resolved = &hub.published.snapshot.incidents[3];
    assert_eq!(
        resolved.status,
        crate::engine::api::IncidentStatus::Resolved
    );
    assert_eq!(
        hub.engine.views_built() - before,
        1,
        "one incident changed, so one view is built, not one per incident"
    );
}

#[test]
fn the_state_is_built_whole_for_a_client_attaching_never_for_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, me) = engine_with_incidents(dir.path());
    let (tx, inbox) = mpsc::channel();
    let mut hub = Hub::new(engine, inbox, tx, Box::new(|_| {}));
    hub.publish(false);
    let console = attach(&mut hub, 1, false);
    assert!(hub.published.whole.is_some(), "built for the one attaching");
    let incidents = hub.published.snapshot.incidents.clone();
    for incident in incidents.iter().take(3) {
        hub.engine.handle(
            Command::Resolve {
                incident: incident.id.clone(),
                reason: "loaded by hand".into(),
            },
            &me,
        );
        hub.publish(false);
        assert!(
            hub.published.whole.is_none(),
            "a change to one incident built the whole state"
        );
    }
    console.close();
    let mut seen = Vec::new();
    while let Some(item) = console.next() {
        match &item.message {
            ServerMessage::Snapshot { version, .. } => seen.push(format!("snapshot {version}")),
            ServerMessage::Change(c) => seen.push(format!("change {}", c.version)),
            _ => {}
        }
    }
    let version = hub.published.version;
    assert_eq!(
        seen,
        [
            format!("snapshot {}", version - 3),
            format!("change {}", version - 2),
            format!("change {}", version - 1),
            format!("change {version}"),
        ]
    );
}
