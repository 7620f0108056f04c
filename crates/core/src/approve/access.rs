//! An access request judged by the policy's `[[access]]` rules, before anything is
//! proposed. Pure: the warehouse's catalog comes in as it was last read.
//!
//! Least privilege, as dataward reads it: a request names one table (`schema.table`)
//! or a schema (`schema`). A table is that table only. A schema is the tables that
//! schema holds now, each granted by a statement of its own, never `ON ALL TABLES IN
//! SCHEMA` (which would also reach tables the policy does not cover) and never a
//! default privilege (which would reach tables made later); of those tables only the
//! ones a rule lets this grantee have this privilege on are kept, and the others are
//! named as left out. A request that keeps no table is refused.
//!
//! The grant lasts the days asked (90 when none are asked), cut to the shortest
//! `max_days` of the rules that allowed its tables. The verdict is `review` when any
//! of those rules says so (nothing is proposed; the domain's owners look at it), else
//! `propose` (the statement goes to the domain's owners to approve).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::domain_for;
use crate::clock::Timestamp;
use crate::config::{Config, DEFAULT_ACCESS_DAYS, PRIVILEGES};
use crate::warehouse::privileges::AccessCatalog;

/// What a person asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ask {
    /// `schema.table` or `schema`.
    pub target: String,
    pub privilege: String,
    pub grantee: String,
    pub reason: String,
    pub days: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The statement is proposed to the domain's owners.
    Propose,
    /// Nothing is proposed: the domain's owners look at the request.
    Review,
}

/// The policy's answer to an [`Ask`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judged {
    pub warehouse: String,
    /// (schema, table) of each table granted, in catalog order.
    pub tables: Vec<(String, String)>,
    /// Tables of the schema asked for that no rule lets this grantee have.
    pub left_out: Vec<String>,
    /// The rules that allowed the tables, by name.
    pub rules: Vec<String>,
    pub days: u32,
    /// Why `days` is fewer than asked, when it is.
    pub days_cut: Option<String>,
    pub verdict: Verdict,
    /// The domain covering the tables, and its owners: who decides.
    pub domain: String,
    pub owners: Vec<String>,
}

/// A warehouse's catalog as last read, and when.
#[derive(Debug, Clone)]
pub struct ReadCatalog {
    pub at: Timestamp,
    pub catalog: AccessCatalog,
}

/// Judges `ask` against the policy and the catalogs of the warehouses the rules name.
/// A refusal says what is wrong in words the asker can act on.
pub fn judge(
    config: &Config,
    ask: &Ask,
    catalogs: &BTreeMap<String, ReadCatalog>,
) -> Result<Judged, String> {
    let privilege = ask.privilege.trim().to_ascii_lowercase();
    if !PRIVILEGES.contains(&privilege.as_str()) {
        return Err(format!(
            "--privilege {:?} is not a table privilege dataward writes grants for ({})",
            ask.privilege,
            PRIVILEGES.join(", ")
        ));
    }
    if ask.reason.trim().is_empty() {
        return Err("--reason must say why the access is needed".into());
    }
    let target = ask.target.trim();
    if target.is_empty() || target.split('.').count() > 2 || target.split('.').any(str::is_empty) {
        return Err(format!(
            "{:?} is neither a table (schema.table) nor a schema",
            ask.target
        ));
    }
    if ask.grantee.trim().is_empty() {
        return Err("--for names nobody".into());
    }
    if config.access.is_empty() {
        return Err("the policy has no [[access]] rule: nothing may be granted".into());
    }
    // The warehouses the rules name, in the config's order.
    let mut warehouses: Vec<&str> = Vec::new();
    for rule in &config.access {
        if !warehouses.contains(&rule.warehouse.as_str()) {
            warehouses.push(&rule.warehouse);
        }
    }
    let mut unread = Vec::new();
    let mut found = None;
    for warehouse in &warehouses {
        let Some(read) = catalogs.get(*warehouse) else {
            unread.push(*warehouse);
            continue;
        };
        let tables = tables_named(&read.catalog, target);
        if !tables.is_empty() {
            found = Some((*warehouse, read, tables));
            break;
        }
    }
    let Some((warehouse, read, tables)) = found else {
        if !unread.is_empty() {
            return Err(format!(
                "the catalog of {} has not been read yet, so {target:?} cannot be looked up; \
                 ask again in a few seconds",
                unread.join(", ")
            ));
        }
        return Err(format!(
            "no table or schema {target:?} in {} (catalog read {})",
            warehouses.join(", "),
            read_times(catalogs, &warehouses)
        ));
    };
    let grantee = ask.grantee.trim();
    if !read.catalog.roles.iter().any(|role| role == grantee) {
        return Err(format!(
            "{warehouse} has no role {grantee:?} (catalog read {}): grants go to a role or \
             account the warehouse knows",
            read.at
        ));
    }
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    let mut rules: Vec<&crate::config::AccessConfig> = Vec::new();
    for (schema, table) in tables {
        let name = format!("{schema}.{table}");
        let rule = config
            .access
            .iter()
            .find(|rule| rule.allows(config, warehouse, &name, &privilege, grantee));
        match rule {
            Some(rule) => {
                if !rules.iter().any(|r| r.name == rule.name) {
                    rules.push(rule);
                }
                kept.push((schema, table));
            }
            None => left_out.push(name),
        }
    }
    if kept.is_empty() {
        return Err(format!(
            "no [[access]] rule lets {grantee:?} have {privilege} on {}",
            left_out.join(", ")
        ));
    }
    let asked = ask.days.unwrap_or(DEFAULT_ACCESS_DAYS);
    if asked == 0 {
        return Err("--days must be at least 1".into());
    }
    let cap = rules.iter().map(|r| r.max_days).min().unwrap_or(asked);
    let days = asked.min(cap);
    let days_cut = (days < asked).then(|| {
        format!("{asked} days asked; the policy allows at most {cap}, so it lasts {days}")
    });
    let mut domain = None;
    for (schema, table) in &kept {
        let name = format!("{schema}.{table}");
        let Some(covering) = domain_for(config, &name) else {
            return Err(format!(
                "no [[domain]] covers {name}: it has no data owner to approve a grant"
            ));
        };
        match domain {
            None => domain = Some(covering),
            Some(first) if first.name != covering.name => {
                return Err(format!(
                    "the tables span domains {} and {}, owned apart: ask for each domain's \
                     tables separately",
                    first.name, covering.name
                ))
            }
            Some(_) => {}
        }
    }
    let domain = domain.expect("a table was kept");
    let verdict = if rules.iter().any(|r| r.review) {
        Verdict::Review
    } else {
        Verdict::Propose
    };
    Ok(Judged {
        warehouse: warehouse.to_string(),
        tables: kept,
        left_out,
        rules: rules.iter().map(|r| r.name.clone()).collect(),
        days,
        days_cut,
        verdict,
        domain: domain.name.clone(),
        owners: domain.owners.clone(),
    })
}

/// The tables `target` names in `catalog`: the table, or every table of the schema.
/// Names match exactly as the catalog holds them; failing that, case-insensitively
/// when that finds exactly one table or schema.
fn tables_named(catalog: &AccessCatalog, target: &str) -> Vec<(String, String)> {
    let pick = |same: &dyn Fn(&str, &str) -> bool| -> Vec<(String, String)> {
        catalog
            .tables
            .iter()
            .filter(|(schema, table)| match target.split_once('.') {
                Some((s, t)) => same(schema, s) && same(table, t),
                None => same(schema, target),
            })
            .cloned()
            .collect()
    };
    let exact = pick(&|a, b| a == b);
    if !exact.is_empty() {
        return exact;
    }
    let folded = pick(&|a, b| a.eq_ignore_ascii_case(b));
    let schemas: std::collections::BTreeSet<&String> = folded.iter().map(|(s, _)| s).collect();
    let one = match target.contains('.') {
        true => folded.len() == 1,
        false => schemas.len() == 1,
    };
    if one {
        folded
    } else {
        Vec::new()
    }
}

fn read_times(catalogs: &BTreeMap<String, ReadCatalog>, warehouses: &[&str]) -> String {
    warehouses
        .iter()
        .filter_map(|w| catalogs.get(*w).map(|read| format!("{}", read.at)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(review: bool) -> Config {
        Config::parse(
            &format!(
                r#"
[warehouse.pg]
kind = "postgres"
url_env = "PG_URL"
[[domain]]
name = "sales"
covers = ["sales.*"]
owners = ["sales-owner"]
[[domain]]
name = "hr"
covers = ["hr.*"]
owners = ["hr-owner"]
[[access]]
name = "analysts read sales"
warehouse = "pg"
tables = ["sales.orders", "sales.refunds"]
privileges = ["select"]
grantees = ["analyst_*"]
max_days = 30
review = {review}
[[access]]
name = "hr by review"
warehouse = "pg"
domains = ["hr"]
privileges = ["select"]
grantees = ["*"]
review = true
"#
            ),
            Path::new("policy.toml"),
        )
        .unwrap()
    }

    fn catalogs() -> BTreeMap<String, ReadCatalog> {
        let tables = [
            ("sales", "orders"),
            ("sales", "refunds"),
            ("sales", "salaries_by_rep"),
            ("hr", "people"),
        ];
        BTreeMap::from([(
            "pg".to_string(),
            ReadCatalog {
                at: Timestamp::parse("2026-03-01T09:00:00Z").unwrap(),
                catalog: AccessCatalog {
                    tables: tables
                        .iter()
                        .map(|(s, t)| (s.to_string(), t.to_string()))
                        .collect(),
                    roles: vec!["analyst_ann".into(), "intern".into()],
                    held: vec![],
                },
            },
        )])
    }

    fn ask(target: &str, privilege: &str, grantee: &str, days: Option<u32>) -> Ask {
        Ask {
            target: target.into(),
            privilege: privilege.into(),
            grantee: grantee.into(),
            reason: "quarterly report".into(),
            days,
        }
    }

    #[test]
    fn a_schema_is_narrowed_to_the_tables_the_policy_allows() {
        let judged = judge(
            &config(false),
            &ask("sales", "select", "analyst_ann", None),
            &catalogs(),
        )
        .unwrap();
        assert_eq!(
            judged.tables,
            vec![
                ("sales".to_string(), "orders".to_string()),
                ("sales".to_string(), "refunds".to_string())
            ]
        );
        assert_eq!(judged.left_out, vec!["sales.salaries_by_rep".to_string()]);
        assert_eq!(judged.verdict, Verdict::Propose);
        assert_eq!(judged.owners, vec!["sales-owner".to_string()]);
        // 90 by default, cut to the rule's 30.
        assert_eq!(judged.days, 30);
        assert!(judged.days_cut.unwrap().contains("90 days asked"));
    }

    #[test]
    fn a_table_is_that_table_only_and_fewer_days_stay_as_asked() {
        let judged = judge(
            &config(false),
            &ask("sales.refunds", "SELECT", "analyst_ann", Some(7)),
            &catalogs(),
        )
        .unwrap();
        assert_eq!(
            judged.tables,
            vec![("sales".to_string(), "refunds".to_string())]
        );
        assert_eq!((judged.days, judged.days_cut), (7, None));
    }

    #[test]
    fn a_rule_that_says_review_proposes_nothing() {
        let judged = judge(
            &config(false),
            &ask("hr.people", "select", "intern", None),
            &catalogs(),
        )
        .unwrap();
        assert_eq!(judged.verdict, Verdict::Review);
        assert_eq!(judged.owners, vec!["hr-owner".to_string()]);
        assert_eq!(judged.days, 90);
    }

    #[test]
    fn bad_asks_are_refused_saying_what_is_wrong() {
        let c = config(false);
        let cases = [
            (
                ask("sales.nope", "select", "analyst_ann", None),
                "no table or schema",
            ),
            (
                ask("sales", "all", "analyst_ann", None),
                "not a table privilege",
            ),
            (
                ask("sales", "insert", "analyst_ann", None),
                "no [[access]] rule",
            ),
            (ask("sales", "select", "intern", None), "no [[access]] rule"),
            (ask("sales", "select", "nobody", None), "has no role"),
            (
                ask("sales\"; DROP TABLE x; --", "select", "analyst_ann", None),
                "no table or schema",
            ),
            (ask("sales", "select", "analyst_ann", Some(0)), "at least 1"),
            (
                ask("a.b.c", "select", "analyst_ann", None),
                "neither a table",
            ),
        ];
        for (ask, says) in cases {
            let err = judge(&c, &ask, &catalogs()).unwrap_err();
            assert!(err.contains(says), "{ask:?}: {err}");
        }
        let err = judge(
            &c,
            &ask("sales", "select", "analyst_ann", None),
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert!(err.contains("not been read yet"), "{err}");
    }
}
