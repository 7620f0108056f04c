//! The warehouse section `init` writes: the adapter's kind, the URL hint and the
//! read-only role's grants.

use super::*;

/// The warehouse section, and what to tell the person about its URL.
#[allow(clippy::type_complexity)]
pub(super) fn warehouse_block(
    warehouse: &str,
    target: &Target,
) -> (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    let mut out = String::new();
    match &target.connection {
        Connection::Postgres(pg) => {
            let var = format!("DATAWARD_{}_URL", warehouse.to_ascii_uppercase());
            let (hint, note) = url_hint(pg, target, &var);
            let _ = writeln!(
                out,
                "# The warehouse dbt builds in: {} on {}:{}, database {:?}, schema {:?}.\n\
                 # Its URL (and password) comes from the environment, never from this file:\n\
                 #   {}\n\
                 [warehouse.{warehouse}]\n\
                 kind = \"postgres\"\n\
                 url_env = {}\n",
                c(&target.adapter),
                c(&pg.host),
                pg.port,
                c(&pg.dbname),
                c(&pg.schema),
                c(&hint),
                quote(&var),
            );
            (out, Some(var), Some(hint), note, None)
        }
        Connection::Duckdb(duck) => {
            let path = duck.path.display().to_string();
            let _ = writeln!(
                out,
                "# The warehouse dbt builds in: the DuckDB file (catalog {1:?})\n\
                 #   {0}\n\
                 # DuckDB has no login, so there is no secret to keep. dataward opens the\n\
                 # file read-only for each poll (only a backfill's snapshot writes), through\n\
                 # DuckDB's ADBC driver (`driver`, default the manifest name \"duckdb\":\n\
                 # `dataward doctor` says where it was found, or what to install).",
                c(&path),
                c(&duck.database),
            );
            if let Some(var) = &duck.path_env {
                let _ = writeln!(
                    out,
                    "# profiles.yml reads this path from ${}: this is where it pointed when\n\
                     # `dataward init` ran. If it changes, change `path` here or run init again.",
                    c(var)
                );
            }
            let _ = writeln!(
                out,
                "[warehouse.{warehouse}]\nkind = \"duckdb\"\npath = {}\n",
                quote(&path)
            );
            (out, None, None, None, None)
        }
        Connection::Unsupported { settings } => {
            let why = format!(
                "{}: line {}: target {:?} of profile {:?} is a {} warehouse; dataward watches \
                 PostgreSQL, DuckDB and SQLite tables now, and {} is not supported yet: the warehouse \
                 and its monitors are written commented out, while lineage, owners and domains \
                 work as they are",
                target.file.display(),
                target.adapter_line,
                target.name,
                target.profile,
                target.adapter,
                adapter_name(&target.adapter),
            );
            let _ = writeln!(
                out,
                "# The warehouse dbt builds in is {}, which dataward cannot watch yet (it\n\
                 # reads PostgreSQL, DuckDB and SQLite; {} is planned). Its settings, from\n\
                 # {} (secrets are never copied):\n\
                 # [warehouse.{warehouse}]\n\
                 # kind = {}",
                c(adapter_name(&target.adapter)),
                adapter_plan(&target.adapter),
                c(&target.file.display().to_string()),
                quote(&target.adapter),
            );
            for (name, value) in settings {
                let _ = writeln!(out, "# {} = {}", key(name), quote(value));
            }
            out.push('\n');
            (out, None, None, None, Some(why))
        }
    }
}

pub(super) fn adapter_name(adapter: &str) -> &str {
    match adapter {
        "snowflake" => "Snowflake",
        "bigquery" => "BigQuery",
        "redshift" => "Redshift",
        "databricks" => "Databricks",
        "duckdb" => "DuckDB",
        other => other,
    }
}

pub(super) fn adapter_plan(adapter: &str) -> &'static str {
    match adapter {
        "snowflake" => "Snowflake through its SQL API",
        "bigquery" => "BigQuery through its REST API",
        _ => "Snowflake and BigQuery",
    }
}

/// The role the URL names: dataward only reads, so it connects as a role that can do
/// nothing else, never as dbt's user, which writes. A placeholder: the grants made
/// for it ([`read_only_grants`]) and the URL must agree, so a rename is done in both.
pub const READ_ONLY_ROLE: &str = "dataward_reader";

/// The shell line that exports a URL naming the read-only role, its password left as a
/// placeholder (dbt's user's password is never the one to use), and what to say about
/// it. The line is pasted into a shell, so the URL (host and database come from the
/// project) is single-quoted.
pub(super) fn url_hint(pg: &Postgres, _target: &Target, var: &str) -> (String, Option<String>) {
    let note = format!(
        "the URL names a read-only role, {READ_ONLY_ROLE}, not dbt's user {:?}: make it with \
         the lines below (in psql, as a superuser or the schemas' owner), then put the \
         password you give it where the URL says PASSWORD",
        pg.user
    );
    let mut url = format!(
        "postgresql://{}:PASSWORD@{}:{}/{}",
        percent_encode(READ_ONLY_ROLE),
        pg.host,
        pg.port,
        percent_encode(&pg.dbname)
    );
    if let Some(mode) = &pg.sslmode {
        let _ = write!(url, "?sslmode={}", percent_encode(mode));
    }
    (
        format!("export {var}={}", crate::sanitize::shell_quote(&url)),
        Some(note),
    )
}

/// The statements that make [`READ_ONLY_ROLE`] able to read the watched `schemas`
/// and nothing more: today's tables, and (dbt drops and recreates a table on every
/// run, which drops its grants) the tables dbt's user makes there later.
pub fn read_only_grants(pg: &Postgres, schemas: &BTreeSet<String>) -> Vec<String> {
    let role = quote_ident(READ_ONLY_ROLE);
    let mut lines = vec![
        format!("CREATE ROLE {role} LOGIN;"),
        format!("\\password {role}"),
        format!(
            "GRANT CONNECT ON DATABASE {} TO {role};",
            quote_ident(&pg.dbname)
        ),
    ];
    for schema in schemas {
        let schema = quote_ident(schema);
        lines.push(format!("GRANT USAGE ON SCHEMA {schema} TO {role};"));
        lines.push(format!(
            "GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role};"
        ));
        lines.push(format!(
            "ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA {schema} GRANT SELECT ON TABLES TO {role};",
            quote_ident(&pg.user)
        ));
    }
    lines
}

pub(super) fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}
