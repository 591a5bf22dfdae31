//! What an error message offers for a word it does not know: the one suggestion rule for
//! keys, kinds, metrics, strategies, presets and checks, and the list of what is known.

/// The candidate closest to `word` when it is a likely typo (few edits relative to its
/// length), else the only candidate that `word` abbreviates (`expo` -> `exponential`).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    let normalized = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let word = normalized(word);
    let scored: Vec<(usize, f64, &str)> = candidates
        .into_iter()
        .map(|c| {
            let n = normalized(c);
            (strsim::damerau_levenshtein(&word, &n), strsim::jaro_winkler(&word, &n), c)
        })
        .collect();
    let near = scored
        .iter()
        .filter(|&&(d, _, _)| d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .map(|&(_, _, c)| c);
    near.or_else(|| abbreviated(&word, scored.iter().map(|&(_, _, c)| c)))
}

/// The only candidate that starts with `word` (of 3 characters or more).
fn abbreviated<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if word.chars().count() < 3 {
        return None;
    }
    let mut starting = candidates.filter(|c| c.to_ascii_lowercase().replace('-', "_").starts_with(word));
    let first = starting.next()?;
    starting.next().is_none().then_some(first)
}

/// `a, b, c` for messages.
pub fn list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items.into_iter().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_or_unique_abbreviations() {
        assert_eq!(closest("concurrenc", ["concurrency", "queue"]), Some("concurrency"));
        assert_eq!(closest("rat", ["at", "rate"]), Some("rate"));
        assert_eq!(closest("max-attempts", ["max_attempts"]), Some("max_attempts"));
        assert_eq!(closest("expo", ["exponential", "equal-jitter"]), Some("exponential"));
        assert_eq!(closest("decorrelated", ["decorrelated-jitter", "decorrelated-jitter-v2"]), None);
        assert_eq!(closest("zzzzzz", ["kind", "queue"]), None);
        assert_eq!(closest("ra", ["rate"]), None);
    }
}
