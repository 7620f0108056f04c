//! A team's engine taking the lead (team state on PostgreSQL): the chain says who leads
//! from which term and whom it took over from, and every console is told. Everything
//! else a takeover needs is what a restart does: the engine reads itself back from the
//! shared state and re-issues every intent that has no outcome.

use super::*;

/// Who led before this engine took over, as the team's lease last named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Predecessor {
    pub term: u64,
    pub host: String,
}

impl Engine {
    /// Records that this engine leads its team at `term`, reachable at `host`, taking
    /// over from `from` (none when it is the team's first), and tells the consoles.
    pub fn took_over(&mut self, term: u64, host: &str, from: Option<&Predecessor>) -> Result<()> {
        let payload = json!({
            "term": term,
            "host": host,
            "from_term": from.map(|p| p.term),
            "from_host": from.map(|p| p.host.clone()),
        });
        self.transact(|e| e.record("takeover", approve::ENGINE_ACTOR, payload))?;
        let said = match from {
            Some(p) => format!(
                "{host} leads at term {term}, taking over from {} (term {})",
                p.host, p.term
            ),
            None => format!("{host} leads at term {term}"),
        };
        tracing::warn!("{said}");
        self.notice(crate::sanitize::for_terminal(&said).to_string());
        Ok(())
    }
}
