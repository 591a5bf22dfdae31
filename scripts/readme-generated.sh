#!/usr/bin/env bash
# Regenerates README.md's generated parts from their sources: the key reference (between its
# markers) from the schema (`retrysim schema --markdown`), and the validation summary from
# VALIDATION.md's "## Summary" (run `retrysim validate` first when the model changed).
# tests/readme.rs fails until this has been run after such a change.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet -- schema --markdown > target/key-reference.md
python3 - <<'PY'
readme = open("README.md").read()

def splice(text, begin_marker, end_marker, body):
    begin = text.index(begin_marker)
    begin = text.index("-->", begin) + 3
    end = text.index(end_marker)
    return text[:begin] + "\n" + body.strip() + "\n" + text[end:]

readme = splice(readme, "<!-- BEGIN KEY REFERENCE", "<!-- END KEY REFERENCE -->",
                open("target/key-reference.md").read())
validation = open("VALIDATION.md").read()
start = validation.index("## Summary\n") + len("## Summary\n")
end = validation.index("\n## ", start)
readme = splice(readme, "<!-- BEGIN VALIDATION SUMMARY", "<!-- END VALIDATION SUMMARY -->",
                validation[start:end])
open("README.md.tmp", "w").write(readme)
PY
mv README.md.tmp README.md
