#!/usr/bin/env bash
# Smoke test of the DeepSeek-V3 bench generator at a tiny size (real
# structure, small dimensions): the checkpoint must open with the fp8
# reader, list the tensor count this script derives from the
# DeepSeek-V3 layout itself, and convert.
# usage: smoke.sh GEN QUANTBRIDGE WORKDIR
set -euo pipefail
gen=$1 qb=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
layers=5 experts=4   # 3 dense layers (first_k_dense_replace) + 2 MoE layers
# 3 shards: the index and sharding are exercised at this size too
"$gen" --tiny --shard-mb 1 "$layers" "$experts" "$work/src" >"$work/gen.txt"
# Expected counts from the layout (README_WEIGHTS / the index), not from the generator:
#   per layer: 2 layer norms, q_a_layernorm, kv_a_layernorm + 5 attention linears;
#   dense layer: 3 MLP linears; MoE layer: router weight + bias, 3 linears per
#   routed expert and 3 for the shared expert; plus embed_tokens, norm, lm_head.
dense=$(( layers < 3 ? layers : 3 )) moe=$(( layers > 3 ? layers - 3 : 0 ))
linears=$(( layers * 5 + dense * 3 + moe * 3 * (experts + 1) ))
canonical=$(( 3 + layers * 4 + linears + moe * 2 ))
stored=$(( canonical + linears ))   # one weight_scale_inv per FP8 linear
read -r _ g_stored _ g_canon _ <"$work/gen.txt"
[ "$g_stored" = "$stored" ] && [ "$g_canon" = "$canonical" ] || {
  echo "generator says '$(cat "$work/gen.txt")', layout gives stored $stored canonical $canonical" >&2; exit 1; }
idx=$(grep -o '"model\.[^"]*":"model-[0-9]*-of-[0-9]*\.safetensors"\|"lm_head[^"]*":"[^"]*"' \
      "$work/src/model.safetensors.index.json" | wc -l)
[ "$idx" = "$stored" ] || { echo "index lists $idx tensors, expected $stored" >&2; exit 1; }
shards=$(ls "$work/src"/model-*-of-*.safetensors | wc -l)
[ "$shards" -ge 2 ] || { echo "expected several shards, got $shards" >&2; exit 1; }

"$qb" inspect "$work/src" --json >"$work/inspect.json"
python3 - "$work/inspect.json" "$canonical" "$layers" "$experts" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
want, layers, experts = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ts = j["tensors"]
names = {t["name"] for t in ts}
assert len(ts) == want, f"inspect lists {len(ts)} tensors, layout gives {want}"
assert not any(n.endswith("weight_scale_inv") for n in names), "scales must fold into their weights"
last = layers - 1
for n in ["model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "model.layers.2.mlp.down_proj.weight",
          f"model.layers.{last}.mlp.experts.{experts - 1}.up_proj.weight",
          f"model.layers.{last}.mlp.shared_experts.gate_proj.weight",
          f"model.layers.{last}.mlp.gate.e_score_correction_bias", "lm_head.weight"]:
    assert n in names, n
print("inspect ok:", len(ts), "tensors")
PY
"$qb" convert --source "$work/src" --output "$work/out" --writer hf-dense >"$work/convert.txt" 2>&1 \
  || { cat "$work/convert.txt" >&2; exit 1; }
echo "convert ok"

# Bounded memory: one MoE layer of 512 tiny experts (~80 MB of FP8 read
# through the file mapping). The reader must drop the mapped pages it has
# read, so the converter's peak RSS stays well under the source size
# (before that fix it was source-sized: bench/RESULTS.md).
rm -rf "$work/src" "$work/out"
"$gen" --tiny 4 512 "$work/src" >"$work/gen.txt"
read -r _ _ _ _ _ _ _ src_bytes <"$work/gen.txt"
python3 - "$qb" "$work/src" "$work/out" "$src_bytes" <<'PY'
import resource, subprocess, sys
qb, src, out, src_bytes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
subprocess.run([qb, "convert", "--source", src, "--output", out, "--writer", "hf-dense",
                "--progress", "none", "--threads", "2"], check=True, stdout=subprocess.DEVNULL)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux: KiB
print(f"peak RSS {peak / 1e6:.1f} MB for a {src_bytes / 1e6:.1f} MB source")
assert src_bytes > 60e6, src_bytes
assert peak < src_bytes / 2, f"peak RSS {peak} is not bounded (source {src_bytes} bytes)"
PY
