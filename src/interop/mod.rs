//! Production config files to strategies and back (`retrysim import`, `retrysim export`,
//! `[tune] export`, `[[strategies]] import = { ... }`).
//!
//! Every format is one file implementing [`Format`]; both directions go through one
//! intermediate form, a `[[strategies]]` table in retrysim's own keys (as an experiment file
//! writes it, [`crate::experiment`] checks it). An import applies every default the library
//! applies when a field is absent and says so in [`Imported::notes`], citing
//! `docs/retry-policies.md`; an export carries every value the target can express and refuses
//! (or, when `lossy`, lists in [`Exported::dropped`]) what it cannot. The round trip
//! `import(export(s)) == s` holds key by key for every strategy a target can express.

use crate::engine::Span;
use toml::Table;

/// What reading a production config file gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The `[[strategies]]` table: `name`, then retrysim keys exactly as an experiment file
    /// writes them (durations as strings with units, e.g. `"25ms"`).
    pub strategy: Table,
    /// `[server]` keys the file implies (a proxy's shared retry budget, say); empty if none.
    pub server: Table,
    /// One line per library default applied (with its source) and per field ignored or
    /// unknown, for the user to read; printed as `#` comments above the block.
    pub notes: Vec<String>,
}

/// What writing a strategy in a production format gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The file's text, ready to write (its comments say what the target cannot express).
    pub text: String,
    /// Each retrysim key the target could not carry, with why (empty unless `lossy`).
    pub dropped: Vec<String>,
}

/// One production config format, read and written.
pub trait Format: Sync {
    /// The name `retrysim import KIND` and `export KIND` take, e.g. `"envoy"`.
    fn kind(&self) -> &'static str;
    /// The ending of the exported file's name: `recommendation.` + this, e.g. `"envoy.yaml"`.
    fn extension(&self) -> &'static str;
    /// Read a file of this format into a strategy called `name`.
    fn import(&self, text: &str, name: &str) -> Result<Imported, InteropError>;
    /// Write `strategy` (a complete `[[strategies]]` table, `[client]` keys and preset
    /// already folded in) in this format. Without `lossy`, a key the target cannot express
    /// faithfully is an error naming it.
    fn export(&self, strategy: &Table, lossy: bool) -> Result<Exported, InteropError>;
}

/// Why a config file could not be read or a strategy not written (exit code 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InteropError {
    /// `KIND` names no format.
    #[error("unknown format {kind:?}: use one of {}", known_kinds().join(", "))]
    UnknownKind { kind: String },
    /// The file is not valid YAML / JSON / INI / TOML for its format.
    #[error("{kind}: the file does not parse: {message}")]
    Parse { kind: &'static str, message: String },
    /// A field's value is missing, out of range or of the wrong type.
    #[error("{kind}: {field}: {problem}; {fix}")]
    Field { kind: &'static str, field: String, problem: String, fix: String },
    /// The file uses something retrysim cannot simulate faithfully (refused, not approximated).
    #[error("{kind}: {field}: retrysim cannot represent this: {why}")]
    Unrepresentable { kind: &'static str, field: String, why: String },
    /// The strategy uses a key the target format cannot express (pass --lossy to drop it).
    #[error("{kind}: cannot express `{key}`: {why}; pass --lossy to write the file without it")]
    Inexpressible { kind: &'static str, key: String, why: String },
}

/// Every format, in a stable order (as `retrysim import --help` lists them).
pub fn formats() -> &'static [&'static dyn Format] {
    &[]
}

/// The format called `kind`.
pub fn format(kind: &str) -> Result<&'static dyn Format, InteropError> {
    formats()
        .iter()
        .copied()
        .find(|f| f.kind() == kind)
        .ok_or_else(|| InteropError::UnknownKind { kind: kind.to_string() })
}

fn known_kinds() -> Vec<&'static str> {
    formats().iter().map(|f| f.kind()).collect()
}

/// A duration as the intermediate table writes it: the largest of s, ms, us, ns that states it
/// exactly (`"25ms"`, `"1.5s"` stays `"1500ms"`), so that an import of an export compares equal
/// key by key whatever unit the production file used.
pub fn duration_text(span: Span) -> String {
    let ns = span.as_ns();
    match ns {
        0 => "0s".to_string(),
        _ if ns.is_multiple_of(1_000_000_000) => format!("{}s", ns / 1_000_000_000),
        _ if ns.is_multiple_of(1_000_000) => format!("{}ms", ns / 1_000_000),
        _ if ns.is_multiple_of(1_000) => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_in_their_largest_exact_unit() {
        let text = |s: &str| duration_text(Span::parse(s).unwrap());
        assert_eq!(text("0"), "0s");
        assert_eq!(text("0.025s"), "25ms");
        assert_eq!(text("1.5s"), "1500ms");
        assert_eq!(text("2m"), "120s");
        assert_eq!(text("250us"), "250us");
        assert_eq!(text("1.0000001s"), "1000000100ns");
    }

    #[test]
    fn an_unknown_kind_names_the_known_ones() {
        let err = format("nginx").map(|f| f.kind()).unwrap_err();
        assert!(err.to_string().starts_with("unknown format \"nginx\""), "{err}");
    }
}
