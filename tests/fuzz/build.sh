#!/usr/bin/env bash
# Builds quantbridge's libFuzzer targets with clang, in a CMake build of its
# own apart from the main (gcc) build, and optionally runs each for a short
# bounded time.
#
#   tests/fuzz/build.sh [--smoke SECONDS] [OUTDIR]
#
# OUTDIR defaults to build-fuzzers/ in the repository root; the targets are
# built by CMake in OUTDIR/cmake (tests/fuzz/CMakeLists.txt) and land in
# OUTDIR. Exit 77 (CTest SKIP_RETURN_CODE) when clang or its fuzzer runtime
# (or cmake, GLib, cJSON) is missing; 1 when a target fails to build or a
# smoke run finds a crash; 0 otherwise. Targets: see TARGETS below and
# README.md (how to run them long). QB_FUZZ_CC: the clang to use;
# QB_FUZZ_JOBS: build parallelism.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
smoke=0
if [ "${1:-}" = "--smoke" ]; then
  smoke=$2
  shift 2
fi
out=${1:-$root/build-fuzzers}
CC=${QB_FUZZ_CC:-}
if [ -z "$CC" ]; then
  for c in clang clang-18 clang-17 clang-16 clang-15 clang-14; do
    if command -v "$c" >/dev/null 2>&1; then CC=$c; break; fi
  done
fi
if [ -z "$CC" ]; then
  echo "fuzz: no clang found: SKIPPED"
  exit 77
fi
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd) # absolute: CMake is given it as QB_FUZZ_OUTPUT_DIR
# The fuzzer runtime ships separately on Debian (libclang-rt-NN-dev): probe it.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){(void)d;(void)n;return 0;}\n' \
  > "$out/probe.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
  echo "fuzz: $CC has no libFuzzer runtime (see $out/probe.log): SKIPPED"
  exit 77
fi
for p in glib-2.0 libcjson; do
  if ! pkg-config --exists "$p"; then
    echo "fuzz: pkg-config cannot find $p: SKIPPED"
    exit 77
  fi
done

if ! command -v cmake >/dev/null 2>&1; then
  echo "fuzz: no cmake found: SKIPPED"
  exit 77
fi

# The targets are defined in tests/fuzz/CMakeLists.txt and link the plugins'
# core libraries: a configuration of this source tree of its own (clang,
# QB_FUZZ=ON, no test suite), so each plugin's source list is written once,
# in plugins/<name>/CMakeLists.txt. -O1 -g with asserts, as fuzzing wants.
# QB_FUZZ_RECOVER=1: UBSan reports and goes on (long exploratory runs past a
# known, reported bug); the default stops at the first report, as CI wants.
bdir="$out/cmake"
cfg=(-S "$root" -B "$bdir" -DCMAKE_C_COMPILER="$CC" -DQB_FUZZ=ON -DQB_BUILD_TESTS=OFF
     -DQB_ENABLE_CUDA=OFF -DQB_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1"
     -DQB_FUZZ_OUTPUT_DIR="$out" -DQB_FUZZ_RECOVER="$([ "${QB_FUZZ_RECOVER:-0}" = 1 ] && echo ON || echo OFF)")
if command -v ccache >/dev/null 2>&1; then
  cfg+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
TARGETS="safetensors gguf ggml gptq_config awq_config ct_config fp8_config host_config
  mxfp4_config modelopt_config w4a16_manifest tokenizer_json gguf_tokenizer"

fail=0
echo "fuzz: configuring $bdir with $CC"
if ! cmake "${cfg[@]}" >"$out/configure.log" 2>&1; then
  cat "$out/configure.log"
  echo "fuzz: configure FAILED"
  exit 1
fi
echo "fuzz: building the fuzz_* targets"
if ! cmake --build "$bdir" --target qb_fuzz_targets -j "${QB_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}" \
    >"$out/build.log" 2>&1; then
  tail -60 "$out/build.log"
  fail=1
fi
[ $fail = 0 ] || { echo "fuzz: build FAILED"; exit 1; }
[ "$smoke" != 0 ] || exit 0

# Smoke run: each target from its committed seeds, in a scratch copy of the
# corpus (new inputs never land in the source tree), bounded in time.
for t in $TARGETS; do
  seeds="$here/corpus/$t"
  work="$out/run-$t"
  rm -rf "$work" && mkdir -p "$work" "$out/crash-$t"
  [ -d "$seeds" ] && cp "$seeds"/* "$work"/ 2>/dev/null
  dict=()
  [ -f "$here/dict/$t.dict" ] && dict=(-dict="$here/dict/$t.dict")
  echo "fuzz: smoke fuzz_$t for ${smoke}s"
  if ! "$out/fuzz_$t" "${dict[@]}" -max_total_time="$smoke" -rss_limit_mb=2048 -timeout=10 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/crash-$t/" "$work" \
      >"$out/smoke-$t.log" 2>&1; then
    tail -40 "$out/smoke-$t.log"
    echo "fuzz: fuzz_$t FAILED (artifacts in $out/crash-$t/)"
    fail=1
  else
    grep -E '^#[0-9]+.*DONE|stat::number_of_executed_units' "$out/smoke-$t.log" | tail -2
  fi
done
[ $fail = 0 ] && echo "fuzz: smoke passed" || echo "fuzz: smoke FAILED"
exit $fail
