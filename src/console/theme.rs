//! Themes are TOML files of semantic roles (ok, warn, crit, ...). The console only ever
//! asks for a role, so a theme can change every colour without touching the views, and
//! meaning never depends on colour: every role is paired with a glyph or a word.

use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context as _, Result};
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

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

/// A theme file as written: any role may be missing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThemeFile {
    pub ok: Option<RoleSpec>,
    pub warn: Option<RoleSpec>,
    pub crit: Option<RoleSpec>,
    pub muted: Option<RoleSpec>,
    pub accent: Option<RoleSpec>,
    pub selection: Option<RoleSpec>,
    pub border: Option<RoleSpec>,
    pub title: Option<RoleSpec>,
}

impl ThemeFile {
    pub fn parse(text: &str) -> Result<ThemeFile> {
        Ok(toml::from_str(text)?)
    }

    pub fn read(path: &Path) -> Result<ThemeFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading theme {}", path.display()))?;
        ThemeFile::parse(&text).with_context(|| format!("theme {}", path.display()))
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
    Color::from_str(text).map_err(|_| anyhow::anyhow!("'{text}' is not a colour"))
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
        let user = ThemeFile::parse("[ok]\nfg = \"not-a-colour\"\n").unwrap();
        let error = Theme::load("dark", Some(&user), false).unwrap_err();
        assert!(format!("{error:#}").contains("ok"));
        assert!(ThemeFile::parse("[okay]\nfg = \"red\"\n").is_err());
    }
}
