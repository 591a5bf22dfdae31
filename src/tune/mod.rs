//! `retrysim tune`: the values of one strategy's keys that optimise a metric under
//! constraints, over one or more scenarios (the file's `[tune]`).
//!
//! One file per step, in the order they happen:
//!
//! | module | what |
//! |---|---|
//! | [`spec`] | `[tune]` checked against its experiment: [`TuneSpec`], its keys ([`Param`]) and scenarios |
//! | [`lattice`] | each key's values ([`Level`]) and a lattice point ([`Index`]) |
//! | [`design`] | the points placed on the lattice: the coarse Latin hypercube, the refinement's neighbours |
//! | [`search`](mod@search) | the [`Tuner`]: evaluates candidates, halves the race, confirms the finalists |
//! | [`recommendation`] | the chosen values as a ready `[[strategies]]` block |
//! | [`export`] | the recommendation in production formats (`[tune] export`) |
//! | [`output`] | `tune.csv`, `recommendation.toml`, the chart and the summary |

pub mod design;
pub mod export;
pub mod lattice;
pub mod output;
pub mod recommendation;
pub mod search;
pub mod spec;

pub use lattice::{Index, Level};
pub use search::{Candidate, Event, Score, Stage, Stat, Tuner, search};
pub use spec::{Domain, Numeric, Param, Scenario, TuneSpec};
