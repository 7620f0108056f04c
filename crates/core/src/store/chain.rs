//! The chain's rows. What a record is, how it is hashed and verified, and the rules of
//! appending are `crate::chain`'s; this is only where records are kept.

use anyhow::Result;
use rusqlite::{params, Connection, OptionalExtension};

use crate::chain::{Fields, Head, Record};

/// The chain as stored.
pub trait ChainStore {
    /// The last record's sequence number and hash.
    fn chain_head(&self) -> Result<Option<Head>>;
    /// The last record's sequence number, hash and `recorded_at`: what the next append
    /// links to.
    fn chain_tail(&self) -> Result<Option<(u64, String, String)>>;
    /// The hash of record `seq`, if there is one.
    fn chain_hash_at(&self, seq: u64) -> Result<Option<String>>;
    fn chain_len(&self) -> Result<u64>;
    /// Stores a finished record as it is (UNIQUE seq and prev_hash refuse a fork).
    fn insert_record(&self, record: &Record) -> Result<()>;
    /// Every record, in storage order.
    fn records(&self) -> Result<Vec<Record>>;
    /// The records whose payload names `incident`, in storage order.
    fn records_about(&self, incident: &str) -> Result<Vec<Record>>;
    /// Every record in storage order, borrowed one at a time: `each` returns false to
    /// stop. What `verify` streams a million records through without holding them.
    fn scan_records(&self, each: &mut dyn FnMut(&Fields) -> Result<bool>) -> Result<()>;
    /// Records after `seq` of the given kinds, in order.
    fn records_after(&self, seq: u64, kinds: &[&str]) -> Result<Vec<Record>>;
    /// The incidents named by records after `seq`.
    fn incidents_recorded_after(&self, seq: u64) -> Result<Vec<String>>;
    /// The records of one kind, in order.
    fn records_of_kind(&self, kind: &str) -> Result<Vec<Record>>;
    /// The last record of one kind.
    fn last_record_of_kind(&self, kind: &str) -> Result<Option<Record>>;
    /// How many records of one kind there are.
    fn count_of_kind(&self, kind: &str) -> Result<u64>;
    /// The last record of one kind whose payload's `key` is `value` (a proposal's
    /// latest decision, say).
    fn last_record_naming(&self, kind: &str, key: &str, value: &str) -> Result<Option<Record>>;
    /// How many approving decisions on `incident` came before record `seq`.
    fn approvals_before(&self, seq: u64, incident: &str) -> Result<u64>;
}

/// A stored record; its time read as a time (a record whose `at` is not one is an error
/// naming it, and `verify` names it too).
fn row_to_record(r: &rusqlite::Row) -> Result<Record> {
    let seq: u64 = r.get(0)?;
    Ok(Record {
        seq,
        prev_hash: r.get(1)?,
        log_id: r.get(2)?,
        schema_version: r.get(3)?,
        at: super::read_time(&r.get::<_, String>(4)?, || {
            format!("chain record #{seq} (at)")
        })?,
        kind: r.get(5)?,
        actor: r.get(6)?,
        payload: r.get(7)?,
        hash: r.get(8)?,
        recorded_at: r.get(9)?,
        clock: r.get(10)?,
    })
}

/// The query for whole records. A database read-only commands open is not migrated:
/// one written before chain schema version 2 has no time columns, and reads as empty.
fn select_records(conn: &Connection) -> Result<&'static str> {
    let has_time: bool = conn
        .prepare_cached(
            "SELECT count(*) > 0 FROM pragma_table_info('chain') WHERE name = 'recorded_at'",
        )?
        .query_row([], |r| r.get(0))?;
    Ok(if has_time {
        "SELECT seq, prev_hash, log_id, schema_version, at, kind, actor, payload, hash, recorded_at, clock FROM chain"
    } else {
        "SELECT seq, prev_hash, log_id, schema_version, at, kind, actor, payload, hash, '', '' FROM chain"
    })
}

fn collect_records(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Record>> {
    let mut stmt = conn.prepare_cached(&format!("{} {filter}", select_records(conn)?))?;
    let mut rows = stmt.query(params)?;
    let mut records = Vec::new();
    while let Some(row) = rows.next()? {
        records.push(row_to_record(row)?);
    }
    Ok(records)
}

impl ChainStore for Connection {
    fn chain_head(&self) -> Result<Option<Head>> {
        Ok(self
            .prepare_cached("SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1")?
            .query_row([], |r| {
                Ok(Head {
                    seq: r.get(0)?,
                    hash: r.get(1)?,
                })
            })
            .optional()?)
    }

    fn chain_tail(&self) -> Result<Option<(u64, String, String)>> {
        Ok(self
            .prepare_cached("SELECT seq, hash, recorded_at FROM chain ORDER BY seq DESC LIMIT 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?)
    }

    fn chain_hash_at(&self, seq: u64) -> Result<Option<String>> {
        Ok(self
            .prepare_cached("SELECT hash FROM chain WHERE seq = ?1")?
            .query_row([seq], |r| r.get(0))
            .optional()?)
    }

    fn chain_len(&self) -> Result<u64> {
        Ok(self.query_row("SELECT count(*) FROM chain", [], |r| r.get(0))?)
    }

    fn insert_record(&self, record: &Record) -> Result<()> {
        self.prepare_cached(
            "INSERT INTO chain (seq, prev_hash, log_id, schema_version, at, kind, actor, payload, hash,
                                recorded_at, clock)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            record.seq,
            record.prev_hash,
            record.log_id,
            record.schema_version,
            record.at.to_string(),
            record.kind,
            record.actor,
            record.payload,
            record.hash,
            record.recorded_at,
            record.clock
        ])?;
        Ok(())
    }

    fn records(&self) -> Result<Vec<Record>> {
        collect_records(self, "ORDER BY rowid", [])
    }

    fn records_about(&self, incident: &str) -> Result<Vec<Record>> {
        collect_records(
            self,
            "WHERE json_extract(payload, '$.incident') = ?1 ORDER BY rowid",
            [incident],
        )
    }

    fn scan_records(&self, each: &mut dyn FnMut(&Fields) -> Result<bool>) -> Result<()> {
        let mut stmt = self.prepare(&format!("{} ORDER BY rowid", select_records(self)?))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let text = |column: usize| -> Result<&str> { Ok(row.get_ref(column)?.as_str()?) };
            let fields = Fields {
                seq: row.get(0)?,
                prev_hash: text(1)?,
                log_id: text(2)?,
                schema_version: row.get(3)?,
                at: text(4)?,
                kind: text(5)?,
                actor: text(6)?,
                payload: text(7)?,
                hash: text(8)?,
                recorded_at: text(9)?,
                clock: text(10)?,
            };
            if !each(&fields)? {
                break;
            }
        }
        Ok(())
    }

    fn records_after(&self, seq: u64, kinds: &[&str]) -> Result<Vec<Record>> {
        // The kinds ride as one JSON array, so the statement is cached whatever they are.
        let kinds = serde_json::to_string(kinds)?;
        collect_records(
            self,
            "WHERE seq > ?1 AND kind IN (SELECT value FROM json_each(?2)) ORDER BY seq",
            params![seq, kinds],
        )
    }

    fn incidents_recorded_after(&self, seq: u64) -> Result<Vec<String>> {
        let mut stmt = self.prepare_cached(
            "SELECT DISTINCT json_extract(payload, '$.incident') FROM chain
             WHERE seq > ?1 AND json_extract(payload, '$.incident') IS NOT NULL",
        )?;
        let rows = stmt.query_map([seq], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn records_of_kind(&self, kind: &str) -> Result<Vec<Record>> {
        collect_records(self, "WHERE kind = ?1 ORDER BY seq", [kind])
    }

    fn last_record_of_kind(&self, kind: &str) -> Result<Option<Record>> {
        Ok(collect_records(self, "WHERE kind = ?1 ORDER BY seq DESC LIMIT 1", [kind])?.pop())
    }

    fn count_of_kind(&self, kind: &str) -> Result<u64> {
        Ok(self
            .prepare_cached("SELECT count(*) FROM chain WHERE kind = ?1")?
            .query_row([kind], |r| r.get(0))?)
    }

    fn last_record_naming(&self, kind: &str, key: &str, value: &str) -> Result<Option<Record>> {
        let path = format!("$.{key}");
        Ok(collect_records(
            self,
            "WHERE kind = ?1 AND json_extract(payload, ?2) = ?3 ORDER BY seq DESC LIMIT 1",
            params![kind, path, value],
        )?
        .pop())
    }

    fn approvals_before(&self, seq: u64, incident: &str) -> Result<u64> {
        Ok(self
            .prepare_cached(
                "SELECT count(*) FROM chain WHERE kind = 'decision' AND seq < ?1
                   AND json_extract(payload, '$.incident') = ?2
                   AND json_extract(payload, '$.verdict') = 'approved'",
            )?
            .query_row(params![seq, incident], |r| r.get(0))?)
    }
}
