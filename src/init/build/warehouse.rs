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
        Connection::Snowflake(sf) => snowflake_block(warehouse, target, sf),
        Connection::Unsupported { settings } => {
            let why = format!(
                "{}: line {}: target {:?} of profile {:?} is a {} warehouse; dataward watches \
                 PostgreSQL, Snowflake, DuckDB and SQLite tables now, and {} is not supported yet: the warehouse \
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
                 # reads PostgreSQL, Snowflake, DuckDB and SQLite; {} is planned). Its settings, from\n\
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

/// A Snowflake warehouse section: where and as whom as the profile says, and the
/// login as a reference to its secret (a variable's name, or the key's file), never
/// the secret. A login dataward cannot make unattended is written commented out, with
/// why.
#[allow(clippy::type_complexity)]
fn snowflake_block(
    warehouse: &str,
    target: &Target,
    sf: &Snowflake,
) -> (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    let upper = warehouse.to_ascii_uppercase();
    let mut notes: Vec<String> = Vec::new();
    let mut note = None;
    let mut hint = None;
    let secret_in_file = |what: &str, line: usize, var: &str| {
        format!(
            "{}: line {line} holds the {what} itself, which is never copied: dataward \
             reads it from ${var}; export it there (better: move it out of profiles.yml \
             into that variable, and have the profile read it with env_var)",
            target.file.display()
        )
    };
    // A secret's variable: the one the profile reads, or, for a secret written in
    // profiles.yml, one of dataward's own, said in the note and the hint.
    let mut variable = |what: &str, secret: &Password, own: &str| -> Option<String> {
        match secret {
            Password::None => None,
            Password::Env(var) => Some(var.clone()),
            Password::InFile(line) => {
                let var = format!("DATAWARD_{upper}_{own}");
                let said = secret_in_file(what, *line, &var);
                note = Some(match note.take() {
                    Some(before) => format!("{before}; {said}"),
                    None => said,
                });
                let export = format!("export {var}=...");
                hint = Some(match hint.take() {
                    Some(before) => format!("{before}\n{export}"),
                    None => export,
                });
                Some(var)
            }
        }
    };
    let login = match &sf.login {
        SnowflakeLogin::Password(password @ (Password::Env(_) | Password::InFile(_))) => {
            Ok(vec![(
                "password_env",
                variable("password", password, "PASSWORD").expect("given"),
            )])
        }
        SnowflakeLogin::Token(token @ (Password::Env(_) | Password::InFile(_))) => Ok(vec![(
            "token_env",
            variable("OAuth token", token, "TOKEN").expect("given"),
        )]),
        SnowflakeLogin::KeyInline { key, passphrase } => {
            let mut login = Vec::new();
            if let Some(var) = variable("private key", key, "PRIVATE_KEY") {
                login.push(("private_key_env", var));
            }
            if let Some(var) = variable("private key's passphrase", passphrase, "KEY_PASSPHRASE") {
                login.push(("private_key_passphrase_env", var));
            }
            Ok(login)
        }
        SnowflakeLogin::Password(Password::None) | SnowflakeLogin::Token(Password::None) => {
            Err(format!(
                "{}: line {}: target {:?} gives no password or token: dataward needs one \
                 (its variable's name) or a key file to log in",
                target.file.display(),
                target.adapter_line,
                target.name
            ))
        }
        SnowflakeLogin::KeyFile {
            path,
            path_env,
            passphrase,
        } => {
            if let Some(var) = path_env {
                notes.push(format!(
                    "profiles.yml reads the key's path from ${var}: this is where it pointed \
                     when `dataward init` ran. If it changes, change private_key_file here or \
                     run init again."
                ));
            }
            let mut login = vec![("private_key_file", path.display().to_string())];
            if let Some(var) = variable("private key's passphrase", passphrase, "KEY_PASSPHRASE") {
                login.push(("private_key_passphrase_env", var));
            }
            Ok(login)
        }
        SnowflakeLogin::Cannot(why) => Err(why.clone()),
    };
    if let SnowflakeLogin::KeyFile { path, .. } = &sf.login {
        if let Some(why) = key_file_unusable(path) {
            note = Some(match note.take() {
                Some(before) => format!("{why}; {before}"),
                None => why,
            });
        }
    }
    let mut settings: Vec<(&str, String)> = vec![("kind", quote("snowflake"))];
    settings.push(("account", quote(&sf.account)));
    if let Some(host) = &sf.host {
        settings.push(("host", quote(host)));
    }
    if let Some(port) = sf.port {
        settings.push(("port", port.to_string()));
    }
    if let Some(protocol) = &sf.protocol {
        settings.push(("protocol", quote(protocol)));
    }
    settings.push(("database", quote(&sf.database)));
    for (name, value) in [
        ("schema", &sf.schema),
        ("warehouse", &sf.warehouse),
        ("role", &sf.role),
    ] {
        if let Some(value) = value {
            settings.push((name, quote(value)));
        }
    }
    settings.push(("user", quote(&sf.user)));
    if let Ok(login) = &login {
        for (name, value) in login {
            settings.push((name, quote(value)));
        }
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "# The warehouse dbt builds in: Snowflake account {:?}, database {:?}, as\n\
         # user {:?}, from\n\
         #   {}\n\
         # No secret is in this file: the login names the variable that holds it, or\n\
         # the private key's file (which must be mode 0600). dataward reaches\n\
         # Snowflake through the ADBC Snowflake driver (`dbc install snowflake`, or set\n\
         # `driver` to libadbc_driver_snowflake.so): `dataward doctor` says where it found it.\n\
         # dataward only reads (and keeps backfill copies in schema DATAWARD_VERSIONS), and\n\
         # Snowflake has no read-only session: better give it a role that can only read,\n\
         # not dbt's role, which writes.",
        c(&sf.account),
        c(&sf.database),
        c(&sf.user),
        c(&target.file.display().to_string()),
    );
    for line in &notes {
        let _ = writeln!(out, "# {}", c(line));
    }
    let (prefix, why) = match &login {
        Ok(_) => ("", None),
        Err(why) => {
            let _ = writeln!(
                out,
                "# Commented out: dataward cannot log in as dbt does here.\n# {}",
                c(why)
            );
            ("# ", Some(why.clone()))
        }
    };
    let _ = writeln!(out, "{prefix}[warehouse.{warehouse}]");
    for (name, value) in settings {
        let _ = writeln!(out, "{prefix}{name} = {value}");
    }
    out.push('\n');
    (out, None, hint, note, why)
}

/// Why the private key's file will not do as it is, if it will not: dataward refuses
/// a key anyone but its owner can read. Said, not refused: the file is the person's
/// to fix, and doctor says it again.
fn key_file_unusable(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Err(e) => Some(format!(
            "the private key file {} cannot be read here ({e}): dataward reads it at each \
             login",
            path.display()
        )),
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => Some(format!(
            "the private key file {} is readable by others (mode {:o}), and dataward \
             refuses such a key: chmod 600 {}",
            path.display(),
            meta.permissions().mode() & 0o777,
            crate::sanitize::shell_word(&path.display().to_string())
        )),
        Ok(_) => None,
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
        "bigquery" => "BigQuery through ADBC",
        "databricks" => "Databricks through ADBC",
        _ => "BigQuery and Databricks through ADBC",
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
