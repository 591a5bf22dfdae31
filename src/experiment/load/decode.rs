//! Tree -> [`ExperimentSpec`]: the tree is checked against the schema (which names every bad
//! key in full and fills the defaults), each strategy is merged over `[client]` and its preset
//! and checked again, then serde maps the finished tables onto the spec types.

use super::super::ConfigError;
use super::super::provenance::{Origin, Sources, Tracker};
use super::super::schema::check::{Checker, Fill, invalid, join};
use super::super::schema::{CLIENT, LAYER, ROOT};
use super::super::spec::{ExperimentSpec, PolicySpec, Strategy};
use super::paths::strategy_key;
use crate::experiment::presets;
use crate::policy::retry_on::DEFAULT_RETRY_STATUSES;
use crate::suggest::{closest, list};
use serde::Deserialize;
use toml::{Table, Value};

type R<T> = Result<T, ConfigError>;

/// Decodes a whole experiment tree (with `[sweep]` already taken out by the caller).
pub(super) fn experiment(tree: &Table, origin: &str) -> R<ExperimentSpec> {
    experiment_sourced(tree, origin).map(|(spec, _)| spec)
}

/// [`experiment`], with where each strategy's keys came from.
pub(super) fn experiment_sourced(tree: &Table, origin: &str) -> R<(ExperimentSpec, Vec<Sources>)> {
    let names = strategy_names(tree);
    let name_entry = |path: &str, i: usize, _: &Value| {
        if path == "strategies" { strategy_key(&names, i) } else { format!("{path}[{i}]") }
    };
    let mut root = Value::Table(tree.clone());
    let checker = Checker { origin, fill: Fill::Defaults, partials: Fill::Nothing, name_entry: &name_entry };
    checker.table("", &ROOT, &mut root)?;
    let Value::Table(mut table) = root else { unreachable!("checked as a table") };
    let client = take_table(&mut table, "client");
    let strategies = match table.remove("strategies") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    table.remove("sweep");
    let mut spec = ExperimentSpec::deserialize(Value::Table(table)).map_err(|e| internal(origin, e))?;
    let mut sources = Vec::with_capacity(strategies.len());
    for (i, raw) in strategies.iter().enumerate() {
        let (s, src) = strategy(origin, &client, raw, &strategy_key(&names, i), &name_entry)?;
        spec.strategies.push(s);
        sources.push(src);
    }
    Ok((spec, sources))
}

/// One strategy: `[client]`, then its preset, then its own keys, merged and checked complete.
fn strategy(
    origin: &str,
    client: &Table,
    raw: &Value,
    key: &str,
    name_entry: &dyn Fn(&str, usize, &Value) -> String,
) -> R<(Strategy, Sources)> {
    let Value::Table(raw) = raw else { unreachable!("checked as a table") };
    let mut own = raw.clone();
    let name = match own.remove("name") {
        Some(Value::String(name)) => name,
        _ => {
            return Err(ConfigError::MissingKey {
                origin: origin.to_owned(),
                key: format!("{key}.name"),
                help: Some("every strategy needs a name; it labels its rows and charts".to_owned()),
            });
        }
    };
    if own.contains_key("import") {
        return Err(invalid(
            origin,
            &format!("{key}.import"),
            "an import is read when the file is loaded, before [sweep]: it cannot be swept; sweep the strategy's own keys instead".to_owned(),
        ));
    }
    let preset = match own.remove("preset") {
        Some(Value::String(p)) => Some(p),
        _ => None,
    };
    let mut merged = Table::new();
    let mut tracker = Tracker::new(Origin::Client);
    merge_from(&mut merged, client, "", Some(&mut tracker));
    if let Some(p) = &preset {
        let found = find_preset(origin, &format!("{key}.preset"), p)?;
        tracker.from = Some(Origin::Preset(p.clone()));
        merge_from(&mut merged, &preset_table(found), "", Some(&mut tracker));
    }
    tracker.from = Some(Origin::Strategy);
    merge_from(&mut merged, &own, "", Some(&mut tracker));
    expand_layer_presets(origin, key, &mut merged)?;
    let mut merged = Value::Table(merged);
    let checker = Checker { origin, fill: Fill::Defaults, partials: Fill::Defaults, name_entry };
    checker.table(key, &CLIENT, &mut merged)?;
    let sources = tracker.finish(&name, preset.as_deref(), client, &merged);
    let policy = PolicySpec::deserialize(merged).map_err(|e| internal(origin, e))?;
    Ok((Strategy { name, preset, policy }, sources))
}

/// Strategy `index` of `tree` as the file defines it before defaults: `[client]`, then its
/// preset, then its own keys, merged as the decoder merges them (without `name` and
/// `preset`). `None` when there is no such strategy.
pub fn merged_strategy(tree: &Table, index: usize) -> Option<Table> {
    let own = tree.get("strategies")?.as_array()?.get(index)?.as_table()?;
    let mut merged = match tree.get("client") {
        Some(Value::Table(client)) => client.clone(),
        _ => Table::new(),
    };
    if let Some(p) = own.get("preset").and_then(Value::as_str).and_then(presets::find) {
        merge(&mut merged, &preset_table(p));
    }
    let mut own = own.clone();
    own.remove("name");
    own.remove("preset");
    merge(&mut merged, &own);
    Some(merged)
}

/// Each gateway layer with a `preset` (DESIGN §4.4): the preset's keys that a layer takes
/// (`LAYER`'s: attempts, timeout, `retry_on`, backoff, budget, breaker), then the layer's own.
/// A layer reads no Retry-After and knows no deadline, so a preset's keys for those are not
/// taken; its hop keys ([`presets::Preset::hop`]) are (`envoy` as a layer: 2 attempts, full
/// jitter 25 ms .. 250 ms, the 20 % / 3 retry budget, the 15 s route timeout, overflow answers
/// left unretried).
fn expand_layer_presets(origin: &str, key: &str, merged: &mut Table) -> R<()> {
    let Some(Value::Array(layers)) = merged.get_mut("layers") else { return Ok(()) };
    for (i, layer) in layers.iter_mut().enumerate() {
        let Value::Table(own) = layer else { continue };
        let Some(Value::String(name)) = own.remove("preset") else { continue };
        let found = find_preset(origin, &format!("{key}.layers[{i}].preset"), &name)?;
        let mut expanded: Table = preset_table(found)
            .into_iter()
            .chain(preset_hop_table(found))
            .filter(|(k, _)| k != "name" && k != "preset" && LAYER.fields.iter().any(|f| f.key == k))
            .collect();
        merge(&mut expanded, own);
        *own = expanded;
    }
    Ok(())
}

/// The preset called `name`, or an error at `key` naming the closest one and every preset.
fn find_preset(origin: &str, key: &str, name: &str) -> R<&'static presets::Preset> {
    presets::find(name).ok_or_else(|| {
        let names = presets::PRESETS.iter().map(|p| p.name);
        let hint =
            closest(name, names.clone()).map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default();
        invalid(origin, key, format!("unknown preset \"{name}\"{hint}; the presets are: {}", list(names)))
    })
}

/// Strategy `name` of `tree` as it runs: [`merged_strategy`] checked with every default filled
/// in and `retry_on` written out (DESIGN §3.5's list when the file leaves it out), with its
/// `name` (`retrysim export` and `[tune] export` write this in a production format).
pub fn effective_strategy(tree: &Table, name: &str, origin: &str) -> R<Table> {
    let names = strategy_names(tree);
    let Some(index) = names.iter().position(|n| *n == Some(name)) else {
        let known = names.iter().flatten().copied();
        let hint =
            closest(name, known.clone()).map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default();
        return Err(invalid(
            origin,
            "--strategy",
            format!("no strategy named \"{name}\"{hint}; the strategies are: {}", list(known)),
        ));
    };
    let key = strategy_key(&names, index);
    let mut merged = Value::Table(merged_strategy(tree, index).unwrap_or_default());
    let name_entry = |path: &str, i: usize, _: &Value| format!("{path}[{i}]");
    let checker = Checker { origin, fill: Fill::Defaults, partials: Fill::Defaults, name_entry: &name_entry };
    checker.table(&key, &CLIENT, &mut merged)?;
    let Value::Table(mut table) = merged else { unreachable!("checked as a table") };
    table.entry("retry_on").or_insert_with(|| {
        let mut all: Vec<Value> =
            DEFAULT_RETRY_STATUSES.iter().map(|s| Value::Integer(i64::from(*s))).collect();
        all.extend(["timeout", "connection-error"].map(|f| Value::String(f.to_owned())));
        Value::Array(all)
    });
    table.insert("name".to_owned(), Value::String(name.to_owned()));
    Ok(table)
}

/// A preset's keys as a table (presets are checked by tests to parse and to use only schema
/// keys).
pub(in crate::experiment) fn preset_table(p: &presets::Preset) -> Table {
    p.toml.parse().unwrap_or_else(|e| panic!("preset {} does not parse: {e}", p.name))
}

/// A preset's keys that only a proxy hop takes (a gateway layer, a call-graph edge), as a
/// table.
pub(in crate::experiment) fn preset_hop_table(p: &presets::Preset) -> Table {
    p.hop.parse().unwrap_or_else(|e| panic!("preset {}'s hop keys do not parse: {e}", p.name))
}

/// Merges `over` into `base`, key by key: tables merge recursively unless `over` changes the
/// `kind` (or `dist`), in which case `over`'s table replaces `base`'s; everything else
/// replaces.
pub(in crate::experiment) fn merge(base: &mut Table, over: &Table) {
    merge_from(base, over, "", None);
}

/// [`merge`] of the tables at dotted `path`, telling `track` every key it replaces.
fn merge_from(base: &mut Table, over: &Table, path: &str, mut track: Option<&mut Tracker>) {
    for (k, v) in over {
        let at = join(path, k);
        match (base.get_mut(k), v) {
            (Some(Value::Table(b)), Value::Table(o)) if same_kind(b, o) => {
                merge_from(b, o, &at, track.as_deref_mut())
            }
            _ => {
                if let Some(t) = track.as_deref_mut() {
                    t.replaced(&at, v);
                }
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn same_kind(base: &Table, over: &Table) -> bool {
    ["kind", "dist"].iter().all(|tag| match (base.get(*tag), over.get(*tag)) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    })
}

fn take_table(table: &mut Table, key: &str) -> Table {
    match table.remove(key) {
        Some(Value::Table(t)) => t,
        _ => Table::new(),
    }
}

/// The `name` of each `[[strategies]]` entry, `None` where it has no string name.
fn strategy_names(tree: &Table) -> Vec<Option<&str>> {
    match tree.get("strategies") {
        Some(Value::Array(items)) => items.iter().map(|s| s.get("name").and_then(Value::as_str)).collect(),
        _ => Vec::new(),
    }
}

/// serde failed on a tree the schema passed: the schema and the spec types disagree (a bug,
/// caught by the schema tests), reported rather than panicking.
fn internal(origin: &str, e: toml::de::Error) -> ConfigError {
    invalid(
        origin,
        "(internal)",
        format!("the checked file does not fit the spec types, a retrysim bug: {e}"),
    )
}
