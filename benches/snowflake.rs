//! One full poll of 200 Snowflake tables with row_count, freshness, null_rate, volume
//! and schema each, through the ADBC Snowflake driver, against fakesnow's server
//! (installed by .ci/snowflake.sh, started here as tests/snowflake.rs starts it).
//! Prints wall time, queries issued (as the server counted them, and warehouse calls),
//! peak memory (this process's and the server's), for a first poll and a warm one.
//! fakesnow runs DuckDB underneath: these figures say how dataward's side costs, and
//! nothing of Snowflake's speed. Run with `cargo bench --bench snowflake`.

#[path = "support/fakesnow.rs"]
mod fakesnow;
#[path = "support/warehouse_poll.rs"]
mod warehouse_poll;

use std::sync::Arc;
use std::time::Instant;

use dataward::monitor::poller::SharedWarehouse;
use dataward::warehouse::adbc;
use dataward::warehouse::snowflake::{self, Login, Settings, SnowflakeWarehouse};
use warehouse_poll::{Counters, ROWS, TABLES};

const PASSWORD_ENV: &str = "DATAWARD_BENCH_SNOWFLAKE_PASSWORD";

fn main() {
    let Some(server) = fakesnow::Fakesnow::start() else {
        return;
    };
    println!(
        "fakesnow {}: Snowflake's HTTP protocol on loopback with DuckDB underneath; its \
         figures say nothing of Snowflake's speed",
        server.port
    );
    let port = server.port.to_string();
    let setup = Instant::now();
    {
        let driver = adbc::load(server.library.to_str().unwrap(), &snowflake::DRIVER).unwrap();
        let database = driver
            .open(&[
                ("adbc.snowflake.sql.account", "fakesnow"),
                ("adbc.snowflake.sql.uri.host", "127.0.0.1"),
                ("adbc.snowflake.sql.uri.port", &port),
                ("adbc.snowflake.sql.uri.protocol", "http"),
                ("adbc.snowflake.sql.db", "DW"),
                ("username", "fake"),
                ("password", "snow"),
                ("adbc.snowflake.sql.client_option.disable_telemetry", "true"),
            ])
            .unwrap();
        let mut session = database.connect().unwrap();
        for statement in [
            "CREATE DATABASE IF NOT EXISTS DW",
            "CREATE SCHEMA DW.BENCH",
            "CREATE TABLE DW.BENCH.ROWS (ID NUMBER(38,0), EMAIL VARCHAR, LOADED_AT TIMESTAMP_NTZ)",
        ] {
            session.execute(statement).unwrap();
        }
        // Loaded hourly back from now, every twentieth email missing.
        let now = chrono::Utc::now();
        let rows: Vec<String> = (1..=ROWS)
            .map(|n| {
                let email = if n % 20 == 0 { "NULL" } else { "'x'" };
                let at = now - chrono::TimeDelta::hours(n as i64);
                format!(
                    "({n}, {email}, '{}'::TIMESTAMP_NTZ)",
                    at.format("%Y-%m-%d %H:%M:%S")
                )
            })
            .collect();
        for chunk in rows.chunks(500) {
            session
                .execute(&format!(
                    "INSERT INTO DW.BENCH.ROWS VALUES {}",
                    chunk.join(", ")
                ))
                .unwrap();
        }
        for i in 1..=TABLES {
            session
                .execute(&format!(
                    "CREATE TABLE DW.BENCH.T{i} AS SELECT * FROM DW.BENCH.ROWS"
                ))
                .unwrap();
        }
    }
    println!(
        "setup: {TABLES} tables x {ROWS} rows in {:.1}s",
        setup.elapsed().as_secs_f64()
    );

    std::env::set_var(PASSWORD_ENV, "snow");
    let settings = Settings {
        account: "fakesnow".into(),
        host: Some("127.0.0.1".into()),
        port: Some(server.port),
        protocol: Some("http".into()),
        database: "DW".into(),
        user: "fake".into(),
        login: Some(Login::Password {
            env: PASSWORD_ENV.into(),
        }),
        ..Settings::default()
    };
    let warehouse = Arc::new(
        SnowflakeWarehouse::new(settings, Some(server.library.display().to_string()))
            .cancel_after(warehouse_poll::limit("snow")),
    );
    let config = format!(
        "[warehouse.snow]\nkind = \"snowflake\"\ndriver = \"{}\"\naccount = \"fakesnow\"\n\
         host = \"127.0.0.1\"\nport = {port}\nprotocol = \"http\"\ndatabase = \"DW\"\n\
         user = \"fake\"\npassword_env = \"{PASSWORD_ENV}\"\n{}",
        server.library.display(),
        warehouse_poll::monitors_toml("snow", "bench")
    );
    let dir = tempfile::tempdir().unwrap();
    let calls = || warehouse.queries_issued();
    let sent = || server.queries();
    warehouse_poll::first_and_warm_poll(
        dir.path(),
        &config,
        "snow",
        warehouse.clone() as SharedWarehouse,
        &[
            Counters {
                what: "queries the server was sent",
                count: &sent,
            },
            Counters {
                what: "warehouse calls",
                count: &calls,
            },
        ],
    );
    println!(
        "peak memory (VmHWM): dataward's side {}, the fakesnow server {}",
        warehouse_poll::peak_memory("self"),
        warehouse_poll::peak_memory(&server.pid().to_string())
    );
}
