use super::*;

#[test]
fn roles_are_short_names_people_say() {
    assert_eq!(
        role_of("Finance Team <finance@example.com>"),
        "finance-team"
    );
    assert_eq!(role_of("growth@example.com"), "growth");
    assert_eq!(role_of("Data Platform"), "data-platform");
    assert_eq!(role_of("<>"), "owner");
}

#[test]
fn sql_identifiers_are_quoted_whatever_they_hold() {
    assert_eq!(quote_ident("raw"), "\"raw\"");
    assert_eq!(quote_ident("Raw Data"), "\"Raw Data\"");
    assert_eq!(quote_ident("we\"ird"), "\"we\"\"ird\"");
}

#[test]
fn names_are_identifiers() {
    assert_eq!(identifier("jaffle-shop"), "jaffle_shop");
    assert_eq!(identifier("9lives"), "dbt_9lives");
    assert_eq!(key("first.last"), "\"first.last\"");
    assert_eq!(key("alice"), "alice");
}

#[test]
fn only_plain_columns_of_a_time_type_are_read() {
    assert!(is_column_name("_loaded_at"));
    assert!(is_column_name("\"LoadedAt\""));
    assert!(!is_column_name("convert_timezone('UTC', _loaded_at)"));
    assert!(!is_column_name("_loaded_at::timestamp"));
    let columns = vec![
        CatalogColumn {
            name: "_loaded_at".into(),
            data_type: "timestamp without time zone".into(),
        },
        CatalogColumn {
            name: "note".into(),
            data_type: "text".into(),
        },
    ];
    assert_eq!(unusable_column("_loaded_at", Some(&columns), "x"), None);
    assert!(unusable_column("note", Some(&columns), "x")
        .unwrap()
        .contains("is text, not a timestamp"));
    assert!(unusable_column("gone", Some(&columns), "x")
        .unwrap()
        .contains("not a column"));
    assert_eq!(unusable_column("gone", None, "x"), None);
}
