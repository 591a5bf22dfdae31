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
    /// The `[client]` keys (dotted) whose `[client]` value this strategy does not use, each
    /// with what replaced or removed it last: its preset, or its own table
    /// ([`Origin::Preset`] or [`Origin::Strategy`]). In `[client]`'s key order.
    pub client_unused: Vec<(String, Origin)>,
    /// Every dotted key `[client]` sets.
    pub client_keys: Vec<String>,
}

/// The origin of every leaf key during a merge (see `decode::merge`).
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    origins: BTreeMap<String, Origin>,
    /// Keys that are gone (a table of another kind replaced theirs), by what removed them.
    removed: BTreeMap<String, Origin>,
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
            self.origins.remove(&k);
            self.removed.insert(k, from.clone());
        }
        let mut leaves = Vec::new();
        leaves_of(path, value, &mut leaves);
        for (k, _) in leaves {
            self.removed.remove(&k);
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
        // Each `[client]` key ends where the last merge left it: kept (its origin is still
        // `[client]`), replaced by the preset or the strategy, or removed by one of them.
        let client_unused = client_keys
            .iter()
            .filter_map(|k| {
                let by = self.origins.get(k).or_else(|| self.removed.get(k))?;
                matches!(by, Origin::Preset(_) | Origin::Strategy).then(|| (k.clone(), by.clone()))
            })
            .collect();
        Sources {
            strategy: name.to_owned(),
            preset: preset.map(str::to_owned),
            keys,
            client_unused,
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

/// A `[client]` key that no strategy uses, because presets replace or remove it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowedKey {
    /// Dotted, inside `[client]`.
    pub key: String,
    /// The presets whose value wins, in strategy order, each once.
    pub presets: Vec<String>,
    /// The strategies that set the key themselves (their own value wins over `[client]`'s
    /// and over their preset's: not a surprise, so not counted as shadowed).
    pub set_by_strategies: Vec<String>,
}

/// The `[client]` keys that presets shadow so that no strategy uses `[client]`'s value: every
/// strategy either has the key replaced or removed by its preset, or sets the key itself, and
/// at least one strategy's preset is what wins. A key that every strategy sets itself is not
/// one (the file says what runs); one that some strategy takes from `[client]` is used. Each
/// key once, in file order.
pub fn shadowed_client_keys(strategies: &[Sources]) -> Vec<ShadowedKey> {
    let Some(first) = strategies.first() else { return Vec::new() };
    let by = |s: &Sources, k: &str| s.client_unused.iter().find(|(u, _)| u == k).map(|(_, o)| o.clone());
    first
        .client_keys
        .iter()
        .filter(|k| strategies.iter().all(|s| by(s, k).is_some()))
        .filter_map(|k| {
            let mut presets: Vec<String> = Vec::new();
            let mut set_by_strategies = Vec::new();
            for s in strategies {
                match by(s, k) {
                    Some(Origin::Preset(p)) if !presets.contains(&p) => presets.push(p),
                    Some(Origin::Strategy) => set_by_strategies.push(s.strategy.clone()),
                    _ => {}
                }
            }
            (!presets.is_empty()).then(|| ShadowedKey { key: k.clone(), presets, set_by_strategies })
        })
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
        for (gone, by) in s.client_unused.iter().filter(|(g, _)| !s.keys.iter().any(|k| &k.key == g)) {
            let whose = if matches!(by, Origin::Strategy) { "the strategy's" } else { "the preset's" };
            out.push_str(&format!(
                "  ({gone}: set in [client], dropped because {whose} table has another kind)\n"
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
        // A strategy that sets the key itself does not use [client]'s value either, but is not
        // shadowed: the warning fires while some preset wins somewhere and no strategy takes
        // [client]'s value, and names the strategies that set it themselves.
        let messages = |set: &[(&str, &str)]| {
            let overrides = Overrides {
                set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                ..Default::default()
            };
            let exp = load_str(FILE, "p.toml", &overrides).unwrap();
            warnings(&exp).into_iter().filter(|w| w.message.contains("never used")).collect::<Vec<_>>()
        };
        let w = messages(&[("strategies.own.max_attempts", "2")]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].key, "client.max_attempts");
        assert!(
            w[0].message.starts_with(
                "the presets (aws-standard) set it and the other strategies (own) set it themselves, so [client]'s value is never used"
            ),
            "{}",
            w[0].message
        );
        // The same with the preset on the other side: aws sets its own value over its preset's.
        let w = messages(&[("strategies.aws.max_attempts", "2"), ("strategies.own.preset", "grpc")]);
        assert!(
            w.len() == 1
                && w[0].message.starts_with("the presets (grpc) set it and the other strategies (aws)"),
            "{w:?}"
        );
        // Every strategy sets it itself (over its preset): the file says what runs, no warning,
        // although each has a preset that sets it too.
        assert!(
            shadowed(&[
                ("strategies.aws.max_attempts", "2"),
                ("strategies.own.preset", "grpc"),
                ("strategies.own.max_attempts", "3")
            ])
            .is_empty()
        );
        // Every preset shadows it: the presets named, each once.
        let w = messages(&[("strategies.own.preset", "aws-standard")]);
        assert!(
            w.len() == 1 && w[0].message.starts_with("every strategy's preset (aws-standard) sets it"),
            "{w:?}"
        );
    }

    #[test]
    fn a_client_key_a_strategy_drops_is_said_to_be_dropped_by_the_strategy() {
        // [client]'s exponential base is gone where a strategy's backoff has another kind.
        let text = FILE.replace(
            "timeout = \"1s\"",
            "timeout = \"1s\"\nbackoff = { kind = \"exponential\", base = \"10ms\" }",
        );
        let exp = load_str(&text, "p.toml", &Overrides::default()).unwrap();
        let own = &exp.points[0].sources[1];
        assert!(
            own.client_unused.contains(&("backoff.base".into(), Origin::Strategy)),
            "{:?}",
            own.client_unused
        );
        assert!(
            !own.client_unused.iter().any(|(k, _)| k == "max_attempts"),
            "own uses [client]'s max_attempts"
        );
        let text = explain(&exp, Some("own"));
        assert!(
            text.contains(
                "(backoff.base: set in [client], dropped because the strategy's table has another kind)"
            ),
            "{text}"
        );
    }
}
