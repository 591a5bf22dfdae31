"""Runs mbrooker/simulator_example simple_collapse_sim `run_sim_ramp` unchanged, once per seed
and scenario (`ramp_no_backoff` with `Client`, `ramp_backoff_and_jitter` with
`ClientWithBackoffAndJitter`, as upstream's own main), and prints one CSV line per seed,
scenario and simulated second: upstream's counters of that second (its StatData fields).
Usage: python3 collapse_ramp.py UPSTREAM_DIR FIRST_SEED LAST_SEED > out.csv
The upstream module runs its own main when imported (four scenarios, 10 runs each): it is run
after random.seed(1), so that its output is the seed-1 output upstream prints; it is written
to stderr with a note, and nothing of it goes to stdout."""
import contextlib, io, random, sys

upstream, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, upstream + "/simple_collapse_sim")
random.seed(1)
main_output = io.StringIO()
with contextlib.redirect_stdout(main_output):
    import sim  # noqa: E402  (runs upstream's main once, after random.seed(1))
print("# upstream main after random.seed(1):", file=sys.stderr)
sys.stderr.write(main_output.getvalue())

scenarios = [("ramp_no_backoff", sim.Client), ("ramp_backoff_and_jitter", sim.ClientWithBackoffAndJitter)]
print("seed,scenario,t,starts,successes,retries,timeouts")
for name, client in scenarios:
    for seed in range(first, last + 1):
        random.seed(seed)
        for d in sim.run_sim_ramp(name, client):
            print(f"{seed},{name},{d.start_t:g},{d.starts},{d.successes},{d.retries},{d.timeouts}")
        sys.stdout.flush()
