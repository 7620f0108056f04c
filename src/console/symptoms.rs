//! The breaches an incident explains, its symptoms: a downstream table whose own check
//! breached, or a model its run could not rebuild, joins the root incident instead of
//! opening one of its own. The incident list shows how many joined; the detail lists
//! them under the cause, in the cause pane, so they scroll with it.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::console::theme::Theme;
use crate::engine::api::{IncidentView, SymptomView};

/// Lines each symptom takes: what breached, then why the incident explains it.
const LINES_PER_SYMPTOM: usize = 2;

/// The incident list's column: `+3` when three breaches joined, empty when none did.
pub fn count(incident: &IncidentView) -> String {
    match incident.symptoms.len() {
        0 => String::new(),
        n => format!("+{n}"),
    }
}

/// The cause pane's title: `Cause · 3 symptoms`, so a person knows to scroll for them.
pub fn cause_title(incident: &IncidentView) -> String {
    match incident.symptoms.len() {
        0 => "Cause".into(),
        1 => "Cause · 1 symptom".into(),
        n => format!("Cause · {n} symptoms"),
    }
}

/// How many lines [`lines`] returns (before wrapping), for scrolling the cause pane.
pub fn line_count(incident: &IncidentView) -> usize {
    match incident.symptoms.len() {
        0 => 0,
        // A blank line and the heading, then each symptom.
        n => 2 + LINES_PER_SYMPTOM * n,
    }
}

/// The lines that follow the cause and its evidence: a heading, then each symptom, oldest
/// first. A recovered one carries a ✓ and the word, a breaching one a ✗: never colour
/// alone.
pub fn lines(incident: &IncidentView, theme: &Theme) -> Vec<Line<'static>> {
    let symptoms = &incident.symptoms;
    if symptoms.is_empty() {
        return Vec::new();
    }
    let recovered = symptoms.iter().filter(|s| s.recovered).count();
    let heading = match recovered {
        0 => format!("Symptoms ({})", symptoms.len()),
        _ => format!("Symptoms ({}, {recovered} recovered)", symptoms.len()),
    };
    let mut lines = vec![
        Line::raw(""),
        Line::styled(heading, theme.accent.add_modifier(Modifier::BOLD)),
    ];
    for symptom in symptoms {
        lines.extend(symptom_lines(symptom, theme));
    }
    lines
}

fn symptom_lines(symptom: &SymptomView, theme: &Theme) -> [Line<'static>; LINES_PER_SYMPTOM] {
    let (glyph, glyph_style, observed_style) = if symptom.recovered {
        ("✓", theme.ok, theme.muted)
    } else {
        ("✗", theme.crit, theme.crit)
    };
    let mut what = vec![
        Span::styled(format!(" {glyph} "), glyph_style),
        Span::styled(symptom.table.clone(), theme.title),
        Span::styled(" · ", theme.muted),
        Span::raw(symptom.check.clone()),
        Span::styled(": ", theme.muted),
        Span::styled(symptom.observed.clone(), observed_style),
    ];
    if symptom.recovered {
        what.push(Span::styled(" · recovered", theme.ok));
    }
    [
        Line::from(what),
        Line::from(vec![
            Span::raw("   "),
            Span::styled(symptom.explanation.clone(), theme.muted),
        ]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_incident;

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn counts_and_titles() {
        let mut incident = sample_incident();
        assert_eq!(count(&incident), "+3");
        assert_eq!(cause_title(&incident), "Cause · 3 symptoms");
        incident.symptoms.truncate(1);
        assert_eq!(cause_title(&incident), "Cause · 1 symptom");
        incident.symptoms.clear();
        assert_eq!(count(&incident), "");
        assert_eq!(cause_title(&incident), "Cause");
        assert_eq!(line_count(&incident), 0);
        assert!(lines(&incident, &Theme::fallback()).is_empty());
    }

    #[test]
    fn each_symptom_says_what_breached_why_and_whether_it_recovered() {
        let incident = sample_incident();
        let lines = lines(&incident, &Theme::fallback());
        assert_eq!(lines.len(), line_count(&incident));
        let shown: Vec<String> = lines.iter().map(text).collect();
        assert_eq!(shown[1], "Symptoms (3, 1 recovered)");
        assert_eq!(
            shown[2],
            " ✓ stg_payments · null_rate(amount): 3.8% at 14:10 · recovered"
        );
        assert_eq!(
            shown[3],
            "   read PAYMENTS.CHARGES while it was being re-created"
        );
        assert_eq!(
            shown[4],
            " ✗ fct_daily_revenue · row_count: 2,410 rows at 14:15"
        );
    }
}
