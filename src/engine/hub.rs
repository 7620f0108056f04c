//! The engine's one thread. Every input arrives here as a message: a client attaching,
//! leaving, asking or showing what it looks at; news from the poller; the clock. Each is
//! handled in turn. A client gets the engine's whole state when it attaches, then only
//! what changed: after any change the hub compares the engine's state with what it last
//! published and sends every client one versioned change (the incidents that changed,
//! the engine-wide fields that changed), serialized once. Who is attached travels on its
//! own and costs one line per client, never the incidents. Consoles in this process and
//! on the socket speak the same messages.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::api::{
    Change, Detail, Event, Field, IncidentView, Outcome, PresenceView, Refusal, RefusalKind, Reply,
    Request, ServerMessage, PROTOCOL_VERSION,
};
use super::{Answer, Engine};
use crate::approve::Actor;

pub type ClientId = u64;

/// Who is attached goes to every client at most this often: a client that changes
/// what it views a thousand times a second costs the others ten lists a second, and
/// a person moving through the list sees the others follow within a tenth of a second.
const PRESENCE_EVERY: Duration = Duration::from_millis(100);

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
    /// The client told what it views and decides: the latest waits in its outbox
    /// (`Outbox::tell_presence`), so a flood of them is one message here.
    Presence {
        client: ClientId,
    },
    /// The client missed a version: it gets the whole state again.
    Resync {
        client: ClientId,
    },
    /// A read only the engine can answer (`Engine::answer`).
    Ask {
        client: ClientId,
        id: u64,
        question: super::api::Question,
    },
    /// What the orchestrator said, read in the background.
    Scheduler(crate::effects::orchestrator::Reading),
    /// How far a slow first poll has got.
    FirstPoll(super::api::FirstPoll),
    /// An effect worker's report (`Engine::carry_out_effects_on_workers`): recorded,
    /// and the replies held for it sent.
    Effect(Box<super::effects::Finished>),
    /// What came of an outbox row, for the engine to write (it is the state database's
    /// one writer); answered once written.
    OutboxMark(
        crate::notify::outbox::Mark,
        std::sync::mpsc::Sender<Result<()>>,
    ),
    /// OpenLineage events the listener or the file tail read, for the engine to keep
    /// (the one writer); answered with how many were new once committed.
    Lineage(
        super::lineage_in::EventBatch,
        std::sync::mpsc::Sender<Result<usize>>,
    ),
    /// Finish the work in hand and return (SIGTERM).
    Stop,
    /// What the poll task read: the engine stores it (the one writer) and acts on it.
    Polled(crate::monitor::poller::PollRead),
    /// The poll task answered an ask (`Engine::ask_poll`; what it read came just
    /// before): whatever waited for it may go on.
    PollAnswered,
    /// A warehouse probe's answer (evidence for a diagnosis, a verification dry run).
    Evidence(super::evidence::Found),
    /// The driver's outside world moved, on a thread of its own (the demo's story): what
    /// happened, for the timeline; the driver's turn goes on (`Driver::world_moved`).
    WorldMoved(Result<Vec<Event>>),
}

/// What moves the engine between messages: the wall clock, or the demo's story.
pub trait Driver {
    /// The hub is about to run: `post` reaches it. A driver whose outside world moves on
    /// a thread of its own has it report there (`HubMessage::WorldMoved`).
    fn start(&mut self, _post: Sender<HubMessage>) -> Result<()> {
        Ok(())
    }
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
    /// Whether a turn waits for the effects and probes in flight to report: a story's
    /// virtual time stands still while its outside world is asked something, so it
    /// plays the same however long that takes (the hub answers everyone meanwhile).
    /// The wall clock waits for nobody.
    fn waits_for_workers(&self) -> bool {
        false
    }
    /// A worker reported (its outcome is recorded), or the poll task answered: whatever
    /// waited for it may go on. `settled`: the intent whose last step this was, and the
    /// answer its request gets (a driver that asked itself hears it here).
    fn after_effect(
        &mut self,
        _engine: &mut Engine,
        _settled: Option<(i64, &Outcome)>,
    ) -> Result<Vec<Event>> {
        Ok(Vec::new())
    }
    /// The outside world this driver moves (`start`) reported what `happened`: the
    /// turn goes on. A step that failed ends the run, as a turn that failed does.
    fn world_moved(
        &mut self,
        _engine: &mut Engine,
        happened: Result<Vec<Event>>,
    ) -> Result<Vec<Event>> {
        happened
    }
}

#[cfg(test)]
mod cost;
mod outbox;
mod published;
pub use outbox::{Outbox, Outgoing};
use published::Published;

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
    /// The sender of `inbox`, for the driver (`Driver::start`).
    post: Sender<HubMessage>,
    clients: BTreeMap<ClientId, Client>,
    /// When this engine started, so consoles can tell a restart from a reconnect.
    started_at: crate::clock::Timestamp,
    /// Every event, as it happens (the headless demo prints them; serve logs them).
    emit: Box<dyn FnMut(&Event) + Send>,
    /// Return once the driver's story is over (the headless demo), rather than serving on.
    stop_when_finished: bool,
    /// Replies to requests whose change is on an effect worker, by its intent: sent
    /// when the worker's report is recorded. The hub answers everyone else meanwhile.
    held: BTreeMap<i64, Vec<(ClientId, u64)>>,
    /// What clients were last sent of the engine's state.
    published: Published,
    /// Who is attached changed since it last went to every client.
    presence_waits: bool,
    /// When it last went to every client.
    presence_sent: Option<Instant>,
    /// How many times it went to every client.
    presence_broadcasts: u64,
}

impl Hub {
    /// The hub over `engine`, reading `inbox`. Whatever runs an engine behind a hub
    /// (`dataward serve`, the demo) gets its effects and warehouse probes carried out
    /// on workers here, their reports sent to `post` (the sender of `inbox`): the
    /// engine's thread never waits on an orchestrator, a file, a subprocess or a
    /// warehouse, and no caller can forget to say so.
    pub fn new(
        mut engine: Engine,
        inbox: Receiver<HubMessage>,
        post: Sender<HubMessage>,
        emit: Box<dyn FnMut(&Event) + Send>,
    ) -> Hub {
        let answers = post.clone();
        let for_driver = post.clone();
        engine.set_evidence_worker(Arc::new(move |found| {
            let _ = answers.send(HubMessage::Evidence(found));
        }));
        engine.carry_out_effects_on_workers(move |finished| {
            let _ = post.send(HubMessage::Effect(Box::new(finished)));
        });
        Hub {
            engine,
            inbox,
            post: for_driver,
            clients: BTreeMap::new(),
            started_at: crate::clock::Clock::wall().timestamp(),
            emit,
            stop_when_finished: false,
            published: Published::default(),
            held: BTreeMap::new(),
            presence_waits: false,
            presence_sent: None,
            presence_broadcasts: 0,
        }
    }

    pub fn stopping_when_finished(mut self) -> Hub {
        self.stop_when_finished = true;
        self
    }

    /// Handles messages and turns until `Stop` (or every sender is gone), then closes
    /// every client and gives the engine back.
    pub fn run(mut self, driver: &mut dyn Driver) -> Result<Engine> {
        crate::blocking::mark_engine_thread();
        driver.start(self.post.clone())?;
        let mut changed = true;
        loop {
            if changed {
                self.publish(driver.finished());
                changed = false;
            }
            let waiting = driver.waits_for_workers() && self.engine.awaiting_workers();
            if self.stop_when_finished && driver.finished() && !waiting {
                break;
            }
            // Between any two messages, however many arrive: a flood never holds it.
            self.flush_presence(Instant::now());
            // Waiting for workers, the next turn is after their reports (messages).
            let next_turn = if waiting {
                Instant::now() + Duration::from_secs(3600)
            } else {
                driver.next_turn()
            };
            let wake = match self.presence_due() {
                Some(due) => due.min(next_turn),
                None => next_turn,
            };
            let wait = wake
                .saturating_duration_since(Instant::now())
                .min(Duration::from_secs(3600));
            match self.inbox.recv_timeout(wait) {
                Ok(HubMessage::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(message) => changed = self.handle(message, driver)?,
                Err(RecvTimeoutError::Timeout) => {
                    if Instant::now() >= next_turn && !driver.finished() {
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
                    started_at: self.started_at,
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
                self.publish_presence(Instant::now());
                let whole = self.whole();
                if let Some(new) = self.clients.get(&client) {
                    new.outbox.offer_snapshot(whole);
                }
                return Ok(false);
            }
            HubMessage::Detach { client } => {
                if let Some(gone) = self.clients.remove(&client) {
                    gone.outbox.close();
                    self.publish_presence(Instant::now());
                }
                return Ok(false);
            }
            HubMessage::Request { client, request } => {
                let Some(asker) = self.clients.get(&client) else {
                    return Ok(false);
                };
                let answer = if asker.read_only {
                    Answer::Now(Outcome::Refused {
                        reason: Refusal::new(
                            RefusalKind::ReadOnly,
                            format!(
                                "{} is attached read-only: an observer decides nothing",
                                asker.who
                            ),
                        ),
                    })
                } else if let Err(reason) = asker.actor.person() {
                    // Every command is recorded as someone's: without a known person,
                    // none is (never the uid in the person's place).
                    Answer::Now(Outcome::Refused {
                        reason: reason.into(),
                    })
                } else {
                    let actor = asker.actor.clone();
                    self.engine.answer_or_hold(request.clone(), &actor)
                };
                match answer {
                    Answer::Now(outcome) => {
                        if let Outcome::Accepted { events, .. } = &outcome {
                            let events = events.clone();
                            self.emit_all(&events);
                        }
                        self.reply(client, request.id, outcome)
                    }
                    Answer::Held(intent) => self
                        .held
                        .entry(intent)
                        .or_default()
                        .push((client, request.id)),
                }
                if let Some(asker) = self.clients.get(&client) {
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
                    if !asker
                        .outbox
                        .push(Outgoing::new(ServerMessage::Answer { id, answer }))
                    {
                        tracing::warn!(
                            "client {client} ({}) left too many answers unread: dropped",
                            asker.who
                        );
                    }
                    asker.outbox.left_hub();
                }
                // A read (`Engine::answer_question` takes the engine as it is): nothing
                // to publish.
                return Ok(false);
            }
            HubMessage::Presence { client } => {
                self.presence(client, Instant::now());
                return Ok(false);
            }
            HubMessage::Resync { client } => {
                let whole = self.whole();
                if let Some(c) = self.clients.get(&client) {
                    c.outbox.offer_snapshot(whole);
                    if let Some(viewing) = &c.viewing {
                        c.outbox.offer_latest(self.detail(viewing));
                    }
                    c.outbox.left_hub();
                }
                return Ok(false);
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
            HubMessage::PollAnswered => {
                self.engine.poll_answered();
                let events = driver.after_effect(&mut self.engine, None)?;
                self.emit_all(&events);
            }
            HubMessage::Effect(finished) => {
                let settled = self.engine.effect_finished(*finished);
                if let Some(settled) = &settled {
                    for (client, id) in self.held.remove(&settled.intent).unwrap_or_default() {
                        self.reply(client, id, settled.answer.clone());
                    }
                    self.emit_all(&settled.events);
                }
                let answered = settled.as_ref().map(|s| (s.intent, &s.answer));
                let events = driver.after_effect(&mut self.engine, answered)?;
                self.emit_all(&events);
            }
            HubMessage::OutboxMark(mark, answer) => {
                let _ = answer.send(self.engine.mark_outbox(&mark));
            }
            HubMessage::Lineage(batch, answer) => {
                let failures: Vec<_> = (batch.events.iter())
                    .filter(|(_, event)| {
                        event.event_type == dataward_core::lineage::openlineage::EventType::Fail
                    })
                    .cloned()
                    .collect();
                let stored = self.engine.store_lineage_events(batch);
                let kept = stored.is_ok();
                // The sender hears once its events are kept; a failed run they report
                // is the engine's business after that.
                let _ = answer.send(stored);
                if kept {
                    match self.engine.failed_runs_in(&failures) {
                        Ok(events) => self.emit_all(&events),
                        Err(e) => self.engine.notice(format!(
                            "a failed run reported by OpenLineage was not recorded: {e:#}"
                        )),
                    }
                }
            }
            HubMessage::WorldMoved(happened) => {
                let events = driver.world_moved(&mut self.engine, happened)?;
                self.emit_all(&events);
            }
            HubMessage::Stop => {}
        }
        Ok(true)
    }

    /// Sends a request's reply to the client that asked, if it is still attached.
    fn reply(&self, client: ClientId, id: u64, outcome: Outcome) {
        if let Some(asker) = self.clients.get(&client) {
            let reply = Outgoing::new(ServerMessage::Reply(Reply { id, outcome }));
            if !asker.outbox.push(reply) {
                tracing::warn!(
                    "client {client} ({}) left too many replies unread: dropped",
                    asker.who
                );
            }
        }
    }

    /// Sends every client what changed in the engine's state since the last time, as one
    /// versioned change serialized once; a client too far behind gets a whole snapshot
    /// instead. Only the incidents the engine marked changed are built, compared (as
    /// values, never serialized to be compared) and stored: the others are left where
    /// they are, so a change to one incident costs one incident whatever their number.
    /// The clients viewing an incident whose timeline or receipt changed get them again.
    fn publish(&mut self, finished: bool) {
        let (all, views) = self.engine.changed_views();
        let mut fresh = self.engine.changed_engine_wide(finished);
        // Each console knows who it is from its hello; the state is the same for all.
        fresh.actor = String::new();
        let mut details = HashMap::with_capacity(views.len());
        let mut rebuilt = Vec::with_capacity(views.len());
        for mut view in views {
            let detail = Detail::take(&mut view);
            details.insert(detail.incident.clone(), detail);
            rebuilt.push(view);
        }
        let published = &mut self.published;
        let incidents: Vec<IncidentView> = rebuilt
            .iter()
            .filter(|view| published.incident(&view.id) != Some(*view))
            .cloned()
            .collect();
        let same_list = !all
            && (self.engine.incident_ids()).eq(published
                .snapshot
                .incidents
                .iter()
                .map(|i| i.id.as_str()));
        let (removed, order) = if same_list {
            // The usual case: the same incidents in the same order, some changed.
            for view in rebuilt {
                let at = published.at[&view.id];
                published.snapshot.incidents[at] = view;
            }
            (Vec::new(), None)
        } else {
            published.relist(self.engine.incident_ids(), rebuilt)
        };
        #[cfg(debug_assertions)]
        {
            // Not counted: tests count what publishing costs a release build.
            let mut whole = self.engine.snapshot_uncounted(finished);
            whole
                .incidents
                .iter_mut()
                .for_each(|i| drop(Detail::take(i)));
            assert_eq!(
                published.snapshot.incidents, whole.incidents,
                "an incident changed without being marked (engine/incidents.rs)"
            );
        }
        let fields = Field::changed(&published.snapshot, &fresh);
        // The engine-wide fields as they are now, beside the incidents as stored.
        fresh.incidents = std::mem::take(&mut published.snapshot.incidents);
        published.snapshot = fresh;
        let details_changed: HashSet<String> = details
            .iter()
            .filter(|(id, detail)| published.details.get(*id) != Some(*detail))
            .map(|(id, _)| id.clone())
            .collect();
        if all {
            published.details = details;
        } else {
            published.details.extend(details);
        }
        let change = Change {
            version: published.version + 1,
            incidents,
            removed,
            order,
            fields,
        };
        if change
            != (Change {
                version: change.version,
                ..Change::default()
            })
        {
            published.version = change.version;
            published.whole = None;
            let item = Outgoing::new(ServerMessage::Change(Box::new(change)));
            let behind: Vec<ClientId> = self
                .clients
                .iter()
                .filter(|(_, c)| !c.outbox.offer_change(Arc::clone(&item)))
                .map(|(&id, _)| id)
                .collect();
            if !behind.is_empty() {
                let whole = self.whole();
                for id in behind {
                    self.clients[&id].outbox.offer_snapshot(Arc::clone(&whole));
                }
            }
        }
        for client in self.clients.values() {
            if let Some(viewing) = client
                .viewing
                .as_ref()
                .filter(|v| details_changed.contains(*v))
            {
                client.outbox.offer_latest(self.detail(viewing));
            }
        }
    }

    /// The whole state at the published version, with who is attached now.
    fn whole(&mut self) -> Arc<Outgoing> {
        if let Some(whole) = &self.published.whole {
            return Arc::clone(whole);
        }
        let mut snapshot = self.published.snapshot.clone();
        snapshot.attached = self.attached();
        let whole = Outgoing::new(ServerMessage::Snapshot {
            version: self.published.version,
            snapshot: Box::new(snapshot),
        });
        self.published.whole = Some(Arc::clone(&whole));
        whole
    }

    /// An incident's timeline and receipt as a message (empty for one the engine does
    /// not have, so a client asking always gets an answer).
    fn detail(&self, incident: &str) -> Arc<Outgoing> {
        let detail = self
            .published
            .details
            .get(incident)
            .cloned()
            .unwrap_or_else(|| Detail {
                incident: incident.to_string(),
                ..Detail::default()
            });
        Outgoing::new(ServerMessage::Detail(Box::new(detail)))
    }

    fn attached(&self) -> Vec<PresenceView> {
        self.clients
            .values()
            .map(|c| PresenceView {
                who: c.who.clone(),
                read_only: c.read_only,
                viewing: c.viewing.clone(),
                deciding: c.deciding.clone(),
            })
            .collect()
    }

    /// Who is attached changed: it goes to everyone now, or once `PRESENCE_EVERY` has
    /// passed since it last went (`flush_presence`), as one list with every change.
    /// A snapshot made meanwhile has it as it is now.
    fn publish_presence(&mut self, now: Instant) {
        self.published.whole = None;
        self.presence_waits = true;
        self.flush_presence(now);
    }

    /// When a waiting change to who is attached is to go out.
    fn presence_due(&self) -> Option<Instant> {
        if !self.presence_waits {
            return None;
        }
        Some(match self.presence_sent {
            Some(sent) => sent + PRESENCE_EVERY,
            None => Instant::now(),
        })
    }

    /// Sends who is attached, to everyone, if a change waits and its time has come: one
    /// line per client, whatever the incidents.
    fn flush_presence(&mut self, now: Instant) {
        if !self.presence_waits
            || self
                .presence_sent
                .is_some_and(|sent| now < sent + PRESENCE_EVERY)
        {
            return;
        }
        self.presence_waits = false;
        self.presence_sent = Some(now);
        self.presence_broadcasts += 1;
        let item = Outgoing::new(ServerMessage::Presence {
            attached: self.attached(),
        });
        for client in self.clients.values() {
            client.outbox.offer_latest(Arc::clone(&item));
        }
    }

    /// A client's latest presence: a new incident viewed gets its timeline and receipt
    /// sent, and any change goes to everyone.
    fn presence(&mut self, client: ClientId, now: Instant) {
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        let Some((viewing, deciding)) = c.outbox.take_presence() else {
            return;
        };
        if (&c.viewing, &c.deciding) == (&viewing, &deciding) {
            return;
        }
        let newly_viewed = viewing.clone().filter(|v| c.viewing.as_ref() != Some(v));
        c.viewing = viewing;
        c.deciding = deciding;
        if let Some(incident) = newly_viewed {
            let detail = self.detail(&incident);
            self.clients[&client].outbox.offer_latest(detail);
        }
        self.publish_presence(now);
    }
}
