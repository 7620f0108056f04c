//! What came of people's requests (`request_outcome`, and the intents carrying them out):
//! a client whose engine died mid-request asks here what came of it.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Timestamp;

pub trait RequestStore {
    /// The outcome kept for `client_request` made by `asker_uid` (JSON), if decided.
    fn request_outcome(&self, client_request: &str, asker_uid: u32) -> Result<Option<String>>;
    /// Keeps the outcome (JSON) of `client_request` made by `asker_uid`; the first one
    /// kept stands.
    fn keep_request_outcome(
        &self,
        client_request: &str,
        asker_uid: u32,
        at: Timestamp,
        outcome: &str,
    ) -> Result<()>;
    /// Is an effect of `client_request` still pending?
    fn request_in_flight(&self, client_request: &str) -> Result<bool>;
}

impl RequestStore for Connection {
    fn request_outcome(&self, client_request: &str, asker_uid: u32) -> Result<Option<String>> {
        Ok(self
            .prepare_cached(
                "SELECT outcome FROM request_outcome WHERE client_request = ?1 AND asker_uid = ?2",
            )?
            .query_row(params![client_request, asker_uid], |r| r.get(0))
            .optional()?)
    }

    fn keep_request_outcome(
        &self,
        client_request: &str,
        asker_uid: u32,
        at: Timestamp,
        outcome: &str,
    ) -> Result<()> {
        self.prepare_cached(
            "INSERT OR IGNORE INTO request_outcome (client_request, asker_uid, at, outcome)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![client_request, asker_uid, at.to_string(), outcome])?;
        Ok(())
    }

    fn request_in_flight(&self, client_request: &str) -> Result<bool> {
        Ok(self
            .prepare_cached(
                "SELECT count(*) > 0 FROM intent WHERE client_request = ?1 AND status = 'pending'",
            )?
            .query_row([client_request], |r| r.get(0))?)
    }
}
