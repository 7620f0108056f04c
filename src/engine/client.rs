//! The client end of the engine's socket: what the CLI commands and attached consoles
//! use. It says hello, then sends requests and reads the answers; who it is, the server
//! learns from the kernel.

use std::collections::HashMap;
use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{Context, Result};

use super::api::{
    version_mismatch, Change, ClientMessage, Command, Detail, IncidentView, Outcome, Question,
    Request, ServerMessage, Snapshot, PROTOCOL_VERSION,
};
use super::server::socket_path;
use super::wire::{self, MAX_SERVER_FRAME};

pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
    /// When the engine started, who it says we are, and whether we may decide.
    pub started_at: crate::clock::Timestamp,
    pub you: String,
    pub read_only: bool,
    /// The engine's state as the messages read so far tell it.
    replica: Replica,
}

impl Client {
    /// Attaches to the engine serving `data_dir`. None when no engine serves it (no
    /// socket, or nothing listening on it); an error when one refuses us, with why.
    pub fn connect(data_dir: &Path, read_only: bool) -> Result<Option<Client>> {
        let path = socket_path(data_dir);
        let stream = match UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Ok(None)
            }
            Err(e) => {
                return Err(e).with_context(|| format!("cannot connect to {}", path.display()))
            }
        };
        let mut writer = stream.try_clone()?;
        let mut reader = BufReader::new(stream);
        wire::send(
            &mut writer,
            &ClientMessage::Hello {
                protocol: PROTOCOL_VERSION,
                read_only,
            },
        )?;
        match wire::receive::<ServerMessage>(&mut reader, MAX_SERVER_FRAME)
            .with_context(|| format!("the engine on {}", path.display()))?
        {
            ServerMessage::Hello {
                protocol: PROTOCOL_VERSION,
                started_at,
                you,
                read_only,
            } => Ok(Some(Client {
                reader,
                writer,
                next_id: 1,
                started_at,
                you,
                read_only,
                replica: Replica::default(),
            })),
            ServerMessage::Hello { protocol, .. } => anyhow::bail!(
                "the engine on {} refused to attach: {}",
                path.display(),
                version_mismatch(protocol, PROTOCOL_VERSION)
            ),
            // The refusal itself stays in the error, for a caller to tell why (a standby).
            ServerMessage::Goodbye { reason } => Err(anyhow::Error::new(reason).context(format!(
                "the engine on {} refused to attach",
                path.display()
            ))),
            other => anyhow::bail!("the engine on {} answered {other:?}", path.display()),
        }
    }

    /// A second handle on the connection: to write from another thread while this one
    /// reads (a console's bridge), or to ask the kernel who serves it.
    pub fn stream(&self) -> std::io::Result<UnixStream> {
        self.writer.try_clone()
    }

    pub fn send(&mut self, message: &ClientMessage) -> Result<()> {
        wire::send(&mut self.writer, message).context("the engine closed the connection")
    }

    /// The next message from the engine, as it came.
    pub fn receive(&mut self) -> Result<ServerMessage> {
        wire::receive(&mut self.reader, MAX_SERVER_FRAME).map_err(anyhow::Error::from)
    }

    /// The next message that is not about the engine's state; state messages on the way
    /// are applied to the replica (a gap in the versions asks for a snapshot). None
    /// when the one read was a state message.
    fn next_other(&mut self) -> Result<Option<ServerMessage>> {
        let message = self.receive()?;
        match self.replica.apply(message) {
            Applied::Other(message) => Ok(Some(message)),
            Applied::Gap => {
                self.send(&ClientMessage::Resync)?;
                Ok(None)
            }
            Applied::State | Applied::Ignored => Ok(None),
        }
    }

    /// Sends one command and waits for its answer (snapshots meanwhile are skipped).
    pub fn request(&mut self, command: Command) -> Result<Outcome> {
        self.request_as(command, None)
    }

    /// [`Client::request`] with the client's own request id (see
    /// [`new_request_id`]): the engine keeps its answer by that id, so it can be asked
    /// for again if this connection is lost before the answer comes.
    pub fn request_as(
        &mut self,
        command: Command,
        client_request: Option<String>,
    ) -> Result<Outcome> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&ClientMessage::Request(Request {
            id,
            command,
            client_request,
        }))?;
        loop {
            match self.next_other()? {
                Some(ServerMessage::Reply(reply)) if reply.id == id => return Ok(reply.outcome),
                Some(ServerMessage::Goodbye { reason }) => {
                    anyhow::bail!("the engine closed: {reason}")
                }
                _ => continue,
            }
        }
    }
    /// Asks the engine a read only it can answer; its report, or why it has none.
    pub fn ask(&mut self, question: Question) -> Result<Result<serde_json::Value, String>> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&ClientMessage::Ask { id, question })?;
        loop {
            match self.next_other()? {
                Some(ServerMessage::Answer {
                    id: answered,
                    answer,
                }) if answered == id => return Ok(answer),
                Some(ServerMessage::Goodbye { reason }) => {
                    anyhow::bail!("the engine closed: {reason}")
                }
                _ => continue,
            }
        }
    }

    /// The engine's state once the next message about it has come: right after the
    /// hello, the snapshot it sends on attaching; after that, the next change.
    pub fn snapshot(&mut self) -> Result<Snapshot> {
        loop {
            if let Some(ServerMessage::Goodbye { reason }) = self.next_other()? {
                anyhow::bail!("the engine closed: {reason}");
            }
            if let Some(whole) = self.replica.whole() {
                return Ok(whole);
            }
        }
    }

    /// One incident whole, its timeline and receipt included: this client says it views
    /// it, and the engine sends them. None when the engine has no such incident.
    pub fn incident(&mut self, id: &str) -> Result<Option<IncidentView>> {
        self.send(&ClientMessage::Presence {
            viewing: Some(id.to_string()),
            deciding: None,
        })?;
        loop {
            if let Some(ServerMessage::Goodbye { reason }) = self.next_other()? {
                anyhow::bail!("the engine closed: {reason}");
            }
            if self.replica.detail_for() == Some(id) && self.replica.version().is_some() {
                return Ok(self.replica.incident(id));
            }
        }
    }
}

/// Where a client is in the engine's versions: the one held, and whether it missed one
/// and waits for the snapshot it asked for. The replica below and a console's link both
/// follow the engine with it.
#[derive(Debug, Default)]
pub struct Versions {
    /// None before the first snapshot.
    held: Option<u64>,
    /// A version was missed: changes wait for the snapshot asked for.
    resyncing: bool,
}

/// What to do with a change, by its version (see [`Versions::change`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// The next version: apply it to the state held.
    Apply,
    /// A version was missed: ask for a snapshot (`ClientMessage::Resync`), once.
    Gap,
    /// Nothing to apply it to (before the first snapshot, or while the one asked for
    /// is on its way).
    Ignore,
}

impl Versions {
    /// A whole snapshot at `version` came: the state is that one.
    pub fn whole(&mut self, version: u64) {
        self.held = Some(version);
        self.resyncing = false;
    }

    /// A change to `version` came.
    pub fn change(&mut self, version: u64) -> Next {
        let Some(held) = self.held.filter(|_| !self.resyncing) else {
            return Next::Ignore;
        };
        if version != held + 1 {
            self.resyncing = true;
            return Next::Gap;
        }
        self.held = Some(version);
        Next::Apply
    }

    /// A whole snapshot is coming anyway: changes wait for it.
    pub fn await_whole(&mut self) {
        self.resyncing = true;
    }

    /// The version held; None before the first snapshot.
    pub fn held(&self) -> Option<u64> {
        self.held
    }
}

/// The engine's state as one client holds it: the snapshot it got on attaching with
/// every change since applied in place, and the timeline and receipt of the incident it
/// views kept beside it. The CLI and the benches read the engine through one (a
/// console's link follows the same versions, `console::incoming::Feed`).
#[derive(Debug, Default)]
pub struct Replica {
    versions: Versions,
    /// The state; None before the first snapshot.
    state: Option<Snapshot>,
    /// Where each incident is in the snapshot.
    index: HashMap<String, usize>,
    detail: Option<Detail>,
}

/// What one message did to a [`Replica`].
#[derive(Debug)]
pub enum Applied {
    /// The state changed.
    State,
    /// A version was missed: ask for a snapshot (`ClientMessage::Resync`), once.
    Gap,
    /// A change with no state to apply it to (before the first snapshot, or while the
    /// one asked for is on its way).
    Ignored,
    /// Not about the state: a reply, an answer, a hello, a goodbye.
    Other(ServerMessage),
}

impl Replica {
    pub fn apply(&mut self, message: ServerMessage) -> Applied {
        match message {
            ServerMessage::Snapshot { version, snapshot } => {
                self.versions.whole(version);
                self.state = Some(*snapshot);
                self.reindex();
                Applied::State
            }
            ServerMessage::Change(change) => match self.versions.change(change.version) {
                Next::Apply => {
                    self.change(*change);
                    Applied::State
                }
                Next::Gap => Applied::Gap,
                Next::Ignore => Applied::Ignored,
            },
            ServerMessage::Presence { attached } => match &mut self.state {
                Some(snapshot) => {
                    snapshot.attached = attached;
                    Applied::State
                }
                None => Applied::Ignored,
            },
            ServerMessage::Detail(detail) => {
                self.detail = Some(*detail);
                if self.state.is_some() {
                    Applied::State
                } else {
                    Applied::Ignored
                }
            }
            other => Applied::Other(other),
        }
    }

    /// Applies the next version's change in place: the incidents it names replaced
    /// where they are, the list reshaped only when it says so.
    fn change(&mut self, change: Change) {
        let Some(snapshot) = self.state.as_mut() else {
            return;
        };
        let mut moved = !change.removed.is_empty() || change.order.is_some();
        if !change.removed.is_empty() {
            snapshot
                .incidents
                .retain(|i| !change.removed.contains(&i.id));
        }
        for incident in change.incidents {
            match self.index.get(&incident.id) {
                Some(&at) if !moved => snapshot.incidents[at] = incident,
                _ => {
                    match snapshot.incidents.iter().position(|i| i.id == incident.id) {
                        Some(at) => snapshot.incidents[at] = incident,
                        None => snapshot.incidents.push(incident),
                    }
                    moved = true;
                }
            }
        }
        if let Some(order) = change.order {
            let mut by_id: HashMap<String, IncidentView> = std::mem::take(&mut snapshot.incidents)
                .into_iter()
                .map(|i| (i.id.clone(), i))
                .collect();
            snapshot.incidents = order.iter().filter_map(|id| by_id.remove(id)).collect();
        }
        for field in change.fields {
            field.apply(snapshot);
        }
        if moved {
            self.reindex();
        }
    }

    fn reindex(&mut self) {
        self.index = match &self.state {
            Some(snapshot) => snapshot
                .incidents
                .iter()
                .enumerate()
                .map(|(at, i)| (i.id.clone(), at))
                .collect(),
            None => HashMap::new(),
        };
    }

    /// The version held; None before the first snapshot.
    pub fn version(&self) -> Option<u64> {
        self.versions.held()
    }

    /// The incident whose timeline and receipt are held.
    pub fn detail_for(&self) -> Option<&str> {
        self.detail.as_ref().map(|d| d.incident.as_str())
    }

    /// The state as held, every incident without its timeline and receipt: what a
    /// reader that needs no detail looks at, without a copy. None before the first
    /// snapshot.
    pub fn state(&self) -> Option<&Snapshot> {
        self.state.as_ref()
    }

    /// One incident whole, its timeline and receipt put back when they are held: a copy
    /// of that incident only.
    pub fn incident(&self, id: &str) -> Option<IncidentView> {
        let snapshot = self.state.as_ref()?;
        let mut incident = snapshot.incidents.get(*self.index.get(id)?)?.clone();
        if let Some(detail) = self.detail.as_ref().filter(|d| d.incident == id) {
            detail.merge_into(&mut incident);
        }
        Some(incident)
    }

    /// A copy of the whole snapshot, as a console draws it: the viewed incident with
    /// its timeline and receipt. For a reader that wants the state once (the CLI's
    /// `snapshot`); a follower reads [`Replica::state`] instead. None before the first
    /// snapshot.
    pub fn whole(&self) -> Option<Snapshot> {
        let mut whole = self.state.as_ref()?.clone();
        if let Some(detail) = &self.detail {
            if let Some(&at) = self.index.get(&detail.incident) {
                detail.merge_into(&mut whole.incidents[at]);
            }
        }
        Some(whole)
    }
}

/// A request id no other client will send: 128 random bits from the kernel, in hex.
pub fn new_request_id() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom for a request id")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::engine::api::{Field, IncidentStatus};

    fn snapshot_message(version: u64, snapshot: Snapshot) -> ServerMessage {
        ServerMessage::Snapshot {
            version,
            snapshot: Box::new(snapshot),
        }
    }

    /// The engine's side: what travels for `new` after `old`, as the hub finds it.
    fn change(version: u64, old: &Snapshot, new: &Snapshot) -> ServerMessage {
        let incidents = new
            .incidents
            .iter()
            .filter(|i| !old.incidents.contains(i))
            .cloned()
            .collect();
        let removed = old
            .incidents
            .iter()
            .filter(|o| !new.incidents.iter().any(|i| i.id == o.id))
            .map(|o| o.id.clone())
            .collect();
        ServerMessage::Change(Box::new(Change {
            version,
            incidents,
            removed,
            order: Some(new.incidents.iter().map(|i| i.id.clone()).collect()),
            fields: Field::changed(old, new),
        }))
    }

    fn without_details(mut snapshot: Snapshot) -> Snapshot {
        for incident in &mut snapshot.incidents {
            Detail::take(incident);
        }
        snapshot
    }

    #[test]
    fn changes_applied_in_order_give_the_engines_state() {
        let first = without_details(sample_snapshot());
        let mut second = first.clone();
        second.incidents[0].status = IncidentStatus::Resolved;
        second.now = "2026-11-24T14:21:00Z".parse().unwrap();
        let mut third = second.clone();
        third.incidents.remove(1);
        third.notices.push("resolved by hand".into());
        let mut replica = Replica::default();
        assert!(matches!(
            replica.apply(snapshot_message(1, first.clone())),
            Applied::State
        ));
        assert!(matches!(
            replica.apply(change(2, &first, &second)),
            Applied::State
        ));
        assert!(matches!(
            replica.apply(change(3, &second, &third)),
            Applied::State
        ));
        assert_eq!(replica.whole(), Some(third));
        assert_eq!(replica.version(), Some(3));
    }

    #[test]
    fn a_missed_version_asks_once_and_the_snapshot_asked_for_is_the_state() {
        let first = without_details(sample_snapshot());
        let mut second = first.clone();
        second.now = "2026-11-24T14:21:00Z".parse().unwrap();
        let mut third = second.clone();
        third.incidents[1].title = "nulls, still".into();
        let mut replica = Replica::default();
        replica.apply(snapshot_message(1, first.clone()));
        assert!(matches!(
            replica.apply(change(3, &second, &third)),
            Applied::Gap
        ));
        assert!(
            matches!(replica.apply(change(4, &third, &third)), Applied::Ignored),
            "nothing more is asked or applied until the snapshot comes"
        );
        assert!(matches!(
            replica.apply(snapshot_message(4, third.clone())),
            Applied::State
        ));
        let mut fresh = Replica::default();
        fresh.apply(snapshot_message(4, third.clone()));
        assert_eq!(replica.whole(), fresh.whole());
    }

    #[test]
    fn the_viewed_incident_gets_its_timeline_and_receipt_back() {
        let whole = sample_snapshot();
        let mut replica = Replica::default();
        replica.apply(snapshot_message(1, without_details(whole.clone())));
        let mut viewed = whole.incidents[0].clone();
        replica.apply(ServerMessage::Detail(Box::new(Detail::take(&mut viewed))));
        let shown = replica.whole().unwrap();
        assert_eq!(shown.incidents[0], whole.incidents[0]);
        assert!(shown.incidents[1].receipt.is_none() && shown.incidents[1].timeline.is_empty());
    }
}
