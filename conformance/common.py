"""What the Python drivers share.

A driver is started before the server, so that its imports are done when the server's fault
windows start counting: it prints `version <library version>`, then reads the server's URL
from its standard input (one line, written once `retrysim serve` listens), then runs
operations from `--workers` threads until `--seconds` have passed since it read the URL (an
operation started before then runs to its end) or each worker ran `--ops` operations. Every
operation is one call of the library, which retries it on its own; every attempt carries the
operation's id in `X-Op-Id` (`c<client>-w<worker>-<n>`), so serve's requests.csv groups the
attempts into operations and the test knows which library client each came from. Each worker
has its own library client (its own retry quota, connection pool), unless `--shared`.
"""

import argparse
import random
import sys
import threading
import time


def arguments(configs, exported=None):
    """The command line; `exported`, a file ending (".urllib3.json"), also accepts as the
    configuration a file `retrysim export` wrote."""
    p = argparse.ArgumentParser(description=__doc__)
    names = ", ".join(sorted(configs))
    p.add_argument(
        "config",
        help=f"the library's configuration: {names}"
        + (f", or a file *{exported} that `retrysim export` wrote" if exported else ""),
    )
    p.add_argument("--workers", type=int, default=8, help="threads sending operations")
    p.add_argument("--seconds", type=float, default=3.1, help="start no operation after this")
    p.add_argument("--ops", type=int, default=0, help="operations per worker (0: until --seconds)")
    p.add_argument("--seed", type=int, default=1, help="seeds Python's random (the libraries' jitter)")
    p.add_argument("--shared", action="store_true", help="one library client for every worker")
    args = p.parse_args()
    if args.config not in configs and not (exported and args.config.endswith(exported)):
        p.error(f"unknown configuration {args.config!r}: use {names}")
    return args


def run(args, version, make_client, call):
    """Runs the operations: `make_client(url)` builds a library client, `call(client, url,
    op_id)` performs one operation through it (its exceptions are the library giving up)."""
    random.seed(args.seed)
    print(f"version {version}", flush=True)
    url = sys.stdin.readline().strip()
    if not url:
        sys.exit("no server URL on standard input")
    shared = make_client(url) if args.shared else None
    start = time.monotonic()
    done = [0] * args.workers

    def worker(w):
        client = shared if args.shared else make_client(url)
        owner = 0 if args.shared else w
        n = 0
        while (args.ops == 0 or n < args.ops) and time.monotonic() - start < args.seconds:
            try:
                call(client, url, f"c{owner}-w{w}-{n}")
            except Exception:  # the library gave up: the server's log says how
                pass
            n += 1
        done[w] = n

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"done {sum(done)} operations", flush=True)
