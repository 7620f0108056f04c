//! The chain's rows on PostgreSQL. What a record is, how it is hashed, appended and
//! verified stays `crate::chain`'s, the same as on SQLite; this is only where records
//! are kept. Storage order is `seq` (PostgreSQL has no rowid).

use anyhow::Result;
use postgres::Row;

use super::PgState;
use crate::chain::{Fields, Head, Record};
use crate::store::chain::ChainStore;

const RECORD: &str = "SELECT seq, prev_hash, log_id, schema_version, at, kind, actor, payload, hash, recorded_at, clock FROM chain";

/// `verify` reads the chain this many rows at a time.
const PAGE: i64 = 4096;

fn record(r: &Row) -> Result<Record> {
    let seq = r.get::<_, i64>(0) as u64;
    Ok(Record {
        seq,
        prev_hash: r.get(1),
        log_id: r.get(2),
        schema_version: r.get::<_, i32>(3) as u32,
        at: crate::store::read_time(r.get(4), || format!("chain record #{seq} (at)"))?,
        kind: r.get(5),
        actor: r.get(6),
        payload: r.get(7),
        hash: r.get(8),
        recorded_at: r.get(9),
        clock: r.get(10),
    })
}

impl PgState {
    /// The team's records that `filter` keeps: `$1` in it is the team, its own
    /// parameters follow from `$2`.
    fn records_where(
        &self,
        filter: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Record>> {
        let mut all: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&self.team];
        all.extend_from_slice(params);
        self.query(&format!("{RECORD} WHERE team = $1 {filter}"), &all)?
            .iter()
            .map(record)
            .collect()
    }
}

impl ChainStore for PgState {
    fn chain_head(&self) -> Result<Option<Head>> {
        Ok(self
            .query(
                "SELECT seq, hash FROM chain WHERE team = $1 ORDER BY seq DESC LIMIT 1",
                &[&self.team],
            )?
            .first()
            .map(|r| Head {
                seq: r.get::<_, i64>(0) as u64,
                hash: r.get(1),
            }))
    }

    fn chain_tail(&self) -> Result<Option<(u64, String, String)>> {
        Ok(self
            .query(
                "SELECT seq, hash, recorded_at FROM chain WHERE team = $1 ORDER BY seq DESC LIMIT 1",
                &[&self.team],
            )?
            .first()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get(1), r.get(2))))
    }

    fn chain_hash_at(&self, seq: u64) -> Result<Option<String>> {
        Ok(self
            .query(
                "SELECT hash FROM chain WHERE team = $1 AND seq = $2",
                &[&self.team, &(seq as i64)],
            )?
            .first()
            .map(|r| r.get(0)))
    }

    fn chain_len(&self) -> Result<u64> {
        let rows = self.query("SELECT count(*) FROM chain WHERE team = $1", &[&self.team])?;
        Ok(rows[0].get::<_, i64>(0) as u64)
    }

    fn insert_record(&self, r: &Record) -> Result<()> {
        self.execute(
            "INSERT INTO chain (team, seq, prev_hash, log_id, schema_version, at, kind, actor,
                                payload, hash, recorded_at, clock)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            &[
                &self.team,
                &(r.seq as i64),
                &r.prev_hash,
                &r.log_id,
                &(r.schema_version as i32),
                &r.at.to_string(),
                &r.kind,
                &r.actor,
                &r.payload,
                &r.hash,
                &r.recorded_at,
                &r.clock,
            ],
        )?;
        Ok(())
    }

    fn records(&self) -> Result<Vec<Record>> {
        self.records_where("ORDER BY seq", &[])
    }

    fn records_about(&self, incident: &str) -> Result<Vec<Record>> {
        self.records_where(
            "AND (payload::jsonb) ->> 'incident' = $2 ORDER BY seq",
            &[&incident],
        )
    }

    /// A page at a time, the session free between pages, so `each` may ask the store.
    fn scan_records(&self, each: &mut dyn FnMut(&Fields) -> Result<bool>) -> Result<()> {
        let mut after = 0i64;
        loop {
            let rows = self.query(
                &format!("{RECORD} WHERE team = $1 AND seq > $2 ORDER BY seq LIMIT $3"),
                &[&self.team, &after, &PAGE],
            )?;
            for row in &rows {
                let fields = Fields {
                    seq: row.get::<_, i64>(0) as u64,
                    prev_hash: row.get(1),
                    log_id: row.get(2),
                    schema_version: row.get::<_, i32>(3) as u32,
                    at: row.get(4),
                    kind: row.get(5),
                    actor: row.get(6),
                    payload: row.get(7),
                    hash: row.get(8),
                    recorded_at: row.get(9),
                    clock: row.get(10),
                };
                if !each(&fields)? {
                    return Ok(());
                }
            }
            match rows.last() {
                Some(last) if rows.len() as i64 == PAGE => after = last.get(0),
                _ => return Ok(()),
            }
        }
    }

    fn records_after(&self, seq: u64, kinds: &[&str]) -> Result<Vec<Record>> {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        self.records_where(
            "AND seq > $2 AND kind = ANY($3) ORDER BY seq",
            &[&(seq as i64), &kinds],
        )
    }

    fn incidents_recorded_after(&self, seq: u64) -> Result<Vec<String>> {
        Ok(self
            .query(
                "SELECT DISTINCT (payload::jsonb) ->> 'incident' FROM chain
                 WHERE team = $1 AND seq > $2 AND (payload::jsonb) ->> 'incident' IS NOT NULL",
                &[&self.team, &(seq as i64)],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn records_of_kind(&self, kind: &str) -> Result<Vec<Record>> {
        self.records_where("AND kind = $2 ORDER BY seq", &[&kind])
    }

    fn last_record_of_kind(&self, kind: &str) -> Result<Option<Record>> {
        Ok(self
            .records_where("AND kind = $2 ORDER BY seq DESC LIMIT 1", &[&kind])?
            .pop())
    }

    fn count_of_kind(&self, kind: &str) -> Result<u64> {
        let rows = self.query(
            "SELECT count(*) FROM chain WHERE team = $1 AND kind = $2",
            &[&self.team, &kind],
        )?;
        Ok(rows[0].get::<_, i64>(0) as u64)
    }

    fn last_record_naming(&self, kind: &str, key: &str, value: &str) -> Result<Option<Record>> {
        Ok(self
            .records_where(
                "AND kind = $2 AND (payload::jsonb) ->> $3 = $4 ORDER BY seq DESC LIMIT 1",
                &[&kind, &key, &value],
            )?
            .pop())
    }

    fn approvals_before(&self, seq: u64, incident: &str) -> Result<u64> {
        let rows = self.query(
            "SELECT count(*) FROM chain WHERE team = $1 AND kind = 'decision' AND seq < $2
               AND (payload::jsonb) ->> 'incident' = $3
               AND (payload::jsonb) ->> 'verdict' = 'approved'",
            &[&self.team, &(seq as i64), &incident],
        )?;
        Ok(rows[0].get::<_, i64>(0) as u64)
    }
}
