//! What the engine sends, made ready for the screen before it reaches the input path.
//! The console holds the engine's state as a replica: a whole snapshot when it attaches
//! (or asks again after missing a version), then each change applied in place (one
//! incident replaced where it is, presence replaced), so a change costs the console what
//! changed, not the estate. [`Feed`] follows the versions on the link thread and cleans
//! what each message brings; the input path only moves it in.
//!
//! A whole snapshot At 10,000 incidents a snapshot is some 15 MB of text: sanitizing all of it,
//! lowercasing what the filter searches, and freeing the one it replaces each cost tens
//! of milliseconds, during which no key would be read. So the console's link thread
//! calls [`prepare`], which does that work only for incidents that changed, and the
//! input path only moves the result in (`state::update` with `Action::SnapshotReady`);
//! the snapshot it replaces goes back to the link thread, which compares the next one
//! with it and frees it there.

use std::collections::HashMap;

use crate::console::action::Action;
use crate::console::clean;
use crate::console::listing::Orders;
use crate::console::screens::list;
use crate::console::state::status_word;
use crate::engine::api::{Change, Detail, Field, IncidentView, ServerMessage, Snapshot};
use crate::engine::client::{Next, Versions};

/// Between the fields of an incident's search text: sanitized text holds no control
/// character, and neither does a filter (typed ones are refused, pasted ones escaped).
const FIELD_BREAK: char = '\n';

/// A snapshot whose every text is sanitized, with what the list needs per incident
/// computed once: the text the filter searches and where each incident is by id. Only
/// [`prepare`] makes one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    pub(crate) snapshot: Snapshot,
    /// Per incident, in the snapshot's order: see [`searchable`].
    pub(crate) search: Vec<String>,
    /// Where each incident is in `snapshot.incidents`; the first of any repeated id.
    pub(crate) by_id: HashMap<String, usize>,
    /// The widest text of each of the list's columns over every incident, so the list's
    /// columns size to the snapshot without a frame measuring every row.
    pub(crate) list_widths: [usize; 7],
    /// Every column's order, for a sorted list.
    pub(crate) orders: Orders,
}

impl Prepared {
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
}

/// Sanitizes `raw` and computes what the list needs from it, reusing `previous` (a
/// snapshot prepared before, which this consumes and frees) for every incident that did
/// not change. An incoming incident equal to a sanitized one is already clean: nothing
/// about it is done again.
pub fn prepare(mut raw: Snapshot, previous: Option<Prepared>) -> Prepared {
    let incidents = std::mem::take(&mut raw.incidents);
    // Everything but the incidents is small: clean it whole.
    clean::snapshot(&mut raw);
    let (old, mut old_search, old_by_id) = match previous {
        Some(previous) => (previous.snapshot.incidents, previous.search, previous.by_id),
        None => Default::default(),
    };
    let mut search = Vec::with_capacity(incidents.len());
    let mut by_id = HashMap::with_capacity(incidents.len());
    raw.incidents = incidents;
    for (at, incident) in raw.incidents.iter_mut().enumerate() {
        let unchanged = old_by_id
            .get(&incident.id)
            .filter(|&&was| old.get(was) == Some(&*incident));
        match unchanged {
            Some(&was) => search.push(std::mem::take(&mut old_search[was])),
            None => {
                clean::clean_incident(incident);
                search.push(searchable(incident));
            }
        }
        by_id.entry(incident.id.clone()).or_insert(at);
    }
    let list_widths = list::widest(&raw.incidents);
    let orders = Orders::new(&raw.incidents, &search);
    Prepared {
        snapshot: raw,
        search,
        by_id,
        list_widths,
        orders,
    }
}

/// A change from the engine made ready off the input path: its incidents cleaned, each
/// with its search text (the viewed one with its timeline and receipt), and its
/// engine-wide fields cleaned. Only [`Feed`] makes one; `state::update` applies it in
/// place (`Action::ChangeReady`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreparedChange {
    pub(crate) incidents: Vec<(IncidentView, String)>,
    pub(crate) removed: Vec<String>,
    pub(crate) order: Option<Vec<String>>,
    pub(crate) fields: Vec<Field>,
}

fn prepare_change(change: Change, detail: Option<&Detail>) -> PreparedChange {
    let Change {
        version: _,
        incidents,
        removed,
        order,
        mut fields,
    } = change;
    fields.iter_mut().for_each(clean::field);
    let incidents = incidents
        .into_iter()
        .map(|mut incident| {
            clean::clean_incident(&mut incident);
            // Changes travel without timeline and receipt: the viewed incident keeps
            // the ones held (already clean).
            if let Some(detail) = detail.filter(|d| d.incident == incident.id) {
                detail.merge_into(&mut incident);
            }
            let search = searchable(&incident);
            (incident, search)
        })
        .collect();
    PreparedChange {
        incidents,
        removed,
        order,
        fields,
    }
}

/// The link thread's side of the console's replica: which version the console holds,
/// and the timeline and receipt of the incident it views (cleaned), which changes and
/// snapshots travel without.
#[derive(Debug, Default)]
pub struct Feed {
    versions: Versions,
    detail: Option<Detail>,
}

/// What one message from the engine comes to.
#[derive(Debug)]
pub enum Fed {
    /// For the console's loop to apply.
    Action(Action),
    /// A version was missed: ask the engine for the state whole (`ClientMessage::Resync`).
    Resync,
    /// Not about the state (a hello, a reply, a goodbye): as it came.
    Other(ServerMessage),
    /// Nothing to do: a change to no state, or while the one asked for is on its way.
    Nothing,
}

impl Feed {
    /// Takes one message from the engine. A whole snapshot is prepared against
    /// `previous` (a snapshot the console gave back: see [`prepare`]).
    pub fn take(
        &mut self,
        message: ServerMessage,
        previous: impl FnOnce() -> Option<Prepared>,
    ) -> Fed {
        let holding = self.versions.held().is_some();
        match message {
            ServerMessage::Snapshot { version, snapshot } => {
                self.versions.whole(version);
                let mut prepared = prepare(*snapshot, previous());
                if let Some(detail) = &self.detail {
                    if let Some(&at) = prepared.by_id.get(&detail.incident) {
                        detail.merge_into(&mut prepared.snapshot.incidents[at]);
                    }
                }
                Fed::Action(Action::SnapshotReady(Box::new(prepared)))
            }
            ServerMessage::Change(change) => match self.versions.change(change.version) {
                Next::Apply => Fed::Action(Action::ChangeReady(Box::new(prepare_change(
                    *change,
                    self.detail.as_ref(),
                )))),
                Next::Gap => Fed::Resync,
                Next::Ignore => Fed::Nothing,
            },
            ServerMessage::Presence { mut attached } if holding => {
                clean::presence(&mut attached);
                Fed::Action(Action::PresenceArrived(attached))
            }
            ServerMessage::Detail(mut detail) => {
                clean::detail(&mut detail);
                self.detail = Some((*detail).clone());
                if holding {
                    Fed::Action(Action::DetailArrived(detail))
                } else {
                    Fed::Nothing
                }
            }
            // Before the first snapshot: it brings who is attached.
            ServerMessage::Presence { .. } => Fed::Nothing,
            // A new engine (or the same one again): its versions start afresh.
            hello @ ServerMessage::Hello { .. } => {
                *self = Feed::default();
                Fed::Other(hello)
            }
            other => Fed::Other(other),
        }
    }

    /// A newer whole snapshot is already waiting: the one before it is not prepared,
    /// and neither is any change until that newer one.
    pub fn skip_to_next_whole(&mut self) {
        self.versions.await_whole();
    }
}

/// Where [`searchable`] puts the fields the list sorts by.
pub(crate) const ID: usize = 0;
pub(crate) const TITLE: usize = 1;
pub(crate) const TABLE: usize = 2;
pub(crate) const CHECK: usize = 5;

/// The `n`th field of a [`searchable`] text.
pub(crate) fn field(searched: &str, n: usize) -> &str {
    searched.split(FIELD_BREAK).nth(n).unwrap_or("")
}

/// What the filter searches in an incident: what the list shows and the tables of its
/// symptoms (an alert about one of them finds the incident it joined), lowercased, one
/// field after another.
pub(crate) fn searchable(incident: &IncidentView) -> String {
    let mut text = String::new();
    let opened = incident.opened_at.to_string();
    let fields = [
        incident.id.as_str(),
        incident.title.as_str(),
        incident.table.as_str(),
        status_word(incident.status),
        opened.as_str(),
        incident.check.as_str(),
    ]
    .into_iter()
    .chain(incident.symptoms.iter().map(|s| s.table.as_str()));
    for field in fields {
        text.extend(field.chars().flat_map(char::to_lowercase));
        text.push(FIELD_BREAK);
    }
    text
}

/// The list filter: a case-insensitive substring of any one field, or `!substring` to
/// hide the incidents that have it.
pub(crate) struct Needle {
    invert: bool,
    lowered: String,
}

impl Needle {
    pub(crate) fn new(filter: &str) -> Needle {
        let (invert, text) = match filter.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, filter),
        };
        Needle {
            invert,
            lowered: text.chars().flat_map(char::to_lowercase).collect(),
        }
    }

    /// Whether an incident whose [`searchable`] text is `haystack` is shown.
    pub(crate) fn shows(&self, haystack: &str) -> bool {
        if self.lowered.is_empty() {
            return true;
        }
        // A field break in the filter would match across two fields.
        let found = !self.lowered.contains(FIELD_BREAK) && haystack.contains(&self.lowered);
        found != self.invert
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::{sample_incident, sample_snapshot};
    use crate::console::listing::SortColumn;
    use crate::console::state::{update, App};
    use crate::console::theme::Theme;
    use crate::engine::api::IncidentStatus;

    fn shown(app: &App) -> Vec<&str> {
        let visible = app.visible_incidents();
        visible
            .iter()
            .map(|incident| incident.id.as_str())
            .collect()
    }

    fn filtered_app(filter: &str) -> App {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        update(&mut app, Action::Filter);
        update(&mut app, Action::Paste(filter.into()));
        update(&mut app, Action::Submit);
        app
    }

    #[test]
    fn a_prepared_snapshot_is_the_sanitized_one() {
        let mut raw = sample_snapshot();
        raw.incidents[0].title = "rows\u{1b}[2J\u{202e}gone".into();
        raw.notices.push("bell\u{7}".into());
        let mut expected = raw.clone();
        clean::snapshot(&mut expected);
        assert_eq!(prepare(raw, None).snapshot, expected);
    }

    #[test]
    fn only_what_changed_is_cleaned_again_and_the_rest_is_still_clean() {
        let mut raw = sample_snapshot();
        raw.incidents[1].title = "late\u{1b}]52;c;payload\u{7}".into();
        let first = prepare(raw.clone(), None);
        // The same raw again: the unclean incident is not equal to its sanitized self,
        // so it is cleaned again rather than reused raw.
        raw.incidents[0].title = "changed \u{202e}title".into();
        let second = prepare(raw.clone(), Some(first));
        let mut expected = raw;
        clean::snapshot(&mut expected);
        assert_eq!(second.snapshot, expected);
        assert_eq!(second.search.len(), 2);
        assert!(second.search[0].contains("changed \\u{202e}title"));
        assert_eq!(second.by_id["INC-6"], 1);
    }

    #[test]
    fn an_unchanged_incident_keeps_its_search_text() {
        let first = prepare(sample_snapshot(), None);
        let before = first.search.clone();
        let mut raw = sample_snapshot();
        raw.incidents.swap(0, 1);
        let second = prepare(raw, Some(first));
        assert_eq!(second.search, [before[1].clone(), before[0].clone()]);
        assert_eq!(second.by_id["INC-7"], 1);
    }

    #[test]
    fn the_filter_matches_within_one_field_and_bang_inverts() {
        let incident = &sample_snapshot().incidents[0];
        let text = searchable(incident);
        assert!(Needle::new("charges row").shows(&text));
        assert!(Needle::new("OPEN").shows(&text));
        assert!(Needle::new("fct_daily").shows(&text), "a symptom's table");
        assert!(!Needle::new("!inc-7").shows(&text));
        assert!(Needle::new("").shows(&text) && Needle::new("!").shows(&text));
        // The end of the id and the start of the title are two fields.
        assert!(!Needle::new("7\ncharges").shows(&text));
        assert!(!Needle::new("inc-7charges").shows(&text));
    }

    #[test]
    fn the_filter_follows_each_new_snapshot() {
        let mut app = filtered_app("customers");
        assert_eq!(shown(&app), ["INC-6"]);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));
        let mut next = sample_snapshot();
        next.incidents[0].table = "PAYMENTS.CUSTOMERS_V2".into();
        let prepared = prepare(next.clone(), app.take_retired().map(|old| *old));
        update(&mut app, Action::SnapshotReady(Box::new(prepared)));
        assert_eq!(shown(&app), ["INC-7", "INC-6"]);
        assert_eq!(
            app.selected_index(),
            Some(1),
            "the selection stays on INC-6"
        );
        next.incidents.remove(1);
        update(&mut app, Action::SnapshotArrived(Box::new(next)));
        assert_eq!(shown(&app), ["INC-7"]);
        assert_eq!(app.selected_incident.as_deref(), Some("INC-7"));
        update(&mut app, Action::Back);
        assert_eq!(shown(&app), ["INC-7"], "Esc clears the filter");
    }

    #[test]
    fn a_ready_snapshot_replaces_the_last_and_hands_it_back() {
        let mut app = filtered_app("");
        let mut next = sample_snapshot();
        next.now = "2026-11-24T14:21:00Z".parse().unwrap();
        next.incidents[1].title = "nulls\u{1b}[2J".into();
        let prepared = prepare(next, app.take_retired().map(|old| *old));
        update(&mut app, Action::SnapshotReady(Box::new(prepared)));
        assert_eq!(app.snapshot.now.hour_minute(), "14:21");
        assert_eq!(app.snapshot.incidents[1].title, "nulls\\x1b[2J");
        let replaced = app
            .take_retired()
            .expect("the last snapshot, to free elsewhere");
        assert_eq!(replaced.snapshot().now.hour_minute(), "14:20");
        assert!(app.take_retired().is_none());
    }

    #[test]
    fn a_filter_set_without_update_still_applies() {
        let mut app = filtered_app("");
        app.list.filter = "!customers".into();
        assert_eq!(shown(&app), ["INC-7"]);
        app.snapshot.incidents.pop();
        app.list.filter.clear();
        assert_eq!(shown(&app), ["INC-7"]);
    }

    #[test]
    fn the_detail_finds_its_incident_after_the_order_changes() {
        let mut app = filtered_app("");
        update(&mut app, Action::Down);
        update(&mut app, Action::Open);
        assert_eq!(app.open_incident().unwrap().id, "INC-6");
        let mut next = sample_snapshot();
        next.incidents.swap(0, 1);
        update(&mut app, Action::SnapshotArrived(Box::new(next)));
        assert_eq!(app.open_incident().unwrap().id, "INC-6");
    }

    /// Feeds `messages` to a console as its link thread and loop do.
    fn fed(messages: Vec<ServerMessage>) -> App {
        let mut feed = Feed::default();
        let mut app = App::new(false, Theme::fallback(), None, false);
        for message in messages {
            match feed.take(message, || None) {
                Fed::Action(action) => update(&mut app, action),
                other => panic!("{other:?}"),
            }
        }
        app
    }

    fn without_details(mut snapshot: Snapshot) -> Snapshot {
        for incident in &mut snapshot.incidents {
            Detail::take(incident);
        }
        snapshot
    }

    /// What the list shows, sorted by each column either way, and its columns' widths.
    fn listing(app: &mut App) -> Vec<String> {
        let mut seen = vec![format!("{:?}", app.list.widths())];
        for _ in 0..=SortColumn::ALL.len() {
            for _ in 0..2 {
                seen.push(format!("{:?}", shown(app)));
                update(app, Action::SortReverse);
            }
            update(app, Action::SortNext);
        }
        seen
    }

    #[test]
    fn changes_applied_in_place_show_what_a_fresh_console_shows() {
        let first = without_details(sample_snapshot());
        let mut third = sample_incident();
        third.id = "INC-8".into();
        third.title = "a \u{1b}[2J late one, and the longest title of them all".into();
        let mut changes = Vec::new();
        let mut state = first.clone();
        // One incident changes where it is: resolved, its title narrower.
        state.incidents[0].status = IncidentStatus::Resolved;
        state.incidents[0].title = "short".into();
        state.now = "2026-11-24T14:21:00Z".parse().unwrap();
        changes.push((state.clone(), None, Vec::new()));
        // A new one comes, last.
        state.incidents.push(third.clone());
        changes.push((state.clone(), None, Vec::new()));
        // The engine reorders them and one goes.
        state.incidents.swap(0, 2);
        let gone = state.incidents.remove(1);
        changes.push((
            state.clone(),
            Some(state.incidents.iter().map(|i| i.id.clone()).collect()),
            vec![gone.id],
        ));
        let mut messages = vec![ServerMessage::Snapshot {
            version: 1,
            snapshot: Box::new(first.clone()),
        }];
        let mut old = first;
        for (n, (new, order, removed)) in changes.into_iter().enumerate() {
            let incidents = (new.incidents.iter())
                .filter(|i| !old.incidents.contains(i))
                .cloned()
                .collect();
            messages.push(ServerMessage::Change(Box::new(Change {
                version: 2 + n as u64,
                incidents,
                removed,
                order,
                fields: Field::changed(&old, &new),
            })));
            old = new;
        }
        let mut app = fed(messages);
        let mut fresh = fed(vec![ServerMessage::Snapshot {
            version: 4,
            snapshot: Box::new(state),
        }]);
        assert_eq!(app.snapshot, fresh.snapshot);
        assert_eq!(app.list.by_id(), fresh.list.by_id());
        assert_eq!(listing(&mut app), listing(&mut fresh));
        assert_eq!(app.wholes_taken, 1);
    }

    #[test]
    fn the_viewed_incident_keeps_its_timeline_through_changes_and_gives_it_up_when_left() {
        let whole = sample_snapshot();
        let bare = without_details(whole.clone());
        let mut viewed = whole.incidents[0].clone();
        let detail = Detail::take(&mut viewed);
        let mut changed = bare.incidents[0].clone();
        changed.title = "still nulls".into();
        let mut app = fed(vec![
            ServerMessage::Snapshot {
                version: 1,
                snapshot: Box::new(bare.clone()),
            },
            ServerMessage::Detail(Box::new(detail.clone())),
            ServerMessage::Change(Box::new(Change {
                version: 2,
                incidents: vec![changed],
                ..Change::default()
            })),
        ]);
        assert_eq!(app.snapshot.incidents[0].title, "still nulls");
        assert_eq!(
            app.snapshot.incidents[0].timeline,
            whole.incidents[0].timeline
        );
        assert_eq!(
            app.snapshot.incidents[0].receipt,
            whole.incidents[0].receipt
        );
        let other = Detail {
            incident: whole.incidents[1].id.clone(),
            ..Detail::default()
        };
        update(&mut app, Action::DetailArrived(Box::new(other)));
        assert!(app.snapshot.incidents[0].timeline.is_empty());
        assert!(app.snapshot.incidents[0].receipt.is_none());
    }
}
