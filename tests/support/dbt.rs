//! A small dbt project of our own, built by real dbt (dbt-core and dbt-postgres in the
//! venv .ci/dbt.sh makes) into a throwaway PostgreSQL: for `dataward init` and
//! `dataward doctor`. The venv is `$DATAWARD_DBT_VENV`, else /opt/dataward/dbt.
//!
//! The project, "shop":
//! - source `raw` (schema raw, `loaded_at_field: _loaded_at`, freshness warn 6h / error
//!   1d, owned by platform@example.com): `orders`; `customers` with `freshness: null`;
//!   `events` with its own `loaded_at_field: received_at` and warn 30m;
//! - source `billing` (schema raw, no loaded_at_field): `payments`;
//! - models: `stg_orders` (view), `fct_orders` (incremental, in group `finance`),
//!   `fct_events` (microbatch on `received_at`, owned by growth@example.com),
//!   `dim_customers` (table);
//! - group `finance` (Finance Team <finance@example.com>), and an exposure
//!   `revenue_dashboard` reading `fct_orders`.
//!
//! profiles.yml sits in a folder of its own (found through $DBT_PROFILES_DIR), with
//! target `dev` (password from `{{ env_var('SHOP_PG_PASSWORD', '') }}`), `literal`
//! (a password written in the file) and `prod` (Snowflake).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::pg::PgServer;

/// The password the `literal` target writes in profiles.yml: it must never be copied.
pub const LITERAL_PASSWORD: &str = "s3cret-in-profiles";

/// The dbt executable of the venv, or why the test cannot run (a panic when
/// DATAWARD_REQUIRE_ALL=1).
pub fn dbt_or_skip(test: &str) -> Option<PathBuf> {
    venv_tool_or_skip(test, "dbt")
}

/// `dbt-ol`, OpenLineage's wrapper around dbt (openlineage-dbt, in the same venv).
pub fn dbt_ol_or_skip(test: &str) -> Option<PathBuf> {
    venv_tool_or_skip(test, "dbt-ol")
}

/// An executable of the dbt venv (`$DATAWARD_DBT_VENV`, else /opt/dataward/dbt), or why
/// the test cannot run (a panic when DATAWARD_REQUIRE_ALL=1).
fn venv_tool_or_skip(test: &str, tool: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("DATAWARD_DBT_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/dataward/dbt"));
    let path = venv.join("bin").join(tool);
    if path.is_file() {
        return Some(path);
    }
    let message = format!(
        "{test}: skipped: needs {tool} at {} (bash .ci/dbt.sh makes that venv; DATAWARD_DBT_VENV names another)",
        path.display()
    );
    if std::env::var("DATAWARD_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("{message}, and DATAWARD_REQUIRE_ALL=1");
    }
    eprintln!("{message}");
    None
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A dbt project's `dbt_project.yml` in `project`: named `name`, reading the profile of
/// the same name, its models in `models/`, sending dbt's usage statistics nowhere.
pub fn write_project(project: &Path, name: &str) {
    write(
        &project.join("dbt_project.yml"),
        &format!(
            "name: {name}\nversion: \"1.0.0\"\nconfig-version: 2\nprofile: {name}\n\
             model-paths: [\"models\"]\nflags:\n  send_anonymous_usage_stats: false\n"
        ),
    );
}

/// `profiles.yml` in `folder` for the profile `name`: one PostgreSQL output on `pg` per
/// `(target, schema)` (user postgres, no password, database postgres, one thread), the
/// first the default target.
pub fn write_pg_profiles(folder: &Path, name: &str, pg: &PgServer, outputs: &[(&str, &str)]) {
    let mut text = format!("{name}:\n  target: {}\n  outputs:\n", outputs[0].0);
    for (target, schema) in outputs {
        text.push_str(&format!(
            "    {target}:\n      type: postgres\n      host: 127.0.0.1\n      port: {}\n      \
             user: postgres\n      password: \"\"\n      dbname: postgres\n      \
             schema: {schema}\n      threads: 1\n",
            pg.port
        ));
    }
    write(&folder.join("profiles.yml"), &text);
}

/// The failed-run story's model: a table of `raw.orders`' amounts.
pub const ORDER_AMOUNTS_SQL: &str =
    "{{ config(materialized='table') }}\nselect id, customer_id, amount from {{ source('raw', 'orders') }}\n";

/// The notes of the failed-run story: `job.hourly` runs `order_amounts`; analytics owns
/// the models, the platform the raw tables.
pub const ORDERS_NOTES: &str =
    "[[reader]]\nid = \"job.hourly\"\nkind = \"job\"\nname = \"hourly dbt\"\n\
     reads = [\"model.shop_pg.order_amounts\"]\nowner = \"analytics-owner\"\n\n\
     [[owner]]\nrole = \"analytics-owner\"\ncovers = [\"model.shop_pg.*\", \"analytics.*\"]\n\n\
     [[owner]]\nrole = \"platform-owner\"\ncovers = [\"source.shop_pg.*\", \"raw.*\"]\n";

/// The failed-run story's set-up, built nothing yet: `raw.orders` (120 rows) in `pg`;
/// under `root`, the project `shop_pg` in `project/` (`order_amounts` reading the
/// source `raw.orders`), its profiles in `profiles/` (target `dev`, schema `analytics`)
/// and the notes in `notes.toml` ([`ORDERS_NOTES`] and `more_notes`). Returns the
/// project folder.
pub fn orders_project(root: &Path, pg: &PgServer, more_notes: &str) -> PathBuf {
    pg.execute(
        "CREATE SCHEMA raw; \
         CREATE TABLE raw.orders (id integer, customer_id integer, amount numeric(10,2)); \
         INSERT INTO raw.orders SELECT g, g % 7, g * 1.5 FROM generate_series(1, 120) g;",
    );
    let project = root.join("project");
    write_project(&project, "shop_pg");
    write(&project.join("models/order_amounts.sql"), ORDER_AMOUNTS_SQL);
    write(
        &project.join("models/sources.yml"),
        "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: orders\n",
    );
    write_pg_profiles(
        &root.join("profiles"),
        "shop_pg",
        pg,
        &[("dev", "analytics")],
    );
    write(
        &root.join("notes.toml"),
        &format!("{ORDERS_NOTES}{more_notes}"),
    );
    project
}

const SCHEMA_YML: &str = r#"version: 2
groups:
  - name: finance
    owner:
      name: Finance Team
      email: finance@example.com
sources:
  - name: raw
    schema: raw
    loaded_at_field: _loaded_at
    freshness:
      warn_after: {count: 6, period: hour}
      error_after: {count: 1, period: day}
    meta:
      owner: platform@example.com
    tables:
      - name: orders
      - name: customers
        freshness: null
      - name: events
        loaded_at_field: received_at
        config:
          event_time: received_at
        freshness:
          warn_after: {count: 30, period: minute}
  - name: billing
    schema: raw
    tables:
      - name: payments
models:
  - name: fct_orders
    group: finance
  - name: fct_events
    config:
      meta:
        owner: growth@example.com
exposures:
  - name: revenue_dashboard
    type: dashboard
    url: https://bi.example.com/revenue
    owner:
      name: Finance Team
      email: finance@example.com
    depends_on:
      - ref('fct_orders')
"#;

pub struct Shop {
    pub _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub project: PathBuf,
    pub profiles: PathBuf,
    pub dbt: PathBuf,
}

impl Shop {
    /// Loads the raw tables into `pg` and writes the project; builds nothing yet.
    pub fn new(pg: &PgServer, dbt: &Path) -> Shop {
        pg.execute(
            "CREATE SCHEMA raw;
             CREATE TABLE raw.orders (id int PRIMARY KEY, customer_id int, amount numeric(10,2),
                                      ordered_at timestamptz, _loaded_at timestamptz);
             INSERT INTO raw.orders
               SELECT n, n % 7, n * 1.5, now() - n * interval '20 minutes',
                      now() - n * interval '20 minutes' + interval '1 minute'
               FROM generate_series(1, 200) AS n;
             CREATE TABLE raw.customers (id int PRIMARY KEY, name text, _loaded_at timestamptz);
             INSERT INTO raw.customers SELECT n, 'c' || n, now() - interval '2 days'
               FROM generate_series(0, 6) AS n;
             CREATE TABLE raw.events (id int PRIMARY KEY, kind text, received_at timestamptz);
             INSERT INTO raw.events
               SELECT n, CASE WHEN n % 3 = 0 THEN 'view' ELSE 'click' END,
                      now() - n * interval '5 minutes'
               FROM generate_series(1, 500) AS n;
             CREATE TABLE raw.payments (id int PRIMARY KEY, order_id int, amount numeric(10,2));
             INSERT INTO raw.payments SELECT n, n, n * 1.5 FROM generate_series(1, 150) AS n;",
        );
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = root.join("shop");
        write(
            &project.join("dbt_project.yml"),
            "name: shop\nversion: \"1.0\"\nconfig-version: 2\nprofile: shop\n\
             model-paths: [\"models\"]\nflags:\n  send_anonymous_usage_stats: false\n",
        );
        write(&project.join("models/schema.yml"), SCHEMA_YML);
        write(
            &project.join("models/stg_orders.sql"),
            "select id, customer_id, amount, ordered_at, _loaded_at from {{ source('raw', 'orders') }}\n",
        );
        write(
            &project.join("models/fct_orders.sql"),
            "{{ config(materialized='incremental', unique_key='id') }}\n\
             select * from {{ ref('stg_orders') }}\n\
             {% if is_incremental() %}\n\
             where _loaded_at > (select max(_loaded_at) from {{ this }})\n\
             {% endif %}\n",
        );
        let begin = (chrono::Utc::now() - chrono::Duration::days(3))
            .format("%Y-%m-%d")
            .to_string();
        write(
            &project.join("models/fct_events.sql"),
            &format!(
                "{{{{ config(materialized='incremental', incremental_strategy='microbatch', \
                 event_time='received_at', batch_size='day', begin='{begin}', lookback=1, \
                 unique_key='id') }}}}\n\
                 select id, kind, received_at from {{{{ source('raw', 'events') }}}}\n"
            ),
        );
        write(
            &project.join("models/dim_customers.sql"),
            "{{ config(materialized='table') }}\n\
             select c.id, c.name, count(p.id) as payments\n\
             from {{ source('raw', 'customers') }} c\n\
             left join {{ source('billing', 'payments') }} p on p.order_id % 7 = c.id\n\
             group by 1, 2\n",
        );
        let output = |name: &str, password: &str| {
            format!(
                "    {name}:\n      type: postgres\n      host: 127.0.0.1\n      port: {}\n      \
                 user: postgres\n      password: \"{password}\"\n      dbname: postgres\n      \
                 schema: analytics\n      threads: 1\n",
                pg.port
            )
        };
        let profiles = root.join("profiles");
        write(
            &profiles.join("profiles.yml"),
            &format!(
                "shop:\n  target: dev\n  outputs:\n{}{}    prod:\n      type: snowflake\n      \
                 account: ab12345.eu-west-1\n      user: loader\n      password: \"sf-hunter2\"\n      \
                 warehouse: transforming\n      database: analytics\n      schema: marts\n      threads: 4\n",
                output("dev", "{{ env_var('SHOP_PG_PASSWORD', '') }}"),
                output("literal", LITERAL_PASSWORD),
            ),
        );
        Shop {
            _dir: dir,
            root,
            project,
            profiles,
            dbt: dbt.to_path_buf(),
        }
    }

    /// Runs dbt in the project with these arguments; panics with its output on failure.
    pub fn dbt(&self, args: &[&str]) -> Output {
        let output = Command::new(&self.dbt)
            .args(args)
            .current_dir(&self.project)
            .env("DBT_PROFILES_DIR", &self.profiles)
            .env("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
            .env_remove("SHOP_PG_PASSWORD")
            .output()
            .expect("run dbt");
        assert!(
            output.status.success(),
            "dbt {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `dbt build` then `dbt docs generate`: the tables, manifest.json and catalog.json.
    pub fn build(&self) {
        self.dbt(&["build"]);
        self.dbt(&["docs", "generate"]);
    }

    /// `dataward ARGS` with the project's profiles found as dbt finds them.
    pub fn dataward(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dataward"));
        command
            .args(args)
            .env("DBT_PROFILES_DIR", &self.profiles)
            .env_remove("SHOP_PG_PASSWORD");
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("run dataward")
    }

    /// `dataward init` into `ROOT/dataward/config.toml` (data in `ROOT/data`).
    pub fn init(&self, extra: &[&str]) -> Output {
        let out = self.config();
        let data = self.data();
        let mut args = vec![
            "--data-dir",
            data.to_str().unwrap(),
            "init",
            "--dbt-project",
            self.project.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.dataward(&args, &[])
    }

    pub fn config(&self) -> PathBuf {
        self.root.join("dataward").join("config.toml")
    }

    pub fn data(&self) -> PathBuf {
        self.root.join("data")
    }
}

pub fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
