//! A strategy's gateway layers (`layers`) as a chain of the call graph's proxy nodes
//! ([`crate::model::graph::proxy`]) in front of the run's own server: layer `i` is node `i`,
//! whose single edge calls node `i + 1`, and the last layer's edge calls the server. Each
//! edge carries its layer's client policy (`Hop::layer`): one call, not hedged.

use super::hop::Hop;
use crate::experiment::LayerSpec;
use crate::model::graph::EdgeParams;
use crate::model::graph::proxy::{ProxyParams, SERVER};

/// The proxy nodes of `layers`, the first nearest the client (empty: no layers).
pub fn chain(layers: &[LayerSpec]) -> Vec<ProxyParams> {
    let n = layers.len() as u32;
    (0..n)
        .zip(layers)
        .map(|(i, l)| ProxyParams { edge: edge(l, if i + 1 < n { i + 1 } else { SERVER }) })
        .collect()
}

/// Layer `l`'s edge to node `to`.
fn edge(l: &LayerSpec, to: u32) -> EdgeParams {
    let hop = Hop::layer(l);
    EdgeParams {
        to,
        count: 1,
        parallel: false,
        optional: false,
        retry: hop.retry(),
        gate: hop.gate(),
        route: hop.route(),
        hedge: None,
        // The server's replicas are the run's replica set, whose balancer applies the
        // strategy's `retry_other_replica` to every request it picks for.
        reselects: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{BackoffSpec, Duration};

    fn layer(name: &str, max_attempts: u32) -> LayerSpec {
        LayerSpec {
            name: name.into(),
            max_attempts,
            timeout: Some(Duration(1_000_000_000)),
            route_timeout: None,
            retry_on: None,
            backoff: BackoffSpec::Constant { base: Duration(5_000_000) },
            honor_dont_retry: false,
            honor_overloaded: false,
            budget: None,
            breaker: None,
        }
    }

    #[test]
    fn layers_are_a_chain_of_proxies_ending_at_the_server() {
        let c = chain(&[layer("edge", 3), layer("mesh", 2), layer("sidecar", 1)]);
        let to: Vec<u32> = c.iter().map(|p| p.edge.to).collect();
        assert_eq!(to, [1, 2, SERVER]);
        let attempts: Vec<u32> = c.iter().map(|p| p.edge.retry.max_attempts).collect();
        assert_eq!(attempts, [3, 2, 1]);
        assert!(c.iter().all(|p| p.edge.count == 1 && p.edge.hedge.is_none() && !p.edge.optional));
        assert!(chain(&[]).is_empty());
    }
}
