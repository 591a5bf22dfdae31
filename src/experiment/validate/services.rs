//! `[[services]]` (DESIGN §3.7): unique names, calls to services that exist, no cycle, each
//! service's server checked as `[server]` is (its replicas, outlier detection, slow start,
//! deploys, autoscaler and faults included), an edge's `retry_other_replica` only towards a
//! callee with replicas, and what the call graph does not model.

use super::{Check, fail, queue_server};
use crate::experiment::spec::{ExperimentSpec, WorkloadSpec};

/// The call graph's rules.
pub(super) fn services(spec: &ExperimentSpec) -> Check {
    if spec.services.is_empty() {
        return strategies_without_graph(spec);
    }
    for (i, s) in spec.services.iter().enumerate() {
        let key = format!("services[{i}]");
        if s.name.is_empty() || !s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            fail(
                format!("{key}.name"),
                format!("{:?}: use only A-Z a-z 0-9 _ - (it names columns)", s.name),
            )?;
        }
        if spec.services[..i].iter().any(|o| o.name == s.name) {
            fail(
                format!("{key}.name"),
                format!("{:?} is used twice: give each service its own name", s.name),
            )?;
        }
        // The server's own rules, named as the service's keys.
        queue_server(&s.server, false).map_err(|mut e| {
            e.key = e.key.replacen("server.", &format!("{key}."), 1);
            e
        })?;
        let unsupported = [
            ("idempotency", s.server.idempotency.is_some()),
            ("adaptive_concurrency", s.server.adaptive_concurrency.is_some()),
        ];
        if let Some((name, _)) = unsupported.iter().find(|(_, used)| *used) {
            fail(
                format!("{key}.{name}"),
                "is not modelled in a service of the call graph: remove it (use a single [server] to study it)",
            )?;
        }
        for (j, c) in s.calls.iter().enumerate() {
            let ckey = format!("{key}.calls[{j}]");
            if !spec.services.iter().any(|o| o.name == c.service) {
                let names: Vec<&str> = spec.services.iter().map(|o| o.name.as_str()).collect();
                fail(
                    format!("{ckey}.service"),
                    format!("{:?} is not a service: name one of {}", c.service, names.join(", ")),
                )?;
            }
            super::retry_list(&format!("{ckey}.retry_on"), c.policy.retry_on.as_deref())?;
            super::hedge::edge_hedge(&c.policy, &ckey)?;
            if let Some(callee) = spec.services.iter().find(|o| o.name == c.service)
                && c.policy.retry_other_replica
                && callee.server.replicas == 1
            {
                fail(
                    format!("{ckey}.retry_other_replica"),
                    format!(
                        "{:?} has one replica: there is no other replica to retry on; set its replicas > 1, or remove it",
                        c.service
                    ),
                )?;
            }
            if s.calls[..j].iter().any(|o| o.service == c.service) {
                fail(
                    format!("{ckey}.service"),
                    format!("{:?} is called twice by {:?}: use one entry with its count", c.service, s.name),
                )?;
            }
        }
    }
    no_cycle(spec)?;
    if matches!(spec.workload, WorkloadSpec::Queue { .. }) {
        fail(
            "services",
            "a queue workload's consumers are the server's workers: use [server], not [[services]]",
        )?;
    }
    if spec.workload.priorities().is_some() {
        fail(
            "workload.priorities",
            "is not modelled with [[services]]: remove it, or use a single [server]",
        )?;
    }
    for (i, s) in spec.strategies.iter().enumerate() {
        let key = super::label(spec, i);
        let p = &s.policy;
        let unsupported = [
            ("layers", !p.layers.is_empty()),
            ("hedge", p.hedge.is_some()),
            ("pool", p.pool.is_some()),
            ("dead_letter", p.dead_letter.is_some()),
        ];
        if let Some((name, _)) = unsupported.iter().find(|(_, used)| *used) {
            fail(
                format!("{key}.{name}"),
                "is not modelled with [[services]]: the call graph's edges are the hops; remove it",
            )?;
        }
        if p.retry_other_replica {
            fail(
                format!("{key}.retry_other_replica"),
                "is not modelled for the user's client with [[services]]: set it on the edges instead \
                 (retry_other_replica in a `calls` entry or in hop_policy)",
            )?;
        }
        if let Some(hop) = &p.hop_policy {
            super::hedge::edge_hedge(hop, &format!("{key}.hop_policy"))?;
        }
        if p.cancel_in_service && !p.propagate_cancellation {
            fail(
                format!("{key}.cancel_in_service"),
                "needs propagate_cancellation = true (nothing is cancelled without it)",
            )?;
        }
    }
    Ok(())
}

/// Without `[[services]]`, the graph's strategy keys mean nothing: refused rather than ignored.
fn strategies_without_graph(spec: &ExperimentSpec) -> Check {
    for (i, s) in spec.strategies.iter().enumerate() {
        let p = &s.policy;
        let used = [
            ("propagate_deadline", p.propagate_deadline),
            ("propagate_cancellation", p.propagate_cancellation),
            ("cancel_in_service", p.cancel_in_service),
            ("hop_policy", p.hop_policy.is_some()),
        ];
        if let Some((name, _)) = used.iter().find(|(_, u)| *u) {
            fail(
                format!("{}.{name}", super::label(spec, i)),
                "only applies to a call graph: add [[services]], or remove it",
            )?;
        }
    }
    Ok(())
}

/// Refuses a cycle of calls (a service that calls itself, directly or not), naming the call
/// that closes it and the cycle.
fn no_cycle(spec: &ExperimentSpec) -> Check {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let index = |n: &str| spec.services.iter().position(|s| s.name == n).expect("checked: it exists");
    let mut marks = vec![Mark::New; spec.services.len()];
    // Depth-first, iteratively: (service, next call to follow); the path is the open ones.
    for root in 0..spec.services.len() {
        if marks[root] != Mark::New {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        marks[root] = Mark::Open;
        while let Some(&mut (s, ref mut next)) = path.last_mut() {
            let calls = &spec.services[s].calls;
            if *next == calls.len() {
                marks[s] = Mark::Done;
                path.pop();
                continue;
            }
            let j = *next;
            *next += 1;
            let to = index(&calls[j].service);
            match marks[to] {
                Mark::Open => {
                    let from =
                        path.iter().position(|&(p, _)| p == to).expect("open services are on the path");
                    let mut names: Vec<&str> =
                        path[from..].iter().map(|&(p, _)| spec.services[p].name.as_str()).collect();
                    names.push(&spec.services[to].name);
                    fail(
                        format!("services[{s}].calls[{j}].service"),
                        format!(
                            "closes a cycle of calls ({}): a call graph has no cycle; remove one of these calls",
                            names.join(" -> ")
                        ),
                    )?;
                }
                Mark::New => {
                    marks[to] = Mark::Open;
                    path.push((to, 0));
                }
                Mark::Done => {}
            }
        }
    }
    Ok(())
}
