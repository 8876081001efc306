#!/usr/bin/env bash
# The main job on the bundled sample: set up, build, convert the tiny BF16
# llama checkpoint the build generates into W4A16, print where it went and
# the per-tensor error summary (convert --verify re-reads the output through
# its reader and compares every tensor with the source).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null
out="$PWD/out/tiny-llama-w4a16"
mkdir -p out
build/bin/quantbridge convert --source build/sample/tiny-llama-bf16 --output "$out" \
  --group-size 128 --overwrite --verify
echo
echo "quantbridge demo: W4A16 checkpoint written to $out"
ls -l "$out"
