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
