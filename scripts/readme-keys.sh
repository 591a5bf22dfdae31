#!/usr/bin/env bash
# Regenerates README.md's key reference (between its markers) from the schema:
# `retrysim schema --markdown`. tests/readme.rs fails until this has been run after a change
# to src/experiment/schema.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet -- schema --markdown > target/key-reference.md
python3 - <<'PY'
import re
readme = open("README.md").read()
ref = open("target/key-reference.md").read().strip()
begin = readme.index("<!-- BEGIN KEY REFERENCE")
begin = readme.index("-->", begin) + 3
end = readme.index("<!-- END KEY REFERENCE -->")
readme = readme[:begin] + "\n" + ref + "\n" + readme[end:]
open("README.md.tmp", "w").write(readme)
PY
mv README.md.tmp README.md
