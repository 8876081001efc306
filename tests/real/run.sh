#!/usr/bin/env bash
# Real-model tier: the whole product on published checkpoints (docs/real-models.md), judged by the
# ecosystem's own code (llama.cpp, transformers, gguf-py, compressed-tensors) on real text.
#
#   bash tests/real/run.sh [PYTEST_ARGS...]
#
# Environment: as tests/interop/run.sh (QB_BUILD_DIR, QB_INTEROP_VENV); the tier shares the interop
# tier's pinned environment. The checkpoints are downloaded once into $QB_BUILD_DIR/real-cache
# (tests/real/models.txt pins them by version and sha256).
#
# The last line of output is always `N passed, N failed, N skipped`; the exit status is 0 only when
# at least one test passed and none failed or was skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../support/pytier.sh
. "$here/../support/pytier.sh"
qb_tier_init
qb_tier_venv || exit 1
qb_tier_build
export QB_REAL_CACHE=${QB_REAL_CACHE:-$build/real-cache}
if ! "$venv/bin/python" "$here/fetch_models.py" "$QB_REAL_CACHE"; then
    qb_tier_summary 0 1 0
    exit 1
fi
qb_tier_pytest real "$here" "$@"
