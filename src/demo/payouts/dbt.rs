//! The courier estate's dbt: builds the models from the project's files the way dbt
//! would, so an applied diff takes effect. `fct_deliveries` is a microbatch model: a
//! scheduled run rebuilds the current day's batch and `lookback` days before it, and a
//! backfill (`--event-time-start`/`--event-time-end`) the days it names; the batches
//! are read from the model's own `config(...)`, as dbt reads them.

use anyhow::{Context, Result};
use chrono::{NaiveDate, NaiveDateTime};
use rusqlite::Connection;

use super::estate::{compile, first_day, Estate, ModelFile, DELIVERIES, PAYOUTS};

/// A value set in the model's `config(...)` call: `lookback=1` gives "1".
fn config_value(raw: &str, key: &str) -> Option<String> {
    let start = raw.find("config(")?;
    let call = &raw[start..start + raw[start..].find(')')?];
    call.split(',').find_map(|part| {
        let (k, v) = part.split_once('=')?;
        (k.trim().trim_start_matches("config(").trim() == key)
            .then(|| v.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
    })
}

/// The model's file as it is now (an approved diff changes it).
fn read_model(estate: &Estate, model: &ModelFile) -> Result<String> {
    let path = estate.project_dir().join(model.path);
    std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
}

/// Rebuilds the daily batches `days` of the microbatch model, each in one transaction:
/// its rows for that day are replaced by what its SQL selects for that day now.
fn build_batches(wh: &Connection, sql: &str, days: &[NaiveDate]) -> Result<()> {
    wh.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS analytics.fct_deliveries AS SELECT * FROM ({sql}) WHERE 0"
    ))?;
    for day in days {
        let (start, end) = (
            format!("{day}T00:00:00Z"),
            format!("{}T00:00:00Z", day.succ_opt().expect("a next day")),
        );
        wh.execute_batch("BEGIN IMMEDIATE")?;
        let built = wh
            .execute(
                "DELETE FROM analytics.fct_deliveries WHERE delivered_at >= ?1 AND delivered_at < ?2",
                [&start, &end],
            )
            .and_then(|_| {
                wh.execute(
                    &format!(
                        "INSERT INTO analytics.fct_deliveries SELECT * FROM ({sql}) \
                         WHERE delivered_at >= ?1 AND delivered_at < ?2"
                    ),
                    [&start, &end],
                )
            });
        match built {
            Ok(_) => wh.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = wh.execute_batch("ROLLBACK");
                return Err(e).with_context(|| format!("fct_deliveries batch {day}"));
            }
        }
    }
    Ok(())
}

/// Rebuilds a table model whole, in one transaction.
fn build_table(wh: &Connection, estate: &Estate, model: &ModelFile) -> Result<()> {
    let sql = compile(&read_model(estate, model)?);
    wh.execute_batch(&format!(
        "BEGIN IMMEDIATE; DROP TABLE IF EXISTS analytics.\"{name}\"; \
         CREATE TABLE analytics.\"{name}\" AS {sql}; COMMIT;",
        name = model.name
    ))
    .map_err(|e| {
        let _ = wh.execute_batch("ROLLBACK");
        anyhow::anyhow!("model {} failed: {e}", model.name)
    })
}

/// The days from `start` up to, not including, `end`.
fn days(start: NaiveDate, end: NaiveDate) -> Vec<NaiveDate> {
    start.iter_days().take_while(|d| *d < end).collect()
}

/// Builds every batch since `begin` up to `at`'s day, and the table after it: the
/// models as the nightly runs have left them.
pub fn build_all(estate: &Estate, at: NaiveDateTime) -> Result<()> {
    let wh = estate.warehouse()?;
    let sql = compile(&read_model(estate, &DELIVERIES)?);
    build_batches(
        &wh,
        &sql,
        &days(first_day(), at.date().succ_opt().expect("a day")),
    )?;
    build_table(&wh, estate, &PAYOUTS)
}

/// The nightly job's `dbt build`: the current day's batch and `lookback` batches before
/// it, then the payouts table, then the tests. Says what it built.
pub fn nightly(estate: &Estate, at: NaiveDateTime) -> Result<String> {
    let raw = read_model(estate, &DELIVERIES)?;
    let lookback: u64 = config_value(&raw, "lookback")
        .map(|v| v.parse())
        .transpose()
        .context("fct_deliveries: lookback is not a whole number")?
        .unwrap_or(1);
    let today = at.date();
    let start = today - chrono::Days::new(lookback);
    let batches = days(start.max(first_day()), today.succ_opt().expect("a day"));
    let wh = estate.warehouse()?;
    build_batches(&wh, &compile(&raw), &batches)?;
    build_table(&wh, estate, &PAYOUTS)?;
    Ok(format!(
        "fct_deliveries batches {}; fct_courier_payouts; {}",
        batches
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        test_deliveries(&wh)?
    ))
}

/// The project's one test: not_null on fct_deliveries.delivery_id.
fn test_deliveries(wh: &Connection) -> Result<String> {
    let nulls: i64 = wh.query_row(
        "SELECT count(*) FROM analytics.fct_deliveries WHERE delivery_id IS NULL",
        [],
        |r| r.get(0),
    )?;
    anyhow::ensure!(
        nulls == 0,
        "test not_null_fct_deliveries_delivery_id failed: {nulls} rows"
    );
    Ok("test not_null_fct_deliveries_delivery_id passed".to_string())
}

/// Runs an exact dbt command, as a backfill names it:
/// `dbt build --select fct_deliveries+ --event-time-start D --event-time-end E`, or
/// with `--full-refresh` instead of the event times. Says what it built.
pub fn command(estate: &Estate, command: &str, at: NaiveDateTime) -> Result<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag)?;
        words.get(i + 1).copied()
    };
    anyhow::ensure!(
        words.starts_with(&["dbt", "build"]),
        "not a dbt build: {command}"
    );
    let select = after("--select").context("no --select")?;
    anyhow::ensure!(
        select.trim_end_matches('+') == DELIVERIES.name,
        "this project's job builds fct_deliveries and what reads it, not {select}"
    );
    let date = |flag: &str| -> Result<NaiveDate> {
        let text = after(flag).with_context(|| format!("no {flag}"))?;
        NaiveDate::parse_from_str(text.get(..10).unwrap_or(text), "%Y-%m-%d")
            .with_context(|| format!("{flag} {text} is not a date"))
    };
    let wh = estate.warehouse()?;
    let raw = read_model(estate, &DELIVERIES)?;
    let built = if words.contains(&"--full-refresh") {
        wh.execute_batch("DROP TABLE IF EXISTS analytics.fct_deliveries")?;
        let all = days(first_day(), at.date().succ_opt().expect("a day"));
        build_batches(&wh, &compile(&raw), &all)?;
        "fct_deliveries rebuilt whole".to_string()
    } else {
        let batches = days(date("--event-time-start")?, date("--event-time-end")?);
        anyhow::ensure!(!batches.is_empty(), "no batch between the event times");
        build_batches(&wh, &compile(&raw), &batches)?;
        format!(
            "fct_deliveries batches {}",
            batches
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if select.ends_with('+') {
        build_table(&wh, estate, &PAYOUTS)?;
        return Ok(format!(
            "{built}; fct_courier_payouts; {}",
            test_deliveries(&wh)?
        ));
    }
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_are_read_from_the_models_own_call() {
        let raw = DELIVERIES.sql;
        assert_eq!(config_value(raw, "lookback").as_deref(), Some("1"));
        assert_eq!(config_value(raw, "batch_size").as_deref(), Some("day"));
        assert_eq!(config_value(raw, "begin").as_deref(), Some("2026-10-25"));
        let raised = raw.replace("lookback=1", "lookback=3");
        assert_eq!(config_value(&raised, "lookback").as_deref(), Some("3"));
        assert_eq!(config_value(raw, "look"), None);
    }
}
