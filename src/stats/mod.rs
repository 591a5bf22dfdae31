//! Statistics over runs, shared by the metrics, the report, tune and the validation suite:
//! one estimate type, the t and normal quantiles, the special functions behind them, the
//! running (Welford) accumulator, the validation suite's tolerance rule and the one
//! significant-figure formatter.
//!
//! Everything here is plain `f64` arithmetic in a fixed order, so the same inputs give the
//! same bits on every machine (summary.csv and VALIDATION.md are compared byte for byte). The
//! module imports nothing else of the crate.

mod digits;
mod estimate;
mod ks;
mod nelder_mead;
mod normal;
mod running;
mod special;
mod t;
mod tolerance;

pub use digits::{decimal_exponent, fixed, sig, sig_padded};
pub use estimate::{CONFIDENCE, Estimate, mean, sample_sd, standard_error};
pub use ks::{ks_p_value, ks_statistic};
pub use nelder_mead::{Minimum, minimise};
pub use normal::{chi_square_quantile, normal_cdf, normal_quantile};
pub use running::{Running, Stat};
pub use special::{incomplete_beta, ln_gamma};
pub use t::{t_cdf, t_quantile, t975};
pub use tolerance::{ROUNDING_NOISE, Z_TOLERANCE, combined_se, tolerance, z_score};

#[cfg(test)]
mod tests;
