//! The recommendation: the tuned strategy with the chosen values, as a ready `[[strategies]]`
//! block.

use super::Tuner;
use super::spec::TuneSpec;
use crate::experiment::merged_strategy;
use crate::interop::block::block;
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

/// The recommended strategy as a `[[strategies]]` block: `name`, `preset`, single values,
/// then tables inline.
pub fn strategy_block(t: &Tuner, c: usize) -> String {
    let values: Vec<Value> = t.levels_of(c).iter().map(|l| l.value.clone()).collect();
    block("[[strategies]]", &t.spec.strategy_table(&values))
}
