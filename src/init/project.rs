//! The dbt project and the warehouse connection dbt uses: `dbt_project.yml`, then the
//! profile it names in `profiles.yml` ($DBT_PROFILES_DIR, the project folder, or
//! ~/.dbt, in dbt's order), then the profile's target.
//!
//! Profile values may be `{{ env_var('NAME') }}` (with a default, and a filter such as
//! `| int`): they are read from the environment as dbt reads them. A password is never
//! read at all: the config names an environment variable instead.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use super::yaml::Yaml;

/// What `dbt_project.yml` says.
#[derive(Debug, Clone)]
pub struct DbtProject {
    /// The project folder, absolute.
    pub dir: PathBuf,
    pub name: String,
    /// Where dbt writes its artifacts (`target-path`, default `target`), absolute.
    pub target_path: PathBuf,
    /// The profile it names, and the line it is named on.
    pub profile: Option<(String, usize)>,
}

impl DbtProject {
    pub fn read(dir: &Path) -> Result<DbtProject> {
        let dir = std::fs::canonicalize(dir)
            .with_context(|| format!("cannot open the dbt project folder {}", dir.display()))?;
        let file = dir.join("dbt_project.yml");
        check_within(&file, &dir)?;
        let text = std::fs::read_to_string(&file).map_err(|e| {
            anyhow!(
                "{}: cannot read it ({e}); --dbt-project names the folder holding dbt_project.yml",
                file.display()
            )
        })?;
        let shown = file.display().to_string();
        let doc = Yaml::parse(&text, &shown)?;
        let name = plain(&doc, "name", &shown)?
            .ok_or_else(|| anyhow!("{shown}: no `name`: this is not a dbt project file"))?;
        let target_path = match plain(&doc, "target-path", &shown)? {
            Some((path, _)) => dir.join(path),
            None => dir.join("target"),
        };
        Ok(DbtProject {
            name: name.0,
            profile: plain(&doc, "profile", &shown)?,
            target_path,
            dir,
        })
    }
}

/// A top-level text value of `dbt_project.yml`, which must not be Jinja (dataward does
/// not render the project).
fn plain(doc: &Yaml, key: &str, file: &str) -> Result<Option<(String, usize)>> {
    let Some(value) = doc.get(key) else {
        return Ok(None);
    };
    let Some(text) = value.text() else {
        bail!(
            "{file}: line {}: `{key}` is {}, not a name",
            value.line,
            value.describe()
        );
    };
    if text.contains("{{") {
        let rendered =
            render(text).map_err(|e| anyhow!("{file}: line {}: {key}: {e}", value.line))?;
        return Ok(Some((rendered, value.line)));
    }
    Ok(Some((text.to_string(), value.line)))
}

/// The profile's target: where dbt builds, and how to reach it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The profiles.yml read.
    pub file: PathBuf,
    pub profile: String,
    pub name: String,
    /// The adapter (`type`), and the line it is given on.
    pub adapter: String,
    pub adapter_line: usize,
    pub connection: Connection,
}

#[derive(Debug, Clone)]
pub enum Connection {
    Postgres(Postgres),
    Duckdb(Duckdb),
    Snowflake(Snowflake),
    /// Any other adapter: its settings, secrets left out, for a commented block.
    Unsupported {
        settings: Vec<(String, String)>,
    },
}

#[derive(Debug, Clone)]
pub struct Postgres {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    pub schema: String,
    pub sslmode: Option<String>,
    pub password: Password,
}

/// A dbt-duckdb target: the one database file dbt builds in. DuckDB has no login, so
/// there is no secret to leave out.
#[derive(Debug, Clone)]
pub struct Duckdb {
    /// The file, absolute: a relative `path` is resolved against the project folder,
    /// as dbt does (it runs from there, and DuckDB opens the path as given).
    pub path: PathBuf,
    /// The variable the profile reads the path from (`{{ env_var('NAME') }}`), read
    /// from this environment when `init` runs.
    pub path_env: Option<String>,
    /// The catalog dbt-duckdb names after the file (`jaffle_shop` for
    /// `jaffle_shop.duckdb`): the manifest's tables there are in this file.
    pub database: String,
}

/// A dbt-snowflake target: the account, where it answers, and how dbt logs in. No
/// secret is read: only where it is (the variable that holds it, or its line).
#[derive(Debug, Clone)]
pub struct Snowflake {
    pub account: String,
    pub user: String,
    pub database: String,
    pub schema: Option<String>,
    pub role: Option<String>,
    pub warehouse: Option<String>,
    /// Where the account answers when not `<account>.snowflakecomputing.com`.
    pub host: Option<String>,
    pub port: Option<u16>,
    pub protocol: Option<String>,
    pub login: SnowflakeLogin,
}

/// How a dbt-snowflake target logs in, as far as dataward can follow it.
#[derive(Debug, Clone, PartialEq)]
pub enum SnowflakeLogin {
    /// A password (or a programmatic access token, which Snowflake takes in its place).
    Password(Password),
    /// An OAuth access token.
    Token(Password),
    /// A key pair: the private key's file, absolute (a path is no secret), the
    /// variable the profile reads the path from, and where the passphrase of an
    /// encrypted key is.
    KeyFile {
        path: PathBuf,
        path_env: Option<String>,
        passphrase: Password,
    },
    /// A key pair whose private key the profile gives itself (`private_key`): where the
    /// key is, and where its passphrase is.
    KeyInline { key: Password, passphrase: Password },
    /// A login dataward cannot make unattended, and why.
    Cannot(String),
}

/// Where the target's password is: never copied, only pointed at.
#[derive(Debug, Clone, PartialEq)]
pub enum Password {
    /// None, or an empty one (trust or peer authentication).
    None,
    /// `{{ env_var('NAME') }}`: the variable holding it.
    Env(String),
    /// Written in profiles.yml itself, on this line.
    InFile(usize),
}

/// Where dbt would find profiles.yml: $DBT_PROFILES_DIR, the project folder, ~/.dbt.
pub fn profiles_file(project: &DbtProject) -> Result<PathBuf> {
    let found = find_profiles(project)?;
    check_within(&found, found.parent().unwrap_or(Path::new("/")))?;
    // Absolute, so the config can name its folder whatever folder it is read from.
    std::fs::canonicalize(&found).with_context(|| format!("cannot open {}", found.display()))
}

/// Refuses a file of the project that resolves outside `folder` (where it was found),
/// through a symlink or a path that leads out, and a file reached through a symlink
/// that another account owns. A hostile project could otherwise have `init` read, and
/// quote in its messages, any file this account can read (`/etc/shadow` as root).
/// A file that is not there is left to the reader, which says so.
pub fn check_within(file: &Path, folder: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(link) = std::fs::symlink_metadata(file) else {
        return Ok(());
    };
    let Ok(resolved) = std::fs::canonicalize(file) else {
        return Ok(());
    };
    let folder = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
    if !resolved.starts_with(&folder) {
        bail!(
            "{}: leads to {}, outside {}: not read (a project's files are read only from \
             inside the folder they are found in; copy the file there if it is yours)",
            file.display(),
            resolved.display(),
            folder.display()
        );
    }
    if link.file_type().is_symlink() {
        let owner = std::fs::metadata(&resolved)?.uid();
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if owner != me {
            bail!(
                "{}: a symlink to {}, which another account (uid {owner}) owns: not read",
                file.display(),
                resolved.display()
            );
        }
    }
    Ok(())
}

fn find_profiles(project: &DbtProject) -> Result<PathBuf> {
    let mut tried = Vec::new();
    if let Some(dir) = std::env::var_os("DBT_PROFILES_DIR").filter(|d| !d.is_empty()) {
        let file = PathBuf::from(dir).join("profiles.yml");
        if file.is_file() {
            return Ok(file);
        }
        tried.push(format!("$DBT_PROFILES_DIR ({})", file.display()));
    }
    let file = project.dir.join("profiles.yml");
    if file.is_file() {
        return Ok(file);
    }
    tried.push(file.display().to_string());
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let file = PathBuf::from(home).join(".dbt").join("profiles.yml");
        if file.is_file() {
            return Ok(file);
        }
        tried.push(file.display().to_string());
    }
    bail!(
        "no profiles.yml: looked in {}. dbt's connection settings are there; \
         set DBT_PROFILES_DIR to the folder holding it",
        tried.join(", ")
    )
}

impl Target {
    /// Reads `profile` (default: the project's) and its `target` (default: the profile's
    /// own `target`) from `file`.
    pub fn read(
        file: &Path,
        project: &DbtProject,
        profile: Option<&str>,
        target: Option<&str>,
    ) -> Result<Target> {
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {shown}"))?;
        let doc = Yaml::parse(&text, &shown)?;
        let profile_name = match (profile, &project.profile) {
            (Some(name), _) => name.to_string(),
            (None, Some((name, _))) => name.clone(),
            (None, None) => bail!(
                "{}: names no `profile`; pass --profile NAME (one of {shown}: {})",
                project.dir.join("dbt_project.yml").display(),
                profile_names(&doc)
            ),
        };
        let Some(profile_doc) = doc.get(&profile_name) else {
            let named_by = match (profile, &project.profile) {
                (Some(_), _) => "--profile names it".to_string(),
                (None, Some((_, line))) => format!("dbt_project.yml line {line} names it"),
                (None, None) => unreachable!("a profile name was found above"),
            };
            bail!(
                "{shown}: no profile {profile_name:?} ({named_by}); the file has: {}",
                profile_names(&doc)
            );
        };
        let outputs = profile_doc
            .get("outputs")
            .filter(|o| o.is_map())
            .ok_or_else(|| {
                anyhow!(
                    "{shown}: line {}: profile {profile_name:?} has no `outputs` mapping of targets",
                    profile_doc.line
                )
            })?;
        let (target_name, named_at) = match target {
            Some(name) => (name.to_string(), "--target names it".to_string()),
            None => {
                let value = profile_doc.get("target").ok_or_else(|| {
                    anyhow!(
                        "{shown}: line {}: profile {profile_name:?} names no default `target`; pass --target NAME (one of {})",
                        profile_doc.line,
                        outputs.keys().join(", ")
                    )
                })?;
                let name = text_value(value, "target", &shown)?;
                (name, format!("line {} names it", value.line))
            }
        };
        let output = outputs.get(&target_name).ok_or_else(|| {
            anyhow!(
                "{shown}: line {}: profile {profile_name:?} has no target {target_name:?} ({named_at}); its targets: {}",
                outputs.line,
                outputs.keys().join(", ")
            )
        })?;
        let adapter_value = output.get("type").ok_or_else(|| {
            anyhow!(
                "{shown}: line {}: target {target_name:?} has no `type` (the adapter, e.g. postgres)",
                output.line
            )
        })?;
        let adapter = text_value(adapter_value, "type", &shown)?;
        let connection = match adapter.as_str() {
            "postgres" => Connection::Postgres(postgres(output, &shown)?),
            "duckdb" => Connection::Duckdb(duckdb(output, &shown, &project.dir)?),
            "snowflake" => Connection::Snowflake(snowflake(output, &shown, &project.dir)?),
            _ => Connection::Unsupported {
                settings: unsupported_settings(output),
            },
        };
        Ok(Target {
            file: file.to_path_buf(),
            profile: profile_name,
            name: target_name,
            adapter,
            adapter_line: adapter_value.line,
            connection,
        })
    }
}

fn profile_names(doc: &Yaml) -> String {
    let names: Vec<&str> = doc.keys().into_iter().filter(|k| *k != "config").collect();
    if names.is_empty() {
        "no profile at all".to_string()
    } else {
        names.join(", ")
    }
}

/// A scalar, with `{{ env_var(...) }}` read from the environment.
fn text_value(value: &Yaml, key: &str, file: &str) -> Result<String> {
    let text = value.text().ok_or_else(|| {
        anyhow!(
            "{file}: line {}: `{key}` is {}, not a value",
            value.line,
            value.describe()
        )
    })?;
    render(text).map_err(|e| anyhow!("{file}: line {}: {key}: {e}", value.line))
}

fn postgres(output: &Yaml, file: &str) -> Result<Postgres> {
    let required = |key: &str| -> Result<String> {
        let value = output.get(key).ok_or_else(|| {
            anyhow!(
                "{file}: line {}: a postgres target needs `{key}`",
                output.line
            )
        })?;
        text_value(value, key, file)
    };
    let optional = |key: &str| -> Result<Option<String>> {
        output
            .get(key)
            .map(|v| text_value(v, key, file))
            .transpose()
    };
    let dbname = match optional("dbname")? {
        Some(name) => name,
        None => required("database")?,
    };
    let port = match output.get("port") {
        Some(value) => {
            let text = text_value(value, "port", file)?;
            text.trim().parse::<u16>().map_err(|_| {
                anyhow!(
                    "{file}: line {}: port: {text:?} is not a port number",
                    value.line
                )
            })?
        }
        None => 5432,
    };
    let password = secret_at(output.get("password").or_else(|| output.get("pass")));
    Ok(Postgres {
        host: required("host")?,
        port,
        user: required("user")?,
        dbname,
        schema: required("schema")?,
        sslmode: optional("sslmode")?,
        password,
    })
}

/// Where a secret of the profile is, from its value as written: never rendered, so the
/// secret itself is never read.
fn secret_at(value: Option<&Yaml>) -> Password {
    match value {
        None => Password::None,
        Some(value) => match value.text() {
            Some("") => Password::None,
            Some(text) => match env_var_name(text) {
                Some(name) => Password::Env(name),
                None => Password::InFile(value.line),
            },
            None => Password::InFile(value.line),
        },
    }
}

fn snowflake(output: &Yaml, file: &str, project_dir: &Path) -> Result<Snowflake> {
    let required = |key: &str| -> Result<String> {
        let value = output.get(key).ok_or_else(|| {
            anyhow!(
                "{file}: line {}: a snowflake target needs `{key}`",
                output.line
            )
        })?;
        text_value(value, key, file)
    };
    let optional = |key: &str| -> Result<Option<String>> {
        output
            .get(key)
            .map(|v| text_value(v, key, file))
            .transpose()
    };
    let port = match output.get("port") {
        Some(value) => {
            let text = text_value(value, "port", file)?;
            Some(text.trim().parse::<u16>().map_err(|_| {
                anyhow!(
                    "{file}: line {}: port: {text:?} is not a port number",
                    value.line
                )
            })?)
        }
        None => None,
    };
    Ok(Snowflake {
        account: required("account")?,
        user: required("user")?,
        database: required("database")?,
        schema: optional("schema")?,
        role: optional("role")?,
        warehouse: optional("warehouse")?,
        host: optional("host")?,
        port,
        protocol: optional("protocol")?,
        login: snowflake_login(output, file, project_dir)?,
    })
}

/// How the target logs in, as dbt-snowflake chooses: a private key (file or inline)
/// first, then the authenticator's way, a password by default.
fn snowflake_login(output: &Yaml, file: &str, project_dir: &Path) -> Result<SnowflakeLogin> {
    let authenticator = output
        .get("authenticator")
        .map(|v| text_value(v, "authenticator", file))
        .transpose()?
        .unwrap_or_else(|| "snowflake".to_string());
    let line = |key: &str| output.get(key).map_or(output.line, |v| v.line);
    let given = |key: &str| secret_at(output.get(key)) != Password::None;
    let passphrase = secret_at(output.get("private_key_passphrase"));
    if let Some(value) = output.get("private_key_path") {
        let path = text_value(value, "private_key_path", file)?;
        return Ok(SnowflakeLogin::KeyFile {
            path: project_dir.join(path.trim()),
            path_env: value.text().and_then(env_var_name),
            passphrase,
        });
    }
    if given("private_key") {
        return Ok(SnowflakeLogin::KeyInline {
            key: secret_at(output.get("private_key")),
            passphrase,
        });
    }
    match authenticator.to_ascii_lowercase().as_str() {
        "snowflake" | "username_password" => match secret_at(output.get("password")) {
            Password::None => Ok(SnowflakeLogin::Cannot(format!(
                "{file}: line {}: no password and no private_key_path: dataward needs one of                  them (or an OAuth token) to log in",
                output.line
            ))),
            password => Ok(SnowflakeLogin::Password(password)),
        },
        "programmatic_access_token" => Ok(SnowflakeLogin::Password(secret_at(
            output.get("token").or_else(|| output.get("password")),
        ))),
        "oauth" if output.get("oauth_client_id").is_some() => Ok(SnowflakeLogin::Cannot(format!(
            "{file}: line {}: the token is an OAuth refresh token (with oauth_client_id),              which dbt trades for access tokens; dataward takes an access token              (token_env) or a key file (private_key_file)",
            line("token")
        ))),
        "oauth" => Ok(SnowflakeLogin::Token(secret_at(output.get("token")))),
        "snowflake_jwt" => Ok(SnowflakeLogin::Cannot(format!(
            "{file}: line {}: authenticator snowflake_jwt with no private_key_path: set              private_key_file to the key's file",
            line("authenticator")
        ))),
        other => Ok(SnowflakeLogin::Cannot(format!(
            "{file}: line {}: authenticator {other:?} needs a person at a browser or a              second factor, and dataward polls unattended: give it a key pair              (private_key_file) or an OAuth access token (token_env)",
            line("authenticator")
        ))),
    }
}

/// A dbt-duckdb target's database file. Only a local file can be watched: `:memory:`
/// (dbt-duckdb's default when `path` is missing) is gone when dbt exits, and a
/// MotherDuck or other URL is not a file DuckDB's library opens here.
fn duckdb(output: &Yaml, file: &str, project_dir: &Path) -> Result<Duckdb> {
    let Some(value) = output.get("path") else {
        bail!(
            "{file}: line {}: this duckdb target has no `path`, so dbt builds in an in-memory \
             database that is gone when dbt exits: nothing to watch. Set `path` to a database \
             file and run dbt again",
            output.line
        );
    };
    let path = text_value(value, "path", file)?;
    let path_env = value.text().and_then(env_var_name);
    let line = value.line;
    if path.trim() == crate::warehouse::duckdb::MEMORY {
        bail!(
            "{file}: line {line}: path is \":memory:\": dbt builds in an in-memory database that \
             is gone when dbt exits, so there is nothing to watch. Set `path` to a database file \
             and run dbt again"
        );
    }
    if path.trim().is_empty() {
        bail!("{file}: line {line}: path is empty; name the database file dbt builds in");
    }
    if path.contains("://") || path.to_ascii_lowercase().starts_with("md:") {
        bail!(
            "{file}: line {line}: path {path:?} is not a local file (MotherDuck, DuckLake or a \
             URL): dataward opens DuckDB database files on this machine only"
        );
    }
    let name = Path::new(&path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    // DuckDB names the catalog after the first non-empty dot-separated part of the
    // file's name, and dbt-duckdb's manifest uses that name.
    let database = name
        .trim_start_matches('.')
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string();
    let resolved = project_dir.join(&path);
    if !resolved.is_file() {
        bail!(
            "{file}: line {line}: the database file {} (path {path:?}{}) is not there: run \
             `dbt build` in {} first, so there are tables to watch",
            resolved.display(),
            if Path::new(&path).is_relative() {
                ", from the project folder, as dbt opens it"
            } else {
                ""
            },
            project_dir.display()
        );
    }
    Ok(Duckdb {
        path: resolved,
        path_env,
        database,
    })
}

/// Key names whose values are secrets: left out of anything written.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["pass", "secret", "token", "key", "credential", "auth"]
        .iter()
        .any(|word| key.contains(word))
}

/// An unsupported target's settings as written, secrets replaced by a note.
fn unsupported_settings(output: &Yaml) -> Vec<(String, String)> {
    output
        .keys()
        .into_iter()
        .filter(|key| *key != "type")
        .filter_map(|key| {
            let value = output.get(key)?;
            let shown = if is_secret_key(key) {
                "(not copied: a secret)".to_string()
            } else {
                match value.text() {
                    Some(text) => text.to_string(),
                    None => format!("({})", value.describe()),
                }
            };
            Some((key.to_string(), shown))
        })
        .collect()
}

/// The variable a `{{ env_var('NAME') }}` value reads, if the value is just that.
fn env_var_name(text: &str) -> Option<String> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    let call = EnvVar::parse(inner.trim()).ok()?;
    Some(call.name)
}

/// `env_var('NAME', 'default')`, possibly followed by filters (`| int`).
struct EnvVar {
    name: String,
    default: Option<String>,
}

impl EnvVar {
    fn parse(expression: &str) -> Result<EnvVar, String> {
        let unsupported = || {
            format!(
                "{{{{ {expression} }}}}: dataward reads only {{{{ env_var('NAME') }}}} and {{{{ env_var('NAME', 'default') }}}} here"
            )
        };
        let call = expression.split('|').next().unwrap_or("").trim();
        let args = call
            .strip_prefix("env_var")
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix('('))
            .and_then(|rest| rest.trim_end().strip_suffix(')'))
            .ok_or_else(unsupported)?;
        let mut parts = args.splitn(2, ',').map(str::trim);
        let unquote = |text: &str| -> Option<String> {
            let quote = text.chars().next()?;
            if quote == '\'' || quote == '"' {
                text.strip_prefix(quote)?
                    .strip_suffix(quote)
                    .map(str::to_string)
            } else if !text.is_empty()
                && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
            {
                Some(text.to_string())
            } else {
                None
            }
        };
        // The name must be a quoted string; a bare word would be a Jinja variable.
        let name = parts
            .next()
            .filter(|text| text.starts_with(['\'', '"']))
            .and_then(unquote)
            .ok_or_else(unsupported)?;
        let default = match parts.next() {
            Some(text) => Some(unquote(text).ok_or_else(unsupported)?),
            None => None,
        };
        Ok(EnvVar { name, default })
    }
}

/// Renders the `{{ env_var(...) }}` calls in a value from the environment, as dbt
/// would; any other Jinja is refused rather than guessed at.
fn render(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| "an unclosed {{".to_string())?;
        let call = EnvVar::parse(after[..close].trim())?;
        match (std::env::var(&call.name), call.default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(default)) => out.push_str(&default),
            (Err(_), None) => {
                return Err(format!(
                    "env_var('{}') is not set in this environment (dbt would fail too); export it and run init again",
                    call.name
                ))
            }
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_calls_are_read_and_other_jinja_is_refused() {
        assert_eq!(render("plain").unwrap(), "plain");
        assert_eq!(
            render("{{ env_var('DATAWARD_TEST_SURELY_UNSET', 'dev') }}").unwrap(),
            "dev"
        );
        assert_eq!(
            render("{{ env_var(\"DATAWARD_TEST_SURELY_UNSET\", 5432) | int }}").unwrap(),
            "5432"
        );
        let err = render("{{ env_var('DATAWARD_TEST_SURELY_UNSET') }}").unwrap_err();
        assert!(err.contains("is not set"), "{err}");
        let err = render("{{ var('schema') }}").unwrap_err();
        assert!(err.contains("reads only"), "{err}");
        assert_eq!(
            env_var_name("{{ env_var('DBT_ENV_SECRET_PG') }}").as_deref(),
            Some("DBT_ENV_SECRET_PG")
        );
        assert_eq!(env_var_name("hunter2"), None);
    }

    #[test]
    fn a_snowflake_login_is_where_its_secret_is_never_the_secret() {
        let login = |extra: &str| {
            let doc = Yaml::parse(
                &format!("type: snowflake\naccount: a\nuser: u\ndatabase: d\n{extra}"),
                "p.yml",
            )
            .unwrap();
            snowflake_login(&doc, "p.yml", Path::new("/project")).unwrap()
        };
        assert_eq!(
            login("password: \"{{ env_var('SF_PASSWORD') }}\"\n"),
            SnowflakeLogin::Password(Password::Env("SF_PASSWORD".into()))
        );
        assert_eq!(
            login("password: hunter2\n"),
            SnowflakeLogin::Password(Password::InFile(5))
        );
        assert_eq!(
            login("authenticator: oauth\ntoken: \"{{ env_var('SF_TOKEN') }}\"\n"),
            SnowflakeLogin::Token(Password::Env("SF_TOKEN".into()))
        );
        assert_eq!(
            login("private_key_path: keys/dw.p8\npassword: hunter2\n"),
            SnowflakeLogin::KeyFile {
                path: PathBuf::from("/project/keys/dw.p8"),
                path_env: None,
                passphrase: Password::None,
            }
        );
        assert_eq!(
            login(
                "private_key_path: /k.p8\nprivate_key_passphrase: \"{{ env_var('SF_PASS') }}\"\n"
            ),
            SnowflakeLogin::KeyFile {
                path: PathBuf::from("/k.p8"),
                path_env: None,
                passphrase: Password::Env("SF_PASS".into()),
            }
        );
        assert_eq!(
            login("private_key: \"-----BEGIN PRIVATE KEY-----\"\nprivate_key_passphrase: pass\n"),
            SnowflakeLogin::KeyInline {
                key: Password::InFile(5),
                passphrase: Password::InFile(6),
            }
        );
        for cannot in [
            "authenticator: externalbrowser\n",
            "authenticator: oauth\ntoken: t\noauth_client_id: c\noauth_client_secret: s\n",
            "",
        ] {
            assert!(
                matches!(login(cannot), SnowflakeLogin::Cannot(_)),
                "{cannot}: {:?}",
                login(cannot)
            );
        }
    }

    #[test]
    fn secrets_of_other_adapters_are_not_copied() {
        let doc = Yaml::parse(
            "type: snowflake\naccount: ab123\nuser: me\npassword: hunter2\nprivate_key_path: /k\nwarehouse: wh\n",
            "p.yml",
        )
        .unwrap();
        let settings = unsupported_settings(&doc);
        let text = format!("{settings:?}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("/k"), "{text}");
        assert!(text.contains("ab123"), "{text}");
    }
}
