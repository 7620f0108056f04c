//! What a warehouse's catalog says about access: the tables it holds, the roles it
//! knows, and whether a role holds a privilege on a table by a grant made to it. Read
//! for access requests (`approve::access`); dataward grants nothing itself.

use serde::{Deserialize, Serialize};

/// One grant dataward watches for: `grantee` holding `privilege` (lower case, one of
/// `config::PRIVILEGES`) on `schema.table`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GrantCheck {
    pub grantee: String,
    pub schema: String,
    pub table: String,
    pub privilege: String,
}

/// The catalog as read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessCatalog {
    /// Every table and view outside the system schemas: (schema, table).
    pub tables: Vec<(String, String)>,
    /// Every role (or account) a grant may go to.
    pub roles: Vec<String>,
    /// For each grant asked about, in order: whether it is in place.
    pub held: Vec<(GrantCheck, bool)>,
}

impl AccessCatalog {
    /// Whether the catalog showed `check` in place (None: it was not asked about).
    pub fn holds(&self, check: &GrantCheck) -> Option<bool> {
        self.held
            .iter()
            .find(|(asked, _)| asked == check)
            .map(|(_, held)| *held)
    }
}

/// The statement that grants (or, `grant` false, revokes) `privilege` on one table to
/// `grantee`, in the dialect of the warehouse `name` of `config`: what the owner runs.
pub fn statement(
    config: &crate::config::Config,
    name: &str,
    privilege: &str,
    (schema, table): (&str, &str),
    grantee: &str,
    grant: bool,
) -> Result<String, String> {
    let warehouse = config
        .warehouse
        .get(name)
        .ok_or_else(|| format!("no warehouse {name} in the config"))?;
    match warehouse.kind.as_str() {
        "postgres" => Ok(if grant {
            super::postgres::grant::grant(privilege, schema, table, grantee)
        } else {
            super::postgres::grant::revoke(privilege, schema, table, grantee)
        }),
        "snowflake" => {
            let database = warehouse.database.as_deref().ok_or_else(|| {
                format!(
                    "warehouse {name} names no database: a Snowflake grant names the table whole"
                )
            })?;
            Ok(if grant {
                super::snowflake::grant::grant(privilege, database, schema, table, grantee)
            } else {
                super::snowflake::grant::revoke(privilege, database, schema, table, grantee)
            })
        }
        other => Err(format!(
            "warehouse {name} is {other}: grants are written for postgres and snowflake only"
        )),
    }
}
