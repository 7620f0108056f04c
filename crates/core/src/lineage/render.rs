//! Rendering a model's dbt Jinja without dbt, from the manifest, so a version of a model
//! can be dry-run against the warehouse: `source()`, `ref()`, `var()`, `this`,
//! `config()`, comments, whitespace control and `{% if is_incremental() %}` blocks.
//! Anything else (a macro, a loop, `target`) is named with its line, never guessed at
//! and never sent to the warehouse as it is.
//!
//! A small renderer of our own rather than a Jinja engine: dbt's context (adapter
//! macros, `target`, `env_var`, packages) is what a real model leans on, and no engine
//! has it; what a manifest can answer is these few names.

use std::collections::BTreeMap;

use super::{aliased, quoted_name, relation_of, Lineage, LineageError, Node, NodeKind};

/// The project's variables as `var()` renders them: the text each one becomes.
pub type Vars = BTreeMap<String, String>;

/// A ref chain deeper than this is taken for a cycle.
const MAX_DEPTH: usize = 32;

struct Renderer<'a> {
    lineage: &'a Lineage,
    vars: &'a Vars,
    /// Replace a ref to a model by that model's own SQL, as a subquery.
    inline: bool,
}

/// Where a piece of Jinja sits, for an error people can find.
struct Tag<'t> {
    line: usize,
    text: &'t str,
}

impl Lineage {
    /// Renders `{{ ref('x') }}` and `{{ source('s', 't') }}` in a model's raw SQL to the
    /// relations they name (as `schema.table`), so a changed file can be run against the
    /// warehouse without dbt. Any other Jinja but the few [`render_model`] knows is an
    /// error naming it: we do not guess at macros.
    ///
    /// [`render_model`]: Self::render_model
    pub fn render(&self, raw: &str) -> Result<String, LineageError> {
        let vars = Vars::new();
        Renderer {
            lineage: self,
            vars: &vars,
            inline: false,
        }
        .render(raw, None, 0)
    }

    /// Like [`render`](Self::render), but a ref to a model is replaced by that model's
    /// own SQL, rendered the same way, as a subquery. The result reads only sources and
    /// seeds: it answers "would this model build on the data that has landed now?",
    /// which a query over yesterday's built tables cannot.
    pub fn render_inline(&self, raw: &str) -> Result<String, LineageError> {
        let vars = Vars::new();
        Renderer {
            lineage: self,
            vars: &vars,
            inline: true,
        }
        .render(raw, None, 0)
    }

    /// A version of the model `unique_id`'s SQL rendered as dbt's next run would read
    /// it, models it refs inlined ([`render_inline`](Self::render_inline)): `{{ this }}`
    /// is the model's own relation, `var()` takes `vars` then the call's default,
    /// `config()` renders to nothing, and `is_incremental()` is true for the model
    /// itself when it is incremental (its next run is) and false for the models inlined
    /// into it (they are read whole).
    pub fn render_model(
        &self,
        unique_id: &str,
        raw: &str,
        vars: &Vars,
    ) -> Result<String, LineageError> {
        let node = self
            .index_of(unique_id)
            .map(|index| self.node(index))
            .ok_or_else(|| LineageError::NotFound {
                name: unique_id.to_string(),
            })?;
        Renderer {
            lineage: self,
            vars,
            inline: true,
        }
        .render(raw, Some(node), 0)
    }
}

impl Renderer<'_> {
    /// `this` is the model whose SQL `raw` is, when known.
    fn render(&self, raw: &str, this: Option<&Node>, depth: usize) -> Result<String, LineageError> {
        if depth > MAX_DEPTH {
            return Err(LineageError::NotFound {
                name: format!("a ref chain deeper than {MAX_DEPTH} models (a cycle?)"),
            });
        }
        let incremental =
            depth == 0 && this.is_some_and(|n| n.materialized.as_deref() == Some("incremental"));
        let mut out = String::with_capacity(raw.len());
        // Each open `{% if %}`: is its current branch the one rendered, has it had an
        // `{% else %}`.
        let mut blocks: Vec<(bool, bool)> = Vec::new();
        let emitting = |blocks: &[(bool, bool)]| blocks.iter().all(|(on, _)| *on);
        let mut trim_next = false;
        let mut at = 0;
        while let Some(found) = next_tag(&raw[at..]) {
            let open = at + found;
            let text = &raw[at..open];
            let text = if trim_next { text.trim_start() } else { text };
            let kind = raw.as_bytes()[open + 1];
            let closer = match kind {
                b'{' => "}}",
                b'%' => "%}",
                _ => "#}",
            };
            let line = raw[..open].matches('\n').count() + 1;
            let close = raw[open + 2..]
                .find(closer)
                .map(|c| open + 2 + c)
                .ok_or_else(|| LineageError::Unrendered {
                    within: None,
                    line,
                    jinja: raw[open..].lines().next().unwrap_or("").to_string(),
                    why: format!("it is never closed with {closer}"),
                })?;
            let tag = Tag {
                line,
                text: &raw[open..close + 2],
            };
            let mut inner = &raw[open + 2..close];
            let trim_before = inner.starts_with('-');
            if trim_before {
                inner = &inner[1..];
            }
            trim_next = inner.ends_with('-');
            if trim_next {
                inner = &inner[..inner.len() - 1];
            }
            let inner = inner.trim();
            if emitting(&blocks) {
                out.push_str(text);
                if trim_before {
                    out.truncate(out.trim_end().len());
                }
            }
            at = close + 2;
            match kind {
                b'#' => {}
                b'%' => self.statement(inner, &tag, &mut blocks, incremental)?,
                _ if !emitting(&blocks) => {}
                _ => {
                    let rendered = self.expression(inner, &tag, this, depth)?;
                    out.push_str(&rendered.text);
                    // A subquery in FROM needs a name where the model gave it none.
                    if let Some(name) = rendered.inlined {
                        if !aliased(&raw[at..]) {
                            out.push_str(&format!(" as {}", quoted_name(&name)));
                        }
                    }
                }
            }
        }
        if let Some(line) = blocks.last().map(|_| raw.matches('\n').count() + 1) {
            return Err(LineageError::Unrendered {
                within: None,
                line,
                jinja: "{% if %}".to_string(),
                why: "it has no {% endif %}".to_string(),
            });
        }
        if emitting(&blocks) {
            let rest = &raw[at..];
            out.push_str(if trim_next { rest.trim_start() } else { rest });
        }
        Ok(out)
    }

    /// `{% if is_incremental() %}`, `{% if not is_incremental() %}`, `{% else %}`,
    /// `{% endif %}`; every other statement is named.
    fn statement(
        &self,
        inner: &str,
        tag: &Tag,
        blocks: &mut Vec<(bool, bool)>,
        incremental: bool,
    ) -> Result<(), LineageError> {
        let words: Vec<&str> = inner.split_whitespace().collect();
        match words.as_slice() {
            ["if", "is_incremental()"] => blocks.push((incremental, false)),
            ["if", "not", "is_incremental()"] => blocks.push((!incremental, false)),
            ["else"] => match blocks.last_mut() {
                Some((on, seen_else @ false)) => {
                    *on = !*on;
                    *seen_else = true;
                }
                _ => return Err(unrendered(tag, "it has no {% if %} of its own before it")),
            },
            ["endif"] => {
                if blocks.pop().is_none() {
                    return Err(unrendered(tag, "it closes no {% if %}"));
                }
            }
            _ => {
                return Err(unrendered(
                    tag,
                    "dataward renders only {% if is_incremental() %} blocks without dbt",
                ))
            }
        }
        Ok(())
    }

    fn expression(
        &self,
        inner: &str,
        tag: &Tag,
        this: Option<&Node>,
        depth: usize,
    ) -> Result<Rendered, LineageError> {
        let plain = |text: String| {
            Ok(Rendered {
                text,
                inlined: None,
            })
        };
        if inner == "this" {
            let node = this.ok_or_else(|| unrendered(tag, "no model is being rendered"))?;
            return plain(relation_of(node, tag.text)?);
        }
        let (function, args) = call(inner).ok_or_else(|| unrendered(tag, UNKNOWN))?;
        let positional: Vec<&str> = args
            .iter()
            .filter(|a| a.key.is_none())
            .map(|a| a.value.as_str())
            .collect();
        match (function, positional.as_slice()) {
            // Sets how dbt builds the model.
            ("config", _) => plain(String::new()),
            ("var", [name, default @ ..]) => match (self.vars.get(*name), default.first()) {
                // Rendered by dbt at run time; sent as it is, it would reach the warehouse.
                (Some(value), _) if next_tag(value).is_some() => Err(unrendered(
                    tag,
                    &format!("vars.{name} in dbt_project.yml is Jinja itself: {value}"),
                )),
                (Some(value), _) => plain(value.clone()),
                (None, Some(default)) => plain(default.to_string()),
                (None, None) => Err(unrendered(
                    tag,
                    &format!("dbt_project.yml sets no vars.{name} and the call gives no default"),
                )),
            },
            ("source", [source, table]) if args.len() == 2 => {
                let suffix = format!(".{source}.{table}");
                let node = self
                    .lineage
                    .graph
                    .node_weights()
                    .find(|n| n.kind == NodeKind::Source && n.unique_id.ends_with(&suffix))
                    .ok_or_else(|| unrendered(tag, "the manifest has no such source"))?;
                plain(relation_of(node, tag.text)?)
            }
            ("ref", [.., name]) if args.len() == positional.len() && positional.len() <= 2 => {
                let node = self
                    .lineage
                    .graph
                    .node_weights()
                    .find(|n| {
                        matches!(
                            n.kind,
                            NodeKind::Model | NodeKind::Seed | NodeKind::Snapshot
                        ) && n.name == *name
                    })
                    .ok_or_else(|| unrendered(tag, "the manifest has no such model"))?;
                match (&node.raw_sql, self.inline && node.kind == NodeKind::Model) {
                    (Some(sql), true) => Ok(Rendered {
                        text: format!(
                            "({})",
                            self.render(sql, Some(node), depth + 1)
                                .map_err(|e| within(e, &node.name))?
                        ),
                        inlined: Some(node.name.clone()),
                    }),
                    _ => plain(relation_of(node, tag.text)?),
                }
            }
            _ => Err(unrendered(tag, UNKNOWN)),
        }
    }
}

const UNKNOWN: &str = "dataward renders only source(), ref(), var(), this and config() without dbt";

struct Rendered {
    text: String,
    /// The model whose SQL was put in as a subquery.
    inlined: Option<String>,
}

fn unrendered(tag: &Tag, why: &str) -> LineageError {
    // On one line and short, however the model spreads it out.
    const LONGEST: usize = 80;
    let mut jinja = tag.text.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((at, _)) = jinja.char_indices().nth(LONGEST) {
        jinja.truncate(at);
        jinja.push('…');
    }
    LineageError::Unrendered {
        within: None,
        line: tag.line,
        jinja,
        why: why.to_string(),
    }
}

/// An error in a model read through `ref()` says which model it is in (the innermost).
fn within(e: LineageError, model: &str) -> LineageError {
    match e {
        LineageError::Unrendered {
            within: None,
            line,
            jinja,
            why,
        } => LineageError::Unrendered {
            within: Some(model.to_string()),
            line,
            jinja,
            why,
        },
        other => other,
    }
}

/// Where the next `{{`, `{%` or `{#` starts.
fn next_tag(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(1))
        .find(|&i| bytes[i] == b'{' && matches!(bytes[i + 1], b'{' | b'%' | b'#'))
}

/// One argument of a call: `'x'`, `100`, `key='x'`, its value unquoted.
struct Arg {
    key: Option<String>,
    value: String,
}

/// `name(args)` whose positional arguments are all literals (strings, numbers,
/// `true`/`false`, `none`); None for anything else. A keyword's value may be any
/// expression (`config(tags=['a'])`): it is kept as written.
fn call(expression: &str) -> Option<(&str, Vec<Arg>)> {
    let (name, rest) = expression.split_once('(')?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let inside = rest.trim_end().strip_suffix(')')?;
    let mut args = Vec::new();
    for piece in top_level_pieces(inside)? {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let (key, value) = match piece.split_once('=') {
            Some((key, value))
                if !value.starts_with('=')
                    && !key.trim().is_empty()
                    && key
                        .trim()
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                (Some(key.trim().to_string()), value.trim())
            }
            _ => (None, piece),
        };
        let literal = literal(value);
        let value = match (literal, &key) {
            (Some(text), _) => text,
            (None, Some(_)) => value.to_string(),
            (None, None) => return None,
        };
        args.push(Arg { key, value });
    }
    Some((name, args))
}

/// A Python literal as dbt prints it: a string unquoted, `True`, `100`.
fn literal(text: &str) -> Option<String> {
    let quote = text.chars().next()?;
    if matches!(quote, '\'' | '"') {
        let body = text.strip_prefix(quote)?.strip_suffix(quote)?;
        let mut out = String::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?),
                c if c == quote => return None,
                c => out.push(c),
            }
        }
        return Some(out);
    }
    Some(match text {
        "true" | "True" => "True".to_string(),
        "false" | "False" => "False".to_string(),
        "none" | "None" => "None".to_string(),
        number if number.parse::<f64>().is_ok() => number.to_string(),
        _ => return None,
    })
}

/// `text` cut at its commas outside quotes and brackets; None when a quote or bracket
/// is left open.
fn top_level_pieces(text: &str) -> Option<Vec<&str>> {
    let mut pieces = Vec::new();
    let (mut depth, mut quote, mut escaped, mut start) = (0usize, None, false, 0);
    for (i, c) in text.char_indices() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.checked_sub(1)?,
                ',' if depth == 0 => {
                    pieces.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    if quote.is_some() || depth != 0 {
        return None;
    }
    pieces.push(&text[start..]);
    Some(pieces)
}

/// dbt's compiled SQL of a model whose raw SQL is `raw`, with the lines `changed`
/// differs in changed the same way: a version of the model run as dbt compiled it,
/// where its Jinja cannot be rendered without dbt. None unless both have the same
/// number of lines and every line that differs is free of Jinja and found exactly once
/// in the compiled SQL. (Both compared as dbt reads files: ends trimmed, `\n` lines.)
pub fn compiled_with_change(compiled: &str, raw: &str, changed: &str) -> Option<String> {
    let read = |text: &str| text.trim().replace("\r\n", "\n");
    let (raw, changed) = (read(raw), read(changed));
    let (raw_lines, changed_lines): (Vec<&str>, Vec<&str>) =
        (raw.lines().collect(), changed.lines().collect());
    if raw_lines.len() != changed_lines.len() {
        return None;
    }
    let mut out: Vec<String> = compiled.lines().map(str::to_string).collect();
    for (before, after) in raw_lines.iter().zip(&changed_lines) {
        if before == after {
            continue;
        }
        if [before, after].iter().any(|l| next_tag(l).is_some()) {
            return None;
        }
        let mut found = out.iter().enumerate().filter(|(_, l)| l == before);
        let (at, _) = found.next()?;
        if found.next().is_some() {
            return None;
        }
        out[at] = after.to_string();
    }
    Some(out.join("\n"))
}

/// The variables a project's `dbt_project.yml` sets for `var()`: its top-level scalars,
/// and those under a key naming a project or package (dbt's scoped vars), the
/// project's own last so they win. Values as Python prints them (`True`, `100`).
pub fn project_vars(dbt_project_yml: &str) -> Vars {
    use yaml_rust2::{Yaml, YamlLoader};
    let mut vars = Vars::new();
    let Ok(docs) = YamlLoader::load_from_str(dbt_project_yml) else {
        return vars;
    };
    let Some(project) = docs.first() else {
        return vars;
    };
    let own_name = project["name"].as_str().unwrap_or_default();
    let scalar = |value: &Yaml| -> Option<String> {
        Some(match value {
            Yaml::String(s) | Yaml::Real(s) => s.clone(),
            Yaml::Integer(i) => i.to_string(),
            Yaml::Boolean(true) => "True".to_string(),
            Yaml::Boolean(false) => "False".to_string(),
            _ => return None,
        })
    };
    let Some(table) = project["vars"].as_hash() else {
        return vars;
    };
    let mut scoped = Vec::new();
    for (key, value) in table {
        let Some(key) = key.as_str() else { continue };
        match value.as_hash() {
            Some(inner) => scoped.push((key == own_name, inner)),
            None => {
                if let Some(text) = scalar(value) {
                    vars.insert(key.to_string(), text);
                }
            }
        }
    }
    scoped.sort_by_key(|(own, _)| *own);
    for (_, inner) in scoped {
        for (key, value) in inner {
            if let (Some(key), Some(text)) = (key.as_str(), scalar(value)) {
                vars.insert(key.to_string(), text);
            }
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source, a staging model reading it, an incremental model reading that.
    fn lineage() -> Lineage {
        let manifest = r#"{
          "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json", "adapter_type": "postgres"},
          "nodes": {
            "model.shop.stg_payments": {"resource_type": "model", "name": "stg_payments",
              "relation_name": "\"dw\".\"analytics\".\"stg_payments\"", "config": {"materialized": "table"},
              "raw_code": "{#- staging -#}\nselect id, amount / {{ var('cents', 100) }} as amount\nfrom {{ source('shop', 'payments') }}",
              "depends_on": {"nodes": ["source.shop.shop.payments"]}},
            "model.shop.orders": {"resource_type": "model", "name": "orders",
              "relation_name": "\"dw\".\"analytics\".\"orders\"", "config": {"materialized": "incremental"},
              "raw_code": "x",
              "depends_on": {"nodes": ["model.shop.stg_payments"]}}
          },
          "sources": {"source.shop.shop.payments": {"resource_type": "source", "name": "payments",
            "relation_name": "\"dw\".\"raw\".\"payments\""}}
        }"#;
        Lineage::from_json(manifest, "manifest.json").unwrap()
    }

    #[test]
    fn a_model_renders_as_its_next_run_reads_it() {
        let lineage = lineage();
        let vars = project_vars("name: shop\nvars:\n  cents: 1000\n");
        let raw = "{{ config(materialized='incremental', tags=['a', 'b']) }}\n\
                   select p.id, sum(p.amount) as total\n\
                   from {{ ref(\"stg_payments\") }} p\n\
                   {% if is_incremental() -%}\n\
                   where p.id > (select max(id) from {{ this }})\n\
                   {%- else %}\n\
                   where true\n\
                   {% endif %}\n\
                   group by 1\n";
        assert_eq!(
            lineage
                .render_model("model.shop.orders", raw, &vars)
                .unwrap(),
            "\nselect p.id, sum(p.amount) as total\n\
             from (select id, amount / 1000 as amount\nfrom \"raw\".\"payments\") p\n\
             where p.id > (select max(id) from \"analytics\".\"orders\")\n\
             group by 1\n"
        );
        // Without the variable, the call's default; a table model is not incremental.
        let stg = lineage.node(lineage.resolve("stg_payments").unwrap());
        assert_eq!(
            lineage
                .render_model(
                    "model.shop.stg_payments",
                    &format!(
                        "{{% if not is_incremental() %}}{}{{% endif %}}",
                        stg.raw_sql.as_deref().unwrap()
                    ),
                    &Vars::new()
                )
                .unwrap(),
            "select id, amount / 100 as amount\nfrom \"raw\".\"payments\""
        );
    }

    #[test]
    fn jinja_it_cannot_render_is_named_with_its_line() {
        let lineage = lineage();
        let vars = Vars::new();
        for (raw, line, jinja, why) in [
            (
                "select\n  {{ cents_to_dollars('amount') }} as amount\nfrom t",
                2,
                "{{ cents_to_dollars('amount') }}",
                "dataward renders only source(), ref(), var(), this and config() without dbt",
            ),
            (
                "select 1\n{% for c in cols %}, {{ c }}{% endfor %}",
                2,
                "{% for c in cols %}",
                "dataward renders only {% if is_incremental() %} blocks without dbt",
            ),
            (
                "select * from {{ target.schema }}.t",
                1,
                "{{ target.schema }}",
                "dataward renders only source(), ref(), var(), this and config() without dbt",
            ),
            (
                "select {{ var('missing') }}",
                1,
                "{{ var('missing') }}",
                "dbt_project.yml sets no vars.missing and the call gives no default",
            ),
            (
                "select * from {{ source('shop', 'nope') }}",
                1,
                "{{ source('shop', 'nope') }}",
                "the manifest has no such source",
            ),
            ("select {{ 1", 1, "{{ 1", "it is never closed with }}"),
            (
                "select\n  {{\n    union_connections(\n      connection_dictionary='hubspot_sources', single_source_name='hubspot', single_table_name='contact'\n    )\n  }}",
                2,
                "{{ union_connections( connection_dictionary='hubspot_sources', single_source_nam…",
                "dataward renders only source(), ref(), var(), this and config() without dbt",
            ),
        ] {
            match lineage.render_model("model.shop.orders", raw, &vars) {
                Err(LineageError::Unrendered {
                    within: None,
                    line: l,
                    jinja: j,
                    why: w,
                }) => assert_eq!((l, j.as_str(), w.as_str()), (line, jinja, why), "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
        let err = lineage
            .render_model("model.shop.orders", "select\n{{ f(x) }}", &vars)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 2: {{ f(x) }}: dataward renders only source(), ref(), var(), this and config() without dbt"
        );
        // In a model read through ref(), that model is named.
        let err = lineage
            .render_model(
                "model.shop.orders",
                "select * from {{ ref('stg_payments') }}",
                &Vars::new(),
            )
            .map(|_| ());
        assert_eq!(err, Ok(()));
        let broken = Lineage::from_json(
            r#"{"metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
                 "nodes": {"model.a.stg": {"resource_type": "model", "name": "stg",
                   "relation_name": "\"a\".\"stg\"", "raw_code": "select\n{{ dollars('x') }}"}},
                 "sources": {}}"#,
            "m.json",
        )
        .unwrap();
        assert_eq!(
            broken
                .render_inline("select * from {{ ref('stg') }}")
                .unwrap_err()
                .to_string(),
            "in stg, read through ref(), line 2: {{ dollars('x') }}: dataward renders only source(), ref(), var(), this and config() without dbt"
        );
    }

    #[test]
    fn compiled_sql_takes_a_change_line_for_line() {
        let raw = "select {{ cents('amount') }} as dollars,\n  amount / 100 as amount\nfrom {{ source('s', 't') }}\n";
        let compiled =
            "select amount / 100.0 as dollars,\n  amount / 100 as amount\nfrom \"raw\".\"t\"";
        let changed = raw.replace("  amount / 100 as", "  amount::numeric / 100 as");
        assert_eq!(
            compiled_with_change(compiled, raw, &changed).unwrap(),
            compiled.replace("  amount / 100 as", "  amount::numeric / 100 as")
        );
        assert_eq!(compiled_with_change(compiled, raw, raw).unwrap(), compiled);
        // A line with Jinja, a line added, a line found twice: no.
        let jinja = raw.replace("{{ cents('amount') }}", "{{ cents('amount', 4) }}");
        assert_eq!(compiled_with_change(compiled, raw, &jinja), None);
        assert_eq!(
            compiled_with_change(compiled, raw, &format!("{raw}where x\n")),
            None
        );
        let twice = "select a\nunion all\nselect a";
        assert_eq!(
            compiled_with_change(twice, twice, "select b\nunion all\nselect a"),
            None
        );
    }

    #[test]
    fn project_vars_are_read_global_then_scoped_to_the_project() {
        let vars = project_vars(
            "name: shop\nvars:\n  start: '2024-01-01'\n  flag: true\n  other_pkg:\n    start: '1999-01-01'\n    depth: 2\n  shop:\n    start: '2025-01-01'\n",
        );
        assert_eq!(vars.get("start").map(String::as_str), Some("2025-01-01"));
        assert_eq!(vars.get("flag").map(String::as_str), Some("True"));
        assert_eq!(vars.get("depth").map(String::as_str), Some("2"));
        // A value that is Jinja itself is named, never sent as it is.
        let vars = project_vars("name: shop\nvars:\n  schema: \"{{ env_var('S') }}\"\n");
        let err = lineage()
            .render_model(
                "model.shop.orders",
                "select * from {{ var('schema', 'x') }}.t",
                &vars,
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 1: {{ var('schema', 'x') }}: vars.schema in dbt_project.yml is Jinja itself: {{ env_var('S') }}"
        );
        assert!(project_vars("not: [yaml").is_empty());
    }
}
