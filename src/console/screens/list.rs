//! The incident list screen: the incidents (after the filter) over the monitors pane.
//! What it shows is found when the snapshot, the filter or the list's order changes,
//! never per frame; its keys move the selection, open the incident, sort and filter.

use std::collections::HashMap;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};
use ratatui::Frame;

use crate::console::action::{self, step, Action};
use crate::console::bars;
use crate::console::drawn::Drawn;
use crate::console::incoming::{self, Needle, Prepared};
use crate::console::listing::{ListView, Orders, SortColumn};
use crate::console::screens::detail::Detail;
use crate::console::screens::monitors::{self, MonitorsPane};
use crate::console::state::{refresh_derived, status_word, App, Screen};
use crate::console::symptoms;
use crate::console::theme::Theme;
use crate::console::widgets::{
    column_widths, cut, cut_spans, header_row, incident_status, pane_block, shown, sized_table,
    width_of, window_start, Column, SELECTED,
};
use crate::engine::api::{IncidentStatus, IncidentView, Snapshot};
use crate::sanitize;

#[cfg(test)]
mod tests;

/// The list screen's two panes; Tab goes from one to the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPane {
    Incidents,
    Monitors,
}

/// What `incoming::prepare` measured of the snapshot for the list, moved in with it.
#[derive(Debug, Clone, Default)]
struct Index {
    /// Per incident of the snapshot, in its order: what the filter searches, lowercased.
    search: Vec<String>,
    /// Where each incident of the snapshot is, by id.
    by_id: HashMap<String, usize>,
    /// The widest text of each list column.
    widths: [usize; 7],
    /// Every column's order of the snapshot's incidents.
    orders: Orders,
}

#[derive(Debug, Clone)]
pub struct ListScreen {
    /// The filter: a substring, or `!substring` to hide matches.
    pub filter: String,
    /// The list's order and whether it shows resolved incidents.
    pub view: ListView,
    /// The pane in focus.
    pub pane: ListPane,
    pub monitors: MonitorsPane,
    index: Index,
    /// The incidents the list shows, as positions in the snapshot's incidents in the
    /// order shown, and the filter and list view they were found for: computed when
    /// the snapshot, the filter, the sort or the open/all toggle changes.
    shown: Vec<usize>,
    shown_for: Option<(String, ListView)>,
}

impl Default for ListScreen {
    fn default() -> ListScreen {
        ListScreen {
            filter: String::new(),
            view: ListView::default(),
            pane: ListPane::Incidents,
            monitors: MonitorsPane::default(),
            index: Index::default(),
            shown: Vec::new(),
            shown_for: None,
        }
    }
}

impl ListScreen {
    /// Takes the index a prepared snapshot brought (and gives it the old one to free).
    pub fn take_index(&mut self, prepared: &mut Prepared) {
        std::mem::swap(&mut self.index.search, &mut prepared.search);
        std::mem::swap(&mut self.index.by_id, &mut prepared.by_id);
        std::mem::swap(&mut self.index.widths, &mut prepared.list_widths);
        std::mem::swap(&mut self.index.orders, &mut prepared.orders);
        self.shown_for = None;
    }

    /// Applies a change's incidents (cleaned, each with its search text) to the
    /// snapshot's, in place, and the index with them. The usual change replaces
    /// incidents where they are: its cost is theirs (and a sort of a column whose key
    /// changed), not the estate's. One that removes, adds or reorders incidents
    /// reshapes the list and indexes it again.
    pub fn apply_incidents(
        &mut self,
        incidents: &mut Vec<IncidentView>,
        changed: Vec<(IncidentView, String)>,
        removed: &[String],
        order: Option<Vec<String>>,
    ) {
        self.shown_for = None;
        let index = &mut self.index;
        let in_place = removed.is_empty()
            && order.is_none()
            && index.search.len() == incidents.len()
            && changed.iter().all(|(incident, _)| {
                (index.by_id.get(&incident.id))
                    .is_some_and(|&at| incidents.get(at).is_some_and(|i| i.id == incident.id))
            });
        if in_place {
            let mut replaced = Vec::with_capacity(changed.len());
            let mut narrower = false;
            for (incident, search) in changed {
                let at = index.by_id[&incident.id];
                let (was, now) = (cell_widths(&incidents[at]), cell_widths(&incident));
                for ((widest, was), now) in index.widths.iter_mut().zip(was).zip(now) {
                    if now >= *widest {
                        *widest = now;
                    } else if was == *widest && now < was {
                        narrower = true;
                    }
                }
                let old = std::mem::replace(&mut incidents[at], incident);
                let old_search = std::mem::replace(&mut index.search[at], search);
                replaced.push((at, old, old_search));
            }
            // The widest of a column got narrower: another may now be the widest.
            if narrower {
                index.widths = widest(incidents);
            }
            index.orders.follow(incidents, &index.search, &replaced);
            return;
        }
        let removed: std::collections::HashSet<&str> = removed.iter().map(String::as_str).collect();
        let mut rows: Vec<(IncidentView, String)> = std::mem::take(incidents)
            .into_iter()
            .zip(std::mem::take(&mut index.search))
            .filter(|(incident, _)| !removed.contains(incident.id.as_str()))
            .collect();
        let mut at: HashMap<String, usize> = (rows.iter().enumerate())
            .map(|(n, (incident, _))| (incident.id.clone(), n))
            .collect();
        // New incidents go last, unless the order says where.
        for row in changed {
            match at.get(&row.0.id) {
                Some(&n) => rows[n] = row,
                None => {
                    at.insert(row.0.id.clone(), rows.len());
                    rows.push(row);
                }
            }
        }
        if let Some(order) = order {
            let mut slots: Vec<Option<(IncidentView, String)>> =
                rows.into_iter().map(Some).collect();
            rows = (order.iter())
                .filter_map(|id| at.get(id).and_then(|&n| slots[n].take()))
                .collect();
        }
        (*incidents, index.search) = rows.into_iter().unzip();
        index.by_id = HashMap::with_capacity(incidents.len());
        for (n, incident) in incidents.iter().enumerate() {
            index.by_id.entry(incident.id.clone()).or_insert(n);
        }
        index.widths = widest(incidents);
        index.orders = Orders::new(incidents, &index.search);
    }

    /// Where each incident of the snapshot is, by id.
    pub fn by_id(&self) -> &HashMap<String, usize> {
        &self.index.by_id
    }

    /// The widest text of each of the list's columns but the mark, over the snapshot.
    pub fn widths(&self) -> [usize; 7] {
        self.index.widths
    }

    /// Whether `shown` was found for this filter, this list view and this snapshot.
    pub fn is_current(&self, snapshot: &Snapshot) -> bool {
        self.shown_for
            .as_ref()
            .is_some_and(|(filter, view)| filter == &self.filter && view == &self.view)
            && self.index.search.len() == snapshot.incidents.len()
    }

    /// The positions shown, when they are current; `None` sends the callers the slow
    /// way (the snapshot, the filter or the list view was changed without `update`, as
    /// a test may).
    fn shown(&self, snapshot: &Snapshot) -> Option<&[usize]> {
        self.is_current(snapshot).then_some(self.shown.as_slice())
    }

    /// Follows a new snapshot, filter or list view: the monitors' order and the
    /// incidents shown.
    pub fn refresh(&mut self, snapshot: &Snapshot) {
        self.monitors.follow(&snapshot.monitors);
        if !self.is_current(snapshot) {
            find_shown(
                &mut self.shown,
                &snapshot.incidents,
                &self.index.search,
                &self.index.orders,
                &self.filter,
                self.view,
            );
            self.shown_for = Some((self.filter.clone(), self.view));
        }
    }

    /// The incidents the list shows, after the filter.
    pub fn visible<'a>(&self, snapshot: &'a Snapshot) -> Vec<&'a IncidentView> {
        let incidents = &snapshot.incidents;
        match self.shown(snapshot) {
            Some(shown) => shown.iter().map(|&at| &incidents[at]).collect(),
            None => {
                let search: Vec<String> = incidents.iter().map(incoming::searchable).collect();
                let orders = Orders::new(incidents, &search);
                let mut shown = Vec::new();
                find_shown(
                    &mut shown,
                    incidents,
                    &search,
                    &orders,
                    &self.filter,
                    self.view,
                );
                shown.iter().map(|&at| &incidents[at]).collect()
            }
        }
    }

    fn count(&self, snapshot: &Snapshot) -> usize {
        match self.shown(snapshot) {
            Some(shown) => shown.len(),
            None => self.visible(snapshot).len(),
        }
    }

    /// The `position`th incident the list shows.
    pub fn at<'a>(&self, snapshot: &'a Snapshot, position: usize) -> Option<&'a IncidentView> {
        match self.shown(snapshot) {
            Some(shown) => shown
                .get(position)
                .and_then(|&at| snapshot.incidents.get(at)),
            None => self.visible(snapshot).get(position).copied(),
        }
    }

    /// Where incident `id` is among those shown.
    pub fn position(&self, snapshot: &Snapshot, id: &str) -> Option<usize> {
        if let Some(shown) = self.shown(snapshot) {
            match self.index.by_id.get(id) {
                None => return None,
                Some(&at) if snapshot.incidents.get(at).is_some_and(|i| i.id == id) => {
                    // Sorted, the positions are in no order: a scan of plain numbers.
                    return match self.view.sort {
                        None => shown.binary_search(&at).ok(),
                        Some(_) => shown.iter().position(|&p| p == at),
                    };
                }
                // The index is not this snapshot's: look the slow way.
                Some(_) => {}
            }
        }
        self.visible(snapshot)
            .iter()
            .position(|incident| incident.id == id)
    }

    /// A page: the rows the focused pane drew.
    fn page(&self, drawn: &Drawn) -> usize {
        action::page(match self.pane {
            ListPane::Monitors => drawn.monitor_rows.get(),
            ListPane::Incidents => drawn.list_rows.get(),
        })
    }
}

/// The positions in `incidents` (whose search texts are `search` and whose column
/// orders are `orders`) that `filter` and `list` show, in the order shown, into `shown`:
/// one pass, whatever the sort.
fn find_shown(
    shown: &mut Vec<usize>,
    incidents: &[IncidentView],
    search: &[String],
    orders: &Orders,
    filter: &str,
    list: ListView,
) {
    let needle = Needle::new(filter);
    shown.clear();
    shown.extend(
        orders
            .positions(list.sort, incidents.len())
            .filter(|&at| needle.shows(&search[at]) && list.shows(&incidents[at])),
    );
}

/// What the list screen does with `action`; false when it is not one of its own.
pub fn handle(app: &mut App, action: &Action) -> bool {
    if let Some(delta) = action.distance(app.list.page(&app.drawn)) {
        match app.list.pane {
            ListPane::Monitors => app.list.monitors.move_by(delta),
            ListPane::Incidents => {
                let list = &app.list;
                let at = app.selected_index().unwrap_or(0);
                let to = step(at, delta, list.count(&app.snapshot));
                app.selected_incident = list.at(&app.snapshot, to).map(|i| i.id.clone());
            }
        }
        return true;
    }
    match action {
        Action::Open => open_selected(app),
        Action::NextPane | Action::PreviousPane => {
            app.list.pane = match app.list.pane {
                ListPane::Incidents if !app.list.monitors.order.is_empty() => ListPane::Monitors,
                _ => ListPane::Incidents,
            };
        }
        Action::Back if app.list.pane == ListPane::Monitors => app.list.pane = ListPane::Incidents,
        Action::Back => {
            if !app.list.filter.is_empty() {
                app.list.filter.clear();
                refresh_derived(app);
            }
        }
        Action::SortNext => change_list(app, ListView::next_column),
        Action::SortReverse => change_list(app, ListView::reverse),
        Action::ToggleOpenOnly => change_list(app, |list| list.open_only = !list.open_only),
        _ => return false,
    }
    true
}

/// What the movement keys go through here, as "already at the top of …" says it;
/// `None` when the list shows no incident to move through.
pub fn moves_through(app: &App) -> Option<&'static str> {
    match app.list.pane {
        ListPane::Monitors => Some("the monitors"),
        ListPane::Incidents if app.visible_incidents().is_empty() => None,
        ListPane::Incidents => Some("the incidents"),
    }
}

/// Enter: the selected incident's detail, when its row was on screen.
pub fn open_selected(app: &mut App) {
    if app.screen != Screen::List || app.list.pane != ListPane::Incidents {
        return;
    }
    let Some(id) = app.selected_incident.clone() else {
        return;
    };
    if app.drawn.left_out(&app.drawn.incident_shown) {
        app.message = Some(format!(
            "{id} is not on screen: make the terminal taller to open it"
        ));
        return;
    }
    app.detail = Some(Detail::new(id));
    app.screen = Screen::Detail;
    refresh_derived(app);
}

/// Sorts the list by `column`; the same column again turns it round (`:sort COLUMN`,
/// a click on the column's header).
pub(crate) fn sort_by(app: &mut App, column: SortColumn) {
    change_list(app, |list| {
        list.sort = match list.sort {
            Some((sorted, descending)) if sorted == column => Some((column, !descending)),
            _ => Some((column, false)),
        }
    });
}

/// Changes how the list is shown; the selection stays on its incident when it still
/// shows.
pub(crate) fn change_list(app: &mut App, change: impl FnOnce(&mut ListView)) {
    change(&mut app.list.view);
    refresh_derived(app);
}

/// A table pane's borders and header: a pane shorter than this plus one shows no row.
const TABLE_CHROME: u16 = 3;

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let monitor_rows = app.snapshot.monitors.len() as u16;
    let monitors_focused = app.list.pane == ListPane::Monitors;
    // The pane in focus gets the larger share; the incidents keep at least one row in
    // view whatever the size (Enter opens the selected one: it must be on screen), and a
    // monitors pane with no room for a row is not drawn.
    let share = if monitors_focused {
        area.height * 2 / 3
    } else {
        area.height / 3
    };
    let mut monitors_height = (monitor_rows + TABLE_CHROME)
        .min(share)
        .max(TABLE_CHROME + 1);
    if !monitors_focused {
        monitors_height = monitors_height.min(area.height.saturating_sub(TABLE_CHROME + 1));
    }
    // The list takes the rows it needs and the monitors get the rest, as many as they
    // hold: one incident is not thirty empty rows over a few lines of monitors. Only a
    // list longer than the screen holds the monitors to their share; monitors that all
    // fit leave what is over to the list.
    let list_rows = match app.connected {
        true => app.visible_incidents().len().max(1) as u16,
        false => 1,
    };
    let rest = area.height.saturating_sub(list_rows + TABLE_CHROME);
    monitors_height = monitors_height.max(rest.min(monitor_rows + TABLE_CHROME));
    if monitor_rows == 0 || monitors_height < TABLE_CHROME + 1 {
        monitors_height = 0;
    }
    let [incidents, monitors] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(monitors_height.min(area.height)),
    ])
    .areas(area);
    render_incident_list(frame, incidents, app);
    if monitors_height > 0 {
        monitors::render(frame, monitors, app);
    } else {
        // Not drawn: nothing there to page through or click.
        app.drawn.monitor_rows.set(Rect::default());
    }
}

fn render_incident_list(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let incidents = app.visible_incidents();
    let mut title = format!("Incidents ({})", incidents.len());
    if !app.list.filter.is_empty() {
        title.push_str(&format!(
            " · filter {}",
            sanitize::for_terminal(&app.list.filter)
        ));
    }
    title.push_str(&app.list.view.describe());
    let block = pane_block(&title, app.list.pane == ListPane::Incidents, theme);
    // Until rows are drawn below, there are none to page through or click.
    app.drawn.list_rows.set(Rect::default());
    app.drawn.list_header.set(Rect::default());
    if !app.connected {
        let waiting = Paragraph::new(Span::styled(
            "Waiting for the engine's first snapshot…",
            theme.muted,
        ))
        .block(block);
        frame.render_widget(waiting, area);
        return;
    }
    if incidents.is_empty() {
        let text = match &app.snapshot.first_poll {
            _ if !app.snapshot.incidents.is_empty() => {
                "No incident matches the filter (Esc clears it).".to_string()
            }
            Some(poll) => format!("No incident yet: {}…", bars::first_poll(poll)),
            None => "✓ No incidents. Monitors are watching.".to_string(),
        };
        frame.render_widget(
            Paragraph::new(Span::styled(text, theme.muted)).block(block),
            area,
        );
        return;
    }
    let height = area.height.saturating_sub(TABLE_CHROME) as usize;
    let selected = app.selected_index().unwrap_or(0);
    let start = window_start(selected, height);
    // Below the top border and the header: what a page is, and where a click lands.
    let rows = crate::console::drawn::inner(area);
    app.drawn.list_rows.set(Rect {
        y: rows.y + 1,
        height: rows.height.saturating_sub(1),
        ..rows
    });
    app.drawn.list_start.set(start);
    app.drawn.incident_shown.set(height > 0);
    app.drawn.list_header.set(Rect {
        height: rows.height.min(1),
        ..rows
    });
    // `sym`: how many breaches downstream joined the incident rather than opening their own.
    let mut header = vec![String::new()];
    header.extend(SortColumn::ALL.map(|column| app.list.view.header(column)));
    // What the widest incident of the snapshot needs, measured when it arrived (a frame
    // never measures 10,000 rows), or the header's name if that is wider.
    let widest = |column: usize| app.list.widths()[column].max(width_of(&header[column + 1]));
    let widths = column_widths(
        &[
            Column::new(1, 1),
            Column::new(5, widest(0)),
            // "◐ verifying".
            Column::new(6, widest(1)),
            Column::new(3, widest(2)).dropped(3),
            Column::new(8, widest(3)).dropped(2),
            Column::new(5, widest(4)).dropped(5),
            Column::growing(8, widest(5)),
            Column::new(5, widest(6)).dropped(4),
        ],
        area.width.saturating_sub(2),
    );
    if let Ok(columns) = widths.as_slice().try_into() {
        app.drawn.list_columns.set(columns);
    }
    let rows = incidents
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(index, incident)| incident_row(incident, index == selected, &widths, theme));
    let table = sized_table(rows, &widths)
        .header(header_row(&header, &widths, theme))
        .block(block);
    frame.render_widget(table, area);
}

/// The title, after when its monitor is quiet until (a snooze, a maintenance window):
/// the list says which incidents page nobody now.
fn title(incident: &IncidentView) -> std::borrow::Cow<'_, str> {
    match &incident.quiet {
        Some(quiet) => format!(
            "⏸ until {} · {}",
            crate::console::widgets::clock_face(quiet.until),
            incident.title
        )
        .into(),
        None => incident.title.as_str().into(),
    }
}

/// The time of day is what matters on call; the date is in the detail.
fn opened(incident: &IncidentView) -> String {
    incident.opened_at.hour_minute()
}

/// The display width of what each column but the mark shows of `incident`: id, status,
/// symptoms, table, check, title, opened.
/// The widest text of each of the list's columns over `incidents`.
pub(crate) fn widest(incidents: &[IncidentView]) -> [usize; 7] {
    let mut widest = [0; 7];
    for incident in incidents {
        for (widest, width) in widest.iter_mut().zip(cell_widths(incident)) {
            *widest = (*widest).max(width);
        }
    }
    widest
}

pub(crate) fn cell_widths(incident: &IncidentView) -> [usize; 7] {
    [
        width_of(&incident.id),
        width_of(&status_text(incident.status)),
        width_of(&symptoms::count(incident)),
        width_of(&incident.table),
        width_of(&incident.check),
        width_of(&title(incident)),
        width_of(&opened(incident)),
    ]
}

/// What [`incident_status`] draws, for its width: a glyph and the word.
fn status_text(status: IncidentStatus) -> String {
    format!("● {}", status_word(status))
}

fn incident_row(
    incident: &IncidentView,
    selected: bool,
    widths: &[u16],
    theme: &Theme,
) -> Row<'static> {
    let w = |i: usize| widths[i] as usize;
    let marker = if selected { SELECTED } else { " " };
    let row = Row::new(shown(
        [
            Cell::from(marker),
            Cell::from(cut(&incident.id, w(1))),
            Cell::from(Line::from(cut_spans(
                vec![incident_status(incident.status, theme)],
                w(2),
            ))),
            Cell::from(cut(&symptoms::count(incident), w(3))),
            Cell::from(cut(&incident.table, w(4))),
            Cell::from(cut(&incident.check, w(5))),
            Cell::from(cut(&title(incident), w(6))),
            Cell::from(cut(&opened(incident), w(7))),
        ],
        widths,
    ));
    if selected {
        row.style(theme.selection)
    } else {
        row
    }
}
