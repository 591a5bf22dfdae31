#!/usr/bin/env bash
# Regenerates the generated parts of the documentation from their sources, between their
# markers: docs/experiment-files.md's key reference from the schema (`retrysim schema
# --markdown`), docs/outputs.md's column reference from the metric, series and manifest
# declarations (`retrysim schema --outputs`), and README.md's validation summary from
# VALIDATION.md's "## Summary" (run `retrysim validate` first when the model changed).
# tests/it/readme.rs fails until this has been run after such a change.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet -- schema --markdown > "${CARGO_TARGET_DIR:-target}/key-reference.md"
cargo run --release --quiet -- schema --outputs > "${CARGO_TARGET_DIR:-target}/outputs-reference.md"
python3 - <<'PY'
import os

def splice(path, begin_marker, end_marker, body):
    text = open(path).read()
    begin = text.index(begin_marker)
    begin = text.index("-->", begin) + 3
    end = text.index(end_marker)
    text = text[:begin] + "\n" + body.strip() + "\n" + text[end:]
    open(path + ".tmp", "w").write(text)
    os.replace(path + ".tmp", path)

splice("docs/experiment-files.md", "<!-- BEGIN KEY REFERENCE", "<!-- END KEY REFERENCE -->",
       open(os.environ.get("CARGO_TARGET_DIR", "target") + "/key-reference.md").read())
splice("docs/outputs.md", "<!-- BEGIN OUTPUTS REFERENCE", "<!-- END OUTPUTS REFERENCE -->",
       open(os.environ.get("CARGO_TARGET_DIR", "target") + "/outputs-reference.md").read())
validation = open("VALIDATION.md").read()
start = validation.index("## Summary\n") + len("## Summary\n")
end = validation.index("\n## ", start)
splice("README.md", "<!-- BEGIN VALIDATION SUMMARY", "<!-- END VALIDATION SUMMARY -->",
       validation[start:end])
PY
