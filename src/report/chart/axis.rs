//! One coordinate type for every axis of every chart: linear, logarithmic (base 10) or
//! categorical, with tick positions and labels chosen here rather than by plotters, so that
//! ticks are round numbers (1, 2, 5 x 10^k; decades on log axes) and category names label
//! their own positions.

use super::super::format;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use std::ops::Range;

/// How values map to positions.
#[derive(Clone, Debug, PartialEq)]
pub enum Scale {
    /// Proportional.
    Linear,
    /// Proportional to log10; every value must be > 0.
    Log,
    /// Values 0, 1, 2... name the categories in order.
    Categorical(Vec<String>),
}

/// An axis: its scale and its range (in data units).
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// The scale.
    pub scale: Scale,
    /// Low end of the range.
    pub lo: f64,
    /// High end of the range.
    pub hi: f64,
    /// About how many labelled ticks a linear axis gets.
    pub density: f64,
}

/// The round step (1, 2 or 5 x 10^k) that cuts `span` into about `n` parts.
pub fn nice_step(span: f64, n: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / n;
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let k = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    k * p
}

impl Axis {
    /// A categorical axis over `names`.
    pub fn categorical(names: Vec<String>) -> Axis {
        let n = names.len() as f64;
        Axis { scale: Scale::Categorical(names), lo: -0.5, hi: n - 0.5, density: 5.0 }
    }

    /// An axis that shows `values` (finite ones): logarithmic when they are all positive and
    /// span more than two decades (and `allow_log`), else linear from a round number, from 0
    /// when the values are non-negative and the low end is not far from 0 (`from_zero`).
    pub fn for_values(values: impl IntoIterator<Item = f64>, allow_log: bool, from_zero: bool) -> Axis {
        let vs: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        if vs.is_empty() {
            return Axis::linear(0.0, 1.0);
        }
        let min = vs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if allow_log && min > 0.0 && max / min > 100.0 {
            return Axis {
                scale: Scale::Log,
                lo: 10f64.powf(min.log10().floor()),
                hi: 10f64.powf(max.log10().ceil()),
                density: 5.0,
            };
        }
        let (mut lo, mut hi) = (min, max);
        if from_zero && lo >= 0.0 && lo <= 0.5 * hi {
            lo = 0.0;
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
            lo -= pad;
            hi += pad;
            if from_zero && min >= 0.0 && lo < 0.0 {
                lo = 0.0;
            }
        }
        let step = nice_step(hi - lo, 5.0);
        Axis::linear((lo / step).floor() * step, (hi / step).ceil() * step)
    }

    /// An exact linear range.
    pub fn linear(lo: f64, hi: f64) -> Axis {
        Axis { scale: Scale::Linear, lo, hi, density: 5.0 }
    }

    /// The same axis with about `n` labelled ticks (linear scales).
    pub fn with_density(mut self, n: f64) -> Axis {
        self.density = n;
        self
    }

    /// Where `v` falls, as a fraction of the axis (0 = low end, 1 = high end; on a log axis
    /// values below a thousandth of the low end count as that); 0.5 on an axis of no width.
    /// Tick thinning and the colour scales read it.
    pub fn fraction(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Log => {
                let (a, b) = (self.lo.log10(), self.hi.log10());
                (v.max(self.lo * 1e-3).log10() - a) / (b - a)
            }
            _ if self.hi > self.lo => (v - self.lo) / (self.hi - self.lo),
            _ => 0.5,
        }
    }

    /// The labelled ticks.
    pub fn ticks(&self) -> Vec<f64> {
        match &self.scale {
            Scale::Categorical(names) => (0..names.len()).map(|i| i as f64).collect(),
            Scale::Log => {
                let (a, b) = (self.lo.log10().round() as i32, self.hi.log10().round() as i32);
                let mut t = Vec::new();
                for e in a..=b {
                    let base = 10f64.powi(e);
                    t.push(base);
                    if b - a <= 2 && e < b {
                        t.push(2.0 * base);
                        t.push(5.0 * base);
                    }
                }
                t
            }
            Scale::Linear => {
                let step = nice_step(self.hi - self.lo, self.density);
                let first = (self.lo / step).ceil() as i64;
                let last = (self.hi / step + 1e-9).floor() as i64;
                (first..=last).map(|k| k as f64 * step).collect()
            }
        }
    }

    /// Unlabelled ticks for light grid lines.
    fn minor_ticks(&self) -> Vec<f64> {
        match &self.scale {
            Scale::Categorical(_) => Vec::new(),
            Scale::Log => {
                let (a, b) = (self.lo.log10().round() as i32, self.hi.log10().round() as i32);
                (a..b).flat_map(|e| (2..10).map(move |k| k as f64 * 10f64.powi(e))).collect()
            }
            Scale::Linear => {
                let step = nice_step(self.hi - self.lo, self.density) / 2.0;
                let first = (self.lo / step).ceil() as i64;
                let last = (self.hi / step + 1e-9).floor() as i64;
                (first..=last).map(|k| k as f64 * step).collect()
            }
        }
    }

    /// The label of a tick.
    pub fn label(&self, v: f64) -> String {
        match &self.scale {
            Scale::Categorical(names) => {
                let i = v.round();
                if (v - i).abs() < 1e-9 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
            Scale::Log => format::tick(v, v),
            Scale::Linear => format::tick(v, nice_step(self.hi - self.lo, self.density)),
        }
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = self.fraction(*v);
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.max_num_points() == 0 {
            return Vec::new();
        }
        if hint.weight().allow_light_points() { self.minor_ticks() } else { self.ticks() }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, v: &f64) -> String {
        self.label(*v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        let a = Axis::for_values([0.2, 0.96], true, true);
        assert_eq!(a.scale, Scale::Linear);
        assert_eq!((a.lo, a.hi), (0.0, 1.0));
        assert_eq!(
            a.ticks().iter().map(|t| a.label(*t)).collect::<Vec<_>>(),
            ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        let l = Axis::for_values([37.0, 8013.0], true, true);
        assert_eq!(l.scale, Scale::Log);
        assert_eq!((l.lo, l.hi), (10.0, 10000.0));
        assert_eq!(l.ticks().iter().map(|t| l.label(*t)).collect::<Vec<_>>(), ["10", "100", "1000", "10000"]);
        let c = Axis::categorical(vec!["a".into(), "b".into()]);
        assert_eq!(c.label(1.0), "b");
        assert_eq!(c.label(0.5), "");
    }
}
