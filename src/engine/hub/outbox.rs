//! What waits to be sent to one client, and what one client has waiting at the hub:
//! replies in order, changes collapsing into a snapshot, presence as its latest. Both
//! ways bounded, so one client's pace costs only that client.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::super::api::{Refusal, RefusalKind, ServerMessage};

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
            .get_or_init(|| super::super::wire::encode(&self.message))
    }
}

/// Replies (hellos, replies, answers) that may wait unsent for one client, in number
/// and in bytes: a client that lets more pile up is dropped, not kept at the engine's
/// expense. A console waits for the reply to what it asked; only a client that does
/// not read comes near either.
pub(super) const MAX_WAITING: usize = 256;
pub(super) const MAX_WAITING_BYTES: usize = 4 * 1024 * 1024;
/// Changes that may wait unsent for one client, in number and in bytes: past either,
/// they are let go and one whole snapshot is sent in their place, so a slow client's
/// queue never grows with the engine's activity.
pub(super) const MAX_CHANGES: usize = 64;
pub(super) const MAX_CHANGE_BYTES: usize = 1024 * 1024;
/// One client's messages (requests, questions, asks for a snapshot) that may wait at
/// the hub at once: a client that sends faster than the engine answers waits in its
/// own socket. Presence does not count: only a client's latest is kept.
pub(super) const MAX_AT_HUB: usize = 8;

/// How a message waits in an outbox.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Kept in order, and counted against the client.
    Reply,
    /// The whole state: replaces every snapshot, change and presence before it.
    Snapshot,
    /// Applies to the state before it: kept in order, bounded, collapsed into a
    /// snapshot past the bound.
    Change,
    /// Whole in itself: the newest replaces the last of its kind.
    Presence,
    Detail,
}

impl Kind {
    pub(super) fn of(message: &ServerMessage) -> Kind {
        match message {
            ServerMessage::Snapshot { .. } => Kind::Snapshot,
            ServerMessage::Change(_) => Kind::Change,
            ServerMessage::Presence { .. } => Kind::Presence,
            ServerMessage::Detail(_) => Kind::Detail,
            ServerMessage::Hello { .. }
            | ServerMessage::Reply(_)
            | ServerMessage::Answer { .. }
            | ServerMessage::Goodbye { .. } => Kind::Reply,
        }
    }
}

pub(super) type Presence = (Option<String>, Option<String>);

#[derive(Default)]
struct Queue {
    items: VecDeque<Arc<Outgoing>>,
    /// The replies in `items`, and their frame bytes.
    replies: usize,
    reply_bytes: usize,
    /// The changes in `items`, and their frame bytes.
    changes: usize,
    change_bytes: usize,
    /// This client's messages the reader passed to the hub, not yet handled.
    at_hub: usize,
    /// What the client last said it views and decides, not yet taken by the hub.
    presence: Option<Presence>,
    closed: bool,
}

impl Queue {
    /// Lets go of every waiting message of these kinds.
    pub(super) fn drop_kinds(&mut self, kinds: &[Kind]) {
        self.items
            .retain(|item| !kinds.contains(&Kind::of(&item.message)));
        if kinds.contains(&Kind::Change) {
            self.changes = 0;
            self.change_bytes = 0;
        }
    }
}

/// What waits to be sent to one client. Replies keep their order; the state comes as
/// a snapshot then changes, and a client too slow to take its changes gets one fresh
/// snapshot in their place; presence and the viewed incident's detail wait only as
/// their newest. Every part is bounded: a client that leaves too many replies unread is
/// dropped with a goodbye saying why, one that sends faster than the hub handles waits,
/// and its presence messages collapse into the latest.
#[derive(Clone, Default)]
pub struct Outbox(Arc<(Mutex<Queue>, Condvar)>);

impl Outbox {
    pub fn new() -> Outbox {
        Outbox::default()
    }

    /// Queues a reply (or hello, answer). False when that leaves this client too far
    /// behind: what waited is let go, a goodbye saying why is all that is left to
    /// send, and the outbox is closed.
    pub fn push(&self, item: Arc<Outgoing>) -> bool {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        if queue.closed {
            return true;
        }
        let bytes = queue.reply_bytes + item.frame().len();
        if queue.replies >= MAX_WAITING || bytes > MAX_WAITING_BYTES {
            let reason = Refusal::new(
                RefusalKind::NotPermitted,
                format!(
                    "this client left {} replies ({} kB) unread, the most the engine keeps \
                     for one client: dropped. What it asked was handled; the chain has the \
                     outcome. Read the replies to what you ask",
                    queue.replies,
                    queue.reply_bytes / 1024
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
        queue.reply_bytes = bytes;
        queue.replies += 1;
        queue.items.push_back(item);
        ready.notify_all();
        true
    }

    /// Queues the whole state: nothing of the state that waited before it is needed.
    pub fn offer_snapshot(&self, item: Arc<Outgoing>) {
        self.offer(item, &[Kind::Snapshot, Kind::Change, Kind::Presence]);
    }

    /// Queues a presence list or a detail: the newest of its kind replaces the last.
    pub fn offer_latest(&self, item: Arc<Outgoing>) {
        let kind = Kind::of(&item.message);
        self.offer(item, &[kind]);
    }

    fn offer(&self, item: Arc<Outgoing>, replaces: &[Kind]) {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        if queue.closed {
            return;
        }
        queue.drop_kinds(replaces);
        queue.items.push_back(item);
        ready.notify_all();
    }

    /// Queues a change. False when this client has too many waiting: they are let go
    /// with the snapshot they applied to, and the caller offers a fresh snapshot.
    pub fn offer_change(&self, item: Arc<Outgoing>) -> bool {
        let (queue, ready) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        if queue.closed {
            return true;
        }
        let bytes = queue.change_bytes + item.frame().len();
        if queue.changes >= MAX_CHANGES || bytes > MAX_CHANGE_BYTES {
            queue.drop_kinds(&[Kind::Snapshot, Kind::Change]);
            return false;
        }
        queue.changes += 1;
        queue.change_bytes = bytes;
        queue.items.push_back(item);
        ready.notify_all();
        true
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
                match Kind::of(&item.message) {
                    Kind::Reply => {
                        queue.replies = queue.replies.saturating_sub(1);
                        queue.reply_bytes = queue.reply_bytes.saturating_sub(item.frame().len());
                    }
                    Kind::Change => {
                        queue.changes = queue.changes.saturating_sub(1);
                        queue.change_bytes = queue.change_bytes.saturating_sub(item.frame().len());
                    }
                    Kind::Snapshot | Kind::Presence | Kind::Detail => {}
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

    /// Keeps what the client says it views and decides, replacing what it said before
    /// that the hub has not taken yet. True when the hub must be told (nothing was
    /// waiting for it), so one client has at most one presence message at the hub.
    pub fn tell_presence(&self, viewing: Option<String>, deciding: Option<String>) -> bool {
        let (queue, _) = &*self.0;
        let mut queue = queue.lock().expect("outbox lock");
        !queue.closed && queue.presence.replace((viewing, deciding)).is_none()
    }

    /// The client's latest presence, taken by the hub.
    pub(super) fn take_presence(&self) -> Option<Presence> {
        let (queue, _) = &*self.0;
        queue.lock().expect("outbox lock").presence.take()
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::api::{Change, Outcome, PresenceView, Reply};
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

    fn snapshot(version: u64) -> Arc<Outgoing> {
        Outgoing::new(ServerMessage::Snapshot {
            version,
            snapshot: Box::default(),
        })
    }

    fn change(version: u64) -> Arc<Outgoing> {
        Outgoing::new(ServerMessage::Change(Box::new(Change {
            version,
            ..Change::default()
        })))
    }

    fn presence(who: &str) -> Arc<Outgoing> {
        Outgoing::new(ServerMessage::Presence {
            attached: vec![PresenceView {
                who: who.into(),
                read_only: true,
                viewing: None,
                deciding: None,
            }],
        })
    }

    fn drain(outbox: &Outbox) -> Vec<String> {
        outbox.close();
        let mut seen = Vec::new();
        while let Some(item) = outbox.next() {
            seen.push(match &item.message {
                ServerMessage::Reply(r) => format!("reply {}", r.id),
                ServerMessage::Snapshot { version, .. } => format!("snapshot {version}"),
                ServerMessage::Change(c) => format!("change {}", c.version),
                ServerMessage::Presence { attached } => format!("presence {}", attached[0].who),
                _ => "other".into(),
            });
        }
        seen
    }

    #[test]
    fn replies_keep_their_order_and_the_state_comes_as_a_snapshot_then_changes() {
        let outbox = Outbox::new();
        outbox.push(reply(1));
        outbox.offer_snapshot(snapshot(3));
        outbox.offer_latest(presence("a"));
        outbox.push(reply(2));
        assert!(outbox.offer_change(change(4)));
        outbox.offer_latest(presence("b"));
        assert!(outbox.offer_change(change(5)));
        assert_eq!(
            drain(&outbox),
            [
                "reply 1",
                "snapshot 3",
                "reply 2",
                "change 4",
                "presence b",
                "change 5"
            ]
        );
    }

    #[test]
    fn a_client_too_slow_for_its_changes_gets_one_snapshot_in_their_place() {
        let outbox = Outbox::new();
        outbox.offer_snapshot(snapshot(1));
        outbox.push(reply(7));
        for version in 2..2 + MAX_CHANGES as u64 {
            assert!(
                outbox.offer_change(change(version)),
                "change {version} may wait"
            );
        }
        assert!(
            !outbox.offer_change(change(99)),
            "one too many: the caller sends a snapshot"
        );
        outbox.offer_snapshot(snapshot(99));
        assert!(
            outbox.offer_change(change(100)),
            "changes wait again after it"
        );
        assert_eq!(drain(&outbox), ["reply 7", "snapshot 99", "change 100"]);
    }

    #[test]
    fn a_client_that_leaves_its_replies_unread_is_dropped_with_a_reason() {
        let outbox = Outbox::new();
        outbox.offer_snapshot(snapshot(1));
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

    #[test]
    fn a_flood_of_presence_is_one_message_at_the_hub_and_the_latest_counts() {
        let outbox = Outbox::new();
        let mut told = 0;
        for n in 0..1000 {
            told += usize::from(outbox.tell_presence(Some(format!("INC-{n}")), None));
        }
        assert_eq!(told, 1, "the hub is told once");
        assert_eq!(outbox.take_presence(), Some((Some("INC-999".into()), None)));
        assert_eq!(outbox.take_presence(), None);
        assert!(
            outbox.tell_presence(None, None),
            "taken: the next one tells the hub"
        );
    }
}
