//! `[[access]]`: which privileges on which tables may be granted to whom, for how long
//! at most, and what needs the data owner's review first. A rule covers `tables`
//! (globs over `schema.table`, as domains' `covers`) and the tables of `domains`, on
//! one `warehouse`; it lets `grantees` (globs over warehouse roles or accounts) have
//! `privileges` for at most `max_days`. With `review = true` nothing is proposed: the
//! request goes to the domain's owners to look at.

use serde::Deserialize;

use super::{Bad, Config};

/// The privileges a rule may name: table privileges both PostgreSQL and Snowflake
/// know, each written into a statement as its keyword (never as text from a request).
pub const PRIVILEGES: &[&str] = &[
    "select",
    "insert",
    "update",
    "delete",
    "truncate",
    "references",
];

/// How long a grant lasts when the request names no `--days`.
pub const DEFAULT_DAYS: u32 = 90;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Shown in the verdict and on the chain: which rule allowed it.
    pub name: String,
    /// The warehouse whose tables this rule covers.
    pub warehouse: String,
    /// Globs over `schema.table` ('*' matches any run of characters).
    #[serde(default)]
    pub tables: Vec<String>,
    /// Domains by name: every table they cover.
    #[serde(default)]
    pub domains: Vec<String>,
    /// Lower case: `select`, `insert`, ... (see [`PRIVILEGES`]).
    pub privileges: Vec<String>,
    /// Globs over the roles or accounts a grant may go to.
    pub grantees: Vec<String>,
    /// The longest a grant lasts, in days (default 90): a longer ask is cut to this.
    #[serde(default = "default_days")]
    pub max_days: u32,
    /// The data owner looks at the request first; nothing is proposed.
    #[serde(default)]
    pub review: bool,
}

fn default_days() -> u32 {
    DEFAULT_DAYS
}

impl AccessConfig {
    /// Does this rule let `grantee` have `privilege` on `table` of `warehouse`?
    pub fn allows(
        &self,
        config: &Config,
        warehouse: &str,
        table: &str,
        privilege: &str,
        grantee: &str,
    ) -> bool {
        self.warehouse == warehouse
            && self.privileges.iter().any(|p| p == privilege)
            && self
                .grantees
                .iter()
                .any(|glob| crate::approve::glob_match(glob, grantee))
            && (self
                .tables
                .iter()
                .any(|glob| crate::approve::glob_match(glob, table))
                || crate::approve::domain_for(config, table)
                    .is_some_and(|domain| self.domains.contains(&domain.name)))
    }
}

pub(super) fn validate(config: &Config, text: &str) -> anyhow::Result<()> {
    for (index, rule) in config.access.iter().enumerate() {
        validate_one(config, index, rule).map_err(|bad| {
            bad.at(
                text,
                &[super::Step::Key("access"), super::Step::Index(index)],
            )
        })?;
    }
    Ok(())
}

fn validate_one(config: &Config, index: usize, rule: &AccessConfig) -> Result<(), Bad> {
    let at = format!("access[{index}]");
    if rule.name.trim().is_empty() {
        return Err(Bad::key("name", format!("{at}: name is empty")));
    }
    match config.warehouse.get(&rule.warehouse) {
        None => {
            return Err(Bad::key(
                "warehouse",
                format!("{at}: no [warehouse.{}] is configured", rule.warehouse),
            ))
        }
        Some(wh) if !matches!(wh.kind.as_str(), "postgres" | "snowflake") => {
            return Err(Bad::key(
                "warehouse",
                format!(
                    "{at}: warehouse {} is {}: grants are written for postgres and snowflake only",
                    rule.warehouse, wh.kind
                ),
            ))
        }
        Some(_) => {}
    }
    if rule.tables.is_empty() && rule.domains.is_empty() {
        return Err(Bad::section(format!(
            "{at}: covers nothing: give tables = [...] or domains = [...]"
        )));
    }
    for domain in &rule.domains {
        if !config.domain.iter().any(|d| &d.name == domain) {
            return Err(Bad::key(
                "domains",
                format!("{at}: no [[domain]] is named {domain:?}"),
            ));
        }
    }
    if rule.privileges.is_empty() {
        return Err(Bad::key("privileges", format!("{at}: privileges is empty")));
    }
    for privilege in &rule.privileges {
        if !PRIVILEGES.contains(&privilege.as_str()) {
            return Err(Bad::key(
                "privileges",
                format!(
                    "{at}: {privilege:?} is not a table privilege dataward writes grants for ({})",
                    PRIVILEGES.join(", ")
                ),
            ));
        }
    }
    if rule.grantees.is_empty() {
        return Err(Bad::key(
            "grantees",
            format!("{at}: grantees is empty: nobody could be granted anything"),
        ));
    }
    if rule.max_days == 0 || rule.max_days > 3650 {
        return Err(Bad::key(
            "max_days",
            format!("{at}: max_days is {}: 1 to 3650", rule.max_days),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use std::path::Path;

    fn parse(rule: &str) -> Result<Config, String> {
        let text = format!(
            "[warehouse.pg]\nkind = \"postgres\"\nurl_env = \"PG_URL\"\n\
             [warehouse.local]\nkind = \"sqlite\"\npath = \"/\"\n\n[[access]]\n{rule}"
        );
        Config::parse(&text, Path::new("policy.toml")).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn a_bad_rule_is_refused_naming_the_file_line_and_what_is_wrong() {
        let good = "name = \"r\"\nwarehouse = \"pg\"\ntables = [\"s.*\"]\n\
                    privileges = [\"select\"]\ngrantees = [\"a_*\"]\n";
        let config = parse(good).unwrap();
        assert_eq!(config.access[0].max_days, 90);
        for (rule, says) in [
            (
                good.replace("\"select\"", "\"all\""),
                "\"all\" is not a table privilege",
            ),
            (good.replace("\"pg\"", "\"nope\""), "no [warehouse.nope]"),
            (
                good.replace("\"pg\"", "\"local\""),
                "postgres and snowflake only",
            ),
            (good.replace("tables = [\"s.*\"]\n", ""), "covers nothing"),
            (good.replace("[\"a_*\"]", "[]"), "grantees is empty"),
            (format!("{good}max_days = 0\n"), "max_days is 0"),
            (
                format!("{good}domains = [\"x\"]\n"),
                "no [[domain]] is named \"x\"",
            ),
        ] {
            let error = parse(&rule).unwrap_err();
            assert!(error.contains("policy.toml: line "), "{error}");
            assert!(error.contains("access[0]"), "{error}");
            assert!(error.contains(says), "{says}: {error}");
        }
    }
}
