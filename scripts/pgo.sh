#!/usr/bin/env bash
# A profile-guided (PGO) build of retrysim: optional, for speed measurements and long sweeps.
# The normal commands (cargo build --release, cargo run --release -- ...) do not need it, and
# it gives the same results to the byte (it changes code layout and inlining, not arithmetic).
#
#   scripts/pgo.sh     builds target/pgo/release/retrysim (and the `compare` bench, which
#                      scripts/bench-compare.sh then runs next to the normal build)
#
# Steps: (1) adds the `llvm-tools` rustup component if it is missing (for llvm-profdata);
# (2) builds retrysim and the `compare` bench instrumented (target/pgo-gen); (3) runs a
# training set: the 10k herd, the payment-API retry storm cut to 20 s and 2 runs, the AWS
# study at 10 runs per point, and a few `compare` repetitions; (4) merges the profiles with
# the toolchain's llvm-profdata; (5) rebuilds with them into target/pgo/. Both builds use
# their own target directories, so the normal build is left alone. Takes a few minutes (two
# full release builds).
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "== adding the llvm-tools component (llvm-profdata)"
  rustup component add llvm-tools-preview
fi
[ -x "$profdata" ] || { echo "pgo: llvm-profdata not found at $profdata"; exit 1; }

data="$PWD/target/pgo-data"
rm -rf "$data"
mkdir -p "$data"

echo "== instrumented build (target/pgo-gen)"
export RUSTFLAGS="-Cprofile-generate=$data"
cargo build --release --target-dir target/pgo-gen
gen=target/pgo-gen/release/retrysim
gen_compare=$(cargo bench --bench compare --no-run --target-dir target/pgo-gen --message-format=json |
  sed -n 's/.*"executable":"\([^"]*compare[^"]*\)".*/\1/p' | tail -1)

echo "== training runs"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$gen" run experiments/herd-10k.toml --out "$out/herd-10k"
"$gen" run experiments/retry-storm.toml --out "$out/retry-storm" --runs 2 \
  --set workload.duration=20s --set horizon=30s
"$gen" run experiments/aws-2015-jitter.toml --out "$out/aws" --runs 10
"$gen_compare" 5

echo "== merging profiles"
"$profdata" merge -o "$data/merged.profdata" "$data"/*.profraw

echo "== optimised build (target/pgo)"
export RUSTFLAGS="-Cprofile-use=$data/merged.profdata"
cargo build --release --target-dir target/pgo
cargo bench --bench compare --no-run --target-dir target/pgo
echo "built target/pgo/release/retrysim"
