#!/usr/bin/env bash
# Fidelity table (docs/fidelity.md): one command. Uses the interop tier's pinned venv
# (tests/interop/run.sh makes it under the build tree; QB_INTEROP_VENV points elsewhere).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${QB_BUILD_DIR:-$PWD/build}
venv=${QB_INTEROP_VENV:-$build/interop-venv}
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run tests/interop/run.sh first" >&2; exit 1; }
QB_BUILD_DIR=$build HF_HUB_OFFLINE=1 "$venv/bin/python" bench/fidelity/run.py
