//! Reads only the engine can answer: the state files are its account's alone, so a
//! teammate's `dataward verify` or `dataward receipt` asks it over the socket.

use serde_json::{json, Value};

use super::api::Question;
use super::Engine;
use crate::chain;
use crate::incident::receipt;

impl Engine {
    /// The engine's report for `question`, as the command would print it from the
    /// database itself; or why it has none (no such incident, a receipt that is not
    /// JSON), in words for the person who asked.
    pub fn answer_question(&self, question: &Question) -> Result<Value, String> {
        let answered = (|| -> anyhow::Result<Value> {
            match question {
                Question::Verify { saved_receipt } => {
                    let report = chain::verify(&*self.state)?;
                    let problem = match saved_receipt {
                        Some(text) => {
                            let saved: Value = serde_json::from_str(text)
                                .map_err(|e| anyhow::anyhow!("not a JSON receipt: {e}"))?;
                            receipt::check_saved(&chain::records(&*self.state)?, &saved)?
                        }
                        None => None,
                    };
                    Ok(json!({"report": report, "receipt_problem": problem}))
                }
                Question::Stop => Ok(serde_json::to_value(crate::approve::stop::state(
                    &*self.state,
                )?)?),
                Question::Lineage { from } => {
                    let lineage = self.lineage.as_ref().ok_or_else(|| {
                        anyhow::anyhow!(
                            "no lineage: the config names no manifest and no OpenLineage \
                             event was kept"
                        )
                    })?;
                    let index = lineage.resolve(from)?;
                    let node = lineage.node(index);
                    Ok(json!({
                        "from": {
                            "unique_id": node.unique_id,
                            "name": node.name,
                            "resource_type": node.resource_type,
                            "relation_name": node.relation_name,
                            "materialized": node.materialized,
                            "owner": node.owner,
                        },
                        "blast": lineage.blast_radius(index, None),
                    }))
                }
                Question::Migration { name } => self.migration_answer(name.as_deref()),
                Question::Receipt { incident } => {
                    let (built, markdown) =
                        receipt::build_any(&chain::records(&*self.state)?, incident)?;
                    Ok(json!({"receipt": built, "markdown": markdown}))
                }
            }
        })();
        answered.map_err(|e| format!("{e:#}"))
    }
}
