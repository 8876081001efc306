#!/usr/bin/env bash
# The whole test suite: set up, then
#   1. a warnings-as-errors build (CUDA kernels too when nvcc exists) and every test;
#   2. an ASan+UBSan build (CUDA off) and every test again;
#   3. the interop tier against the ecosystem's reference code (tests/interop/run.sh, docs/interop.md);
#   4. the real-model tier: the whole product on a published checkpoint, judged by the same code
#      (tests/real/run.sh, docs/real-models.md; it reuses the interop tier's environment).
# Exit status is non-zero when any build or test fails; the real-model tier runs even when the
# interop tier failed, so one run reports both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build: -Werror =="
cmake -S . -B build -DQB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests: -Werror build =="
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== build: ASan + UBSan =="
cmake -S . -B build-asan -DQB_WERROR=ON -DQB_SANITIZE=address,undefined -DQB_ENABLE_CUDA=OFF \
      -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests: ASan + UBSan build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== interop tier: -Werror build against gguf-py, llama.cpp, transformers, compressed-tensors =="
rc=0
QB_BUILD_DIR="$PWD/build" bash tests/interop/run.sh || rc=1

echo "== real-model tier: Gemma 3 270M GGUF Q4_K_M and sources derived from it =="
QB_BUILD_DIR="$PWD/build" bash tests/real/run.sh || rc=1
exit $rc
