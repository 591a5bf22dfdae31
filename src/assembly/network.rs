//! `[network]`: the clients' hop to the server.

use super::dist::dist;
use crate::experiment::NetworkSpec;
use crate::model::network::NetworkParams;

pub fn network(spec: &NetworkSpec) -> NetworkParams {
    NetworkParams {
        latency: dist(&spec.latency),
        request_loss: spec.request_loss,
        response_loss: spec.response_loss,
    }
}
