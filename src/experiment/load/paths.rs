//! Key paths (`server.concurrency`, `strategies.NAME.backoff.base`, `strategies.*.max_attempts`,
//! `server.faults[0].start`): parsed once into typed steps ([`KeyPath`]), then used by `--set`
//! and `[sweep]` to write a value into the tree.

use crate::suggest::{closest, list};
use toml::{Table, Value};

/// One step of a key path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    /// `*` after `strategies`: every strategy.
    Every,
}

/// A parsed key path. Strategies are resolved to their index when the path is parsed (names
/// may contain dots, so the names in the tree decide where a name ends).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct KeyPath {
    steps: Vec<Step>,
}

impl KeyPath {
    /// Parses `key` against `tree` (for strategy names).
    pub(super) fn parse(tree: &Table, key: &str) -> Result<KeyPath, String> {
        Ok(KeyPath { steps: resolve(tree, key.trim())? })
    }

    /// Writes `value` here in `tree`, creating missing tables on the way (every strategy's
    /// table for `strategies.*`).
    pub(super) fn set(&self, tree: &mut Table, value: Value) -> Result<(), String> {
        let mut root = Value::Table(std::mem::take(tree));
        let result = put(&mut root, &self.steps, value, "");
        if let Value::Table(t) = root {
            *tree = t;
        }
        result
    }

    /// The key as messages name it (`strategies.NAME...` or `strategies.*...`).
    pub(super) fn shown(&self, tree: &Table) -> String {
        render(tree, &self.steps)
    }

    /// The concrete keys it writes: one per strategy for `strategies.*`.
    pub(super) fn concrete(&self, tree: &Table) -> Vec<String> {
        match self.steps.iter().position(|s| *s == Step::Every) {
            None => vec![self.shown(tree)],
            Some(i) => (0..strategy_names(tree).len())
                .map(|n| {
                    let mut steps = self.steps.clone();
                    steps[i] = Step::Index(n);
                    render(tree, &steps)
                })
                .collect(),
        }
    }
}

/// Writes `value` at `key` in `tree`, creating missing tables on the way, and returns the key
/// as the decoder names it in errors. The error is a reason for the user.
#[cfg(test)]
pub(super) fn set(tree: &mut Table, key: &str, value: Value) -> Result<String, String> {
    let path = KeyPath::parse(tree, key)?;
    path.set(tree, value)?;
    Ok(path.shown(tree))
}

/// Parses `key` into steps; `strategies.NAME` becomes the index of the strategy named NAME,
/// `strategies.*` every strategy.
fn resolve(tree: &Table, key: &str) -> Result<Vec<Step>, String> {
    if key.is_empty() {
        return Err("the key is empty: write KEY=VALUE, e.g. server.concurrency=8".to_owned());
    }
    let strategies = Step::Key("strategies".to_owned());
    if let Some(rest) = key.strip_prefix("strategies.*") {
        if strategy_names(tree).is_empty() {
            return Err("`strategies.*`: the file has no [[strategies]]".to_owned());
        }
        let mut steps = vec![strategies, Step::Every];
        match rest.strip_prefix('.') {
            Some(rest) => steps.extend(parse(rest)?),
            None if rest.is_empty() => {}
            None => return Err(format!("`{key}`: write strategies.*.KEY, e.g. strategies.*.max_attempts")),
        }
        return Ok(steps);
    }
    match key.strip_prefix("strategies.") {
        Some(rest) => {
            let (index, rest) = find_strategy(tree, rest)?;
            let mut steps = vec![strategies, Step::Index(index)];
            if !rest.is_empty() {
                steps.extend(parse(rest)?);
            }
            Ok(steps)
        }
        None => parse(key),
    }
}

/// `a.b[2].c` -> [a, b, 2, c].
fn parse(key: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for part in key.split('.') {
        let (name, mut indices) = part.split_once('[').map_or((part, ""), |(n, i)| (n, i));
        if name.trim().is_empty() {
            return Err(format!("`{key}` has an empty part: write keys like server.concurrency"));
        }
        steps.push(Step::Key(name.trim().to_owned()));
        while !indices.is_empty() {
            let (number, rest) = indices
                .split_once(']')
                .ok_or_else(|| format!("`{key}`: `[` without `]`: write an index like faults[0]"))?;
            let index = number
                .trim()
                .parse()
                .map_err(|_| format!("`{key}`: `{number}` is not an index: write it like faults[0]"))?;
            steps.push(Step::Index(index));
            indices = rest.strip_prefix('[').unwrap_or(rest);
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(format!("`{key}`: unexpected `{rest}` after `]`"));
            }
        }
    }
    Ok(steps)
}

/// The strategy whose name starts `rest` (followed by `.` or nothing). Names may contain
/// dots, so the longest matching name wins. Returns its index and what follows the name.
fn find_strategy<'k>(tree: &Table, rest: &'k str) -> Result<(usize, &'k str), String> {
    let names = strategy_names(tree);
    names
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let name = (*name)?;
            let after = rest.strip_prefix(name)?;
            (after.is_empty() || after.starts_with('.')).then_some((i, name.len(), after))
        })
        .max_by_key(|&(_, len, _)| len)
        .map(|(i, _, after)| (i, after.strip_prefix('.').unwrap_or(after)))
        .ok_or_else(|| unknown_strategy(rest, &names))
}

fn unknown_strategy(rest: &str, names: &[Option<&str>]) -> String {
    let wanted = rest.split('.').next().unwrap_or(rest);
    let known: Vec<&str> = names.iter().flatten().copied().collect();
    if known.is_empty() {
        return format!("no strategy named `{wanted}`: the file has no [[strategies]] with a name");
    }
    let hint =
        closest(wanted, known.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
    format!("no strategy named `{wanted}`{hint}; the strategies are: {}", list(known))
}

/// The `name` of each `[[strategies]]` entry, `None` where it has no string name.
fn strategy_names(tree: &Table) -> Vec<Option<&str>> {
    match tree.get("strategies") {
        Some(Value::Array(items)) => items.iter().map(|s| s.get("name").and_then(Value::as_str)).collect(),
        _ => Vec::new(),
    }
}

/// How messages name strategy `index`: `strategies.NAME` when NAME is unambiguous, else
/// `strategies[index]`. Shared by the decoder and the validator so that both name a strategy
/// as `--set` addresses it.
pub fn strategy_key(names: &[Option<&str>], index: usize) -> String {
    match names.get(index).copied().flatten() {
        Some(name) if !name.trim().is_empty() && names.iter().filter(|n| **n == Some(name)).count() == 1 => {
            format!("strategies.{name}")
        }
        _ => format!("strategies[{index}]"),
    }
}

/// The decoder's spelling of `steps`.
fn render(tree: &Table, steps: &[Step]) -> String {
    let mut out = String::new();
    let mut rest = steps;
    if let [Step::Key(k), Step::Index(i), tail @ ..] = steps
        && k == "strategies"
    {
        out = strategy_key(&strategy_names(tree), *i);
        rest = tail;
    }
    for step in rest {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Every => out.push_str(".*"),
        }
    }
    out
}

/// Writes `value` under `cur` at `steps`; `shown` is the key walked so far, for messages.
fn put(cur: &mut Value, steps: &[Step], value: Value, shown: &str) -> Result<(), String> {
    let Some((step, rest)) = steps.split_first() else {
        *cur = value;
        return Ok(());
    };
    let here = match step {
        Step::Key(k) if shown.is_empty() => k.clone(),
        Step::Key(k) => format!("{shown}.{k}"),
        Step::Index(i) => format!("{shown}[{i}]"),
        Step::Every => format!("{shown}.*"),
    };
    if *step == Step::Every {
        let Value::Array(items) = cur else {
            return Err(format!("`{shown}` is a {}, not a list of [[strategies]]", cur.type_str()));
        };
        if items.is_empty() {
            return Err("`strategies.*`: the file has no [[strategies]]".to_owned());
        }
        for item in items.iter_mut() {
            put(item, rest, value.clone(), &here)?;
        }
        return Ok(());
    }
    let child = match (step, cur) {
        (Step::Key(k), Value::Table(table)) => {
            if !table.contains_key(k) && matches!(rest.first(), Some(Step::Index(_))) {
                return Err(format!(
                    "`{here}` is absent: there is no entry to index; add one to the file first"
                ));
            }
            table.entry(k.clone()).or_insert_with(|| Value::Table(Table::new()))
        }
        (Step::Index(i), Value::Array(items)) => {
            let len = items.len();
            items.get_mut(*i).ok_or_else(|| format!("`{shown}` has {len} entries: there is no [{i}]"))?
        }
        (Step::Key(_), other) => {
            return Err(format!("`{shown}` is a {}, not a table", other.type_str()));
        }
        (Step::Index(_), other) => {
            return Err(format!("`{shown}` is a {}, not a list", other.type_str()));
        }
        (Step::Every, _) => unreachable!("handled above"),
    };
    put(child, rest, value, &here)
}

/// A `--set` value: TOML if it parses as one value (`500`, `0.1`, `true`, `"x"`,
/// `{ kind = "none" }`, `[1, 2]`), else the text itself, so that `client.timeout=2s` works
/// without shell-escaped quotes. A date-time is kept as text: no key of the format takes one.
pub(super) fn parse_value(text: &str) -> Value {
    match text.parse::<Value>() {
        Ok(Value::Datetime(_)) | Err(_) => Value::String(text.to_owned()),
        Ok(value) => value,
    }
}

/// For `--set sweep.KEY=...`: `Some(Some(KEY))`; for `--set sweep=...`: `Some(None)`. `KEY`
/// may be quoted as in the file: `sweep."workload.rate"`.
pub(super) fn sweep_target(key: &str) -> Option<Option<String>> {
    let key = key.trim();
    if key == "sweep" {
        return Some(None);
    }
    let rest = key.strip_prefix("sweep.")?.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| rest.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
        .unwrap_or(rest);
    Some(Some(unquoted.to_owned()))
}

/// The keys of `[sweep]` in the order the file writes them, flattened like
/// `super::flatten` does. `toml::Table` sorts keys, so the order comes from the spans of a
/// second, span-keeping parse.
pub(super) fn sweep_order(text: &str) -> Vec<String> {
    key_order(text, &["sweep"])
}

/// The dotted keys under the table at `path` (`["tune", "space"]`) in the order the file
/// writes them (`toml::Table` sorts keys; this reads the spans of a second, span-keeping
/// parse), nested tables flattened into dotted keys; empty when the file has no such table.
pub fn key_order(text: &str, path: &[&str]) -> Vec<String> {
    let Ok(doc) = toml::de::DeTable::parse(text) else {
        return Vec::new();
    };
    let mut table = doc.get_ref();
    for step in path {
        match table.get(*step).map(|v| v.get_ref()) {
            Some(toml::de::DeValue::Table(inner)) => table = inner,
            _ => return Vec::new(),
        }
    }
    let mut keys = Vec::new();
    spanned_keys("", table, &mut keys);
    keys.sort_by_key(|(start, _)| *start);
    keys.into_iter().map(|(_, k)| k).collect()
}

fn spanned_keys(prefix: &str, table: &toml::de::DeTable<'_>, out: &mut Vec<(usize, String)>) {
    for (key, value) in table.iter() {
        let full = super::join(prefix, key.get_ref());
        match value.get_ref() {
            toml::de::DeValue::Table(inner) => spanned_keys(&full, inner, out),
            _ => out.push((key.span().start, full)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Table {
        text.parse().unwrap()
    }

    const TWO: &str = "[[strategies]]\nname = \"a\"\n[[strategies]]\nname = \"v1.5\"\n";

    #[test]
    fn parses_keys_with_indices() {
        let k = |s: &str| Step::Key(s.to_owned());
        assert_eq!(
            parse("server.faults[1].start").unwrap(),
            vec![k("server"), k("faults"), Step::Index(1), k("start")]
        );
        assert_eq!(parse("a[0][2]").unwrap(), vec![k("a"), Step::Index(0), Step::Index(2)]);
        assert!(parse("a..b").unwrap_err().contains("empty part"));
        assert!(parse("a[x]").unwrap_err().contains("not an index"));
        assert!(parse("a[1").unwrap_err().contains("without `]`"));
        assert!(parse("a[1]x").unwrap_err().contains("unexpected"));
    }

    #[test]
    fn sets_nested_keys_creating_tables() {
        let mut t = tree("name = \"x\"");
        assert_eq!(set(&mut t, "client.max_attempts", Value::Integer(3)).unwrap(), "client.max_attempts");
        assert_eq!(t["client"]["max_attempts"].as_integer(), Some(3));
        assert_eq!(set(&mut t, " network.latency.mean ", Value::Integer(1)).unwrap(), "network.latency.mean");
        assert!(set(&mut t, "name.x", Value::Integer(1)).unwrap_err().contains("is a string, not a table"));
        assert!(set(&mut t, "", Value::Integer(1)).unwrap_err().contains("empty"));
    }

    #[test]
    fn finds_strategies_by_name_even_with_dots() {
        let mut t = tree(TWO);
        let key = set(&mut t, "strategies.v1.5.backoff.base", Value::String("1s".into())).unwrap();
        assert_eq!(key, "strategies.v1.5.backoff.base");
        assert_eq!(t["strategies"][1]["backoff"]["base"].as_str(), Some("1s"));
        assert!(t["strategies"][0].get("backoff").is_none());
        let key = set(&mut t, "strategies[0].max_attempts", Value::Integer(2)).unwrap();
        assert_eq!(key, "strategies.a.max_attempts");
        let err = set(&mut t, "strategies.b.backoff", Value::Integer(1)).unwrap_err();
        assert!(err.contains("no strategy named `b`") && err.contains("a, v1.5"), "{err}");
        let err = set(&mut tree(""), "strategies.x.backoff", Value::Integer(1)).unwrap_err();
        assert!(err.contains("no [[strategies]]"), "{err}");
    }

    #[test]
    fn a_star_reaches_every_strategy() {
        let mut t = tree(TWO);
        let key = set(&mut t, "strategies.*.max_attempts", Value::Integer(3)).unwrap();
        assert_eq!(key, "strategies.*.max_attempts");
        assert_eq!(t["strategies"][0]["max_attempts"].as_integer(), Some(3));
        assert_eq!(t["strategies"][1]["max_attempts"].as_integer(), Some(3));
        let path = KeyPath::parse(&t, "strategies.*.backoff.base").unwrap();
        assert_eq!(path.concrete(&t), ["strategies.a.backoff.base", "strategies.v1.5.backoff.base"]);
        assert!(
            set(&mut tree(""), "strategies.*.x", Value::Integer(1))
                .unwrap_err()
                .contains("no [[strategies]]")
        );
        assert!(set(&mut t, "strategies.*x", Value::Integer(1)).unwrap_err().contains("strategies.*.KEY"));
    }

    #[test]
    fn indexes_existing_arrays_only() {
        let mut t = tree("[server]\nfaults = [{ kind = \"outage\" }]");
        set(&mut t, "server.faults[0].start", Value::String("1s".into())).unwrap();
        assert_eq!(t["server"]["faults"][0]["start"].as_str(), Some("1s"));
        assert!(
            set(&mut t, "server.faults[3].start", Value::Integer(1)).unwrap_err().contains("has 1 entries")
        );
        assert!(set(&mut t, "server.errors[0].status", Value::Integer(1)).unwrap_err().contains("absent"));
        assert!(set(&mut t, "server[0]", Value::Integer(1)).unwrap_err().contains("not a list"));
    }

    #[test]
    fn labels_strategies_by_unique_name() {
        let names = [Some("a"), Some("b"), Some("b"), None, Some("")];
        assert_eq!(strategy_key(&names, 0), "strategies.a");
        assert_eq!(strategy_key(&names, 1), "strategies[1]");
        assert_eq!(strategy_key(&names, 3), "strategies[3]");
        assert_eq!(strategy_key(&names, 4), "strategies[4]");
    }

    #[test]
    fn values_parse_as_toml_or_fall_back_to_text() {
        assert_eq!(parse_value("500"), Value::Integer(500));
        assert_eq!(parse_value("0.1"), Value::Float(0.1));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("\"x\""), Value::String("x".into()));
        assert_eq!(parse_value("2s"), Value::String("2s".into()));
        assert_eq!(parse_value("1979-05-27"), Value::String("1979-05-27".into()));
        assert!(parse_value("{ kind = \"none\" }").is_table());
        assert_eq!(parse_value("[1, 2]").as_array().map(Vec::len), Some(2));
        assert_eq!(parse_value("1\nname = 2"), Value::String("1\nname = 2".into()));
    }

    #[test]
    fn sweep_targets_accept_quoted_keys() {
        assert_eq!(sweep_target("sweep.\"workload.rate\""), Some(Some("workload.rate".into())));
        assert_eq!(sweep_target("sweep.workload.rate"), Some(Some("workload.rate".into())));
        assert_eq!(sweep_target("sweep"), Some(None));
        assert_eq!(sweep_target("sweeps.x"), None);
    }

    #[test]
    fn sweep_order_follows_the_file() {
        let text = "[sweep]\n\"z.b\" = [1]\na = [2]\nm.n = [3]\n";
        assert_eq!(sweep_order(text), vec!["z.b", "a", "m.n"]);
        let tune = "[tune.space]\n\"max_attempts\" = [1, 2]\nbackoff.cap = [1]\n\"backoff.base\" = [2]\n";
        assert_eq!(key_order(tune, &["tune", "space"]), vec!["max_attempts", "backoff.cap", "backoff.base"]);
        assert!(key_order(tune, &["tune", "nope"]).is_empty());
    }
}
