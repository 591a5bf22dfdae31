#!/usr/bin/env bash
# Regenerates every committed result folder under results/ from the shipped experiments
# (the same seeds, so the same bytes on any machine and thread count). Run it after a change
# to the model, then review `git diff --stat results/` and README's tables. About 3 minutes
# on 2 cores, most of it tune-payment-api and the AWS study.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/retrysim"
for e in retry-storm aws-2015-jitter herd-10k herd-1m long-open budgets-vs-breakers \
  payment-outage loyalty-batch queue-visibility metastable layered-retries rate-limited-api \
  fixed-window-herd queue-discipline adaptive-limits hedging-tail hedging-slowdown replica-outage \
  open-closed-collapse rolling-deploy retries-everywhere fanout-tail autoscale-storm autoscale-storm-kpa; do
  echo "== $e"
  rm -rf "results/$e"
  "$bin" run "experiments/$e.toml" --out "results/$e" --quiet
done
echo "== tune-payment-api"
rm -rf results/tune-payment-api-tune
"$bin" tune experiments/tune-payment-api.toml --out results/tune-payment-api-tune --quiet
