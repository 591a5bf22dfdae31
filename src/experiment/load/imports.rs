//! `[[strategies]] import = { kind = "envoy", file = "route.yaml" }`: the strategy is a
//! production config file, read (again at every load) by its [`crate::interop`] format and
//! expanded into the strategy's own keys, as a preset is: the keys the strategy sets itself
//! override the imported ones, which override its preset's and `[client]`'s.

use super::super::ConfigError;
use super::super::schema::IMPORT;
use super::super::schema::check::{Checker, Fill, invalid};
use super::decode::merge;
use super::paths::strategy_key;
use crate::interop;
use std::path::Path;
use toml::{Table, Value};

/// The files imported, with their text, in strategy order: what the experiment's fingerprint
/// adds to the file's own text.
pub(super) type ImportedFiles = Vec<String>;

/// Replaces every strategy's `import` by the keys its file gives (`dir` is the experiment
/// file's folder, which a relative `file` is read from); the `[server]` keys an import
/// implies are added where the file does not set them.
pub(super) fn expand(tree: &mut Table, dir: &Path, origin: &str) -> Result<ImportedFiles, ConfigError> {
    let names: Vec<Option<String>> = match tree.get("strategies") {
        Some(Value::Array(items)) => {
            items.iter().map(|s| s.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
        }
        _ => return Ok(Vec::new()),
    };
    let shown = |i: usize| strategy_key(&names.iter().map(Option::as_deref).collect::<Vec<_>>(), i);
    let mut texts = Vec::new();
    let mut server_from_imports = Table::new();
    let file_server: Table = tree.get("server").and_then(Value::as_table).cloned().unwrap_or_default();
    let Some(Value::Array(strategies)) = tree.get_mut("strategies") else { return Ok(Vec::new()) };
    for (i, entry) in strategies.iter_mut().enumerate() {
        let Value::Table(own) = entry else { continue };
        let Some(spec) = own.remove("import") else { continue };
        let key = format!("{}.import", shown(i));
        let (kind, file) = import_spec(&spec, &key, origin)?;
        let format =
            interop::format(&kind).map_err(|e| invalid(origin, &format!("{key}.kind"), e.to_string()))?;
        let path = dir.join(&file);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            invalid(
                origin,
                &format!("{key}.file"),
                format!(
                    "cannot read {}: {e} (a relative path is read from the experiment file's folder)",
                    path.display()
                ),
            )
        })?;
        let name = names[i].clone().unwrap_or_default();
        let imported = format
            .import(&text, &name)
            .map_err(|e| invalid(origin, &key, format!("{}: {e}", path.display())))?;
        let mut expanded = imported.strategy;
        expanded.remove("name");
        merge(&mut expanded, own);
        *own = expanded;
        for (k, v) in imported.server {
            if file_server.contains_key(&k) {
                continue;
            }
            match server_from_imports.get(&k) {
                Some(earlier) if *earlier != v => {
                    return Err(invalid(
                        origin,
                        &key,
                        format!(
                            "{} implies server.{k} = {v}, another import {earlier}: set server.{k} in the file",
                            path.display()
                        ),
                    ));
                }
                _ => {
                    server_from_imports.insert(k, v);
                }
            }
        }
        texts.push(format!("{file}\n{text}"));
    }
    if !server_from_imports.is_empty()
        && let Some(Value::Table(server)) = tree.get_mut("server")
    {
        server.extend(server_from_imports);
    }
    Ok(texts)
}

/// `{ kind = "...", file = "..." }`, checked against the schema's `IMPORT` table.
fn import_spec(v: &Value, key: &str, origin: &str) -> Result<(String, String), ConfigError> {
    let name_entry = |path: &str, i: usize, _: &Value| format!("{path}[{i}]");
    let checker = Checker { origin, fill: Fill::Defaults, partials: Fill::Defaults, name_entry: &name_entry };
    let mut checked = v.clone();
    checker.table(key, &IMPORT, &mut checked)?;
    let text = |k: &str| checked.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let file = text("file");
    if file.trim().is_empty() {
        return Err(invalid(
            origin,
            &format!("{key}.file"),
            "is empty: name the file, relative to the experiment file".to_owned(),
        ));
    }
    Ok((text("kind"), file))
}
