"""urllib3 2.x `Retry` (urllib3/util/retry.py): GET requests through a PoolManager.

defaults: `Retry()`: total = 10, no backoff, Retry-After honoured on 413/429/503, no
          status_forcelist (the preset `urllib3`). A PoolManager given no `retries` would use
          `Retry.DEFAULT = Retry(3)` instead: the driver passes `Retry()` explicitly.
tuned:    `Retry(total=3, backoff_factor=0.02, backoff_jitter=0.05, backoff_max=1,
          status_forcelist=[429, 500, 502, 503, 504])`.
*.urllib3.json: a file `retrysim export urllib3` wrote, applied as it is:
          `Retry(**json.load(f))`.
"""

import json

import urllib3
from urllib3.util.retry import Retry

import common

CONFIGS = {
    "defaults": lambda: Retry(),
    "tuned": lambda: Retry(
        total=3,
        backoff_factor=0.02,
        backoff_jitter=0.05,
        backoff_max=1.0,
        status_forcelist=[429, 500, 502, 503, 504],
    ),
}


def main():
    args = common.arguments(CONFIGS, exported=".urllib3.json")
    if args.config in CONFIGS:
        retry = CONFIGS[args.config]
    else:
        with open(args.config) as f:
            kwargs = json.load(f)
        retry = lambda: Retry(**kwargs)  # noqa: E731

    def make_client(_url):
        return urllib3.PoolManager(maxsize=args.workers, retries=retry())

    def call(pool, url, op):
        pool.request("GET", url + "/op", headers={"X-Op-Id": op})

    common.run(args, urllib3.__version__, make_client, call)


if __name__ == "__main__":
    main()
