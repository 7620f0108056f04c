//! The terminal console. One loop: every input (keys, resizes, the engine's state and
//! its changes) arrives on one channel; the loop drains what is queued, applies it to the
//! plain state, sends any commands, and redraws only when something changed, at most
//! once per frame interval. Nothing redraws on a timer but a countdown on screen, once a
//! second: over SSH every frame costs.

pub mod action;
pub mod bars;
pub mod clean;
pub mod clipboard;
pub mod commands;
pub mod diff;
pub mod drawn;
pub mod fixtures;
pub mod help;
pub mod incoming;
pub mod keymap;
pub mod keys;
pub mod line;
pub mod link;
pub mod listing;
pub mod mouse;
pub mod overlays;
pub mod prefs;
pub mod presence;
pub mod screens;
pub mod state;
pub mod symptoms;
pub mod terminal;
#[cfg(test)]
pub(crate) mod test_support;
pub mod theme;
pub mod timeline;
pub mod tree;
pub mod view;
pub mod widgets;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use crossterm::event::{self, Event, KeyEventKind};

use crate::engine::api::{ClientMessage, ServerMessage};
use incoming::Prepared;
use state::{update, Action, App};
use theme::Theme;

/// The two ends of the engine seam the console holds: the protocol's messages, the same
/// whether the engine runs in this process or behind its socket. A link that loses its
/// connection says so with a `Goodbye` and, if it tries again, a new `Hello` follows.
pub struct ConsoleLink {
    pub to_engine: Sender<ClientMessage>,
    pub from_engine: Receiver<ServerMessage>,
}

pub struct ConsoleOptions {
    /// Remove every key that sends a decision (approve, reject, roll back, forward, run,
    /// close, reopen).
    pub read_only: bool,
    /// The config whose `[console]` and `[keys]` hold the person's theme, mouse and
    /// keys (`console/prefs.rs`); read when it exists.
    pub config: Option<PathBuf>,
    /// `--theme`: a built-in theme (dark, light, ansi16, colorblind) or a theme file,
    /// which changes only what it sets; over the config's.
    pub theme: Option<String>,
}

/// Redraw at most this often, however fast snapshots and keys arrive.
const FRAME_INTERVAL: Duration = Duration::from_millis(16);
/// How often the input thread looks up to see whether the console has closed, and the
/// signal thread whether a quit signal came.
const INPUT_POLL: Duration = Duration::from_millis(100);
/// How often a countdown on screen (the outbox's next try) is redrawn.
const COUNTDOWN_TICK: Duration = Duration::from_secs(1);

enum Message {
    Input(Event),
    /// SIGTERM, SIGHUP, SIGINT or SIGQUIT: quit as `q` does.
    QuitSignal,
    InputFailed(std::io::Error),
    /// The engine's state (a whole snapshot or a change, presence, a timeline), made
    /// ready on the link thread.
    Engine(Action),
    /// Anything else from the engine: a hello, a reply, a goodbye.
    Other(ServerMessage),
    EngineStopped,
}

pub fn run(link: ConsoleLink, options: ConsoleOptions) -> Result<()> {
    let prefs = prefs::load(options.config.as_deref(), options.theme.as_deref())?;
    let (theme_name, user_theme) = prefs::theme_parts(prefs.theme.as_ref())?;
    let no_color = theme::no_color_requested();
    let theme = Theme::load(&theme_name, user_theme.as_ref(), no_color)?;
    let mut app = App::new(options.read_only, theme, user_theme, no_color);
    app.keymap = prefs.keymap;
    app.mouse = prefs.mouse;

    let (sender, messages) = mpsc::channel();
    let (retire, retired) = mpsc::channel();
    forward_engine(
        link.from_engine,
        link.to_engine.clone(),
        sender.clone(),
        retired,
    );
    let (mut screen, _restore) = terminal::setup().context("setting up the terminal")?;
    let stop_input = Arc::new(AtomicBool::new(false));
    read_input(sender, Arc::clone(&stop_input));

    let channels = Channels {
        messages,
        to_engine: link.to_engine,
        retire,
    };
    let result = main_loop(&mut screen, &mut app, &channels);
    stop_input.store(true, Ordering::Relaxed);
    result
}

/// What the loop reads and where it sends.
struct Channels {
    messages: Receiver<Message>,
    to_engine: Sender<ClientMessage>,
    /// Snapshots the console replaced, back to the link thread to be freed there.
    retire: Sender<Box<Prepared>>,
}

/// The link thread: everything from the engine passes here on its way to the loop. It
/// follows the engine's versions (`incoming::Feed`): a whole snapshot (on attaching, or
/// asked for again here after a missed version) is sanitized and indexed here against
/// the last one the loop gave back; each change is cleaned here and applied in place by
/// the loop. Of several whole snapshots waiting, only the newest is prepared.
fn forward_engine(
    from_engine: Receiver<ServerMessage>,
    to_engine: Sender<ClientMessage>,
    sender: Sender<Message>,
    retired: Receiver<Box<Prepared>>,
) {
    thread::spawn(move || {
        let mut waiting = VecDeque::new();
        let mut feed = incoming::Feed::default();
        let mut previous = None;
        loop {
            let message = match waiting.pop_front() {
                Some(message) => message,
                None => match from_engine.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                },
            };
            if matches!(message, ServerMessage::Snapshot { .. }) {
                waiting.extend(from_engine.try_iter());
                if waiting
                    .iter()
                    .any(|m| matches!(m, ServerMessage::Snapshot { .. }))
                {
                    feed.skip_to_next_whole();
                    continue;
                }
            }
            let fed = feed.take(message, || {
                // The newest the loop gave back; older ones are freed here.
                if let Some(last) = retired.try_iter().last() {
                    previous = Some(*last);
                }
                previous.take()
            });
            let message = match fed {
                incoming::Fed::Action(action) => Message::Engine(action),
                incoming::Fed::Other(message) => Message::Other(message),
                incoming::Fed::Resync => {
                    // The console's loop may be gone; the engine learns it on detach.
                    let _ = to_engine.send(ClientMessage::Resync);
                    continue;
                }
                incoming::Fed::Nothing => continue,
            };
            if sender.send(message).is_err() {
                return;
            }
        }
        let _ = sender.send(Message::EngineStopped);
    });
}

fn read_input(sender: Sender<Message>, stop: Arc<AtomicBool>) {
    watch_quit_signals(sender.clone(), Arc::clone(&stop));
    thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            // Poll with a timeout only so this thread notices the console closing;
            // nothing is drawn on this tick.
            let message = match event::poll(INPUT_POLL) {
                Ok(false) => continue,
                Ok(true) => match event::read() {
                    Ok(event) => Message::Input(event),
                    Err(error) => Message::InputFailed(error),
                },
                Err(error) => Message::InputFailed(error),
            };
            let failed = matches!(message, Message::InputFailed(_));
            if sender.send(message).is_err() || failed {
                return;
            }
        }
    });
}

/// Quit signals are watched on a thread of their own: when the terminal goes away
/// (SIGHUP from a dropped SSH connection), crossterm can keep reading the dead terminal
/// without ever returning, and a console waiting on it would live on unseen.
fn watch_quit_signals(sender: Sender<Message>, stop: Arc<AtomicBool>) {
    thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if crate::signals::quit_signal().is_some() {
                let _ = sender.send(Message::QuitSignal);
                return;
            }
            thread::sleep(INPUT_POLL);
        }
    });
}

fn main_loop(screen: &mut terminal::Screen, app: &mut App, channels: &Channels) -> Result<()> {
    let Channels {
        messages,
        to_engine,
        retire,
    } = channels;
    send_outgoing(app, to_engine);
    // Mouse reports only while the person wants them (`[console] mouse`, `:mouse`).
    let mut mouse_on = false;
    mouse::sync(app.mouse, &mut mouse_on)?;
    // Whatever the shell left on the screen goes: the first frame draws every cell.
    terminal::draw(screen, true, |frame| view::render(frame, app))?;
    let mut last_draw = Instant::now();
    loop {
        // A countdown on screen is redrawn once a second; nothing else is on a timer.
        let first = if app.counting_down() {
            match messages.recv_timeout(COUNTDOWN_TICK) {
                Ok(message) => Some(message),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
        } else {
            let Ok(message) = messages.recv() else {
                return Ok(());
            };
            Some(message)
        };
        let mut changed = match first {
            Some(message) => apply(app, message, retire)?,
            None => true,
        };
        while let Ok(message) = messages.try_recv() {
            changed |= apply(app, message, retire)?;
        }
        // Too soon after the last frame: keep collecting until the frame is due, so a
        // burst of snapshots or a held key becomes one redraw.
        if changed {
            let due = last_draw + FRAME_INTERVAL;
            while let Some(wait) = due.checked_duration_since(Instant::now()) {
                match messages.recv_timeout(wait) {
                    Ok(message) => changed |= apply(app, message, retire)?,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        changed |= send_outgoing(app, to_engine);
        if let Some(text) = app.clipboard.take() {
            clipboard::send(&text).context("copying to the clipboard")?;
        }
        mouse::sync(app.mouse, &mut mouse_on)?;
        if app.quit {
            return Ok(());
        }
        if app.suspend {
            app.suspend = false;
            terminal::suspend()?;
            // Back from `fg`: the shell drew over everything.
            app.full_redraw = true;
            // Suspending gave the terminal back with the mouse off.
            mouse_on = false;
            mouse::sync(app.mouse, &mut mouse_on)?;
            changed = true;
        }
        if changed {
            // A full redraw forgets what ratatui thinks is on screen (tmux re-attach,
            // Ctrl-L, a new theme) and draws every cell, asking the terminal nothing.
            let full = std::mem::take(&mut app.full_redraw);
            terminal::draw(screen, full, |frame| view::render(frame, app))?;
            last_draw = Instant::now();
        }
    }
}

/// Apply one message; true when the screen may have changed. A snapshot it replaces
/// goes back to the link thread rather than being freed here, on the input path.
fn apply(app: &mut App, message: Message, retire: &Sender<Box<Prepared>>) -> Result<bool> {
    let action = match message {
        Message::Engine(action) => action,
        Message::Other(ServerMessage::Reply(reply)) => Action::ReplyArrived(reply),
        Message::Other(ServerMessage::Hello {
            started_at,
            you,
            read_only,
            ..
        }) => Action::Hello {
            started_at,
            you,
            read_only,
        },
        Message::Other(ServerMessage::Goodbye { reason }) => Action::ConnectionLost(reason.message),
        // A console asks nothing: the reads are the command line's. The state never
        // comes as it is: the link thread made it ready (`Message::Engine`).
        Message::Other(
            ServerMessage::Answer { .. }
            | ServerMessage::Snapshot { .. }
            | ServerMessage::Change(_)
            | ServerMessage::Presence { .. }
            | ServerMessage::Detail(_),
        ) => return Ok(false),
        Message::EngineStopped => Action::EngineStopped,
        Message::QuitSignal => Action::Quit,
        Message::InputFailed(error) => return Err(error).context("reading the terminal"),
        Message::Input(Event::Key(key)) if key.kind != KeyEventKind::Release => {
            return Ok(keys::press(app, key));
        }
        Message::Input(Event::Resize(..)) => Action::Resized,
        Message::Input(Event::Paste(text)) => Action::Paste(text),
        Message::Input(Event::Mouse(event)) if mouse::matters(app, &event) => Action::Mouse(event),
        Message::Input(_) => return Ok(false),
    };
    update(app, action);
    if let Some(replaced) = app.take_retired() {
        // The link thread is gone only when the engine is: then free it here.
        let _ = retire.send(replaced);
    }
    Ok(true)
}

/// Sends the numbered requests and any presence change; true when the screen changed
/// (a decision that could not be sent says so).
fn send_outgoing(app: &mut App, to_engine: &Sender<ClientMessage>) -> bool {
    let before = app.message.clone();
    for message in link::outgoing(app) {
        let request = matches!(message, ClientMessage::Request(_));
        if to_engine.send(message).is_err() {
            app.engine_stopped = true;
            if request {
                app.message = Some("engine stopped: the decision was not sent".into());
            }
        }
    }
    app.message != before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approve::Actor;
    use crate::console::fixtures::sample_snapshot;
    use crate::engine::api::{Change, Detail, Field, Snapshot, PROTOCOL_VERSION};
    use crate::engine::hub::{HubMessage, Outbox, Outgoing};

    fn at(text: &str) -> crate::clock::Timestamp {
        text.parse().unwrap()
    }

    /// Bounds a wait against hanging, never a timing.
    const HANG: Duration = Duration::from_secs(60);

    /// A console's link to a hub played by the test: the hub's end of it (what the
    /// console sends, the outbox the hub fills), and the console's end, as its loop
    /// receives it once the link thread is through.
    struct Attached {
        at_hub: Receiver<HubMessage>,
        outbox: Outbox,
        messages: Receiver<Message>,
        retire: Sender<Box<Prepared>>,
        to_engine: Sender<ClientMessage>,
    }

    fn attach() -> Attached {
        let (hub, at_hub) = mpsc::channel();
        let link =
            crate::engine::attach::in_process(&hub, Actor::current(), "tester".into(), false)
                .unwrap();
        let Ok(HubMessage::Attach { outbox, .. }) = at_hub.recv_timeout(HANG) else {
            panic!("the console did not attach");
        };
        let (sender, messages) = mpsc::channel();
        let (retire, retired) = mpsc::channel();
        forward_engine(link.from_engine, link.to_engine.clone(), sender, retired);
        Attached {
            at_hub,
            outbox,
            messages,
            retire,
            to_engine: link.to_engine,
        }
    }

    impl Attached {
        /// Applies what reaches the console's loop until `done` holds of the console.
        fn until(&self, app: &mut App, done: impl Fn(&App) -> bool) {
            while !done(app) {
                let message = self
                    .messages
                    .recv_timeout(HANG)
                    .expect("the console waited");
                apply(app, message, &self.retire).unwrap();
            }
        }
    }

    fn without_details(mut snapshot: Snapshot) -> Snapshot {
        for incident in &mut snapshot.incidents {
            Detail::take(incident);
        }
        snapshot
    }

    /// The console's state as one that attached fresh to `whole` shows it.
    fn fresh(whole: Snapshot) -> Snapshot {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(whole)));
        app.snapshot
    }

    #[test]
    fn changes_are_applied_in_place_and_only_attaching_brings_the_state_whole() {
        let engine = attach();
        let mut app = App::new(false, Theme::fallback(), None, false);
        engine.outbox.push(Outgoing::new(ServerMessage::Hello {
            protocol: PROTOCOL_VERSION,
            started_at: crate::clock::Timestamp::from_unix(0).unwrap(),
            you: "tester".into(),
            read_only: false,
        }));
        let mut state = without_details(sample_snapshot());
        engine
            .outbox
            .offer_snapshot(Outgoing::new(ServerMessage::Snapshot {
                version: 1,
                snapshot: Box::new(state.clone()),
            }));
        engine.until(&mut app, |app| app.connected);
        // The person views INC-6: its timeline and receipt come, and stay with it
        // through the changes to it.
        let mut viewed = sample_snapshot().incidents[1].clone();
        let detail = Detail::take(&mut viewed);
        engine
            .outbox
            .offer_latest(Outgoing::new(ServerMessage::Detail(Box::new(
                detail.clone(),
            ))));
        engine.until(&mut app, |app| app.snapshot.incidents[1].receipt.is_some());
        for n in 0..20u64 {
            let old = state.clone();
            state.incidents[1].title = format!("nulls \u{1b}[2J{n}");
            state.now = at(&format!("2026-11-24T14:{n:02}:00Z"));
            let change = Change {
                version: 2 + n,
                incidents: vec![state.incidents[1].clone()],
                fields: Field::changed(&old, &state),
                ..Change::default()
            };
            assert!(engine
                .outbox
                .offer_change(Outgoing::new(ServerMessage::Change(Box::new(change)))));
            let now = state.now;
            engine.until(&mut app, |app| app.snapshot.now == now);
        }
        let mut whole = state.clone();
        detail.merge_into(&mut whole.incidents[1]);
        assert_eq!(
            app.snapshot,
            fresh(whole),
            "it shows what a fresh console would"
        );
        assert_eq!(
            app.wholes_taken, 1,
            "the state came whole once, on attaching; each change was applied in place"
        );
        drop(engine.to_engine);
    }

    #[test]
    fn a_missed_version_asks_the_engine_for_the_state_whole() {
        let engine = attach();
        let mut app = App::new(false, Theme::fallback(), None, false);
        let state = without_details(sample_snapshot());
        engine
            .outbox
            .offer_snapshot(Outgoing::new(ServerMessage::Snapshot {
                version: 1,
                snapshot: Box::new(state.clone()),
            }));
        engine.until(&mut app, |app| app.connected);
        let mut later = state.clone();
        later.now = at("2026-11-24T15:00:00Z");
        engine
            .outbox
            .offer_change(Outgoing::new(ServerMessage::Change(Box::new(Change {
                version: 3,
                fields: Field::changed(&state, &later),
                ..Change::default()
            }))));
        loop {
            match engine.at_hub.recv_timeout(HANG) {
                Ok(HubMessage::Resync { .. }) => break,
                Ok(_) => continue,
                Err(e) => panic!("the console did not ask again: {e}"),
            }
        }
        // Until the state comes whole, the gap is not filled by guesswork.
        assert_eq!(app.snapshot.now, at("2026-11-24T14:20:00Z"));
        engine
            .outbox
            .offer_snapshot(Outgoing::new(ServerMessage::Snapshot {
                version: 3,
                snapshot: Box::new(later.clone()),
            }));
        engine.until(&mut app, |app| {
            app.snapshot.now == at("2026-11-24T15:00:00Z")
        });
        assert_eq!(app.snapshot, fresh(later));
    }
}
