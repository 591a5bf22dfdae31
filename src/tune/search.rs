//! The search: the candidates `retrysim tune` evaluates and how it decides between them.
//!
//! Every searched key is put on a lattice of values ([`Param::levels`](super::spec::Param::levels):
//! `levels` values across a range, log-spaced for durations and positive numbers; every
//! integer; or the list as written). A *candidate* is one lattice point; it is evaluated by
//! running it in every scenario, run `r` with the same seed as run `r` of every other
//! candidate (common random numbers: differences between candidates are theirs, not the
//! workload's), and compared with others on the runs they share.
//!
//! 1. **Coarse**: a maximin Latin hypercube of `candidates` points, each run `runs` times per
//!    scenario.
//! 2. **Rounds** `k = 1..=rounds` (successive halving with refinement): the race (every
//!    candidate still in it) is ranked and its better half kept, at least `confirm`; the
//!    survivors get twice the runs. Then the refinement: the axis neighbours of the best
//!    `confirm` candidates at a step that shrinks from a quarter of each lattice to one
//!    level are evaluated with `runs` runs, and each climbs the rungs (2x, 4x ... the runs)
//!    only while it would rank within the race's width on the runs it has: a poor
//!    neighbour costs `runs` runs, a good one as many as the race. The rounds stop early
//!    when the step is one level and no untried neighbour is left.
//! 3. **Confirmation**: the `confirm` best of the race run `confirm_runs` times per
//!    scenario (doubled, up to 4x, until the winner's 95 % interval is within `precision` of
//!    its objective); the recommendation is the best feasible of them.
//!
//! Every metric column of summary.csv can be an objective or a constraint, windowed ones
//! included. A run that never recovered (no `recovery_time_s` although recovery was
//! measurable) counts as taking forever: its `recovery_time_s` is `+inf`, so the mean of any
//! candidate with such a run is `+inf` and `recovery_time_s <= 30` fails there, where
//! summary.csv's mean over the runs that recovered would hide it.
//!
//! Ranking: feasible candidates first (every constraint holds on the mean in every
//! scenario), by the objective at its worst scenario; then infeasible ones by their total
//! relative violation; ties by lattice position (the smaller values first). Everything is
//! decided on the calling thread from results stored by (candidate, scenario, run), so the
//! same seed gives the same search on any number of threads.

use super::design;
use super::lattice::{Index, Level};
use super::spec::TuneSpec;
use crate::experiment::{Experiment, Point};
use crate::metrics::{RunMetrics, Value, catalogue};
use crate::stats::Estimate;
use crate::stats::Running;
use crate::sweep::{self, Job, Stopped};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

/// How far a candidate got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Part of the coarse design, never kept in the race.
    Coarse,
    /// Added as a neighbour in this round, never good enough to join the race.
    Refine(u32),
    /// In the race in this round.
    Race(u32),
    /// One of the finalists.
    Confirm,
    /// The recommendation.
    Recommended,
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Coarse => write!(f, "coarse"),
            Stage::Refine(k) => write!(f, "refine-{k}"),
            Stage::Race(k) => write!(f, "race-{k}"),
            Stage::Confirm => write!(f, "confirm"),
            Stage::Recommended => write!(f, "recommended"),
        }
    }
}

/// One evaluated lattice point.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Lattice coordinates.
    pub index: Index,
    /// The experiment of each scenario with this candidate's values.
    pub points: Vec<Point>,
    /// `[scenario][run][metric]`: every metric column ([`Tuner::columns`]) of every run so far
    /// ([`run_values`]).
    pub results: Vec<Vec<Vec<Option<f64>>>>,
    /// How far it got.
    pub stage: Stage,
}

impl Candidate {
    /// Runs per scenario so far.
    pub fn runs(&self) -> usize {
        self.results.first().map_or(0, Vec::len)
    }
}

/// A candidate judged on its first `runs` runs.
#[derive(Clone, Debug)]
pub struct Score {
    pub feasible: bool,
    /// Sum over constraints of the worst relative shortfall (0 when feasible).
    pub violation: f64,
    /// The objective's mean at its worst scenario.
    pub objective: Option<f64>,
    /// That scenario.
    pub worst: usize,
}

/// Mean and sample sd of one metric of one scenario over a candidate's first runs.
#[derive(Clone, Copy, Debug)]
pub struct Stat {
    pub mean: Option<f64>,
    pub sd: Option<f64>,
    /// Runs with a value.
    pub n: u64,
}

impl Stat {
    /// Its 95 % interval.
    pub fn estimate(&self) -> Option<Estimate> {
        self.mean.map(|m| Estimate::from_summary(m, self.sd, self.n))
    }
}

/// What the search reports along the way (for a progress bar).
pub enum Event<'a> {
    /// A new stage starts.
    Stage(&'a str),
    /// Runs planned so far (grows as the search decides).
    Planned(u64),
    /// Runs done so far, and the events they processed.
    Done(u64, u64),
}

/// The search's state and, once [`search`] returns, its result.
pub struct Tuner<'a> {
    pub exp: &'a Experiment,
    pub spec: &'a TuneSpec,
    /// The metric columns, windowed ones included ([`catalogue::columns`]).
    pub columns: Vec<String>,
    /// Each parameter's values.
    pub lattice: Vec<Vec<Level>>,
    /// In the order they were first evaluated.
    pub candidates: Vec<Candidate>,
    /// Lattice points that validation refused (e.g. cap < base), with the first reason.
    pub invalid: BTreeMap<Index, String>,
    /// Every lattice point tried: its candidate, or `None` when invalid.
    known: BTreeMap<Index, Option<usize>>,
    /// Candidates of the coarse design (the first ones).
    pub coarse: usize,
    /// Runs done (every scenario counted).
    pub runs_spent: u64,
    pub events: u64,
    planned: u64,
    /// The runs the whole search is expected to take (see [`Tuner::project`]): the progress
    /// bar's length, so that one bar spans every round.
    projected: u64,
    /// Finalists, best first.
    pub finalists: Vec<usize>,
    /// Runs per scenario of the confirmation.
    pub confirm_runs: usize,
    /// The recommended candidate.
    pub winner: Option<usize>,
    threads: usize,
    stop: &'a AtomicBool,
    report: &'a mut dyn FnMut(Event<'_>),
}

/// Runs [`TuneSpec`]'s search on `threads` threads. `Err` only when `stop` was raised.
pub fn search<'a>(
    exp: &'a Experiment,
    spec: &'a TuneSpec,
    threads: usize,
    stop: &'a AtomicBool,
    report: &'a mut dyn FnMut(Event<'_>),
) -> Result<Tuner<'a>, Stopped<std::convert::Infallible>> {
    let lattice = spec.params.iter().map(|p| p.levels(spec.levels)).collect();
    let mut t = Tuner {
        exp,
        spec,
        columns: catalogue::columns(&exp.windows, &exp.graph_columns),
        lattice,
        candidates: Vec::new(),
        invalid: BTreeMap::new(),
        known: BTreeMap::new(),
        coarse: 0,
        runs_spent: 0,
        events: 0,
        planned: 0,
        projected: 0,
        finalists: Vec::new(),
        confirm_runs: 0,
        winner: None,
        threads,
        stop,
        report,
    };
    t.run()?;
    Ok(t)
}

type Run<T> = Result<T, Stopped<std::convert::Infallible>>;

/// Where `recovery_time_s` is among the columns.
const RECOVERY: usize = {
    let mut i = 0;
    while !matches!(crate::metrics::METRICS[i].name.as_bytes(), b"recovery_time_s") {
        i += 1;
    }
    i
};

/// The value of every metric column of one run, as the search judges them: as in runs.csv,
/// but `recovery_time_s` is `+inf` for a run that never recovered (see the module docs).
pub fn run_values(m: &RunMetrics) -> Vec<Option<f64>> {
    let mut out: Vec<Option<f64>> = catalogue::values(m).map(Value::as_f64).collect();
    if m.recovery_time_s.is_none() && m.metastable.is_some() {
        out[RECOVERY] = Some(f64::INFINITY);
    }
    out
}

impl Tuner<'_> {
    /// Levels per parameter.
    pub fn dims(&self) -> Vec<usize> {
        self.lattice.iter().map(Vec::len).collect()
    }

    /// Candidates in a full grid of the lattice.
    pub fn grid_size(&self) -> f64 {
        self.lattice.iter().map(|l| l.len() as f64).product()
    }

    /// Runs per scenario at rung `k` of the race.
    fn rung(&self, k: u32) -> usize {
        (self.spec.runs as usize) << k.min(20)
    }

    fn run(&mut self) -> Run<()> {
        let spec = self.spec;
        let dims = self.dims();
        let confirm = spec.confirm as usize;

        (self.report)(Event::Stage("coarse design"));
        let design = design::maximin_lhs(&dims, spec.candidates as usize, spec.seed);
        let mut race = self.add(&design, Stage::Coarse);
        // Replace the points validation refused by random valid ones, as far as they exist.
        let mut rng = design::rng(spec.seed, 1);
        let mut tries = 0;
        while race.len() < (spec.candidates as usize).min(self.grid_size() as usize)
            && tries < 20 * spec.candidates
        {
            tries += 1;
            let p = design::random_point(&dims, &mut rng);
            race.extend(self.add(&[p], Stage::Coarse));
        }
        self.coarse = self.candidates.len();
        let coarse_runs = (race.len() * self.rung(0) * spec.scenarios.len()) as u64;
        self.project(coarse_runs + self.ahead(1, race.len(), spec.rounds));
        self.evaluate(&race, self.rung(0))?;

        let mut width = race.len();
        let mut last = 0;
        for k in 1..=spec.rounds {
            (self.report)(Event::Stage(&format!("round {k} of {}", spec.rounds)));
            self.project(self.ahead(k, width, spec.rounds));
            last = k;
            // Halve the race on the runs its members share, and promote the survivors.
            width = width.div_ceil(2).max(confirm);
            race = self.top(&race, self.rung(k - 1), width);
            self.evaluate(&race, self.rung(k))?;
            for &c in &race {
                self.candidates[c].stage = Stage::Race(k);
            }
            // Refine around the best: their untried neighbours, each climbing while it would
            // make the race.
            let step = design::step(&dims, k);
            let mut fresh = Vec::new();
            for &c in &self.top(&race, self.rung(k), confirm) {
                fresh.extend(design::neighbours(&self.candidates[c].index, &step, &dims));
            }
            let mut alive = self.add(&fresh, Stage::Refine(k));
            if alive.is_empty() && step.iter().all(|&s| s == 1) {
                break;
            }
            self.evaluate(&alive, self.rung(0))?;
            for j in 0..k {
                let pool: Vec<usize> = race.iter().chain(&alive).copied().collect();
                let cut = self.top(&pool, self.rung(j), width);
                alive.retain(|c| cut.contains(c));
                if alive.is_empty() {
                    break;
                }
                self.evaluate(&alive, self.rung(j + 1))?;
            }
            for &c in &alive {
                self.candidates[c].stage = Stage::Race(k);
            }
            let pool: Vec<usize> = race.iter().chain(&alive).copied().collect();
            race = self.top(&pool, self.rung(k), width);
        }

        (self.report)(Event::Stage("confirmation"));
        self.project(self.ahead(spec.rounds + 1, width, last));
        let finalists = self.top(&race, self.rung(last), confirm);
        let base_runs = (spec.confirm_runs as usize).max(self.rung(last));
        let mut runs = base_runs;
        self.confirm(&finalists, runs)?;
        let mut winner = self.best_feasible(&finalists, runs);
        while let Some(w) = winner {
            if self.precise(w, runs) || runs >= 4 * base_runs {
                break;
            }
            runs = (2 * runs).min(4 * base_runs);
            self.confirm(&finalists, runs)?;
            winner = self.best_feasible(&finalists, runs);
        }
        let mut all = finalists;
        if winner.is_none() {
            // The finalists lost their feasibility with more runs: confirm the best of those
            // that looked feasible on the runs they had.
            let mut others: Vec<usize> = (0..self.candidates.len())
                .filter(|c| !all.contains(c) && self.score(*c, self.candidates[*c].runs()).feasible)
                .collect();
            others.sort_by(|&a, &b| self.order(a, b, None));
            others.truncate(confirm);
            if !others.is_empty() {
                self.confirm(&others, runs)?;
                all.extend(others);
                winner = self.best_feasible(&all, runs);
            }
        }
        all.sort_by(|&a, &b| self.order(a, b, Some(runs)));
        if let Some(w) = winner {
            self.candidates[w].stage = Stage::Recommended;
        }
        self.finalists = all;
        self.confirm_runs = runs;
        self.winner = winner;
        // The bar ends full: its length becomes the runs actually made.
        (self.report)(Event::Planned(self.planned));
        Ok(())
    }

    /// Evaluates `ids` up to `runs` runs and marks them finalists.
    /// Expects `ahead` more runs than those decided so far, and tells the progress bar.
    fn project(&mut self, ahead: u64) {
        self.projected = self.planned + ahead;
        (self.report)(Event::Planned(self.projected));
    }

    /// The runs of rounds `from..=rounds` with `width` candidates racing, and of the
    /// confirmation after round `last`: each round promotes half the race (at least `confirm`)
    /// from rung k - 1 to rung k and tries about 2 neighbours per parameter of each of the
    /// `confirm` best at the first rung; the confirmation brings the `confirm` finalists to
    /// `confirm_runs`. The refinements' climbing and a second confirmation make it an estimate,
    /// never a bound: the bar's length only grows past it.
    fn ahead(&self, from: u32, mut width: usize, last: u32) -> u64 {
        let confirm = self.spec.confirm as usize;
        let mut runs = 0;
        for k in from..=self.spec.rounds {
            width = width.div_ceil(2).max(confirm);
            runs += width * (self.rung(k) - self.rung(k - 1));
            runs += confirm * 2 * self.lattice.len() * self.rung(0);
        }
        let have = self.rung(last);
        runs += confirm * ((self.spec.confirm_runs as usize).max(have) - have);
        (runs * self.spec.scenarios.len()) as u64
    }

    fn confirm(&mut self, ids: &[usize], runs: usize) -> Run<()> {
        self.evaluate(ids, runs)?;
        for &c in ids {
            self.candidates[c].stage = Stage::Confirm;
        }
        Ok(())
    }

    /// The best of `ids` on `runs` runs if it is feasible.
    fn best_feasible(&self, ids: &[usize], runs: usize) -> Option<usize> {
        let best = *self.top(ids, runs, 1).first()?;
        self.score(best, runs).feasible.then_some(best)
    }

    /// Whether the objective of `c` on `runs` runs is known within `precision`.
    fn precise(&self, c: usize, runs: usize) -> bool {
        let s = self.score(c, runs);
        let Some(m) = self.objective_metric() else { return true };
        let Some(e) = self.stat(c, s.worst, m, runs).estimate() else { return true };
        e.half_width.is_none_or(|h| h <= self.spec.precision * e.mean.abs())
    }

    fn objective_metric(&self) -> Option<usize> {
        self.metric_index(&self.spec.objective)
    }

    /// The index of a metric column in each run's values.
    pub fn metric_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// Adds the lattice points not tried yet as candidates (building and checking their
    /// experiments); returns the new candidates' ids.
    fn add(&mut self, points: &[Index], stage: Stage) -> Vec<usize> {
        let mut ids = Vec::new();
        for p in points {
            if self.known.contains_key(p) {
                continue;
            }
            let values: Vec<toml::Value> =
                p.iter().zip(&self.lattice).map(|(&i, levels)| levels[i].value.clone()).collect();
            let built: Result<Vec<Point>, String> =
                (0..self.spec.scenarios.len()).map(|s| self.spec.point(s, &values)).collect();
            match built {
                Ok(points) => {
                    let id = self.candidates.len();
                    let scenarios = points.len();
                    self.candidates.push(Candidate {
                        index: p.clone(),
                        points,
                        results: vec![Vec::new(); scenarios],
                        stage,
                    });
                    self.known.insert(p.clone(), Some(id));
                    ids.push(id);
                }
                Err(reason) => {
                    self.known.insert(p.clone(), None);
                    self.invalid.insert(p.clone(), reason);
                }
            }
        }
        ids
    }

    /// Runs each of `ids` in every scenario until it has `runs` runs.
    fn evaluate(&mut self, ids: &[usize], runs: usize) -> Run<()> {
        let strategy = self.spec.strategy;
        let mut slots = Vec::new();
        for &c in ids {
            let have = self.candidates[c].runs();
            for s in 0..self.spec.scenarios.len() {
                for r in have..runs {
                    slots.push((c, s, r as u32));
                }
            }
        }
        if slots.is_empty() {
            return Ok(());
        }
        self.planned += slots.len() as u64;
        (self.report)(Event::Planned(self.planned.max(self.projected)));
        let mut out: Vec<Vec<Option<f64>>> = vec![Vec::new(); slots.len()];
        {
            let jobs: Vec<Job<'_>> = slots
                .iter()
                .map(|&(c, s, run)| {
                    let point = &self.candidates[c].points[s];
                    Job { spec: &point.spec, strategy: &point.strategies[strategy], run }
                })
                .collect();
            let done_before = self.runs_spent;
            let events_before = self.events;
            let report = &mut *self.report;
            let mut events = events_before;
            sweep::execute_jobs(
                self.exp.seed,
                &jobs,
                self.threads,
                &mut |i, m| out[i] = run_values(m),
                &mut |done, ev| {
                    events = events_before + ev;
                    report(Event::Done(done_before + done, events));
                },
                self.stop,
            )?;
            self.events = events;
        }
        self.runs_spent += slots.len() as u64;
        // Slots are in run order within each (candidate, scenario).
        for ((c, s, _), values) in slots.into_iter().zip(out) {
            self.candidates[c].results[s].push(values);
        }
        Ok(())
    }

    /// Metric `m` of scenario `s` of candidate `c` over its first `runs` runs; `+inf` (no
    /// sd) when a run's value is (a run that never recovered).
    pub fn stat(&self, c: usize, s: usize, m: usize, runs: usize) -> Stat {
        let mut acc = Running::default();
        let mut infinite = false;
        for run in self.candidates[c].results[s].iter().take(runs) {
            if let Some(x) = run.get(m).copied().flatten() {
                infinite |= x == f64::INFINITY;
                acc.push(x);
            }
        }
        if infinite {
            return Stat { mean: Some(f64::INFINITY), sd: None, n: acc.count() };
        }
        let st = acc.stat();
        Stat { mean: st.mean, sd: st.sd, n: acc.count() }
    }

    /// Candidate `c` judged on its first `runs` runs.
    pub fn score(&self, c: usize, runs: usize) -> Score {
        let scenarios = self.spec.scenarios.len();
        let mut feasible = true;
        let mut violation = 0.0;
        for con in &self.spec.constraints {
            let Some(m) = self.metric_index(&con.metric) else { continue };
            let mut worst: f64 = 0.0;
            for s in 0..scenarios {
                match self.stat(c, s, m, runs).mean {
                    Some(x) if con.holds(x) => {}
                    Some(x) => {
                        feasible = false;
                        let scale = con.value.abs().max(1e-9);
                        worst = worst.max((-con.margin(x)).max(0.0) / scale).max(1e-12);
                    }
                    None => {
                        feasible = false;
                        worst = worst.max(1e6);
                    }
                }
            }
            violation += worst;
        }
        let mut objective: Option<f64> = None;
        let mut worst = 0;
        if let Some(m) = self.objective_metric() {
            for s in 0..scenarios {
                let Some(x) = self.stat(c, s, m, runs).mean else { continue };
                let worse = match objective {
                    None => true,
                    Some(o) if self.spec.maximize => x < o,
                    Some(o) => x > o,
                };
                if worse {
                    objective = Some(x);
                    worst = s;
                }
            }
        }
        Score { feasible, violation: if feasible { 0.0 } else { violation }, objective, worst }
    }

    /// Orders candidates best first, each on its first `runs` runs (`None`: on all it has).
    fn order(&self, a: usize, b: usize, runs: Option<usize>) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let sa = self.score(a, runs.unwrap_or_else(|| self.candidates[a].runs()));
        let sb = self.score(b, runs.unwrap_or_else(|| self.candidates[b].runs()));
        let objective = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) if self.spec.maximize => y.total_cmp(&x),
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let by_score = match (sa.feasible, sb.feasible) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (true, true) => objective(sa.objective, sb.objective),
            (false, false) => {
                sa.violation.total_cmp(&sb.violation).then_with(|| objective(sa.objective, sb.objective))
            }
        };
        by_score.then_with(|| self.candidates[a].index.cmp(&self.candidates[b].index))
    }

    /// The `n` best of `ids` on their first `runs` runs, best first, preferring distinct
    /// outcomes: a candidate whose objective and constrained metrics equal, in every scenario,
    /// those of a better one (a key that changes nothing here: with common random numbers its
    /// runs are the same) comes after every distinct one, so that the race and the
    /// refinement's centres are not spent on copies.
    fn top(&self, ids: &[usize], runs: usize, n: usize) -> Vec<usize> {
        let mut sorted = ids.to_vec();
        sorted.sort_by(|&a, &b| self.order(a, b, Some(runs)));
        sorted.dedup();
        let mut distinct: Vec<(usize, Vec<Option<u64>>)> = Vec::new();
        let mut copies = Vec::new();
        for c in sorted {
            let outcome = self.outcome(c, runs);
            if distinct.iter().any(|(_, o)| *o == outcome) {
                copies.push(c);
            } else {
                distinct.push((c, outcome));
            }
        }
        let mut out: Vec<usize> = distinct.into_iter().map(|(c, _)| c).collect();
        out.extend(copies);
        out.truncate(n);
        out
    }

    /// The means that judge candidate `c` on `runs` runs (objective and constrained metrics,
    /// every scenario), as bits for exact comparison.
    fn outcome(&self, c: usize, runs: usize) -> Vec<Option<u64>> {
        let metrics = std::iter::once(self.spec.objective.as_str())
            .chain(self.spec.constraints.iter().map(|k| k.metric.as_str()))
            .filter_map(|name| self.metric_index(name));
        let mut out = Vec::new();
        for m in metrics {
            for s in 0..self.spec.scenarios.len() {
                out.push(self.stat(c, s, m, runs).mean.map(f64::to_bits));
            }
        }
        out
    }

    /// Every candidate, best first, each on all its runs.
    pub fn ranked(&self) -> Vec<usize> {
        let mut all: Vec<usize> = (0..self.candidates.len()).collect();
        all.sort_by(|&a, &b| self.order(a, b, None));
        all
    }

    /// Whether candidates `a` and `b` judge the same on the runs they share (a key that
    /// changes nothing in these scenarios).
    pub fn same_outcome(&self, a: usize, b: usize) -> bool {
        let runs = self.candidates[a].runs().min(self.candidates[b].runs());
        runs > 0 && self.outcome(a, runs) == self.outcome(b, runs)
    }

    /// The candidate at lattice point `index`, if it was evaluated.
    pub fn candidate_at(&self, index: &Index) -> Option<usize> {
        self.known.get(index).copied().flatten()
    }

    /// The values of candidate `c`, one per parameter.
    pub fn levels_of(&self, c: usize) -> Vec<&Level> {
        self.candidates[c].index.iter().zip(&self.lattice).map(|(&i, l)| &l[i]).collect()
    }
}
