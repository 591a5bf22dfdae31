//! `[tune] export`: the recommended strategy in production formats, written beside
//! recommendation.toml as `recommendation.<kind>.<ext>` (`recommendation.envoy.yaml`). The
//! strategy exported is the one that ran: `[client]`, its preset and import, and the tuned
//! values merged ([`crate::experiment::effective_strategy`]). `tune` has no `--lossy`: what a
//! format cannot express is dropped, and said in the file's comment and in the summary.

use super::Tuner;
use crate::experiment::effective_strategy;
use crate::interop::{self, Exported};
use toml::Value;

/// One exported recommendation.
pub struct ExportFile {
    /// `recommendation.<extension>`.
    pub file: String,
    pub kind: String,
    pub exported: Exported,
}

/// The recommendation in each format of `[tune] export`; empty when nothing is feasible.
/// `Err` says why a format could not write it (a retrysim bug: the candidate ran, so it is a
/// valid strategy).
pub fn exports(t: &Tuner) -> Result<Vec<ExportFile>, String> {
    let Some(c) = t.winner else { return Ok(Vec::new()) };
    if t.spec.export.is_empty() {
        return Ok(Vec::new());
    }
    let values: Vec<Value> = t.levels_of(c).iter().map(|l| l.value.clone()).collect();
    let mut tree = t.spec.base.clone();
    if let Some(Value::Array(strategies)) = tree.get_mut("strategies")
        && let Some(entry) = strategies.get_mut(t.spec.strategy)
    {
        *entry = Value::Table(t.spec.strategy_table(&values));
    }
    let strategy =
        effective_strategy(&tree, &t.spec.strategy_name, t.spec.origin()).map_err(|e| e.to_string())?;
    t.spec
        .export
        .iter()
        .map(|kind| {
            let format = interop::format(kind).map_err(|e| e.to_string())?;
            let exported = format.export(&strategy, true).map_err(|e| e.to_string())?;
            Ok(ExportFile {
                file: format!("recommendation.{}", format.extension()),
                kind: kind.clone(),
                exported,
            })
        })
        .collect()
}
