//! Jira Service Management's ops alerts, Opsgenie's successor (Atlassian ends Opsgenie
//! on 5 April 2027). Its integration API keeps Opsgenie's alert contract under
//! `https://api.atlassian.com/jsm/ops/integration`: `GenieKey` auth with the JSM API
//! integration's key, create at `/v2/alerts` with an `alias`, acknowledge, notes and
//! close by alias (`identifierType=alias`), each answered 202 with a `requestId` whose
//! outcome is read from `/v2/alerts/requests/{id}`. So the translation is Opsgenie's,
//! at JSM's address; moving a team across is `kind = "jsm"` and the new key.

use super::opsgenie::Opsgenie;

pub const DEFAULT_BASE: &str = "https://api.atlassian.com";
pub const PREFIX: &str = "/jsm/ops/integration";

pub fn jsm(base: Option<String>) -> Opsgenie {
    Opsgenie::at(base, DEFAULT_BASE, PREFIX, "JSM")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::tests::sample;
    use crate::notify::{Action, Occasion, Sender};
    use crate::sanitize::Sanitized;

    #[test]
    fn the_same_lifecycle_at_jsm_s_address() {
        let sender = jsm(None);
        let mut alert = sample();
        let request = sender.request(&Sanitized::new(alert.clone()), "K");
        assert_eq!(
            request.url,
            "https://api.atlassian.com/jsm/ops/integration/v2/alerts"
        );
        assert!(request
            .headers
            .contains(&("Authorization", "GenieKey K".to_string())));
        alert.action = Action::Resolve;
        alert.occasion = Occasion::Resolved;
        let request = sender.request(&Sanitized::new(alert), "K");
        assert_eq!(
            request.url,
            "https://api.atlassian.com/jsm/ops/integration/v2/alerts/dataward-0123456789ab-INC-0001/close?identifierType=alias"
        );
        assert_eq!(
            sender.status_request("r-9", "K").unwrap().url,
            "https://api.atlassian.com/jsm/ops/integration/v2/alerts/requests/r-9"
        );
    }
}
