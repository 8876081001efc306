#!/usr/bin/env bash
# Interop tier: checks quantbridge against the ecosystem's own reference code (gguf-py,
# llama.cpp through llama-cpp-python, transformers, tokenizers, compressed-tensors).
#
#   bash tests/interop/run.sh [PYTEST_ARGS...]      e.g. -k q4_k  or  tests/interop/test_x.py
#
# Environment:
#   QB_BUILD_DIR     CMake build tree (default <repo>/build); built here if bin/quantbridge is missing.
#   QB_INTEROP_VENV  an existing virtual environment to use as is (development); without it the
#                    pinned requirements.txt is installed into $QB_BUILD_DIR/interop-venv, reused while
#                    requirements.txt and the llama.cpp build flags are unchanged (a stamp holds their hash).
#
# The last line of output is always `N passed, N failed, N skipped`; the exit status is 0 only when
# at least one test passed and none failed or was skipped (docs/interop.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/pytier.sh
. "$here/../support/pytier.sh"
qb_tier_init
qb_tier_venv || exit 1
qb_tier_build
qb_tier_pytest interop "$here" "$@"
