//! How the incident list is ordered and which incidents it shows: sorted by a column
//! (`s` steps through them, `S` turns the order round, `:sort COLUMN`), and open ones
//! only or all (`t`, `:status open|all`). By default the engine's order, everything.

use std::cmp::Ordering;

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

    fn compare(self, a: &IncidentView, b: &IncidentView) -> Ordering {
        match self {
            SortColumn::Id => natural(&a.id, &b.id),
            SortColumn::Status => rank(a.status).cmp(&rank(b.status)),
            SortColumn::Symptoms => a.symptoms.len().cmp(&b.symptoms.len()),
            SortColumn::Table => caseless(&a.table, &b.table),
            SortColumn::Title => caseless(&a.title, &b.title),
            SortColumn::Opened => a.opened_at.cmp(&b.opened_at),
        }
    }
}

/// Compares as lowercase without making lowercase copies: a sort of 10,000 incidents
/// compares some 130,000 pairs.
fn caseless(a: &str, b: &str) -> Ordering {
    a.chars()
        .flat_map(char::to_lowercase)
        .cmp(b.chars().flat_map(char::to_lowercase))
}

/// What needs someone first.
fn rank(status: IncidentStatus) -> u8 {
    match status {
        IncidentStatus::Open => 0,
        IncidentStatus::Verifying => 1,
        IncidentStatus::Resolved => 2,
    }
}

/// `INC-9` before `INC-10`: a trailing number compares as a number.
fn natural(a: &str, b: &str) -> Ordering {
    let split = |s: &str| {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (head, tail) = s.split_at(s.len() - digits);
        (head.to_lowercase(), tail.parse::<u64>().ok())
    };
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
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

    pub fn order(&self, incidents: &mut [&IncidentView]) {
        // Stable: equal rows keep the engine's order.
        incidents.sort_by(|a, b| self.compare(a, b));
    }

    /// The same order for positions into `incidents`.
    pub fn order_positions(&self, positions: &mut [usize], incidents: &[IncidentView]) {
        positions.sort_by(|&a, &b| self.compare(&incidents[a], &incidents[b]));
    }

    /// Unsorted, every pair is equal, so the stable sorts keep the engine's order.
    fn compare(&self, a: &IncidentView, b: &IncidentView) -> Ordering {
        match self.sort {
            None => Ordering::Equal,
            Some((column, false)) => column.compare(a, b),
            Some((column, true)) => column.compare(a, b).reverse(),
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
        let mut ids = ["INC-10", "INC-9", "INC-100", "inc-11"];
        ids.sort_by(|a, b| natural(a, b));
        assert_eq!(ids, ["INC-9", "INC-10", "inc-11", "INC-100"]);
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
