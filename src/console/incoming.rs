//! A snapshot from the engine made ready for the screen before it reaches the input
//! path. At 10,000 incidents a snapshot is some 15 MB of text: sanitizing all of it,
//! lowercasing what the filter searches, and freeing the one it replaces each cost tens
//! of milliseconds, during which no key would be read. So the console's link thread
//! calls [`prepare`], which does that work only for incidents that changed, and the
//! input path only moves the result in (`state::update` with `Action::SnapshotReady`);
//! the snapshot it replaces goes back to the link thread, which compares the next one
//! with it and frees it there.

use std::collections::HashMap;

use crate::console::clean;
use crate::console::listing::Orders;
use crate::console::screens::list;
use crate::console::state::status_word;
use crate::engine::api::{IncidentView, Snapshot};

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
    pub(crate) list_widths: [usize; 6],
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
    let mut list_widths = [0; 6];
    for incident in &raw.incidents {
        for (widest, width) in list_widths.iter_mut().zip(list::cell_widths(incident)) {
            *widest = (*widest).max(width);
        }
    }
    let orders = Orders::new(&raw.incidents, &search);
    Prepared {
        snapshot: raw,
        search,
        by_id,
        list_widths,
        orders,
    }
}

/// Where [`searchable`] puts the fields the list sorts by.
pub(crate) const ID: usize = 0;
pub(crate) const TITLE: usize = 1;
pub(crate) const TABLE: usize = 2;

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
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action, App};
    use crate::console::theme::Theme;

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
}
