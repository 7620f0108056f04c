use super::*;
use crate::console::fixtures::{sample_snapshot, DRAFT_RECEIPT};
use crate::console::state::update;
use crate::console::test_support::{detail_on_diff, press, press_with, sample_app};
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
