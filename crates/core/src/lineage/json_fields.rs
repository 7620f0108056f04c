//! Reading typed fields out of a dbt artifact held as `serde_json::Value`, so that a
//! field with the wrong shape is an error naming the file and the exact JSON path.

use serde_json::{Map, Value};

use super::LineageError;

/// Reads typed fields and turns a wrong shape into an error naming the JSON path.
/// "Optional" means missing or `null` is fine; any other wrong type is an error.
pub(super) struct FieldReader<'a> {
    file: &'a str,
    artifact: Artifact,
}

/// Which dbt artifact is being read, so errors say which it was.
#[derive(Clone, Copy)]
enum Artifact {
    Manifest,
    Catalog,
    RunResults,
}

impl<'a> FieldReader<'a> {
    pub fn for_manifest(file: &'a str) -> FieldReader<'a> {
        FieldReader {
            file,
            artifact: Artifact::Manifest,
        }
    }

    pub fn for_catalog(file: &'a str) -> FieldReader<'a> {
        FieldReader {
            file,
            artifact: Artifact::Catalog,
        }
    }

    pub fn for_run_results(file: &'a str) -> FieldReader<'a> {
        FieldReader {
            file,
            artifact: Artifact::RunResults,
        }
    }

    pub fn error(&self, json_path: &str, problem: impl Into<String>) -> LineageError {
        let (file, json_path, problem) =
            (self.file.to_string(), json_path.to_string(), problem.into());
        match self.artifact {
            Artifact::Manifest => LineageError::Manifest {
                file,
                json_path,
                problem,
            },
            Artifact::Catalog => LineageError::Catalog {
                file,
                json_path,
                problem,
            },
            Artifact::RunResults => LineageError::RunResults {
                file,
                json_path,
                problem,
            },
        }
    }

    pub fn wrong_type(&self, path: &str, expected: &str, found: &Value) -> LineageError {
        self.error(
            path,
            format!("expected {expected}, found {}", describe(found)),
        )
    }

    pub fn object<'v>(
        &self,
        value: &'v Value,
        path: &str,
        expected: &str,
    ) -> Result<&'v Map<String, Value>, LineageError> {
        value
            .as_object()
            .ok_or_else(|| self.wrong_type(path, expected, value))
    }

    pub fn optional_object<'v>(
        &self,
        parent: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v Map<String, Value>>, LineageError> {
        match parent.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => self.object(value, path, "an object").map(Some),
        }
    }

    pub fn optional_string(
        &self,
        parent: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<String>, LineageError> {
        match parent.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.wrong_type(path, "a string", other)),
        }
    }

    /// A small whole number (a count such as dbt's `lookback`).
    pub fn optional_count(
        &self,
        parent: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<u32>, LineageError> {
        match parent.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Ok(Some(n)),
                None => Err(self.error(path, format!("expected a whole number, found {n}"))),
            },
            Some(other) => Err(self.wrong_type(path, "a whole number", other)),
        }
    }

    pub fn optional_strings(
        &self,
        parent: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Vec<String>, LineageError> {
        let expected = "an array of strings";
        match parent.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(text) => Ok(text.clone()),
                    other => Err(self.wrong_type(&format!("{path}[{i}]"), "a string", other)),
                })
                .collect(),
            Some(other) => Err(self.wrong_type(path, expected, other)),
        }
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON object key written as JSON, for paths like `$.nodes["model.x.a"]`.
/// `$.metadata.dbt_schema_version` of a dbt artifact; `what` ("manifest", "catalog")
/// names the artifact in the error when it is missing.
pub(super) fn schema_version(
    reader: &FieldReader,
    root: &serde_json::Map<String, Value>,
    what: &str,
) -> Result<String, LineageError> {
    let path = "$.metadata.dbt_schema_version";
    let missing = format!("missing; this does not look like a dbt {what}");
    let metadata = reader
        .optional_object(root, "metadata", "$.metadata")?
        .ok_or_else(|| reader.error("$.metadata", missing.clone()))?;
    reader
        .optional_string(metadata, "dbt_schema_version", path)?
        .ok_or_else(|| reader.error(path, missing))
}

pub(super) fn quoted(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| format!("{key:?}"))
}

/// Parse an artifact's text, saying so plainly when it is empty or cut short.
pub(super) fn parse_json(
    reader: &FieldReader,
    text: &str,
    expected: &str,
) -> Result<Value, LineageError> {
    if text.trim().is_empty() {
        return Err(reader.error("$", format!("the file is empty; expected {expected}")));
    }
    serde_json::from_str(text).map_err(|e| {
        let hint = if e.is_eof() {
            " (the file looks truncated)"
        } else {
            ""
        };
        reader.error(
            "$",
            format!(
                "not valid JSON at line {} column {}: {e}{hint}",
                e.line(),
                e.column()
            ),
        )
    })
}
