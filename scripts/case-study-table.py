#!/usr/bin/env python3
"""Prints a Markdown table of committed results for a case study in docs/results/, with the
marker that tests/it/case_studies.rs checks it by (every number equals the CSV, rounded as
shown).

  scripts/case-study-table.py results/NAME/summary.csv COLUMN[:DECIMALS][=LABEL] ...
      [--where COLUMN=VALUE ...] [--windows A-B,C-D]   (timeseries.csv: means over windows)

DECIMALS defaults to 3; `%` after it shows the value times 100 with a % sign. A LABEL is
printed with the column in backticks. Key columns (the sweep point, strategy, t_s) print as
they stand.
"""
import csv, sys

args = sys.argv[1:]
source, specs, where, windows = args[0], [], [], None
i = 1
while i < len(args):
    if args[i] == "--where":
        where.append(args[i + 1].split("=", 1)); i += 2
    elif args[i] == "--windows":
        windows = [tuple(float(x) for x in w.split("-")) for w in args[i + 1].split(",")]; i += 2
    else:
        specs.append(args[i]); i += 1
rows = list(csv.DictReader(open(source)))
headers = list(rows[0].keys())
if source.endswith("summary.csv"):
    keys = headers[: headers.index("runs")]
else:
    keys = headers[: headers.index("strategy") + 1] + (["t_s"] if "t_s" in headers else ["run"])
rows = [r for r in rows if all(r[c] == v for c, v in where)]
parsed = []
for s in specs:
    label = None
    if "=" in s:
        s, label = s.split("=", 1)
    col, _, dec = s.partition(":")
    pct = dec.endswith("%")
    dec = int(dec.rstrip("%")) if dec.rstrip("%") else 3
    parsed.append((col, dec, pct, f"{label} (`{col}`)" if label else col))

def fmt(value, dec, pct):
    if value == "":
        return ""
    v = float(value) * (100 if pct else 1)
    return f"{v:.{dec}f}" + (" %" if pct else "")

out_rows = []
if windows:
    groups = {}
    for r in rows:
        k = tuple(r[c] for c in keys if c != "t_s")
        groups.setdefault(k, []).append(r)
    for k, rs in groups.items():
        for a, b in windows:
            w = [r for r in rs if a <= float(r["t_s"]) < b]
            if not w:  # no run lasted into this window: nothing to show, not a zero
                continue
            line = []
            for col, dec, pct, _ in parsed:
                if col == "t_s":
                    line.append(f"{a:g}-{b:g}")
                elif col in keys:
                    line.append(w[0][col])
                else:
                    line.append(fmt(str(sum(float(r[col]) for r in w) / len(w)), dec, pct))
            out_rows.append(line)
else:
    for r in rows:
        out_rows.append([r[col] if col in keys else fmt(r[col], dec, pct) for col, dec, pct, _ in parsed])
print(f"<!-- table from {source} -->")
print("| " + " | ".join(h for *_, h in parsed) + " |")
print("|" + "---|" * len(parsed))
for line in out_rows:
    print("| " + " | ".join(line) + " |")
