#!/usr/bin/env bash
# Where a run's instructions go: the engine (scheduler + event queue) or the model.
#
#   scripts/engine-share.sh [EXPERIMENT.toml] [REPS]     (default: herd-10k.toml 10)
#
# Counts instructions with valgrind's callgrind (repeatable whatever the machine's load):
#   run           `retrysim run FILE --runs REPS --threads 1` (the release binary), counting
#                 only the simulation (model::simulate_with)
#   replay        run 0's event-queue calls alone (recorded once), REPS times, on a calendar
#                 queue reused across replays (Scheduler::reset): the engine without the model
#   replay-new    the same on a new calendar queue each time (as the runs do today)
#   replay-heap   the same on a new binary heap each time
#   replay-stack  the replay loop alone (a stack for a queue): subtracted from the replays
# then prints instructions per event, the engine's and the model's shares, and the run's
# most expensive functions (self cost, summed over the source files their code was inlined
# from). Needs valgrind. Output files: target/engine-share/.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-herd-10k.toml}
reps=${2:-10}
out=target/engine-share
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "engine-share: valgrind is needed (apt-get install valgrind)"; exit 1; }

bin=$(cargo bench --bench engine_share --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*engine_share[^"]*\)".*/\1/p' | tail -1)
[ -x "$bin" ] || { echo "engine-share: could not build the engine_share bench"; exit 1; }

cargo build --release --quiet
declare -A per_event
valgrind --tool=callgrind --toggle-collect='retrysim::model::simulate_with' \
  --callgrind-out-file="$out/run.callgrind" target/release/retrysim run "experiments/$file" \
  --runs "$reps" --threads 1 --out "$out/run" >"$out/run.log" 2>&1
ir=$(sed -n 's/.*refs: *\([0-9,]*\).*/\1/p' "$out/run.log" | tr -d ,)
# `events` is the last column of runs.csv.
events=$(awk -F, 'NR > 1 { e += $NF } END { printf "%.0f", e }' "$out/run/runs.csv")
per_event[run]=$(awk -v i="$ir" -v e="$events" 'BEGIN { printf "%.1f", i / e }')
printf '%-13s %14s instructions, %7s per event (%s events in %s runs)\n' run "$ir" "${per_event[run]}" "$events" "$reps"
for mode in replay replay-new replay-heap replay-stack; do
  valgrind --tool=callgrind --toggle-collect='*replay_calendar' --toggle-collect='*replay_heap' \
    --toggle-collect='*replay_stack' \
    --callgrind-out-file="$out/$mode.callgrind" "$bin" "$mode" "$file" "$reps" >"$out/$mode.log" 2>&1
  ir=$(sed -n 's/.*refs: *\([0-9,]*\).*/\1/p' "$out/$mode.log" | tr -d ,)
  events=$(sed -n "s/.* $reps x \([0-9]*\) events.*/\1/p" "$out/$mode.log")
  per_event[$mode]=$(awk -v i="$ir" -v r="$reps" -v e="$events" 'BEGIN { printf "%.1f", i / (r * e) }')
  printf '%-13s %14s instructions, %7s per event (run 0: %s events, x %s)\n' "$mode" "$ir" "${per_event[$mode]}" "$events" "$reps"
done
awk -v f="${per_event[run]}" -v r="${per_event[replay]}" -v n="${per_event[replay-new]}" \
  -v s="${per_event[replay-stack]}" 'BEGIN {
  printf "engine per event: %.1f instructions reusing the queue, %.1f with a new queue per run\n", r - s, n - s
  printf "share of a run (new queue per run): engine %.0f %%, model %.0f %%\n", 100 * (n - s) / f, 100 * (1 - (n - s) / f)
}'

echo
echo "most expensive functions of the runs (self instructions, % of the simulation):"
callgrind_annotate --inclusive=no --threshold=100 --auto=no "$out/run.callgrind" 2>/dev/null | awk '
/PROGRAM TOTALS/ { gsub(",", "", $1); tot = $1 + 0; next }
/^ *[0-9,]+ \( *[0-9.]+%\)  / {
  c = $1; gsub(",", "", c); c += 0; line = $0
  sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", line)
  i = index(line, ":"); fn = substr(line, i + 1); sub(/ \[[^]]*\]$/, "", fn); s[fn] += c
}
END { for (k in s) if (s[k] * 200 > tot) printf "%13.0f %6.2f %%  %s\n", s[k], 100 * s[k] / tot, k }' | sort -rn | head -25
