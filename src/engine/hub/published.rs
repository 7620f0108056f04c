//! What clients were last sent of the engine's state, kept so the next change is what
//! differs from it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::super::api::{Detail, IncidentView, Snapshot};
use super::Outgoing;

/// The engine's state as clients were last sent it: a change is what differs from it,
/// and a client attaching or asking again gets it whole.
#[derive(Default)]
pub(super) struct Published {
    pub(super) version: u64,
    /// Incidents without their timeline and receipt, and nobody attached (that is made
    /// from `Hub::clients` when needed).
    pub(super) snapshot: Snapshot,
    /// Each incident's timeline and receipt, by id.
    pub(super) details: HashMap<String, Detail>,
    /// The whole state as one message at `version` with who is attached now, made the
    /// first time a client needs it after a change.
    pub(super) whole: Option<Arc<Outgoing>>,
    /// Where each incident is in `snapshot.incidents`.
    pub(super) at: HashMap<String, usize>,
}

impl Published {
    /// An incident as clients were last sent it.
    pub(super) fn incident(&self, id: &str) -> Option<&IncidentView> {
        self.at.get(id).map(|&at| &self.snapshot.incidents[at])
    }

    /// Lists the incidents as the engine does (`ids`), with the `rebuilt` views in
    /// place of the ones they replace: (the ids no longer listed, the new order when a
    /// client applying the change would not come to it by itself).
    pub(super) fn relist<'a>(
        &mut self,
        ids: impl Iterator<Item = &'a str>,
        rebuilt: Vec<IncidentView>,
    ) -> (Vec<String>, Option<Vec<String>>) {
        let old: Vec<String> = (self.snapshot.incidents.iter())
            .map(|i| i.id.clone())
            .collect();
        let mut by_id: HashMap<String, IncidentView> =
            (std::mem::take(&mut self.snapshot.incidents).into_iter())
                .map(|i| (i.id.clone(), i))
                .collect();
        for view in rebuilt {
            by_id.insert(view.id.clone(), view);
        }
        self.snapshot.incidents = ids
            .map(|id| {
                by_id
                    .remove(id)
                    .expect("an incident not marked was published")
            })
            .collect();
        let now: HashSet<&str> = (self.snapshot.incidents.iter())
            .map(|i| i.id.as_str())
            .collect();
        let removed: Vec<String> = old
            .iter()
            .filter(|id| !now.contains(id.as_str()))
            .cloned()
            .collect();
        // A client puts new incidents last: the order goes along only when the
        // engine's is another.
        let was: HashSet<&str> = old.iter().map(String::as_str).collect();
        let as_applied = (old.iter().map(String::as_str))
            .filter(|id| now.contains(id))
            .chain(
                (self.snapshot.incidents.iter())
                    .map(|i| i.id.as_str())
                    .filter(|id| !was.contains(id)),
            );
        let order =
            (!as_applied.eq(self.snapshot.incidents.iter().map(|i| i.id.as_str()))).then(|| {
                (self.snapshot.incidents.iter())
                    .map(|i| i.id.clone())
                    .collect()
            });
        self.at = (self.snapshot.incidents.iter().enumerate())
            .map(|(at, i)| (i.id.clone(), at))
            .collect();
        (removed, order)
    }
}
