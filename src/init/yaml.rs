//! Just enough YAML for `dbt_project.yml` and `profiles.yml`: a tree of maps, lists and
//! scalars where every value knows its line, so an error can say `profiles.yml: line 7`.
//!
//! Scalars stay text (`port: 5432` is "5432"); the caller says what it wants of each.
//! Anchors and aliases are followed, and a map's `<<` merge key (which profiles use to
//! share one output's settings between targets) is read when a key is not found.

use std::collections::HashMap;

use anyhow::{anyhow, Result};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One value and the line it starts on (1-based).
#[derive(Debug, Clone, PartialEq)]
pub struct Yaml {
    pub line: usize,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar as written; `quoted` when it was in quotes (so `"null"` is text).
    Scalar {
        text: String,
        quoted: bool,
    },
    Map(Vec<(String, Yaml)>),
    List(Vec<Yaml>),
}

impl Yaml {
    /// Parses the first document of `text`; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Yaml> {
        let mut builder = Builder::default();
        let mut parser = Parser::new_from_str(text);
        parser
            .load(&mut builder, false)
            .map_err(|e| anyhow!("{file}: line {}: {}", e.marker().line(), e.info()))?;
        if let Some((line, problem)) = builder.error {
            return Err(anyhow!("{file}: line {line}: {problem}"));
        }
        Ok(builder.root.unwrap_or(Yaml {
            line: 1,
            value: Value::Map(Vec::new()),
        }))
    }

    /// The value under `key`, also through a `<<` merge; `None` when absent or null.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        let Value::Map(entries) = &self.value else {
            return None;
        };
        if let Some((_, value)) = entries.iter().find(|(k, _)| k == key) {
            return (!value.is_null()).then_some(value);
        }
        let merged = entries.iter().find(|(k, _)| k == "<<").map(|(_, v)| v)?;
        match &merged.value {
            Value::Map(_) => merged.get(key),
            Value::List(items) => items.iter().find_map(|item| item.get(key)),
            Value::Scalar { .. } => None,
        }
    }

    /// The keys of a map, merged ones after its own, each once.
    pub fn keys(&self) -> Vec<&str> {
        let Value::Map(entries) = &self.value else {
            return Vec::new();
        };
        let mut keys: Vec<&str> = Vec::new();
        for (key, value) in entries {
            if key == "<<" {
                let merged: Vec<&Yaml> = match &value.value {
                    Value::List(items) => items.iter().collect(),
                    _ => vec![value],
                };
                for item in merged {
                    for key in item.keys() {
                        if !keys.contains(&key) {
                            keys.push(key);
                        }
                    }
                }
            } else if !keys.contains(&key.as_str()) {
                keys.push(key);
            }
        }
        keys
    }

    /// A scalar's text; `None` for a map or a list.
    pub fn text(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    pub fn is_map(&self) -> bool {
        matches!(self.value, Value::Map(_))
    }

    /// `~`, `null`, or nothing at all after the colon.
    pub fn is_null(&self) -> bool {
        match &self.value {
            Value::Scalar {
                text,
                quoted: false,
            } => matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"),
            _ => false,
        }
    }

    /// What the value is, for an error that expected something else.
    pub fn describe(&self) -> &'static str {
        match &self.value {
            Value::Scalar { .. } => "a single value",
            Value::Map(_) => "a mapping",
            Value::List(_) => "a list",
        }
    }
}

/// Builds the tree from the parser's events.
#[derive(Default)]
struct Builder {
    /// Open maps and lists, each with its anchor and, for maps, the key waiting for
    /// its value.
    stack: Vec<(Yaml, usize, Option<String>)>,
    anchors: HashMap<usize, Yaml>,
    root: Option<Yaml>,
    /// The first problem found: (line, what).
    error: Option<(usize, String)>,
    /// Set once the first document is complete: later ones are ignored.
    done: bool,
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.done || self.error.is_some() {
            return;
        }
        let line = mark.line();
        match event {
            Event::MappingStart(anchor, _) => {
                let map = Yaml {
                    line,
                    value: Value::Map(Vec::new()),
                };
                self.stack.push((map, anchor, None));
            }
            Event::SequenceStart(anchor, _) => {
                let list = Yaml {
                    line,
                    value: Value::List(Vec::new()),
                };
                self.stack.push((list, anchor, None));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some((node, anchor, _)) = self.stack.pop() {
                    self.complete(node, anchor);
                }
            }
            Event::Scalar(text, style, anchor, _) => {
                let quoted = style != TScalarStyle::Plain;
                let node = Yaml {
                    line,
                    value: Value::Scalar { text, quoted },
                };
                self.complete(node, anchor);
            }
            Event::Alias(anchor) => match self.anchors.get(&anchor).cloned() {
                Some(mut node) => {
                    node.line = line;
                    self.complete(node, 0);
                }
                None => self.error = Some((line, "an alias to no anchor".to_string())),
            },
            Event::DocumentEnd => self.done = self.root.is_some(),
            _ => {}
        }
    }
}

impl Builder {
    /// A finished value goes into the open map or list, or becomes the document.
    fn complete(&mut self, node: Yaml, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let Some((parent, _, pending_key)) = self.stack.last_mut() else {
            self.root = Some(node);
            return;
        };
        match &mut parent.value {
            Value::List(items) => items.push(node),
            Value::Map(entries) => match pending_key.take() {
                None => match node.value {
                    Value::Scalar { text, .. } => *pending_key = Some(text),
                    _ => self.error = Some((node.line, "a key that is not a single value".into())),
                },
                Some(key) => {
                    if key != "<<" && entries.iter().any(|(k, _)| *k == key) {
                        self.error = Some((node.line, format!("{key:?} is given twice")));
                        return;
                    }
                    entries.push((key, node));
                }
            },
            Value::Scalar { .. } => unreachable!("only maps and lists are stacked"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_lines_and_merges_are_followed() {
        let text = "\
shop:
  target: dev
  outputs:
    base: &base
      type: postgres
      port: 5432
    dev:
      <<: *base
      schema: \"null\"
      password:
";
        let doc = Yaml::parse(text, "profiles.yml").unwrap();
        let dev = doc
            .get("shop")
            .unwrap()
            .get("outputs")
            .unwrap()
            .get("dev")
            .unwrap();
        assert_eq!(dev.get("type").unwrap().text(), Some("postgres"));
        // A merged value is reported where it is written.
        assert_eq!(dev.get("port").unwrap().line, 6);
        assert_eq!(dev.get("schema").unwrap().text(), Some("null"));
        assert!(dev.get("password").is_none());
        assert_eq!(dev.keys(), ["type", "port", "schema", "password"]);
        assert_eq!(doc.get("shop").unwrap().get("target").unwrap().line, 2);
    }

    #[test]
    fn bad_yaml_names_the_file_and_line() {
        let err = Yaml::parse("a: 1\nb: [1, 2\n", "dbt_project.yml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("dbt_project.yml: line "), "{err}");
        let err = Yaml::parse("a: 1\nb: 2\na: 3\n", "p.yml")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "p.yml: line 3: \"a\" is given twice");
    }

    #[test]
    fn an_empty_file_is_an_empty_map() {
        let doc = Yaml::parse("", "p.yml").unwrap();
        assert!(doc.is_map());
        assert!(doc.get("x").is_none());
    }
}
