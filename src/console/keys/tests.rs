use super::*;
use crate::console::fixtures::{many_incidents, sample_snapshot};
use crate::console::screens::detail::{Detail, Pane};
use crate::console::state::{update, App, Overlay, Screen};
use crate::console::test_support::{
    detail_on_diff, press as press_key, press_with, sample_app, type_text,
};
use crate::console::theme::Theme;
use crate::console::view;
use crossterm::event::KeyEvent;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn app_with(snapshot: crate::engine::api::Snapshot) -> App {
    let mut app = App::new(false, Theme::fallback(), None, false);
    update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
    app
}

fn draw(app: &App, size: (u16, u16)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    terminal.draw(|frame| view::render(frame, app)).unwrap();
    terminal.backend().to_string()
}

fn key(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    press(app, KeyEvent::new(code, modifiers));
}

fn selected(app: &App) -> usize {
    app.selected_index().unwrap()
}

/// PgDn and PgUp move by the rows the list shows, at whatever size the terminal
/// is; Ctrl-D and Ctrl-U by half; g and G to the ends.
#[test]
fn pages_are_as_tall_as_the_screen_shows() {
    let mut app = app_with(many_incidents(200));
    let mut pages = Vec::new();
    for size in [(80, 24), (120, 40), (100, 60)] {
        key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
        assert_eq!(selected(&app), 0);
        draw(&app, size);
        let rows = app.drawn.list_rows.get().height;
        pages.push(rows);
        key(&mut app, KeyCode::PageDown, KeyModifiers::NONE);
        assert_eq!(selected(&app), rows as usize, "{size:?}");
        // The row a page down lands on is on screen, at the bottom.
        let screen = draw(&app, size);
        let id = format!("INC-{}", 200 - rows as usize);
        assert!(screen.contains(&format!("▶ {id} ")), "{id} in\n{screen}");
        key(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL);
        assert_eq!(selected(&app), rows as usize * 3 / 2, "{size:?}");
        key(&mut app, KeyCode::Char('u'), KeyModifiers::CONTROL);
        key(&mut app, KeyCode::PageUp, KeyModifiers::NONE);
        assert_eq!(selected(&app), 0, "{size:?}");
        key(&mut app, KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(selected(&app), 199);
    }
    // 24 rows show 12 incidents; the taller, the more.
    assert_eq!(pages[0], 12);
    assert!(pages[0] < pages[1] && pages[1] < pages[2], "{pages:?}");
}

/// In the detail, a page is the focused pane's height; the help pages by its own.
#[test]
fn panes_and_help_page_by_their_own_height() {
    let mut app = app_with(sample_snapshot());
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    key(&mut app, KeyCode::BackTab, KeyModifiers::NONE);
    key(&mut app, KeyCode::BackTab, KeyModifiers::NONE);
    assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
    draw(&app, (120, 40));
    let rows = app.drawn.pane(Pane::Cause).height as usize;
    assert!(rows > 2);
    key(&mut app, KeyCode::PageDown, KeyModifiers::NONE);
    assert_eq!(app.detail.as_ref().unwrap().cause_scroll, rows);
    key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
    assert_eq!(app.detail.as_ref().unwrap().cause_scroll, 0);

    key(&mut app, KeyCode::Char('?'), KeyModifiers::NONE);
    let before = draw(&app, (80, 24));
    let height = app.drawn.help.get().height as usize;
    let first_below = crate::console::help::lines(&app, 74)[height].to_string();
    assert!(!before.contains(first_below.trim()), "{before}");
    key(&mut app, KeyCode::PageDown, KeyModifiers::NONE);
    let after = draw(&app, (80, 24));
    // The line just below the first page is now the top one.
    let top = after.lines().nth(2).unwrap();
    assert!(
        top.contains(first_below.trim()),
        "{first_below:?} at the top of\n{after}"
    );
    key(&mut app, KeyCode::Char('G'), KeyModifiers::NONE);
    let bottom = draw(&app, (80, 24));
    assert!(bottom.contains(":run"), "{bottom}");
    key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
    assert!(matches!(&app.overlay, Overlay::Help(help) if help.scroll == 0));
}

/// The run moved off g (now the top) to Ctrl-R, which nobody presses by accident.
#[test]
fn g_goes_to_the_top_and_the_run_is_on_ctrl_r() {
    let mut app = app_with(sample_snapshot());
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    key(&mut app, KeyCode::Char('g'), KeyModifiers::NONE);
    assert!(app.outbox.is_empty());
    assert_eq!(
        action_for(
            &app,
            KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL)
        ),
        Some(Action::QueueRun)
    );
    key(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
    assert_eq!(
        app.outbox,
        vec![crate::engine::api::Command::QueueRun {
            incident: "INC-7".into()
        }]
    );
}

/// The console in each place a person can be, drawn once, with nothing said yet.
fn places() -> Vec<(&'static str, App)> {
    let detail = |read_only: bool, focus: Pane, change: &dyn Fn(&mut Detail)| {
        let mut app = App::new(read_only, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(sample_snapshot())),
        );
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        let detail = app.detail.as_mut().unwrap();
        detail.focus = focus;
        change(detail);
        app
    };
    let none = |_: &mut Detail| {};
    let mut empty = App::new(false, Theme::fallback(), None, false);
    update(&mut empty, Action::SnapshotArrived(Box::default()));
    let mut monitors = app_with(sample_snapshot());
    key(&mut monitors, KeyCode::Tab, KeyModifiers::NONE);
    let mut help = app_with(sample_snapshot());
    key(&mut help, KeyCode::Char('?'), KeyModifiers::NONE);
    let mut outbox = app_with(sample_snapshot());
    key(&mut outbox, KeyCode::Char('o'), KeyModifiers::NONE);
    let mut read_only_list = App::new(true, Theme::fallback(), None, false);
    update(
        &mut read_only_list,
        Action::SnapshotArrived(Box::new(sample_snapshot())),
    );
    vec![
        ("list, no incidents", empty),
        ("list", app_with(sample_snapshot())),
        ("list, read-only", read_only_list),
        ("monitors pane", monitors),
        ("detail, cause", detail(false, Pane::Cause, &none)),
        ("detail, tree", detail(false, Pane::Tree, &none)),
        ("detail, proposals", detail(false, Pane::Proposals, &none)),
        ("detail, body", detail(false, Pane::Body, &none)),
        ("detail, read-only", detail(true, Pane::Proposals, &none)),
        (
            "detail, zoomed",
            detail(false, Pane::Proposals, &|d| d.zoomed = true),
        ),
        (
            "detail, timeline",
            detail(false, Pane::Proposals, &|d| d.timeline_open = true),
        ),
        (
            "detail, receipt",
            detail(false, Pane::Proposals, &|d| d.receipt_open = true),
        ),
        ("help", help),
        ("outbox", outbox),
    ]
}

/// Every key of the registry, pressed wherever a person can be (where it is bound
/// and where it is not), either changes what the console shows or does, or says on
/// the status line why it does nothing. Keys that did nothing and said nothing: `C`
/// in a read-only console, `a` on the list, `l` outside the tree.
#[test]
fn every_key_that_does_nothing_says_why() {
    let mut silent = Vec::new();
    let mut pressed: Vec<Key> = BINDINGS
        .iter()
        .flat_map(|b| b.keys.iter().copied())
        .collect();
    // And keys nothing binds anywhere.
    pressed.extend([ch('x'), ch('Q'), plain(KeyCode::F(5))]);
    for (place, _) in places() {
        for key_pressed in &pressed {
            let mut app = places().into_iter().find(|(p, _)| *p == place).unwrap().1;
            let before = draw(&app, (120, 40));
            app.message = None;
            app.full_redraw = false;
            let before_again = draw(&app, (120, 40));
            assert_eq!(
                before, before_again,
                "{place}: drawing twice draws the same"
            );
            press(
                &mut app,
                KeyEvent::new(key_pressed.code, key_pressed.modifiers),
            );
            let after = draw(&app, (120, 40));
            let acted = after != before
                || app.quit
                || app.suspend
                || app.full_redraw
                || app.clipboard.is_some()
                || !app.outbox.is_empty();
            if !acted {
                silent.push(format!(
                    "{place}: {:?} {:?}",
                    key_pressed.modifiers, key_pressed.code
                ));
            }
        }
    }
    assert!(
        silent.is_empty(),
        "{} keys did nothing and said nothing:\n{}",
        silent.len(),
        silent.join("\n")
    );
}

/// One proposal on screen at 160x45 (and at every size a row fits): `a` opens the
/// reason box for it. The view noted it as left out (a pane with room for one row
/// was taken for a header and a row), so `a` said "is not on screen".
#[test]
fn the_one_proposal_on_screen_is_decided_at_any_size_it_shows() {
    for size in [(160, 45), (120, 40), (80, 24), (200, 60)] {
        let mut snapshot = sample_snapshot();
        let incident = &mut snapshot.incidents[0];
        incident.proposals.retain(|p| p.id == "P-2");
        let mut app = app_with(snapshot);
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        let screen = draw(&app, size);
        assert!(screen.contains("P-2"), "{size:?}\n{screen}");
        key(&mut app, KeyCode::Char('a'), KeyModifiers::NONE);
        assert!(
            matches!(app.overlay, Overlay::Reason(_)),
            "{size:?}: {:?}\n{screen}",
            app.message
        );
        // Each pane zoomed shows it too (the body names it in its title).
        for focus in [Pane::Cause, Pane::Tree, Pane::Proposals, Pane::Body] {
            app.overlay = Overlay::None;
            let detail = app.detail.as_mut().unwrap();
            detail.zoomed = true;
            detail.focus = focus;
            draw(&app, size);
            key(&mut app, KeyCode::Char('a'), KeyModifiers::NONE);
            assert!(
                matches!(app.overlay, Overlay::Reason(_)),
                "{size:?} {focus:?} zoomed: {:?}",
                app.message
            );
        }
    }
}

/// Someone the policy does not let decide a proposal is refused when they press the
/// key, before typing a reason (they got the box and were refused only after), and
/// told who decides; a decided proposal says so. The engine still checks.
#[test]
fn a_decision_this_person_may_not_take_is_refused_before_the_reason_box() {
    let mut snapshot = sample_snapshot();
    for proposal in &mut snapshot.incidents[0].proposals {
        proposal.decider_accounts = Some(vec!["alice".into()]);
    }
    let console = |you: &str, snapshot: &crate::engine::api::Snapshot| {
        let mut app = app_with(snapshot.clone());
        update(
            &mut app,
            Action::Hello {
                started_at: "2026-11-24T14:00:00Z".parse().unwrap(),
                you: you.into(),
                read_only: false,
            },
        );
        key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        // P-2, the pending diff.
        key(&mut app, KeyCode::Char('j'), KeyModifiers::NONE);
        draw(&app, (120, 40));
        app
    };
    let mut bob = console("bob (uid 1002)", &snapshot);
    for refused in ['a', 'r'] {
        key(&mut bob, KeyCode::Char(refused), KeyModifiers::NONE);
        assert!(matches!(bob.overlay, Overlay::None), "{refused}");
        let said = bob.message.clone().unwrap_or_default();
        assert!(
            said.contains("bob may not decide P-2")
                && said.contains("analytics-eng")
                && said.contains("alice"),
            "{said}"
        );
    }
    // Nothing approved to roll back; the approved hold has nothing left to decide.
    key(&mut bob, KeyCode::Char('u'), KeyModifiers::NONE);
    assert!(
        bob.message
            .clone()
            .unwrap_or_default()
            .contains("P-2 is pending"),
        "{:?}",
        bob.message
    );
    key(&mut bob, KeyCode::Char('k'), KeyModifiers::NONE);
    key(&mut bob, KeyCode::Char('a'), KeyModifiers::NONE);
    let said = bob.message.clone().unwrap_or_default();
    assert!(
        said.contains("P-1 is approved") && matches!(bob.overlay, Overlay::None),
        "{said}"
    );
    // The one who may decide gets the reason box.
    let mut alice = console("alice (uid 1001)", &snapshot);
    key(&mut alice, KeyCode::Char('a'), KeyModifiers::NONE);
    assert!(
        matches!(alice.overlay, Overlay::Reason(_)),
        "{:?}",
        alice.message
    );
    // Closing the incident by hand is its table's owners' too.
    let mut owned = snapshot.clone();
    owned.incidents[0].owner_accounts = Some(vec!["alice".into()]);
    let mut bob = console("bob (uid 1002)", &owned);
    key(&mut bob, KeyCode::Char('C'), KeyModifiers::NONE);
    let said = bob.message.clone().unwrap_or_default();
    assert!(
        matches!(bob.overlay, Overlay::None)
            && said.contains("bob may not close")
            && said.contains("alice"),
        "{said}"
    );
    let mut alice = console("alice (uid 1001)", &owned);
    key(&mut alice, KeyCode::Char('C'), KeyModifiers::NONE);
    assert!(
        matches!(alice.overlay, Overlay::Reason(_)),
        "{:?}",
        alice.message
    );
    // Without the policy at hand (an older engine), the engine decides alone.
    snapshot.incidents[0].proposals[1].decider_accounts = None;
    let mut unknown = console("bob (uid 1002)", &snapshot);
    key(&mut unknown, KeyCode::Char('a'), KeyModifiers::NONE);
    assert!(
        matches!(unknown.overlay, Overlay::Reason(_)),
        "{:?}",
        unknown.message
    );
}

/// Esc pressed just before another key arrives glued to it, as Alt-key (inside
/// tmux, anything within its escape time): both keys still count.
#[test]
fn escape_glued_to_the_next_key_is_still_escape() {
    let mut app = sample_app(false);
    press_key(&mut app, KeyCode::Char('?'));
    press_with(&mut app, KeyCode::Char('q'), KeyModifiers::ALT);
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.quit, "Esc closed the help, q quit");

    let mut app = sample_app(false);
    press_key(&mut app, KeyCode::Enter);
    press_with(&mut app, KeyCode::Char('j'), KeyModifiers::ALT);
    assert_eq!(app.screen, Screen::List);
    assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));

    // In the filter, Esc cancels it and the key lands on the list.
    let mut app = sample_app(false);
    press_key(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "CUST");
    press_with(&mut app, KeyCode::Char('j'), KeyModifiers::ALT);
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.list.filter.is_empty());
    assert_eq!(app.selected_incident.as_deref(), Some("INC-6"));

    // Alt-Enter is bound in the reason box: a new line, not Esc then Enter.
    let mut app = detail_on_diff(false);
    press_key(&mut app, KeyCode::Char('r'));
    type_text(&mut app, "one");
    press_with(&mut app, KeyCode::Enter, KeyModifiers::ALT);
    let Overlay::Reason(modal) = &app.overlay else {
        panic!("the reason box stays open");
    };
    assert_eq!(modal.text.lines().len(), 2);
}

#[test]
fn question_mark_closes_the_help_it_opened() {
    let mut app = sample_app(false);
    press_key(&mut app, KeyCode::Char('?'));
    assert!(matches!(app.overlay, Overlay::Help(_)));
    press_key(&mut app, KeyCode::Char('?'));
    assert!(matches!(app.overlay, Overlay::None));
    assert!(!app.quit);
}
