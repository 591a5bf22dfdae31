//! The fit as the user reads it: a table of the kinds, the attempt limit, Retry-After, and,
//! when the log decides, the `[[strategies]]` block to paste into an experiment.

use super::estimate::{FitReport, KindFit, Limit, Verdict};
use super::kinds::Kind;
use crate::stats::sig;
use std::fmt::Write;

/// A duration in the unit that reads best, to 3 significant figures: `"98.7ms"`, `"1.5s"`.
pub fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{}s", sig(seconds, 3))
    } else if seconds >= 1e-3 {
        format!("{}ms", sig(seconds * 1e3, 3))
    } else {
        format!("{}us", sig(seconds * 1e6, 3))
    }
}

/// A p-value: significant figures, or scientific notation when small.
fn p_value(p: f64) -> String {
    if p < 1e-4 { format!("{p:.1e}") } else { sig(p, 2) }
}

/// The fitted backoff's keys as (key, TOML value), in the file's order; a cap that no
/// delay reached is left out.
fn keys(f: &KindFit) -> Vec<(&'static str, String)> {
    let p = &f.params;
    let quoted = |seconds: f64| format!("\"{}\"", duration(seconds));
    let mut out = Vec::new();
    if f.kind != Kind::None {
        out.push(("base", quoted(p.base_s)));
    }
    if f.kind.has_cap() && f.cap_reached {
        out.push(("cap", quoted(p.cap_s)));
    }
    if f.kind.has_multiplier() {
        out.push(("multiplier", sig(p.multiplier, 3)));
    }
    match f.kind.formula() {
        Kind::AdditiveJitter => out.push(("jitter", quoted(p.extra))),
        Kind::ProportionalJitter => out.push(("p", sig(p.extra, 2))),
        _ => {}
    }
    if f.kind.immediate_first() {
        out.push(("immediate_first", "true".to_string()));
    }
    out
}

/// The fitted parameters in words, for the table.
fn describe(f: &KindFit) -> String {
    let mut out: Vec<String> =
        keys(f).into_iter().map(|(k, v)| format!("{k} {}", v.trim_matches('"'))).collect();
    if f.kind.has_cap() && !f.cap_reached {
        out.push(format!("cap not reached (>= {})", duration(f.uncapped_max_s)));
    }
    if f.within_overhead {
        out.push("every delay within the overhead bound: reads as none".to_owned());
    }
    // The overhead's parts, 0 below a log's resolution (0.1 us).
    let part = |x: f64| if x < 1e-7 { "0".to_owned() } else { duration(x) };
    let n = &f.params.noise;
    out.push(format!("overhead {} + N(0, {}) + Exp({})", part(n.offset_s), part(n.sigma_s), part(n.tail_s)));
    out.join(", ")
}

/// The `[[strategies]]` block of a decided fit.
pub fn block(r: &FitReport, name: &str) -> String {
    let f = r.best();
    let mut keys: Vec<String> = keys(f).into_iter().map(|(k, v)| format!("{k} = {v}")).collect();
    keys.insert(0, format!("kind = \"{}\"", f.kind.name()));
    let mut s = String::new();
    let _ = writeln!(s, "[[strategies]]");
    let _ = writeln!(s, "name = \"{name}\"");
    let _ = match &r.limit {
        Limit::Exact(n) => writeln!(s, "max_attempts = {n}"),
        Limit::Mixed { largest, .. } => {
            writeln!(s, "max_attempts = {largest}  # the largest of several: see above")
        }
        Limit::AtLeast(n) => writeln!(s, "max_attempts = {n}  # at least: no operation in the log ran out"),
    };
    let _ = writeln!(s, "backoff = {{ {} }}", keys.join(", "));
    if let Some(ra) = &r.retry_after {
        let mode = ra.modes[0].0;
        if mode == super::RetryAfterMode::Ignore {
            let _ = writeln!(s, "honor_retry_after = false");
        } else {
            let _ = writeln!(s, "honor_retry_after = true");
            let _ = writeln!(s, "retry_after_mode = \"{}\"", mode.name());
        }
    }
    if !f.cap_reached && f.kind.has_cap() {
        let _ = writeln!(
            s,
            "# cap: not reached in the log (>= {}); add the client's own if it has one",
            duration(f.uncapped_max_s)
        );
    }
    s
}

/// The whole report, as printed by `retrysim fit`.
pub fn render(r: &FitReport, source: &str, name: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{source}: {} operations, {} attempts, {} retry delays that show the backoff{}{}",
        r.operations,
        r.attempts,
        r.delays,
        if r.overlapping > 0 {
            format!(
                " ({} retries sent before the previous answer left, left out: client timeouts)",
                r.overlapping
            )
        } else {
            String::new()
        },
        if r.without_op > 0 {
            format!("; {} rows without an operation id left out", r.without_op)
        } else {
            String::new()
        }
    );
    if !r.has_durations {
        let _ = writeln!(
            s,
            "delays measured from each attempt's arrival (no duration column): they include the server's response time"
        );
    }
    let statuses = |m: &std::collections::BTreeMap<u16, usize>| {
        m.iter().map(|(st, n)| format!("{st} ({n})")).collect::<Vec<_>>().join(", ")
    };
    let _ = writeln!(s, "retried after: {}", statuses(&r.retried_after));
    if !r.final_after.is_empty() {
        let _ = writeln!(s, "operations ended failed on: {}", statuses(&r.final_after));
    }
    let _ = match &r.limit {
        Limit::Exact(n) => writeln!(s, "attempt limit: {n} (every operation that ran out used {n})"),
        Limit::Mixed { largest, counts } => writeln!(
            s,
            "attempt limit: unclear: operations that ran out used {} attempts (a budget, a quota, a deadline or mixed clients, which stop early); {largest}, the largest, is taken",
            counts.iter().map(|(a, n)| format!("{a} ({n})")).collect::<Vec<_>>().join(", ")
        ),
        Limit::AtLeast(n) => writeln!(s, "attempt limit: at least {n} (no operation ran out of attempts)"),
    };
    if !r.fits.is_empty() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{:<32} {:>12} {:>10}  parameters (maximum likelihood)",
            "backoff kind", "ln L", "dBIC"
        );
        let best = r.fits[0].bic;
        for f in &r.fits {
            let _ = writeln!(
                s,
                "{:<32} {:>12.1} {:>10.1}  {}",
                f.kind.label(),
                f.log_likelihood,
                f.bic - best,
                describe(f)
            );
        }
        let _ = writeln!(
            s,
            "goodness of fit of {}: Kolmogorov-Smirnov D = {:.4}, p = {} over {} delays (fitted parameters: a low p rejects, a high one does not prove)",
            r.best().kind.label(),
            r.ks_statistic,
            p_value(r.ks_p_value),
            r.delays
        );
    }
    if let Some(ra) = &r.retry_after {
        let _ = writeln!(
            s,
            "Retry-After ({} delays after an answer carrying it): {}",
            ra.delays,
            ra.modes.iter().map(|(m, l)| format!("{} ln L {l:.1}", m.name())).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = writeln!(s);
    match &r.verdict {
        Verdict::Decided => {
            let _ = match r.runner_up() {
                Some(second) => writeln!(
                    s,
                    "best: {} (dBIC {:.1} to {})",
                    r.best().kind.label(),
                    second.bic - r.fits[0].bic,
                    second.kind.label()
                ),
                None => writeln!(s, "best: {} (every other kind reads as none)", r.best().kind.label()),
            };
            let _ = writeln!(s);
            s.push_str(&block(r, name));
        }
        Verdict::TooFewDelays { delays } => {
            let _ = writeln!(
                s,
                "undecided: {delays} backoff delays are too few to tell the kinds apart (at least {}); record a longer fault",
                super::estimate::MIN_DELAYS
            );
        }
        Verdict::NoKindFits { p_value: p } => {
            let _ = writeln!(
                s,
                "undecided: even the best kind fits badly (Kolmogorov-Smirnov p = {}): mixed clients, or a backoff retrysim does not have; split the log by client and fit each",
                p_value(*p)
            );
        }
        Verdict::Tie { first, second, delta_bic } => {
            let _ = writeln!(
                s,
                "undecided: {} and {} fit as well as each other (dBIC {:.1} < {}); record more retries",
                first.label(),
                second.label(),
                delta_bic,
                super::estimate::BIC_DECISIVE
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(0.0987), "98.7ms");
        assert_eq!(duration(1.5), "1.5s");
        assert_eq!(duration(20.0), "20s");
        assert_eq!(duration(0.00005), "50us");
    }
}
