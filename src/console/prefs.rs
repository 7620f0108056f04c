//! The person's console preferences, from the config the console is started with (the
//! same file as the engine's; the engine ignores these sections) and the command line:
//!
//! ```toml
//! [console]
//! theme = "light"          # a built-in theme, or a theme file (relative to this file)
//! mouse = true             # clicks and the wheel (off unless set)
//!
//! [keys]
//! run = "ctrl-x"           # the action's keys wherever it is bound
//! top = ["g", "home"]
//! [keys.list]
//! quit = "Q"               # only in the incident list
//! ```
//!
//! `--theme NAME|FILE` wins over the config's theme. Every error names the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use serde::Deserialize;
use toml::Spanned;

use crate::console::keymap::Keymap;
use crate::console::theme::{self, ThemeFile};

/// Which theme: one of the built-in ones, or a user theme file laid over one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThemeChoice {
    Builtin(String),
    File(PathBuf),
}

#[derive(Debug, Clone, Default)]
pub struct Prefs {
    pub theme: Option<ThemeChoice>,
    pub keymap: Keymap,
    pub mouse: bool,
}

/// The config's parts the console reads; everything else in the file is the engine's.
#[derive(Deserialize)]
struct File {
    #[serde(default)]
    console: Option<Spanned<ConsoleSection>>,
    #[serde(default)]
    keys: BTreeMap<String, Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsoleSection {
    theme: Option<Spanned<String>>,
    mouse: Option<bool>,
}

/// The 1-based line `offset` falls on.
pub fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Reads the preferences from `config` (when there is such a file) and `--theme`.
pub fn load(config: Option<&Path>, theme_arg: Option<&str>) -> Result<Prefs> {
    let mut prefs = Prefs::default();
    if let Some(path) = config.filter(|path| path.exists()) {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config {}", path.display()))?;
        read_config(&mut prefs, &text, path)
            .map_err(|e| anyhow!("config {}, {e:#}", path.display()))?;
    }
    if let Some(word) = theme_arg {
        prefs.theme = Some(choose_theme(word, None).context("--theme")?);
    }
    Ok(prefs)
}

fn read_config(prefs: &mut Prefs, text: &str, path: &Path) -> Result<()> {
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(1, |span| line_at(text, span.start));
        anyhow!("line {line}: {}", e.message())
    })?;
    if let Some(console) = file.console {
        let console = console.into_inner();
        prefs.mouse = console.mouse.unwrap_or(false);
        if let Some(word) = console.theme {
            let line = line_at(text, word.span().start);
            prefs.theme = Some(
                choose_theme(word.get_ref(), path.parent())
                    .map_err(|e| anyhow!("line {line}: console.theme: {e:#}"))?,
            );
        }
    }
    for (name, value) in &file.keys {
        let line = line_at(text, value.span().start);
        match value.get_ref() {
            toml::Value::Table(entries) => {
                // `[keys.list]`: the actions of one context.
                for (action, keys) in entries {
                    let line = line_of_key(text, value.span().start, action).unwrap_or(line);
                    key_specs(keys)
                        .and_then(|specs| prefs.keymap.set(Some(name), action, &specs))
                        .map_err(|e| anyhow!("line {line}: keys.{name}.{action}: {e}"))?;
                }
            }
            keys => {
                key_specs(keys)
                    .and_then(|specs| prefs.keymap.set(None, name, &specs))
                    .map_err(|e| anyhow!("line {line}: keys.{name}: {e}"))?;
            }
        }
    }
    Ok(())
}

/// A key or a list of keys, as written.
fn key_specs(value: &toml::Value) -> Result<Vec<String>, String> {
    match value {
        toml::Value::String(key) => Ok(vec![key.clone()]),
        toml::Value::Array(keys) => keys
            .iter()
            .map(|key| match key {
                toml::Value::String(key) => Ok(key.clone()),
                other => Err(format!(
                    "{other} is not a key: write keys as text (\"ctrl-r\")"
                )),
            })
            .collect(),
        other => Err(format!(
            "{other} is not a key: write a key (\"ctrl-r\") or a list of keys"
        )),
    }
}

/// The line of `key = ...` at or after `from` (a table's entries carry no place of
/// their own).
fn line_of_key(text: &str, from: usize, key: &str) -> Option<usize> {
    let mut offset = text[..from.min(text.len())]
        .rfind('\n')
        .map_or(0, |at| at + 1);
    for line in text[offset..].split_inclusive('\n') {
        let trimmed = line.trim_start();
        let rest = trimmed
            .strip_prefix(key)
            .or_else(|| trimmed.strip_prefix(&format!("\"{key}\"")));
        if rest.is_some_and(|rest| rest.trim_start().starts_with('=')) {
            return Some(line_at(text, offset));
        }
        offset += line.len();
    }
    None
}

/// A built-in theme's name, or a theme file's path (relative to `base` when given).
pub fn choose_theme(word: &str, base: Option<&Path>) -> Result<ThemeChoice> {
    if theme::builtin_names().contains(&word) {
        return Ok(ThemeChoice::Builtin(word.to_string()));
    }
    let looks_like_a_file = word.contains('/') || word.ends_with(".toml");
    let path = match base {
        Some(dir) if Path::new(word).is_relative() => dir.join(word),
        _ => PathBuf::from(word),
    };
    if looks_like_a_file || path.exists() {
        if !path.exists() {
            bail!("no theme file {}", path.display());
        }
        return Ok(ThemeChoice::File(path));
    }
    bail!(
        "unknown theme '{word}' (known: {}; or a theme file's path)",
        theme::builtin_names().join(", ")
    )
}

/// The theme's built-in name and the user's file over it, read now.
pub fn theme_parts(choice: Option<&ThemeChoice>) -> Result<(String, Option<ThemeFile>)> {
    match choice {
        None => Ok((theme::DEFAULT_THEME.to_string(), None)),
        Some(ThemeChoice::Builtin(name)) => Ok((name.clone(), None)),
        Some(ThemeChoice::File(path)) => {
            let file = ThemeFile::read(path)?;
            let base = file
                .base
                .clone()
                .unwrap_or_else(|| theme::DEFAULT_THEME.to_string());
            Ok((base, Some(file)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Prefs> {
        let mut prefs = Prefs::default();
        read_config(&mut prefs, text, Path::new("/etc/dataward/config.toml"))?;
        Ok(prefs)
    }

    #[test]
    fn the_config_sets_the_theme_the_mouse_and_keys() {
        let prefs = parsed(
            "[warehouse.w]\nkind = \"sqlite\"\npath = \"w.db\"\n\n[console]\ntheme = \"light\"\nmouse = true\n\n[keys]\nrun = \"ctrl-x\"\n\n[keys.list]\nquit = [\"Q\", \"ctrl-q\"]\n",
        )
        .unwrap();
        assert_eq!(prefs.theme, Some(ThemeChoice::Builtin("light".into())));
        assert!(prefs.mouse);
        let labels: Vec<&str> = prefs
            .keymap
            .all()
            .filter(|b| matches!(b.action, crate::console::state::Action::QueueRun))
            .map(|b| b.label.as_str())
            .collect();
        assert_eq!(labels, ["Ctrl-X"]);
    }

    #[test]
    fn the_example_config_reads() {
        let prefs = parsed(include_str!("../../config.example.toml")).unwrap();
        assert_eq!(prefs.theme, Some(ThemeChoice::Builtin("dark".into())));
        assert!(!prefs.mouse);
    }

    #[test]
    fn every_error_names_its_line() {
        for (text, said) in [
            (
                "[console]\ntheme = \"neon\"\n",
                "line 2: console.theme: unknown theme 'neon'",
            ),
            (
                "[console]\nmouse = true\ncolour = 1\n",
                "line 3: unknown field `colour`",
            ),
            (
                "\n[keys]\nrun = \"ctrl-\"\n",
                "line 3: keys.run: \"ctrl-\" is not a key",
            ),
            (
                "[keys]\nrnu = \"x\"\n",
                "line 2: keys.rnu: no action \"rnu\"",
            ),
            (
                "[keys]\nzoom = \"a\"\n",
                "line 2: keys.zoom: a is already approve",
            ),
            (
                "[keys.list]\ntop = \"g\"\n\nquit = 3\n",
                "line 4: keys.list.quit: 3 is not a key",
            ),
            ("[keys\n", "line 1:"),
        ] {
            let error = format!("{:#}", parsed(text).unwrap_err());
            assert!(error.starts_with(said), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_theme_is_a_name_or_a_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.toml"),
            "base = \"light\"\n[crit]\nfg = \"magenta\"\n",
        )
        .unwrap();
        assert_eq!(
            choose_theme("mine.toml", Some(dir.path())).unwrap(),
            ThemeChoice::File(dir.path().join("mine.toml"))
        );
        let (base, file) =
            theme_parts(Some(&ThemeChoice::File(dir.path().join("mine.toml")))).unwrap();
        assert_eq!(base, "light");
        assert!(file.is_some());
        assert!(choose_theme("missing.toml", Some(dir.path())).is_err());
        assert!(choose_theme("neon", None).is_err());
    }
}
