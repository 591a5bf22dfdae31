//! A `[[strategies]]` table as a block of TOML lines to paste into an experiment file: `name`,
//! `preset`, single values, then tables inline, each on one line (what `retrysim import`,
//! `retrysim fit` and `recommendation.toml` print).

use std::fmt::Write as _;
use toml::{Table, Value};

/// A TOML key, quoted when it is not bare.
pub fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_owned()
    } else {
        Value::String(k.to_owned()).to_string()
    }
}

/// A value on one line: tables inline, `kind` (or `dist`) first.
pub fn inline(v: &Value) -> String {
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

/// `table` under the header `header` (`[[strategies]]`, `[server]`): `name` and `preset` first,
/// then single values, then tables, each group in key order.
pub fn block(header: &str, table: &Table) -> String {
    let mut keys: Vec<&String> = table.keys().collect();
    let rank = |k: &str, v: &Value| match (k, v) {
        ("name", _) => 0,
        ("preset", _) => 1,
        (_, Value::Table(_)) => 3,
        _ => 2,
    };
    keys.sort_by_key(|k| (rank(k, &table[k.as_str()]), k.as_str()));
    let mut out = format!("{header}\n");
    for k in keys {
        let _ = writeln!(out, "{} = {}", key(k), inline(&table[k.as_str()]));
    }
    out
}

/// What `retrysim import` prints: the notes as `#` comments, the `[[strategies]]` block, and
/// the `[server]` keys the file implies (to merge into the experiment's `[server]`).
pub fn printed(kind: &str, file: &str, imported: &super::Imported) -> String {
    let mut out = format!("# retrysim import {kind} {file}\n");
    for note in &imported.notes {
        let _ = writeln!(out, "# {note}");
    }
    out.push_str(&block("[[strategies]]", &imported.strategy));
    if !imported.server.is_empty() {
        out.push_str(
            "\n# The file also implies these [server] keys: merge them into the experiment's [server].\n",
        );
        out.push_str(&block("[server]", &imported.server));
    }
    out
}
