//! Access on PostgreSQL: the GRANT and REVOKE statements dataward writes for the owner
//! to run (it runs neither), and the catalog read that sees them in place. Every name
//! is a quoted identifier and the privilege one of a fixed list of keywords, so no
//! table or role name can add a statement.

use postgres::Client;

use super::super::privileges::{AccessCatalog, GrantCheck};
use super::quote_ident;

/// `GRANT SELECT ON "schema"."table" TO "role";`
pub fn grant(privilege: &str, schema: &str, table: &str, grantee: &str) -> String {
    format!(
        "GRANT {} ON {}.{} TO {};",
        keyword(privilege),
        quote_ident(schema),
        quote_ident(table),
        quote_ident(grantee)
    )
}

/// `REVOKE SELECT ON "schema"."table" FROM "role";`
pub fn revoke(privilege: &str, schema: &str, table: &str, grantee: &str) -> String {
    format!(
        "REVOKE {} ON {}.{} FROM {};",
        keyword(privilege),
        quote_ident(schema),
        quote_ident(table),
        quote_ident(grantee)
    )
}

/// The privilege as its SQL keyword; anything not on the list is refused before a
/// statement is written (`approve::access`), so this never sees one.
fn keyword(privilege: &str) -> &'static str {
    match privilege {
        "insert" => "INSERT",
        "update" => "UPDATE",
        "delete" => "DELETE",
        "truncate" => "TRUNCATE",
        "references" => "REFERENCES",
        _ => "SELECT",
    }
}

/// Tables and views outside the system schemas.
const TABLES_SQL: &str = "SELECT n.nspname::text, c.relname::text
 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND n.nspname NOT LIKE 'pg\\_%'
 ORDER BY 1, 2";

const ROLES_SQL: &str = "SELECT rolname::text FROM pg_roles ORDER BY 1";

/// A grant made to the role itself, as the table's ACL holds it (what
/// `information_schema.role_table_grants` lists): a privilege the role has only through
/// another role, PUBLIC or superuser is not the grant dataward asked for, and a REVOKE
/// of that grant must show as gone even then.
const HELD_SQL: &str = "SELECT EXISTS (
   SELECT 1 FROM pg_class c
   JOIN pg_namespace n ON n.oid = c.relnamespace
   CROSS JOIN LATERAL aclexplode(c.relacl) a
   JOIN pg_roles r ON r.oid = a.grantee
   WHERE n.nspname = $1 AND c.relname = $2 AND r.rolname = $3
     AND a.privilege_type = upper($4))";

/// Reads the catalog in one read-only transaction.
pub(super) fn read(
    client: &mut Client,
    checks: &[GrantCheck],
) -> Result<AccessCatalog, postgres::Error> {
    let mut tx = client.build_transaction().read_only(true).start()?;
    let tables = tx
        .query(TABLES_SQL, &[])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let roles = tx.query(ROLES_SQL, &[])?.iter().map(|r| r.get(0)).collect();
    let mut held = Vec::new();
    for check in checks {
        let row = tx.query_one(
            HELD_SQL,
            &[
                &check.schema,
                &check.table,
                &check.grantee,
                &check.privilege,
            ],
        )?;
        held.push((check.clone(), row.get(0)));
    }
    tx.commit()?;
    Ok(AccessCatalog {
        tables,
        roles,
        held,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_identifiers_so_a_hostile_name_stays_a_name() {
        assert_eq!(
            grant("select", "analytics", "orders", "bi_reader"),
            r#"GRANT SELECT ON "analytics"."orders" TO "bi_reader";"#
        );
        assert_eq!(
            revoke("select", "analytics", "orders", "bi_reader"),
            r#"REVOKE SELECT ON "analytics"."orders" FROM "bi_reader";"#
        );
        let hostile = grant(
            "select",
            "a\"; DROP TABLE x; --",
            "t",
            "r\"; GRANT ALL ON ALL TABLES IN SCHEMA public TO \"r",
        );
        assert_eq!(
            hostile,
            r#"GRANT SELECT ON "a""; DROP TABLE x; --"."t" TO "r""; GRANT ALL ON ALL TABLES IN SCHEMA public TO ""r";"#
        );
        // PUBLIC is a keyword; quoted it is a role of that name, never everyone.
        assert!(grant("select", "s", "t", "PUBLIC").ends_with(r#"TO "PUBLIC";"#));
    }
}
