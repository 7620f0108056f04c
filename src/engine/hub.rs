//! The engine's one thread. Every input arrives here as a message: a client attaching,
//! leaving, asking or showing what it looks at; news from the poller; the clock. Each is
//! handled in turn; after any change one snapshot is made, serialized once, and offered
//! to every attached client, a slow one getting only the latest. Consoles in this
//! process and on the socket speak the same messages.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::api::{
    Event, Outcome, PresenceView, Refusal, RefusalKind, Reply, Request, ServerMessage,
    PROTOCOL_VERSION,
};
use super::Engine;
use crate::approve::Actor;

pub type ClientId = u64;

pub enum HubMessage {
    /// A client passed the hello: from now on it gets every snapshot.
    Attach {
        client: ClientId,
        actor: Actor,
        /// How the others see it: the person's name, or `uid N` for an observer.
        who: String,
        read_only: bool,
        outbox: Outbox,
    },
    Detach {
        client: ClientId,
    },
    Request {
        client: ClientId,
        request: Request,
    },
    Presence {
        client: ClientId,
        viewing: Option<String>,
        deciding: Option<String>,
    },
    /// A read only the engine can answer (`Engine::answer`).
    Ask {
        client: ClientId,
        id: u64,
        question: super::api::Question,
    },
    /// The poller stored new observations.
    Observed,
    /// What the orchestrator said, read in the background.
    Scheduler(super::orchestrator::Reading),
    /// How far a slow first poll has got.
    FirstPoll(super::api::FirstPoll),
    /// The alert relay marked an outbox row: clients see the outbox again.
    OutboxChanged,
    /// Finish the work in hand and return (SIGTERM).
    Stop,
}

/// What moves the engine between messages: the wall clock, or the demo's story.
pub trait Driver {
    /// When the next turn is due.
    fn next_turn(&self) -> Instant;
    /// One turn of the clock.
    fn turn(&mut self, engine: &mut Engine) -> Result<Vec<Event>>;
    /// Something new is stored (observations): act on it without moving the clock.
    fn react(&mut self, engine: &mut Engine) -> Result<Vec<Event>>;
    /// The story is over (demo only).
    fn finished(&self) -> bool {
        false
    }
}

/// One message on its way to a client, serialized at most once however many clients
/// it goes to.
pub struct Outgoing {
    pub message: ServerMessage,
    bytes: OnceLock<Vec<u8>>,
}

impl Outgoing {
    pub fn new(message: ServerMessage) -> Arc<Outgoing> {
        Arc::new(Outgoing {
            message,
            bytes: OnceLock::new(),
        })
    }

    /// The whole frame, as the socket sends it.
    pub fn frame(&self) -> &[u8] {
        self.bytes
            .get_or_init(|| super::wire::encode(&self.message))
    }
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Arc<Outgoing>>,
    /// Where the unsent snapshot sits in `items`, if one does: a newer one replaces it.
    snapshot_at: Option<usize>,
    closed: bool,
}

/// What waits to be sent to one client. Replies keep their order; snapshots collapse
/// to the newest, so a client that reads slowly costs the engine nothing.
#[derive(Clone, Default)]
pub struct Outbox(Arc<(Mutex<Queue>, Condvar)>);

impl Outbox {
    pub fn new() -> Outbox {
        Outbox::default()
    }

    pub fn push(&self, item: Arc<Outgoing>) {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        queue.items.push_back(item);
        ready.notify_one();
    }

    pub fn offer_snapshot(&self, item: Arc<Outgoing>) {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        match queue.snapshot_at {
            Some(at) => queue.items[at] = item,
            None => {
                queue.snapshot_at = Some(queue.items.len());
                queue.items.push_back(item);
            }
        }
        ready.notify_one();
    }

    /// No more messages: `next` returns None once the queue is drained.
    pub fn close(&self) {
        let (queue, ready) = &*self.0;
        queue.lock().expect("outbox lock").closed = true;
        ready.notify_all();
    }

    /// The next message, waiting for one; None when closed and drained.
    pub fn next(&self) -> Option<Arc<Outgoing>> {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        loop {
            if let Some(item) = queue.items.pop_front() {
                queue.snapshot_at = match queue.snapshot_at {
                    Some(0) | None => None,
                    Some(at) => Some(at - 1),
                };
                return Some(item);
            }
            if queue.closed {
                return None;
            }
            queue = ready.wait(queue).expect("outbox lock");
        }
    }
}

struct Client {
    actor: Actor,
    who: String,
    read_only: bool,
    outbox: Outbox,
    viewing: Option<String>,
    deciding: Option<String>,
}

pub struct Hub {
    engine: Engine,
    inbox: Receiver<HubMessage>,
    clients: BTreeMap<ClientId, Client>,
    /// When this engine started, so consoles can tell a restart from a reconnect.
    started_at: String,
    /// Every event, as it happens (the headless demo prints them; serve logs them).
    emit: Box<dyn FnMut(&Event) + Send>,
    /// Return once the driver's story is over (the headless demo), rather than serving on.
    stop_when_finished: bool,
}

impl Hub {
    pub fn new(
        engine: Engine,
        inbox: Receiver<HubMessage>,
        emit: Box<dyn FnMut(&Event) + Send>,
    ) -> Hub {
        Hub {
            engine,
            inbox,
            clients: BTreeMap::new(),
            started_at: super::timestamp(chrono::Utc::now().naive_utc()),
            emit,
            stop_when_finished: false,
        }
    }

    pub fn stopping_when_finished(mut self) -> Hub {
        self.stop_when_finished = true;
        self
    }

    /// Handles messages and turns until `Stop` (or every sender is gone), then closes
    /// every client and gives the engine back.
    pub fn run(mut self, driver: &mut dyn Driver) -> Result<Engine> {
        let mut changed = true;
        loop {
            if changed {
                self.publish(driver.finished());
                changed = false;
            }
            if self.stop_when_finished && driver.finished() {
                break;
            }
            let wait = driver
                .next_turn()
                .saturating_duration_since(Instant::now())
                .min(Duration::from_secs(3600));
            match self.inbox.recv_timeout(wait) {
                Ok(HubMessage::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(message) => changed = self.handle(message, driver)?,
                Err(RecvTimeoutError::Timeout) => {
                    if !driver.finished() {
                        let events = driver.turn(&mut self.engine)?;
                        self.emit_all(&events);
                        changed = true;
                    }
                }
            }
        }
        for client in self.clients.values() {
            client.outbox.close();
        }
        Ok(self.engine)
    }

    fn emit_all(&mut self, events: &[Event]) {
        for event in events {
            (self.emit)(event);
        }
    }

    /// Handles one message; true when what clients see may have changed.
    fn handle(&mut self, message: HubMessage, driver: &mut dyn Driver) -> Result<bool> {
        match message {
            HubMessage::Attach {
                client,
                actor,
                who,
                read_only,
                outbox,
            } => {
                outbox.push(Outgoing::new(ServerMessage::Hello {
                    protocol: PROTOCOL_VERSION,
                    started_at: self.started_at.clone(),
                    you: actor.display(),
                    read_only,
                }));
                self.clients.insert(
                    client,
                    Client {
                        actor,
                        who,
                        read_only,
                        outbox,
                        viewing: None,
                        deciding: None,
                    },
                );
            }
            HubMessage::Detach { client } => {
                if let Some(gone) = self.clients.remove(&client) {
                    gone.outbox.close();
                }
            }
            HubMessage::Request { client, request } => {
                let Some(asker) = self.clients.get(&client) else {
                    return Ok(false);
                };
                let outcome = if asker.read_only {
                    Outcome::Refused {
                        reason: Refusal::new(
                            RefusalKind::ReadOnly,
                            format!(
                                "{} is attached read-only: an observer decides nothing",
                                asker.who
                            ),
                        ),
                    }
                } else {
                    let actor = asker.actor.clone();
                    self.engine.request(request.command, &actor)
                };
                if let Outcome::Accepted { events, .. } = &outcome {
                    let events = events.clone();
                    self.emit_all(&events);
                }
                if let Some(asker) = self.clients.get(&client) {
                    asker.outbox.push(Outgoing::new(ServerMessage::Reply(Reply {
                        id: request.id,
                        outcome,
                    })));
                }
            }
            HubMessage::Ask {
                client,
                id,
                question,
            } => {
                let answer = self.engine.answer(&question);
                if let Some(asker) = self.clients.get(&client) {
                    asker
                        .outbox
                        .push(Outgoing::new(ServerMessage::Answer { id, answer }));
                }
            }
            HubMessage::Presence {
                client,
                viewing,
                deciding,
            } => {
                let Some(c) = self.clients.get_mut(&client) else {
                    return Ok(false);
                };
                if (c.viewing.as_ref(), c.deciding.as_ref())
                    == (viewing.as_ref(), deciding.as_ref())
                {
                    return Ok(false);
                }
                c.viewing = viewing;
                c.deciding = deciding;
            }
            HubMessage::Observed => {
                let events = driver.react(&mut self.engine)?;
                self.emit_all(&events);
            }
            HubMessage::Scheduler(reading) => {
                // A run it reports finished is acted on now, not at the next turn.
                let runs = reading.runs.iter().any(|r| r.status != "queued");
                self.engine.set_reading(reading);
                if runs {
                    let events = driver.react(&mut self.engine)?;
                    self.emit_all(&events);
                }
            }
            HubMessage::FirstPoll(progress) => self.engine.set_first_poll(progress),
            HubMessage::OutboxChanged | HubMessage::Stop => {}
        }
        Ok(true)
    }

    /// One snapshot for everyone: the engine's state and who is attached.
    fn publish(&mut self, finished: bool) {
        let mut snapshot = self.engine.snapshot(finished);
        // Each console knows who it is from its hello; the snapshot is the same for all.
        snapshot.actor = String::new();
        snapshot.attached = self
            .clients
            .values()
            .map(|c| PresenceView {
                who: c.who.clone(),
                read_only: c.read_only,
                viewing: c.viewing.clone(),
                deciding: c.deciding.clone(),
            })
            .collect();
        let item = Outgoing::new(ServerMessage::Snapshot(Box::new(snapshot)));
        for client in self.clients.values() {
            client.outbox.offer_snapshot(Arc::clone(&item));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: u64) -> Arc<Outgoing> {
        Outgoing::new(ServerMessage::Reply(Reply {
            id,
            outcome: Outcome::Accepted {
                seq: None,
                events: Vec::new(),
            },
        }))
    }

    fn snapshot(now: &str) -> Arc<Outgoing> {
        Outgoing::new(ServerMessage::Snapshot(Box::new(
            super::super::api::Snapshot {
                now: now.into(),
                ..Default::default()
            },
        )))
    }

    #[test]
    fn a_slow_client_gets_replies_in_order_and_only_the_newest_snapshot() {
        let outbox = Outbox::new();
        outbox.push(reply(1));
        outbox.offer_snapshot(snapshot("a"));
        outbox.push(reply(2));
        outbox.offer_snapshot(snapshot("b"));
        outbox.offer_snapshot(snapshot("c"));
        outbox.close();
        let mut seen = Vec::new();
        while let Some(item) = outbox.next() {
            seen.push(match &item.message {
                ServerMessage::Reply(r) => format!("reply {}", r.id),
                ServerMessage::Snapshot(s) => format!("snapshot {}", s.now),
                _ => "other".into(),
            });
        }
        assert_eq!(seen, ["reply 1", "snapshot c", "reply 2"]);
    }
}
