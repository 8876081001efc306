#!/usr/bin/env bash
# Format x architecture table (docs/fidelity.md, "New formats (issue 18)"): one command.
# Builds the program, the readers/writers and the fixture generators it needs in an already
# configured build tree (default ./build), then runs bench/formats/run.py (standard-library
# python3 only). Prints the markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${QB_BUILD_DIR:-$PWD/build}}
[ -f "$build/CMakeCache.txt" ] || { echo "no configured build tree at $build" >&2; exit 1; }
cmake --build "$build" -j"${QB_JOBS:-2}" --target quantbridge qb_hf_dense qb_compressed_tensors \
  qb_modelopt qb_mxfp4 qb_fp8 qb_gguf qb_sm86_w4a16 qb-gen-fp4 qb-gen-mxfp4 qb-gen-fp8 \
  qb-gen-hf-dense qb-gen-gguf >&2
QB_BUILD_DIR=$build python3 bench/formats/run.py
