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
    /// What the orchestrator said, read in the background.
    Scheduler(super::orchestrator::Reading),
    /// How far a slow first poll has got.
    FirstPoll(super::api::FirstPoll),
    /// The alert relay marked an outbox row: clients see the outbox again.
    OutboxChanged,
    /// Finish the work in hand and return (SIGTERM).
    Stop,
    /// What the poll task read: the engine stores it (the one writer) and acts on it.
    Polled(crate::monitor::poller::PollRead),
    /// A warehouse probe's answer (evidence for a diagnosis, a verification dry run).
    Evidence(super::evidence::Found),
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

/// Replies (anything but the snapshot) that may wait unsent for one client, in number
/// and in bytes: a client that lets more pile up is dropped, not kept at the engine's
/// expense. A console waits for the reply to what it asked; only a client that does
/// not read comes near either.
const MAX_WAITING: usize = 256;
const MAX_WAITING_BYTES: usize = 4 * 1024 * 1024;
/// One client's messages (requests, presence) that may wait at the hub at once: a
/// client that sends faster than the engine answers waits in its own socket.
const MAX_AT_HUB: usize = 8;

#[derive(Default)]
struct Queue {
    items: VecDeque<Arc<Outgoing>>,
    /// Where the unsent snapshot sits in `items`, if one does: a newer one replaces it.
    snapshot_at: Option<usize>,
    /// The frame bytes of the replies in `items`.
    waiting_bytes: usize,
    /// This client's messages the reader passed to the hub, not yet handled.
    at_hub: usize,
    closed: bool,
}

impl Queue {
    fn waiting(&self) -> usize {
        self.items.len() - usize::from(self.snapshot_at.is_some())
    }
}

/// What waits to be sent to one client. Replies keep their order; snapshots collapse
/// to the newest, so a client that reads slowly costs the engine nothing. Both ways
/// are bounded: a client that leaves too many replies unread is dropped with a
/// goodbye saying why, and one that sends faster than the hub handles waits.
#[derive(Clone, Default)]
pub struct Outbox(Arc<(Mutex<Queue>, Condvar)>);

impl Outbox {
    pub fn new() -> Outbox {
        Outbox::default()
    }

    /// Queues a reply (or hello). False when that leaves this client too far behind:
    /// what waited is let go, a goodbye saying why is all that is left to send, and the
    /// outbox is closed.
    pub fn push(&self, item: Arc<Outgoing>) -> bool {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        if queue.closed {
            return true;
        }
        let bytes = queue.waiting_bytes + item.frame().len();
        if queue.waiting() >= MAX_WAITING || bytes > MAX_WAITING_BYTES {
            let reason = Refusal::new(
                RefusalKind::NotPermitted,
                format!(
                    "this client left {} replies ({} kB) unread, the most the engine keeps \
                     for one client: dropped. What it asked was handled; the chain has the \
                     outcome. Read the replies to what you ask",
                    queue.waiting(),
                    queue.waiting_bytes / 1024
                ),
            );
            *queue = Queue {
                items: VecDeque::from([Outgoing::new(ServerMessage::Goodbye { reason })]),
                closed: true,
                ..Queue::default()
            };
            ready.notify_all();
            return false;
        }
        queue.waiting_bytes = bytes;
        queue.items.push_back(item);
        ready.notify_all();
        true
    }

    pub fn offer_snapshot(&self, item: Arc<Outgoing>) {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        if queue.closed {
            return;
        }
        match queue.snapshot_at {
            Some(at) => queue.items[at] = item,
            None => {
                queue.snapshot_at = Some(queue.items.len());
                queue.items.push_back(item);
            }
        }
        ready.notify_all();
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
                    Some(0) => None,
                    Some(at) => Some(at - 1),
                    None => None,
                };
                if !matches!(item.message, ServerMessage::Snapshot(_)) {
                    queue.waiting_bytes = queue.waiting_bytes.saturating_sub(item.frame().len());
                }
                return Some(item);
            }
            if queue.closed {
                return None;
            }
            queue = ready.wait(queue).expect("outbox lock");
        }
    }

    /// Before a client's message goes to the hub: waits while `MAX_AT_HUB` of its
    /// messages are there already. False once the client is dropped or detached.
    pub fn enter_hub(&self) -> bool {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        while !queue.closed && queue.at_hub >= MAX_AT_HUB {
            queue = ready.wait(queue).expect("outbox lock");
        }
        if queue.closed {
            return false;
        }
        queue.at_hub += 1;
        true
    }

    /// The hub has handled one of this client's messages.
    pub fn left_hub(&self) {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        queue.at_hub = queue.at_hub.saturating_sub(1);
        ready.notify_all();
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
                // The first message to an empty outbox: never too many.
                let _ = outbox.push(Outgoing::new(ServerMessage::Hello {
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
                } else if let Err(reason) = asker.actor.person() {
                    // Every command is recorded as someone's: without a known person,
                    // none is (never the uid in the person's place).
                    Outcome::Refused { reason }
                } else {
                    let actor = asker.actor.clone();
                    self.engine.answer(request.clone(), &actor)
                };
                if let Outcome::Accepted { events, .. } = &outcome {
                    let events = events.clone();
                    self.emit_all(&events);
                }
                if let Some(asker) = self.clients.get(&client) {
                    let reply = Outgoing::new(ServerMessage::Reply(Reply {
                        id: request.id,
                        outcome,
                    }));
                    if !asker.outbox.push(reply) {
                        tracing::warn!(
                            "client {client} ({}) left too many replies unread: dropped",
                            asker.who
                        );
                    }
                    asker.outbox.left_hub();
                }
            }
            HubMessage::Ask {
                client,
                id,
                question,
            } => {
                let answer = self.engine.answer_question(&question);
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
                c.outbox.left_hub();
                if (c.viewing.as_ref(), c.deciding.as_ref())
                    == (viewing.as_ref(), deciding.as_ref())
                {
                    return Ok(false);
                }
                c.viewing = viewing;
                c.deciding = deciding;
            }
            HubMessage::Polled(read) => {
                if let Err(e) = self.engine.store_polled(read) {
                    // Measured again at the next poll.
                    tracing::warn!(error = %format!("{e:#}"), "poll not stored");
                }
                let events = driver.react(&mut self.engine)?;
                self.emit_all(&events);
            }
            HubMessage::Evidence(found) => match self.engine.take_evidence(found) {
                Ok(events) => self.emit_all(&events),
                Err(e) => self
                    .engine
                    .notice(format!("evidence from a warehouse was not recorded: {e:#}")),
            },
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

    #[test]
    fn a_client_that_leaves_its_replies_unread_is_dropped_with_a_reason() {
        let outbox = Outbox::new();
        outbox.offer_snapshot(snapshot("a"));
        for id in 0..MAX_WAITING as u64 {
            assert!(outbox.push(reply(id)), "reply {id} may wait");
        }
        assert!(!outbox.push(reply(9999)), "one too many: dropped");
        let Some(item) = outbox.next() else {
            panic!("a goodbye is left to send")
        };
        match &item.message {
            ServerMessage::Goodbye { reason } => {
                assert!(reason.message.contains("256 replies"), "{reason}")
            }
            _ => panic!("expected the goodbye"),
        }
        assert!(outbox.next().is_none(), "nothing else, and closed");
        assert!(!outbox.enter_hub(), "its reader stops");
    }

    #[test]
    fn a_client_waits_for_its_turn_at_the_hub() {
        let outbox = Outbox::new();
        for _ in 0..MAX_AT_HUB {
            assert!(outbox.enter_hub());
        }
        let waiting = {
            let outbox = outbox.clone();
            std::thread::spawn(move || outbox.enter_hub())
        };
        outbox.left_hub();
        assert!(waiting.join().unwrap(), "let in once one was handled");
    }
}
