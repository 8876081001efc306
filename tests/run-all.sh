#!/usr/bin/env bash
# The whole test suite: set up, then
#   1. a warnings-as-errors build (CUDA kernels too when nvcc exists) and every test;
#   2. an ASan+UBSan build (CUDA off) and every test again;
#   3. the interop tier against the ecosystem's reference code (tests/interop/run.sh, docs/interop.md).
# Exit status is non-zero when any build or test fails.
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
QB_BUILD_DIR="$PWD/build" bash tests/interop/run.sh
