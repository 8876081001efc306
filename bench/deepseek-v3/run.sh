#!/usr/bin/env bash
# DeepSeek-V3 FP8 conversion benchmark (issue 18): peak RSS and throughput of
# `quantbridge convert` on 671B-shaped checkpoints of two sizes, generated
# here. The target is a ratio measured in one run: peak RSS of the largest
# case over the smallest (flat: <= 1.1). Not a test: it prints a table.
#
# usage: bench/deepseek-v3/run.sh [BUILD_DIR] [CACHE_DIR]
#   BUILD_DIR  default: build   (needs bin/quantbridge and bench/bin/qb-bench-gen-dsv3)
#   CACHE_DIR  default: ${TMPDIR:-/tmp}/quantbridge-dsv3  (never inside the repository)
# env: QB_DSV3_SIZES="LAYERS:EXPERTS ..." (default "4:8 8:16": 3 dense layers, then
#        MoE layers with that many routed experts + 1 shared; ~6 and ~10 GB of source)
#      QB_DSV3_WRITER  sm86-w4a16 | hf-dense (default: sm86-w4a16 when it accepts a
#        tiny deepseek_v3 checkpoint in a dry run, else hf-dense with dtype=bf16)
#      QB_DSV3_THREADS (default nproc); QB_DSV3_KEEP=1 keeps sources and outputs;
#      QB_DSV3_RSS_TRACE=1 also samples VmRSS every second (CACHE_DIR/rss-CASE.txt)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
cache=${2:-${TMPDIR:-/tmp}/quantbridge-dsv3}
qb="$build/bin/quantbridge"
gen="$build/bench/bin/qb-bench-gen-dsv3"
[ -x "$qb" ] && [ -x "$gen" ] || { echo "build first: $qb, $gen" >&2; exit 1; }
mkdir -p "$cache"
sizes=${QB_DSV3_SIZES:-"4:8 8:16"}
threads=${QB_DSV3_THREADS:-$(nproc)}

# Writer: W4A16 once its deepseek_v3 tables exist, else bf16 through hf-dense.
writer=${QB_DSV3_WRITER:-}
if [ -z "$writer" ]; then
  rm -rf "$cache/probe"
  "$gen" --tiny 4 2 "$cache/probe" >/dev/null
  if "$qb" convert --source "$cache/probe" --dry-run --progress none >/dev/null 2>&1; then
    writer=sm86-w4a16
  else
    writer=hf-dense
  fi
  rm -rf "$cache/probe"
fi
wopts=(--writer "$writer")
[ "$writer" = hf-dense ] && wopts+=(--option dtype=bf16)

results="$cache/results.txt"
: >"$results"
for sz in $sizes; do
  layers=${sz%%:*} experts=${sz#*:}
  name="L${layers}-E${experts}"
  src="$cache/src-$name" out="$cache/out-$name"
  rm -rf "$src" "$out"
  read -r _ stored _ canon _ weights _ bytes < <("$gen" --plan "$layers" "$experts" "$src")
  # Disk: source + output (bf16 is 2 bytes per weight; W4A16 less) + 2 GB margin
  need=$(( bytes + 2 * weights + 2000000000 ))
  avail=$(( $(df -B1 --output=avail "$cache" | tail -1) ))
  if [ "$avail" -lt "$need" ]; then
    echo "$name: needs ~$((need / 1000000000)) GB, $((avail / 1000000000)) GB free in $cache; skipped" >&2
    continue
  fi
  /usr/bin/time -f '%e %M' -o "$cache/gen-time.txt" "$gen" "$layers" "$experts" "$src" >/dev/null
  read -r gen_s gen_rss <"$cache/gen-time.txt"
  # Start from an empty page cache where allowed (root): the other case's
  # files must not decide whether this one reads from memory or disk.
  if [ -w /proc/sys/vm/drop_caches ]; then sync; echo 1 >/proc/sys/vm/drop_caches; fi
  load0=$(cut -d' ' -f1 /proc/loadavg)
  sampler=
  if [ -n "${QB_DSV3_RSS_TRACE:-}" ]; then
    : >"$cache/rss-$name.txt"
  fi
  /usr/bin/time -f '%e %U %S %M' -o "$cache/time.txt" \
    "$qb" convert --source "$src" --output "$out" --threads "$threads" --progress none "${wopts[@]}" \
    >"$cache/convert-$name.txt" 2>&1 &
  tpid=$!
  if [ -n "${QB_DSV3_RSS_TRACE:-}" ]; then
    ( t=0; while kill -0 "$tpid" 2>/dev/null; do
        p=$(pgrep -P "$tpid" -x quantbridge || true)
        [ -n "$p" ] && echo "$t $(awk '/^VmRSS|^RssAnon|^RssFile/{printf "%s ", $2}' /proc/"$p"/status 2>/dev/null)" \
          >>"$cache/rss-$name.txt"
        sleep 1; t=$((t + 1)); done ) &
    sampler=$!
  fi
  if ! wait "$tpid"; then
    echo "convert failed for $name:" >&2; tail -20 "$cache/convert-$name.txt" >&2; exit 1
  fi
  [ -z "$sampler" ] || wait "$sampler"
  read -r wall user sys rss <"$cache/time.txt"
  load1=$(cut -d' ' -f1 /proc/loadavg)
  out_bytes=$(du -sb "$out" | cut -f1)
  echo "$name $layers $experts $stored $canon $weights $bytes $out_bytes $gen_s $gen_rss $wall $user $sys $rss $load0 $load1" >>"$results"
  [ -n "${QB_DSV3_KEEP:-}" ] || rm -rf "$src" "$out"
done

echo
echo "DeepSeek-V3 FP8 (671B shapes) -> $writer$([ "$writer" = hf-dense ] && echo ' (bf16)'), $threads threads, $(date -u +%F)"
echo
echo "| case | layers | routed experts/layer | tensors (stored / read) | weights (G) | source GB | output GB | gen s (RSS MiB) | convert s | CPU s | source GB/s | tensors/s | Mw/s | peak RSS MiB | load |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
awk '{
  printf "| %s | %d | %d | %d / %d | %.2f | %.2f | %.2f | %.0f (%d) | %.1f | %.1f | %.3f | %.1f | %.0f | %d | %s-%s |\n",
    $1, $2, $3, $4, $5, $6 / 1e9, $7 / 1e9, $8 / 1e9, $9, $10 / 1024, $11, $12 + $13,
    $7 / 1e9 / $11, $5 / $11, $6 / 1e6 / $11, $14 / 1024, $15, $16 }' "$results"
if [ "$(wc -l <"$results")" -ge 2 ]; then
  awk 'NR == 1 { s = $14; sb = $7 } { b = $14; bb = $7 }
       END { printf "\npeak RSS ratio, largest / smallest case: %.3f (source %.2fx larger; target <= 1.1)\n", b / s, bb / sb }' "$results"
fi
