//! Helpers shared by the integration tests' modules (`use crate::support::...`).

use retrysim::experiment::{self, Experiment, Overrides};
use std::path::{Path, PathBuf};

/// A shipped experiment file (`experiments/NAME`).
pub fn experiment_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(name)
}

/// A shipped experiment, loaded with `--set KEY=VALUE` overrides.
pub fn shipped(file: &str, set: &[(&str, &str)]) -> Experiment {
    let overrides = Overrides {
        set: set.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    experiment::load(&experiment_file(file), &overrides).expect("shipped experiments are valid")
}

/// A CSV file as (header, rows).
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn read(path: &Path) -> Table {
        let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let header = r.headers().unwrap().iter().map(String::from).collect();
        let rows = r.records().map(|rec| rec.unwrap().iter().map(String::from).collect()).collect();
        Table { header, rows }
    }

    /// The index of column `name`.
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    /// Every row's cell of column `name`.
    pub fn column(&self, name: &str) -> Vec<&str> {
        let i = self.col(name);
        self.rows.iter().map(|r| r[i].as_str()).collect()
    }

    /// `row`'s cell of column `name`.
    pub fn get<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        &row[self.col(name)]
    }

    /// `row`'s cell of column `name`, as a number.
    pub fn num(&self, row: &[String], name: &str) -> f64 {
        let cell = self.get(row, name);
        cell.parse().unwrap_or_else(|_| panic!("{name} = {cell:?} is not a number"))
    }
}
