#!/usr/bin/env bash
# The default quant rule against absmax at the model's output, over every source of the bench
# (docs/fidelity.md, "Default rule against absmax"): one command. Needs the interop tier's venv and
# the real tier's Gemma 3 270M Q4_K_M GGUF (QB_REAL_CACHE, docs/real-models.md).
# QB_RULES_SOURCES=real,derived,fixtures,generator selects (default all).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${QB_BUILD_DIR:-$PWD/build}
venv=${QB_INTEROP_VENV:-$build/interop-venv}
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run tests/interop/run.sh first" >&2; exit 1; }
QB_BUILD_DIR=$build HF_HUB_OFFLINE=1 nice -n 10 "$venv/bin/python" bench/quality/rules.py
