#!/usr/bin/env python3
"""docs/architecture.md's "Model families" table lists exactly the one architecture table
(sdk/base/qb_archs.c), row for row and in order: model_type, transformers class, forward, W4A16.
The table is read from the program itself (`quantbridge plugins --json`, "families"), not from
the C source.

usage: check_families.py SOURCE_DIR QUANTBRIDGE
"""
import json
import re
import subprocess
import sys

src, qb = sys.argv[1], sys.argv[2]
proc = subprocess.run([qb, "plugins", "--json"], capture_output=True, text=True)
if proc.returncode != 0:
    sys.exit(f"quantbridge plugins --json: exit {proc.returncode}\n{proc.stderr}")
fams = json.loads(proc.stdout)["families"]
want = [(f["model_type"], f["class"], "yes" if f["forward"] else "no",
         "yes" if f["w4a16"] else "no") for f in fams]
if not want:
    sys.exit("quantbridge plugins --json lists no families")

text = open(f"{src}/docs/architecture.md", encoding="utf-8").read()
sec = text.split("## Model families", 1)
if len(sec) != 2:
    sys.exit("docs/architecture.md: no \"## Model families\" section")
body = sec[1].split("\n## ", 1)[0]
row = re.compile(r"^\| `([a-z0-9_]+)` \| `([A-Za-z0-9_]+)` \| (yes|no) \| (yes|no) \|$")
got = [m.groups() for m in map(row.match, body.splitlines()) if m]
if got != want:
    missing = [w for w in want if w not in got]
    extra = [g for g in got if g not in want]
    sys.exit("docs/architecture.md \"Model families\" differs from qb_archs.c:\n"
             f"  missing or different: {missing}\n  not in the table: {extra}"
             + ("\n  (same rows, another order)" if not missing and not extra else ""))
print(f"docs/architecture.md lists the {len(want)} families of qb_archs.c")
