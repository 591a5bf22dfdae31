//! What `retrysim serve` plays of an experiment file: its `[server]` (kind `queue`), as the
//! model's parameters, and the run seed its draws come from. What the file asks of the server
//! that a wall-clock server cannot play is refused (exit 2, naming the key), never ignored.
//! The client side (`[workload]`, `[client]`, `[[strategies]]`) is what the real client under
//! test replaces: it is not read.

use crate::assembly;
use crate::engine::rng::run_seed;
use crate::experiment::{ConfigError, DistSpec, Experiment, ServerSpec};
use crate::model::server::ServerParams;

/// The server to play.
#[derive(Clone, Debug)]
pub struct Plan {
    pub server: ServerParams,
    /// The seed of the server's draws (service times, errors): run 1's, as in `retrysim run`.
    pub run_seed: u64,
    /// The width of timeseries.csv's buckets (`[output] bucket`).
    pub bucket_ns: u64,
}

/// The plan of `exp` (named `origin` in messages), or the key that serve cannot play.
pub fn plan(exp: &Experiment, origin: &str) -> Result<Plan, ConfigError> {
    let refuse = |key: &str, reason: &str| ConfigError::InvalidValue {
        origin: origin.to_owned(),
        key: key.to_owned(),
        reason: format!("retrysim serve cannot play it: {reason}"),
    };
    if exp.points.len() > 1 {
        return Err(refuse(
            "sweep",
            "serve plays one server; remove [sweep] or pick its values with --set KEY=VALUE",
        ));
    }
    let spec = &exp.points[0].spec;
    let ServerSpec::Queue(q) = &spec.server else {
        return Err(refuse("server.kind", "only kind = \"queue\" is an HTTP server; the occ store is not"));
    };
    if q.replicas > 1 {
        return Err(refuse("server.replicas", "serve plays one replica; set replicas = 1"));
    }
    if q.drop_expired {
        return Err(refuse(
            "server.drop_expired",
            "the server cannot see when a real client stops waiting; set it to false",
        ));
    }
    if spec.network.latency != DistSpec::default() {
        return Err(refuse(
            "network.latency",
            "the network is the real one (the loopback); remove it or set network.latency = { dist = \"constant\", value = \"0\" }",
        ));
    }
    for (key, p) in [
        ("network.request_loss", spec.network.request_loss),
        ("network.response_loss", spec.network.response_loss),
    ] {
        if p != 0.0 {
            return Err(refuse(key, "the network is the real one (the loopback); set it to 0"));
        }
    }
    Ok(Plan {
        server: assembly::server::server(q, 0),
        run_seed: run_seed(exp.seed, 0),
        bucket_ns: spec.output.bucket.as_ns(),
    })
}
