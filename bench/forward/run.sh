#!/usr/bin/env bash
# Forward-pass benchmark (issue 16): not a test, it prints a table and JSON.
#   1. throughput: the forward pass's matrix products on a W4A16 model (the
#      "linears ... GB/s" line `quantbridge -v forward` logs: packed + scales
#      bytes / wall time in qb_w4a16_gemm_cpu calls) against the standalone
#      kernel's AVX2 GB/s at the same M (bench_w4a16_cpu, same thread count,
#      median over its shapes); target ratio >= 0.5;
#   2. memory: peak RSS of `forward` on the 2-layer and the full-size model of
#      the same shape (W4A16 and the bf16 source); target: flat. Two figures:
#      peak RSS (/usr/bin/time: includes the mapped W4A16 files' pages, page
#      cache the kernel may drop) and the pass's peak anonymous RSS (RssAnon
#      sampled after each layer: what it allocates).
#
# usage: bench/forward/run.sh [BUILD_DIR] [CACHE_DIR]
#   BUILD_DIR default build (bin/quantbridge, bin/bench_w4a16_cpu, bench/bin/qb-bench-gen)
#   CACHE_DIR default ${TMPDIR:-/tmp}/quantbridge-bench (shared with bench/convert: the
#             bf16 sources are the same files)
# env: QB_FWD_SHAPES="llama2-7b-2l llama2-7b" (full size: ~13.5 GB bf16 + ~3.9 GB W4A16),
#      QB_FWD_TOKENS=4 (M of the products; the kernel bench measures M = 1 and 4),
#      QB_FWD_THREADS (default nproc), QB_FWD_SOURCE=1 also times the dense bf16 source.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
cache=${2:-${TMPDIR:-/tmp}/quantbridge-bench}
qb="$build/bin/quantbridge"
gen="$build/bench/bin/qb-bench-gen"
kb="$build/bin/bench_w4a16_cpu"
for x in "$qb" "$gen" "$kb"; do [ -x "$x" ] || { echo "build first: $x" >&2; exit 1; }; done
shapes=${QB_FWD_SHAPES:-"llama2-7b-2l llama2-7b"}
ntok=${QB_FWD_TOKENS:-4}
threads=${QB_FWD_THREADS:-$(nproc)}
mkdir -p "$cache"
toks=$(seq -s, 1 "$ntok")

# The standalone kernel at the same thread count and M.
"$kb" --runs 5 --threads "$threads" --json "$cache/fwd-kernel.json" >/dev/null
kernel=$(python3 - "$cache/fwd-kernel.json" "$ntok" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); m = int(sys.argv[2])
v = sorted(r["avx2_GBps"] for r in d["results"] if r["M"] == m) if "results" in d else []
if not v:  # other layouts: every dict carrying avx2_GBps at M
    def walk(o):
        if isinstance(o, dict):
            if o.get("M") == m and "avx2_GBps" in o: yield o["avx2_GBps"]
            for x in o.values(): yield from walk(x)
        elif isinstance(o, list):
            for x in o: yield from walk(x)
    v = sorted(walk(d))
print(v[len(v) // 2] if v else 0)
PY
)

run_fwd() { # MODEL LABEL -> prints "seconds rss_MB anon_MB GBps"
  local log="$cache/fwd-$2.log"
  /usr/bin/time -f "TIME %e %M" "$qb" -v forward --model "$1" --tokens "$toks" \
    --output "$cache/fwd-$2.safetensors" --threads "$threads" >"$log" 2>&1
  local t rss gbps
  t=$(awk '/^TIME/{print $2}' "$log"); rss=$(awk '/^TIME/{printf "%.0f", $3/1024}' "$log")
  gbps=$(sed -n 's/.*scales, \([0-9.]*\) GB\/s.*/\1/p' "$log" | tail -1)
  anon=$(sed -n 's/.*peak anonymous RSS \([0-9.]*\) MB.*/\1/p' "$log" | tail -1)
  echo "$t $rss ${anon:-0} ${gbps:-0}"
}

printf '%-16s %-6s %8s %8s %8s %9s %9s %7s\n' shape model wall_s rss_MB anon_MB w4_GB/s kern_GB/s ratio
echo "[" >"$cache/fwd-results.json"; first=1
for shape in $shapes; do
  src="$cache/bf16-$shape"; w4="$cache/fwd-w4-$shape"
  if [ ! -f "$src/.complete" ]; then
    rm -rf "$src"; "$gen" bf16 "$shape" "$src" >"$src.weights" && touch "$src/.complete"
  fi
  if [ ! -f "$w4/manifest.json" ]; then
    rm -rf "$w4"; "$qb" convert --source "$src" --output "$w4" >/dev/null
  fi
  models="w4a16:$w4"; [ "${QB_FWD_SOURCE:-0}" = 1 ] && models="$models bf16:$src"
  for mm in $models; do
    label=${mm%%:*}; path=${mm#*:}
    read -r t rss anon gbps < <(run_fwd "$path" "$label-$shape")
    ratio=$(python3 -c "print('%.2f' % ($gbps / $kernel) if $kernel > 0 else 'n/a')")
    [ "$label" = w4a16 ] || ratio=-
    printf '%-16s %-6s %8s %8s %8s %9s %9s %7s\n' "$shape" "$label" "$t" "$rss" "$anon" "$gbps" "$kernel" "$ratio"
    [ $first = 1 ] || echo "," >>"$cache/fwd-results.json"; first=0
    printf '{"shape": "%s", "model": "%s", "tokens": %s, "threads": %s, "wall_s": %s, "peak_rss_MB": %s, "peak_anon_MB": %s, "w4_linears_GBps": %s, "kernel_GBps": %s}' \
      "$shape" "$label" "$ntok" "$threads" "$t" "$rss" "$anon" "$gbps" "$kernel" >>"$cache/fwd-results.json"
  done
done
echo "]" >>"$cache/fwd-results.json"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); JSON: $cache/fwd-results.json"
