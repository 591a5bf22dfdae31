"""tenacity `Retrying` (tenacity/wait.py, stop.py) around one urllib3 GET without urllib3's own
retries; an answer of 400 or more raises, so tenacity sees it as a failure.

defaults: `Retrying()`: stop_never, wait_none, retry on any exception (the preset `tenacity`).
tuned:    `Retrying(stop=stop_after_attempt(4), wait=wait_random_exponential(multiplier=0.05,
          max=1), retry=retry_if_exception_type(HttpError))`: U(0, min(1 s, 50 ms * 2^(k-1))).
"""

from importlib.metadata import version

import urllib3
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

import common

class HttpError(Exception):
    pass

CONFIGS = {
    "defaults": lambda: Retrying(),
    "tuned": lambda: Retrying(
        stop=stop_after_attempt(4),
        wait=wait_random_exponential(multiplier=0.05, max=1),
        retry=retry_if_exception_type(HttpError),
    ),
}

def main():
    args = common.arguments(CONFIGS)
    retrying = CONFIGS[args.config]

    def make_client(_url):
        return urllib3.PoolManager(maxsize=args.workers, retries=False)

    def call(pool, url, op):
        def attempt():
            r = pool.request("GET", url + "/op", headers={"X-Op-Id": op})
            if r.status >= 400:
                raise HttpError(r.status)

        retrying()(attempt)

    common.run(args, version("tenacity"), make_client, call)

if __name__ == "__main__":
    main()
