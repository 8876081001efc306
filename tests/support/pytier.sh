# shellcheck shell=bash
# Shared by the Python test tiers (tests/interop/run.sh, tests/real/run.sh): the pinned virtual
# environment, the project build, and pytest with the tier convention (the last line is
# `N passed, N failed, N skipped`; success only when at least one test passed and none failed or
# was skipped). Sourced, not run; the caller has `set -euo pipefail`.
#
#   qb_tier_init                   sets repo, build (exports QB_BUILD_DIR), jobs
#   qb_tier_venv                   sets venv: $QB_INTEROP_VENV as is, else the pinned
#                                  tests/interop/requirements.txt in $build/interop-venv (made or
#                                  reused by its stamp); on failure prints the summary, returns 1
#   qb_tier_build                  builds $build when bin/quantbridge is missing
#   qb_tier_pytest NAME DIR ARGS   runs pytest on DIR, junit in $build/NAME-junit.xml, temporary
#                                  files in $build/NAME-tmp; prints the summary; returns its verdict

qb_tier_summary() { # passed failed skipped
    echo "$1 passed, $2 failed, $3 skipped"
}

qb_tier_init() {
    local here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    repo=$(cd "$here/../.." && pwd)
    build=${QB_BUILD_DIR:-$repo/build}
    mkdir -p "$build"
    build=$(cd "$build" && pwd)
    export QB_BUILD_DIR=$build
    jobs=$(nproc 2>/dev/null || echo 2)
}

qb_tier_venv() {
    local req=$repo/tests/interop/requirements.txt stamp want llama_cmake
    if [[ -n ${QB_INTEROP_VENV:-} ]]; then
        venv=$QB_INTEROP_VENV
        if [[ ! -x $venv/bin/python ]]; then
            echo "tier: QB_INTEROP_VENV=$venv has no bin/python" >&2
            qb_tier_summary 0 1 0
            return 1
        fi
        return 0
    fi
    venv=$build/interop-venv
    stamp=$venv/.qb-requirements.sha256
    # GGML_NATIVE=OFF with AVX2/FMA/F16C named: the oracle must not depend on the CPU that builds
    # it. A native build on a CPU that reports AMX compiles ggml's AMX matmul, which crashed with
    # SIGSEGV on Q8_0/Q4_0 (ggml_backend_amx_mul_mat) on the virtual machines here.
    llama_cmake="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    # The stamp covers what decides the environment: the pins and how llama.cpp is compiled.
    want=$( { cat "$req"; echo "$llama_cmake"; } | sha256sum | cut -d' ' -f1)
    if [[ ! -x $venv/bin/python || "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
        echo "== tier: creating $venv from tests/interop/requirements.txt =="
        rm -rf "$venv"
        python3 -m venv "$venv"
        # llama-cpp-python is compiled from its sdist (vendored llama.cpp, CPU backend): use every
        # core, and skip its multimodal library (LLAVA_BUILD, tools/mtmd: about 30% of the
        # objects), which no test loads (llama_cpp imports mtmd_cpp only on demand); the GGML
        # flags above.
        # llama-cpp-python first and without pip's cache: pip keys a wheel it built by the sdist
        # alone, not by CMAKE_ARGS, so a cached build with other flags would come back silently.
        if ! CMAKE_BUILD_PARALLEL_LEVEL=$jobs CMAKE_ARGS="${CMAKE_ARGS:-} $llama_cmake" \
                "$venv/bin/python" -m pip install --no-cache-dir --no-binary llama-cpp-python \
                --disable-pip-version-check --no-input -c "$req" llama-cpp-python ||
           ! "$venv/bin/python" -m pip install \
                --disable-pip-version-check --no-input -r "$req"; then
            echo "tier: pip could not install tests/interop/requirements.txt (its error is above)" >&2
            rm -rf "$venv"   # a half-built environment must not be reused
            qb_tier_summary 0 1 0
            return 1
        fi
        echo "$want" >"$stamp"
    fi
}

qb_tier_build() {
    if [[ ! -x $build/bin/quantbridge ]]; then
        echo "== tier: building the project in $build =="
        cmake -S "$repo" -B "$build" -DQB_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
        cmake --build "$build" -j"$jobs"
    fi
}

qb_tier_pytest() {
    local name=$1 dir=$2 junit rc counts passed failed skipped
    shift 2
    junit=$build/$name-junit.xml
    rm -f "$junit"
    set +e
    "$venv/bin/python" -m pytest "$dir" -p no:cacheprovider -rfEs \
        --basetemp="$build/$name-tmp" --junitxml="$junit" "$@"
    rc=$?
    set -e
    # pytest's own exit status is not enough: "no tests collected" and skips must fail too.
    counts=$("$venv/bin/python" - "$junit" <<'PY' || true
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
PY
)
    if [[ -z $counts ]]; then
        echo "tier: pytest wrote no junit report (exit $rc)" >&2
        qb_tier_summary 0 1 0
        return 1
    fi
    read -r passed failed skipped <<<"$counts"
    # An interrupted or crashed session (rc 2-4) can leave a report that shows no failure.
    if [[ $rc -ne 0 && $failed -eq 0 ]]; then
        failed=1
    fi
    qb_tier_summary "$passed" "$failed" "$skipped"
    [[ $failed -eq 0 && $skipped -eq 0 && $passed -gt 0 ]]
}
