#!/bin/sh
# Measures the requantization rules of the sm86-w4a16 writer (absmax,
# search, auto) on generated checkpoints: mean / max rel_rmse per tensor
# kind, from each conversion's manifest.json. Not a test (no assertions):
# the numbers go into reports.
#   usage: plugins/sm86-w4a16/tests/measure_rules.sh BUILD_DIR [GROUP_SIZE...]
set -eu
build=${1:?usage: measure_rules.sh BUILD_DIR [GROUP_SIZE...]}
shift
[ $# -gt 0 ] || set -- 128
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in llama mistral qwen2 qwen3 gemma2; do
  "$build/tests/bin/qb-gen-hf-dense" --out "$tmp/src-$arch" --arch "$arch" --dtype bf16 \
    --layers 2 --hidden 512 --intermediate 1376 --vocab 1024 --tied 0 --seed 7
done
for gs in "$@"; do
  for rule in absmax search auto; do
    for arch in llama mistral qwen2 qwen3 gemma2; do
      "$build/bin/quantbridge" convert --source "$tmp/src-$arch" --output "$tmp/out-$gs-$rule-$arch" \
        --group-size "$gs" --option "quant_rule=$rule" >/dev/null
    done
  done
done
python3 - "$tmp" "$@" <<'PY'
import json, sys, glob, collections
tmp, gss = sys.argv[1], sys.argv[2:]
for gs in gss:
    print(f"group_size {gs}: rel_rmse mean / max over 5 architectures x 2 layers (bf16 sources)")
    print(f"{'kind':<10}" + "".join(f"{r:>22}" for r in ("absmax", "search", "auto")))
    rows = collections.OrderedDict()
    for rule in ("absmax", "search", "auto"):
        for m in sorted(glob.glob(f"{tmp}/out-{gs}-{rule}-*/manifest.json")):
            for k, v in json.load(open(m))["tensors"].items():
                kind = k.split(":")[1].split(".")[-1]
                rows.setdefault(kind, {}).setdefault(rule, []).append(v["rel_rmse"])
    allr = {}
    for kind, d in rows.items():
        cells = []
        for rule in ("absmax", "search", "auto"):
            x = d[rule]; allr.setdefault(rule, []).extend(x)
            cells.append(f"{sum(x)/len(x):.4f} / {max(x):.4f}")
        print(f"{kind:<10}" + "".join(f"{c:>22}" for c in cells))
    print(f"{'all':<10}" + "".join(f"{sum(allr[r])/len(allr[r]):.4f} / {max(allr[r]):.4f}".rjust(22) for r in ("absmax","search","auto")))
PY
