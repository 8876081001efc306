#!/usr/bin/env bash
# Real-model table (docs/real-models.md, "Benchmark"): one command. Uses the interop tier's
# pinned venv (tests/interop/run.sh makes it under the build tree; QB_INTEROP_VENV points
# elsewhere) and the real-model tier's checkpoint cache (QB_REAL_CACHE, default
# BUILD_DIR/real-cache: fetched there when missing). Derived sources and outputs go to WORK_DIR
# (default ${TMPDIR:-/tmp}/quantbridge-real-bench; 3.8 GB of sources, each output deleted once verified).
#
#   bench/real/run.sh [BUILD_DIR [WORK_DIR]]      prints the markdown table on stdout
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(cd "${1:-${QB_BUILD_DIR:-$PWD/build}}" && pwd)
[ -x "$build/bin/quantbridge" ] || { echo "no quantbridge in $build/bin: build first" >&2; exit 1; }
venv=${QB_INTEROP_VENV:-$build/interop-venv}
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run tests/interop/run.sh first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing (Debian package: time)" >&2; exit 1; }
QB_BUILD_DIR=$build HF_HUB_OFFLINE=1 "$venv/bin/python" bench/real/run.py \
    "${QB_REAL_CACHE:-$build/real-cache}" "${2:-${TMPDIR:-/tmp}/quantbridge-real-bench}"
