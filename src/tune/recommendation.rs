//! The recommendation: the tuned strategy with the chosen values, as a ready `[[strategies]]`
//! block.

use super::Tuner;
use super::spec::TuneSpec;
use crate::experiment::merged_strategy;
use std::fmt::Write as _;
use toml::{Table, Value};

impl TuneSpec {
    /// The tuned strategy as a `[[strategies]]` table with `values` set: its own keys over
    /// `[client]`'s (or, when it starts from a preset, its own keys and the preset's name, since
    /// `[client]`'s keys would override the preset's).
    pub fn strategy_table(&self, values: &[Value]) -> Table {
        let own = self
            .base
            .get("strategies")
            .and_then(Value::as_array)
            .and_then(|s| s.get(self.strategy))
            .and_then(Value::as_table)
            .cloned()
            .unwrap_or_default();
        let mut block = Table::new();
        block.insert("name".to_owned(), Value::String(self.strategy_name.clone()));
        if let Some(preset) = own.get("preset") {
            block.insert("preset".to_owned(), preset.clone());
            for (k, v) in own.iter().filter(|(k, _)| *k != "name" && *k != "preset") {
                block.insert(k.clone(), v.clone());
            }
        } else if let Some(merged) = merged_strategy(&self.base, self.strategy) {
            block.extend(merged);
        }
        for (p, v) in self.params.iter().zip(values) {
            set_dotted(&mut block, &p.key, v.clone());
        }
        block
    }

    /// Whether the experiment's strategy starts from a preset (then `[client]`'s keys still
    /// apply to the block of [`TuneSpec::strategy_table`]).
    pub fn uses_preset(&self) -> bool {
        self.strategy_table(&[]).contains_key("preset")
    }
}

/// Writes `value` at the dotted `key` of `table`, creating tables on the way.
fn set_dotted(table: &mut Table, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            table.insert(key.to_owned(), value);
        }
        Some((head, rest)) => {
            let inner = table.entry(head.to_owned()).or_insert_with(|| Value::Table(Table::new()));
            if !inner.is_table() {
                *inner = Value::Table(Table::new());
            }
            if let Value::Table(t) = inner {
                set_dotted(t, rest, value);
            }
        }
    }
}

/// A TOML key, quoted when it is not bare.
fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_owned()
    } else {
        Value::String(k.to_owned()).to_string()
    }
}

/// A value on one line: tables inline, `kind` (or `dist`) first.
fn inline(v: &Value) -> String {
    match v {
        Value::Table(t) => {
            let mut keys: Vec<&String> = t.keys().collect();
            keys.sort_by_key(|k| (k.as_str() != "kind" && k.as_str() != "dist", k.as_str()));
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{} = {}", key(k), inline(&t[k.as_str()]))).collect();
            if parts.is_empty() { "{}".to_owned() } else { format!("{{ {} }}", parts.join(", ")) }
        }
        Value::Array(items) => format!("[{}]", items.iter().map(inline).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// The recommended strategy as a `[[strategies]]` block: `name`, `preset`, single values,
/// then tables inline.
pub fn strategy_block(t: &Tuner, c: usize) -> String {
    let values: Vec<Value> = t.levels_of(c).iter().map(|l| l.value.clone()).collect();
    let table = t.spec.strategy_table(&values);
    let mut keys: Vec<&String> = table.keys().collect();
    let rank = |k: &str, v: &Value| match (k, v) {
        ("name", _) => 0,
        ("preset", _) => 1,
        (_, Value::Table(_)) => 3,
        _ => 2,
    };
    keys.sort_by_key(|k| (rank(k, &table[k.as_str()]), k.as_str()));
    let mut out = String::from("[[strategies]]\n");
    for k in keys {
        let _ = writeln!(out, "{} = {}", key(k), inline(&table[k.as_str()]));
    }
    out
}
