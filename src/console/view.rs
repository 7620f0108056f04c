//! Drawing, as a pure function of [`App`]. Nothing here changes state or computes more
//! than the rows that fit: diffs and tree rows were prepared when the snapshot arrived.
//! Every state is shown by a glyph or a word as well as a colour, and the selected row
//! carries a `▶`, so the screen reads the same without colour.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Wrap};
use ratatui::Frame;
use tui_tree_widget::{Tree, TreeState};

use crate::console::diff::{Change, DiffRows, Sign, SIDE_BY_SIDE_MIN_WIDTH};
use crate::console::keys;
use crate::console::listing::SortColumn;
use crate::console::presence;
use crate::console::reason;
use crate::console::state::{status_word, App, Detail, Overlay, Pane, Screen};
use crate::console::symptoms;
use crate::console::theme::Theme;
use crate::engine::api::{
    IncidentStatus, IncidentView, ProposalBody, ProposalKind, ProposalState, ProposalView,
};
use crate::sanitize;

const SELECTED: &str = "▶";
/// Hash characters shown in lists; the reason modal shows the whole hash.
const SHORT_HASH: usize = 12;

pub fn render(frame: &mut Frame, app: &App) {
    let [title, main, status, hints] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    render_title(frame, title, app);
    match app.screen {
        Screen::List => render_list_screen(frame, main, app),
        Screen::Detail => render_detail_screen(frame, main, app),
    }
    render_status(frame, status, app);
    render_hints(frame, hints, app);
    match &app.overlay {
        Overlay::Help { scroll } => crate::console::help::render(frame, app, *scroll),
        Overlay::AlertOutbox { scroll } => crate::console::alerts::render(frame, app, *scroll),
        Overlay::Reason(modal) => reason::render(frame, app, modal),
        Overlay::Prompt(_) | Overlay::None => {}
    }
}

// ---- small pieces -------------------------------------------------------------------

fn short(hash: &str) -> &str {
    hash.get(..SHORT_HASH).unwrap_or(hash)
}

/// Cut or pad `text` to exactly `width` terminal columns.
fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let mut buffer = [0u8; 4];
    for c in text.chars() {
        let c_width = Span::raw(&*c.encode_utf8(&mut buffer)).width();
        if used + c_width > width {
            break;
        }
        out.push(c);
        used += c_width;
    }
    out.extend(std::iter::repeat_n(' ', width - used));
    out
}

pub(crate) fn pane_block<'a>(title: &'a str, focused: bool, theme: &Theme) -> Block<'a> {
    // Focus shows as a marker in the title and a heavier border, not only a colour.
    let (marker, border) = if focused {
        ("▸ ", theme.accent.add_modifier(Modifier::BOLD))
    } else {
        ("", theme.border)
    };
    let title_style = if focused {
        theme.title.patch(theme.accent)
    } else {
        theme.title
    };
    let block = Block::bordered()
        .border_style(border)
        .title(Line::from(vec![Span::styled(
            format!(" {marker}{title} "),
            title_style,
        )]));
    if focused {
        block.border_type(ratatui::widgets::BorderType::Thick)
    } else {
        block
    }
}

pub(crate) fn incident_status(status: IncidentStatus, theme: &Theme) -> Span<'static> {
    let (glyph, style) = match status {
        IncidentStatus::Open => ("●", theme.crit),
        IncidentStatus::Verifying => ("◐", theme.warn),
        IncidentStatus::Resolved => ("✓", theme.ok),
    };
    Span::styled(format!("{glyph} {}", status_word(status)), style)
}

fn proposal_state(state: ProposalState, theme: &Theme) -> Span<'static> {
    let (text, style) = match state {
        ProposalState::Pending => ("○ pending", theme.warn),
        ProposalState::Approved => ("✓ approved", theme.ok),
        ProposalState::Rejected => ("✗ rejected", theme.crit),
        ProposalState::Forwarded => ("→ forwarded", theme.accent),
        ProposalState::RolledBack => ("↶ rolled back", theme.warn),
        ProposalState::Completed => ("✓ completed", theme.muted),
        ProposalState::Expired => ("⌛ expired", theme.crit),
        ProposalState::Withdrawn => ("– withdrawn", theme.muted),
    };
    Span::styled(text, style)
}

fn kind_word(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::Hold => "hold",
        ProposalKind::Diff => "diff",
        ProposalKind::Note => "note",
        ProposalKind::Backfill => "backfill",
    }
}

/// Pipeline and monitor words come from the engine as text; unknown words still show,
/// with a neutral glyph.
fn word_with_glyph(word: &str, theme: &Theme) -> Span<'static> {
    let (glyph, style) = match word {
        "running" => ("●", theme.ok),
        "paused" => ("⏸", theme.warn),
        "idle" => ("○", theme.muted),
        "success" | "ok" | "pass" | "passed" => ("✓", theme.ok),
        "failed" | "fail" | "breach" | "error" | "unreachable" => ("✗", theme.crit),
        "warn" | "warning" | "degraded" => ("▲", theme.warn),
        "stale" => ("◌", theme.warn),
        _ => ("·", theme.muted),
    };
    Span::styled(format!("{glyph} {word}"), style)
}

pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// The lines from the `scroll`-th on (the last one at most). Wrapped panes scroll by
/// line, as the diff scrolls by row: counting wrapped rows would need the width the
/// state does not know, and a count that fell short would leave the end out of reach.
fn from_line(mut lines: Vec<Line<'static>>, scroll: usize) -> Vec<Line<'static>> {
    let start = scroll.min(lines.len().saturating_sub(1));
    lines.split_off(start)
}

/// The first row to show so that `selected` stays in a window of `height` rows.
fn window_start(selected: usize, height: usize) -> usize {
    if height == 0 {
        0
    } else {
        (selected + 1).saturating_sub(height)
    }
}

// ---- frame: title, status, hints -----------------------------------------------------

fn render_title(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let mut spans = vec![
        Span::styled(" dataward ", theme.title.add_modifier(Modifier::REVERSED)),
        Span::raw(" "),
    ];
    // A chain that does not verify takes the top line: nothing is recorded meanwhile,
    // and nobody should decide anything without knowing it.
    if let Some(alarm) = &app.snapshot.chain_alarm {
        spans.push(Span::styled(
            format!("■ {alarm}"),
            theme.crit.add_modifier(Modifier::BOLD),
        ));
        frame.render_widget(Line::from(spans), area);
        return;
    }
    spans.push(Span::styled(app.snapshot.now.clone(), theme.title));
    for pipeline in &app.snapshot.pipelines {
        spans.push(Span::styled("  │ ", theme.border));
        spans.push(Span::raw(format!("{} ", pipeline.name)));
        spans.push(word_with_glyph(&pipeline.state, theme));
        spans.push(Span::raw(" "));
        spans.push(word_with_glyph(&pipeline.last_status, theme));
    }
    // Our health, not the data's: the bar above is empty or old until it answers.
    if let Some(down) = &app.snapshot.orchestrator_down {
        spans.push(Span::styled("  │ ", theme.border));
        spans.push(Span::styled(
            format!("■ orchestrator not answering {down}"),
            theme.warn.add_modifier(Modifier::BOLD),
        ));
    }
    frame.render_widget(Line::from(spans), area);
}

fn render_status(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let separator = || Span::styled(" │ ", theme.border);
    let mut spans = Vec::new();
    // The org-wide stop comes first: whoever looks must not miss it.
    if let Some(stop) = &app.snapshot.org_stop {
        spans.push(Span::styled(
            format!("■ {stop}"),
            theme.crit.add_modifier(Modifier::BOLD),
        ));
        spans.push(separator());
    }
    // A lost engine comes first too: nothing decided now would be sent.
    if let Some(lost) = &app.link.lost {
        spans.push(Span::styled(
            format!("■ {lost}; reconnecting…"),
            theme.crit.add_modifier(Modifier::BOLD),
        ));
        spans.push(separator());
    }
    // The answer to this console's last action (a refusal above all) must not be cut
    // off by a narrow terminal: it comes next.
    if let Some(message) = &app.message {
        spans.push(Span::styled(
            message.clone(),
            theme.accent.add_modifier(Modifier::BOLD),
        ));
        spans.push(separator());
    }
    spans.push(match &app.snapshot.chain_head {
        Some(head) => Span::styled(
            format!("chain #{} {}", head.seq, short(&head.hash)),
            theme.accent,
        ),
        None => Span::styled("chain empty", theme.muted),
    });
    // Who we are, as the engine's hello attests it (hub snapshots carry no actor).
    let you = app.link.you.as_deref().unwrap_or(&app.snapshot.actor);
    if !you.is_empty() {
        spans.push(separator());
        spans.push(Span::raw(you.to_string()));
    }
    if app.read_only {
        spans.push(separator());
        spans.push(Span::styled(
            "read-only",
            theme.warn.add_modifier(Modifier::BOLD),
        ));
    }
    if app.engine_stopped {
        spans.push(separator());
        spans.push(Span::styled("■ engine stopped; q quits", theme.crit));
    } else if app.link.lost.is_some() {
    } else if !app.connected {
        spans.push(separator());
        spans.push(Span::styled("waiting for the engine…", theme.muted));
    } else if app.snapshot.finished {
        spans.push(separator());
        spans.push(Span::styled("✓ scenario finished", theme.ok));
    }
    // The engine's latest notice comes before the list of who is here: on a narrow
    // terminal the list is what gets cut.
    if let (None, Some(notice)) = (&app.message, app.snapshot.notices.last()) {
        spans.push(separator());
        spans.push(Span::styled(notice.clone(), theme.muted));
    }
    let attached = presence::status_spans(app, theme);
    if !attached.is_empty() {
        spans.push(separator());
        spans.extend(attached);
    }
    frame.render_widget(Line::from(spans), area);
}

fn render_hints(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    if let Overlay::Prompt(prompt) = &app.overlay {
        crate::console::prompt::render(frame, area, app, prompt);
        return;
    }
    // Whole hints or none: a hint cut in half reads as a different key.
    let mut spans = Vec::new();
    let mut used = 0;
    for (label, description) in keys::hints(app) {
        let gap = if spans.is_empty() { "" } else { "  " };
        let width = Line::raw(format!("{gap}{label} {description}")).width();
        if used + width > area.width as usize {
            break;
        }
        used += width;
        spans.push(Span::raw(gap));
        spans.push(Span::styled(
            label,
            theme.accent.add_modifier(Modifier::BOLD),
        ));
        spans.push(Span::styled(format!(" {description}"), theme.muted));
    }
    frame.render_widget(Line::from(spans), area);
}

// ---- list screen ---------------------------------------------------------------------

fn render_list_screen(frame: &mut Frame, area: Rect, app: &App) {
    let monitor_rows = app.snapshot.monitors.len() as u16;
    let monitors_height = if monitor_rows == 0 {
        0
    } else {
        (monitor_rows + 3).min(area.height / 3).max(4)
    };
    let [incidents, monitors] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(monitors_height)]).areas(area);
    render_incident_list(frame, incidents, app);
    if monitors_height > 0 {
        render_monitors(frame, monitors, app);
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
    let block = pane_block(&title, true, theme);
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
        let text = if app.snapshot.incidents.is_empty() {
            "✓ No incidents. Monitors are watching."
        } else {
            "No incident matches the filter (Esc clears it)."
        };
        frame.render_widget(
            Paragraph::new(Span::styled(text, theme.muted)).block(block),
            area,
        );
        return;
    }
    let height = area.height.saturating_sub(3) as usize;
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
    let rows = incidents
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(index, incident)| incident_row(incident, index == selected, theme));
    // `sym`: how many breaches downstream joined the incident rather than opening their own.
    let mut header = vec![String::new()];
    header.extend(SortColumn::ALL.map(|column| app.list.header(column)));
    let header = Row::new(header).style(theme.muted);
    let table = Table::new(
        rows,
        [
            Constraint::Length(1),
            Constraint::Length(8),
            Constraint::Length(11),
            Constraint::Length(4),
            Constraint::Length(18),
            Constraint::Fill(1),
            Constraint::Length(6),
        ],
    )
    .header(header)
    .block(block);
    frame.render_widget(table, area);
}

fn incident_row<'a>(incident: &'a IncidentView, selected: bool, theme: &Theme) -> Row<'a> {
    let marker = if selected { SELECTED } else { " " };
    let row = Row::new(vec![
        Cell::from(marker),
        Cell::from(incident.id.as_str()),
        Cell::from(incident_status(incident.status, theme)),
        Cell::from(symptoms::count(incident)),
        Cell::from(incident.table.as_str()),
        Cell::from(incident.title.as_str()),
        // The time of day is what matters on call; the date is in the detail.
        Cell::from(
            incident
                .opened_at
                .get(11..16)
                .unwrap_or(&incident.opened_at),
        ),
    ]);
    if selected {
        row.style(theme.selection)
    } else {
        row
    }
}

fn render_monitors(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let height = area.height.saturating_sub(3) as usize;
    let rows = app.snapshot.monitors.iter().take(height).map(|monitor| {
        Row::new(vec![
            Cell::from(monitor.name.as_str()),
            Cell::from(monitor.check.as_str()),
            Cell::from(word_with_glyph(&monitor.verdict, theme)),
            Cell::from(monitor.observed.as_str()),
            Cell::from(monitor.expected.as_str()),
            Cell::from(word_with_glyph(&monitor.health, theme)),
        ])
    });
    let header = Row::new([
        "monitor", "check", "verdict", "observed", "expected", "health",
    ])
    .style(theme.muted);
    let table = Table::new(
        rows,
        [
            Constraint::Fill(2),
            Constraint::Length(10),
            // "· learning", "✗ unknown": the longest verdicts with their glyph.
            Constraint::Length(11),
            Constraint::Fill(2),
            Constraint::Fill(2),
            Constraint::Length(14),
        ],
    )
    .header(header)
    .block(pane_block("Monitors", false, theme));
    frame.render_widget(table, area);
}

// ---- detail screen -------------------------------------------------------------------

fn render_detail_screen(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.theme;
    let (Some(detail), Some(incident)) = (app.detail.as_ref(), app.open_incident()) else {
        let gone = Paragraph::new(Span::styled(
            "This incident is no longer in the engine's snapshot. Esc goes back.",
            theme.warn,
        ))
        .block(pane_block("Incident", true, theme));
        frame.render_widget(gone, area);
        return;
    };
    let [header, body] = Layout::vertical([Constraint::Length(2), Constraint::Fill(1)]).areas(area);
    render_detail_header(frame, header, incident, theme);
    if detail.receipt_open {
        app.drawn.receipt.set(crate::console::drawn::inner(body));
        render_receipt(frame, body, incident, detail, theme);
        return;
    }
    let proposals_height = (incident.proposals.len().max(1) as u16 + 2).min(7);
    let upper_height = (body.height.saturating_sub(proposals_height) * 2 / 5).max(5);
    let [upper, proposals_row, proposal_body] = Layout::vertical([
        Constraint::Length(upper_height),
        Constraint::Length(proposals_height),
        Constraint::Fill(1),
    ])
    .areas(body);
    let [cause, tree] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(upper);
    render_cause(frame, cause, incident, detail, theme);
    render_tree(frame, tree, incident, detail, theme);
    let drawn = &app.drawn;
    drawn.set_pane(Pane::Cause, cause);
    drawn.set_pane(Pane::Tree, tree);
    drawn.set_pane(Pane::Body, proposal_body);
    if incident.checks.is_empty() {
        drawn.set_pane(Pane::Proposals, proposals_row);
        render_proposals(frame, proposals_row, app, incident, detail);
    } else {
        let [list, checks] =
            Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)])
                .areas(proposals_row);
        drawn.set_pane(Pane::Proposals, list);
        render_proposals(frame, list, app, incident, detail);
        render_checks(frame, checks, incident, theme);
    }
    render_proposal_body(frame, proposal_body, app, detail);
}

fn render_detail_header(frame: &mut Frame, area: Rect, incident: &IncidentView, theme: &Theme) {
    let lines = vec![
        Line::from(vec![
            Span::styled(format!(" {} ", incident.id), theme.title),
            incident_status(incident.status, theme),
            Span::raw("  "),
            Span::styled(incident.title.clone(), theme.title),
        ]),
        Line::from(vec![
            Span::raw(format!(" {}", incident.table)),
            Span::styled(" · ", theme.muted),
            Span::styled("observed ", theme.muted),
            Span::styled(incident.observed.clone(), theme.crit),
            Span::styled(" · expected ", theme.muted),
            Span::raw(incident.expected.clone()),
            Span::styled(format!(" · opened {}", incident.opened_at), theme.muted),
        ]),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}

fn render_cause(
    frame: &mut Frame,
    area: Rect,
    incident: &IncidentView,
    detail: &Detail,
    theme: &Theme,
) {
    let mut lines = vec![match &incident.cause {
        Some(cause) => Line::raw(cause.clone()),
        None => Line::styled("Diagnosis pending…", theme.muted),
    }];
    for evidence in &incident.evidence {
        lines.push(Line::from(vec![
            Span::styled(" • ", theme.accent),
            Span::raw(evidence.clone()),
        ]));
    }
    lines.extend(symptoms::lines(incident, theme));
    let title = symptoms::cause_title(incident);
    let cause = Paragraph::new(from_line(lines, detail.cause_scroll))
        .wrap(Wrap { trim: false })
        .block(pane_block(&title, detail.focus == Pane::Cause, theme));
    frame.render_widget(cause, area);
}

fn render_tree(
    frame: &mut Frame,
    area: Rect,
    incident: &IncidentView,
    detail: &Detail,
    theme: &Theme,
) {
    let focused = detail.focus == Pane::Tree;
    let title = format!("Blast radius from {}", incident.table);
    let block = pane_block(&title, focused, theme);
    let items = &detail.tree.items;
    if items.is_empty() {
        let empty = Paragraph::new(Span::styled("Nothing downstream found (yet).", theme.muted));
        frame.render_widget(empty.block(block), area);
        return;
    }
    // The widget wants mutable state; rebuild it from the plain state each frame
    // (a few small sets) so the app itself stays immutable while drawing.
    let mut state = TreeState::default();
    for path in &detail.tree.opened {
        state.open(path.clone());
    }
    state.select(detail.tree.selected.clone());
    let highlight = if focused {
        theme.selection
    } else {
        Style::default()
    };
    match Tree::new(items) {
        Ok(tree) => {
            let tree = tree
                .block(block)
                .highlight_symbol("▶ ")
                .highlight_style(highlight)
                .node_closed_symbol("▸ ")
                .node_open_symbol("▾ ")
                .node_no_children_symbol("  ");
            frame.render_stateful_widget(tree, area, &mut state);
        }
        Err(_) => {
            let broken =
                Paragraph::new(Span::styled("blast radius has duplicate nodes", theme.crit));
            frame.render_widget(broken.block(block), area);
        }
    }
}

fn render_proposals(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    incident: &IncidentView,
    detail: &Detail,
) {
    let theme = &app.theme;
    let focused = detail.focus == Pane::Proposals;
    let block = pane_block("Proposals", focused, theme);
    if incident.proposals.is_empty() {
        let empty = Paragraph::new(Span::styled("No proposals yet.", theme.muted));
        frame.render_widget(empty.block(block), area);
        return;
    }
    let height = area.height.saturating_sub(2) as usize;
    let start = window_start(detail.proposal, height);
    let rows = incident
        .proposals
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(index, proposal)| {
            let selected = index == detail.proposal;
            // Someone else has the reason box open for it: say so before the title.
            let title = match presence::deciding(app, &proposal.id) {
                Some(who) => Line::from(vec![
                    Span::styled(
                        format!("✎ {who} · "),
                        theme.warn.add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(proposal.title.as_str()),
                ]),
                None => Line::raw(proposal.title.as_str()),
            };
            let row = Row::new(vec![
                Cell::from(if selected { SELECTED } else { " " }),
                Cell::from(presence::short_proposal(&proposal.id)),
                Cell::from(kind_word(proposal.kind)),
                Cell::from(proposal_state(proposal.state, theme)),
                Cell::from(title),
                Cell::from(Span::styled(proposal.owner.as_str(), theme.muted)),
                Cell::from(Span::styled(short(&proposal.content_hash), theme.muted)),
            ]);
            if selected && focused {
                row.style(theme.selection)
            } else {
                row
            }
        });
    let table = Table::new(
        rows,
        [
            Constraint::Length(1),
            Constraint::Length(4),
            Constraint::Length(4),
            Constraint::Length(13),
            Constraint::Fill(1),
            Constraint::Length(13),
            Constraint::Length(SHORT_HASH as u16),
        ],
    )
    .block(block);
    frame.render_widget(table, area);
}

fn render_checks(frame: &mut Frame, area: Rect, incident: &IncidentView, theme: &Theme) {
    let lines: Vec<Line> = incident
        .checks
        .iter()
        .map(|check| {
            let (glyph, style) = if check.passed {
                ("✓ ", theme.ok)
            } else {
                ("✗ ", theme.crit)
            };
            Line::from(vec![
                Span::styled(glyph, style),
                Span::raw(check.name.clone()),
                Span::styled(format!("  {}", check.detail), theme.muted),
            ])
        })
        .collect();
    let checks = Paragraph::new(lines).block(pane_block("Last verification", false, theme));
    frame.render_widget(checks, area);
}

fn render_proposal_body(frame: &mut Frame, area: Rect, app: &App, detail: &Detail) {
    let theme = &app.theme;
    let focused = detail.focus == Pane::Body;
    let Some(proposal) = app.selected_proposal() else {
        let block = pane_block("Proposal", focused, theme);
        frame.render_widget(block, area);
        return;
    };
    let subject = match &proposal.body {
        ProposalBody::Hold { job, .. } => format!("job {job}"),
        ProposalBody::Diff { file, .. } => file.clone(),
        ProposalBody::Note { to, .. } => format!("to {to}"),
        ProposalBody::Backfill { job, .. } => format!("run by {job}"),
    };
    let title = format!("{} {} · {}", proposal.id, kind_word(proposal.kind), subject);
    let block = pane_block(&title, focused, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    match &proposal.body {
        ProposalBody::Diff { .. } => match app.diffs.get(&proposal.content_hash) {
            Some(rows) => render_diff(
                frame,
                inner,
                rows,
                proposal,
                detail.body_scroll,
                area.width,
                theme,
            ),
            None => frame.render_widget(Span::styled("diff not computed yet", theme.muted), inner),
        },
        ProposalBody::Hold { plan, .. } => {
            let mut lines = vec![Line::styled("plan", theme.muted)];
            lines.extend(plan.lines().map(|line| Line::raw(format!("  {line}"))));
            render_text_body(frame, inner, lines, proposal, detail.body_scroll, theme);
        }
        ProposalBody::Note { text, .. } => {
            let lines = text
                .lines()
                .map(|line| Line::raw(line.to_string()))
                .collect();
            render_text_body(frame, inner, lines, proposal, detail.body_scroll, theme);
        }
        ProposalBody::Backfill {
            command, tables, ..
        } => {
            render_text_body(
                frame,
                inner,
                backfill_lines(command, tables, theme),
                proposal,
                detail.body_scroll,
                theme,
            );
        }
    }
}

/// A backfill's body: the command as it will run, and what is copied before it does.
pub fn backfill_lines(command: &str, tables: &[String], theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::styled("command", theme.muted),
        Line::raw(format!("  {command}")),
        Line::styled(
            "copied just before it runs, restored by roll back",
            theme.muted,
        ),
    ];
    lines.extend(tables.iter().map(|t| Line::raw(format!("  {t}"))));
    lines
}

fn undo_and_verify(proposal: &ProposalView, theme: &Theme) -> [Line<'static>; 3] {
    [
        Line::from(vec![
            Span::styled("decide ", theme.muted),
            Span::raw(proposal.deciders.join(", ")),
        ]),
        Line::from(vec![
            Span::styled("undo   ", theme.muted),
            Span::raw(proposal.undo.clone()),
        ]),
        Line::from(vec![
            Span::styled("verify ", theme.muted),
            Span::raw(proposal.verify.clone()),
        ]),
    ]
}

/// Notes and plans are short prose: wrap them and let the paragraph scroll.
fn render_text_body(
    frame: &mut Frame,
    area: Rect,
    mut lines: Vec<Line<'static>>,
    proposal: &ProposalView,
    scroll: usize,
    theme: &Theme,
) {
    lines.push(Line::raw(""));
    lines.extend(undo_and_verify(proposal, theme));
    let paragraph = Paragraph::new(from_line(lines, scroll)).wrap(Wrap { trim: false });
    frame.render_widget(paragraph, area);
}

/// Only the rows in view are turned into lines; a long diff costs nothing off screen.
fn render_diff(
    frame: &mut Frame,
    area: Rect,
    rows: &DiffRows,
    proposal: &ProposalView,
    scroll: usize,
    pane_width: u16,
    theme: &Theme,
) {
    let side_by_side = pane_width >= SIDE_BY_SIDE_MIN_WIDTH;
    let diff_len = if side_by_side {
        rows.side_by_side.len()
    } else {
        rows.unified.len()
    };
    let trailer = undo_and_verify(proposal, theme);
    let total = diff_len + 1 + trailer.len();
    let height = area.height as usize;
    let start = scroll.min(total.saturating_sub(height));
    let width = area.width as usize;
    // Scrolling moves by diff row; a long row wraps onto as many lines as it needs, so
    // a change is never cut off at the edge of its half.
    let mut lines: Vec<Line> = Vec::with_capacity(height);
    for index in start..total {
        if lines.len() >= height {
            break;
        }
        if index < diff_len {
            if side_by_side {
                lines.extend(side_by_side_lines(&rows.side_by_side[index], width, theme));
            } else {
                lines.push(unified_line(&rows.unified[index], theme));
            }
        } else if index == diff_len {
            lines.push(Line::raw(""));
        } else {
            lines.push(trailer[index - diff_len - 1].clone());
        }
    }
    lines.truncate(height);
    frame.render_widget(Paragraph::new(lines), area);
}

fn diff_cell_text(number: Option<usize>, sign: char, text: &str) -> String {
    match number {
        Some(number) => format!("{number:>3} {sign} {text}"),
        None => String::new(),
    }
}

/// Columns a diff cell spends on its line number and sign: "  9 - ".
const DIFF_GUTTER: usize = 6;

fn side_by_side_lines(
    row: &crate::console::diff::SideBySideRow,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let half = width.saturating_sub(1) / 2;
    let right_width = width.saturating_sub(half + 1);
    let (old_sign, new_sign, old_style, new_style) = match row.change {
        Change::Same => (' ', ' ', Style::default(), Style::default()),
        Change::Removed => ('-', ' ', theme.crit, Style::default()),
        Change::Added => (' ', '+', Style::default(), theme.ok),
        Change::Changed => ('-', '+', theme.crit, theme.ok),
    };
    let left = wrap_cell(row.old.as_ref(), old_sign, half);
    let right = wrap_cell(row.new.as_ref(), new_sign, right_width);
    (0..left.len().max(right.len()))
        .map(|i| {
            Line::from(vec![
                Span::styled(fit(left.get(i).map_or("", String::as_str), half), old_style),
                Span::styled("│", theme.border),
                Span::styled(
                    fit(right.get(i).map_or("", String::as_str), right_width),
                    new_style,
                ),
            ])
        })
        .collect()
}

/// One side of a diff row as lines of at most `width` columns: the first carries the
/// line number and sign, the rest are indented under the text.
fn wrap_cell(cell: Option<&crate::console::diff::Cell>, sign: char, width: usize) -> Vec<String> {
    let Some(cell) = cell else {
        return vec![String::new()];
    };
    let room = width.saturating_sub(DIFF_GUTTER).max(1);
    let pieces = wrap_at_spaces(&cell.text, room);
    pieces
        .iter()
        .enumerate()
        .map(|(i, text)| {
            if i == 0 {
                diff_cell_text(Some(cell.number), sign, text)
            } else {
                format!("{:DIFF_GUTTER$}{text}", "")
            }
        })
        .collect()
}

/// Splits `text` into pieces of at most `room` characters, breaking after a space when
/// one falls in the second half of the piece, else mid-word. Always at least one piece.
fn wrap_at_spaces(text: &str, room: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    while chars.len() - start > room {
        let window = &chars[start..start + room];
        let cut = window
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&at| at >= room / 2)
            .map_or(room, |at| at + 1);
        pieces.push(chars[start..start + cut].iter().collect());
        start += cut;
    }
    pieces.push(chars[start..].iter().collect());
    pieces
}

fn unified_line(row: &crate::console::diff::UnifiedRow, theme: &Theme) -> Line<'static> {
    let (sign, style) = match row.sign {
        Sign::Same => (' ', Style::default()),
        Sign::Removed => ('-', theme.crit),
        Sign::Added => ('+', theme.ok),
    };
    Line::styled(diff_cell_text(Some(row.number), sign, &row.text), style)
}

fn render_receipt(
    frame: &mut Frame,
    area: Rect,
    incident: &IncidentView,
    detail: &Detail,
    theme: &Theme,
) {
    let text = incident.receipt.as_deref().unwrap_or("");
    let lines = text
        .lines()
        .map(|line| Line::raw(line.to_string()))
        .collect();
    // An open incident's receipt is a draft: what the chain holds so far.
    let title = match incident.status {
        IncidentStatus::Resolved => "Receipt (R or Esc closes)".to_string(),
        status => format!(
            "Receipt so far: {} is {} (R or Esc closes)",
            incident.id,
            status_word(status)
        ),
    };
    let receipt = Paragraph::new(from_line(lines, detail.receipt_scroll))
        .wrap(Wrap { trim: false })
        .block(pane_block(&title, true, theme));
    frame.render_widget(receipt, area);
}

// ---- overlays ------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::state::{update, Action};
    use crate::console::theme::Theme;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn sample_app() -> App {
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        app
    }

    fn draw(app: &App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| render(frame, app)).unwrap();
        terminal.backend().to_string()
    }

    /// INC-7 open, the diff proposal selected.
    fn detail_app() -> App {
        let mut app = sample_app();
        update(&mut app, Action::Open);
        update(&mut app, Action::Down);
        app
    }

    const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

    #[test]
    fn long_diff_lines_wrap_after_a_space() {
        let pieces = wrap_at_spaces(
            "    on pay.zip_code = cast(reg.postal_code as varchar(12))",
            40,
        );
        assert_eq!(
            pieces,
            [
                "    on pay.zip_code = ",
                "cast(reg.postal_code as varchar(12))"
            ]
        );
        assert_eq!(wrap_at_spaces("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap_at_spaces("", 4), [""]);
        for piece in wrap_at_spaces(&"word ".repeat(40), 17) {
            assert!(piece.chars().count() <= 17);
        }
    }

    #[test]
    fn incident_list() {
        let app = sample_app();
        for (width, height) in SIZES {
            insta::assert_snapshot!(
                format!("incident_list_{width}x{height}"),
                draw(&app, width, height)
            );
        }
    }

    /// `s` sorts by the id, `S` turns it round, `t` hides resolved incidents; the title
    /// and the header say how the list is shown.
    #[test]
    fn the_list_sorted_and_open_only() {
        use crate::console::keys::press;
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let key = |app: &mut App, c: char| {
            press(app, KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        };
        let mut app = sample_app();
        let order = |app: &App| -> Vec<String> {
            app.visible_incidents()
                .iter()
                .map(|i| i.id.clone())
                .collect()
        };
        assert_eq!(order(&app), ["INC-7", "INC-6"]);
        key(&mut app, 's');
        assert_eq!(order(&app), ["INC-6", "INC-7"]);
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("Incidents (2) · sorted by id▲"), "{screen}");
        insta::assert_snapshot!("list_sorted_120x40", screen);
        key(&mut app, 'S');
        assert_eq!(order(&app), ["INC-7", "INC-6"]);
        key(&mut app, 's');
        assert!(draw(&app, 120, 40).contains("status▲"));
        key(&mut app, 't');
        assert_eq!(order(&app), ["INC-7"]);
        let screen = draw(&app, 80, 24);
        assert!(
            screen.contains("Incidents (1) · open only · sorted by status▲"),
            "{screen}"
        );
        insta::assert_snapshot!("list_open_only_80x24", screen);
        key(&mut app, 't');
        assert_eq!(app.visible_incidents().len(), 2);
        // The command line says the same.
        update(&mut app, Action::CommandLine);
        type_into(&mut app, "sort table");
        update(&mut app, Action::Submit);
        assert!(draw(&app, 120, 40).contains("table▲"));
        update(&mut app, Action::CommandLine);
        type_into(&mut app, "status open");
        update(&mut app, Action::Submit);
        assert_eq!(order(&app), ["INC-7"]);
    }

    #[test]
    fn incident_detail_with_tree_and_diff() {
        let app = detail_app();
        for (width, height) in SIZES {
            insta::assert_snapshot!(
                format!("incident_detail_{width}x{height}"),
                draw(&app, width, height)
            );
        }
    }

    /// The cause pane focused and scrolled down to the symptoms listed under the cause.
    #[test]
    fn symptoms_under_the_cause() {
        let mut app = sample_app();
        update(&mut app, Action::Open);
        update(&mut app, Action::PreviousPane);
        update(&mut app, Action::PreviousPane);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
        // Past the cause, its four pieces of evidence and the blank line.
        for _ in 0..6 {
            update(&mut app, Action::Down);
        }
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(screen.contains("Cause · 3 symptoms"), "{screen}");
            assert!(screen.contains("Symptoms (3, 1 recovered)"), "{screen}");
            insta::assert_snapshot!(format!("symptoms_{width}x{height}"), screen);
        }
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("✗ fct_daily_revenue"), "{screen}");
    }

    #[test]
    fn help_overlay() {
        let mut app = sample_app();
        update(&mut app, Action::Help);
        for (width, height) in SIZES {
            insta::assert_snapshot!(format!("help_{width}x{height}"), draw(&app, width, height));
        }
    }

    #[test]
    fn reason_modal() {
        let mut app = detail_app();
        update(&mut app, Action::Reject);
        type_into(&mut app, "casts break on A-3");
        for (width, height) in SIZES {
            insta::assert_snapshot!(
                format!("reason_{width}x{height}"),
                draw(&app, width, height)
            );
        }
    }

    fn type_into(app: &mut App, text: &str) {
        for c in text.chars() {
            let key = crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char(c),
                crossterm::event::KeyModifiers::NONE,
            );
            update(app, Action::Edit(key));
        }
    }

    #[test]
    fn resolve_by_hand_modal() {
        let mut app = sample_app();
        update(&mut app, Action::Open);
        update(&mut app, Action::Resolve);
        type_into(&mut app, "the vendor confirmed a quiet refill");
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(screen.contains("Resolve INC-7"), "{screen}");
            assert!(screen.contains("Reason (required)"), "{screen}");
            insta::assert_snapshot!(format!("resolve_{width}x{height}"), screen);
        }
        // Someone else closes it meanwhile: the box says so before anything is sent.
        let mut resolved = sample_snapshot();
        resolved.incidents[0].status = IncidentStatus::Resolved;
        update(&mut app, Action::SnapshotArrived(Box::new(resolved)));
        let screen = draw(&app, 120, 40);
        assert!(
            screen.contains("⚠ INC-7 is resolved now: Esc and look again"),
            "{screen}"
        );
    }

    #[test]
    fn help_lists_close_and_reopen_except_read_only() {
        let mut app = sample_app();
        update(&mut app, Action::Help);
        let help = draw(&app, 120, 80);
        for line in [
            "C                 ⚠ close the incident by hand (reason required)",
            "O                 ⚠ reopen the resolved incident (reason required)",
        ] {
            assert!(help.contains(line), "{line:?} in\n{help}");
        }
        app.read_only = true;
        let help = draw(&app, 120, 80);
        assert!(help.contains("read-only console"), "{help}");
        assert!(!help.contains("close the incident by hand"), "{help}");
        assert!(!help.contains("reopen the resolved incident"), "{help}");
    }

    /// The help as one text: borders gone, wrapped lines joined, spaces collapsed.
    fn help_text(app: &App, width: u16) -> String {
        let height = 500;
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| render(frame, app)).unwrap();
        let inner = pane_block("", true, &app.theme)
            .inner(crate::console::help::area(Rect::new(0, 0, width, height)));
        let buffer = terminal.backend().buffer();
        let mut text = String::new();
        for y in inner.top()..inner.bottom() {
            for x in inner.left()..inner.right() {
                text.push_str(buffer[(x, y)].symbol());
            }
            text.push(' ');
        }
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// A read-only console's help lists no key and no command that decides: `:stop`,
    /// `:lift` and the rest are gone with the keys.
    #[test]
    fn read_only_help_lists_no_dangerous_command() {
        let mut app = sample_app();
        update(&mut app, Action::Help);
        let help = help_text(&app, 120);
        for command in [":stop", ":lift", ":resolve", ":reopen", ":accept"] {
            assert!(help.contains(command), "{command} in\n{help}");
        }
        app.read_only = true;
        let help = help_text(&app, 120);
        for command in [":stop", ":lift", ":resolve", ":reopen", ":accept"] {
            assert!(!help.contains(command), "{command} in\n{help}");
        }
        assert!(!help.contains('⚠'), "{help}");
        assert!(help.contains(":theme"), "{help}");
    }

    /// Every line of help fits: a description too long for the overlay wraps under
    /// itself instead of being cut, at any width.
    #[test]
    fn every_line_of_help_fits() {
        let mut app = sample_app();
        update(&mut app, Action::Help);
        for width in [120, 80, 60, 40] {
            let help = help_text(&app, width);
            for binding in keys::available(false) {
                assert!(
                    help.contains(binding.description),
                    "{width} columns: {:?} is cut in\n{help}",
                    binding.description
                );
            }
            for command in keys::commands(false) {
                assert!(
                    help.contains(&command.described()),
                    "{width} columns: {:?} is cut in\n{help}",
                    command.described()
                );
            }
        }
    }

    #[test]
    fn a_broken_chain_takes_the_top_line() {
        let mut app = sample_app();
        app.snapshot.chain_alarm = Some(
            "CHAIN BROKEN at record #16: the chain holds 15 records but its checkpoint recorded 18: the tail was cut off; dataward records nothing until it is repaired".into(),
        );
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(screen
                .lines()
                .next()
                .unwrap()
                .contains("CHAIN BROKEN at record #16"));
            insta::assert_snapshot!(format!("chain_broken_{width}x{height}"), screen);
        }
    }

    #[test]
    fn receipt_and_note_views() {
        let mut app = sample_app();
        update(&mut app, Action::Down);
        update(&mut app, Action::Open);
        update(&mut app, Action::ToggleReceipt);
        insta::assert_snapshot!("receipt_80x24", draw(&app, 80, 24));

        // An open incident's receipt: the draft the chain holds so far.
        let mut app = sample_app();
        let mut snapshot = sample_snapshot();
        snapshot.incidents[0].receipt = Some(crate::console::fixtures::DRAFT_RECEIPT.into());
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        update(&mut app, Action::Open);
        update(&mut app, Action::ToggleReceipt);
        let screen = draw(&app, 80, 24);
        assert!(screen.contains("Receipt so far: INC-7 is open"), "{screen}");
        insta::assert_snapshot!("receipt_draft_80x24", screen);

        let mut app = detail_app();
        update(&mut app, Action::Down);
        insta::assert_snapshot!("note_80x24", draw(&app, 80, 24));
    }

    #[test]
    fn read_only_and_stopped_engine_show_in_the_status_bar() {
        let mut app = App::new(true, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        update(&mut app, Action::EngineStopped);
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("read-only"));
        assert!(screen.contains("engine stopped"));
    }

    /// Alice's console, attached to a hub (snapshots carry no actor) with Bob deciding
    /// P-2 and an observer looking at INC-6.
    fn paired_app() -> App {
        use crate::engine::api::PresenceView;
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::Hello {
                started_at: "2026-11-24T13:58:00Z".into(),
                you: "alice (uid 1001)".into(),
                read_only: false,
            },
        );
        let mut snapshot = sample_snapshot();
        snapshot.actor = String::new();
        snapshot.notices.clear();
        snapshot.attached = vec![
            PresenceView {
                who: "Alice (alice)".into(),
                read_only: false,
                viewing: Some("INC-7".into()),
                deciding: None,
            },
            PresenceView {
                who: "Bob (bob)".into(),
                read_only: false,
                viewing: Some("INC-7".into()),
                deciding: Some("P-2".into()),
            },
            PresenceView {
                who: "uid 1003".into(),
                read_only: true,
                viewing: Some("INC-6".into()),
                deciding: None,
            },
        ];
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        app
    }

    #[test]
    fn the_status_bar_lists_who_is_attached() {
        let app = paired_app();
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            let status = screen.lines().nth(height as usize - 2).unwrap();
            assert!(status.contains("alice (uid 1001)"), "{status}");
            assert!(status.contains("3 attached"), "{status}");
            insta::assert_snapshot!(format!("presence_{width}x{height}"), screen);
        }
    }

    #[test]
    fn observers_come_after_the_people_who_decide() {
        let mut app = paired_app();
        let mut snapshot = app.snapshot.clone();
        snapshot.attached.rotate_right(1); // the observer attached first
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let screen = draw(&app, 120, 40);
        let status = screen.lines().nth(38).unwrap();
        let at = |text: &str| {
            status
                .find(text)
                .unwrap_or_else(|| panic!("{text}: {status}"))
        };
        assert!(at("Bob (bob)") < at("uid 1003"), "{status}");
        assert!(at("Alice (alice)") < at("uid 1003"), "{status}");
    }

    #[test]
    fn a_proposal_someone_else_is_deciding() {
        use crate::engine::api::{Outcome, Refusal, RefusalKind, Reply};
        let mut app = paired_app();
        update(&mut app, Action::Open);
        update(&mut app, Action::Down);
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("✎ Bob (bob) is deciding 2"), "{screen}");
        // Alice decides too; the engine recorded Bob's first and says so.
        update(&mut app, Action::Approve);
        update(&mut app, Action::Submit);
        let sent = crate::console::link::outgoing(&mut app);
        let id = sent
            .iter()
            .find_map(|m| match m {
                crate::engine::api::ClientMessage::Request(r) => Some(r.id),
                _ => None,
            })
            .unwrap();
        update(
            &mut app,
            Action::ReplyArrived(Reply {
                id,
                outcome: Outcome::Refused {
                    reason: Refusal::new(
                        RefusalKind::AlreadyDecided,
                        "P-2 is already approved by Bob (bob) (uid 1002) (chain #41)",
                    ),
                },
            }),
        );
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(screen.contains("already approved by Bob"), "{screen}");
            insta::assert_snapshot!(format!("decided_by_someone_else_{width}x{height}"), screen);
        }
    }

    #[test]
    fn fit_cuts_and_pads_by_display_width() {
        assert_eq!(fit("abc", 5), "abc  ");
        assert_eq!(fit("abcdef", 3), "abc");
        assert_eq!(fit("✓ok", 2), "✓o");
    }
}
