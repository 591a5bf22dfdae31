//! Everything that can be wrong with an experiment file or its overrides. Each variant maps to
//! exit code 2 and its message names the key and tells the fix.

use std::path::PathBuf;

/// Bad input: refused before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read experiment file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML.
    #[error("{origin}: not valid TOML: {message}")]
    Syntax { origin: String, message: String },
    /// A key that the experiment format does not have.
    #[error("{origin}: unknown key `{key}`{}{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default(), help_text(help))]
    UnknownKey {
        origin: String,
        key: String,
        /// The closest valid key, when one is close enough to be a likely typo.
        suggestion: Option<String>,
        /// What is valid here, when there is no close suggestion.
        help: Option<String>,
    },
    /// A required key is absent.
    #[error("{origin}: missing key `{key}`{}", help_text(help))]
    MissingKey {
        origin: String,
        key: String,
        /// What to write, e.g. the valid kinds.
        help: Option<String>,
    },
    /// A key whose value is impossible.
    #[error("{origin}: `{key}`: {reason}")]
    InvalidValue { origin: String, key: String, reason: String },
    /// A `--set` argument that is not `KEY=VALUE` or names no key of the format.
    #[error("--set {arg}: {reason}")]
    BadOverride { arg: String, reason: String },
}

/// Renders an optional hint after the main message.
fn help_text(help: &Option<String>) -> String {
    help.as_ref().map(|h| format!("; {h}")).unwrap_or_default()
}
