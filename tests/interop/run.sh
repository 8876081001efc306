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
repo=$(cd "$here/../.." && pwd)
build=${QB_BUILD_DIR:-$repo/build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
export QB_BUILD_DIR=$build
req=$here/requirements.txt
jobs=$(nproc 2>/dev/null || echo 2)

summary() { # passed failed skipped
    echo "$1 passed, $2 failed, $3 skipped"
}

# --- the virtual environment ---------------------------------------------------------------
if [[ -n ${QB_INTEROP_VENV:-} ]]; then
    venv=$QB_INTEROP_VENV
    if [[ ! -x $venv/bin/python ]]; then
        echo "run.sh: QB_INTEROP_VENV=$venv has no bin/python" >&2
        summary 0 1 0
        exit 1
    fi
else
    venv=$build/interop-venv
    stamp=$venv/.qb-requirements.sha256
    llama_cmake="-DLLAVA_BUILD=OFF"
    # The stamp covers what decides the environment: the pins and how llama.cpp is compiled.
    want=$( { cat "$req"; echo "$llama_cmake"; } | sha256sum | cut -d' ' -f1)
    if [[ ! -x $venv/bin/python || "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
        echo "== interop: creating $venv from tests/interop/requirements.txt =="
        rm -rf "$venv"
        python3 -m venv "$venv"
        # llama-cpp-python is compiled from its sdist (vendored llama.cpp, CPU backend): use every
        # core, and skip its multimodal library (LLAVA_BUILD, tools/mtmd: about 30% of the
        # objects), which no interop test loads (llama_cpp imports mtmd_cpp only on demand).
        if ! CMAKE_BUILD_PARALLEL_LEVEL=$jobs CMAKE_ARGS="${CMAKE_ARGS:-} $llama_cmake" \
                "$venv/bin/python" -m pip install \
                --disable-pip-version-check --no-input -r "$req"; then
            echo "run.sh: pip could not install tests/interop/requirements.txt (its error is above)" >&2
            rm -rf "$venv"   # a half-built environment must not be reused
            summary 0 1 0
            exit 1
        fi
        echo "$want" >"$stamp"
    fi
fi

# --- the project ---------------------------------------------------------------------------
if [[ ! -x $build/bin/quantbridge ]]; then
    echo "== interop: building the project in $build =="
    cmake -S "$repo" -B "$build" -DQB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j"$jobs"
fi

# --- the tests -----------------------------------------------------------------------------
junit=$build/interop-junit.xml
rm -f "$junit"
set +e
"$venv/bin/python" -m pytest "$here" -p no:cacheprovider -rfEs \
    --basetemp="$build/interop-tmp" --junitxml="$junit" "$@"
rc=$?
set -e

# pytest's own exit status is not enough: "no tests collected" and skips must fail too.
counts=$("$venv/bin/python" - "$junit" <<'EOF' || true
import sys
import xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    sys.exit(1)
suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
t = f = s = 0
for su in suites:
    t += int(su.get("tests", 0))
    f += int(su.get("failures", 0)) + int(su.get("errors", 0))
    s += int(su.get("skipped", 0))
print(t - f - s, f, s)
EOF
)
if [[ -z $counts ]]; then
    echo "run.sh: pytest wrote no junit report (exit $rc)" >&2
    summary 0 1 0
    exit 1
fi
read -r passed failed skipped <<<"$counts"
# An interrupted or crashed session (rc 2-4) can leave a report that shows no failure.
if [[ $rc -ne 0 && $failed -eq 0 ]]; then
    failed=1
fi
summary "$passed" "$failed" "$skipped"
[[ $failed -eq 0 && $skipped -eq 0 && $passed -gt 0 ]]
