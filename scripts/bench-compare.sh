#!/usr/bin/env bash
# Side-by-side speed figures in one go (README, Performance):
#
#   scripts/bench-compare.sh [N]        (N repetitions where it applies; default 20)
#
# 1. the 10,000-client herd, one run: retrysim (release build; and the PGO build if
#    scripts/pgo.sh has made one) against the bare binary-heap loop, alternating in one
#    process (`benches/compare.rs`): fastest and median per run, and the ratio;
# 2. the same herd in SimPy (`benches/simpy_herd.py`; installs simpy with pip if missing):
#    fastest and median per run;
# 3. the 1,000,000-client herd on one thread: events/s, peak RSS (/usr/bin/time -v) and bytes
#    per client (peak RSS less that of the same file with one client);
# 4. the AWS study sweep (19 x 5 x 100 runs) on 2 threads: wall time.
# Timings on a loaded machine are noisy; compare the fastest runs, and repeat.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release --quiet
compare=$(cargo bench --bench compare --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*compare[^"]*\)".*/\1/p' | tail -1)
builds=("release:target/release/retrysim:$compare")
pgo_compare=$(ls -t target/pgo/release/deps/compare-* 2>/dev/null | grep -v '\.d$' | head -1 || true)
if [ -x target/pgo/release/retrysim ] && [ -n "$pgo_compare" ]; then
  builds+=("PGO:target/pgo/release/retrysim:$pgo_compare")
fi

for b in "${builds[@]}"; do
  IFS=: read -r name _ bin <<<"$b"
  echo "== 10k herd, one run ($name build): retrysim against the bare binary-heap loop"
  "$bin" "$n" | sed 's/^/  /'
done

echo "== 10k herd, one run: SimPy ($n runs)"
if ! python3 -c 'import simpy' 2>/dev/null; then
  python3 -m pip install --quiet --root-user-action=ignore simpy
fi
python3 benches/simpy_herd.py "$n" >"$tmp/simpy.txt"
sed -n 's/^run [0-9]*: \([0-9.]*\) ms wall.*/\1/p' "$tmp/simpy.txt" | sort -g |
  awk '{ v[NR] = $1 } END { printf "  SimPy %s: fastest %.1f ms, median %.1f ms per run\n", ver, v[1], v[int(NR / 2) + 1] }' \
    ver="$(python3 -c 'import simpy; print(simpy.__version__)')"

for b in "${builds[@]}"; do
  IFS=: read -r name retrysim _ <<<"$b"
  echo "== 1M herd on one thread ($name build)"
  /usr/bin/time -v "$retrysim" run experiments/herd-1m.toml --threads 1 --stats --out "$tmp/1m" \
    >"$tmp/1m.out" 2>"$tmp/1m.time"
  /usr/bin/time -v "$retrysim" run experiments/herd-1m.toml --threads 1 --out "$tmp/1" \
    --set workload.clients=1 >/dev/null 2>"$tmp/1.time"
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/1m.time")
  fixed=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/1.time")
  grep -o '[0-9.]* M events/s' "$tmp/1m.out" | sed 's/^/  /'
  awk -v r="$rss" -v f="$fixed" 'BEGIN {
    printf "  peak RSS %.1f MB, of which %.1f MB with one client: %.0f B per client\n", r * 1024 / 1e6, f * 1024 / 1e6, (r - f) * 1024 / 1e6
  }'
done

for b in "${builds[@]}"; do
  IFS=: read -r name retrysim _ <<<"$b"
  echo "== AWS study sweep on 2 threads ($name build)"
  "$retrysim" run experiments/aws-2015-jitter.toml --threads 2 --stats --out "$tmp/aws" |
    grep 'events in' | sed 's/^/  /'
done
