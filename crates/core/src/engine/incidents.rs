//! The engine's incidents, remembering which of them changed since clients were last
//! sent them, so a change costs the views of what changed, not of every incident.
//!
//! Every way to change an incident goes through this type (`IndexMut` marks the one
//! indexed; `push` the new one; `iter_mut` and `replace` everything), so a change
//! cannot be made without being marked. Views also read the engine's requests, latest
//! observations and policy: the engine marks the incidents those touch (`mark`).

use std::collections::BTreeSet;
use std::ops::{Deref, Index, IndexMut};

use super::Incident;

pub(super) struct Incidents {
    list: Vec<Incident>,
    changed: Changed,
}

/// Which incidents changed since [`Incidents::take_changed`] last answered.
#[derive(Debug, Default, PartialEq)]
pub struct Changed {
    /// Any of them may have: every view is built again.
    pub all: bool,
    pub ids: BTreeSet<String>,
}

impl Default for Incidents {
    fn default() -> Incidents {
        Incidents {
            list: Vec::new(),
            // Nothing was sent yet.
            changed: Changed {
                all: true,
                ids: BTreeSet::new(),
            },
        }
    }
}

impl Incidents {
    pub(super) fn push(&mut self, incident: Incident) {
        self.changed.ids.insert(incident.id.clone());
        self.list.push(incident);
    }

    pub(super) fn replace(&mut self, list: Vec<Incident>) {
        self.list = list;
        self.changed.all = true;
    }

    pub(super) fn iter_mut(&mut self) -> std::slice::IterMut<'_, Incident> {
        self.changed.all = true;
        self.list.iter_mut()
    }

    /// Marks the incidents `touched` says something they show changed for.
    pub(super) fn mark(&mut self, touched: impl Fn(&Incident) -> bool) {
        for incident in &self.list {
            if touched(incident) {
                self.changed.ids.insert(incident.id.clone());
            }
        }
    }

    pub(super) fn mark_all(&mut self) {
        self.changed.all = true;
    }

    pub(super) fn take_changed(&mut self) -> Changed {
        std::mem::take(&mut self.changed)
    }
}

impl Deref for Incidents {
    type Target = [Incident];
    fn deref(&self) -> &[Incident] {
        &self.list
    }
}

impl Index<usize> for Incidents {
    type Output = Incident;
    fn index(&self, at: usize) -> &Incident {
        &self.list[at]
    }
}

impl IndexMut<usize> for Incidents {
    fn index_mut(&mut self, at: usize) -> &mut Incident {
        self.changed.ids.insert(self.list[at].id.clone());
        &mut self.list[at]
    }
}

impl<'a> IntoIterator for &'a Incidents {
    type Item = &'a Incident;
    type IntoIter = std::slice::Iter<'a, Incident>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl<'a> IntoIterator for &'a mut Incidents {
    type Item = &'a mut Incident;
    type IntoIter = std::slice::IterMut<'a, Incident>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}
