use super::*;

#[test]
fn cast_targets_from_types_as_written() {
    assert_eq!(
        CastTarget::parse("INTEGER"),
        Some(CastTarget::Integer {
            min: -2147483648,
            max: 2147483647
        })
    );
    assert_eq!(
        CastTarget::parse("numeric(10, 2)"),
        Some(CastTarget::Number)
    );
    assert_eq!(
        CastTarget::parse("double precision"),
        Some(CastTarget::Number)
    );
    assert_eq!(CastTarget::parse("VARCHAR(12)"), Some(CastTarget::Text));
    assert_eq!(CastTarget::parse("date"), Some(CastTarget::Date));
    assert_eq!(CastTarget::parse("bool"), Some(CastTarget::Boolean));
    assert_eq!(CastTarget::parse("timestamp"), None);
    assert_eq!(CastTarget::parse("jsonb"), None);
}

#[test]
fn which_values_cast() {
    let integer = CastTarget::parse("integer").unwrap();
    for good in ["12", " 7 ", "-3", "+0", "007", "\t5\n", "2147483647"] {
        assert!(integer.accepts(good), "{good:?}");
    }
    for bad in ["", " ", "A-3", "1.5", "1e3", "2147483648", "- 3", "１２"] {
        assert!(!integer.accepts(bad), "{bad:?}");
    }
    assert!(CastTarget::parse("bigint").unwrap().accepts("2147483648"));

    for good in [
        "12",
        " 1.5 ",
        "-.5",
        "5.",
        "1e3",
        "2.5E-3",
        "NaN",
        "-Infinity",
        "inf",
    ] {
        assert!(CastTarget::Number.accepts(good), "{good:?}");
    }
    for bad in ["", ".", "A-3", "1,5", "1e", "e3", "1.2.3", "--1"] {
        assert!(!CastTarget::Number.accepts(bad), "{bad:?}");
    }

    for good in [
        "2024-02-29",
        " 2024-01-31 ",
        "0001-01-01",
        "2024-1-5",
        "-Infinity",
        "today",
    ] {
        assert!(CastTarget::Date.accepts(good), "{good:?}");
    }
    for bad in [
        "2023-02-29",
        "2024-13-01",
        "24-01-01",
        "0000-01-01",
        "soon",
        "2024-01-31x",
        "2024-001-01",
        "-2024-01-01",
    ] {
        assert!(!CastTarget::Date.accepts(bad), "{bad:?}");
    }

    for good in ["true", "F", " yes ", "of", "1"] {
        assert!(CastTarget::Boolean.accepts(good), "{good:?}");
    }
    for bad in ["o", "2", "", "truth"] {
        assert!(!CastTarget::Boolean.accepts(bad), "{bad:?}");
    }
    assert!(CastTarget::Text.accepts(""));
}

#[test]
fn version_names_are_plain_names_whatever_the_tag() {
    let name = |schema: &str, table: &str, tag: &str| version_name(schema, table, tag);
    assert_eq!(
        name("analytics", "fct_shipments", "INC-0003-P1").unwrap(),
        "analytics__fct_shipments__inc_0003_p1"
    );
    // A hostile tag is only ever a name.
    let hostile = name("public", "t", "x\"; drop table t; --").unwrap();
    assert_eq!(hostile, "public__t__x_drop_table_t");
    assert!(is_version_name(&hostile));
    // The same tag, however it is spelled, is the same version.
    assert_eq!(
        name("analytics", "fct", "inc 0003/p1").unwrap(),
        name("analytics", "fct", "INC-0003-P1").unwrap()
    );
    for bad in ["", "--", "\"; --", "ü", &"x".repeat(31)] {
        assert!(
            matches!(name("s", "t", bad), Err(WarehouseError::Refused(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn two_tables_never_share_a_version_name() {
    let tag = "INC-0003-P1";
    let names = [
        ("shop", "Orders"),
        ("shop", "orders"),
        ("shop", "ORDERS"),
        ("a__b", "c"),
        ("a", "b__c"),
        ("a", "b_c"),
        ("a_b", "c"),
        ("my-schema", "t"),
        ("my_schema", "t"),
        ("s", &"long_table_name_".repeat(4)),
        ("s", &format!("{}x", "long_table_name_".repeat(4))),
    ]
    .map(|(schema, table)| version_name(schema, table, tag).unwrap());
    for (i, a) in names.iter().enumerate() {
        assert!(a.len() <= 63, "{a}");
        assert!(is_version_name(a), "{a}");
        assert!(a.ends_with("__inc_0003_p1"), "{a}");
        for b in &names[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // A name that needed its hash says what it was.
    assert!(names[0].starts_with("shop__orders_"), "{}", names[0]);
    assert!(!is_version_name("analytics.t") && !is_version_name("T") && !is_version_name(""));
}

#[test]
fn a_restore_names_every_column_that_no_longer_fits() {
    let cols = |list: &[(&str, &str)]| {
        list.iter()
            .map(|(name, data_type)| Column {
                name: name.to_string(),
                data_type: data_type.to_string(),
            })
            .collect::<Vec<_>>()
    };
    let copy = cols(&[
        ("id", "integer"),
        ("amount", "numeric(10,2)"),
        ("gone", "text"),
    ]);
    // Order aside, the same columns restore.
    let same = cols(&[
        ("amount", "numeric(10,2)"),
        ("id", "integer"),
        ("gone", "text"),
    ]);
    assert_eq!(check_restorable("s.t", &same, "v.c", &copy), Ok(()));
    let table = cols(&[("id", "integer"), ("amount", "text"), ("added", "date")]);
    let Err(WarehouseError::Refused(message)) = check_restorable("s.t", &table, "v.c", &copy)
    else {
        panic!("restorable");
    };
    assert_eq!(
        message,
        "cannot restore s.t from v.c: column amount is text in the table but \
         numeric(10,2) in the copy; column added (date) is in the table but not in \
         the copy; column gone (text) is in the copy but no longer in the table"
    );
}

#[test]
fn relations_are_quoted_not_pasted() {
    let r = Relation::parse("BILLING.PAYMENTS").unwrap();
    assert_eq!(r.quoted(), "\"BILLING\".\"PAYMENTS\"");
    let evil = Relation::parse("x\"; DROP TABLE y; --").unwrap();
    assert_eq!(evil.quoted(), "\"x\"\"; DROP TABLE y; --\"");
    assert!(Relation::parse("a.b.c").is_err());
    assert!(Relation::parse("").is_err());
}
