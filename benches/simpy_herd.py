#!/usr/bin/env python3
"""The 10,000-client thundering herd of experiments/herd-10k.toml, written the idiomatic SimPy way.

10,000 client processes start at t=0; the server is a simpy.Resource with 100 workers and no
waiting room: a request that finds every worker busy is rejected at once (429). Service is
exponential with mean 10 ms; no network delay; at most 6 attempts; retry k (k = 1 first) waits
U(0, min(1 s, 10 ms * 2^(k-1))). The comparator for retrysim's `herd_10k` benchmark.

Usage: python3 benches/simpy_herd.py [RUNS]   (default 5; needs `pip install simpy`)
Prints each run's wall time, the means (± standard error) of succeeded and calls, and the
median wall time per run. "events" is counted as retrysim counts them for this model
(calls + succeeded), so events/s compare across implementations.
"""

import random
import statistics
import sys
import time

import simpy

CLIENTS = 10_000
WORKERS = 100
MAX_ATTEMPTS = 6
SERVICE_MEAN = 0.010  # s
BASE = 0.010  # s
CAP = 1.0  # s


class Stats:
    def __init__(self):
        self.succeeded = 0
        self.calls = 0
        self.completion = 0.0


def client(env, server, rng, stats):
    for attempt in range(1, MAX_ATTEMPTS + 1):
        stats.calls += 1
        if server.count < server.capacity:
            with server.request() as req:  # granted at once: a worker is free
                yield req
                yield env.timeout(rng.expovariate(1.0 / SERVICE_MEAN))
            stats.succeeded += 1
            stats.completion = env.now
            return
        # Every worker is busy: rejected with 429 at once.
        if attempt == MAX_ATTEMPTS:
            stats.completion = env.now
            return
        yield env.timeout(rng.uniform(0.0, min(CAP, BASE * 2 ** (attempt - 1))))


def run(seed):
    rng = random.Random(seed)
    env = simpy.Environment()
    server = simpy.Resource(env, capacity=WORKERS)
    stats = Stats()
    for _ in range(CLIENTS):
        env.process(client(env, server, rng, stats))
    env.run()
    return stats


def mean_se(xs):
    m = statistics.fmean(xs)
    se = statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else float("nan")
    return m, se


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    walls, results = [], []
    for seed in range(1, runs + 1):
        t0 = time.perf_counter()
        s = run(seed)
        wall = time.perf_counter() - t0
        walls.append(wall)
        results.append(s)
        events = s.calls + s.succeeded
        print(
            f"run {seed}: {wall * 1e3:.1f} ms wall, succeeded {s.succeeded}, calls {s.calls}, "
            f"completion {s.completion:.4f} s, events {events} ({events / wall / 1e6:.3f} M events/s)"
        )
    sm, sse = mean_se([s.succeeded for s in results])
    cm, cse = mean_se([s.calls for s in results])
    tm, tse = mean_se([s.completion for s in results])
    em = statistics.fmean([s.calls + s.succeeded for s in results])
    med = statistics.median(walls)
    print(
        f"mean over {runs} runs (± s.e.): succeeded {sm:.2f} ± {sse:.2f}, calls {cm:.1f} ± {cse:.1f}, "
        f"completion {tm:.4f} ± {tse:.4f} s"
    )
    print(f"median wall per run: {med * 1e3:.1f} ms ({em / med / 1e6:.3f} M events/s at {em:.0f} events)")


if __name__ == "__main__":
    main()
