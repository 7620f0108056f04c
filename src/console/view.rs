//! Drawing, as a pure function of [`App`]. Nothing here changes state or computes more
//! than the rows that fit: diffs and tree rows were prepared when the snapshot arrived.
//! Every state is shown by a glyph or a word as well as a colour, and the selected row
//! carries a `▶`, so the screen reads the same without colour.
//!
//! This is the entry point; each screen and overlay draws in a file of its own
//! (`screens/`, `overlays/`, `bars.rs`), with the pieces they share in `widgets.rs`.
//! The screen snapshots of the whole console stay here, where `render` is.

use ratatui::layout::{Constraint, Layout};
use ratatui::Frame;

use crate::console::bars;
use crate::console::overlays::{alerts, reason};
use crate::console::screens::{detail, list};
use crate::console::state::{App, Overlay, Screen};

pub fn render(frame: &mut Frame, app: &App) {
    app.drawn.begin_frame();
    let [title, main, status, hints] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    bars::render_title(frame, title, app);
    match app.screen {
        Screen::List => list::render(frame, main, app),
        Screen::Detail => detail::render(frame, main, app),
    }
    bars::render_status(frame, status, app);
    bars::render_hints(frame, hints, app);
    match &app.overlay {
        Overlay::Help(help) => crate::console::help::render(frame, app, help),
        Overlay::AlertOutbox(outbox) => alerts::render(frame, app, outbox.scroll),
        Overlay::Waves(scroll) => crate::console::overlays::waves::render(frame, app, scroll),
        Overlay::Access(scroll) => crate::console::overlays::access::render(frame, app, scroll),
        Overlay::Reason(modal) => reason::render(frame, app, modal),
        Overlay::Prompt(_) | Overlay::None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::fixtures::sample_snapshot;
    use crate::console::screens::detail::Pane;
    use crate::console::state::Screen;
    use crate::console::state::{update, Action};
    use crate::console::test_support::{
        detail_app, draw, drawn_in, paired_app, sample_app, style_of, type_into,
    };
    use crate::console::theme::Theme;
    use crate::engine::api::IncidentStatus;
    use ratatui::layout::Rect;

    const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

    #[test]
    fn incident_list() {
        let app = sample_app(false);
        for (width, height) in SIZES {
            insta::assert_snapshot!(
                format!("incident_list_{width}x{height}"),
                draw(&app, width, height)
            );
        }
    }

    /// One incident over many monitors: the list takes the rows it needs and the
    /// monitors pane the rest, at every size (not thirty empty rows over four lines of
    /// monitors at 160x45).
    #[test]
    fn the_list_takes_the_rows_it_needs_and_the_monitors_the_rest() {
        let mut snapshot = sample_snapshot();
        snapshot.incidents.truncate(1);
        let template = snapshot.monitors[1].clone();
        snapshot.monitors = (0..40)
            .map(|n| {
                let mut monitor = template.clone();
                monitor.name = format!("m{n:02}_freshness");
                monitor
            })
            .collect();
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        for (width, height) in [(80, 24), (120, 40), (160, 45)] {
            let screen = draw(&app, width, height);
            let lines: Vec<&str> = screen.lines().collect();
            // Title bar, the list's border, header and one row, then its bottom border.
            assert!(lines[4].contains('┗'), "{screen}");
            // The monitors fill the rest: a row on the line above its bottom border.
            assert!(
                lines[height as usize - 4].contains("_freshness"),
                "{screen}"
            );
            insta::assert_snapshot!(
                format!("one_incident_many_monitors_{width}x{height}"),
                screen
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
        let mut app = sample_app(false);
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

    /// `z` gives the focused pane the whole detail: at 80x24 the whole diff shows, with
    /// its undo and verification; `z` again puts the panes back.
    #[test]
    fn a_zoomed_pane() {
        let mut app = detail_app();
        update(&mut app, Action::NextPane);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Body);
        update(&mut app, Action::Zoom);
        let screen = draw(&app, 80, 24);
        assert!(!screen.contains("Blast radius"), "{screen}");
        assert!(screen.contains("where zip_code is not null"), "{screen}");
        insta::assert_snapshot!("zoomed_body_80x24", screen);
        update(&mut app, Action::Zoom);
        assert!(draw(&app, 80, 24).contains("Blast radius"));
        // At 40x10 the detail shows only the proposals; the cause, zoomed, reads there,
        // with the proposal `a` would act on on the line under it, and a page is the
        // zoomed pane's height.
        update(&mut app, Action::NextPane);
        assert_eq!(app.detail.as_ref().unwrap().focus, Pane::Cause);
        assert!(!draw(&app, 40, 10).contains("Source migration"));
        update(&mut app, Action::Zoom);
        let small = draw(&app, 40, 10);
        assert!(small.contains("Source migration"), "{small}");
        assert!(small.contains("▶ 2 diff ○ pending"), "{small}");
        assert!(!small.contains("Proposals"), "{small}");
        assert_eq!(app.drawn.pane(Pane::Cause).height, 2, "{small}");
        assert_eq!(app.drawn.pane(Pane::Proposals), Rect::default());
        insta::assert_snapshot!("zoomed_cause_40x10", small);
    }

    /// `T` shows the incident's chain records in order, who did what; `y` copies them
    /// as Markdown; `T` or Esc goes back to the panes.
    #[test]
    fn the_timeline_pane() {
        let mut app = detail_app();
        update(&mut app, Action::ToggleTimeline);
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(
                screen.contains("Timeline: INC-7, 7 chain records"),
                "{screen}"
            );
            assert!(screen.contains("decided"), "{screen}");
            assert!(screen.contains("alice (uid 1000)"), "{screen}");
            insta::assert_snapshot!(format!("timeline_{width}x{height}"), screen);
        }
        // Narrow, each record's head goes on a line of its own, cut with … where it
        // does not fit, and what happened wraps under it; a name longer than the who
        // column is cut with … (the Markdown keeps it whole).
        let small = draw(&app, 40, 12);
        assert!(
            small.contains("Timeline: INC-7, 7 chain records …"),
            "{small}"
        );
        assert!(
            small.contains("┃    row count on PAYMENTS.CHARGES:"),
            "{small}"
        );
        insta::assert_snapshot!("timeline_40x12", small);
        let long = "someone with a very long account name (uid 1001)";
        let mut snapshot = app.snapshot.clone();
        snapshot.incidents[0].timeline[6].who = long.into();
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        for _ in 0..6 {
            update(&mut app, Action::Down);
        }
        let wide = draw(&app, 120, 40);
        assert!(
            wide.contains("decided    someone with a very l…  approved P-1"),
            "{wide}"
        );
        update(&mut app, Action::Copy);
        let copied = app.clipboard.take().unwrap();
        assert!(copied.starts_with("## Timeline of INC-7"), "{copied}");
        assert!(
            copied.contains(&format!(
                "(chain #42) **decided**, {long}: approved P-1: refill in progress"
            )),
            "{copied}"
        );
        update(&mut app, Action::Back);
        assert!(draw(&app, 120, 40).contains("Blast radius"));
        assert_eq!(app.screen, Screen::Detail);
    }

    /// The cause pane focused and scrolled down to the symptoms listed under the cause.
    #[test]
    fn symptoms_under_the_cause() {
        let mut app = sample_app(false);
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

    /// The header says where the incident's own figure is now, whether it is back within
    /// band and when it was measured: not the last breaching value.
    #[test]
    fn the_header_shows_the_latest_figure_and_its_band() {
        use crate::engine::api::{Reading, VerdictKind};
        let mut app = detail_app();
        let screen = draw(&app, 80, 24);
        assert!(
            screen.contains(" now 1,260,000 ✗ below 5,380,000..5,620,000 · measured 14:20"),
            "{screen}"
        );
        let mut snapshot = sample_snapshot();
        snapshot.incidents[0].latest = Some(Reading {
            observed: "5,450,000".into(),
            verdict: VerdictKind::Ok,
            band: Some("5,380,000..5,620,000".into()),
            at: "2026-11-24T14:52:00Z".parse().unwrap(),
        });
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            let header = screen.lines().nth(2).unwrap();
            assert!(
                header.contains(" now 5,450,000 ✓ within 5,380,000..5,620,000 · measured 14:52"),
                "{screen}"
            );
            assert!(!header.contains("1,210,000"), "{header}");
            insta::assert_snapshot!(format!("back_within_band_{width}x{height}"), screen);
        }
        let theme = app.theme.clone();
        assert!(drawn_in(style_of(&app, 120, 40, "✓ within"), theme.ok));
    }

    /// 300 monitors: the pane says how many there are and how many breach, puts the
    /// breaches first, and Tab then End reaches the last one.
    #[test]
    fn three_hundred_monitors_are_all_reachable() {
        use crate::engine::api::VerdictKind;
        let mut snapshot = sample_snapshot();
        let template = snapshot.monitors[1].clone();
        snapshot.monitors = (0..300)
            .map(|n| {
                let mut monitor = template.clone();
                monitor.name = format!("m{n:03}_freshness");
                if n % 60 == 59 {
                    monitor.verdict = VerdictKind::Late;
                    monitor.observed = "2h05m since the last load".into();
                }
                monitor
            })
            .collect();
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let screen = draw(&app, 120, 40);
        assert!(screen.contains("Monitors (300 · 5 breaching)"), "{screen}");
        let rows: Vec<&str> = screen
            .lines()
            .filter(|l| l.contains("_freshness"))
            .collect();
        for (row, name) in rows
            .iter()
            .zip(["m059", "m119", "m179", "m239", "m299", "m000"])
        {
            assert!(row.contains(name), "{name} in {row}\n{screen}");
        }
        assert!(rows[0].contains("✗ late"), "{screen}");
        update(&mut app, Action::NextPane);
        // A page in the monitors pane is the rows it drew, not the incident list's.
        draw(&app, 120, 40);
        let rows_drawn = app.drawn.monitor_rows.get().height as usize;
        assert!(rows_drawn > 2, "{rows_drawn}");
        update(&mut app, Action::PageDown);
        assert_eq!(app.list.monitors.selected, rows_drawn);
        update(&mut app, Action::Bottom);
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(screen.contains("▶ m298_freshness"), "{screen}");
            assert!(screen.contains("of 300"), "{screen}");
            insta::assert_snapshot!(format!("monitors_300_{width}x{height}"), screen);
        }
        // Enter opens no incident from the monitors; Esc goes back to the incidents.
        update(&mut app, Action::Open);
        assert_eq!(app.screen, Screen::List);
        update(&mut app, Action::Back);
        update(&mut app, Action::Open);
        assert_eq!(app.screen, Screen::Detail);
    }

    /// Cut text ends with `…`, and columns are as wide as their content when the
    /// terminal allows: an owner's whole name at 200 columns, not 13 characters of it.
    #[test]
    fn cut_text_ends_in_an_ellipsis_and_columns_fit_the_width() {
        let mut snapshot = sample_snapshot();
        snapshot.incidents[0].proposals[0].owner = "analytics-engineering-oncall".into();
        snapshot.incidents[0].proposals[0].deciders = vec!["analytics-engineering-oncall".into()];
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        update(&mut app, Action::Open);
        let hold_row = |screen: &str| {
            screen
                .lines()
                .find(|l| l.contains(" hold "))
                .unwrap()
                .to_string()
        };
        let wide = draw(&app, 200, 50);
        let row = hold_row(&wide);
        assert!(row.contains("analytics-engineering-oncall"), "{row}");
        assert!(
            row.contains("Pause the hourly dbt job until the refill completes"),
            "{row}"
        );
        assert!(!row.contains('…'), "{row}");
        let narrow = draw(&app, 80, 24);
        let row = hold_row(&narrow);
        assert!(row.contains("analytics-"), "{row}");
        assert!(!row.contains("analytics-engineering-oncall"), "{row}");
        assert!(row.matches('…').count() >= 2, "title and owner cut: {row}");
        // So are the blast radius's labels, at whatever depth.
        let node = narrow
            .lines()
            .find(|l| l.contains("int_payment_regions"))
            .unwrap();
        let in_tree = node.split('│').rev().nth(1).unwrap_or(node).trim_end();
        assert!(in_tree.ends_with('…'), "{node}");
        assert!(!node.contains("casts zip_code to integer"), "{node}");
        // The header's lines are cut the same way.
        let figures = narrow.lines().nth(2).unwrap();
        assert!(
            figures.trim_end_matches(['"', ' ']).ends_with('…'),
            "{figures}"
        );
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            insta::assert_snapshot!(format!("cut_to_fit_{width}x{height}"), screen);
        }
    }

    /// While the engine's first poll is slow, the console says how far it has got, and
    /// an empty list does not claim there is nothing wrong.
    #[test]
    fn a_slow_first_poll_says_how_far_it_got() {
        use crate::engine::api::FirstPoll;
        let mut snapshot = sample_snapshot();
        snapshot.incidents.clear();
        snapshot.first_poll = Some(FirstPoll {
            done: 37,
            total: 120,
        });
        let mut app = App::new(false, Theme::fallback(), None, false);
        update(
            &mut app,
            Action::SnapshotArrived(Box::new(snapshot.clone())),
        );
        for (width, height) in SIZES {
            let screen = draw(&app, width, height);
            assert!(screen.contains("first poll: 37 of 120 tables"), "{screen}");
            assert!(!screen.contains("No incidents"), "{screen}");
            insta::assert_snapshot!(format!("first_poll_{width}x{height}"), screen);
        }
        snapshot.first_poll = None;
        update(&mut app, Action::SnapshotArrived(Box::new(snapshot)));
        let screen = draw(&app, 120, 40);
        assert!(!screen.contains("first poll"), "{screen}");
        assert!(
            screen.contains("✓ No incidents. Monitors are watching."),
            "{screen}"
        );
    }

    /// At 40x10 whatever a key acts on is on screen: the selected incident Enter opens,
    /// the selected proposal `a` approves, and in the approve box the whole content hash
    /// (wrapped) and a line to type the reason on.
    #[test]
    fn a_small_terminal_shows_what_the_keys_act_on() {
        let mut app = sample_app(false);
        let list = draw(&app, 40, 10);
        assert!(list.contains("▶ INC-7"), "{list}");
        update(&mut app, Action::Down);
        let list = draw(&app, 40, 10);
        assert!(list.contains("▶ INC-6"), "{list}");
        insta::assert_snapshot!("small_list_40x10", list);

        let mut app = detail_app();
        let detail = draw(&app, 40, 10);
        assert!(detail.contains("▶ 2"), "{detail}");
        update(&mut app, Action::Down);
        let detail = draw(&app, 40, 10);
        assert!(detail.contains("▶ 3"), "{detail}");
        insta::assert_snapshot!("small_detail_40x10", detail);

        update(&mut app, Action::Up);
        update(&mut app, Action::Approve);
        type_into(&mut app, "ok");
        let modal = draw(&app, 40, 10);
        let hash = &app.selected_proposal().unwrap().content_hash;
        let inside: String = modal
            .lines()
            .map(|l| l.trim_matches('"').trim_matches(['┃', '│', ' ']))
            .collect();
        assert!(inside.contains(hash.as_str()), "{hash} in\n{modal}");
        assert!(modal.contains("│ok"), "the typed reason shows:\n{modal}");
        insta::assert_snapshot!("small_approve_40x10", modal);
    }

    #[test]
    fn help_overlay() {
        let mut app = sample_app(false);
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

    #[test]
    fn resolve_by_hand_modal() {
        let mut app = sample_app(false);
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
    fn a_broken_chain_takes_the_top_line() {
        let mut app = sample_app(false);
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
        let mut app = sample_app(false);
        update(&mut app, Action::Down);
        update(&mut app, Action::Open);
        update(&mut app, Action::ToggleReceipt);
        insta::assert_snapshot!("receipt_80x24", draw(&app, 80, 24));

        // An open incident's receipt: the draft the chain holds so far.
        let mut app = sample_app(false);
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
}
