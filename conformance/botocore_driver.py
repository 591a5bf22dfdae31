"""botocore's `standard` and `adaptive` retry modes (botocore/retries/standard.py, quota.py,
adaptive.py): CloudWatch Logs `DescribeLogGroups` calls against the server as the endpoint.

botocore classifies serve's answers itself: a 500/502/503/504 is a transient error
(`TransientRetryableChecker`), a 429 whose error code the operation does not model is a
throttling error (`ThrottlingStatusCodeChecker`), and it reads `x-amz-retry-after` (ms), which
serve sends beside every Retry-After. The attempt number travels in `amz-sdk-request`.

standard-defaults / adaptive-defaults: `Config(retries={"mode": MODE})`: 3 attempts.
standard-tuned / adaptive-tuned: `Config(retries={"mode": MODE, "total_max_attempts": 5})`.
"""

import threading

import botocore
import botocore.session
from botocore.config import Config

import common

CONFIGS = {
    "standard-defaults": {"mode": "standard"},
    "standard-tuned": {"mode": "standard", "total_max_attempts": 5},
    "adaptive-defaults": {"mode": "adaptive"},
    "adaptive-tuned": {"mode": "adaptive", "total_max_attempts": 5},
}

operation = threading.local()


def tag(request, **_):
    request.headers["X-Op-Id"] = operation.op


def main():
    args = common.arguments(CONFIGS)
    session = botocore.session.get_session()
    lock = threading.Lock()

    def make_client(url):
        with lock:  # creating clients from one session is not thread-safe
            client = session.create_client(
                "logs",
                region_name="us-east-1",
                endpoint_url=url,
                aws_access_key_id="conformance",
                aws_secret_access_key="conformance",
                config=Config(retries=dict(CONFIGS[args.config]), max_pool_connections=args.workers),
            )
        client.meta.events.register("before-send.cloudwatch-logs", tag)
        return client

    def call(client, _url, op):
        operation.op = op
        client.describe_log_groups()

    common.run(args, botocore.__version__, make_client, call)


if __name__ == "__main__":
    main()
