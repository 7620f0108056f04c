//! The fallback: no rule explains the breach, so say exactly what breached in its own
//! check's terms, and what was looked at and ruled out.

use super::*;

pub fn diagnose(facts: &Facts) -> Diagnosis {
    let mut ruled_out = vec![format!("no schema change on {}", facts.table)];
    if let Some(source) = &facts.source_table {
        ruled_out.push(format!("none on {source}"));
    }
    if facts.upstream_incident.is_none() {
        ruled_out.push("no open incident upstream".to_string());
    }
    let mut evidence = vec![facts.breach.sentence()];
    evidence.extend(other_breaches(facts));
    let cause = format!(
        "{}; not explained yet: {}",
        facts.breach.sentence(),
        ruled_out.join(", ")
    );
    Diagnosis::of(CauseKind::Unexplained, cause, evidence)
}

#[cfg(test)]
mod tests {
    use super::super::test_facts::*;
    use super::*;
    use crate::config::CheckKind;
    use crate::detect::VerdictKind;

    #[test]
    fn the_fallback_says_what_breached_in_its_own_terms() {
        let d = diagnose(&facts(figure(
            CheckKind::RowCount,
            30_000.0,
            VerdictKind::High,
            20_000.0,
        )));
        assert_eq!(d.kind, CauseKind::Unexplained);
        assert!(
            d.cause.starts_with(
                "rows in raw.payments rose to 30,000 rows, 150% of the usual 20,000 rows"
            ),
            "{}",
            d.cause
        );
        assert!(d
            .cause
            .ends_with("no schema change on raw.payments, no open incident upstream"));
    }
}
