#!/usr/bin/env bash
# Checks that a change left every result alone: runs every shipped experiment
# (experiments/*.toml and experiments/validation/*.toml) with the working tree's build and with
# the build of an earlier commit, and compares every CSV they write, byte for byte.
#
#   scripts/same-results.sh [COMMIT]      (default: HEAD, i.e. the uncommitted changes)
#
# The earlier commit is built in a temporary git worktree with its own target directory (a
# full release build, about a minute). Prints one line per experiment and every CSV that
# differs; exits 1 if any does. About 4 minutes on 2 cores (the million-client herd included).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD}
tmp=$(mktemp -d)
cleanup() {
  git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== building $base (worktree in $tmp/base)"
git worktree add --detach "$tmp/base" "$base" >/dev/null
(cd "$tmp/base" && cargo build --release --quiet --target-dir "$tmp/base-target")
echo "== building the working tree"
cargo build --release --quiet

old="$tmp/base-target/release/retrysim" new=target/release/retrysim
status=0
for f in experiments/*.toml experiments/validation/*.toml; do
  name=$(echo "${f%.toml}" | tr / _)
  "$old" run "$f" --threads 2 --quiet --out "$tmp/old/$name" >/dev/null
  "$new" run "$f" --threads 2 --quiet --out "$tmp/new/$name" >/dev/null
  n=0
  for csv in "$tmp/old/$name"/*.csv; do
    n=$((n + 1))
    if ! cmp -s "$csv" "$tmp/new/$name/$(basename "$csv")"; then
      echo "DIFFERS: $f $(basename "$csv")"
      status=1
    fi
  done
  echo "$f: $n CSV files compared"
done
[ "$status" = 0 ] && echo "every CSV is byte-identical to $base's"
exit "$status"
