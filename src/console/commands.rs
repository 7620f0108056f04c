//! The `:` commands, carried out. What each is called, what it takes and whether a
//! read-only console has it is in the one table (`keys::COMMANDS`); here is what each
//! does, mostly by handing it to the screen it concerns.

use crate::console::keys::{self, Verb};
use crate::console::listing::SortColumn;
use crate::console::screens::detail::decide;
use crate::console::screens::list::{self, change_list, sort_by};
use crate::console::state::{App, Overlay, Screen};
use crate::console::theme::{self, Theme};
use crate::engine::api::Command;
use crate::sanitize;

/// Runs a `:` line. What each command is, and whether a read-only console has it, is
/// in the one table (`keys::COMMANDS`); `:ID` alone opens that incident.
pub fn run(app: &mut App, line: &str) {
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return;
    };
    let rest: Vec<&str> = words.collect();
    let Some(spec) = keys::find_command(first) else {
        if let Some(id) = incident_named(app, first) {
            open_incident_by_id(app, &id);
        } else {
            app.message = Some(format!(
                "unknown command :{} (try :help, :theme NAME, :q)",
                sanitize::for_terminal(first)
            ));
        }
        return;
    };
    // Dangerous commands are not offered in read-only mode; this is the second lock.
    if spec.dangerous && app.read_only {
        app.message = Some(format!(
            "read-only console: :{} is not available",
            spec.name
        ));
        return;
    }
    let reason = rest.join(" ");
    match spec.verb {
        Verb::Quit => app.quit = true,
        Verb::Help => app.overlay = Overlay::Help(Default::default()),
        // The org-wide stop: anyone may pull it; lifting takes two different people.
        Verb::Stop if reason.is_empty() => app.message = Some("say why: :stop REASON".into()),
        Verb::Stop => app.outbox.push(Command::OrgStop { reason }),
        Verb::Lift => app.outbox.push(Command::LiftStop),
        Verb::Run => decide::queue_run(app),
        Verb::Request => match request_text(&rest) {
            Ok(command) => app.outbox.push(command),
            Err(error) => {
                app.message = Some(format!(
                    ":request TABLE|SCHEMA PRIVILEGE ROLE [DAYSd] REASON: {error}"
                ))
            }
        },
        Verb::Timeline => match (app.screen, &mut app.detail) {
            (Screen::Detail, Some(detail)) => detail.toggle_timeline(),
            _ => app.message = Some("open an incident first, then :timeline".into()),
        },
        Verb::Mouse => {
            app.mouse = match rest.first().map(|word| word.to_lowercase()).as_deref() {
                None => !app.mouse,
                Some("on") => true,
                Some("off") => false,
                Some(other) => {
                    app.message = Some(format!(
                        "{} is not on or off",
                        sanitize::for_terminal(other)
                    ));
                    return;
                }
            };
            app.message = Some(if app.mouse {
                "mouse on: a click selects (again: opens) and focuses, the wheel scrolls".into()
            } else {
                "mouse off".into()
            });
        }
        Verb::Copy => {
            use crate::console::clipboard::{self, Target};
            match rest.first() {
                None => copy(app, clipboard::what_shows(app)),
                Some(name) => match Target::named(name) {
                    Some(target) => copy(app, clipboard::target(app, target)),
                    None => {
                        app.message = Some(format!(
                            "copy what? {} is not id, hash, command or sql",
                            sanitize::for_terminal(name)
                        ))
                    }
                },
            }
        }
        Verb::Sort => match rest.first() {
            None => change_list(app, |list| list.sort = None),
            Some(name) => match SortColumn::named(name) {
                Some(column) => sort_by(app, column),
                None => {
                    app.message = Some(format!(
                        "no column {} (id, status, sym, table, title, opened)",
                        sanitize::for_terminal(name)
                    ))
                }
            },
        },
        Verb::Status => match rest.first().map(|word| word.to_lowercase()).as_deref() {
            None => change_list(app, |list| list.open_only = !list.open_only),
            Some("open") => change_list(app, |list| list.open_only = true),
            Some("all") => change_list(app, |list| list.open_only = false),
            Some(other) => {
                app.message = Some(format!(
                    "{} is not open or all",
                    sanitize::for_terminal(other)
                ))
            }
        },
        // Closing an incident by hand, opening it again, accepting its new level: the
        // owner's, with a reason.
        Verb::Resolve | Verb::Reopen | Verb::Accept | Verb::Expected | Verb::Snooze => {
            let name = spec.name;
            let Some(incident) = app.open_incident().map(|i| i.id.clone()) else {
                app.message = Some(format!("open an incident first, then :{name} REASON"));
                return;
            };
            if reason.is_empty() {
                app.message = Some(format!("say why: :{name} REASON"));
                return;
            }
            app.outbox.push(match spec.verb {
                Verb::Resolve => Command::Resolve { incident, reason },
                Verb::Reopen => Command::Reopen { incident, reason },
                Verb::Expected => Command::Expected { incident, reason },
                Verb::Snooze => match crate::console::overlays::reason::snooze_text(&reason) {
                    Ok((seconds, reason)) => Command::Snooze {
                        target: incident,
                        seconds,
                        reason,
                    },
                    Err(error) => {
                        app.message = Some(format!(":snooze DURATION REASON: {error}"));
                        return;
                    }
                },
                _ => Command::Accept { incident, reason },
            });
        }
        Verb::Open => match rest.first() {
            None => app.message = Some("which incident? :open ID (Tab completes)".into()),
            Some(word) => match incident_named(app, word) {
                Some(id) => open_incident_by_id(app, &id),
                None => {
                    app.message = Some(format!(
                        "no incident {} in this console's snapshot",
                        sanitize::for_terminal(word)
                    ))
                }
            },
        },
        Verb::Theme => match rest.first() {
            None => {
                app.message = Some(format!(
                    "theme {} (available: {})",
                    app.theme.name,
                    theme::builtin_names().join(", ")
                ));
            }
            Some(name) => switch_theme(app, name),
        },
    }
}

/// `:request sales select analyst_ann 14d quarterly review`: what, which privilege, for
/// whom, optionally for how many days, then why. The engine judges the rest.
fn request_text(words: &[&str]) -> Result<Command, String> {
    let [target, privilege, grantee, rest @ ..] = words else {
        return Err("name the table or schema, the privilege and the role".into());
    };
    let (days, reason) = match rest.split_first() {
        Some((first, reason)) if first.ends_with('d') && first.len() > 1 => {
            let days = first[..first.len() - 1].parse::<u32>().map_err(|_| {
                format!(
                    "{} is not a number of days like 14d",
                    sanitize::for_terminal(first)
                )
            })?;
            (Some(days), reason.join(" "))
        }
        _ => (None, rest.join(" ")),
    };
    if reason.trim().is_empty() {
        return Err("say why".into());
    }
    Ok(Command::RequestAccess {
        target: target.to_string(),
        privilege: privilege.to_string(),
        grantee: grantee.to_string(),
        reason,
        days,
    })
}

/// The id of the incident `word` names: its id in any case (`inc-0042`), or its number
/// (`42`) when only one incident has it.
fn incident_named(app: &App, word: &str) -> Option<String> {
    let incidents = &app.snapshot.incidents;
    if let Some(found) = incidents.iter().find(|i| i.id.eq_ignore_ascii_case(word)) {
        return Some(found.id.clone());
    }
    let number: u64 = word.parse().ok()?;
    let mut by_number = incidents.iter().filter(|incident| {
        let digits: String = incident
            .id
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse::<u64>().ok() == Some(number)
    });
    match (by_number.next(), by_number.next()) {
        (Some(only), None) => Some(only.id.clone()),
        _ => None,
    }
}

/// Jumps to an incident wherever the console is: its detail opens, and it is selected
/// on the list when the list shows it.
fn open_incident_by_id(app: &mut App, id: &str) {
    app.overlay = Overlay::None;
    app.screen = Screen::List;
    app.detail = None;
    app.selected_incident = Some(id.to_string());
    list::open_selected(app);
}

/// Puts the text on the clipboard (the loop sends it) and says what it was.
pub fn copy(app: &mut App, found: Result<(String, &'static str), String>) {
    match found {
        Ok((text, what)) => {
            let shown: String = text
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(40)
                .collect();
            let more = if shown.len() < text.len() { "…" } else { "" };
            app.message = Some(format!("copied the {what}: {shown}{more}"));
            app.clipboard = Some(text);
        }
        Err(why) => app.message = Some(format!("nothing copied: {why}")),
    }
}

fn switch_theme(app: &mut App, name: &str) {
    match Theme::load(name, app.user_theme.as_ref(), app.no_color) {
        Ok(theme) => {
            app.theme = theme;
            // Tree labels carry theme styles; the view restyles the same rows.
            if let Some(detail) = &mut app.detail {
                detail.tree.items = Default::default();
            }
            app.full_redraw = true;
        }
        Err(error) => app.message = Some(format!("{error:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::state::Screen;
    use crate::console::test_support::{press, sample_app, type_text, DIFF_HASH};
    use crossterm::event::KeyCode;

    #[test]
    fn resolve_by_hand_needs_an_open_incident_and_a_reason() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve handled by the vendor");
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "no incident was open");
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve");
        press(&mut app, KeyCode::Enter);
        assert!(app.outbox.is_empty(), "no reason given");
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "resolve handled by the vendor");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![Command::Resolve {
                incident: "INC-7".into(),
                reason: "handled by the vendor".into(),
            }]
        );
        let mut watcher = sample_app(true);
        press(&mut watcher, KeyCode::Enter);
        press(&mut watcher, KeyCode::Char(':'));
        type_text(&mut watcher, "resolve handled");
        press(&mut watcher, KeyCode::Enter);
        assert!(watcher.outbox.is_empty(), "read-only");
    }

    /// `:request` sends the ask as typed (the engine judges it); a read-only console
    /// has no such command.
    #[test]
    fn request_asks_for_access_with_optional_days_and_a_reason() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(
            &mut app,
            "request sales select analyst_ann 14d quarterly review",
        );
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "request sales.orders select bi month end");
        press(&mut app, KeyCode::Enter);
        assert_eq!(
            app.outbox,
            vec![
                Command::RequestAccess {
                    target: "sales".into(),
                    privilege: "select".into(),
                    grantee: "analyst_ann".into(),
                    reason: "quarterly review".into(),
                    days: Some(14),
                },
                Command::RequestAccess {
                    target: "sales.orders".into(),
                    privilege: "select".into(),
                    grantee: "bi".into(),
                    reason: "month end".into(),
                    days: None,
                }
            ]
        );
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "request sales select analyst_ann 14d");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.outbox.len(), 2, "no reason");
        assert!(app.message.as_deref().unwrap().contains("say why"));
        let mut watcher = sample_app(true);
        press(&mut watcher, KeyCode::Char(':'));
        type_text(&mut watcher, "request sales select analyst_ann why");
        press(&mut watcher, KeyCode::Enter);
        assert!(watcher.outbox.is_empty(), "read-only");
    }

    /// `:INC-6`, `:inc-6`, `:6` and `:open INC-6` all jump to INC-6, from anywhere.
    #[test]
    fn a_command_jumps_to_an_incident_by_id() {
        for line in ["INC-6", "inc-6", "6", "open INC-6", "incident 6"] {
            let mut app = sample_app(false);
            press(&mut app, KeyCode::Enter);
            press(&mut app, KeyCode::Char('?'));
            press(&mut app, KeyCode::Esc);
            press(&mut app, KeyCode::Char(':'));
            type_text(&mut app, line);
            press(&mut app, KeyCode::Enter);
            assert_eq!(app.screen, Screen::Detail, "{line}");
            assert_eq!(app.open_incident().unwrap().id, "INC-6", "{line}");
            assert_eq!(app.selected_incident.as_deref(), Some("INC-6"), "{line}");
            // Esc goes back to the list, where it is selected.
            press(&mut app, KeyCode::Esc);
            assert_eq!(app.selected_incident.as_deref(), Some("INC-6"), "{line}");
        }
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "INC-99");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.screen, Screen::List);
        assert!(app.message.as_deref().unwrap().contains("unknown command"));
    }

    /// `y` copies what the focus shows; `:copy` names what.
    #[test]
    fn y_copies_an_id_a_hash_or_the_sql() {
        let mut app = sample_app(false);
        press(&mut app, KeyCode::Char('y'));
        assert_eq!(app.clipboard.take().as_deref(), Some("INC-7"));
        assert_eq!(
            app.message.as_deref(),
            Some("copied the incident id: INC-7")
        );
        // With the monitors pane in focus, the selected monitor's name.
        press(&mut app, KeyCode::Tab);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('y'));
        let monitor = &app.snapshot.monitors[app.list.monitors.order[1]].name;
        assert_eq!(app.clipboard.take().as_ref(), Some(monitor));
        assert_eq!(
            app.message,
            Some(format!("copied the monitor's name: {monitor}"))
        );
        press(&mut app, KeyCode::Esc);
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('j'));
        press(&mut app, KeyCode::Char('y'));
        assert_eq!(app.clipboard.take().as_deref(), Some(DIFF_HASH));
        press(&mut app, KeyCode::Tab);
        press(&mut app, KeyCode::Char('y'));
        assert_eq!(
            app.clipboard.take().as_deref(),
            Some(crate::console::fixtures::NEW_STG_PAYMENTS)
        );
        assert_eq!(app.message.as_deref(), Some("copied the SQL: select…"));
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "copy command");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.clipboard, None);
        assert!(app
            .message
            .as_deref()
            .unwrap()
            .starts_with("nothing copied"));
        press(&mut app, KeyCode::Char(':'));
        type_text(&mut app, "copy id");
        press(&mut app, KeyCode::Enter);
        assert_eq!(app.clipboard.take().as_deref(), Some("INC-7"));
    }
}
