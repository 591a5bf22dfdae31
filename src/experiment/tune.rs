//! `[tune]`: the question `retrysim tune` answers, checked when the file is loaded (so that
//! `check` refuses a bad one and `run`, which ignores it, never runs a file that `tune` would
//! refuse).
//!
//! ```toml
//! [tune]
//! strategy = "full-jitter"
//! objective = "latency_p99_s"
//! constraints = ["amplification <= 1.5", "success_rate >= 0.96"]
//! [tune.space]
//! "backoff.base" = ["10ms", "5s"]       # a range: durations on a log scale
//! "max_attempts" = [2, 8]               # integers as integers
//! "budget.ratio" = { values = [0.1, 0.5] } # a list of two values
//! [[tune.scenarios]]
//! name = "normal"
//! "server.faults" = []
//! [[tune.scenarios]]
//! name = "outage"                       # the file as written
//! ```
//!
//! Every key of `space` must be a key of the strategy's kinds (the schema says which), every
//! metric a summary.csv column, every scenario a valid experiment. Errors name the key
//! (`tune.space."backoff.jitter"`, `tune.constraints[1]`) and exit with code 2 like any bad
//! input.

use super::ConfigError;
use super::Point;
use super::duration::Duration;
use super::load::{SpecError, key_order, merged_strategy, spec_with, strategy_key};
use super::schema::check::{Checker, Fill, invalid};
use super::schema::{CLIENT, Field, TUNE, Ty};
use crate::metrics::METRICS;
use crate::report::Constraint;
use crate::suggest::{closest, list};
use toml::{Table, Value};

/// A checked `[tune]`, with what it needs to build its candidates: the file as overridden.
#[derive(Clone, Debug)]
pub struct TuneSpec {
    /// Index of the tuned strategy in the file.
    pub strategy: usize,
    /// Its name.
    pub strategy_name: String,
    /// The metric to optimise, at its worst over the scenarios.
    pub objective: String,
    /// Maximise instead of minimise.
    pub maximize: bool,
    /// Each must hold on the mean in every scenario.
    pub constraints: Vec<Constraint>,
    /// The searched keys, in file order.
    pub params: Vec<Param>,
    /// At least one (the file as written when `scenarios` is absent).
    pub scenarios: Vec<Scenario>,
    /// Values per range.
    pub levels: u32,
    /// Size of the coarse design.
    pub candidates: u32,
    /// Runs per scenario of a first evaluation.
    pub runs: u32,
    /// Rounds of halving and refinement.
    pub rounds: u32,
    /// Finalists confirmed.
    pub confirm: u32,
    /// Runs per scenario of the confirmation.
    pub confirm_runs: u32,
    /// Target relative 95 % half-width of the winner's objective.
    pub precision: f64,
    /// Seed of the design.
    pub seed: u64,
    /// The file after `--set`, without `[sweep]` and `[tune]`.
    base: Table,
    origin: String,
}

/// One searched key.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// The key as written in `[tune.space]`, relative to the strategy (`backoff.base`).
    pub key: String,
    pub domain: Domain,
}

/// Where a key is searched.
#[derive(Clone, Debug, PartialEq)]
pub enum Domain {
    /// `[low, high]`: durations in seconds, numbers and integers as they are.
    Range { low: f64, high: f64, ty: Numeric },
    /// A list of values, in the order written.
    Values(Vec<Value>),
}

/// The type of a ranged key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numeric {
    Duration,
    Int,
    Num,
}

/// One scenario: changes to the file, as `--set` would make them.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Its `name`, or `file` for the file as written, or `scenarioN`.
    pub name: String,
    /// Dotted key, value; applied in order.
    pub changes: Vec<(String, Value)>,
}

/// One value of a searched key: as written into the experiment, as shown in CSV cells, and
/// as a position on a chart axis (seconds for durations; the index for other lists).
#[derive(Clone, Debug, PartialEq)]
pub struct Level {
    pub value: Value,
    pub label: String,
    pub position: f64,
    /// Whether `position` is a number of the key (not a list index): charts may use a log axis.
    pub numeric: bool,
}

/// What [`parse`] needs from the loader.
pub(super) struct Context<'a> {
    /// The file after `--set`, without `[sweep]` and `[tune]`.
    pub base: &'a Table,
    /// The file's text (for the order of `[tune.space]`).
    pub text: &'a str,
    pub origin: &'a str,
    /// The experiment's seed and runs (defaults of `tune.seed` and `tune.confirm_runs`).
    pub seed: u64,
    pub runs: u32,
}

/// `confirm_runs` when the file does not say: its `runs`, but at least this many.
const MIN_CONFIRM_RUNS: u32 = 10;

type R<T> = Result<T, ConfigError>;

/// Checks `[tune]` (as `raw`, after `--set`) against the schema, the strategies and the
/// metrics.
pub(super) fn parse(mut raw: Value, cx: &Context<'_>) -> R<TuneSpec> {
    let origin = cx.origin;
    let bad = |key: &str, reason: String| invalid(origin, key, reason);
    let name_entry = |path: &str, i: usize, _: &Value| format!("{path}[{i}]");
    let checker = Checker { origin, fill: Fill::Defaults, partials: Fill::Nothing, name_entry: &name_entry };
    checker.table("tune", &TUNE, &mut raw)?;
    let Value::Table(mut t) = raw else { unreachable!("checked as a table") };

    let names = strategy_names(cx.base);
    let strategy = match t.remove("strategy") {
        Some(Value::String(s)) => {
            names.iter().position(|n| n.as_deref() == Some(s.as_str())).ok_or_else(|| {
                let known: Vec<&str> = names.iter().flatten().map(String::as_str).collect();
                let hint = closest(&s, known.iter().copied())
                    .map(|c| format!(" (did you mean \"{c}\"?)"))
                    .unwrap_or_default();
                bad(
                    "tune.strategy",
                    format!("no strategy named \"{s}\"{hint}; the strategies are: {}", list(known)),
                )
            })?
        }
        _ if names.len() == 1 => 0,
        _ => {
            return Err(ConfigError::MissingKey {
                origin: origin.to_owned(),
                key: "tune.strategy".to_owned(),
                help: Some(format!(
                    "the file has {} strategies: name the one to tune ({})",
                    names.len(),
                    list(names.iter().flatten().map(String::as_str))
                )),
            });
        }
    };
    let strategy_name = names[strategy].clone().unwrap_or_default();

    let objective = string(&mut t, "objective");
    if let Err(reason) = metric(&objective) {
        return Err(bad("tune.objective", reason));
    }
    let maximize = t.remove("maximize").and_then(|v| v.as_bool()).unwrap_or(false);

    let mut constraints = Vec::new();
    for (i, text) in strings(&mut t, "constraints").into_iter().enumerate() {
        let key = format!("tune.constraints[{i}]");
        let c = Constraint::parse(&text).map_err(|e| bad(&key, e.to_string()))?;
        metric(&c.metric).map_err(|reason| bad(&key, format!("\"{text}\": {reason}")))?;
        constraints.push(c);
    }

    let merged = merged_strategy(cx.base, strategy).unwrap_or_default();
    let strategy_shown = strategy_key(&names.iter().map(|n| n.as_deref()).collect::<Vec<_>>(), strategy);
    let params = space(t.remove("space"), cx, &checker, &merged, &strategy_shown)?;

    let scenarios = scenarios(t.remove("scenarios"), cx)?;

    let int = |t: &Table, key: &str| t.get(key).and_then(Value::as_integer).map(|i| i as u64);
    let levels = int(&t, "levels").unwrap_or(9) as u32;
    let candidates = int(&t, "candidates").map_or((6 * params.len()).max(12) as u32, |c| c as u32);
    let confirm_runs = int(&t, "confirm_runs").map_or(cx.runs.max(MIN_CONFIRM_RUNS), |c| c as u32);
    Ok(TuneSpec {
        strategy,
        strategy_name,
        objective,
        maximize,
        constraints,
        params,
        scenarios,
        levels,
        candidates,
        runs: int(&t, "runs").unwrap_or(2) as u32,
        rounds: int(&t, "rounds").unwrap_or(4) as u32,
        confirm: int(&t, "confirm").unwrap_or(3) as u32,
        confirm_runs,
        precision: t.get("precision").and_then(Value::as_float).unwrap_or(0.05),
        seed: int(&t, "seed").unwrap_or(cx.seed),
        base: cx.base.clone(),
        origin: origin.to_owned(),
    })
}

fn string(t: &mut Table, key: &str) -> String {
    match t.remove(key) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn strings(t: &mut Table, key: &str) -> Vec<String> {
    match t.remove(key) {
        Some(Value::Array(items)) => items.into_iter().filter_map(|v| v.as_str().map(String::from)).collect(),
        _ => Vec::new(),
    }
}

/// The `name` of each strategy of the tree.
fn strategy_names(tree: &Table) -> Vec<Option<String>> {
    match tree.get("strategies") {
        Some(Value::Array(items)) => {
            items.iter().map(|s| s.get("name").and_then(Value::as_str).map(String::from)).collect()
        }
        _ => Vec::new(),
    }
}

/// A metric column of summary.csv, or why not.
fn metric(name: &str) -> Result<(), String> {
    if METRICS.iter().any(|m| m.name == name) {
        return Ok(());
    }
    let names = METRICS.iter().map(|m| m.name);
    let hint = closest(name, names.clone()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
    Err(format!("unknown metric `{name}`{hint}; the metrics are: {}", list(names)))
}

/// How `[tune.space]` names a key in messages.
fn space_key(key: &str) -> String {
    format!("tune.space.\"{key}\"")
}

/// `[tune.space]`: each key checked against the strategy's kinds, each range or list against
/// the key's type.
fn space(
    raw: Option<Value>,
    cx: &Context<'_>,
    checker: &Checker<'_>,
    merged: &Table,
    strategy: &str,
) -> R<Vec<Param>> {
    let Some(Value::Table(table)) = raw else { unreachable!("checked: a required table") };
    let mut entries = Vec::new();
    flatten("", table, &|t: &Table| t.len() == 1 && t.contains_key("values"), &mut entries);
    if entries.is_empty() {
        return Err(invalid(
            cx.origin,
            "tune.space",
            "is empty: give at least one key of the strategy, e.g. \"backoff.base\" = [\"10ms\", \"2s\"]"
                .to_owned(),
        ));
    }
    let order = key_order(cx.text, &["tune", "space"]);
    let position = |key: &str| {
        order.iter().position(|k| k == key || k.strip_suffix(".values") == Some(key)).unwrap_or(usize::MAX)
    };
    entries.sort_by_key(|(key, _)| position(key));
    let mut params: Vec<Param> = Vec::new();
    for (key, value) in entries {
        let shown = space_key(&key);
        if params.iter().any(|p| p.key == key) {
            return Err(invalid(cx.origin, &shown, "is given twice".to_owned()));
        }
        let field = field_of(merged, &key).map_err(|reason| ConfigError::UnknownKey {
            origin: cx.origin.to_owned(),
            key: shown.clone(),
            suggestion: None,
            help: Some(format!("{reason} (strategy `{strategy}`)")),
        })?;
        let domain = domain(&shown, field, value, checker)?;
        params.push(Param { key, domain });
    }
    Ok(params)
}

/// Flattens nested tables into dotted keys, in place of TOML's nesting of `a.b = ...`;
/// `leaf(t)` says which tables are values rather than nesting.
fn flatten(prefix: &str, table: Table, leaf: &dyn Fn(&Table) -> bool, out: &mut Vec<(String, Value)>) {
    for (key, value) in table {
        let full = if prefix.is_empty() { key } else { format!("{prefix}.{key}") };
        match value {
            Value::Table(inner) if !leaf(&inner) => flatten(&full, inner, leaf, out),
            value => out.push((full, value)),
        }
    }
}

/// The schema's field for `key` of a strategy whose keys (merged over `[client]` and its
/// preset) are `merged`: `budget.ratio` exists only when the strategy has a ratio budget.
fn field_of(merged: &Table, key: &str) -> Result<&'static Field, String> {
    let parts: Vec<&str> = key.split('.').collect();
    let mut fields: &'static [Field] = CLIENT.fields;
    let mut here: Option<&Table> = Some(merged);
    let mut what = "the strategy".to_owned();
    for (i, part) in parts.iter().enumerate() {
        let walked = parts[..i].join(".");
        let Some(field) = fields.iter().find(|f| f.key == *part && f.key != "name") else {
            let keys = fields.iter().map(|f| f.key);
            let hint = closest(part, keys.clone())
                .map(|c| format!(" (did you mean `{}`?)", join(&walked, c)))
                .unwrap_or_default();
            let tag = if *part == "kind" || *part == "dist" {
                "; a kind cannot be searched: compare kinds as strategies with `retrysim run`".to_owned()
            } else {
                String::new()
            };
            return Err(format!(
                "{what} has no key `{part}`{hint}{tag}; its keys: {}",
                list(fields.iter().map(|f| f.key))
            ));
        };
        if i + 1 == parts.len() {
            return match field.ty {
                Ty::Duration | Ty::Int { .. } | Ty::Num | Ty::Bool | Ty::Choice(_) => Ok(field),
                _ => Err(format!(
                    "`{key}` is not a single value that can be searched (a table or a list): search the keys inside it"
                )),
            };
        }
        let inner = here.and_then(|t| t.get(*part)).and_then(Value::as_table);
        let shown = join(&walked, part);
        match &field.ty {
            Ty::Table(t) => {
                if inner.is_none() {
                    return Err(format!(
                        "the strategy has no `{shown}`: give it one (`{shown} = {{ ... }}`) to search its keys"
                    ));
                }
                fields = t.fields;
                what = format!("`{shown}`");
            }
            Ty::Tagged(t) => {
                let kind = inner
                    .and_then(|t| t.get("kind").or_else(|| t.get("dist")))
                    .and_then(Value::as_str)
                    .or(t.default);
                let Some(variant) = kind.and_then(|k| t.variants.iter().find(|v| v.kind == k)) else {
                    return Err(format!(
                        "the strategy has no `{shown}`: give it one (`{shown} = {{ {} = ... }}`, one of: {}) to search its keys",
                        t.tag,
                        list(t.variants.iter().map(|v| v.kind))
                    ));
                };
                let rest = parts[i + 1];
                if !variant.fields.iter().any(|f| f.key == rest) {
                    let owners: Vec<&str> = t
                        .variants
                        .iter()
                        .filter(|v| v.fields.iter().any(|f| f.key == rest))
                        .map(|v| v.kind)
                        .collect();
                    if !owners.is_empty() {
                        return Err(format!(
                            "`{rest}` belongs to {} {}, and the strategy's `{shown}` is {} = \"{}\" (keys: {})",
                            t.what,
                            list(owners),
                            t.tag,
                            variant.kind,
                            list(variant.fields.iter().map(|f| f.key))
                        ));
                    }
                }
                fields = variant.fields;
                what = format!("{} \"{}\"", t.what, variant.kind);
            }
            _ => return Err(format!("`{shown}` is a single value: it has no key `{}`", parts[i + 1])),
        }
        here = inner;
    }
    unreachable!("the loop returns at the last part")
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() { b.to_owned() } else { format!("{a}.{b}") }
}

/// A `[low, high]` range (two values of a number or duration key), `{ values = [...] }` or a
/// list of values; each value checked against the key's type and range.
fn domain(shown: &str, field: &Field, value: Value, checker: &Checker<'_>) -> R<Domain> {
    let origin = checker.origin;
    let numeric = match field.ty {
        Ty::Duration => Some(Numeric::Duration),
        Ty::Int { .. } => Some(Numeric::Int),
        Ty::Num => Some(Numeric::Num),
        _ => None,
    };
    let (mut items, explicit) = match value {
        Value::Array(items) => (items, false),
        Value::Table(mut t) => match t.remove("values") {
            Some(Value::Array(items)) => (items, true),
            _ => {
                return Err(invalid(
                    origin,
                    shown,
                    "expected [low, high], a list of values or { values = [...] }".to_owned(),
                ));
            }
        },
        other => {
            return Err(invalid(
                origin,
                shown,
                format!("expected [low, high] or a list of values, found a {}", other.type_str()),
            ));
        }
    };
    if items.is_empty() {
        return Err(invalid(origin, shown, "the list is empty: give [low, high] or some values".to_owned()));
    }
    for (i, item) in items.iter_mut().enumerate() {
        let at = format!("{shown}[{i}]");
        checker.value(&at, &field.ty, item, field.range, field.range_message)?;
    }
    match numeric {
        Some(ty) if items.len() == 2 && !explicit => {
            let (low, high) = (number(&items[0], ty), number(&items[1], ty));
            if low > high {
                return Err(invalid(
                    origin,
                    shown,
                    format!(
                        "the range [{}, {}] has low > high: write [low, high] with low <= high",
                        items[0], items[1]
                    ),
                ));
            }
            Ok(Domain::Range { low, high, ty })
        }
        _ => Ok(Domain::Values(items)),
    }
}

/// A checked value of a numeric key as a number: seconds for durations.
fn number(v: &Value, ty: Numeric) -> f64 {
    match (ty, v) {
        (Numeric::Duration, Value::String(s)) => Duration::parse(s).map_or(0.0, |d| d.as_ns() as f64 / 1e9),
        (_, Value::Integer(i)) => *i as f64,
        (_, Value::Float(x)) => *x,
        _ => 0.0,
    }
}

/// `tune.scenarios`: each a table of dotted keys (and an optional `name`), checked by building
/// the experiment it describes.
fn scenarios(raw: Option<Value>, cx: &Context<'_>) -> R<Vec<Scenario>> {
    let Some(Value::Array(items)) = raw else {
        return Ok(vec![Scenario { name: "file".to_owned(), changes: Vec::new() }]);
    };
    if items.is_empty() {
        return Err(invalid(
            cx.origin,
            "tune.scenarios",
            "is empty: leave it out to use the file as written, or give at least one".to_owned(),
        ));
    }
    let mut out: Vec<Scenario> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("tune.scenarios[{i}]");
        let Value::Table(mut t) = item else { unreachable!("checked as a table") };
        let name = match t.remove("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s,
            Some(other) => {
                return Err(invalid(
                    cx.origin,
                    &format!("{at}.name"),
                    format!("expected a non-empty string, found {other}"),
                ));
            }
            None if t.is_empty() => "file".to_owned(),
            None => format!("scenario{}", i + 1),
        };
        if out.iter().any(|s| s.name == name) {
            return Err(invalid(
                cx.origin,
                &format!("{at}.name"),
                format!("two scenarios are named \"{name}\""),
            ));
        }
        let mut changes = Vec::new();
        // A table with a `kind` or `dist` is one value (`"network.latency" = { dist = ... }`).
        flatten("", t, &|t: &Table| t.contains_key("kind") || t.contains_key("dist"), &mut changes);
        for (key, _) in &changes {
            if key == "name"
                || key == "seed"
                || key == "runs"
                || key.starts_with("tune")
                || key.starts_with("sweep")
            {
                return Err(invalid(
                    cx.origin,
                    &format!("{at}.\"{key}\""),
                    "a scenario changes the simulated system, not the experiment's name, seed, runs, sweep or tune"
                        .to_owned(),
                ));
            }
        }
        spec_with(cx.base, &changes, cx.origin).map_err(|e| scenario_error(cx.origin, &at, &changes, e))?;
        out.push(Scenario { name, changes });
    }
    Ok(out)
}

/// Points an error found while building scenario `at` at its key.
fn scenario_error(origin: &str, at: &str, changes: &[(String, Value)], e: SpecError) -> ConfigError {
    match e {
        SpecError::Key { key, reason } => invalid(origin, &format!("{at}.\"{key}\""), reason),
        SpecError::Config(e) => {
            let text = e.to_string();
            let reason = text.strip_prefix(&format!("{origin}: ")).unwrap_or(&text).to_owned();
            let key = match &e {
                ConfigError::UnknownKey { key, .. }
                | ConfigError::MissingKey { key, .. }
                | ConfigError::InvalidValue { key, .. } => {
                    changes.iter().find(|(k, _)| key.starts_with(k.as_str()) || k.starts_with(key.as_str()))
                }
                _ => None,
            };
            match key {
                Some((k, _)) => invalid(origin, &format!("{at}.\"{k}\""), reason),
                None => invalid(origin, at, reason),
            }
        }
    }
}

impl TuneSpec {
    /// The experiment of scenario `scenario` with the tuned keys set to `values` (one per
    /// parameter), checked; the reason when validation refuses it (e.g. `cap < base`).
    pub fn point(&self, scenario: usize, values: &[Value]) -> Result<Point, String> {
        let mut changes = self.scenarios[scenario].changes.clone();
        for (p, v) in self.params.iter().zip(values) {
            changes.push((format!("strategies[{}].{}", self.strategy, p.key), v.clone()));
        }
        match spec_with(&self.base, &changes, &self.origin) {
            Ok(spec) => {
                let strategies = spec.strategies.clone();
                let values = values.iter().map(render).collect();
                Ok(Point { values, spec, strategies })
            }
            Err(SpecError::Key { key, reason }) => Err(format!("`{key}`: {reason}")),
            Err(SpecError::Config(e)) => {
                let text = e.to_string();
                Err(text.strip_prefix(&format!("{}: ", self.origin)).unwrap_or(&text).to_owned())
            }
        }
    }

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

/// A value as a CSV cell: strings without quotes.
pub fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Param {
    /// The values searched: a list as written, or `levels` values across a range (log-spaced
    /// when low > 0 for durations and numbers, rounded to two significant digits with the ends
    /// kept exact; every integer when there are at most 2 x `levels`), without repeats.
    pub fn levels(&self, levels: u32) -> Vec<Level> {
        match &self.domain {
            Domain::Values(values) => {
                let numbers: Option<Vec<f64>> = values.iter().map(position_of).collect();
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| Level {
                        value: v.clone(),
                        label: render(v),
                        position: numbers.as_ref().map_or(i as f64, |n| n[i]),
                        numeric: numbers.is_some(),
                    })
                    .collect()
            }
            Domain::Range { low, high, ty } => range_levels(*low, *high, *ty, levels.max(2) as usize),
        }
    }
}

/// A list value's number: seconds for durations, the number itself; `None` otherwise.
fn position_of(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(x) => Some(*x),
        Value::String(s) => Duration::parse(s).ok().map(|d| d.as_ns() as f64 / 1e9),
        _ => None,
    }
}

fn range_levels(low: f64, high: f64, ty: Numeric, n: usize) -> Vec<Level> {
    let raw: Vec<f64> = if low == high {
        vec![low]
    } else if ty == Numeric::Int && high - low < 2.0 * n as f64 {
        (low as i64..=high as i64).map(|i| i as f64).collect()
    } else {
        let log = low > 0.0;
        (0..n)
            .map(|i| {
                let f = i as f64 / (n - 1) as f64;
                if i == 0 {
                    low
                } else if i == n - 1 {
                    high
                } else if log {
                    (low.ln() + f * (high.ln() - low.ln())).exp()
                } else {
                    low + f * (high - low)
                }
            })
            .collect()
    };
    let mut out: Vec<Level> = Vec::with_capacity(raw.len());
    for (i, x) in raw.iter().enumerate() {
        let ends = i == 0 || i + 1 == raw.len();
        let level = match ty {
            Numeric::Int => {
                let v = x.round() as i64;
                Level { value: Value::Integer(v), label: v.to_string(), position: v as f64, numeric: true }
            }
            Numeric::Num => {
                let v = if ends { *x } else { two_digits(*x).clamp(low, high) };
                Level {
                    value: Value::Float(v),
                    label: Value::Float(v).to_string(),
                    position: v,
                    numeric: true,
                }
            }
            Numeric::Duration => {
                let ns = (x * 1e9).round();
                let ns = if ends { ns } else { two_digits(ns).clamp(low * 1e9, high * 1e9) };
                let label = duration_label(ns as u64);
                let position = Duration::parse(&label).map_or(ns, |d| d.as_ns() as f64) / 1e9;
                Level { value: Value::String(label.clone()), label, position, numeric: true }
            }
        };
        if out.last().is_none_or(|l: &Level| l.label != level.label) {
            out.push(level);
        }
    }
    out
}

/// `x` rounded to two significant digits (as the nearest double to that decimal).
fn two_digits(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{x:.1e}").parse().unwrap_or(x)
}

/// A duration in the unit that reads best: `220ms`, `1.5s`, `22s`, `90us`; exact (it reads back
/// as the same number of nanoseconds).
pub fn duration_label(ns: u64) -> String {
    for (unit, scale) in [("s", 1e9), ("ms", 1e6), ("us", 1e3)] {
        if ns as f64 >= scale {
            let text = format!("{}{unit}", ns as f64 / scale);
            if Duration::parse(&text).is_ok_and(|d| d.as_ns() == ns) {
                return text;
            }
        }
    }
    Duration(ns).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(p: &Param, n: u32) -> Vec<String> {
        p.levels(n).into_iter().map(|l| l.label).collect()
    }

    #[test]
    fn ranges_become_round_levels() {
        let base = Param {
            key: "backoff.base".into(),
            domain: Domain::Range { low: 0.01, high: 5.0, ty: Numeric::Duration },
        };
        assert_eq!(
            labels(&base, 9),
            ["10ms", "22ms", "47ms", "100ms", "220ms", "490ms", "1.1s", "2.3s", "5s"]
        );
        let attempts = Param {
            key: "max_attempts".into(),
            domain: Domain::Range { low: 2.0, high: 8.0, ty: Numeric::Int },
        };
        assert_eq!(labels(&attempts, 9), ["2", "3", "4", "5", "6", "7", "8"]);
        let wide =
            Param { key: "x".into(), domain: Domain::Range { low: 1.0, high: 1000.0, ty: Numeric::Int } };
        assert_eq!(labels(&wide, 4), ["1", "10", "100", "1000"]);
        let ratio = Param {
            key: "budget.ratio".into(),
            domain: Domain::Range { low: 0.05, high: 1.0, ty: Numeric::Num },
        };
        let l = ratio.levels(5);
        assert_eq!(
            l.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
            ["0.05", "0.11", "0.22", "0.47", "1.0"]
        );
        let zero = Param { key: "x".into(), domain: Domain::Range { low: 0.0, high: 1.0, ty: Numeric::Num } };
        assert_eq!(labels(&zero, 5), ["0.0", "0.25", "0.5", "0.75", "1.0"]);
        let one = Param { key: "x".into(), domain: Domain::Range { low: 3.0, high: 3.0, ty: Numeric::Int } };
        assert_eq!(labels(&one, 5), ["3"]);
    }

    #[test]
    fn duration_labels_read_back_exactly() {
        for ns in [1u64, 999, 90_000, 1_500_000, 220_000_000, 1_100_000_000, 22_000_000_000, 123_456_789] {
            let label = duration_label(ns);
            assert_eq!(Duration::parse(&label).unwrap().as_ns(), ns, "{label}");
        }
        assert_eq!(duration_label(1_100_000_000), "1.1s");
        assert_eq!(duration_label(220_000_000), "220ms");
    }
}
