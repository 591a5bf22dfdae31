//! The loading pipeline: TOML text -> tree -> `--set` overrides -> sweep points -> decoded,
//! validated specs.
//!
//! Overrides and sweeps work on the untyped `toml::Table` tree, so that one dotted-key syntax
//! reaches every key whatever its type; only then is each point decoded (see [`decode`]) and
//! validated. Errors found at a key that came from `--set` or `[sweep]` are re-worded to point
//! at the command line or the sweep rather than at the file.

mod decode;
mod imports;
mod paths;

pub use decode::{effective_strategy, merged_strategy};
pub use paths::{key_order, strategy_key};

use super::spec::PRIORITY_CLASSES;
use super::validate::validate;
use super::{ConfigError, Experiment, Overrides, Point, TuneSection};
use std::path::Path;
use toml::{Table, Value};

/// More points than this is almost certainly a typo in `[sweep]`, and expanding it would
/// exhaust memory before anything runs.
const MAX_POINTS: usize = 100_000;

/// Keys that name, seed or shape the output of the whole experiment: they cannot differ
/// between points.
const UNSWEEPABLE: &[&str] = &["name", "seed", "runs", "output"];

/// Reads, overrides, expands and validates the experiment file at `path`.
pub fn load(path: &Path, overrides: &Overrides) -> Result<Experiment, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    load_str(&text, &path.display().to_string(), overrides)
}

/// Like [`load`], from text; `origin` names the text in error messages (usually its path).
pub fn load_str(text: &str, origin: &str, overrides: &Overrides) -> Result<Experiment, ConfigError> {
    let mut tree = parse(text, origin)?;
    default_server_kind(&mut tree);
    let mut sweep = Sweep::take(&mut tree, text, origin)?;
    let sets = apply_sets(&mut tree, &mut sweep, &overrides.set)?;
    let imported = imports::expand(&mut tree, &folder_of(origin), origin)?.concat();
    // `[tune]` is `retrysim tune`'s question, not part of a run: kept with the tree it will
    // change, for the tune layer to check.
    let tune = tree.remove("tune");
    let tune_text = tune.clone();
    let axes = sweep.axes(origin)?;
    let count = point_count(&axes, origin)?;
    let mut points = Vec::with_capacity(count);
    let mut skipped = Vec::new();
    for index in 0..count {
        match build_point(&tree, &axes, index, origin, &sets, overrides) {
            Ok(p) => points.push(p),
            // `[sweep] skip_invalid`: a point that validation refuses is left out and listed.
            Err(e) if sweep.skip_invalid && is_validation(&e) => skipped.push(Skipped {
                values: point_values(&axes, index).into_iter().map(value_text).collect(),
                reason: e.to_string(),
            }),
            Err(e) => return Err(e),
        }
    }
    // Name, seed, runs and output cannot be swept, so the first point's are every point's.
    let Some(first) = points.first().map(|p| &p.spec) else {
        let reason = format!(
            "every point of the sweep is invalid ({} skipped); the first: {}",
            skipped.len(),
            skipped.first().map_or("", |s| s.reason.as_str())
        );
        return Err(invalid(origin, "sweep", reason));
    };
    let sweep_keys: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    let reference = reference_point(&first.output.reference, &sweep_keys, &points, origin)
        .map_err(|e| attribute(e, &sets, &[]))?;
    let tune = tune.map(|raw| TuneSection { raw, base: tree.clone(), origin: origin.to_owned() });
    // Priority classes add the columns `METRIC@CLASS` after the windows': every point has them
    // or none (the columns are the experiment's).
    let classes = first.workload.priorities().is_some();
    if points.iter().any(|p| p.spec.workload.priorities().is_some() != classes) {
        return Err(invalid(
            origin,
            "workload.priorities",
            "is set at some points of the sweep and not at others: its columns must be the same at every point; set it at every point (shares may differ)".to_string(),
        ));
    }
    let graph_columns = columns_of_graph(first);
    if points.iter().any(|p| columns_of_graph(&p.spec) != graph_columns) {
        return Err(invalid(
            origin,
            "services",
            "differs between points of the sweep in its services or their calls: its columns must be the same at every point; sweep their other keys only".to_string(),
        ));
    }
    let mut windows: Vec<String> = first.output.windows.keys().cloned().collect();
    if classes {
        windows.extend(PRIORITY_CLASSES.iter().map(|c| c.to_string()));
    }
    Ok(Experiment {
        name: first.name.clone(),
        description: description(text),
        source: text.to_owned(),
        overrides: overrides.describe(),
        effective_toml: if overrides.set.is_empty() {
            String::new()
        } else {
            effective_toml(&tree, &sweep, tune_text.as_ref())
        },
        command_line: Vec::new(),
        fingerprint: fingerprint(&with_imports(text, &imported), &overrides.describe()),
        seed: first.seed,
        runs: first.runs,
        timeseries: first.output.timeseries,
        windows,
        graph_columns,
        reference,
        sweep_keys,
        points,
        skipped,
        tune,
        imported,
    })
}

/// The folder a relative path in the file named `origin` is read from (an `import`'s file).
fn folder_of(origin: &str) -> std::path::PathBuf {
    Path::new(origin).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// What the fingerprint covers: the file's text, then each imported file's (nothing more
/// without imports, so a plain file keeps its fingerprint).
fn with_imports(text: &str, imported: &str) -> String {
    if imported.is_empty() { text.to_owned() } else { format!("{text}\n{imported}") }
}

/// Strategy `name` of the experiment file at `path` as it runs: `[client]`, its preset, its
/// import and its own keys merged, every default filled in, `retry_on` written out (what
/// `retrysim export` writes in a production format).
pub fn effective_strategy_in(path: &Path, name: &str) -> Result<Table, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
    let origin = path.display().to_string();
    let mut tree = parse(&text, &origin)?;
    imports::expand(&mut tree, &folder_of(&origin), &origin)?;
    effective_strategy(&tree, name, &origin)
}

/// Keeps only the strategies named in `names` (`--strategies`), in the file's order, and
/// records the choice among the command-line changes (so the fingerprint tells the subset
/// from the whole). Each strategy's runs keep their seeds (a function of the run index only),
/// so its rows are the same bytes as in a run of every strategy. `Err` names an unknown one.
pub fn select_strategies(exp: &mut Experiment, names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    let all: Vec<String> = exp.points[0].strategies.iter().map(|s| s.name.clone()).collect();
    for n in names {
        if !all.contains(n) {
            let hint = crate::suggest::closest(n, all.iter().map(String::as_str))
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(format!("no strategy named `{n}`{hint}; the strategies are: {}", all.join(", ")));
        }
    }
    let chosen: Vec<String> = all.iter().filter(|s| names.contains(s)).cloned().collect();
    for p in &mut exp.points {
        let keep: Vec<bool> = p.strategies.iter().map(|s| chosen.contains(&s.name)).collect();
        let mut k = keep.iter();
        p.strategies.retain(|_| *k.next().unwrap_or(&false));
        p.spec.strategies.retain(|s| chosen.contains(&s.name));
        let mut k = keep.iter();
        p.sources.retain(|_| *k.next().unwrap_or(&false));
    }
    exp.overrides.push(format!("--strategies {}", chosen.join(",")));
    exp.fingerprint = fingerprint(&with_imports(&exp.source, &exp.imported), &exp.overrides);
    Ok(())
}

/// The tree after `--set`, with its sweep and `[tune]` put back, as TOML: what a report shows
/// as the experiment that ran.
fn effective_toml(tree: &Table, sweep: &Sweep, tune: Option<&Value>) -> String {
    let mut all = tree.clone();
    if !sweep.entries.is_empty() || sweep.skip_invalid {
        let mut table = Table::new();
        for (key, value) in &sweep.entries {
            table.insert(key.clone(), value.clone());
        }
        if sweep.skip_invalid {
            table.insert("skip_invalid".into(), Value::Boolean(true));
        }
        all.insert("sweep".into(), Value::Table(table));
    }
    if let Some(tune) = tune {
        all.insert("tune".into(), tune.clone());
    }
    toml::to_string(&all).unwrap_or_else(|e| format!("# cannot print the experiment as TOML: {e}\n"))
}

/// Why [`spec_with`] refused a set of changes.
#[derive(Debug)]
pub enum SpecError {
    /// `key` cannot be written (no such strategy, not a table on the way...).
    Key { key: String, reason: String },
    /// The changed file does not decode or validate.
    Config(ConfigError),
}

/// `tree` with each dotted `(key, value)` written in order (as `--set` writes them), decoded
/// and validated: for `retrysim tune`, whose candidates and scenarios are such changes.
pub fn spec_with(
    tree: &Table,
    changes: &[(String, Value)],
    origin: &str,
) -> Result<super::ExperimentSpec, SpecError> {
    let mut tree = tree.clone();
    for (key, value) in changes {
        let key_error = |reason| SpecError::Key { key: key.clone(), reason };
        let path = paths::KeyPath::parse(&tree, key).map_err(key_error)?;
        path.set(&mut tree, value.clone()).map_err(key_error)?;
    }
    let spec = decode::experiment(&tree, origin).map_err(SpecError::Config)?;
    validate(&spec, origin).map_err(SpecError::Config)?;
    Ok(spec)
}

/// The leading comment block of the file: its `#` lines up to the first other line, without
/// the `#`.
fn description(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    lines.join("\n")
}

/// FNV-1a (64-bit) over the file text, the command-line changes and the version, in hex: a
/// stable name for "this experiment as run" (not a security hash).
fn fingerprint(text: &str, overrides: &[String]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    eat(env!("CARGO_PKG_VERSION").as_bytes());
    eat(text.as_bytes());
    for o in overrides {
        eat(o.as_bytes());
    }
    format!("{h:016x}")
}

/// Splits one `--set` argument at its first `=`: `server.concurrency=8` ->
/// (`server.concurrency`, `8`). The value may itself contain `=`.
pub fn parse_set_arg(arg: &str) -> Result<(String, String), ConfigError> {
    let bad = |reason: &str| ConfigError::BadOverride { arg: arg.to_owned(), reason: reason.to_owned() };
    let (key, value) =
        arg.split_once('=').ok_or_else(|| bad("expected KEY=VALUE, e.g. --set server.concurrency=8"))?;
    if key.trim().is_empty() {
        return Err(bad("the key before `=` is empty: write KEY=VALUE, e.g. --set client.timeout=2s"));
    }
    Ok((key.trim().to_owned(), value.to_owned()))
}

/// Parses the whole document; a syntax error reports its line and column.
fn parse(text: &str, origin: &str) -> Result<Table, ConfigError> {
    text.parse::<Table>().map_err(|e| {
        let place = e.span().map(|s| line_column(text, s.start)).unwrap_or_default();
        ConfigError::Syntax { origin: origin.to_owned(), message: format!("{place}{}", e.message()) }
    })
}

/// `"line L, column C: "` of a byte offset, 1-based as editors show them.
fn line_column(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: ")
}

/// DESIGN §3.3: a `[server]` without `kind` is a queue server. Done on the tree, before
/// overrides, so that `--set server.concurrency=...` reaches a queue server's key.
fn default_server_kind(tree: &mut Table) {
    if let Some(Value::Table(server)) = tree.get_mut("server") {
        server.entry("kind").or_insert_with(|| Value::String("queue".to_owned()));
    }
}

/// A `--set` that has been applied to the tree, kept to re-word errors found at its keys.
struct AppliedSet {
    arg: String,
    /// The keys as the decoder names them (`strategies.NAME...`; one per strategy for
    /// `strategies.*`), to match its errors.
    keys: Vec<String>,
}

/// Whether an error is about a value (so `skip_invalid` may skip its point) rather than the
/// file's shape (unknown or missing keys, which no point can fix).
fn is_validation(e: &ConfigError) -> bool {
    matches!(e, ConfigError::InvalidValue { .. })
        || matches!(e, ConfigError::BadOverride { reason, .. } if !reason.contains("is not a valid key"))
}

/// Applies each `--set` in order. `sweep.KEY=[...]` replaces that sweep entry; a `--set` of a
/// swept key fixes that key to the one value, removing it from the sweep.
fn apply_sets(
    tree: &mut Table,
    sweep: &mut Sweep,
    sets: &[(String, String)],
) -> Result<Vec<AppliedSet>, ConfigError> {
    let mut applied = Vec::with_capacity(sets.len());
    for (key, text) in sets {
        let arg = format!("{key}={text}");
        let bad = |reason: String| ConfigError::BadOverride { arg: arg.clone(), reason };
        let value = paths::parse_value(text);
        if let Some(target) = paths::sweep_target(key) {
            sweep.set(target, value).map_err(bad)?;
            continue;
        }
        let path = paths::KeyPath::parse(tree, key).map_err(bad)?;
        path.set(tree, value).map_err(bad)?;
        sweep.remove(key.trim());
        sweep.remove(&path.shown(tree));
        applied.push(AppliedSet { arg, keys: path.concrete(tree) });
    }
    Ok(applied)
}

/// The `[sweep]` table, flattened to dotted keys in file order.
struct Sweep {
    entries: Vec<(String, Value)>,
    /// `skip_invalid = true`: leave out the points that validation refuses.
    skip_invalid: bool,
}

/// A sweep point left out by `skip_invalid`.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    /// The swept keys' values at the point.
    pub values: Vec<String>,
    /// Why validation refused it.
    pub reason: String,
}

/// One swept key with its values.
struct Axis {
    key: String,
    values: Vec<Value>,
}

impl Sweep {
    /// Removes `[sweep]` from the tree. Both `"workload.rate" = [...]` and the nested form
    /// that an unquoted dotted key produces (`workload.rate = [...]` under `[sweep]`) work.
    fn take(tree: &mut Table, text: &str, origin: &str) -> Result<Sweep, ConfigError> {
        let entries = match tree.remove("sweep") {
            None => Vec::new(),
            Some(Value::Table(table)) => {
                let mut entries = Vec::new();
                flatten("", table, &mut entries);
                sort_by_file_order(&mut entries, &paths::sweep_order(text));
                entries
            }
            Some(other) => {
                return Err(invalid(
                    origin,
                    "sweep",
                    format!("must be a table of KEY = [values], found a {}", other.type_str()),
                ));
            }
        };
        let mut sweep = Sweep { entries, skip_invalid: false };
        sweep.take_skip_invalid(origin)?;
        Ok(sweep)
    }

    /// Moves `skip_invalid` out of the entries: it is a setting, not a swept key.
    fn take_skip_invalid(&mut self, origin: &str) -> Result<(), ConfigError> {
        if let Some(i) = self.entries.iter().position(|(k, _)| k == "skip_invalid") {
            match self.entries.remove(i).1 {
                Value::Boolean(b) => self.skip_invalid = b,
                other => {
                    let reason = format!("expected true or false, found a {}", other.type_str());
                    return Err(invalid(origin, "sweep.skip_invalid", reason));
                }
            }
        }
        Ok(())
    }

    /// `--set sweep.KEY=[...]` (replace or add one key) or `--set sweep={...}` (replace all).
    fn set(&mut self, key: Option<String>, value: Value) -> Result<(), String> {
        let Some(key) = key else {
            let Value::Table(table) = value else {
                return Err("`sweep` must be set to a table, e.g. sweep={} to run no sweep".to_owned());
            };
            self.entries.clear();
            self.skip_invalid = false;
            flatten("", table, &mut self.entries);
            return self.take_skip_invalid("--set").map_err(|e| e.to_string());
        };
        if key == "skip_invalid" {
            let Value::Boolean(b) = value else {
                return Err("`sweep.skip_invalid` must be true or false".to_owned());
            };
            self.skip_invalid = b;
            return Ok(());
        }
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
        Ok(())
    }

    fn remove(&mut self, key: &str) {
        self.entries.retain(|(k, _)| k != key);
    }

    /// Checks each entry is a non-empty array for a key that may vary between points.
    fn axes(&self, origin: &str) -> Result<Vec<Axis>, ConfigError> {
        self.entries.iter().map(|(key, value)| axis(key, value, origin)).collect()
    }
}

fn axis(key: &str, value: &Value, origin: &str) -> Result<Axis, ConfigError> {
    let shown = sweep_key(key);
    if UNSWEEPABLE.iter().any(|u| key == *u || key.strip_prefix(u).is_some_and(|r| r.starts_with('.'))) {
        let reason = format!("`{key}` applies to the whole experiment and cannot be swept; set it once");
        return Err(invalid(origin, &shown, reason));
    }
    match value {
        Value::Array(values) if !values.is_empty() => {
            Ok(Axis { key: key.to_owned(), values: values.clone() })
        }
        Value::Array(_) => {
            Err(invalid(origin, &shown, "the list of values is empty: give at least one".to_owned()))
        }
        other => Err(invalid(
            origin,
            &shown,
            format!("must be a list of values such as [1, 2, 3], found a {}", other.type_str()),
        )),
    }
}

/// How a sweep entry is named in messages: as it is written in the file.
fn sweep_key(key: &str) -> String {
    format!("sweep.\"{key}\"")
}

fn flatten(prefix: &str, table: Table, out: &mut Vec<(String, Value)>) {
    for (key, value) in table {
        let full = join(prefix, &key);
        match value {
            Value::Table(inner) => flatten(&full, inner, out),
            value => out.push((full, value)),
        }
    }
}

/// `toml::Table` sorts its keys; the sweep's columns follow the file instead.
fn sort_by_file_order(entries: &mut [(String, Value)], order: &[String]) {
    entries.sort_by_key(|(key, _)| order.iter().position(|k| k == key).unwrap_or(usize::MAX));
}

/// The product of the axes' lengths, refused beyond [`MAX_POINTS`].
fn point_count(axes: &[Axis], origin: &str) -> Result<usize, ConfigError> {
    axes.iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()).filter(|&n| n <= MAX_POINTS))
        .ok_or_else(|| {
            let reason = format!(
                "the sweep has more than {MAX_POINTS} points (the product of the value counts); sweep fewer values or split the experiment"
            );
            invalid(origin, "sweep", reason)
        })
}

/// The values of point `index`, the last axis varying fastest. Axes are never empty (see
/// [`axis`]), so the remainders are valid indices.
fn point_values(axes: &[Axis], mut index: usize) -> Vec<&Value> {
    let mut values = Vec::with_capacity(axes.len());
    for axis in axes.iter().rev() {
        values.push(&axis.values[index % axis.values.len()]);
        index /= axis.values.len();
    }
    values.reverse();
    values
}

fn build_point(
    tree: &Table,
    axes: &[Axis],
    index: usize,
    origin: &str,
    sets: &[AppliedSet],
    overrides: &Overrides,
) -> Result<Point, ConfigError> {
    let values = point_values(axes, index);
    let mut tree = tree.clone();
    let mut swept = Vec::with_capacity(axes.len());
    for (axis, value) in axes.iter().zip(&values) {
        let unknown = |reason| ConfigError::UnknownKey {
            origin: origin.to_owned(),
            key: sweep_key(&axis.key),
            suggestion: None,
            help: Some(reason),
        };
        let path = paths::KeyPath::parse(&tree, &axis.key).map_err(unknown)?;
        path.set(&mut tree, (*value).clone()).map_err(unknown)?;
        for canonical in path.concrete(&tree) {
            swept.push((canonical, axis.key.as_str(), value_text(value)));
        }
    }
    let blame = |e| attribute(e, sets, &swept);
    entry_server(&mut tree, origin).map_err(blame)?;
    let (mut spec, sources) = decode::experiment_sourced(&tree, origin).map_err(blame)?;
    spec.runs = overrides.runs.unwrap_or(spec.runs);
    spec.seed = overrides.seed.unwrap_or(spec.seed);
    validate(&spec, origin).map_err(blame)?;
    let strategies = spec.strategies.clone();
    let values = values.into_iter().map(value_text).collect();
    Ok(Point { values, spec, strategies, sources })
}

/// With `[[services]]`, `[server]` is the first service's server (DESIGN §3.7): its keys
/// without `name` and `calls`, filled in here for each point (so that everything that reads
/// the server reads the entry service). A file that gives both is refused.
fn entry_server(tree: &mut Table, origin: &str) -> Result<(), ConfigError> {
    hop_presets(tree, origin)?;
    let Some(Value::Array(services)) = tree.get("services") else { return Ok(()) };
    let Some(Value::Table(first)) = services.first() else { return Ok(()) };
    if tree.contains_key("server") {
        return Err(invalid(
            origin,
            "server",
            "is not used with [[services]]: the clients call the first service, which is the server; move these keys into it".to_string(),
        ));
    }
    let mut server = first.clone();
    server.remove("name");
    server.remove("calls");
    server.insert("kind".to_owned(), Value::String("queue".to_owned()));
    tree.insert("server".to_owned(), Value::Table(server));
    Ok(())
}

/// The keys of a client policy an edge of the call graph takes from a preset (the schema's
/// `hop_policy` keys); a preset's other keys (Retry-After handling, throttling, keys ...) do
/// not apply to an edge.
const HOP_PRESET_KEYS: [&str; 10] = [
    "max_attempts",
    "timeout",
    "route_timeout",
    "deadline",
    "retry_on",
    "backoff",
    "honor_dont_retry",
    "honor_overloaded",
    "budget",
    "breaker",
];

/// Resolves `preset = "NAME"` in every edge (`services[i].calls[j]`) and every strategy's
/// `hop_policy`: the preset's edge keys, then the table's own.
fn hop_presets(tree: &mut Table, origin: &str) -> Result<(), ConfigError> {
    let resolve = |table: &mut Table, key: String| -> Result<(), ConfigError> {
        let Some(preset) = table.remove("preset") else { return Ok(()) };
        let name = preset.as_str().unwrap_or_default().to_owned();
        let Some(found) = super::presets::find(&name) else {
            let names: Vec<&str> = super::presets::PRESETS.iter().map(|p| p.name).collect();
            return Err(invalid(
                origin,
                &format!("{key}.preset"),
                format!("unknown preset {name:?}; the presets are: {}", names.join(", ")),
            ));
        };
        let mut merged = decode::preset_table(found);
        merged.extend(decode::preset_hop_table(found));
        merged.retain(|k, _| HOP_PRESET_KEYS.contains(&k));
        for (k, v) in std::mem::take(table) {
            merged.insert(k, v);
        }
        *table = merged;
        Ok(())
    };
    if let Some(Value::Array(services)) = tree.get_mut("services") {
        for (i, service) in services.iter_mut().enumerate() {
            let Some(Value::Array(calls)) = service.as_table_mut().and_then(|t| t.get_mut("calls")) else {
                continue;
            };
            for (j, call) in calls.iter_mut().enumerate() {
                if let Value::Table(t) = call {
                    resolve(t, format!("services[{i}].calls[{j}]"))?;
                }
            }
        }
    }
    if let Some(Value::Table(client)) = tree.get_mut("client")
        && let Some(Value::Table(hop)) = client.get_mut("hop_policy")
    {
        resolve(hop, "client.hop_policy".to_owned())?;
    }
    if let Some(Value::Array(strategies)) = tree.get_mut("strategies") {
        for s in strategies.iter_mut().filter_map(Value::as_table_mut) {
            let name = s.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            if let Some(Value::Table(hop)) = s.get_mut("hop_policy") {
                resolve(hop, format!("strategies.{name}.hop_policy"))?;
            }
        }
    }
    Ok(())
}

/// The columns a point's call graph adds (`METRIC@SERVICE`, `METRIC@FROM:TO`); none without
/// `[[services]]`. A point whose `calls` name an unknown service has been refused already.
fn columns_of_graph(spec: &super::ExperimentSpec) -> Vec<String> {
    let names: Vec<String> = spec.services.iter().map(|s| s.name.clone()).collect();
    let index = |n: &str| names.iter().position(|m| m == n).unwrap_or(0);
    let edges: Vec<(usize, usize)> = spec
        .services
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.calls.iter().map(move |c| (i, c.service.as_str())))
        .map(|(i, to)| (i, index(to)))
        .collect();
    crate::metrics::graph::columns(&names, &edges)
}

/// `[output] reference`, checked against the sweep (see [`resolve_reference`]), refused at
/// `output.reference."KEY"`.
fn reference_point(
    reference: &Table,
    sweep_keys: &[String],
    points: &[Point],
    origin: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut pairs = Vec::with_capacity(reference.len());
    for (key, value) in reference {
        if matches!(value, Value::Table(_) | Value::Array(_)) {
            let reason =
                format!("expected one value of the swept key, such as \"2s\", found a {}", value.type_str());
            return Err(invalid(origin, &format!("output.reference.\"{key}\""), reason));
        }
        pairs.push((key.clone(), value_text(value)));
    }
    let values: Vec<&[String]> = points.iter().map(|p| p.values.as_slice()).collect();
    resolve_reference(sweep_keys, &values, &pairs).map_err(|BadReference { key, reason }| {
        let at = key.map_or("output.reference".to_owned(), |k| format!("output.reference.\"{k}\""));
        invalid(origin, &at, reason)
    })
}

/// Why [`resolve_reference`] refused a reference point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadReference {
    /// The key at fault; `None` when every value exists but no point has them all.
    pub key: Option<String>,
    pub reason: String,
}

/// A reference point (the verdict's: `[output] reference` or `--reference`) checked against
/// the sweep's keys and its points' values (as in the CSV columns): each key swept, each value one of its values (as written, or the same number or
/// duration), and some point with all of them. Returns the (key, value as in the CSV column)
/// pairs in the sweep's key order.
pub fn resolve_reference(
    sweep_keys: &[String],
    points: &[&[String]],
    pairs: &[(String, String)],
) -> Result<Vec<(String, String)>, BadReference> {
    let mut found = Vec::with_capacity(pairs.len());
    for (key, text) in pairs {
        let Some(k) = sweep_keys.iter().position(|s| s == key) else {
            let reason = if sweep_keys.is_empty() {
                "the experiment has no [sweep], so it has one point: there is no reference to choose"
                    .to_owned()
            } else {
                let hint = crate::suggest::closest(key, sweep_keys.iter().map(String::as_str))
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                format!("`{key}` is not a swept key{hint}; the swept keys are: {}", sweep_keys.join(", "))
            };
            return Err(BadReference { key: Some(key.clone()), reason });
        };
        let mut values: Vec<&str> = Vec::new();
        for p in points {
            if !values.contains(&p[k].as_str()) {
                values.push(&p[k]);
            }
        }
        let Some(value) = values.iter().find(|v| same_value(v, text)) else {
            let reason = format!("{text} is not one of the swept values of `{key}`: {}", values.join(", "));
            return Err(BadReference { key: Some(key.clone()), reason });
        };
        found.push((k, key.clone(), value.to_string()));
    }
    found.sort_by_key(|f| f.0);
    if !points.iter().any(|p| found.iter().all(|(k, _, v)| p[*k] == *v)) {
        let reason = "no sweep point has all these values ([sweep] skip_invalid left it out)".to_owned();
        return Err(BadReference { key: None, reason });
    }
    Ok(found.into_iter().map(|(_, k, v)| (k, v)).collect())
}

/// Whether two sweep values as CSV cells name the same value: the same text, or the same
/// number, or the same duration (`4s` and `4000ms`).
pub fn same_value(a: &str, b: &str) -> bool {
    a == b || matches!((value_number(a), value_number(b)), (Some(x), Some(y)) if x == y)
}

/// The number a sweep value (as a CSV cell) stands for, when it is one: a finite number, or
/// a duration in seconds.
pub fn value_number(value: &str) -> Option<f64> {
    value
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .or_else(|| super::Duration::parse(value).ok().map(|d| d.as_ns() as f64 / 1e9))
}

/// A value as it appears in a CSV cell (a swept value, a tuned key's level): strings without
/// quotes, numbers as TOML writes them (`800.0`, `10`).
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Re-words an error found at a key that came from `--set` (then it is the argument's fault)
/// or from `[sweep]` (then the message names the sweep entry).
fn attribute(err: ConfigError, sets: &[AppliedSet], swept: &[(String, &str, String)]) -> ConfigError {
    let Some(key) = error_key(&err) else {
        return err;
    };
    let caused = |s: &&AppliedSet| s.keys.iter().any(|k| overlaps(key, k) || changes_kind_of(k, key));
    if let Some(set) = sets.iter().rev().find(caused) {
        let set_key = set
            .keys
            .iter()
            .find(|k| overlaps(key, k) || changes_kind_of(k, key))
            .cloned()
            .unwrap_or_default();
        return ConfigError::BadOverride { arg: set.arg.clone(), reason: override_reason(err, &set_key) };
    }
    match swept.iter().find(|(canonical, _, _)| overlaps(key, canonical)) {
        Some((canonical, raw, value)) => from_sweep(err, canonical, raw, value),
        None => err,
    }
}

fn error_key(err: &ConfigError) -> Option<&str> {
    match err {
        ConfigError::UnknownKey { key, .. }
        | ConfigError::MissingKey { key, .. }
        | ConfigError::InvalidValue { key, .. } => Some(key),
        _ => None,
    }
}

/// True when one key is the other or lies inside it (`a.b` and `a.b.c`, `a.b[0]`).
fn overlaps(a: &str, b: &str) -> bool {
    inside(a, b) || inside(b, a)
}

/// True when `long` is `short` or a key inside it.
fn inside(long: &str, short: &str) -> bool {
    long.strip_prefix(short).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// True when `set_key` changes the kind (or distribution) of the table holding `key`: then
/// the table's other keys are judged against the new kind, and errors there are the set's.
fn changes_kind_of(set_key: &str, key: &str) -> bool {
    match set_key.rsplit_once('.') {
        Some((table, "kind" | "dist")) => inside(key, table),
        _ => false,
    }
}

/// The reason of a `--set` error. An unknown key that is a prefix of the set key (`clent` of
/// `clent.timeout`) gets its suggestion completed with the rest of the set key.
fn override_reason(err: ConfigError, set_key: &str) -> String {
    match err {
        ConfigError::UnknownKey { key, suggestion, help, .. } => {
            let full = if inside(set_key, &key) { set_key.to_owned() } else { key.clone() };
            let suggestion = suggestion.map(|s| format!("{s}{}", full.get(key.len()..).unwrap_or("")));
            let mut reason = format!("`{full}` is not a valid key");
            if let Some(s) = suggestion {
                reason.push_str(&format!(" (did you mean `{s}`?)"));
            }
            if let Some(h) = help {
                reason.push_str(&format!("; {h}"));
            }
            reason
        }
        ConfigError::MissingKey { key, help, .. } => {
            format!("missing key `{key}`{}", help.map(|h| format!("; {h}")).unwrap_or_default())
        }
        ConfigError::InvalidValue { key, reason, .. } => format!("`{key}`: {reason}"),
        other => other.to_string(),
    }
}

/// Points an error at the sweep entry that produced the bad key or value.
fn from_sweep(err: ConfigError, canonical: &str, raw: &str, value: &str) -> ConfigError {
    let note = format!("the value {value} comes from [sweep] \"{raw}\"");
    match err {
        // The swept key itself (or a table on its way) does not exist: name the sweep entry.
        ConfigError::UnknownKey { origin, key, suggestion, help } if key.len() <= canonical.len() => {
            let rest = canonical.get(key.len()..).unwrap_or("");
            let suggestion = suggestion.map(|s| sweep_key(&format!("{s}{rest}")));
            ConfigError::UnknownKey { origin, key: sweep_key(raw), suggestion, help }
        }
        // An unknown key inside a swept table value.
        ConfigError::UnknownKey { origin, key, suggestion, help } => {
            let help = Some(help.map_or(note.clone(), |h| format!("{h}; {note}")));
            ConfigError::UnknownKey { origin, key, suggestion, help }
        }
        ConfigError::MissingKey { origin, key, help } => {
            let help = Some(help.map_or(note.clone(), |h| format!("{h}; {note}")));
            ConfigError::MissingKey { origin, key, help }
        }
        ConfigError::InvalidValue { origin, key, reason } => {
            ConfigError::InvalidValue { origin, key, reason: format!("{reason} ({note})") }
        }
        other => other,
    }
}

use super::schema::check::{invalid, join};

#[cfg(test)]
mod tests;
