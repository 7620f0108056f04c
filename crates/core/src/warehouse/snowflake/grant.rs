//! Access on Snowflake: the GRANT and REVOKE statements dataward writes for the owner
//! to run (it runs neither). Names are folded as Snowflake stores an unquoted name and
//! written as quoted identifiers, the privilege one of a fixed list of keywords, so no
//! table or role name can add a statement. Grants go to roles, as Snowflake's do.

use super::sql::quote;

/// `GRANT SELECT ON TABLE "DB"."SCHEMA"."TABLE" TO ROLE "ROLE";`
pub fn grant(privilege: &str, database: &str, schema: &str, table: &str, role: &str) -> String {
    format!(
        "GRANT {} ON TABLE {} TO ROLE {};",
        keyword(privilege),
        name(database, schema, table),
        quote(role)
    )
}

/// `REVOKE SELECT ON TABLE "DB"."SCHEMA"."TABLE" FROM ROLE "ROLE";`
pub fn revoke(privilege: &str, database: &str, schema: &str, table: &str, role: &str) -> String {
    format!(
        "REVOKE {} ON TABLE {} FROM ROLE {};",
        keyword(privilege),
        name(database, schema, table),
        quote(role)
    )
}

fn name(database: &str, schema: &str, table: &str) -> String {
    format!("{}.{}.{}", quote(database), quote(schema), quote(table))
}

/// The privilege as its SQL keyword (the list is checked before: `approve::access`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_the_table_whole_and_the_role_as_snowflake_stores_them() {
        assert_eq!(
            grant("select", "analytics", "marts", "orders", "bi_reader"),
            r#"GRANT SELECT ON TABLE "ANALYTICS"."MARTS"."ORDERS" TO ROLE "BI_READER";"#
        );
        assert_eq!(
            revoke("select", "analytics", "marts", "orders", "bi_reader"),
            r#"REVOKE SELECT ON TABLE "ANALYTICS"."MARTS"."ORDERS" FROM ROLE "BI_READER";"#
        );
        // A name only quoting could have made keeps its case.
        assert_eq!(
            grant("insert", "DB", "Mixed Case", "t", "r"),
            r#"GRANT INSERT ON TABLE "DB"."Mixed Case"."T" TO ROLE "R";"#
        );
    }

    #[test]
    fn a_hostile_name_stays_one_quoted_identifier() {
        let statement = grant(
            "select",
            "db",
            "s",
            "t\"; DROP DATABASE db; --",
            "r\" ; GRANT ROLE ACCOUNTADMIN TO ROLE \"r",
        );
        assert_eq!(
            statement,
            r#"GRANT SELECT ON TABLE "DB"."S"."t""; DROP DATABASE db; --" TO ROLE "r"" ; GRANT ROLE ACCOUNTADMIN TO ROLE ""r";"#
        );
    }
}
