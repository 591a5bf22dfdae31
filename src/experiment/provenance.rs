//! Where each key of a resolved strategy came from: the strategy's own table, its preset,
//! `[client]`, or the schema's default. Recorded while the decoder merges them (the same
//! merge, so it cannot disagree with what is resolved), printed by `retrysim explain`, and read
//! by the warning about a `[client]` key that every strategy's preset shadows.

use super::Experiment;
use super::schema::{CLIENT, IfAbsent};
use std::collections::BTreeMap;
use toml::{Table, Value};

/// Where a value came from, in the order a strategy is resolved (a later one wins).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The schema's default (the key was set nowhere).
    Default,
    /// `[client]`.
    Client,
    /// The strategy's preset, by name.
    Preset(String),
    /// The strategy's own `[[strategies]]` entry.
    Strategy,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::Client => f.write_str("[client]"),
            Origin::Preset(p) => write!(f, "preset {p}"),
            Origin::Strategy => f.write_str("strategy"),
        }
    }
}

/// One key of a resolved strategy.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySource {
    /// Dotted, inside the strategy: `max_attempts`, `backoff.base`.
    pub key: String,
    /// As TOML (`3`, `"full-jitter"`), or what its absence means.
    pub value: String,
    pub origin: Origin,
    /// `[client]` set this key too, and the preset's value won.
    pub client_shadowed: bool,
}

/// Every key of one strategy, with its origin.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sources {
    pub strategy: String,
    pub preset: Option<String>,
    /// In the schema's key order, each table's keys after it.
    pub keys: Vec<KeySource>,
    /// The `[client]` keys (dotted) that this strategy's preset replaced or removed: their
    /// `[client]` value is not used by this strategy.
    pub shadowed_by_preset: Vec<String>,
    /// Every dotted key `[client]` sets.
    pub client_keys: Vec<String>,
}

/// The origin of every leaf key during a merge (see `decode::merge`).
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    origins: BTreeMap<String, Origin>,
    /// Client keys a preset replaced or removed.
    shadowed: Vec<String>,
    pub(crate) from: Option<Origin>,
}

impl Tracker {
    /// Keys merged from now on come from `from`.
    pub(crate) fn new(from: Origin) -> Tracker {
        Tracker { from: Some(from), ..Default::default() }
    }

    /// `path` (a key or a whole table) is now `value`, from `self.from`: whatever was at or
    /// under it is gone.
    pub(crate) fn replaced(&mut self, path: &str, value: &Value) {
        let from = self.from.clone().unwrap_or(Origin::Default);
        let inside = |k: &str| k == path || k.strip_prefix(path).is_some_and(|r| r.starts_with('.'));
        let gone: Vec<String> = self.origins.keys().filter(|k| inside(k)).cloned().collect();
        for k in gone {
            if let Some(Origin::Client) = self.origins.remove(&k)
                && matches!(from, Origin::Preset(_))
                && !self.shadowed.contains(&k)
            {
                self.shadowed.push(k);
            }
        }
        let mut leaves = Vec::new();
        leaves_of(path, value, &mut leaves);
        for (k, _) in leaves {
            self.origins.insert(k, from.clone());
        }
    }

    /// The sources of the checked, default-filled `merged` table of strategy `name`.
    pub(crate) fn finish(self, name: &str, preset: Option<&str>, client: &Table, merged: &Value) -> Sources {
        let mut client_keys = Vec::new();
        leaves_of("", &Value::Table(client.clone()), &mut client_keys);
        let client_keys: Vec<String> = client_keys.into_iter().map(|(k, _)| k).collect();
        let mut keys = Vec::new();
        let table = merged.as_table();
        for field in CLIENT.fields {
            match table.and_then(|t| t.get(field.key)) {
                Some(v) => {
                    let mut leaves = Vec::new();
                    leaves_of(field.key, v, &mut leaves);
                    for (key, value) in leaves {
                        let origin = self.origins.get(&key).cloned().unwrap_or(Origin::Default);
                        let client_shadowed =
                            matches!(origin, Origin::Preset(_)) && client_keys.contains(&key);
                        keys.push(KeySource { key, value, origin, client_shadowed });
                    }
                }
                None => {
                    let value = match &field.default {
                        IfAbsent::Absent(means) => format!("not set ({means})"),
                        _ => "not set".to_owned(),
                    };
                    keys.push(KeySource {
                        key: field.key.to_owned(),
                        value,
                        origin: Origin::Default,
                        client_shadowed: false,
                    });
                }
            }
        }
        Sources {
            strategy: name.to_owned(),
            preset: preset.map(str::to_owned),
            keys,
            shadowed_by_preset: self.shadowed,
            client_keys,
        }
    }
}

/// The leaf keys of `value` at `path` (tables flattened; arrays and scalars are leaves).
fn leaves_of(path: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Table(t) if !t.is_empty() || path.is_empty() => {
            // A table's `kind` (or `dist`) first: it decides what the other keys mean.
            let tag = |k: &str| !(k == "kind" || k == "dist");
            let mut entries: Vec<(&String, &Value)> = t.iter().collect();
            entries.sort_by_key(|(k, _)| tag(k));
            for (k, v) in entries {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                leaves_of(&p, v, out);
            }
        }
        other => out.push((path.to_owned(), other.to_string())),
    }
}

/// The `[client]` keys that every strategy's preset shadows (each strategy names a preset that
/// replaces or removes the key): set, but never used. Each key once, in file order.
pub fn shadowed_client_keys(strategies: &[Sources]) -> Vec<String> {
    let Some(first) = strategies.first() else { return Vec::new() };
    first
        .client_keys
        .iter()
        .filter(|k| strategies.iter().all(|s| s.shadowed_by_preset.contains(k)))
        .cloned()
        .collect()
}

/// `retrysim explain`'s text: each strategy (or only `only`) of the first sweep point, every
/// key with its value and origin.
pub fn explain(exp: &Experiment, only: Option<&str>) -> String {
    let point = &exp.points[0];
    let mut out = String::new();
    if !exp.sweep_keys.is_empty() {
        let at: Vec<String> =
            exp.sweep_keys.iter().zip(&point.values).map(|(k, v)| format!("{k} = {v}")).collect();
        out.push_str(&format!(
            "# at the first sweep point ({}); a swept key's value changes from point to point\n\n",
            at.join(", ")
        ));
    }
    for s in point.sources.iter().filter(|s| only.is_none_or(|o| o == s.strategy)) {
        let preset = s.preset.as_ref().map(|p| format!(" (preset {p})")).unwrap_or_default();
        out.push_str(&format!("strategy \"{}\"{preset}\n", s.strategy));
        let kw = s.keys.iter().map(|k| k.key.len()).max().unwrap_or(3).max(3);
        let vw = s.keys.iter().map(|k| k.value.chars().count()).max().unwrap_or(5).clamp(5, 40);
        out.push_str(&format!("  {:kw$}  {:vw$}  from\n", "key", "value"));
        for k in &s.keys {
            let note =
                if k.client_shadowed { " ([client] sets it too; the preset's value wins)" } else { "" };
            out.push_str(&format!("  {:kw$}  {:vw$}  {}{note}\n", k.key, k.value, k.origin));
        }
        for gone in s.shadowed_by_preset.iter().filter(|g| !s.keys.iter().any(|k| &k.key == *g)) {
            out.push_str(&format!(
                "  ({gone}: set in [client], dropped because the preset's table has another kind)\n"
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Overrides, load_str, warnings};

    const FILE: &str = r#"
name = "p"
horizon = "10s"
[workload]
kind = "closed"
[server]
concurrency = 1
service_time = { dist = "constant", value = "1ms" }
[client]
max_attempts = 7
timeout = "1s"
[[strategies]]
name = "aws"
preset = "aws-standard"
[[strategies]]
name = "own"
backoff = { kind = "none" }
"#;

    fn key<'a>(s: &'a Sources, k: &str) -> &'a KeySource {
        s.keys.iter().find(|x| x.key == k).unwrap_or_else(|| panic!("no key {k}"))
    }

    #[test]
    fn a_preset_shadowing_client_is_named_with_a_note() {
        let exp = load_str(FILE, "p.toml", &Overrides::default()).unwrap();
        let aws = &exp.points[0].sources[0];
        let k = key(aws, "max_attempts");
        assert_eq!(
            (k.value.as_str(), &k.origin, k.client_shadowed),
            ("3", &Origin::Preset("aws-standard".into()), true)
        );
        assert_eq!(key(aws, "timeout").origin, Origin::Client);
        assert_eq!(key(aws, "retry_after_mode").origin, Origin::Default);
        let own = &exp.points[0].sources[1];
        assert_eq!(
            (key(own, "max_attempts").origin.clone(), key(own, "max_attempts").client_shadowed),
            (Origin::Client, false)
        );
        assert_eq!(key(own, "backoff.kind").origin, Origin::Strategy);
        // What is resolved is what the sources say.
        assert_eq!(exp.points[0].strategies[0].policy.max_attempts, Some(3));
        assert_eq!(exp.points[0].strategies[1].policy.max_attempts, Some(7));
        let text = explain(&exp, Some("aws"));
        let line = text.lines().find(|l| l.trim_start().starts_with("max_attempts")).unwrap();
        assert!(line.contains("preset aws-standard ([client] sets it too"), "{line}");
        assert!(!text.contains("strategy \"own\""));
    }

    #[test]
    fn a_client_key_every_preset_shadows_is_warned_about() {
        let shadowed = |set: &[(&str, &str)]| {
            let overrides = Overrides {
                set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                ..Default::default()
            };
            let exp = load_str(FILE, "p.toml", &overrides).unwrap();
            warnings(&exp)
                .into_iter()
                .filter(|w| w.message.contains("never used"))
                .map(|w| w.key)
                .collect::<Vec<_>>()
        };
        // One strategy without a preset uses [client]'s value: no warning.
        assert!(shadowed(&[]).is_empty());
        assert_eq!(shadowed(&[("strategies.own.preset", "grpc")]), ["client.max_attempts"]);
    }
}
