//! Reading dbt's `run_results.json`: what the last invocation did to each node.
//!
//! dbt writes it after every `run`, `build`, `test`, `seed` and `snapshot`. Only the
//! fields below are read; every other key is tolerated, because dbt adds some in every
//! release. Schemas v4 (dbt 1.3) to v6 are known; newer ones are read the same way, and
//! older ones are refused with a message saying so. A field we read with the wrong
//! shape is an error naming the file and its JSON path.

use std::path::Path;

use serde_json::{Map, Value};

use super::json_fields::{parse_json, schema_version, FieldReader};
use super::LineageError;
use crate::clock::Timestamp;

/// The oldest run-results schema we read: v4 is what dbt 1.3 writes, the release the
/// manifest reader starts at too.
const OLDEST_SCHEMA: u32 = 4;

/// One `run_results.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResults {
    /// `metadata.generated_at`, read from dbt's RFC 3339 (to the second).
    pub generated_at: Option<Timestamp>,
    /// In the file's order: the order dbt finished the nodes in.
    pub results: Vec<NodeResult>,
}

/// What one node's run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeResult {
    pub unique_id: String,
    pub status: NodeStatus,
    /// dbt's message: the adapter's status line on success (`SELECT 120`), the
    /// database's error on failure; usually absent for a skipped node.
    pub message: Option<String>,
    /// When the node finished: the `execute` step's end, else the last timing step's;
    /// absent for a node that never ran (skipped). Read from dbt's RFC 3339.
    pub completed_at: Option<Timestamp>,
}

/// A result's `status`. Models and seeds end `success`, `error` or `skipped`; tests
/// `pass`, `fail`, `warn`, `error` or `skipped`; source freshness may end in
/// `runtime error`; dbt v2 (Fusion) writes `reused` for a node it did not run because
/// nothing it reads changed. Read in any case, since dbt v2 names them in its own
/// words' case (`Error`, `Pass`); anything else dbt invents later is kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NodeStatus {
    Success,
    Error,
    Fail,
    Skipped,
    Warn,
    Pass,
    RuntimeError,
    /// Not run: the relation from an earlier run stands. Neither a failure nor a build.
    Reused,
    Other(String),
}

impl NodeStatus {
    pub fn parse(text: &str) -> NodeStatus {
        match text.trim().to_ascii_lowercase().as_str() {
            "success" => NodeStatus::Success,
            "error" => NodeStatus::Error,
            "fail" => NodeStatus::Fail,
            "skipped" => NodeStatus::Skipped,
            "warn" => NodeStatus::Warn,
            "pass" => NodeStatus::Pass,
            "runtime error" => NodeStatus::RuntimeError,
            "reused" => NodeStatus::Reused,
            _ => NodeStatus::Other(text.to_string()),
        }
    }

    /// As dbt Core writes it (lowercase).
    pub fn as_str(&self) -> &str {
        match self {
            NodeStatus::Success => "success",
            NodeStatus::Error => "error",
            NodeStatus::Fail => "fail",
            NodeStatus::Skipped => "skipped",
            NodeStatus::Warn => "warn",
            NodeStatus::Pass => "pass",
            NodeStatus::RuntimeError => "runtime error",
            NodeStatus::Reused => "reused",
            NodeStatus::Other(text) => text,
        }
    }

    /// The node did not do its job: it errored, or (a test) found failing rows.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            NodeStatus::Error | NodeStatus::Fail | NodeStatus::RuntimeError
        )
    }
}

impl RunResults {
    /// The result for a node, by unique_id.
    pub fn get(&self, unique_id: &str) -> Option<&NodeResult> {
        self.results.iter().find(|r| r.unique_id == unique_id)
    }
}

/// Read and parse a `run_results.json`.
pub fn load(path: &Path) -> Result<RunResults, LineageError> {
    let text = super::read_file(path)?;
    parse(&text, &path.display().to_string())
}

/// Parse run-results text; `origin` names the file in error messages.
pub fn parse(text: &str, origin: &str) -> Result<RunResults, LineageError> {
    let reader = FieldReader::for_run_results(origin);
    let root = parse_json(&reader, text, "a dbt run_results.json")?;
    let root = reader.object(&root, "$", "a JSON object (a dbt run_results.json)")?;
    check_schema(&reader, root)?;
    let generated_at = match root.get("metadata").and_then(Value::as_object) {
        Some(metadata) => {
            let path = "$.metadata.generated_at";
            let text = reader.optional_string(metadata, "generated_at", path)?;
            text.map(|text| time(&reader, &text, path)).transpose()?
        }
        None => None,
    };
    let items = match root.get("results") {
        Some(Value::Array(items)) => items,
        None | Some(Value::Null) => {
            return Err(reader.error(
                "$.results",
                "missing; a run_results.json lists its nodes in a results array",
            ))
        }
        Some(other) => return Err(reader.wrong_type("$.results", "an array", other)),
    };
    let results = items
        .iter()
        .enumerate()
        .map(|(i, item)| read_result(&reader, item, &format!("$.results[{i}]")))
        .collect::<Result<_, _>>()?;
    Ok(RunResults {
        generated_at,
        results,
    })
}

fn read_result(reader: &FieldReader, item: &Value, path: &str) -> Result<NodeResult, LineageError> {
    let fields = reader.object(item, path, "an object (one node's result)")?;
    let required = |key: &str| {
        let at = format!("{path}.{key}");
        reader
            .optional_string(fields, key, &at)?
            .ok_or_else(|| reader.error(&at, "missing; every result names its node and status"))
    };
    let unique_id = required("unique_id")?;
    let status = NodeStatus::parse(&required("status")?);
    let message = reader.optional_string(fields, "message", &format!("{path}.message"))?;
    let completed_at = completed_at(reader, fields, &format!("{path}.timing"))?;
    Ok(NodeResult {
        unique_id,
        status,
        message,
        completed_at,
    })
}

/// The end of the `execute` step, or of the last step that has one.
fn completed_at(
    reader: &FieldReader,
    fields: &Map<String, Value>,
    path: &str,
) -> Result<Option<Timestamp>, LineageError> {
    let steps = match fields.get("timing") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(steps)) => steps,
        Some(other) => return Err(reader.wrong_type(path, "an array", other)),
    };
    let mut last = None;
    let mut execute = None;
    for (i, step) in steps.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let step = reader.object(step, &at, "an object (a timing step)")?;
        let name = reader.optional_string(step, "name", &format!("{at}.name"))?;
        let end_at = format!("{at}.completed_at");
        let Some(end) = reader.optional_string(step, "completed_at", &end_at)? else {
            continue;
        };
        let end = time(reader, &end, &end_at)?;
        if name.as_deref() == Some("execute") {
            execute = Some(end);
        }
        last = Some(end);
    }
    Ok(execute.or(last))
}

/// A time as dbt writes it (`2024-05-13T09:10:01.410000Z`), read once, here.
fn time(reader: &FieldReader, text: &str, path: &str) -> Result<Timestamp, LineageError> {
    Timestamp::from_rfc3339(text)
        .map_err(|_| reader.error(path, format!("{text:?} is not an RFC 3339 time")))
}

/// Refuse anything that is not run results of v4 or newer, saying what it is instead.
fn check_schema(reader: &FieldReader, root: &Map<String, Value>) -> Result<(), LineageError> {
    let path = "$.metadata.dbt_schema_version";
    let url = schema_version(reader, root, "run_results.json")?;
    // e.g. https://schemas.getdbt.com/dbt/run-results/v6.json
    let Some(rest) = url.split("/run-results/v").nth(1) else {
        return Err(reader.error(
            path,
            format!("expected a dbt run-results schema, found {url:?}"),
        ));
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let version: u32 = digits
        .parse()
        .map_err(|_| reader.error(path, format!("cannot read a schema version from {url:?}")))?;
    if version < OLDEST_SCHEMA {
        return Err(reader.error(
            path,
            format!(
                "run-results schema v{version} is too old; dataward reads v{OLDEST_SCHEMA} \
                 or newer (dbt 1.3 or newer)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `dbt run` on PostgreSQL writes when a staging model fails on a column whose
    /// type changed: the model errors, its child is skipped, the other branch succeeds.
    const V6: &str = r#"{
      "metadata": {
        "dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json",
        "dbt_version": "1.8.7",
        "generated_at": "2024-05-13T09:10:04.512300Z",
        "invocation_id": "5b0c6f4e-2f0b-4f5e-9a53-0e9d1c1f8a21",
        "env": {}
      },
      "results": [
        {
          "status": "success",
          "timing": [
            {"name": "compile", "started_at": "2024-05-13T09:10:01.101000Z", "completed_at": "2024-05-13T09:10:01.120000Z"},
            {"name": "execute", "started_at": "2024-05-13T09:10:01.121000Z", "completed_at": "2024-05-13T09:10:01.410000Z"}
          ],
          "thread_id": "Thread-1 (worker)",
          "execution_time": 0.3102,
          "adapter_response": {"_message": "SELECT 9120", "code": "SELECT", "rows_affected": 9120},
          "message": "SELECT 9120",
          "failures": null,
          "unique_id": "model.shop.stg_orders",
          "compiled": true,
          "compiled_code": "select id as order_id from \"dw\".\"raw\".\"orders\"",
          "relation_name": "\"dw\".\"analytics\".\"stg_orders\"",
          "batch_results": null
        },
        {
          "status": "error",
          "timing": [
            {"name": "compile", "started_at": "2024-05-13T09:10:01.102000Z", "completed_at": "2024-05-13T09:10:01.118000Z"},
            {"name": "execute", "started_at": "2024-05-13T09:10:01.119000Z", "completed_at": "2024-05-13T09:10:01.161000Z"}
          ],
          "thread_id": "Thread-2 (worker)",
          "execution_time": 0.0598,
          "adapter_response": {},
          "message": "Database Error in model stg_payments (models/staging/stg_payments.sql)\n  operator does not exist: text / integer\n  LINE 8:     amount / 100 as amount,\n                     ^\n  HINT:  No operator matches the given name and argument types. You might need to add explicit type casts.\n  compiled code at target/run/shop/models/staging/stg_payments.sql",
          "failures": null,
          "unique_id": "model.shop.stg_payments",
          "compiled": true,
          "compiled_code": "select id as payment_id, amount / 100 as amount from \"dw\".\"raw\".\"payments\"",
          "relation_name": "\"dw\".\"analytics\".\"stg_payments\""
        },
        {
          "status": "skipped",
          "timing": [],
          "thread_id": "Thread-1 (worker)",
          "execution_time": 0,
          "adapter_response": {},
          "message": null,
          "failures": null,
          "unique_id": "model.shop.orders",
          "compiled": false,
          "compiled_code": null,
          "relation_name": "\"dw\".\"analytics\".\"orders\""
        }
      ],
      "elapsed_time": 0.9123,
      "args": {"which": "run", "select": [], "exclude": [], "threads": 4, "target": "dev"}
    }"#;

    fn error_text(text: &str) -> String {
        parse(text, "target/run_results.json")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_run_with_an_error_and_a_skipped_child() {
        let run = parse(V6, "run_results.json").unwrap();
        assert_eq!(
            run.generated_at.map(|at| at.to_string()).as_deref(),
            Some("2024-05-13T09:10:04Z")
        );
        let statuses: Vec<(&str, &NodeStatus)> = run
            .results
            .iter()
            .map(|r| (r.unique_id.as_str(), &r.status))
            .collect();
        assert_eq!(
            statuses,
            vec![
                ("model.shop.stg_orders", &NodeStatus::Success),
                ("model.shop.stg_payments", &NodeStatus::Error),
                ("model.shop.orders", &NodeStatus::Skipped),
            ]
        );
        let ok = run.get("model.shop.stg_orders").unwrap();
        assert_eq!(ok.message.as_deref(), Some("SELECT 9120"));
        assert_eq!(
            ok.completed_at.map(|at| at.to_string()).as_deref(),
            Some("2024-05-13T09:10:01Z")
        );
        let failed = run.get("model.shop.stg_payments").unwrap();
        assert!(failed.status.is_failure());
        assert!(failed
            .message
            .as_deref()
            .unwrap()
            .contains("operator does not exist: text / integer"));
        let skipped = run.get("model.shop.orders").unwrap();
        assert_eq!(skipped.message, None);
        assert_eq!(skipped.completed_at, None);
        assert!(!skipped.status.is_failure());
    }

    #[test]
    fn an_older_schema_with_tests_and_unknown_statuses() {
        // v4 (dbt 1.3): tests pass, fail and warn; a status this version does not know.
        let text = r#"{
          "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v4.json",
                       "dbt_version": "1.3.2", "generated_at": "2023-01-09T06:00:12.000000Z"},
          "results": [
            {"status": "pass", "unique_id": "test.shop.not_null_orders_order_id.1a2b",
             "timing": [{"name": "compile", "started_at": "2023-01-09T06:00:10Z", "completed_at": "2023-01-09T06:00:11Z"}],
             "message": null, "failures": 0, "some_future_key": {"x": 1}},
            {"status": "fail", "unique_id": "test.shop.unique_orders_order_id.3c4d",
             "message": "Got 3 results, configured to fail if != 0", "failures": 3},
            {"status": "warn", "unique_id": "test.shop.accepted_values_status.5e6f", "message": null},
            {"status": "runtime error", "unique_id": "source.shop.raw.orders"},
            {"status": "partial success", "unique_id": "model.shop.events"}
          ],
          "elapsed_time": 2.5
        }"#;
        let run = parse(text, "run_results.json").unwrap();
        let statuses: Vec<NodeStatus> = run.results.iter().map(|r| r.status.clone()).collect();
        assert_eq!(
            statuses,
            vec![
                NodeStatus::Pass,
                NodeStatus::Fail,
                NodeStatus::Warn,
                NodeStatus::RuntimeError,
                NodeStatus::Other("partial success".into()),
            ]
        );
        assert_eq!(
            run.results[0]
                .completed_at
                .map(|at| at.to_string())
                .as_deref(),
            Some("2023-01-09T06:00:11Z"),
            "without an execute step, the last step's end"
        );
        for status in statuses {
            assert_eq!(NodeStatus::parse(status.as_str()), status);
        }
        // v5 reads the same way.
        let v5 = text.replace("run-results/v4.json", "run-results/v5.json");
        assert_eq!(parse(&v5, "run_results.json").unwrap(), run);
    }

    #[test]
    fn malformed_files_name_the_file_and_the_problem() {
        let message = error_text("");
        assert!(
            message.starts_with("target/run_results.json: $: the file is empty"),
            "{message}"
        );
        let message = error_text(&V6[..200]);
        assert!(message.contains("not valid JSON"), "{message}");
        assert!(message.contains("truncated"), "{message}");
        assert_eq!(
            error_text("[]"),
            "target/run_results.json: $: expected a JSON object (a dbt run_results.json), found an array"
        );
        let message = error_text(r#"{"results": []}"#);
        assert!(
            message.contains("$.metadata: missing; this does not look like a dbt run_results.json"),
            "{message}"
        );

        let v6 = |results: &str| {
            format!(
                r#"{{"metadata": {{"dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json"}}{results}}}"#
            )
        };
        assert_eq!(
            error_text(&v6("")),
            "target/run_results.json: $.results: missing; a run_results.json lists its nodes in a results array"
        );
        assert_eq!(
            error_text(&v6(r#", "results": {}"#)),
            "target/run_results.json: $.results: expected an array, found an object"
        );
        assert_eq!(
            error_text(&v6(
                r#", "results": [{"unique_id": "model.a.b", "status": 1}]"#
            )),
            "target/run_results.json: $.results[0].status: expected a string, found a number"
        );
        assert_eq!(
            error_text(&v6(r#", "results": [{"status": "success"}]"#)),
            "target/run_results.json: $.results[0].unique_id: missing; every result names its node and status"
        );
        assert_eq!(
            error_text(&v6(
                r#", "results": [{"unique_id": "model.a.b", "status": "success", "timing": [{"name": "execute", "completed_at": 3}]}]"#
            )),
            "target/run_results.json: $.results[0].timing[0].completed_at: expected a string, found a number"
        );
        assert_eq!(
            error_text(&v6(
                r#", "results": [{"unique_id": "model.a.b", "status": "success", "timing": [{"name": "execute", "completed_at": "13/05/2024 09:10"}]}]"#
            )),
            "target/run_results.json: $.results[0].timing[0].completed_at: \"13/05/2024 09:10\" is not an RFC 3339 time"
        );
    }

    #[test]
    fn other_artifacts_and_old_schemas_are_refused() {
        let message = error_text(
            r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"}, "nodes": {}}"#,
        );
        assert!(
            message.contains("expected a dbt run-results schema, found \"https://schemas.getdbt.com/dbt/manifest/v12.json\""),
            "{message}"
        );
        let message = error_text(
            r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v3.json"}, "results": []}"#,
        );
        assert!(
            message.contains("run-results schema v3 is too old"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_file_is_a_read_error_naming_it() {
        let err = load(Path::new("/nonexistent/run_results.json")).unwrap_err();
        assert!(matches!(err, LineageError::Read { .. }));
        assert!(err
            .to_string()
            .starts_with("/nonexistent/run_results.json: cannot read"));
    }
}
