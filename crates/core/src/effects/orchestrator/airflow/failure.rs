//! Why a DAG run failed, as Airflow tells it: each failed task of the run with the
//! error its log ends on. Read only for a DAG whose last run failed, so a failed run
//! that opens an incident carries what the task said, not just "failed".

use serde_json::Value;

use super::{segment, text, Airflow, Method};

impl Airflow {
    /// A line per failed task (`task export failed: FileNotFoundError: ...`), or why the
    /// tasks could not be read: a bar that lists the DAG stays up either way.
    pub(super) fn failure(&self, dag: &str, run: &str) -> String {
        match self.failed_tasks(dag, run) {
            Ok(lines) if lines.is_empty() => "no task of the run is marked failed".to_string(),
            Ok(lines) => lines.join("\n"),
            Err(e) => format!("its failed tasks could not be read: {e:#}"),
        }
    }

    fn failed_tasks(&self, dag: &str, run: &str) -> anyhow::Result<Vec<String>> {
        let run_path = self.run_path(dag, run);
        let path = format!("{run_path}/taskInstances?state=failed");
        let answer = self
            .call_opt(Method::Get, &path, None)?
            .unwrap_or(Value::Null);
        let mut lines = Vec::new();
        for task in answer["task_instances"].as_array().into_iter().flatten() {
            let Some(id) = text(&task["task_id"]) else {
                continue;
            };
            let tries = task["try_number"].as_u64().unwrap_or(1).max(1);
            let log_path = format!(
                "{run_path}/taskInstances/{}/logs/{tries}?full_content=true",
                segment(&id)
            );
            let error = self
                .call_opt(Method::Get, &log_path, None)?
                .as_ref()
                .and_then(last_error);
            let shown = crate::sanitize::for_terminal(&id);
            lines.push(match error {
                Some(error) => format!("task {shown} failed: {error}"),
                None => format!("task {shown} failed (its log names no error)"),
            });
        }
        Ok(lines)
    }
}

/// The error a task's log ends on. Airflow 3 answers structured entries (`content`: a
/// list of `{event, level, error_detail: [{exc_type, exc_value}]}`); Airflow 2 one
/// text, whose last `SomethingError: ...` line is taken.
pub(super) fn last_error(log: &Value) -> Option<String> {
    let found = match &log["content"] {
        Value::Array(entries) => entries.iter().rev().find_map(|entry| {
            let detail = entry["error_detail"].as_array()?.last()?;
            let kind = text(&detail["exc_type"])?;
            let value = text(&detail["exc_value"]).unwrap_or_default();
            Some(format!("{kind}: {value}"))
        }),
        Value::String(log) => log
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| {
                l.split_once(": ")
                    .is_some_and(|(kind, _)| kind.ends_with("Error") || kind.ends_with("Exception"))
            })
            .map(|l| l.rsplit(" - ").next().unwrap_or(l).to_string()),
        _ => None,
    }?;
    Some(crate::sanitize::mask_secrets(&crate::sanitize::for_terminal(&found)).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_error_a_log_ends_on_in_either_airflows_words() {
        let three = json!({"content": [
            {"event": "Task started", "level": "info"},
            {"event": "Task failed with exception", "level": "error",
             "error_detail": [{"exc_type": "RuntimeError", "exc_value": "the load broke", "frames": []}]},
            {"event": "Task instance failed", "level": "info"},
        ]});
        assert_eq!(
            last_error(&three).as_deref(),
            Some("RuntimeError: the load broke")
        );
        let two = json!({"content": "[2026-11-02] INFO - start\n[2026-11-02] ERROR - Task failed\nTraceback ...\nFileNotFoundError: [Errno 2] No such file or directory: '/mnt/x.csv'\n[2026-11-02] INFO - done\n"});
        assert_eq!(
            last_error(&two).as_deref(),
            Some("FileNotFoundError: [Errno 2] No such file or directory: '/mnt/x.csv'")
        );
        assert_eq!(last_error(&json!({"content": []})), None);
    }
}
