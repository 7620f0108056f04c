//! Reading a dbt `catalog.json` (from `dbt docs generate`): the column types of every
//! relation, as the warehouse reported them. The manifest rarely carries types, and a
//! break-risk judgement needs the type a column has now.

use serde::Serialize;
use serde_json::Value;

use super::json_fields::{parse_json, quoted, schema_version, FieldReader};
use super::LineageError;

/// One column of a relation, as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogColumn {
    pub name: String,
    /// As the warehouse spells it, e.g. `character varying(12)` or `NUMBER(38,0)`.
    pub data_type: String,
}

/// The columns of one node, in the warehouse's column order.
#[derive(Debug)]
pub(crate) struct CatalogEntry {
    pub unique_id: String,
    pub columns: Vec<CatalogColumn>,
}

/// The sections of a catalog whose entries are keyed by unique_id.
const SECTIONS: &[&str] = &["nodes", "sources"];

pub(crate) fn parse_catalog(text: &str, file: &str) -> Result<Vec<CatalogEntry>, LineageError> {
    let reader = FieldReader::for_catalog(file);
    let root = parse_json(&reader, text, "a dbt catalog.json")?;
    let root = reader.object(&root, "$", "a JSON object (a dbt catalog)")?;
    check_schema(&reader, root)?;

    let mut entries = Vec::new();
    for section in SECTIONS {
        let path = format!("$.{section}");
        let Some(nodes) = reader.optional_object(root, section, &path)? else {
            continue;
        };
        for (unique_id, node) in nodes {
            let node_path = format!("{path}[{}]", quoted(unique_id));
            let node = reader.object(node, &node_path, "an object")?;
            let columns_path = format!("{node_path}.columns");
            let Some(columns) = reader.optional_object(node, "columns", &columns_path)? else {
                continue;
            };
            let mut read = Vec::with_capacity(columns.len());
            for (key, column) in columns {
                let column_path = format!("{columns_path}[{}]", quoted(key));
                let column = reader.object(column, &column_path, "an object")?;
                let data_type = reader
                    .optional_string(column, "type", &format!("{column_path}.type"))?
                    .ok_or_else(|| reader.error(&format!("{column_path}.type"), "missing"))?;
                let name = reader
                    .optional_string(column, "name", &format!("{column_path}.name"))?
                    .unwrap_or_else(|| key.clone());
                let index = match column.get("index") {
                    None | Some(Value::Null) => u64::MAX,
                    Some(Value::Number(n)) if n.is_u64() => n.as_u64().unwrap_or(u64::MAX),
                    Some(_) => {
                        return Err(reader.error(
                            &format!("{column_path}.index"),
                            "expected a whole number (the column's position)",
                        ))
                    }
                };
                read.push((index, CatalogColumn { name, data_type }));
            }
            // JSON object order is not the table's column order; `index` is.
            read.sort_by_key(|(index, _)| *index);
            entries.push(CatalogEntry {
                unique_id: unique_id.clone(),
                columns: read.into_iter().map(|(_, column)| column).collect(),
            });
        }
    }
    Ok(entries)
}

/// A catalog says so in `metadata.dbt_schema_version`; a manifest passed by mistake is
/// the likely error, so name what was found.
fn check_schema(
    reader: &FieldReader,
    root: &serde_json::Map<String, Value>,
) -> Result<(), LineageError> {
    let path = "$.metadata.dbt_schema_version";
    let version = schema_version(reader, root, "catalog")?;
    if !version.contains("/catalog/v") {
        return Err(reader.error(
            path,
            format!("expected a dbt catalog schema, found {version:?}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(nodes: &str) -> String {
        format!(
            r#"{{"metadata": {{"dbt_schema_version": "https://schemas.getdbt.com/dbt/catalog/v1.json"}},
                "nodes": {nodes}, "sources": {{}}, "errors": null}}"#
        )
    }

    fn error_text(text: &str) -> String {
        parse_catalog(text, "catalog.json").unwrap_err().to_string()
    }

    #[test]
    fn columns_come_in_table_order() {
        let text = catalog(
            r#"{"model.x.a": {"metadata": {}, "columns": {
                 "B": {"type": "TEXT", "index": 2, "name": "B"},
                 "A": {"type": "NUMBER(38,0)", "index": 1, "name": "A", "comment": null}}}}"#,
        );
        let entries = parse_catalog(&text, "catalog.json").unwrap();
        assert_eq!(entries.len(), 1);
        let names: Vec<(&str, &str)> = entries[0]
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.data_type.as_str()))
            .collect();
        assert_eq!(names, vec![("A", "NUMBER(38,0)"), ("B", "TEXT")]);
    }

    #[test]
    fn wrong_shapes_name_the_path() {
        let text = catalog(r#"{"model.x.a": {"columns": {"id": {"type": 7}}}}"#);
        assert_eq!(
            error_text(&text),
            r#"catalog.json: $.nodes["model.x.a"].columns["id"].type: expected a string, found a number"#
        );
        let text = catalog(r#"{"model.x.a": {"columns": {"id": {"index": 1}}}}"#);
        assert_eq!(
            error_text(&text),
            r#"catalog.json: $.nodes["model.x.a"].columns["id"].type: missing"#
        );
    }

    #[test]
    fn a_manifest_is_not_a_catalog() {
        let text = r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"}, "nodes": {}}"#;
        assert!(error_text(text).contains("expected a dbt catalog schema"));
        assert_eq!(
            error_text(""),
            "catalog.json: $: the file is empty; expected a dbt catalog.json"
        );
    }
}
