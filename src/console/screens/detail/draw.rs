//! The incident detail screen: the header, the cause with its evidence and symptoms, the
//! blast-radius tree, the proposals and the last verification; the selected proposal's
//! body (`proposal.rs`) or the receipt (`receipt.rs`) below.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Wrap};
use ratatui::Frame;
use tui_tree_widget::{Tree, TreeState};

use super::{Detail, Pane};
use crate::console::presence;
use crate::console::screens::{proposal, receipt};
use crate::console::state::App;
use crate::console::symptoms;
use crate::console::theme::Theme;
use crate::console::tree;
use crate::console::widgets::{
    column_widths, cut, cut_spans, from_line, incident_status, kind_word, pane_block,
    proposal_state, short, shown, sized_table, time_of_day, verdict_glyph, width_of, window_start,
    Column, SELECTED, SHORT_HASH,
};
use crate::engine::api::{
    IncidentView, ProposalKind, ProposalView, Reading, Timestamp, VerdictKind,
};

pub(crate) fn render(frame: &mut Frame, area: Rect, app: &App) {
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
    render_detail_header(frame, header, incident, app.snapshot.now, theme);
    if detail.timeline_open {
        app.drawn.receipt.set(crate::console::drawn::inner(body));
        crate::console::timeline::render(frame, body, app, incident, detail);
        return;
    }
    if detail.receipt_open {
        app.drawn.receipt.set(crate::console::drawn::inner(body));
        receipt::render(frame, body, incident, detail, theme);
        return;
    }
    if detail.zoomed {
        render_zoomed(frame, body, app, incident, detail);
        return;
    }
    // The proposals come first: `a`, `r`, `u` act on the selected one, so it is on
    // screen at any size; the cause and the tree above them give way.
    let proposals_height = (incident.proposals.len().max(1) as u16 + 2)
        .min(7)
        .min(body.height);
    let rest = body.height - proposals_height;
    let upper_height = (rest * 2 / 5).max(5).min(rest);
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
    proposal::render(frame, proposal_body, app, detail);
}

/// `z`: the focused pane takes the whole detail, and the other panes are not drawn (a
/// click or a page goes by what is drawn). Zooming the cause or the tree keeps a line
/// under it with the selected proposal, which `a`, `r` and `u` act on, so what a key
/// acts on stays on screen however small the terminal.
fn render_zoomed(
    frame: &mut Frame,
    body: Rect,
    app: &App,
    incident: &IncidentView,
    detail: &Detail,
) {
    let theme = &app.theme;
    app.drawn.panes.set(Default::default());
    let selected = incident.proposals.get(detail.proposal);
    let (area, strip) = match (detail.focus, selected) {
        (Pane::Cause | Pane::Tree, Some(proposal)) if body.height > 3 => {
            let [area, strip] =
                Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(body);
            (area, Some((strip, proposal)))
        }
        _ => (body, None),
    };
    app.drawn.set_pane(detail.focus, area);
    match detail.focus {
        Pane::Cause => render_cause(frame, area, incident, detail, theme),
        Pane::Tree => render_tree(frame, area, incident, detail, theme),
        Pane::Proposals => render_proposals(frame, area, app, incident, detail),
        Pane::Body => proposal::render(frame, area, app, detail),
    }
    if let Some((strip, proposal)) = strip {
        app.drawn.proposal_shown.set(true);
        let spans = vec![
            Span::styled(format!("{SELECTED} "), theme.accent),
            Span::raw(format!(
                "{} {} ",
                presence::short_proposal(&proposal.id),
                kind_word(proposal.kind)
            )),
            proposal_state(proposal.state, theme),
            Span::raw("  "),
            Span::raw(proposal.title.clone()),
            Span::styled("  (z: all panes)", theme.muted),
        ];
        frame.render_widget(Line::from(cut_spans(spans, strip.width as usize)), strip);
    }
}

fn render_detail_header(
    frame: &mut Frame,
    area: Rect,
    incident: &IncidentView,
    now: Timestamp,
    theme: &Theme,
) {
    let width = area.width as usize;
    let title = vec![
        Span::styled(format!(" {} ", incident.id), theme.title),
        incident_status(incident.status, theme),
        Span::raw("  "),
        Span::styled(incident.title.clone(), theme.title),
    ];
    let lines = vec![
        Line::from(cut_spans(title, width)),
        Line::from(cut_spans(figures_line(incident, now, theme).spans, width)),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}

/// The header's second line: the latest figure of the check that opened the incident
/// and whether it is back within band ("now 21,200 ✓ within 18,243..30,405"), with
/// when it was measured. Without one (not measured again yet), the last breach, said
/// to be that. The figure comes first: a narrow terminal cuts the end of the line.
fn figures_line(incident: &IncidentView, now: Timestamp, theme: &Theme) -> Line<'static> {
    let mut spans = vec![Span::raw(" ")];
    match &incident.latest {
        Some(reading) => {
            let (glyph, style) = verdict_glyph(reading.verdict, theme);
            spans.push(Span::styled("now ", theme.muted));
            spans.push(Span::styled(reading.observed.clone(), style));
            spans.push(Span::raw(" "));
            spans.push(Span::styled(
                format!("{glyph} {}", judgement(reading)),
                style,
            ));
            spans.push(Span::styled(
                format!(" · measured {}", reading.at.hour_minute()),
                theme.muted,
            ));
        }
        None => {
            spans.push(Span::styled("last breach ", theme.muted));
            spans.push(Span::styled(incident.observed.clone(), theme.crit));
            spans.push(Span::styled(" · expected ", theme.muted));
            spans.push(Span::raw(incident.expected.clone()));
        }
    }
    spans.push(Span::styled(" · ", theme.muted));
    spans.push(Span::raw(incident.table.clone()));
    spans.push(Span::styled(
        format!(" · opened {}", time_of_day(incident.opened_at, now)),
        theme.muted,
    ));
    // Last: what a narrow terminal cuts first (the list has it too).
    if !incident.check.is_empty() {
        spans.push(Span::styled(" · check ", theme.muted));
        spans.push(Span::raw(incident.check.clone()));
    }
    Line::from(spans)
}

/// The verdict against the band: "within 18,243..30,405", "below 18,243..30,405",
/// "late: over 15m"; the verdict's word where there is no band.
fn judgement(reading: &Reading) -> String {
    match (reading.verdict, reading.band.as_deref()) {
        (VerdictKind::Ok, Some(band)) => format!("within {band}"),
        (VerdictKind::Low, Some(band)) => format!("below {band}"),
        (VerdictKind::High, Some(band)) => format!("above {band}"),
        (VerdictKind::Late, Some(band)) => format!("late: over {band}"),
        (verdict, _) => verdict.as_str().to_string(),
    }
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
    if detail.tree.rows.is_empty() {
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
    let width = area.width.saturating_sub(2);
    let mut cache = detail.tree.items.borrow_mut();
    if cache.as_ref().map(|(built_for, _)| *built_for) != Some(width) {
        let items = tree::items(&detail.tree.rows, &incident.blast, theme, width);
        *cache = Some((width, items));
    }
    let items = cache
        .as_ref()
        .map(|(_, items)| items.as_slice())
        .unwrap_or(&[]);
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
    // The table has no header: the selected row is drawn when it is among the rows
    // that fit (it said "not on screen" for the one proposal of a pane one row high).
    app.drawn
        .proposal_shown
        .set((start..start + height).contains(&detail.proposal));
    let proposals = &incident.proposals;
    let widest = |field: &dyn Fn(&ProposalView) -> String| {
        proposals
            .iter()
            .map(|p| width_of(&field(p)))
            .max()
            .unwrap_or(0)
    };
    // Sized to the content: an owner is as wide as its name when there is room; on a
    // narrow terminal the title keeps the most, and the hash (whole in the reason box)
    // gives way first.
    let widths = column_widths(
        &[
            Column::new(1, 1),
            Column::new(2, widest(&|p| presence::short_proposal(&p.id).to_string())),
            Column::new(4, widest(&|p| kind_word(p.kind).to_string())).dropped(3),
            Column::new(
                6,
                widest(&|p| proposal_state(p.state, theme).content.into_owned()),
            ),
            Column::growing(8, widest(&|p| p.title.clone())),
            Column::new(6, widest(&who_decides)).dropped(5),
            Column::new(6, SHORT_HASH).dropped(6),
        ],
        area.width.saturating_sub(2),
    );
    let w = |i: usize| widths[i] as usize;
    let rows = proposals
        .iter()
        .enumerate()
        .skip(start)
        .take(height)
        .map(|(index, proposal)| {
            let selected = index == detail.proposal;
            // Someone else has the reason box open for it: say so before the title.
            let mut title = Vec::new();
            if let Some(who) = presence::deciding(app, &proposal.id) {
                title.push(Span::styled(
                    format!("✎ {who} · "),
                    theme.warn.add_modifier(Modifier::BOLD),
                ));
            }
            title.push(Span::raw(proposal.title.clone()));
            let row = Row::new(shown(
                [
                    Cell::from(if selected { SELECTED } else { " " }),
                    Cell::from(cut(presence::short_proposal(&proposal.id), w(1))),
                    Cell::from(cut(kind_word(proposal.kind), w(2))),
                    Cell::from(Line::from(cut_spans(
                        vec![proposal_state(proposal.state, theme)],
                        w(3),
                    ))),
                    Cell::from(Line::from(cut_spans(title, w(4)))),
                    Cell::from(Span::styled(cut(&who_decides(proposal), w(5)), theme.muted)),
                    Cell::from(Span::styled(
                        cut(short(&proposal.content_hash), w(6)),
                        theme.muted,
                    )),
                ],
                &widths,
            ));
            if selected && focused {
                row.style(theme.selection)
            } else {
                row
            }
        });
    let table = sized_table(rows, &widths).block(block);
    frame.render_widget(table, area);
}

/// Who the proposal waits for: the roles that may decide it now (the named owner, or
/// the domain's owners when the lineage names none of theirs), or for a note, the
/// owner it goes to.
fn who_decides(proposal: &ProposalView) -> String {
    if proposal.kind == ProposalKind::Note || proposal.deciders.is_empty() {
        proposal.owner.clone()
    } else {
        proposal.deciders.join(", ")
    }
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
