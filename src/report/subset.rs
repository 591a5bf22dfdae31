//! `plot --strategies`: a result set narrowed to some of its strategies, as if only they had
//! run (the rows of a strategy do not depend on the others).

use super::table::ResultSet;

impl ResultSet {
    /// Keeps only the strategies named in `names` (in the folder's order); `Err` names an
    /// unknown one, with the closest known name.
    pub fn keep_strategies(&mut self, names: &[String]) -> Result<(), String> {
        for n in names {
            if !self.strategies.contains(n) {
                let hint = crate::suggest::closest(n, self.strategies.iter().map(String::as_str))
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "no strategy named `{n}` in {}{hint}; its strategies are: {}",
                    self.dir.display(),
                    self.strategies.join(", ")
                ));
            }
        }
        // Old index -> new index, for the kept ones.
        let mut new_index = vec![None; self.strategies.len()];
        let mut kept = Vec::new();
        for (i, s) in self.strategies.iter().enumerate() {
            if names.contains(s) {
                new_index[i] = Some(kept.len());
                kept.push(s.clone());
            }
        }
        self.summary.retain(|r| new_index[r.strategy].is_some());
        for r in &mut self.summary {
            r.strategy = new_index[r.strategy].expect("kept");
        }
        let runs = std::mem::take(&mut self.runs);
        self.runs =
            runs.into_iter().filter_map(|((p, s), cell)| new_index[s].map(|s| ((p, s), cell))).collect();
        if let Some(ts) = &mut self.timeseries {
            ts.rows.retain(|r| new_index[r.strategy].is_some());
            for r in &mut ts.rows {
                r.strategy = new_index[r.strategy].expect("kept");
            }
        }
        self.manifest.strategies.retain(|s| names.contains(s));
        self.strategies = kept;
        Ok(())
    }
}
