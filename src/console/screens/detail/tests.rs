use super::*;
use crate::console::fixtures::{sample_snapshot, DRAFT_RECEIPT};
use crate::console::state::update;
use crate::console::state::{Action, App, Overlay, Screen};
use crate::console::test_support::{
    detail_app, detail_on_diff, draw, press, press_with, sample_app,
};
use crate::console::theme::Theme;
use crate::engine::api::IncidentStatus;
use crossterm::event::{KeyCode, KeyModifiers};

#[test]
fn the_cause_pane_scrolls_through_the_symptoms() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::BackTab);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
    press(&mut app, KeyCode::End);
    // The cause, four pieces of evidence, a blank line, the heading and two lines
    // for each of the three symptoms: the last line is the last one reached.
    assert_eq!(app.detail.as_ref().unwrap().cause_scroll, 1 + 4 + 2 + 6 - 1);
    press(&mut app, KeyCode::Char('k'));
    assert_eq!(app.detail.as_ref().unwrap().cause_scroll, 11);
}

#[test]
fn tree_keys_move_and_fold() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::BackTab);
    assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Tree);
    let selected = |app: &App| app.detail.as_ref().unwrap().tree.selected.clone();
    assert_eq!(selected(&app), ["model.payments.stg_payments"]);
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(
        selected(&app),
        [
            "model.payments.stg_payments",
            "model.payments.int_payment_regions"
        ]
    );
    // Left on a leaf goes to its parent; left again folds it.
    press(&mut app, KeyCode::Left);
    assert_eq!(selected(&app), ["model.payments.stg_payments"]);
    press(&mut app, KeyCode::Char('h'));
    let tree = &app.detail.as_ref().unwrap().tree;
    assert_eq!(tree::visible_paths(&tree.rows, &tree.opened).len(), 1);
    press(&mut app, KeyCode::Char('l'));
    let tree = &app.detail.as_ref().unwrap().tree;
    // stg_payments, int_payment_regions, fct_daily_revenue, the dashboard and the job
    // under it, and the job again directly under stg_payments.
    assert_eq!(tree::visible_paths(&tree.rows, &tree.opened).len(), 6);
}

#[test]
fn end_then_up_scrolls_back_at_once() {
    let mut app = detail_on_diff(false);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Body);
    press(&mut app, KeyCode::End);
    let bottom = app.detail.as_ref().unwrap().body_scroll;
    // 8 side-by-side rows (9 unified) and the undo/verify trailer.
    assert_eq!(bottom, 11);
    press(&mut app, KeyCode::Char('k'));
    assert_eq!(app.detail.as_ref().unwrap().body_scroll, 10);
}

#[test]
fn an_open_incidents_draft_receipt_opens_too() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    let mut snapshot = sample_snapshot();
    snapshot.incidents[0].receipt = Some(DRAFT_RECEIPT.into());
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    assert_eq!(app.open_incident().unwrap().status, IncidentStatus::Open);
    press(&mut app, KeyCode::Char('R'));
    let detail = app.detail.as_ref().unwrap();
    assert!(detail.receipt_open);
    assert!(app.message.is_none());
    // It scrolls like any receipt, and R closes it again.
    press(&mut app, KeyCode::End);
    assert_eq!(
        app.detail.as_ref().unwrap().receipt_scroll,
        DRAFT_RECEIPT.lines().count() - 1
    );
    press(&mut app, KeyCode::Char('R'));
    assert!(!app.detail.as_ref().unwrap().receipt_open);
}

#[test]
fn receipt_opens_only_when_there_is_one() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('R'));
    assert!(!app.detail.as_ref().unwrap().receipt_open);
    assert!(app
        .message
        .as_deref()
        .unwrap()
        .starts_with("no receipt yet"));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Enter);
    press_with(&mut app, KeyCode::Char('R'), KeyModifiers::SHIFT);
    assert!(app.detail.as_ref().unwrap().receipt_open);
    press(&mut app, KeyCode::Esc);
    assert!(!app.detail.as_ref().unwrap().receipt_open);
    assert_eq!(app.screen, Screen::Detail);
}

/// A proposal on a job nobody names an owner for waits for its domain's owners: the
/// proposals table says who that is, never the placeholder "unknown-owner".
#[test]
fn the_proposals_table_names_who_decides_not_the_placeholder_owner() {
    let mut snapshot = sample_snapshot();
    let hold = &mut snapshot.incidents[0].proposals[0];
    hold.owner = "unknown-owner".into();
    hold.deciders = vec!["jaffle-owner".into()];
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    update(&mut app, Action::Open);
    let screen = draw(&app, 160, 45);
    assert!(!screen.contains("unknown-owner"), "{screen}");
    let row = screen.lines().find(|l| l.contains(" hold ")).unwrap();
    assert!(row.contains("jaffle-owner"), "{row}");
}

/// Below the size where a row fits, or with the timeline over the panes, a key does
/// not act on what the person cannot see: it says why instead.
#[test]
fn a_key_refuses_to_act_on_what_the_last_frame_left_out() {
    let mut app = sample_app(false);
    draw(&app, 40, 6);
    update(&mut app, Action::Open);
    assert_eq!(app.screen, Screen::List);
    let said = app.message.clone().unwrap_or_default();
    assert!(said.contains("INC-7 is not on screen"), "{said}");
    draw(&app, 40, 10);
    update(&mut app, Action::Open);
    assert_eq!(app.screen, Screen::Detail);

    let mut app = detail_app();
    draw(&app, 40, 10);
    update(&mut app, Action::ToggleTimeline);
    let screen = draw(&app, 120, 40);
    assert!(
        !screen.contains("a approve"),
        "no hint for what would refuse:\n{screen}"
    );
    draw(&app, 40, 10);
    update(&mut app, Action::Approve);
    assert!(matches!(app.overlay, Overlay::None), "no reason box opened");
    let said = app.message.clone().unwrap_or_default();
    assert!(said.contains("is not on screen"), "{said}");
    update(&mut app, Action::ToggleTimeline);
    assert!(draw(&app, 120, 40).contains("a approve"));
    draw(&app, 40, 10);
    update(&mut app, Action::Approve);
    assert!(
        matches!(app.overlay, Overlay::Reason(_)),
        "{:?}",
        app.message
    );
}
