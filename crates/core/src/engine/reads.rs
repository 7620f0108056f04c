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
                    let report = chain::verify(&self.state)?;
                    let problem = match saved_receipt {
                        Some(text) => {
                            let saved: Value = serde_json::from_str(text)
                                .map_err(|e| anyhow::anyhow!("not a JSON receipt: {e}"))?;
                            receipt::check_saved(&chain::records(&self.state)?, &saved)?
                        }
                        None => None,
                    };
                    Ok(json!({"report": report, "receipt_problem": problem}))
                }
                Question::Stop => Ok(serde_json::to_value(crate::approve::stop::state(
                    &self.state,
                )?)?),
                Question::Receipt { incident }
                    if crate::incident::access_receipt::is_access_request(incident) =>
                {
                    let built = crate::incident::access_receipt::build(
                        &chain::records(&self.state)?,
                        incident,
                    )?;
                    Ok(json!({"receipt": built, "markdown": built.to_markdown()}))
                }
                Question::Receipt { incident } => {
                    let built = receipt::build(&chain::records(&self.state)?, incident)?;
                    Ok(json!({"receipt": built, "markdown": built.to_markdown()}))
                }
            }
        })();
        answered.map_err(|e| format!("{e:#}"))
    }
}
