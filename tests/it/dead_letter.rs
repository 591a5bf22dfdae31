//! The client's dead-letter queue and its re-drive (`dead_letter`, `redrive`) on scripted
//! runs: exactly the operations whose tries all failed are dead-lettered, a re-drive sends
//! them again once, with their own key (the store answers a paid batch) or a new one (it pays
//! again), and the endings add up (`ops = succeeded + failed + dead_lettered`).

use crate::support::{at_point as at, check_endings, first_runs};

/// One job, 10 batches one after another, 1 s each (constant), 5 tries 1 s apart with a
/// dead-letter queue (`max_attempts = 8` is cut to 5 by `dead_letter.after`).
const JOB: &str = r#"
name = "dead-letter"
horizon = "10m"
[workload]
kind = "closed"
ops_per_client = 10
[server]
concurrency = 4
service_time = { dist = "constant", value = "1s" }
idempotency = { ttl = "24h" }
[client]
max_attempts = 8
dead_letter = { after = 5 }
idempotency = "per-op"
[[strategies]]
name = "job"
backoff = { kind = "constant", base = "1s" }
redrive = { at = "1m" }
"#;

#[test]
fn exactly_the_batches_whose_five_tries_failed_are_dead_lettered_and_a_redrive_pays_them_once() {
    // A 503 outage on [0, 10 s), answered before any work. Batch 1 tries at 0..4 s, batch 2
    // at 4..8 s: both dead-lettered after their 5th try. Batch 3 tries at 8, 9 and 10 s (the
    // outage is over) and succeeds; the 7 others take 1 s each.
    let text = JOB.replace(
        "[client]",
        "[[server.faults]]\nkind = \"outage\"\nstart = \"0\"\nduration = \"10s\"\nstatus = 503\n[client]",
    ) + "[sweep]\n\"strategies.job.redrive.key\" = [\"same\", \"new\"]\n\"strategies.job.redrive.at\" = [\"1m\", \"6s\"]\n";
    let runs = first_runs(&text, &[]);
    for key in ["same", "new"] {
        // Re-driven at 1 min, after the outage: both pay once (nothing had applied).
        let m = at(&runs, &[key, "1m"]);
        check_endings(m);
        assert_eq!((m.succeeded, m.failed, m.dead_lettered), (8, 0, 2), "{key}");
        assert_eq!((m.redriven, m.redrive_succeeded), (2, 2), "{key}");
        assert_eq!((m.applied, m.duplicates, m.dead_lettered_but_applied), (10, 0, 2), "{key}");
        // 5 + 5 + 3 + 7 x 1 tries, and one try for each re-driven batch.
        assert_eq!(m.calls, 22, "{key}");
        // A dead-lettered batch's latency ends when it is dead-lettered (4 s).
        assert_eq!(m.latency_max_s, 4.0);
        // Re-driven at 6 s: only batch 1 is in the queue then (batch 2 comes at 8 s and stays).
        // Its new pass tries at 6..9 s in the outage and at 10 s, and succeeds.
        let m = at(&runs, &[key, "6s"]);
        check_endings(m);
        assert_eq!((m.dead_lettered, m.redriven, m.redrive_succeeded), (2, 1, 1), "{key}");
        assert_eq!((m.applied, m.duplicates, m.calls), (9, 0, 25), "{key}");
    }
}

#[test]
fn a_redrive_with_a_new_key_pays_again_the_batches_whose_effect_had_applied() {
    // The gateway answers 429 after the commit on [0, 10 s). With a per-batch key, batch 1
    // commits at 1 s and its tries at 2..5 s get the stored result behind the gateway's 429:
    // dead-lettered at 5 s, paid. Batch 2 commits at 6 s and its 5th try (10 s) gets the
    // stored success. Without a key every try of batch 1 commits (0, 2, 4, 6, 8 s): 4
    // duplicates, and batch 2 pays twice (9 s and 11 s).
    let text = JOB.replace(
        "[client]",
        "[[server.faults]]\nkind = \"errors\"\nstart = \"0\"\nduration = \"10s\"\nprobability = 1.0\n\
         status = 429\nafter_effect = true\n[client]",
    ) + "[sweep]\n\"client.idempotency\" = [\"per-op\", \"none\"]\n\"strategies.job.redrive.key\" = [\"same\", \"new\"]\n";
    let runs = first_runs(&text, &[]);
    for (keys, duplicates_before) in [("per-op", 0), ("none", 5)] {
        for (redrive_key, paid_again) in [("same", 0), ("new", 1)] {
            let m = at(&runs, &[keys, redrive_key]);
            check_endings(m);
            assert_eq!(
                (m.succeeded, m.dead_lettered, m.dead_lettered_but_applied),
                (9, 1, 1),
                "{keys} {redrive_key}"
            );
            assert_eq!((m.redriven, m.redrive_succeeded, m.applied), (1, 1, 10), "{keys} {redrive_key}");
            // Without a key the re-drive's try executes whatever key it asks for.
            let again = if keys == "none" { 1 } else { paid_again };
            assert_eq!(m.duplicates, duplicates_before + again, "{keys} {redrive_key}");
        }
    }
}

#[test]
fn a_redrive_that_fails_again_ends_without_a_second_count_and_the_horizon_keeps_the_queue() {
    // The outage lasts 5 minutes: batch 1's re-drive after 10 s (and its 5 tries) fail again;
    // the batches dead-lettered less than 10 s before the horizon are never re-driven, and a
    // re-drive in progress at the horizon is no `unfinished` failure.
    let text = JOB
        .replace(
            "[client]",
            "[[server.faults]]\nkind = \"outage\"\nstart = \"0\"\nduration = \"5m\"\nstatus = 503\n[client]",
        )
        .replace("redrive = { at = \"1m\" }", "redrive = { after = \"10s\", rate = 0.5 }")
        .replace("horizon = \"10m\"", "horizon = \"43s\"");
    let runs = first_runs(&text, &[]);
    let m = &runs[0].1;
    check_endings(m);
    // Batches dead-lettered at 4, 8, ..., 40 s: all 10. Re-drives at 14, 18, ..., 42 s
    // (4 s apart, so `rate = 0.5` never holds one back), 8 of them by 43 s; the first seven
    // ended in failure (their 5 tries take 4 s), the one at 42 s is in progress.
    assert_eq!((m.succeeded, m.failed, m.dead_lettered), (0, 0, 10));
    assert_eq!((m.redriven, m.redrive_succeeded), (8, 0));
    assert_eq!((m.applied, m.duplicates), (0, 0));
}
