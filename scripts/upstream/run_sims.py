"""Runs mbrooker/simulator_example retry_sim `run_sims(max_t=10.0)` unchanged, once per seed,
and prints one CSV line per seed, failure rate and strategy (upstream's own columns, with the
seed first). Usage: python3 run_sims.py UPSTREAM_DIR FIRST_SEED LAST_SEED > out.csv
The upstream module runs `run_sims_retry_serial(10.0)` when imported: its output is discarded."""
import contextlib, io, random, sys

upstream, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sys.path.insert(0, upstream + "/retry_sim")
with contextlib.redirect_stdout(io.StringIO()):
    import retry_sim  # noqa: E402  (runs the serial simulation once; discarded)

print("seed,failure_rate,successes,total_calls,unique_calls,name")
for seed in range(first, last + 1):
    random.seed(seed)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        retry_sim.run_sims(10.0)
    for line in out.getvalue().splitlines()[1:]:
        print(f"{seed},{line}")
    sys.stdout.flush()
