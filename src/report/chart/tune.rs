//! `retrysim tune`'s chart: the objective over the searched space, each candidate at its
//! value of each parameter (one panel per parameter), feasible candidates as dots,
//! infeasible ones as grey crosses, the recommendation ringed. With exactly two parameters,
//! a second chart places the candidates in the plane of both, coloured by the objective.

use super::axis::{Axis, Scale};
use super::heatmap::{colour_bar, viridis};
use super::{Chart, Kind, LegendEntry, err, legend, legend_height, mesh};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Feasible candidates.
const FEASIBLE: RGBColor = super::PALETTE[0];
/// The recommendation.
const CHOSEN: RGBColor = super::PALETTE[1];
/// Infeasible candidates.
const INFEASIBLE: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// One candidate on the chart.
#[derive(Clone, Debug, PartialEq)]
pub struct TunePoint {
    /// Its position on each parameter's axis.
    pub position: Vec<f64>,
    /// The objective at its worst scenario.
    pub objective: f64,
    pub feasible: bool,
    pub recommended: bool,
}

/// The chart's data.
pub struct TuneChart {
    /// Each parameter's axis and title.
    pub params: Vec<(Axis, String)>,
    /// The objective's axis and title.
    pub objective: (Axis, String),
    pub points: Vec<TunePoint>,
    /// Draw the plane of the two parameters instead of one panel per parameter.
    pub plane: bool,
}

/// A parameter's axis: log when its values are positive and span a factor of 4 or more
/// (`log`: it was searched on a log scale), else linear; categories when not numeric.
pub fn param_axis(positions: &[f64], names: Option<Vec<String>>, log: bool) -> Axis {
    if let Some(names) = names {
        return Axis::categorical(names);
    }
    let min = positions.iter().copied().fold(f64::INFINITY, f64::min);
    let max = positions.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if log && min > 0.0 && max / min >= 4.0 {
        return Axis {
            scale: Scale::Log,
            lo: 10f64.powf(min.log10().floor()),
            hi: 10f64.powf(max.log10().ceil()),
            density: 5.0,
        };
    }
    let axis = Axis::for_values(positions.iter().copied(), false, false);
    if max > min {
        let pad = (max - min) * 0.05;
        Axis::linear(min - pad, max + pad)
    } else {
        axis
    }
}

/// The chart(s) of a search: objective against each parameter, and the plane of two.
pub fn charts(stem: &str, title: &str, data: TuneChart) -> Vec<Chart> {
    let n = data.params.len();
    let cols = if n > 1 { 2 } else { 1 };
    let rows = n.div_ceil(cols) as u32;
    let mut out = Vec::new();
    let plane = (n == 2).then(|| TuneChart {
        params: data.params.clone(),
        objective: data.objective.clone(),
        points: data.points.clone(),
        plane: true,
    });
    out.push(Chart {
        stem: stem.to_owned(),
        title: title.to_owned(),
        caption: "Each candidate evaluated, at its value of each parameter: the objective at its worst scenario; grey crosses fail a constraint; the ring marks the recommendation.".to_owned(),
        section: "Tuning",
        size: (if cols == 2 { 1100 } else { 800 }, 110 + 420 * rows),
        kind: Kind::Tune(data),
    });
    if let Some(plane) = plane {
        out.push(Chart {
            stem: format!("{stem}-plane"),
            title: format!("{title}: both parameters"),
            caption: "The candidates in the plane of the two parameters, coloured by the objective; grey crosses fail a constraint; the ring marks the recommendation.".to_owned(),
            section: "Tuning",
            size: (900, 700),
            kind: Kind::Tune(plane),
        });
    }
    out
}

impl TuneChart {
    /// Draws the legend and the panels (or the plane).
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let mut entries = vec![
            LegendEntry::Swatch(FEASIBLE.to_rgba(), "feasible".into()),
            LegendEntry::Swatch(INFEASIBLE.to_rgba(), "infeasible (a constraint fails)".into()),
            LegendEntry::Swatch(CHOSEN.to_rgba(), "recommended".into()),
        ];
        if self.plane {
            entries.remove(0);
        }
        let (w, _) = area.dim_in_pixel();
        let (top, body) = area.split_vertically(legend_height(&entries, w as i32));
        legend(&top, &entries)?;
        if self.plane {
            return self.draw_plane(&body);
        }
        let n = self.params.len();
        let cols = if n > 1 { 2 } else { 1 };
        let parts = body.split_evenly((n.div_ceil(cols), cols));
        for (j, part) in parts.iter().enumerate().take(n) {
            self.draw_panel(part, j)?;
        }
        Ok(())
    }

    fn draw_panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, j: usize) -> Result<(), String> {
        let (x, x_title) = &self.params[j];
        let (y, y_title) = &self.objective;
        let mut chart = mesh(area, x.clone(), y.clone(), x_title, y_title, (56, 84))?;
        let clamp = |v: f64| if y.scale == Scale::Log { v.max(y.lo) } else { v };
        let plot = chart.plotting_area().clone();
        for p in self.points.iter().filter(|p| !p.feasible) {
            cross(&plot, (p.position[j], clamp(p.objective)), INFEASIBLE)?;
        }
        for p in self.points.iter().filter(|p| p.feasible) {
            plot.draw(&Circle::new((p.position[j], clamp(p.objective)), 4, FEASIBLE.mix(0.75).filled()))
                .map_err(err)?;
        }
        for p in self.points.iter().filter(|p| p.recommended) {
            ring(&plot, (p.position[j], clamp(p.objective)))?;
        }
        let _ = &mut chart;
        Ok(())
    }

    fn draw_plane<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (w, _) = area.dim_in_pixel();
        let (main, bar) = area.split_horizontally(w as i32 - 150);
        let (x, x_title) = &self.params[0];
        let (y, y_title) = &self.params[1];
        let chart = mesh(&main, x.clone(), y.clone(), x_title, y_title, (56, 84))?;
        let plot = chart.plotting_area().clone();
        let scale = &self.objective.0;
        let t = |v: f64| scale.fraction(v);
        for p in self.points.iter().filter(|p| !p.feasible) {
            cross(&plot, (p.position[0], p.position[1]), INFEASIBLE)?;
        }
        for p in self.points.iter().filter(|p| p.feasible) {
            plot.draw(&Circle::new((p.position[0], p.position[1]), 6, viridis(t(p.objective)).filled()))
                .map_err(err)?;
        }
        for p in self.points.iter().filter(|p| p.recommended) {
            ring(&plot, (p.position[0], p.position[1]))?;
        }
        colour_bar(&bar, scale, &self.objective.1)
    }
}

/// An x-shaped cross centred on `at`.
fn cross<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Cartesian2d<Axis, Axis>>,
    at: (f64, f64),
    color: RGBColor,
) -> Result<(), String> {
    let s = 4;
    plot.draw(&(EmptyElement::at(at) + PathElement::new(vec![(-s, -s), (s, s)], color.stroke_width(2))))
        .map_err(err)?;
    plot.draw(&(EmptyElement::at(at) + PathElement::new(vec![(-s, s), (s, -s)], color.stroke_width(2))))
        .map_err(err)
}

/// The recommendation's mark: a filled dot in a ring.
fn ring<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Cartesian2d<Axis, Axis>>,
    at: (f64, f64),
) -> Result<(), String> {
    plot.draw(&Circle::new(at, 5, CHOSEN.filled())).map_err(err)?;
    plot.draw(&Circle::new(at, 11, CHOSEN.stroke_width(3))).map_err(err)
}
