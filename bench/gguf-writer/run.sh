#!/usr/bin/env bash
# gguf writer against llama.cpp's quantizer, side by side (described in bench/README.md).
#   bench/gguf-writer/run.sh [BUILD_DIR]
# Needs a python with gguf-py and llama-cpp-python (QB_INTEROP_VENV, e.g. the interop tier's venv).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${QB_BUILD_DIR:-$PWD/build}}
venv=${QB_INTEROP_VENV:?set QB_INTEROP_VENV to a virtual environment with gguf-py and llama-cpp-python}
cmake --build "$build" -j"${QB_JOBS:-2}" --target quantbridge qb_gguf >&2
QB_BUILD_DIR=$build "$venv/bin/python" bench/gguf-writer/run.py "${@:2}"
