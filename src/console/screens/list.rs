//! The incident list screen: the incidents (after the filter) over the monitors pane.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};
use ratatui::Frame;

use crate::console::bars;
use crate::console::listing::SortColumn;
use crate::console::screens::monitors;
use crate::console::state::{status_word, App, ListPane};
use crate::console::symptoms;
use crate::console::theme::Theme;
use crate::console::widgets::{
    column_widths, cut, cut_spans, header_row, incident_status, pane_block, shown, sized_table,
    width_of, window_start, Column, SELECTED,
};
use crate::engine::api::{IncidentStatus, IncidentView};
use crate::sanitize;

/// A table pane's borders and header: a pane shorter than this plus one shows no row.
const TABLE_CHROME: u16 = 3;

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
    let monitor_rows = app.snapshot.monitors.len() as u16;
    let monitors_focused = app.list_pane == ListPane::Monitors;
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
    if !app.filter.is_empty() {
        title.push_str(&format!(
            " · filter {}",
            sanitize::for_terminal(&app.filter)
        ));
    }
    title.push_str(&app.list.describe());
    let block = pane_block(&title, app.list_pane == ListPane::Incidents, theme);
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
    header.extend(SortColumn::ALL.map(|column| app.list.header(column)));
    // What the widest incident of the snapshot needs, measured when it arrived (a frame
    // never measures 10,000 rows), or the header's name if that is wider.
    let widest = |column: usize| app.list_widths()[column].max(width_of(&header[column + 1]));
    let widths = column_widths(
        &[
            Column::new(1, 1),
            Column::new(5, widest(0)),
            // "◐ verifying".
            Column::new(6, widest(1)),
            Column::new(3, widest(2)).dropped(3),
            Column::new(8, widest(3)).dropped(2),
            Column::growing(8, widest(4)),
            Column::new(5, widest(5)).dropped(4),
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

/// The time of day is what matters on call; the date is in the detail.
fn opened(incident: &IncidentView) -> &str {
    incident
        .opened_at
        .get(11..16)
        .unwrap_or(&incident.opened_at)
}

/// The display width of what each column but the mark shows of `incident`: id, status,
/// symptoms, table, title, opened.
pub(crate) fn cell_widths(incident: &IncidentView) -> [usize; 6] {
    [
        width_of(&incident.id),
        width_of(&status_text(incident.status)),
        width_of(&symptoms::count(incident)),
        width_of(&incident.table),
        width_of(&incident.title),
        width_of(opened(incident)),
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
            Cell::from(cut(&incident.title, w(5))),
            Cell::from(cut(opened(incident), w(6))),
        ],
        widths,
    ));
    if selected {
        row.style(theme.selection)
    } else {
        row
    }
}
