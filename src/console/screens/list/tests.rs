use super::*;
use crate::console::fixtures::sample_snapshot;
use crate::console::incoming::{self, Needle};
use crate::console::state::{update, Action, App};
use crate::console::test_support::type_text;
use crate::console::test_support::{press, sample_app};
use crate::console::theme::Theme;
use crate::engine::api::IncidentStatus;
use crossterm::event::KeyCode;

/// The positions kept between snapshots must be the list as computed afresh, for
/// every filter, sort and open/all the person can set, and moving follows them.
#[test]
fn the_list_kept_for_the_filter_sort_and_status_is_the_list_computed_afresh() {
    let mut snapshot = sample_snapshot();
    let template = snapshot.incidents[0].clone();
    snapshot.incidents = (0..40)
        .map(|n| {
            let mut incident = template.clone();
            incident.id = format!("INC-{}", (n * 7) % 40);
            incident.title = format!("{} row count fell", ["Charges", "orders", "Users"][n % 3]);
            incident.status = [
                IncidentStatus::Open,
                IncidentStatus::Resolved,
                IncidentStatus::Verifying,
            ][(n / 2) % 3];
            incident
        })
        .collect();
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    let afresh = |app: &App| -> Vec<String> {
        let needle = Needle::new(&app.list.filter);
        let mut shown: Vec<&IncidentView> = app
            .snapshot
            .incidents
            .iter()
            .filter(|i| needle.shows(&incoming::searchable(i)) && app.list.view.shows(i))
            .collect();
        let urgency = |status| match status {
            IncidentStatus::Open => 0,
            IncidentStatus::Verifying => 1,
            IncidentStatus::Resolved => 2,
        };
        let number = |id: &str| id["INC-".len()..].parse::<u32>().unwrap();
        // Stable: ties keep the engine's order, whichever way round.
        shown.sort_by(|a, b| {
            let order = match app.list.view.sort.map(|(column, _)| column) {
                None => std::cmp::Ordering::Equal,
                Some(SortColumn::Title) => a.title.to_lowercase().cmp(&b.title.to_lowercase()),
                Some(SortColumn::Status) => urgency(a.status).cmp(&urgency(b.status)),
                Some(SortColumn::Id) => number(&a.id).cmp(&number(&b.id)),
                Some(other) => unreachable!("{other:?}"),
            };
            match app.list.view.sort {
                Some((_, true)) => order.reverse(),
                _ => order,
            }
        });
        shown.iter().map(|i| i.id.clone()).collect()
    };
    for filter in ["", "orders", "!charges", "inc-1"] {
        for sort in [
            None,
            Some((SortColumn::Title, false)),
            Some((SortColumn::Status, true)),
            Some((SortColumn::Id, false)),
            Some((SortColumn::Title, true)),
        ] {
            for open_only in [false, true] {
                update(&mut app, Action::CommandLine);
                type_text(&mut app, "status ");
                type_text(&mut app, if open_only { "open" } else { "all" });
                update(&mut app, Action::Submit);
                change_list(&mut app, |list| list.sort = sort);
                app.list.filter = filter.to_string();
                update(&mut app, Action::Resized);
                assert!(
                    app.list.is_current(&app.snapshot),
                    "kept for {filter:?} {sort:?}"
                );
                let kept: Vec<String> = app
                    .visible_incidents()
                    .iter()
                    .map(|i| i.id.clone())
                    .collect();
                assert_eq!(kept, afresh(&app), "{filter:?} {sort:?} {open_only}");
                update(&mut app, Action::Top);
                update(&mut app, Action::Down);
                assert_eq!(app.selected_incident.as_ref(), kept.get(1).or(kept.first()));
                assert_eq!(
                    app.selected_index(),
                    Some(kept.len().min(2).saturating_sub(1)).filter(|_| !kept.is_empty())
                );
            }
        }
    }
}

#[test]
fn filter_is_a_substring_and_bang_inverts() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "CUSTOMERS");
    let ids: Vec<&str> = app
        .visible_incidents()
        .iter()
        .map(|i| i.id.as_str())
        .collect();
    assert_eq!(ids, ["INC-6"]);
    assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.list.filter, "CUSTOMERS");
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."CUSTOMERS".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "!customers");
    let ids: Vec<&str> = app
        .visible_incidents()
        .iter()
        .map(|i| i.id.as_str())
        .collect();
    assert_eq!(ids, ["INC-7"]);
    press(&mut app, KeyCode::Esc);
    assert!(app.list.filter.is_empty());
    assert_eq!(app.visible_incidents().len(), 2);
}

#[test]
fn a_symptoms_table_finds_the_incident_it_joined() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "fct_daily");
    let ids: Vec<&str> = app
        .visible_incidents()
        .iter()
        .map(|i| i.id.as_str())
        .collect();
    assert_eq!(ids, ["INC-7"]);
}
