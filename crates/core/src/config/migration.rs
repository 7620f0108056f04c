//! `[[migration]]`: a plan to move tables to new names, in waves. Each wave lists its
//! tables `old → new` (`schema.table`, each side on the migration's `warehouse` unless
//! the table names another), and the migration names the `domain` whose owners sign
//! each wave off. dataward checks parity between the two sides of every table of a
//! wave; the wave's gate opens once parity holds and an owner has signed off on those
//! very parity results (see `crate::migration`).

use serde::Deserialize;

use super::{at_line, line_of, Config, Step};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationConfig {
    /// Shown on the command line, on the chain and in proposal ids.
    pub name: String,
    /// Whose owners sign the waves off.
    pub domain: String,
    /// The warehouse both sides are on unless a table says otherwise.
    pub warehouse: String,
    /// How often both sides are read again (default 5m): each read scans every table
    /// of every wave on both sides, so not on every turn.
    #[serde(default = "default_parity_every")]
    pub parity_every: String,
    pub waves: Vec<WaveConfig>,
}

fn default_parity_every() -> String {
    "5m".to_string()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaveConfig {
    pub name: String,
    pub tables: Vec<TableMove>,
}

/// One table moved: the old name, the new one, and where each is.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableMove {
    /// `schema.table` as readers name it today.
    pub old: String,
    /// `schema.table` readers are repointed to.
    pub new: String,
    /// The old side's warehouse, when not the migration's.
    pub old_warehouse: Option<String>,
    /// The new side's warehouse, when not the migration's.
    pub new_warehouse: Option<String>,
    /// A timestamp or date column: parity compares the rows day by day by it; without
    /// one the table is compared as one whole.
    pub day_column: Option<String>,
}

impl MigrationConfig {
    /// The warehouse of each side of `table`: (old, new).
    pub fn sides<'a>(&'a self, table: &'a TableMove) -> (&'a str, &'a str) {
        (
            table.old_warehouse.as_deref().unwrap_or(&self.warehouse),
            table.new_warehouse.as_deref().unwrap_or(&self.warehouse),
        )
    }
}

/// A bad key and where it is under `[[migration]]` number N.
struct Bad {
    path: Vec<Step<'static>>,
    message: String,
}

fn bad(path: Vec<Step<'static>>, message: String) -> Bad {
    Bad { path, message }
}

pub(super) fn validate(config: &Config, text: &str) -> anyhow::Result<()> {
    let mut names = std::collections::BTreeSet::new();
    for (index, migration) in config.migration.iter().enumerate() {
        let mut checked = validate_one(config, index, migration);
        if checked.is_ok() && !names.insert(migration.name.to_ascii_lowercase()) {
            checked = Err(bad(
                vec![Step::Key("name")],
                format!(
                    "migration[{index}]: another [[migration]] is named {:?}",
                    migration.name
                ),
            ));
        }
        if let Err(bad) = checked {
            let mut path = vec![Step::Key("migration"), Step::Index(index)];
            path.extend(bad.path);
            return Err(at_line(
                line_of(text, &path),
                anyhow::anyhow!("{}", bad.message),
            ));
        }
    }
    Ok(())
}

fn validate_one(config: &Config, index: usize, migration: &MigrationConfig) -> Result<(), Bad> {
    let at = format!("migration[{index}]");
    if !is_name(&migration.name) {
        return Err(bad(
            vec![Step::Key("name")],
            format!(
                "{at}: name {:?}: letters, digits, '-' and '_' only (it goes into ids)",
                migration.name
            ),
        ));
    }
    if !config.domain.iter().any(|d| d.name == migration.domain) {
        return Err(bad(
            vec![Step::Key("domain")],
            format!(
                "{at}: no [[domain]] is named {:?}: its owners sign the waves off",
                migration.domain
            ),
        ));
    }
    known_warehouse(config, &migration.warehouse)
        .map_err(|e| bad(vec![Step::Key("warehouse")], format!("{at}: {e}")))?;
    super::parse_duration(&migration.parity_every).map_err(|e| {
        bad(
            vec![Step::Key("parity_every")],
            format!("{at}: parity_every: {e}"),
        )
    })?;
    if migration.waves.is_empty() {
        return Err(bad(
            Vec::new(),
            format!("{at}: no waves: give [[migration.waves]]"),
        ));
    }
    let mut olds = std::collections::BTreeSet::new();
    for (w, wave) in migration.waves.iter().enumerate() {
        let wave_at = format!("{at} wave {:?}", wave.name);
        let here = |key: &'static str| vec![Step::Key("waves"), Step::Index(w), Step::Key(key)];
        if !is_name(&wave.name) {
            return Err(bad(
                here("name"),
                format!(
                    "{at}.waves[{w}]: name {:?}: letters, digits, '-' and '_' only",
                    wave.name
                ),
            ));
        }
        if migration.waves[..w]
            .iter()
            .any(|other| other.name == wave.name)
        {
            return Err(bad(here("name"), format!("{wave_at}: named twice")));
        }
        if wave.tables.is_empty() {
            return Err(bad(here("tables"), format!("{wave_at}: tables is empty")));
        }
        for (t, table) in wave.tables.iter().enumerate() {
            let key = |key: &'static str| {
                vec![
                    Step::Key("waves"),
                    Step::Index(w),
                    Step::Key("tables"),
                    Step::Index(t),
                    Step::Key(key),
                ]
            };
            for (name, side) in [("old", &table.old), ("new", &table.new)] {
                if !is_table(side) {
                    return Err(bad(
                        key(name),
                        format!("{wave_at}: {name} = {side:?} is not schema.table"),
                    ));
                }
            }
            let (old_wh, new_wh) = migration.sides(table);
            for (name, warehouse) in [("old_warehouse", old_wh), ("new_warehouse", new_wh)] {
                known_warehouse(config, warehouse)
                    .map_err(|e| bad(key(name), format!("{wave_at}: {e}")))?;
            }
            if old_wh == new_wh && table.old.eq_ignore_ascii_case(&table.new) {
                return Err(bad(
                    key("new"),
                    format!("{wave_at}: {} moves to itself", table.old),
                ));
            }
            if !olds.insert((old_wh.to_string(), table.old.to_ascii_lowercase())) {
                return Err(bad(
                    key("old"),
                    format!("{wave_at}: {} is moved twice in this migration", table.old),
                ));
            }
            if table
                .day_column
                .as_deref()
                .is_some_and(|c| c.trim().is_empty())
            {
                return Err(bad(
                    key("day_column"),
                    format!("{wave_at}: day_column is empty"),
                ));
            }
        }
    }
    Ok(())
}

fn known_warehouse(config: &Config, name: &str) -> Result<(), String> {
    match config.warehouse.contains_key(name) {
        true => Ok(()),
        false => Err(format!("no [warehouse.{name}] is configured")),
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn is_table(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    parts.len() == 2 && parts.iter().all(|p| !p.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use std::path::Path;

    const GOOD: &str = r#"
[warehouse.pg]
kind = "postgres"
url_env = "PG_URL"

[[domain]]
name = "sales"
covers = ["sales.*"]
owners = ["sales-owner"]

[[migration]]
name = "orders-to-core"
domain = "sales"
warehouse = "pg"

[[migration.waves]]
name = "first"
tables = [
  { old = "legacy.orders", new = "core.orders", day_column = "ordered_at" },
  { old = "legacy.refunds", new = "core.refunds" },
]
"#;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("plan.toml")).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn a_plan_is_read_with_its_waves_and_sides() {
        let config = parse(GOOD).unwrap();
        let migration = &config.migration[0];
        assert_eq!(migration.waves[0].tables.len(), 2);
        assert_eq!(migration.sides(&migration.waves[0].tables[1]), ("pg", "pg"));
    }

    #[test]
    fn a_bad_plan_is_refused_naming_the_file_line_and_key() {
        for (from, to, line, says) in [
            (
                "domain = \"sales\"",
                "domain = \"nope\"",
                13,
                "no [[domain]] is named \"nope\"",
            ),
            (
                "warehouse = \"pg\"\n\n",
                "warehouse = \"x\"\n\n",
                14,
                "no [warehouse.x]",
            ),
            (
                "new = \"core.orders\"",
                "new = \"orders\"",
                19,
                "new = \"orders\" is not schema.table",
            ),
            (
                "new = \"core.refunds\" }",
                "new = \"core.refunds\", new_warehouse = \"b\" }",
                20,
                "no [warehouse.b]",
            ),
            (
                "new = \"core.refunds\"",
                "new = \"legacy.refunds\"",
                20,
                "moves to itself",
            ),
            (
                "old = \"legacy.refunds\"",
                "old = \"legacy.orders\"",
                20,
                "moved twice",
            ),
            (
                "warehouse = \"pg\"\n\n",
                "warehouse = \"pg\"\nparity_every = \"soon\"\n\n",
                15,
                "parity_every",
            ),
            (
                "name = \"first\"",
                "name = \"first wave\"",
                17,
                "letters, digits",
            ),
        ] {
            let text = GOOD.replace(from, to);
            assert_ne!(text, GOOD, "{from}");
            let error = parse(&text).unwrap_err();
            assert!(
                error.contains(&format!("plan.toml: line {line}")),
                "{says}: {error}"
            );
            assert!(error.contains(says), "{says}: {error}");
        }
    }
}
