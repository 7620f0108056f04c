//! How the incident list is ordered and which incidents it shows: sorted by a column
//! (`s` steps through them, `S` turns the order round, `:sort COLUMN`), and open ones
//! only or all (`t`, `:status open|all`). By default the engine's order, everything.

use crate::console::incoming;
use crate::engine::api::{IncidentStatus, IncidentView, Timestamp};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Id,
    Status,
    Symptoms,
    Table,
    Check,
    Title,
    Opened,
}

impl SortColumn {
    pub const ALL: [SortColumn; 7] = [
        SortColumn::Id,
        SortColumn::Status,
        SortColumn::Symptoms,
        SortColumn::Table,
        SortColumn::Check,
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
            SortColumn::Check => "check",
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
            SortColumn::Check => SortKey::Text(incoming::field(searched, incoming::CHECK)),
            SortColumn::Title => SortKey::Text(incoming::field(searched, incoming::TITLE)),
            SortColumn::Opened => SortKey::Time(incident.opened_at),
        }
    }
}

/// What a column sorts by, made once per incident: a sort of 10,000 incidents compares
/// some 130,000 pairs, and lowercasing or splitting text in each comparison cost 60 ms.
/// A column always makes the same variant.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SortKey<'a> {
    /// `inc-9` before `inc-10`: the text before a trailing number, then the number.
    Numbered(&'a str, Option<u64>),
    Rank(u8),
    Count(usize),
    Text(&'a str),
    Time(Timestamp),
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

/// Every column's order of a snapshot's incidents, made with the snapshot off the input
/// path (`incoming::prepare`), so that sorting there is one pass over the incidents
/// rather than a sort (2.3 ms, 5.5 at worst, at 10,000 incidents on each change).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Orders {
    /// Per column, in `SortColumn::ALL`'s order.
    columns: Vec<ColumnOrder>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct ColumnOrder {
    /// Positions by the column's key, upwards; equal keys in the engine's order.
    upwards: Vec<usize>,
    /// Where each run of equal keys starts in `upwards`.
    runs: Vec<usize>,
}

impl ColumnOrder {
    fn new(column: SortColumn, incidents: &[IncidentView], search: &[String]) -> ColumnOrder {
        let mut keyed: Vec<(SortKey, usize)> = incidents
            .iter()
            .zip(search)
            .enumerate()
            .map(|(at, (incident, searched))| (column.key(incident, searched), at))
            .collect();
        // Ties by position: unstable gives the stable order, without a buffer.
        keyed.sort_unstable();
        let runs = (0..keyed.len())
            .filter(|&i| i == 0 || keyed[i - 1].0 != keyed[i].0)
            .collect();
        let upwards = keyed.into_iter().map(|(_, at)| at).collect();
        ColumnOrder { upwards, runs }
    }
}

impl Orders {
    /// `search` holds the incidents' search texts (`incoming::searchable`).
    pub fn new(incidents: &[IncidentView], search: &[String]) -> Orders {
        let columns = SortColumn::ALL
            .iter()
            .map(|&column| ColumnOrder::new(column, incidents, search))
            .collect();
        Orders { columns }
    }

    /// Follows incidents replaced where they were (`replaced`: each one's position and
    /// the incident and search text it replaced): only a column whose key changed for
    /// one of them is sorted again, so a change to an incident's status sorts one column.
    pub fn follow(
        &mut self,
        incidents: &[IncidentView],
        search: &[String],
        replaced: &[(usize, IncidentView, String)],
    ) {
        for (column, order) in SortColumn::ALL.iter().zip(&mut self.columns) {
            let changed = replaced.iter().any(|(at, old, old_search)| {
                column.key(old, old_search) != column.key(&incidents[*at], &search[*at])
            });
            if changed {
                *order = ColumnOrder::new(*column, incidents, search);
            }
        }
    }

    /// Every position in the order `sort` shows them; downwards, equal keys still keep
    /// the engine's order. `count` incidents, in theirs, when unsorted.
    pub fn positions(
        &self,
        sort: Option<(SortColumn, bool)>,
        count: usize,
    ) -> Box<dyn Iterator<Item = usize> + '_> {
        let column = sort.and_then(|(column, descending)| {
            let at = SortColumn::ALL.iter().position(|c| *c == column)?;
            Some((self.columns.get(at)?, descending))
        });
        match column {
            None => Box::new(0..count),
            Some((order, false)) => Box::new(order.upwards.iter().copied()),
            Some((order, true)) => Box::new(order.runs.iter().enumerate().rev().flat_map(
                move |(run, &start)| {
                    let end = order
                        .runs
                        .get(run + 1)
                        .copied()
                        .unwrap_or(order.upwards.len());
                    order.upwards[start..end].iter().copied()
                },
            )),
        }
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
    fn downwards_turns_the_runs_round_but_not_what_is_inside_them() {
        let incidents: Vec<IncidentView> = ["b", "a", "b", "c", "a"]
            .iter()
            .enumerate()
            .map(|(n, title)| {
                let mut incident = crate::console::fixtures::sample_incident();
                incident.id = format!("INC-{n}");
                incident.title = title.to_string();
                incident
            })
            .collect();
        let search: Vec<String> = incidents.iter().map(incoming::searchable).collect();
        let orders = Orders::new(&incidents, &search);
        let by = |sort| orders.positions(sort, 5).collect::<Vec<_>>();
        assert_eq!(by(None), [0, 1, 2, 3, 4]);
        assert_eq!(by(Some((SortColumn::Title, false))), [1, 4, 0, 2, 3]);
        assert_eq!(by(Some((SortColumn::Title, true))), [3, 0, 2, 1, 4]);
        assert_eq!(by(Some((SortColumn::Id, true))), [4, 3, 2, 1, 0]);
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
