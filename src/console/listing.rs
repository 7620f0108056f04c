//! How the incident list is ordered and which incidents it shows: sorted by a column
//! (`s` steps through them, `S` turns the order round, `:sort COLUMN`), and open ones
//! only or all (`t`, `:status open|all`). By default the engine's order, everything.

use crate::console::incoming;
use crate::engine::api::{IncidentStatus, IncidentView};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Id,
    Status,
    Symptoms,
    Table,
    Title,
    Opened,
}

impl SortColumn {
    pub const ALL: [SortColumn; 6] = [
        SortColumn::Id,
        SortColumn::Status,
        SortColumn::Symptoms,
        SortColumn::Table,
        SortColumn::Title,
        SortColumn::Opened,
    ];

    /// The column's name, as its header says it and `:sort` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SortColumn::Id => "id",
            SortColumn::Status => "status",
            SortColumn::Symptoms => "sym",
            SortColumn::Table => "table",
            SortColumn::Title => "title",
            SortColumn::Opened => "opened",
        }
    }

    pub fn named(name: &str) -> Option<SortColumn> {
        let name = name.to_lowercase();
        SortColumn::ALL
            .into_iter()
            .find(|column| column.name() == name || (name == "symptoms" && column.name() == "sym"))
    }

    /// What this column sorts `incident` by. `searched` is its lowercased search text
    /// (`incoming::searchable`), already made when the snapshot arrived.
    fn key<'a>(self, incident: &'a IncidentView, searched: &'a str) -> SortKey<'a> {
        match self {
            SortColumn::Id => numbered(incoming::field(searched, incoming::ID)),
            SortColumn::Status => SortKey::Rank(rank(incident.status)),
            SortColumn::Symptoms => SortKey::Count(incident.symptoms.len()),
            SortColumn::Table => SortKey::Text(incoming::field(searched, incoming::TABLE)),
            SortColumn::Title => SortKey::Text(incoming::field(searched, incoming::TITLE)),
            SortColumn::Opened => SortKey::Text(&incident.opened_at),
        }
    }
}

/// What a column sorts by, made once per incident and sort: a sort of 10,000 incidents
/// compares some 130,000 pairs, and lowercasing or splitting text in each comparison
/// cost 60 ms on the input path. A column always makes the same variant.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SortKey<'a> {
    /// `inc-9` before `inc-10`: the text before a trailing number, then the number.
    Numbered(&'a str, Option<u64>),
    Rank(u8),
    Count(usize),
    Text(&'a str),
}

fn numbered(id: &str) -> SortKey<'_> {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = id.split_at(id.len() - digits);
    SortKey::Numbered(head, tail.parse().ok())
}

/// What needs someone first.
fn rank(status: IncidentStatus) -> u8 {
    match status {
        IncidentStatus::Open => 0,
        IncidentStatus::Verifying => 1,
        IncidentStatus::Resolved => 2,
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListView {
    /// The column sorted by and whether downwards; `None`: the engine's order.
    pub sort: Option<(SortColumn, bool)>,
    /// Open and verifying incidents only; resolved ones hidden.
    pub open_only: bool,
}

impl ListView {
    pub fn shows(&self, incident: &IncidentView) -> bool {
        !self.open_only || incident.status != IncidentStatus::Resolved
    }

    /// Puts `positions` (into `incidents`, whose search texts are `search`) in the
    /// order of the sorted column; ties, and an unsorted list, keep the engine's order.
    /// The keys are made once, so comparing is plain; ties go by position, so an
    /// unstable sort gives the stable order.
    pub fn order(&self, positions: &mut [usize], incidents: &[IncidentView], search: &[String]) {
        let Some((column, descending)) = self.sort else {
            return;
        };
        let mut keyed: Vec<(SortKey, usize)> = positions
            .iter()
            .map(|&at| (column.key(&incidents[at], &search[at]), at))
            .collect();
        keyed.sort_unstable_by(|(a, at_a), (b, at_b)| {
            let order = if descending { b.cmp(a) } else { a.cmp(b) };
            order.then(at_a.cmp(at_b))
        });
        for (slot, (_, at)) in positions.iter_mut().zip(keyed) {
            *slot = at;
        }
    }

    /// `s`: the next column (after the last, the engine's order again).
    pub fn next_column(&mut self) {
        let next = match self.sort {
            None => Some(SortColumn::ALL[0]),
            Some((column, _)) => {
                let at = SortColumn::ALL
                    .iter()
                    .position(|c| *c == column)
                    .unwrap_or(0);
                SortColumn::ALL.get(at + 1).copied()
            }
        };
        self.sort = next.map(|column| (column, false));
    }

    /// `S`: the same column the other way round.
    pub fn reverse(&mut self) {
        if let Some((_, descending)) = &mut self.sort {
            *descending = !*descending;
        }
    }

    /// A column's header, marked when the list is sorted by it.
    pub fn header(&self, column: SortColumn) -> String {
        match self.sort {
            Some((sorted, descending)) if sorted == column => {
                format!("{}{}", column.name(), if descending { "▼" } else { "▲" })
            }
            _ => column.name().to_string(),
        }
    }

    /// What the list's title says about how it is shown.
    pub fn describe(&self) -> String {
        let mut text = String::new();
        if self.open_only {
            text.push_str(" · open only");
        }
        if let Some(column) = self.sort.map(|(column, _)| column) {
            text.push_str(&format!(" · sorted by {}", self.header(column)));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_their_number() {
        let mut ids = ["inc-10", "inc-9", "inc-100", "inc-11", "inc"];
        ids.sort_by_key(|id| numbered(id));
        assert_eq!(ids, ["inc", "inc-9", "inc-10", "inc-11", "inc-100"]);
    }

    #[test]
    fn s_steps_through_the_columns_and_back_to_the_engines_order() {
        let mut view = ListView::default();
        let mut seen = Vec::new();
        for _ in 0..SortColumn::ALL.len() {
            view.next_column();
            seen.push(view.sort.unwrap().0);
        }
        assert_eq!(seen, SortColumn::ALL);
        view.next_column();
        assert_eq!(view.sort, None);
        assert_eq!(SortColumn::named("Symptoms"), Some(SortColumn::Symptoms));
    }
}
