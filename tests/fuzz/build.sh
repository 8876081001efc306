#!/usr/bin/env bash
# Builds quantbridge's libFuzzer targets with clang, independent of the main
# (gcc) build, and optionally runs each for a short bounded time.
#
#   tests/fuzz/build.sh [--smoke SECONDS] [OUTDIR]
#
# OUTDIR defaults to build-fuzzers/ in the repository root. Exit 77 (CTest
# SKIP_RETURN_CODE) when clang or its fuzzer runtime is missing; 1 when a
# target fails to build or a smoke run finds a crash; 0 otherwise.
# Targets: see TARGETS below and README.md (how to run them long).
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

# QB_FUZZ_RECOVER=1: UBSan reports and goes on (long exploratory runs past a
# known, reported bug); the default stops at the first report, as CI wants.
if [ "${QB_FUZZ_RECOVER:-0}" = 1 ]; then
  recover=-fsanitize-recover=undefined
else
  recover=-fno-sanitize-recover=undefined
fi
CFLAGS=(-std=gnu11 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
        "$recover" -Wall -Wextra -Werror -Wno-unused-function
        -D_GNU_SOURCE -I"$root/sdk/include" -I"$here")
# clang before 15 rejects __builtin_cpu_supports("f16c") (ggml_dequant_plain.c
# uses it for the F16C row path): there, ask for "avx" instead. The fuzz
# build only; the F16C and plain paths give the same bits (plugins/gguf/tests/dequant).
printf 'int main(void){return __builtin_cpu_supports("f16c");}\n' > "$out/f16c.c"
if ! "$CC" -c "$out/f16c.c" -o "$out/f16c.o" 2>/dev/null; then
  CFLAGS+=('-D__builtin_cpu_supports(x)=__builtin_cpu_supports("avx")')
fi
PKG_CFLAGS=$(pkg-config --cflags glib-2.0 libcjson)
PKG_LIBS=$(pkg-config --libs glib-2.0 libcjson)
ST="$root/sdk/kit"
# The whole internal kit (sdk/kit/CMakeLists.txt also takes every .c file).
KIT_SRC=("$ST"/*.c)
HOST_SRC=("$here/fuzz_host.c" "${KIT_SRC[@]}")
G="$root/plugins/gguf"
GG="$G/ggml"
GGML_SRC=("$GG/ggml_type_table.c" "$GG/ggml_dequant.c" "$GG/ggml_dequant_plain.c"
          "$GG/ggml_dequant_legacy.c" "$GG/ggml_dequant_kquants.c" "$GG/ggml_dequant_ternary.c"
          "$GG/ggml_dequant_nl4.c" "$GG/ggml_dequant_iquants.c" "$GG/ggml_iq_grids.c")
GGUF_SRC=("$G/container.c" "$G/kv.c" "$G/split.c" "$G/arch.c" "$G/names.c" "$G/hfconfig.c" "$G/reader.c")
Q="$root/plugins/gptq"
A="$root/plugins/awq"
CT="$root/plugins/compressed-tensors"
F="$root/plugins/fp8"
TARGETS="safetensors gguf ggml gptq_config awq_config ct_config fp8_config host_config"

build() { # name, then sources and flags
  local name=$1
  shift
  echo "fuzz: building fuzz_$name"
  # shellcheck disable=SC2086
  if ! "$CC" "${CFLAGS[@]}" $PKG_CFLAGS "$@" -o "$out/fuzz_$name" $PKG_LIBS -lm -ldl -lpthread \
      >"$out/fuzz_$name.log" 2>&1; then
    cat "$out/fuzz_$name.log"
    return 1
  fi
}

fail=0
build safetensors -I"$ST" "$here/fuzz_safetensors.c" "${HOST_SRC[@]}" || fail=1
build gguf -I"$ST" -I"$G" -I"$GG" -ffp-contract=off "$here/fuzz_gguf.c" "${HOST_SRC[@]}" \
  "${GGUF_SRC[@]}" "${GGML_SRC[@]}" || fail=1
build ggml -I"$GG" -ffp-contract=off "$here/fuzz_ggml.c" "${GGML_SRC[@]}" || fail=1
build gptq_config -I"$ST" -I"$Q" "$here/fuzz_gptq_config.c" "${HOST_SRC[@]}" "$Q/gptq_config.c" || fail=1
build awq_config -I"$ST" -I"$Q" -I"$A" "$here/fuzz_awq_config.c" "${HOST_SRC[@]}" \
  "$A/awq_layout.c" || fail=1
build ct_config -I"$ST" -I"$CT" "$here/fuzz_ct_config.c" "${HOST_SRC[@]}" "$CT/ct_config.c" \
  "$CT/ct_match.c" || fail=1
build fp8_config -I"$ST" -I"$F" "$here/fuzz_fp8_config.c" "${HOST_SRC[@]}" || fail=1
# host/config.c with error.c and alloc.c; fuzz_host_stubs.c stands in for
# the three services.c functions it calls (services.c drags in the rest of
# the host).
build host_config -I"$root/host" -I"$ST" -DQBH_SYSCONFDIR='"/etc"' "$here/fuzz_host_config.c" \
  "$here/fuzz_host_stubs.c" "$here/fuzz_host.c" "${KIT_SRC[@]}" "$root/host/config.c" "$root/host/error.c" \
  "$root/host/alloc.c" || fail=1
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
