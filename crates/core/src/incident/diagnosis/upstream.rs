//! An open incident on a table upstream (by lineage) explains this breach: the bad
//! rows or the missing ones flowed down. The breach is a symptom of that root.

use super::*;

pub fn diagnose(facts: &Facts) -> Option<Diagnosis> {
    let root = facts.upstream_incident.as_ref()?;
    let cause = format!(
        "{} reads {}, where {} is open: {}",
        facts.table, root.table, root.id, root.cause
    );
    Some(Diagnosis::of(
        CauseKind::Upstream,
        cause,
        vec![facts.breach.sentence()],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;
    use crate::config::CheckKind;
    use crate::detect::VerdictKind;

    #[test]
    fn an_open_incident_upstream_explains_a_downstream_breach() {
        let mut f = facts(figure(CheckKind::RowCount, 10.0, VerdictKind::Low, 100.0));
        f.table = "analytics.orders".into();
        assert!(diagnose(&f).is_none());
        f.upstream_incident = Some(UpstreamIncident {
            id: "INC-0001".into(),
            table: "raw.payments".into(),
            cause: "raw.payments has not loaded since 2026-11-23 14:10".into(),
        });
        let d = diagnose(&f).unwrap();
        assert_eq!(d.kind, CauseKind::Upstream);
        assert_eq!(
            d.cause,
            "analytics.orders reads raw.payments, where INC-0001 is open: raw.payments has not loaded since 2026-11-23 14:10"
        );
    }
}
