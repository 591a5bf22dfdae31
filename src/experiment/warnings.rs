//! Setups that are valid but test less than they seem: a fault the run never reaches, a load
//! too short around a fault for recovery to be measured, a horizon that cuts the workload
//! short, a timeout the deadline always beats. `check` and `run` print these on stderr and
//! carry on (exit 0); errors are in `validate`.

use super::spec::{ExperimentSpec, IdempotencyMode, ServerSpec};
use super::{Experiment, Strategy};
use crate::metrics::recovery::{BUCKET, HEALTHY_RUN};

const BUCKET_NS: u64 = BUCKET.as_ns();

const HEALTHY_RUN_S: u64 = HEALTHY_RUN as u64;

/// Whole 1 s buckets that end by `t`.
fn whole_seconds_before(t: u64) -> u64 {
    t / BUCKET_NS
}

/// Whole 1 s buckets that start at or after `from` and end by `to`.
fn whole_seconds_after(from: u64, to: u64) -> u64 {
    (to / BUCKET_NS).saturating_sub(from.div_ceil(BUCKET_NS))
}

/// One warning: the key it is about and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

/// Every warning of every sweep point, each reported once (in point order).
pub fn warnings(exp: &Experiment) -> Vec<Warning> {
    let mut all: Vec<Warning> = Vec::new();
    for point in &exp.points {
        for w in point_warnings(&point.spec, &point.strategies) {
            if !all.contains(&w) {
                all.push(w);
            }
        }
        for w in shadowed_client_keys(point) {
            if !all.contains(&w) {
                all.push(w);
            }
        }
    }
    all
}

/// A `[client]` key that no strategy uses because presets replace (or drop, with a table of
/// another kind) it is set but never used: what the file says is not what runs. Strategies
/// that set the key themselves are not counted as shadowed: their own value is what the file
/// says.
fn shadowed_client_keys(point: &super::Point) -> Vec<Warning> {
    super::provenance::shadowed_client_keys(&point.sources)
        .into_iter()
        .map(|k| {
            let who = if k.set_by_strategies.is_empty() {
                format!("every strategy's preset ({}) sets it", k.presets.join(", "))
            } else {
                format!(
                    "the presets ({}) set it and the other strategies ({}) set it themselves",
                    k.presets.join(", "),
                    k.set_by_strategies.join(", ")
                )
            };
            Warning {
                message: format!(
                    "{who}, so [client]'s value is never used; set it in the strategies instead (e.g. --set strategies.*.{}=...), `retrysim explain` shows where each value comes from",
                    k.key
                ),
                key: format!("client.{}", k.key),
            }
        })
        .collect()
}

fn point_warnings(spec: &ExperimentSpec, strategies: &[Strategy]) -> Vec<Warning> {
    let mut out = Vec::new();
    let horizon = spec.horizon.as_ns();
    let mut warn = |key: String, message: String| out.push(Warning { key, message });

    if let Some(duration) = spec.workload.duration()
        && duration.as_ns() > horizon
    {
        warn(
            "horizon".into(),
            format!(
                "the horizon ({}) ends before the workload's duration ({duration}): arrivals after it never happen",
                spec.horizon
            ),
        );
    }

    if let ServerSpec::Queue(q) = &spec.server {
        let windows: Vec<(usize, u64, u64)> = q
            .faults
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let (start, duration) = f.window();
                (i, start.as_ns(), start.as_ns().saturating_add(duration.as_ns()))
            })
            .collect();
        for &(i, start, _) in &windows {
            if start >= horizon {
                warn(
                    format!("server.faults[{i}].start"),
                    format!(
                        "the fault starts at or after the horizon ({}): it never happens, and the metrics ignore it",
                        spec.horizon
                    ),
                );
            }
        }
        // Recovery needs HEALTHY_RUN whole seconds of load before the first fault and after
        // the last one (metrics::recovery). Known up front for open workloads only.
        let happening: Vec<_> = windows.iter().filter(|w| w.1 < horizon).collect();
        if let (Some(duration), Some(first), Some(last)) = (
            spec.workload.duration(),
            happening.iter().min_by_key(|w| w.1),
            happening.iter().max_by_key(|w| w.2),
        ) {
            let load_end = duration.as_ns().min(horizon);
            if whole_seconds_before(first.1) < HEALTHY_RUN_S {
                warn(
                    format!("server.faults[{}].start", first.0),
                    format!(
                        "fewer than {HEALTHY_RUN_S} whole seconds of load before this fault: there is no baseline, so recovery_time_s and metastable cannot be measured (empty)"
                    ),
                );
            }
            if whole_seconds_after(last.2, load_end) < HEALTHY_RUN_S {
                warn(
                    format!("server.faults[{}].duration", last.0),
                    format!(
                        "fewer than {HEALTHY_RUN_S} whole seconds of load after this fault ends: recovery_time_s and metastable cannot be measured (empty); make workload.duration longer"
                    ),
                );
            }
        }
    }

    // Idempotency keys sent to a server that keeps no dedup store: they change nothing.
    if let ServerSpec::Queue(q) = &spec.server
        && q.idempotency.is_none()
    {
        let keyed: Vec<&Strategy> =
            strategies.iter().filter(|s| s.policy.idempotency != IdempotencyMode::None).collect();
        let key = if !keyed.is_empty() && keyed.len() == strategies.len() {
            Some("client.idempotency".to_owned())
        } else {
            keyed.first().map(|s| format!("strategies.{}.idempotency", s.name))
        };
        if let Some(key) = key {
            warn(
                key,
                "attempts carry idempotency keys but the server keeps no dedup store: without [server.idempotency] they change nothing".to_owned(),
            );
        }
    }

    // A timeout the deadline always beats: said once at `client` when a strategy only
    // inherits both, else at the strategy.
    // When every strategy has the same pair, say it once at `client` (where it usually
    // comes from).
    let pairs: Vec<_> = strategies.iter().map(|s| (s.policy.timeout, s.policy.deadline)).collect();
    let shared = pairs.windows(2).all(|w| w[0] == w[1]) && strategies.len() > 1;
    let places: Vec<(String, _)> = if shared {
        vec![("client".to_owned(), pairs[0])]
    } else {
        strategies.iter().zip(&pairs).map(|(s, p)| (format!("strategies.{}", s.name), *p)).collect()
    };
    for (key, pair) in places {
        if let (Some(t), Some(d)) = pair
            && t > d
        {
            warn(
                format!("{key}.timeout"),
                format!(
                    "the timeout ({t}) is longer than the deadline ({d}): the deadline always ends the attempt first"
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Overrides, load_str};

    const FILE: &str = r#"
name = "w"
horizon = "10s"
[workload]
kind = "closed"
[server]
concurrency = 1
service_time = { dist = "constant", value = "1ms" }
[client]
max_attempts = 2
[[strategies]]
name = "a"
backoff = { kind = "none" }
[[strategies]]
name = "b"
backoff = { kind = "none" }
"#;

    fn keys_warnings(set: &[(&str, &str)]) -> Vec<String> {
        let overrides = Overrides {
            set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        };
        let exp = load_str(FILE, "w.toml", &overrides).unwrap();
        warnings(&exp).into_iter().filter(|w| w.key.ends_with("idempotency")).map(|w| w.key).collect()
    }

    #[test]
    fn keys_without_a_dedup_store_are_pointed_out() {
        assert!(keys_warnings(&[]).is_empty());
        assert_eq!(keys_warnings(&[("client.idempotency", "per-op")]), ["client.idempotency"]);
        assert_eq!(
            keys_warnings(&[("strategies.b.idempotency", "per-attempt")]),
            ["strategies.b.idempotency"]
        );
        assert!(keys_warnings(&[("client.idempotency", "per-op"), ("server.idempotency", "{}")]).is_empty());
    }
}
