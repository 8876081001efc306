#!/usr/bin/env bash
# Conversion benchmark: speed and memory of `quantbridge convert` against the
# I/O floor measured in the same run. Not a test: it prints a table and JSON.
#
# usage: bench/convert/run.sh [BUILD_DIR] [CACHE_DIR]
#   BUILD_DIR  default: build            (needs bin/quantbridge and bench/bin/qb-bench-gen)
#   CACHE_DIR  default: ${TMPDIR:-/tmp}/quantbridge-bench   (never inside the repository)
# env: QB_BENCH_CASES="kind:shape ..." to choose cases; QB_BENCH_KEEP=1 keeps outputs;
#      QB_BENCH_VERIFY=all|2l|none: which outputs `quantbridge verify` checks against
#      their source after the timed runs (default 2l: the 2-layer cases, whose tensors
#      have the full-size shapes; a full-size verify reads everything again);
#      QB_BENCH_REPS=N runs each timed convert N times and keeps the fastest (default 1;
#      on a shared machine 2-3 filters out runs that lost the CPU to others).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
cache=${2:-${TMPDIR:-/tmp}/quantbridge-bench}
qb="$build/bin/quantbridge"
gen="$build/bench/bin/qb-bench-gen"
[ -x "$qb" ] && [ -x "$gen" ] || { echo "build first: $qb, $gen" >&2; exit 1; }
mkdir -p "$cache"
cases=${QB_BENCH_CASES:-"gptq-sym:llama2-7b-2l gptq-sym:llama2-7b gguf-q4_0:llama2-7b-2l gguf-q4_0:llama2-7b \
gptq-asym-act:llama2-7b-2l gptq-asym-act:llama2-7b awq-gemm:llama2-7b-2l awq-gemm:llama2-7b \
gguf-q4km:llama2-7b-2l gguf-q4km:llama2-7b bf16:qwen25-3b-2l bf16:qwen25-3b"}
nthreads=$(nproc)
json="$cache/results.json"
now() { date +%s.%N; }

verify_sel=${QB_BENCH_VERIFY:-2l}
printf '%-28s %8s %8s %8s %8s %8s %9s %8s %9s %8s %8s %6s %6s\n' case src_GB floor_s t1_s tN_s ratio Mw/s/core cpuMw/s t1/tN rss1_MB rssN_MB load verify
echo "[" >"$json"
first=1
for c in $cases; do
  kind=${c%%:*}; shape=${c#*:}
  src="$cache/$kind-$shape"
  if [ ! -f "$src/.complete" ]; then
    rm -rf "$src"
    "$gen" "$kind" "$shape" "$src" >"$src.weights" && touch "$src/.complete"
  fi
  weights=$(cat "$src.weights")
  srcarg=$src
  [ -f "$src/model.gguf" ] && srcarg=$src/model.gguf  # GGUF: the reader takes the file
  # Q4_0 repacks exactly only at its own group width (32); other kinds use the default 128
  gs_opt=""
  [ "$kind" = gguf-q4_0 ] && gs_opt="--group-size 32"
  src_bytes=$(du -sb --exclude=.complete "$src" | cut -f1)
  # The other cached sources fill the page cache (the full set is ~30 GB): each
  # write then reclaims first, and sys time swung 3-13 s between identical runs.
  # As root, start each case from an empty cache (then warm only this source).
  if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 1 >/proc/sys/vm/drop_caches; fi
  # I/O floor, same run: read the source from a warm page cache, then write the
  # output's byte count to the output filesystem with fsync (convert fsyncs too).
  cat "$src"/* >/dev/null
  t0=$(now); cat "$src"/* >/dev/null; t1=$(now)
  read_s=$(echo "$t1 - $t0" | bc -l)
  out="$cache/out-$kind-$shape"
  declare -A wall rss cpu
  for th in 1 "$nthreads"; do
    wall[$th]=
    for rep in $(seq 1 "${QB_BENCH_REPS:-1}"); do
      rm -rf "$out"
      /usr/bin/time -f '%e %U %S %M' -o "$cache/time.txt" \
        "$qb" convert --source "$srcarg" --output "$out" --threads "$th" $gs_opt >/dev/null 2>"$cache/convert.err" \
        || { echo "convert failed for $c:" >&2; cat "$cache/convert.err" >&2; exit 1; }
      read -r e u s m <"$cache/time.txt"
      if [ -z "${wall[$th]}" ] || [ "$(echo "$e < ${wall[$th]}" | bc -l)" = 1 ]; then
        wall[$th]=$e; cpu[$th]=$(echo "$u + $s" | bc -l); rss[$th]=$((m / 1024))
      fi
    done
  done
  out_bytes=$(du -sb "$out" | cut -f1)
  load=$(cut -d' ' -f1 /proc/loadavg)
  verified=skip
  if [ "$verify_sel" = all ] || { [ "$verify_sel" = 2l ] && [ "${shape%-2l}" != "$shape" ]; }; then
    if "$qb" verify --source "$srcarg" --converted "$out" >"$cache/verify.txt" 2>&1; then
      verified=ok
    else
      verified=FAIL; echo "verify failed for $c: see $cache/verify.txt" >&2
    fi
  fi
  # the fastest of QB_BENCH_REPS writes, as for convert: this virtual disk's
  # fsync'd write of the same bytes varied 0.7-3.0 s between two runs
  write_s=
  for rep in $(seq 1 "${QB_BENCH_REPS:-1}"); do
    t0=$(now)
    dd if=/dev/zero of="$cache/floor.bin" bs=4M count=$(( (out_bytes + 4194303) / 4194304 )) conv=fsync status=none
    t1=$(now); rm -f "$cache/floor.bin"
    w=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$write_s" ] || [ "$(echo "$w < $write_s" | bc -l)" = 1 ]; then write_s=$w; fi
  done
  floor=$(echo "$read_s + $write_s" | bc -l)
  best=${wall[$nthreads]}
  ratio=$(echo "$best / $floor" | bc -l)
  mwps=$(echo "$weights / ${wall[1]} / 1000000" | bc -l)
  speedup=$(echo "${wall[1]} / ${wall[$nthreads]}" | bc -l)
  cpumwps=$(echo "$weights / ${cpu[1]} / 1000000" | bc -l)
  printf '%-28s %8.2f %8.2f %8.2f %8.2f %8.2f %9.1f %8.1f %9.2f %8d %8d %6s %6s\n' "$kind:$shape" \
    "$(echo "$src_bytes/1000000000" | bc -l)" "$floor" "${wall[1]}" "$best" "$ratio" "$mwps" "$cpumwps" "$speedup" "${rss[1]}" "${rss[$nthreads]}" \
    "$load" "$verified"
  [ $first = 1 ] || echo "," >>"$json"; first=0
  printf '{"case":"%s","source_bytes":%s,"output_bytes":%s,"weights":%s,"read_floor_s":%.3f,"write_floor_s":%.3f,"wall_1t_s":%s,"cpu_1t_s":%.2f,"wall_%st_s":%s,"cpu_%st_s":%.2f,"peak_rss_1t_mb":%s,"peak_rss_%st_mb":%s,"convert_over_floor":%.3f,"mweights_per_s_1t":%.1f,"speedup_%st":%.2f,"cpu_mweights_per_s_1t":%.1f,"load1":%s,"verify":"%s"}' \
    "$kind:$shape" "$src_bytes" "$out_bytes" "$weights" "$read_s" "$write_s" "${wall[1]}" "${cpu[1]}" \
    "$nthreads" "${wall[$nthreads]}" "$nthreads" "${cpu[$nthreads]}" "${rss[1]}" "$nthreads" "${rss[$nthreads]}" \
    "$ratio" "$mwps" "$nthreads" "$speedup" "$cpumwps" "$load" "$verified" >>"$json"
  [ -n "${QB_BENCH_KEEP:-}" ] || rm -rf "$out"
done
echo "]" >>"$json"
echo "JSON: $json"
