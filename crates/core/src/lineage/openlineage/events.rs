//! OpenLineage run events, as far as dataward reads them (spec:
//! https://openlineage.io/spec, `OpenLineage.json` 2-0-x): the job and its run, the
//! state the run moved to, the parent run, the error a failed run reports, and the
//! datasets it read and wrote with the rows it wrote.
//!
//! Every other key (producer-specific facets, schema facets, column lineage, ...) is
//! ignored, since producers add facets in every release. A field we read with the wrong
//! shape, a missing required field, or a time without an offset refuses the whole event
//! with its JSON path: a half-read event would put a run in the wrong state.
//!
//! Text is untrusted, so it is cleaned where it enters: names and ids on one line with
//! every control, escape and bidi character shown as a visible escape; the error message
//! and stack trace keep their line breaks, and any secret dataward knows is masked.
//!
//! Parsed by walking a `serde_json::Value` rather than by a derived `Deserialize`, so a
//! refusal names the field's path (`$.run.runId`), which serde's derived errors do not.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

/// One run event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunEvent {
    pub event_type: EventType,
    /// When it happened, by the producer's clock.
    pub event_time: DateTime<Utc>,
    pub run: Run,
    pub job: JobName,
    pub inputs: Vec<Dataset>,
    pub outputs: Vec<OutputDataset>,
    /// The URI of what emitted it (`.../integration/dbt`, `.../providers/openlineage`).
    pub producer: String,
}

/// The transition a run made. The spec requires one START and one of COMPLETE, FAIL or
/// ABORT per run; RUNNING and OTHER carry more metadata for a run under way or done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EventType {
    Start,
    Running,
    Complete,
    Fail,
    Abort,
    /// The spec's OTHER, and an event that names no type (the spec allows leaving it
    /// out): metadata about a run, not a change of its state.
    Other,
}

impl EventType {
    pub const NAMES: [&'static str; 6] = ["START", "RUNNING", "COMPLETE", "FAIL", "ABORT", "OTHER"];

    /// As the spec writes it. A type outside the spec is `None`: the caller refuses it
    /// rather than guess whether the run ended.
    pub fn parse(text: &str) -> Option<EventType> {
        Some(match text {
            "START" => EventType::Start,
            "RUNNING" => EventType::Running,
            "COMPLETE" => EventType::Complete,
            "FAIL" => EventType::Fail,
            "ABORT" => EventType::Abort,
            "OTHER" => EventType::Other,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Start => "START",
            EventType::Running => "RUNNING",
            EventType::Complete => "COMPLETE",
            EventType::Fail => "FAIL",
            EventType::Abort => "ABORT",
            EventType::Other => "OTHER",
        }
    }

    /// The run ended (well or not): no later state change is expected.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            EventType::Complete | EventType::Fail | EventType::Abort
        )
    }
}

/// A job, named within its namespace (the scheduler's: Airflow's `[openlineage]
/// namespace`, dbt-ol's `OPENLINEAGE_NAMESPACE`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct JobName {
    pub namespace: String,
    /// Airflow: `dag_id.task_id` for a task, `dag_id` for the DAG run; dbt-ol:
    /// `database.schema.project.model` for a model, `dbt-run-project` for the invocation.
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    /// A UUID, unique across every job (kept as written).
    pub run_id: String,
    /// The run that spawned this one (the DAG run of a task, the dbt invocation of a model).
    pub parent: Option<ParentRun>,
    /// What a failed run said (the `errorMessage` run facet).
    pub error: Option<ErrorMessage>,
    /// dbt-ol's `dbt_run` facet's `invocation_id`: the `metadata.invocation_id` of the
    /// run_results.json that invocation wrote. The one producer facet read, because
    /// dbt-ol sends a failed model's FAIL without an `errorMessage`: the error is only in
    /// run_results, and this finds the right one.
    pub dbt_invocation_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParentRun {
    pub run_id: String,
    pub job: JobName,
}

/// The `errorMessage` run facet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorMessage {
    pub message: String,
    /// `python`, `JAVA`, ... as the producer wrote it.
    pub programming_language: String,
    pub stack_trace: Option<String>,
}

/// A dataset, named per the OpenLineage naming spec: the namespace is the data source
/// (`postgres://host:5432`), the name the dataset within it (`db.schema.table`). See
/// `naming` for reading them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Dataset {
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputDataset {
    pub dataset: Dataset,
    /// `outputFacets.outputStatistics.rowCount`: the rows this run wrote, when the
    /// producer knows it.
    pub row_count: Option<u64>,
}

/// Why an event was refused: where in it, and what is wrong. The caller adds which
/// request or which line of which file it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    /// `$` for the whole event, else like `$.outputs[0].outputFacets.outputStatistics.rowCount`.
    pub json_path: String,
    pub problem: String,
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.json_path == "$" {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{}: {}", self.json_path, self.problem)
        }
    }
}

impl std::error::Error for EventError {}

/// Parse one event (a request body, or one line of a file transport's JSONL).
pub fn parse_event(text: &str) -> Result<RunEvent, EventError> {
    let value: Value = serde_json::from_str(text).map_err(|e| EventError {
        json_path: "$".to_string(),
        problem: format!("not JSON: {e}"),
    })?;
    read_event(&value)
}

/// Read an event already parsed as JSON.
pub fn read_event(value: &Value) -> Result<RunEvent, EventError> {
    let root = object(value, "$", "an OpenLineage run event (a JSON object)")?;
    let event_type = match root.get("eventType") {
        None | Some(Value::Null) => EventType::Other,
        Some(Value::String(text)) => EventType::parse(text).ok_or_else(|| {
            error(
                "$.eventType",
                format!(
                    "{} is not an OpenLineage event type (one of {})",
                    quoted(text),
                    EventType::NAMES.join(", ")
                ),
            )
        })?,
        Some(other) => return Err(wrong_type("$.eventType", "a string", other)),
    };
    let event_time = read_time(&required_string(root, "eventTime", "$")?, "$.eventTime")?;
    let run_value = required_object(root, "run", "$")?;
    let run = Run {
        run_id: required_id(run_value, "runId", "$.run")?,
        parent: read_parent(run_value)?,
        error: read_error(run_value)?,
        dbt_invocation_id: match facet(run_value, "facets", "dbt_run", "$.run")? {
            Some(dbt_run) => {
                optional_raw(dbt_run, "invocation_id", "$.run.facets.dbt_run")?.map(|mut id| {
                    crate::sanitize::clean_in_place(&mut id);
                    id
                })
            }
            None => None,
        },
    };
    let job = read_job(required_object(root, "job", "$")?, "$.job")?;
    let inputs = array(root, "inputs", "$")?
        .iter()
        .enumerate()
        .map(|(i, item)| read_dataset(item, &format!("$.inputs[{i}]")))
        .collect::<Result<_, _>>()?;
    let outputs = array(root, "outputs", "$")?
        .iter()
        .enumerate()
        .map(|(i, item)| read_output(item, &format!("$.outputs[{i}]")))
        .collect::<Result<_, _>>()?;
    Ok(RunEvent {
        event_type,
        event_time,
        run,
        job,
        inputs,
        outputs,
        producer: required_string(root, "producer", "$")?,
    })
}

/// RFC 3339 with an offset: a time without one would be read in whatever zone the
/// reader guessed, and runs would be ordered wrongly.
fn read_time(text: &str, path: &str) -> Result<DateTime<Utc>, EventError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            error(
                path,
                format!(
                    "{} is not an RFC 3339 time with an offset ({e})",
                    quoted(text)
                ),
            )
        })
}

fn read_job(job: &Map<String, Value>, path: &str) -> Result<JobName, EventError> {
    Ok(JobName {
        namespace: required_string(job, "namespace", path)?,
        name: required_string(job, "name", path)?,
    })
}

fn read_parent(run: &Map<String, Value>) -> Result<Option<ParentRun>, EventError> {
    let Some(parent) = facet(run, "facets", "parent", "$.run")? else {
        return Ok(None);
    };
    let path = "$.run.facets.parent";
    let parent_run = required_object(parent, "run", path)?;
    Ok(Some(ParentRun {
        run_id: required_id(parent_run, "runId", "$.run.facets.parent.run")?,
        job: read_job(
            required_object(parent, "job", path)?,
            "$.run.facets.parent.job",
        )?,
    }))
}

fn read_error(run: &Map<String, Value>) -> Result<Option<ErrorMessage>, EventError> {
    let Some(facet) = facet(run, "facets", "errorMessage", "$.run")? else {
        return Ok(None);
    };
    let path = "$.run.facets.errorMessage";
    let block = |text: String| {
        let shown = crate::sanitize::for_terminal_block(&text);
        crate::sanitize::mask_secrets(&shown).into_owned()
    };
    Ok(Some(ErrorMessage {
        message: block(required_raw(facet, "message", path)?),
        programming_language: required_string(facet, "programmingLanguage", path)?,
        stack_trace: optional_raw(facet, "stackTrace", path)?.map(block),
    }))
}

fn read_dataset(value: &Value, path: &str) -> Result<Dataset, EventError> {
    let dataset = object(value, path, "a dataset (a JSON object)")?;
    Ok(Dataset {
        namespace: required_string(dataset, "namespace", path)?,
        name: required_string(dataset, "name", path)?,
    })
}

fn read_output(value: &Value, path: &str) -> Result<OutputDataset, EventError> {
    let dataset = read_dataset(value, path)?;
    let map = object(value, path, "a dataset (a JSON object)")?;
    let row_count = match facet(map, "outputFacets", "outputStatistics", path)? {
        None => None,
        Some(statistics) => match statistics.get("rowCount") {
            None | Some(Value::Null) => None,
            Some(count) => Some(count.as_u64().ok_or_else(|| {
                wrong_type(
                    &format!("{path}.outputFacets.outputStatistics.rowCount"),
                    "a whole number of rows, 0 or more",
                    count,
                )
            })?),
        },
    };
    Ok(OutputDataset { dataset, row_count })
}

/// The facet `name` in the facets map `facets_key` (`facets`, `outputFacets`) of
/// `holder`, which is at `path`: absent or null reads as none, anything but an object
/// is refused.
fn facet<'v>(
    holder: &'v Map<String, Value>,
    facets_key: &str,
    name: &str,
    path: &str,
) -> Result<Option<&'v Map<String, Value>>, EventError> {
    let facets_path = format!("{path}.{facets_key}");
    let facets = match holder.get(facets_key) {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => object(value, &facets_path, "an object of facets")?,
    };
    match facets.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => object(
            value,
            &format!("{facets_path}.{name}"),
            "a facet (an object)",
        )
        .map(Some),
    }
}

fn object<'v>(
    value: &'v Value,
    path: &str,
    expected: &str,
) -> Result<&'v Map<String, Value>, EventError> {
    value
        .as_object()
        .ok_or_else(|| wrong_type(path, expected, value))
}

fn required_object<'v>(
    map: &'v Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'v Map<String, Value>, EventError> {
    let at = format!("{path}.{key}");
    match map.get(key) {
        None | Some(Value::Null) => Err(error(&at, "missing; the spec requires it")),
        Some(value) => object(value, &at, "an object"),
    }
}

/// A string the spec requires, cleaned for one line.
fn required_string(map: &Map<String, Value>, key: &str, path: &str) -> Result<String, EventError> {
    let mut text = required_raw(map, key, path)?;
    crate::sanitize::clean_in_place(&mut text);
    Ok(text)
}

/// A string the spec requires, as sent (the caller cleans it).
fn required_raw(map: &Map<String, Value>, key: &str, path: &str) -> Result<String, EventError> {
    match optional_raw(map, key, path)? {
        None => Err(error(
            &format!("{path}.{key}"),
            "missing; the spec requires it",
        )),
        Some(text) => Ok(text),
    }
}

/// A run id: a non-empty string (the spec says UUID; producers' UUID versions vary, so
/// its form is not checked, only that there is one to join runs on).
fn required_id(map: &Map<String, Value>, key: &str, path: &str) -> Result<String, EventError> {
    let id = required_string(map, key, path)?;
    if id.trim().is_empty() {
        return Err(error(&format!("{path}.{key}"), "empty; a run needs its id"));
    }
    Ok(id)
}

fn optional_raw(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, EventError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(wrong_type(&format!("{path}.{key}"), "a string", other)),
    }
}

fn array<'v>(
    map: &'v Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'v [Value], EventError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(wrong_type(&format!("{path}.{key}"), "an array", other)),
    }
}

fn error(path: &str, problem: impl Into<String>) -> EventError {
    EventError {
        json_path: path.to_string(),
        problem: problem.into(),
    }
}

fn wrong_type(path: &str, expected: &str, found: &Value) -> EventError {
    let found = match found {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", quoted(s)),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    };
    error(path, format!("expected {expected}, found {found}"))
}

/// What was sent, quoted in a refusal: cleaned for the terminal, and a huge value cut
/// rather than echoed whole.
fn quoted(text: &str) -> String {
    const MAX: usize = 80;
    let cut = match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    };
    format!("\"{}\"", crate::sanitize::for_terminal(&cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{"eventType": "START", "eventTime": "2026-01-05T02:10:00+01:00",
        "run": {"runId": "r1"}, "job": {"namespace": "ns", "name": "j"},
        "producer": "https://example.test/producer"}"#;

    #[test]
    fn the_required_fields_alone_make_an_event_read_in_utc() {
        let event = parse_event(MINIMAL).unwrap();
        assert_eq!(event.event_type, EventType::Start);
        assert_eq!(event.event_time.to_rfc3339(), "2026-01-05T01:10:00+00:00");
        assert!(event.inputs.is_empty() && event.outputs.is_empty());
        assert_eq!(event.run.parent, None);
        assert_eq!(event.run.error, None);
    }

    #[test]
    fn every_spec_event_type_reads_and_only_those() {
        for name in EventType::NAMES {
            let parsed = EventType::parse(name).unwrap();
            assert_eq!(parsed.as_str(), name);
        }
        assert_eq!(
            EventType::parse("start"),
            None,
            "the spec's names are upper case"
        );
        assert!(EventType::Fail.is_terminal() && !EventType::Running.is_terminal());
    }

    #[test]
    fn a_facet_of_the_wrong_shape_refuses_the_event_by_its_path() {
        let with = |facets: &str| {
            MINIMAL.replace(
                r#""runId": "r1""#,
                &format!(r#""runId": "r1", "facets": {facets}"#),
            )
        };
        let error = parse_event(&with(r#"{"errorMessage": "boom"}"#)).unwrap_err();
        assert_eq!(error.json_path, "$.run.facets.errorMessage");
        let error = parse_event(&with(r#"{"errorMessage": {"message": "boom"}}"#)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "$.run.facets.errorMessage.programmingLanguage: missing; the spec requires it"
        );
        let error = parse_event(&with(
            r#"{"parent": {"run": {"runId": ""}, "job": {"namespace": "n", "name": "p"}}}"#,
        ))
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "$.run.facets.parent.run.runId: empty; a run needs its id"
        );
        let error = parse_event(&MINIMAL.replace(r#""r1""#, "12")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "$.run.runId: expected a string, found the number 12"
        );
    }

    #[test]
    fn text_is_cleaned_where_it_enters() {
        let text = MINIMAL
            .replace(r#""name": "j""#, r#""name": "j\u001b[2J""#)
            .replace(
                r#""runId": "r1""#,
                r#""runId": "r1", "facets": {"errorMessage": {"message": "line one\nline \u202etwo", "programmingLanguage": "python"}}"#,
            );
        let event = parse_event(&text).unwrap();
        assert_eq!(event.job.name, "j\\x1b[2J");
        assert_eq!(
            event.run.error.unwrap().message,
            "line one\nline \\u{202e}two"
        );
        let refused = parse_event(&MINIMAL.replace("START", "ST\\u001bART")).unwrap_err();
        assert!(
            refused.problem.starts_with("\"ST\\x1bART\" is not"),
            "{}",
            refused.problem
        );
    }

    #[test]
    fn a_negative_row_count_is_refused() {
        let text = MINIMAL.replace(
            r#""producer""#,
            r#""outputs": [{"namespace": "n", "name": "t", "outputFacets": {"outputStatistics": {"rowCount": -3}}}], "producer""#,
        );
        let error = parse_event(&text).unwrap_err();
        assert_eq!(
            error.json_path,
            "$.outputs[0].outputFacets.outputStatistics.rowCount"
        );
    }
}
