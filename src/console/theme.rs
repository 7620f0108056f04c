//! Themes are TOML files of semantic roles (ok, warn, crit, ...). The console only ever
//! asks for a role, so a theme can change every colour without touching the views, and
//! meaning never depends on colour: every role is paired with a glyph or a word.

use std::path::Path;
use std::str::FromStr;

use anyhow::{anyhow, bail, Context as _, Result};
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use toml::Spanned;

/// The themes shipped with dataward, compiled in so the binary needs no data files.
pub const BUILTIN_THEMES: [(&str, &str); 4] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("ansi16", include_str!("../../themes/ansi16.toml")),
    ("colorblind", include_str!("../../themes/colorblind.toml")),
];

pub const DEFAULT_THEME: &str = "dark";

/// How one role looks; every field optional so a user theme can change just one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    pub fg: Option<String>,
    pub bg: Option<String>,
    pub bold: Option<bool>,
    pub reverse: Option<bool>,
}

impl RoleSpec {
    /// `self` with every field `other` sets taken from `other`.
    fn overridden_by(&self, other: &RoleSpec) -> RoleSpec {
        RoleSpec {
            fg: other.fg.clone().or_else(|| self.fg.clone()),
            bg: other.bg.clone().or_else(|| self.bg.clone()),
            bold: other.bold.or(self.bold),
            reverse: other.reverse.or(self.reverse),
        }
    }
}

/// A theme file as written: any role may be missing. A user's file may say which
/// built-in theme it changes (`base`, dark when it does not).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThemeFile {
    pub base: Option<String>,
    pub ok: Option<RoleSpec>,
    pub warn: Option<RoleSpec>,
    pub crit: Option<RoleSpec>,
    pub muted: Option<RoleSpec>,
    pub accent: Option<RoleSpec>,
    pub selection: Option<RoleSpec>,
    pub border: Option<RoleSpec>,
    pub title: Option<RoleSpec>,
}

/// One role as the file has it, with where each colour is written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRole {
    fg: Option<Spanned<String>>,
    bg: Option<Spanned<String>>,
    bold: Option<bool>,
    reverse: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    base: Option<Spanned<String>>,
    ok: Option<RawRole>,
    warn: Option<RawRole>,
    crit: Option<RawRole>,
    muted: Option<RawRole>,
    accent: Option<RawRole>,
    selection: Option<RawRole>,
    border: Option<RawRole>,
    title: Option<RawRole>,
}

impl ThemeFile {
    /// Reads a theme; every colour is checked here, and an error names its line.
    pub fn parse(text: &str) -> Result<ThemeFile> {
        let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(1, |span| line(span.start));
            anyhow!("line {at}: {}", e.message().trim_end())
        })?;
        let colour = |role: &str, key: &str, value: &Option<Spanned<String>>| {
            value
                .as_ref()
                .map(|value| {
                    parse_color(value.get_ref())
                        .map(|_| value.get_ref().clone())
                        .map_err(|e| {
                            anyhow!("line {}: {role}.{key}: {e:#}", line(value.span().start))
                        })
                })
                .transpose()
        };
        let role = |name: &str, raw: Option<RawRole>| -> Result<Option<RoleSpec>> {
            raw.map(|raw| {
                Ok(RoleSpec {
                    fg: colour(name, "fg", &raw.fg)?,
                    bg: colour(name, "bg", &raw.bg)?,
                    bold: raw.bold,
                    reverse: raw.reverse,
                })
            })
            .transpose()
        };
        if let Some(base) = &raw.base {
            if !builtin_names().contains(&base.get_ref().as_str()) {
                bail!(
                    "line {}: base: unknown theme '{}' (known: {})",
                    line(base.span().start),
                    base.get_ref(),
                    builtin_names().join(", ")
                );
            }
        }
        Ok(ThemeFile {
            base: raw.base.map(Spanned::into_inner),
            ok: role("ok", raw.ok)?,
            warn: role("warn", raw.warn)?,
            crit: role("crit", raw.crit)?,
            muted: role("muted", raw.muted)?,
            accent: role("accent", raw.accent)?,
            selection: role("selection", raw.selection)?,
            border: role("border", raw.border)?,
            title: role("title", raw.title)?,
        })
    }

    /// A theme file; an error names the file and the line.
    pub fn read(path: &Path) -> Result<ThemeFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read theme file {}", path.display()))?;
        ThemeFile::parse(&text).map_err(|e| anyhow!("theme file {}, {e:#}", path.display()))
    }
}

/// Resolved styles, ready to draw with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    pub name: String,
    pub ok: Style,
    pub warn: Style,
    pub crit: Style,
    pub muted: Style,
    pub accent: Style,
    pub selection: Style,
    pub border: Style,
    pub title: Style,
}

impl Theme {
    /// A built-in theme by name, with a user theme laid over it. `no_color` (the
    /// `NO_COLOR` convention) drops every colour but keeps bold and reverse.
    pub fn load(name: &str, user: Option<&ThemeFile>, no_color: bool) -> Result<Theme> {
        let Some((_, text)) = BUILTIN_THEMES.iter().find(|(known, _)| *known == name) else {
            bail!(
                "unknown theme '{name}' (known: {})",
                builtin_names().join(", ")
            );
        };
        let base = ThemeFile::parse(text).with_context(|| format!("built-in theme {name}"))?;
        let empty = ThemeFile::default();
        let user = user.unwrap_or(&empty);
        let role = |base: &Option<RoleSpec>, user: &Option<RoleSpec>, role: &str| {
            let spec = base
                .clone()
                .unwrap_or_default()
                .overridden_by(&user.clone().unwrap_or_default());
            resolve(&spec, no_color).with_context(|| format!("theme role '{role}'"))
        };
        let mut selection = role(&base.selection, &user.selection, "selection")?;
        if no_color {
            // Without colour a background cannot mark the selection; reverse video can.
            selection = selection.add_modifier(Modifier::REVERSED);
        }
        Ok(Theme {
            name: name.to_string(),
            ok: role(&base.ok, &user.ok, "ok")?,
            warn: role(&base.warn, &user.warn, "warn")?,
            crit: role(&base.crit, &user.crit, "crit")?,
            muted: role(&base.muted, &user.muted, "muted")?,
            accent: role(&base.accent, &user.accent, "accent")?,
            selection,
            border: role(&base.border, &user.border, "border")?,
            title: role(&base.title, &user.title, "title")?,
        })
    }

    /// The default theme; it is compiled in and tested, so it cannot fail to load.
    pub fn fallback() -> Theme {
        Theme::load(DEFAULT_THEME, None, false).expect("the built-in default theme loads")
    }
}

pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN_THEMES.iter().map(|(name, _)| *name).collect()
}

/// The `NO_COLOR` convention: set and not empty means no colour.
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}

fn resolve(spec: &RoleSpec, no_color: bool) -> Result<Style> {
    let mut style = Style::default();
    if !no_color {
        if let Some(fg) = &spec.fg {
            style = style.fg(parse_color(fg)?);
        }
        if let Some(bg) = &spec.bg {
            style = style.bg(parse_color(bg)?);
        }
    }
    if spec.bold == Some(true) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if spec.reverse == Some(true) {
        style = style.add_modifier(Modifier::REVERSED);
    }
    Ok(style)
}

fn parse_color(text: &str) -> Result<Color> {
    Color::from_str(text)
        .map_err(|_| anyhow!("'{text}' is not a colour (a name like red, \"#rrggbb\" or 0-255)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_theme_loads_with_and_without_colour() {
        for name in builtin_names() {
            Theme::load(name, None, false).unwrap();
            Theme::load(name, None, true).unwrap();
        }
    }

    #[test]
    fn user_theme_overrides_only_what_it_sets() {
        let user = ThemeFile::parse("[crit]\nfg = \"magenta\"\n").unwrap();
        let base = Theme::load("dark", None, false).unwrap();
        let theme = Theme::load("dark", Some(&user), false).unwrap();
        assert_eq!(theme.crit.fg, Some(Color::Magenta));
        // bold came from the base theme and the user did not touch it.
        assert!(theme.crit.add_modifier.contains(Modifier::BOLD));
        assert_eq!(theme.ok, base.ok);
    }

    #[test]
    fn no_color_keeps_bold_and_marks_selection_by_reverse() {
        let theme = Theme::load("dark", None, true).unwrap();
        assert_eq!(theme.crit.fg, None);
        assert!(theme.crit.add_modifier.contains(Modifier::BOLD));
        assert_eq!(theme.selection.bg, None);
        assert!(theme.selection.add_modifier.contains(Modifier::REVERSED));
    }

    #[test]
    fn bad_theme_names_the_problem() {
        assert!(Theme::load("neon", None, false).is_err());
        for (text, said) in [
            (
                "[ok]\nfg = \"not-a-colour\"\n",
                "line 2: ok.fg: 'not-a-colour' is not a colour",
            ),
            (
                "\n[crit]\nbold = true\nbg = \"#12345\"\n",
                "line 4: crit.bg: '#12345'",
            ),
            ("[okay]\nfg = \"red\"\n", "line 1: unknown field `okay`"),
            ("[ok]\nfg = red\n", "line 2:"),
            ("base = \"neon\"\n", "line 1: base: unknown theme 'neon'"),
        ] {
            let error = format!("{:#}", ThemeFile::parse(text).unwrap_err());
            assert!(error.starts_with(said), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_broken_theme_file_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        std::fs::write(&path, "[ok]\nfg = \"green\"\n\n[warn]\nfg = \"yelow\"\n").unwrap();
        let error = format!("{:#}", ThemeFile::read(&path).unwrap_err());
        assert_eq!(
            error,
            format!(
                "theme file {}, line 5: warn.fg: 'yelow' is not a colour (a name like red, \"#rrggbb\" or 0-255)",
                path.display()
            )
        );
    }
}
