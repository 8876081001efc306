#!/usr/bin/env python3
"""The host's structure (docs/architecture.md, "Where code lives") as checks:

  - each folder of host/ includes only its own headers and the public
    header of a library it builds on (the tree below), never another
    folder's private header: no include cycle can form;
  - the model library and the tokenizer see the SDK only (no qbh.h, no
    kit header): what a writer sees of a model;
  - no library links a kernel library but the commands (host/cli), and
    no C source outside host/cli names the kernels' W4A16 API;
  - no generic folder names the native format ("sm86") outside comments
    and string literals (help texts, the default writer choice);
  - host/'s own top-level files stay under 8000 lines.

usage: check_layout.py SOURCE_DIR
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
HOST = os.path.join(ROOT, "host")

# folder -> (its public header, the folders it builds on)
TREE = {
    "": ("qbh.h", []),
    "tokenizer": ("tokenizer.h", []),
    "model": ("model.h", []),
    "pipeline": ("pipeline.h", [""]),
    "verify": ("verify.h", ["", "pipeline", "model", "tokenizer"]),
    "check": ("plugin_check.h", ["", "pipeline", "verify"]),
    "cli": ("cli.h", ["", "pipeline", "tokenizer", "model", "verify", "check"]),
}
SDK_ONLY = {"model", "tokenizer"}
failures = []


def fail(msg):
    failures.append(msg)


def files(folder, exts):
    d = os.path.join(HOST, folder)
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if os.path.isfile(os.path.join(d, f)) and f.endswith(exts))


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


headers = {f: {os.path.basename(p) for p in files(f, (".h",))} for f in TREE}
owner = {}
for f, hs in headers.items():
    for h in hs:
        if h in owner:
            fail("header %s is in host/%s and host/%s" % (h, owner[h] or ".", f or "."))
        owner[h] = f

for folder, (public, base) in TREE.items():
    for path in files(folder, (".c", ".h")):
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()
        for inc in re.findall(r'#include\s+"([^"]+)"', text):
            if inc.startswith("qbk_"):
                if folder in SDK_ONLY:
                    fail("%s: includes the kit's %s (the SDK only here)" % (rel, inc))
                continue
            if inc not in owner:
                continue  # a header of another tree (kernels, the SDK's)
            src = owner[inc]
            if src == folder:
                continue
            if src not in base:
                fail("%s: includes %s of host/%s, which host/%s does not build on"
                     % (rel, inc, src or ".", folder or "."))
            elif inc != TREE[src][0]:
                fail("%s: includes %s, a private header of host/%s" % (rel, inc, src or "."))
        code = strip_comments_and_strings(text)
        if folder != "cli" and re.search(r"\bqb_w4a16_\w+|qb_w4a16\.h|qb_w4a16_cuda\.h", code):
            fail("%s: names the kernels' W4A16 API (only host/cli wires it in)" % rel)
        if "sm86" in code:
            fail("%s: names the native format outside comments and strings" % rel)

# Kernel libraries linked: only by host/cli.
for folder in TREE:
    cm = os.path.join(HOST, folder, "CMakeLists.txt")
    text = re.sub(r"#[^\n]*", "", open(cm, encoding="utf-8").read())
    if folder != "cli" and re.search(r"quantbridge-w4a16", text):
        fail("host/%s/CMakeLists.txt links a kernel library" % (folder or "."))

n = sum(sum(1 for _ in open(p, encoding="utf-8")) for p in files("", (".c", ".h")))
if n >= 8000:
    fail("host/'s own top-level files hold %d lines (under 8000 wanted)" % n)

for m in failures:
    print("FAIL: " + m)
if failures:
    sys.exit(1)
print("host layout: %d folders, host/ top level %d lines: all checks passed" % (len(TREE), n))
