//! `[tune]`: the question `retrysim tune` answers, checked against the experiment it belongs
//! to. The file format keeps `[tune]` as raw data; the verbs that load a file (`check`, `run`,
//! `tune`, `slurm`) check it with [`parse`], so that `check` refuses a bad one and `run`, which
//! ignores it, never runs a file that `tune` would refuse.
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

use crate::experiment::schema::check::{Checker, Fill, invalid};
use crate::experiment::schema::{CLIENT, Field, TUNE, Ty};
use crate::experiment::{
    ConfigError, Duration, Experiment, Point, SpecError, key_order, merged_strategy, spec_with, strategy_key,
    value_text,
};
use crate::metrics::catalogue;
use crate::metrics::constraint::Constraint;
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
    /// `export`: the production formats the recommendation is also written in.
    pub export: Vec<String>,
    /// The file after `--set`, without `[sweep]` and `[tune]`: what candidates change.
    pub(super) base: Table,
    /// Names the file in messages.
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

/// What [`check`] needs from the loaded experiment.
struct Context<'a> {
    /// The file after `--set`, without `[sweep]` and `[tune]`.
    base: &'a Table,
    /// The file's text (for the order of `[tune.space]`).
    text: &'a str,
    origin: &'a str,
    /// The experiment's seed and runs (defaults of `tune.seed` and `tune.confirm_runs`).
    seed: u64,
    runs: u32,
    /// The experiment's `[output] windows` (their metrics can be objectives and constraints).
    windows: &'a [String],
}

/// `confirm_runs` when the file does not say: its `runs`, but at least this many.
const MIN_CONFIRM_RUNS: u32 = 10;

type R<T> = Result<T, ConfigError>;

/// The experiment's `[tune]`, checked; `None` when the file has none.
pub fn parse(exp: &Experiment) -> R<Option<TuneSpec>> {
    let Some(section) = &exp.tune else { return Ok(None) };
    let cx = Context {
        base: &section.base,
        text: &exp.source,
        origin: &section.origin,
        seed: exp.seed,
        runs: exp.runs,
        windows: &exp.windows,
    };
    check(section.raw.clone(), &cx).map(Some)
}

/// Checks `[tune]` (as `raw`, after `--set`) against the schema, the strategies and the
/// metrics.
fn check(mut raw: Value, cx: &Context<'_>) -> R<TuneSpec> {
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
    if let Err(reason) = metric(&objective, cx.windows) {
        return Err(bad("tune.objective", reason));
    }
    let maximize = t.remove("maximize").and_then(|v| v.as_bool()).unwrap_or(false);

    let mut constraints = Vec::new();
    for (i, text) in strings(&mut t, "constraints").into_iter().enumerate() {
        let key = format!("tune.constraints[{i}]");
        let c = Constraint::parse(&text).map_err(|e| bad(&key, e.to_string()))?;
        metric(&c.metric, cx.windows).map_err(|reason| bad(&key, format!("\"{text}\": {reason}")))?;
        constraints.push(c);
    }

    let merged = merged_strategy(cx.base, strategy).unwrap_or_default();
    let strategy_shown = strategy_key(&names.iter().map(|n| n.as_deref()).collect::<Vec<_>>(), strategy);
    let params = space(t.remove("space"), cx, &checker, &merged, &strategy_shown)?;

    let scenarios = scenarios(t.remove("scenarios"), cx)?;
    let export = strings(&mut t, "export");
    for (i, kind) in export.iter().enumerate() {
        let key = format!("tune.export[{i}]");
        crate::interop::format(kind).map_err(|e| bad(&key, e.to_string()))?;
        if export[..i].contains(kind) {
            return Err(bad(&key, format!("\"{kind}\" is listed twice")));
        }
    }

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
        export,
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

/// A metric column of summary.csv (windowed ones included), or why not.
fn metric(name: &str, windows: &[String]) -> Result<(), String> {
    let columns = catalogue::columns(windows, &[]);
    if columns.iter().any(|m| m == name) {
        return Ok(());
    }
    let names = columns.iter().map(String::as_str);
    let hint = closest(name, names.clone()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
    let windowed = match catalogue::split(name) {
        (_, Some(w)) if !windows.iter().any(|x| x == w) => {
            format!(
                "; no window named `{w}` in [output] windows (it has: {})",
                list(windows.iter().map(String::as_str))
            )
        }
        _ => String::new(),
    };
    Err(format!("unknown metric `{name}`{hint}{windowed}; the metrics are: {}", list(names)))
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
    /// Names the file in messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

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
                let values = values.iter().map(value_text).collect();
                Ok(Point { values, spec, strategies, sources: Vec::new() })
            }
            Err(SpecError::Key { key, reason }) => Err(format!("`{key}`: {reason}")),
            Err(SpecError::Config(e)) => {
                let text = e.to_string();
                Err(text.strip_prefix(&format!("{}: ", self.origin)).unwrap_or(&text).to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::schema::tests::EVERY_KEY;
    use crate::experiment::{Overrides, load_str};

    fn spec(text: &str) -> R<Option<TuneSpec>> {
        parse(&load_str(text, "every-key.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}")))
    }

    #[test]
    fn every_key_of_tune_is_read() {
        let tune = spec(EVERY_KEY).unwrap().expect("the file has a [tune]");
        assert_eq!((tune.strategy_name.as_str(), tune.objective.as_str()), ("ratio", "latency_p99_s"));
        let keys: Vec<&str> = tune.params.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["backoff.base", "max_attempts", "budget.ratio"], "in file order");
        assert_eq!(tune.params[2].domain, Domain::Values(vec![Value::Float(0.1), Value::Float(0.2)]));
        assert_eq!(tune.scenarios.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["quiet", "file"]);
        assert_eq!(
            (
                tune.levels,
                tune.candidates,
                tune.runs,
                tune.rounds,
                tune.confirm,
                tune.confirm_runs,
                tune.seed
            ),
            (5, 6, 1, 2, 2, 4, 9)
        );
        assert_eq!(tune.constraints[1].to_string(), "amplification <= 2");
        let without = &EVERY_KEY[..EVERY_KEY.find("[tune]").unwrap()];
        assert!(spec(without).unwrap().is_none());
    }

    #[test]
    fn a_bad_tune_is_refused_naming_its_key() {
        let bad = |from: &str, to: &str| {
            assert!(EVERY_KEY.contains(from), "test bug: {from}");
            spec(&EVERY_KEY.replacen(from, to, 1)).unwrap_err().to_string()
        };
        let e = bad("\"amplification <= 2\"", "\"amplification about 2\"");
        assert!(
            e.starts_with(
                "every-key.toml: `tune.constraints[1]`: bad constraint `amplification about 2`: no operator"
            ),
            "{e}"
        );
        let e = bad("strategy = \"ratio\"", "strategy = \"ratoi\"");
        assert!(e.contains("`tune.strategy`") && e.contains("did you mean \"ratio\""), "{e}");
        let e = bad("\"budget.ratio\" = ", "\"budget.ratioo\" = ");
        assert!(
            e.contains("`tune.space.\"budget.ratioo\"`") && e.contains("did you mean `budget.ratio`"),
            "{e}"
        );
        let e = bad("\"server.faults\" = []", "\"server.concurrency\" = 0");
        assert!(e.contains("`tune.scenarios[0].\"server.concurrency\"`"), "{e}");
    }
}
