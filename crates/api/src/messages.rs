//! The messages between a client and the engine: hello, requests and their replies,
//! questions, and the engine's state as a snapshot, then changes.

use serde::{Deserialize, Serialize};

use super::*;

/// Bumped on any change a client of the previous version could not read. 2: a whole
/// snapshot on attaching, then versioned changes; timelines and receipts on their own.
/// 3: every time is a [`Timestamp`] (`2026-11-24T14:17:00Z`), an orchestrator's run
/// times too, which version 2 sent in the orchestrator's own form; a client of version
/// 3 refuses any other text where a time goes. 4: access requests (a command, their
/// events and receipts), the lineage and migration questions (`dataward lineage`,
/// `dataward migration` ask the engine), a
/// blast node learned from OpenLineage events, a pipeline's last failure: a version-3
/// engine could not read a version-4 client's question, nor a version-3 console every
/// event.
pub const PROTOCOL_VERSION: u32 = 4;

/// What a client or engine of another protocol version is told: both versions, and what
/// to do about it.
pub fn version_mismatch(engine: u32, client: u32) -> String {
    format!(
        "this engine speaks protocol {engine}, the client protocol {client}: use the same \
         dataward version for the engine and its consoles (restart `dataward serve` with \
         the new binary, or run the console of the engine's version)"
    )
}

/// What a client sends. The first message is a `Hello`; nothing in it says who the
/// client is: the server takes that from the kernel (`SO_PEERCRED`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMessage {
    Hello {
        protocol: u32,
        /// Attach as an observer even if the policy would let this person decide.
        #[serde(default)]
        read_only: bool,
    },
    Request(Request),
    /// A read only the engine can answer (it alone opens the state files); observers
    /// may ask. Answered by one `Answer` with the same id, to this client only.
    Ask {
        id: u64,
        question: Question,
    },
    /// What this client shows and does, for the others' presence line. The engine
    /// sends the incident it views its timeline and receipt (`Detail`), and again when
    /// they change. Only the latest of a client's presence messages counts.
    Presence {
        viewing: Option<String>,
        deciding: Option<String>,
    },
    /// A whole snapshot, please: this client missed a version of the changes.
    Resync,
}

/// What `dataward verify` and `dataward receipt` ask a running engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "question", rename_all = "snake_case")]
pub enum Question {
    /// The chain held against its checkpoint, and a saved receipt's JSON checked
    /// against it when one is given.
    Verify {
        #[serde(default)]
        saved_receipt: Option<String>,
    },
    /// An incident's receipt as the chain holds it.
    Receipt { incident: String },
    /// The org-wide stop as it stands.
    Stop,
    /// The blast radius of a node in the engine's lineage: the manifest, the notes and
    /// the jobs and datasets OpenLineage events named.
    Lineage { from: String },
    /// Migration waves (all, or one migration's by name): tables, parity and gate.
    Migration {
        #[serde(default)]
        name: Option<String>,
    },
}

/// One command, answered by exactly one `Reply` with the same id, to this client only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub command: Command,
    /// A client's own id for this request, unique across connections (the CLI's
    /// random one): the engine keeps the answer by it, so a client whose connection
    /// was lost can ask what came of it (`Command::WhatHappened`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_request: Option<String>,
}

/// What the server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    Hello {
        protocol: u32,
        /// When this engine started (wall clock), so a console can tell a restart.
        started_at: Timestamp,
        /// Who the server attests this client is, and whether it may decide.
        you: String,
        read_only: bool,
    },
    Reply(Reply),
    /// The answer to an `Ask`: the engine's report as JSON, or why it has none.
    Answer {
        id: u64,
        answer: Result<serde_json::Value, String>,
    },
    /// The engine's whole state at `version`: first after the hello, after a `Resync`,
    /// and in place of changes a client fell too far behind on. Incidents come without
    /// their timeline and receipt (see `Detail`); who is attached is in it.
    Snapshot {
        version: u64,
        snapshot: Box<Snapshot>,
    },
    /// What changed since `version - 1`: a client holding another version asks for a
    /// snapshot (`Resync`) rather than apply it.
    Change(Box<Change>),
    /// Everyone attached, whole, after anyone attached, left, or moved. Not versioned:
    /// the newest replaces the last.
    Presence {
        attached: Vec<PresenceView>,
    },
    /// The timeline and receipt of the incident this client views (its presence).
    Detail(Box<Detail>),
    /// The server will not serve this client (a protocol it does not speak, a person the
    /// policy does not name) and closes the connection.
    Goodbye {
        reason: Refusal,
    },
}

/// One version's change to the engine's state: the incidents that changed or are new
/// (whole, without timeline and receipt), the ones gone, the incidents' order when it
/// is not the old one with the new ones last, and the engine-wide fields that changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub version: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incidents: Vec<IncidentView>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
}

/// An incident's timeline and receipt, read from the chain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Detail {
    pub incident: String,
    pub timeline: Vec<TimelineEntry>,
    pub receipt: Option<String>,
}

impl Detail {
    /// Takes them out of `incident`, which then travels without them.
    pub fn take(incident: &mut IncidentView) -> Detail {
        Detail {
            incident: incident.id.clone(),
            timeline: std::mem::take(&mut incident.timeline),
            receipt: incident.receipt.take(),
        }
    }

    /// Puts them back into `incident`.
    pub fn merge_into(&self, incident: &mut IncidentView) {
        incident.timeline = self.timeline.clone();
        incident.receipt = self.receipt.clone();
    }
}

/// The engine-wide fields of a snapshot (all but the incidents, who is attached and
/// the console's own actor), each a variant, so a change carries only those that
/// changed.
macro_rules! engine_fields {
    ($($field:ident: $variant:ident($type:ty),)*) => {
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "field", content = "value", rename_all = "snake_case")]
        pub enum Field {
            $($variant($type),)*
        }

        impl Field {
            /// The fields of `new` that differ from `old`.
            pub fn changed(old: &Snapshot, new: &Snapshot) -> Vec<Field> {
                let mut changed = Vec::new();
                $(if old.$field != new.$field {
                    changed.push(Field::$variant(new.$field.clone()));
                })*
                changed
            }

            pub fn apply(self, snapshot: &mut Snapshot) {
                match self {
                    $(Field::$variant(value) => snapshot.$field = value,)*
                }
            }

            /// The snapshot's fields this covers, by their names on the wire.
            pub fn names() -> &'static [&'static str] {
                &[$(stringify!($field),)*]
            }
        }
    };
}

engine_fields! {
    now: Now(Timestamp),
    chain_head: ChainHead(Option<ChainHead>),
    pipelines: Pipelines(Vec<PipelineView>),
    orchestrator_down: OrchestratorDown(Option<String>),
    first_poll: FirstPoll(Option<FirstPoll>),
    monitors: Monitors(Vec<MonitorView>),
    notices: Notices(Vec<String>),
    finished: Finished(bool),
    org_stop: OrgStop(Option<String>),
    chain_alarm: ChainAlarm(Option<String>),
    trust_alarm: TrustAlarm(Option<String>),
    outbox: Outbox(Vec<DestinationView>),
    poll_costs: PollCosts(Vec<PollCost>),
    waves: Waves(Vec<WaveView>),
    access: Access(Vec<AccessView>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub id: u64,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Done: the chain head after it, and what happened.
    Accepted {
        seq: Option<u64>,
        events: Vec<Event>,
    },
    Refused {
        reason: Refusal,
    },
}

/// Why a request was refused: a kind a script can act on, and the words a person reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// The policy does not let this person do this (role, own proposal, autonomy level).
    Policy,
    /// The content changed since the person read it: the hash they sent is not current.
    StaleHash,
    /// Someone already decided it; the message says who and where on the chain.
    AlreadyDecided,
    /// No such incident or proposal.
    NotFound,
    /// The org-wide stop is set.
    OrgStop,
    /// The chain does not verify; nothing is recorded.
    ChainBroken,
    /// This client is attached as an observer.
    ReadOnly,
    /// The request is not valid as sent (empty reason, wrong kind of proposal, too early).
    Invalid,
    /// The client does not speak this protocol, or is not allowed to attach.
    NotPermitted,
    /// Something failed inside the engine or at an orchestrator; nothing was recorded.
    Failed,
}

impl Refusal {
    pub fn new(kind: RefusalKind, message: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// How far the engine's first poll has got while it is slow: a console draws "first
/// poll: 37 of 120 tables". Told by the poll task once the poll has taken a second,
/// then at most once a second, and at its end (`done == total`, when it is over).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstPoll {
    /// Tables read so far.
    pub done: usize,
    /// Tables the first poll reads.
    pub total: usize,
}

/// Who is attached to the engine and what they are doing, for everyone's status bar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresenceView {
    /// The person's name from the policy, or `uid N` for an observer it does not name.
    pub who: String,
    pub read_only: bool,
    pub viewing: Option<String>,
    pub deciding: Option<String>,
}
