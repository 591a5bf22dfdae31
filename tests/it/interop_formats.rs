//! The library formats of `retrysim import` and `export` (src/interop/: grpc, aws,
//! resilience4j, polly, urllib3, axios-retry) against the rest of the crate: a library's
//! documented defaults import to exactly the policy of the repository's preset for it, and a
//! preset's strategy, exported to its library's format and imported again, is the same policy.

use crate::support::load_text;
use retrysim::experiment::{PolicySpec, merged_strategy};
use retrysim::interop::format;
use toml::{Table, Value};

const BASE: &str = r#"
name = "interop"
[workload]
kind = "open"
rate = 50.0
duration = "10s"
[server]
concurrency = 4
service_time = { dist = "constant", value = "10ms" }
"#;

/// An experiment whose strategies are `strategies`, as the loader resolves them.
fn policies(strategies: Vec<Table>) -> Vec<PolicySpec> {
    let mut root: Table = BASE.parse().unwrap();
    root.insert("strategies".into(), Value::Array(strategies.into_iter().map(Value::Table).collect()));
    let text = toml::to_string(&root).unwrap();
    let exp = load_text(&text, &[]);
    exp.points[0].strategies.iter().map(|s| s.policy.clone()).collect()
}

fn preset_strategy(preset: &str) -> Table {
    Table::from_iter([
        ("name".to_string(), Value::from("preset")),
        ("preset".to_string(), Value::from(preset)),
    ])
}

/// Each library's documented defaults (or, for gRPC, which has none, A6's example) in its
/// format, and the preset that states them.
const DEFAULTS: &[(&str, &str, &str)] = &[
    (
        "grpc",
        r#"{"methodConfig": [{"name": [{"service": "EchoService"}], "retryPolicy": {"maxAttempts": 4,
            "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"]}}], "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#,
        "grpc",
    ),
    ("aws", "[profile p]\nretry_mode = legacy\n", "aws-legacy"),
    ("aws", "[profile p]\nretry_mode = standard\n", "aws-standard"),
    ("aws", "[profile p]\nretry_mode = adaptive\n", "aws-adaptive"),
    (
        "resilience4j",
        "resilience4j:\n  retry:\n    instances:\n      p: {}\n  circuitbreaker:\n    instances:\n      p: {}\n",
        "resilience4j",
    ),
    ("polly", r#"{"Retry": {}, "CircuitBreaker": {}}"#, "polly-v8"),
    ("urllib3", "{}", "urllib3"),
    ("axios-retry", "{}", "axios-retry"),
];

#[test]
fn a_librarys_defaults_import_to_its_presets_policy() {
    for (kind, text, preset) in DEFAULTS {
        let imported =
            format(kind).unwrap().import(text, "imported").unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(imported.server.is_empty(), "{kind}");
        let p = policies(vec![imported.strategy.clone(), preset_strategy(preset)]);
        assert_eq!(p[0], p[1], "{kind} defaults vs preset {preset}:\n{:#?}", imported.strategy);
    }
}

#[test]
fn a_presets_strategy_exports_to_its_library_and_imports_as_the_same_policy() {
    for (kind, _, preset) in DEFAULTS {
        let mut tree: Table = BASE.parse().unwrap();
        tree.insert("strategies".into(), Value::Array(vec![Value::Table(preset_strategy(preset))]));
        let mut merged = merged_strategy(&tree, 0).unwrap();
        merged.insert("name".into(), Value::from("p"));
        let f = format(kind).unwrap();
        let exported = f.export(&merged, false).unwrap_or_else(|e| panic!("{kind} export of {preset}: {e}"));
        assert!(exported.dropped.is_empty());
        let back = f.import(&exported.text, "p").unwrap_or_else(|e| panic!("{kind}: {e}\n{}", exported.text));
        let p = policies(vec![back.strategy, preset_strategy(preset)]);
        assert_eq!(p[0], p[1], "{kind}: {preset} exported as\n{}", exported.text);
    }
}

#[test]
fn every_format_is_listed_once_with_its_own_file_ending() {
    let kinds: Vec<&str> = retrysim::interop::formats().iter().map(|f| f.kind()).collect();
    for kind in ["grpc", "aws", "resilience4j", "polly", "urllib3", "axios-retry"] {
        assert_eq!(kinds.iter().filter(|k| **k == kind).count(), 1, "{kind} in {kinds:?}");
        assert_eq!(format(kind).unwrap().kind(), kind);
    }
    let mut endings: Vec<&str> = retrysim::interop::formats().iter().map(|f| f.extension()).collect();
    endings.sort();
    endings.dedup();
    assert_eq!(endings.len(), kinds.len());
}
