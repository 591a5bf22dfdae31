//! A strategy's gateway layers (`layers`): each layer's retry policy and own controls.

use super::hop::Hop;
use crate::experiment::LayerSpec;
use crate::model::gateway::LayerParams;

/// A gateway layer: its retry policy and its own budget and breaker.
pub fn layer(l: &LayerSpec) -> LayerParams {
    let hop = Hop::layer(l);
    LayerParams { retry: hop.retry(), gate: hop.gate(), route: hop.route() }
}
