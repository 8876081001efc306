#!/usr/bin/env bash
# Requantization quality at the model's output (docs/fidelity.md, "Requantizing lossy sources"):
# one command. Needs the interop tier's venv (llama-cpp-python, numpy, safetensors) and the real
# tier's Gemma 3 270M Q4_K_M GGUF (QB_REAL_CACHE, docs/real-models.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${QB_BUILD_DIR:-$PWD/build}
venv=${QB_INTEROP_VENV:-$build/interop-venv}
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run tests/interop/run.sh first" >&2; exit 1; }
QB_BUILD_DIR=$build "$venv/bin/python" bench/quality/run.py
