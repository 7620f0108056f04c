use super::*;
use crate::console::fixtures::sample_snapshot;
use crate::console::keys;
use crate::console::state::{update, Screen};
use crate::console::test_support::{
    detail_on_diff, press, press_with, sample_app, type_text, DIFF_HASH,
};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[test]
fn approve_sends_the_full_hash_that_was_shown() {
    let mut app = detail_on_diff(false);
    assert_eq!(app.selected_proposal().unwrap().id, "P-2");
    press(&mut app, KeyCode::Char('a'));
    assert!(matches!(app.overlay, Overlay::Reason(_)));
    // Keys typed into the reason are text, not commands ('q' does not quit).
    type_text(&mut app, "refill safe, quick");
    assert!(!app.quit);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.outbox,
        vec![Command::Approve {
            proposal: "P-2".into(),
            content_hash: DIFF_HASH.into(),
            reason: "refill safe, quick".into(),
        }]
    );
    assert!(matches!(app.overlay, Overlay::None));
}

#[test]
fn capital_n_accepts_the_open_incidents_new_level_with_a_reason() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    press_with(&mut app, KeyCode::Char('N'), KeyModifiers::SHIFT);
    let Overlay::Reason(modal) = &app.overlay else {
        panic!("N opens the reason box");
    };
    assert_eq!(modal.decision, Decision::AcceptLevel);
    assert_eq!(modal.target, "INC-7");
    press(&mut app, KeyCode::Enter);
    assert!(app.outbox.is_empty(), "a reason is required");
    type_text(&mut app, "new pricing page");
    press(&mut app, KeyCode::Enter);
    let typed = vec![Command::Accept {
        incident: "INC-7".into(),
        reason: "new pricing page".into(),
    }];
    assert_eq!(app.outbox, typed);
    // The command line says the same.
    app.outbox.clear();
    press(&mut app, KeyCode::Char(':'));
    type_text(&mut app, "accept new pricing page");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.outbox, typed);
    // A read-only console has neither.
    let mut watcher = sample_app(true);
    press(&mut watcher, KeyCode::Enter);
    press_with(&mut watcher, KeyCode::Char('N'), KeyModifiers::SHIFT);
    assert!(matches!(watcher.overlay, Overlay::None));
    press(&mut watcher, KeyCode::Char(':'));
    type_text(&mut watcher, "accept it");
    press(&mut watcher, KeyCode::Enter);
    assert!(watcher.outbox.is_empty(), "read-only");
}

#[test]
fn capital_c_closes_the_open_incident_with_a_reason() {
    let mut app = sample_app(false);
    // Not on the list: there is no open incident to close.
    press(&mut app, KeyCode::Char('C'));
    assert!(matches!(app.overlay, Overlay::None));
    press(&mut app, KeyCode::Enter);
    press_with(&mut app, KeyCode::Char('C'), KeyModifiers::SHIFT);
    let Overlay::Reason(modal) = &app.overlay else {
        panic!("C opens the reason box");
    };
    assert_eq!(modal.decision, Decision::Resolve);
    assert_eq!(modal.target, "INC-7");
    assert_eq!(modal.content_hash, None);
    // The person is deciding the incident: the others see it.
    assert_eq!(
        crate::console::link::presence(&app).1.as_deref(),
        Some("INC-7")
    );
    // A reason is required; keys typed in it are text ('q' does not quit).
    press(&mut app, KeyCode::Enter);
    assert!(app.outbox.is_empty());
    let Overlay::Reason(modal) = &app.overlay else {
        panic!("the modal stays open");
    };
    assert!(modal
        .error
        .as_deref()
        .unwrap()
        .contains("Resolve needs a reason"));
    type_text(&mut app, "quiet refill; the vendor confirmed");
    assert!(!app.quit);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.outbox,
        vec![Command::Resolve {
            incident: "INC-7".into(),
            reason: "quiet refill; the vendor confirmed".into(),
        }]
    );
    assert!(matches!(app.overlay, Overlay::None));
    assert_eq!(
        app.message.as_deref(),
        Some("resolve INC-7 sent; the engine will confirm")
    );
}

#[test]
fn the_same_command_as_resolve_on_the_command_line() {
    let by_key = {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('C'));
        type_text(&mut app, "handled");
        press(&mut app, KeyCode::Enter);
        app.outbox
    };
    let by_command = {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve handled");
        press(&mut app, KeyCode::Enter);
        app.outbox
    };
    assert_eq!(by_key, by_command);
}

#[test]
fn capital_o_reopens_only_a_resolved_incident() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    // INC-7 is open: O says so and opens nothing; C on INC-6 likewise.
    press(&mut app, KeyCode::Char('O'));
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.message.as_deref().unwrap().contains("not resolved"));
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('C'));
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.message.as_deref().unwrap().contains("already resolved"));
    press(&mut app, KeyCode::Char('O'));
    press(&mut app, KeyCode::Enter);
    assert!(app.outbox.is_empty(), "a reason is required");
    type_text(&mut app, "nulls are back");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.outbox,
        vec![Command::Reopen {
            incident: "INC-6".into(),
            reason: "nulls are back".into(),
        }]
    );
}

#[test]
fn escape_closes_the_incident_reason_box_and_sends_nothing() {
    let mut app = sample_app(false);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('C'));
    type_text(&mut app, "never mind");
    press(&mut app, KeyCode::Esc);
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.outbox.is_empty());
    assert_eq!(app.screen, Screen::Detail);
}

#[test]
fn approve_without_reason_is_allowed() {
    let mut app = detail_on_diff(false);
    press(&mut app, KeyCode::Char('a'));
    press(&mut app, KeyCode::Enter);
    assert!(matches!(
        app.outbox.as_slice(),
        [Command::Approve { reason, .. }] if reason.is_empty()
    ));
}

#[test]
fn reject_and_roll_back_need_a_reason() {
    let mut app = detail_on_diff(false);
    press(&mut app, KeyCode::Char('r'));
    press(&mut app, KeyCode::Enter);
    assert!(app.outbox.is_empty());
    let Overlay::Reason(modal) = &app.overlay else {
        panic!("the modal stays open");
    };
    assert!(modal.error.is_some());
    type_text(&mut app, "casts break");
    press_with(&mut app, KeyCode::Char('j'), KeyModifiers::CONTROL);
    type_text(&mut app, "on A-3");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.outbox,
        vec![Command::Reject {
            proposal: "P-2".into(),
            content_hash: DIFF_HASH.into(),
            reason: "casts break\non A-3".into(),
        }]
    );

    // Only an approved proposal is rolled back: the hold, P-1.
    app.outbox.clear();
    press(&mut app, KeyCode::Char('k'));
    press(&mut app, KeyCode::Char('u'));
    press(&mut app, KeyCode::Enter);
    assert!(app.outbox.is_empty());
    type_text(&mut app, "wrong model");
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.outbox,
        vec![Command::RollBack {
            proposal: "P-1".into(),
            reason: "wrong model".into(),
        }]
    );
}

#[test]
fn a_hash_change_while_typing_does_not_retarget_the_decision() {
    let mut app = detail_on_diff(false);
    press(&mut app, KeyCode::Char('a'));
    let mut changed = sample_snapshot();
    changed.incidents[0].proposals[1].content_hash = "ffff".into();
    update(&mut app, Action::SnapshotArrived(Box::new(changed)));
    press(&mut app, KeyCode::Enter);
    assert!(matches!(
        app.outbox.as_slice(),
        [Command::Approve { content_hash, .. }] if content_hash == DIFF_HASH
    ));
}

#[test]
fn escape_cancels_the_modal_then_backs_out_of_detail() {
    let mut app = detail_on_diff(false);
    press(&mut app, KeyCode::Char('r'));
    press(&mut app, KeyCode::Esc);
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.outbox.is_empty());
    assert_eq!(app.screen, Screen::Detail);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.screen, Screen::List);
    press(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn forward_only_for_notes_and_queue_run_for_the_incident() {
    let mut app = detail_on_diff(false);
    press(&mut app, KeyCode::Char('f'));
    assert!(app.outbox.is_empty());
    assert!(app.message.is_some());
    press(&mut app, KeyCode::Char('j'));
    press(&mut app, KeyCode::Char('f'));
    press_with(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
    assert_eq!(
        app.outbox,
        vec![
            Command::Forward {
                proposal: "P-3".into()
            },
            Command::QueueRun {
                incident: "INC-7".into()
            },
        ]
    );
}

#[test]
fn read_only_removes_every_dangerous_key() {
    let mut app = detail_on_diff(true);
    for key in ['a', 'r', 'u', 'f', 'C', 'O', 'N'] {
        assert_eq!(
            keys::action_for(&app, KeyEvent::new(KeyCode::Char(key), KeyModifiers::NONE)),
            None,
            "{key} should do nothing in read-only mode"
        );
    }
    assert_eq!(
        keys::action_for(
            &app,
            KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)
        ),
        None,
        "Ctrl-R should do nothing in read-only mode"
    );
    assert!(keys::available(&app.keymap, true).all(|binding| !binding.dangerous));
    assert!(keys::hints(&app).iter().all(|(label, _)| *label != "a"));
    // Even an action that slips through is refused.
    for action in [Action::Approve, Action::Resolve, Action::Reopen] {
        update(&mut app, action);
        assert!(app.outbox.is_empty());
        assert!(matches!(app.overlay, Overlay::None));
    }
}
