//! Property tests: any single edit, deletion, reorder, insertion or tail truncation of
//! chain records is detected; the encoding round-trips exactly.

use dataward::chain::{decode, encode, hash_record, Record, Verifier, GENESIS, SCHEMA_VERSION};
use dataward::clock::Timestamp;
use proptest::prelude::*;

fn chain(n: u64) -> Vec<Record> {
    let mut prev = GENESIS.to_string();
    (1..=n)
        .map(|seq| {
            let mut r = Record {
                seq,
                prev_hash: prev.clone(),
                log_id: "0f0e0d0c0b0a09080706050403020100".into(),
                schema_version: SCHEMA_VERSION,
                at: format!("2026-11-24T14:{:02}:00Z", seq % 60)
                    .parse()
                    .unwrap(),
                kind: if seq % 2 == 0 { "decision" } else { "proposal" }.into(),
                actor: format!(r#"{{"uid":{}}}"#, 1000 + seq),
                payload: format!(r#"{{"i":{seq}}}"#),
                recorded_at: format!("2026-11-24T15:{:02}:{:02}.000000Z", seq / 60 % 60, seq % 60),
                clock: format!("2026-11-24T15:{:02}:{:02}.000000Z", seq / 60 % 60, seq % 60),
                hash: String::new(),
            };
            r.hash = hash_record(&r);
            prev = r.hash.clone();
            r
        })
        .collect()
}

/// Verifies `records` against the checkpoint the untouched chain of `n` left behind.
fn detects(original: &[Record], tampered: &[Record]) -> bool {
    let head = original.last().unwrap();
    let mut verifier = Verifier::new(Some((head.seq, head.hash.clone())));
    for r in tampered {
        if !verifier.push(r) {
            break;
        }
    }
    !verifier.finish().ok
}

fn edit(record: &mut Record, field: usize, salt: u32) {
    let s = salt.to_string();
    match field {
        0 => record.seq += 1 + u64::from(salt % 5),
        1 => record.prev_hash = format!("{:0>64}", s),
        2 => record.log_id.push_str(&s),
        3 => record.schema_version += 1 + salt % 3,
        4 => record.at = record.at + chrono::TimeDelta::seconds(1 + i64::from(salt % 1000)),
        5 => record.kind.push_str(&s),
        6 => record.actor = format!(r#"{{"uid":{salt}}}"#),
        7 => record.payload = format!(r#"{{"i":"{s}x"}}"#),
        _ => record.hash = format!("{:f>64}", s),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn an_untouched_chain_verifies(n in 1u64..40) {
        let c = chain(n);
        prop_assert!(!detects(&c, &c));
    }

    #[test]
    fn any_field_change_is_detected(n in 1u64..40, at in 0usize..40, field in 0usize..9, salt in any::<u32>()) {
        let c = chain(n);
        let mut t = c.clone();
        let i = at % c.len();
        let before = t[i].clone();
        edit(&mut t[i], field, salt);
        prop_assume!(t[i] != before);
        prop_assert!(detects(&c, &t));
    }

    #[test]
    fn any_deletion_is_detected(n in 1u64..40, at in 0usize..40) {
        let c = chain(n);
        let mut t = c.clone();
        t.remove(at % c.len());
        prop_assert!(detects(&c, &t));
    }

    #[test]
    fn any_reorder_is_detected(n in 2u64..40, a in 0usize..40, b in 0usize..40) {
        let c = chain(n);
        let (a, b) = (a % c.len(), b % c.len());
        prop_assume!(a != b);
        let mut t = c.clone();
        t.swap(a, b);
        prop_assert!(detects(&c, &t));
    }

    /// The strongest forgery: a well-formed record spliced in, and every later record
    /// renumbered and re-hashed. Only the checkpoint can tell, and it must. (A record
    /// added after the head is an append, which an unsigned chain cannot tell from a
    /// real one: that is why writes go through `append` and the database refuses
    /// edits.)
    #[test]
    fn any_insertion_is_detected(n in 1u64..40, at in 0usize..40, payload in "[a-z]{1,12}") {
        let c = chain(n);
        let at = at % c.len();
        let mut t: Vec<Record> = c[..at].to_vec();
        let mut forged = c[0].clone();
        forged.payload = format!(r#"{{"forged":"{payload}"}}"#);
        t.push(forged);
        t.extend(c[at..].iter().cloned());
        let mut prev = GENESIS.to_string();
        for (i, r) in t.iter_mut().enumerate() {
            r.seq = i as u64 + 1;
            r.prev_hash = prev.clone();
            r.hash = hash_record(r);
            prev = r.hash.clone();
        }
        prop_assert!(detects(&c, &t));
    }

    #[test]
    fn any_tail_truncation_is_detected(n in 1u64..40, keep in 0usize..40) {
        let c = chain(n);
        let keep = keep % c.len();
        prop_assert!(detects(&c, &c[..keep]));
    }

    #[test]
    fn encode_decode_encode_is_identical(
        seq in any::<u64>(), version in any::<u32>(), seconds in 0i64..4_102_444_800,
        texts in proptest::collection::vec(".{0,40}", 8),
    ) {
        // Version 2 on, the encoding carries the recorded time and the clock.
        let (recorded_at, clock) = if version >= 2 {
            (texts[6].clone(), texts[7].clone())
        } else {
            (String::new(), String::new())
        };
        let r = Record {
            seq, prev_hash: texts[0].clone(), log_id: texts[1].clone(), schema_version: version,
            at: Timestamp::from_unix(seconds).unwrap(), kind: texts[3].clone(), actor: texts[4].clone(), payload: texts[5].clone(),
            recorded_at, clock, hash: String::new(),
        };
        let bytes = encode(&r);
        let back = decode(&bytes).unwrap();
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(encode(&back), bytes);
    }
}

#[test]
fn decode_refuses_what_is_not_a_record() {
    assert!(decode(b"hello").is_err());
    let mut bytes = encode(&chain(1)[0]);
    bytes.pop();
    assert!(decode(&bytes).is_err());
}
