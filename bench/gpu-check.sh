#!/usr/bin/env bash
# bench/gpu-check.sh — the one prepared GPU check of the W4A16 kernels.
#
# On a machine with an NVIDIA GPU, from any directory:
#   bench/gpu-check.sh            # results under $OUT if set, else build-gpu-check/out
# In order, each step with its own time limit inside one overall budget
# (GPU_CHECK_BUDGET_S, default 570 s, so the whole call fits in 10 minutes):
#   1. GPU present? (nvidia-smi -L, then a device the CUDA test can open);
#      without one it stops at once, saying so (exit 2);
#   2. configure and build only what the kernels and the forward pass need
#      (the program with the hf-dense and sm86-w4a16 plugins, the kernels
#      and forward tests, the benchmarks);
#   3. the kernels tests (ctest): CPU reference, loader, host-side checks,
#      the emulator, and the CUDA test on the full shape table, which must
#      PASS (a skip is a failure here);
#   4. the CUDA test on its reduced shape set (QBT_W4A16_CUDA_REDUCED=1,
#      CK_FORK=no) under compute-sanitizer memcheck (with leak check),
#      racecheck and initcheck: any reported error fails the step;
#   5. the forward pass on the GPU against the CPU and the float64
#      reference (ctest -L forward_cuda: test_forward_cuda, every
#      architecture; a skip is a failure here), with a table of its worst
#      error ratios per architecture in the summary;
#   6. the GPU benchmark (table + JSON), then a short CPU benchmark if time
#      is left.
# Writes under the results folder: the summary ($SUMMARY below, Markdown,
# to paste into bench/RESULTS.md: environment, every step's status and
# time, sanitizer error counts, the benchmark table), env.txt, a log per step, the
# benchmark outputs (bench_gpu.txt/.json, bench_cpu.txt/.json) and
# status.txt (one line per step). Exit status: 0 when every step passed,
# 1 when one failed, 2 when there is no GPU.
# GPU_CHECK_WITHOUT_GPU=1 runs the GPU-free steps anyway (to check this
# script on a machine without a GPU); the result is then never a pass.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu-check}
RESULTS=${OUT:-$BUILD/out}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUDGET=${GPU_CHECK_BUDGET_S:-570}
mkdir -p "$RESULTS" || exit 1
STATUS=$RESULTS/status.txt
SUMMARY=$RESULTS/summary.md
: > "$STATUS"
ROWS=()     # summary table rows
failed=0
T0=$SECONDS

# Seconds left in the budget, less `reserve` for what must still run.
left() { echo $((BUDGET - (SECONDS - T0) - ${1:-0})); }

row() { # row STEP RESULT SECONDS NOTE
    ROWS+=("| $1 | $2 | $3 | $4 |")
    echo "$1 $2 $3s $4" >> "$STATUS"
}

# step NAME LIMIT_S LOGFILE CMD...: runs CMD with its output in LOGFILE;
# the limit is cut to the budget left less RESERVE (kept for the GPU
# benchmark) and 20 s for the summary. Sets STEP_S (seconds) and STEP_RC
# (exit status; 124 or 137: the limit was hit).
RESERVE=0
step() {
    local name=$1 limit=$2 logf=$3 t0=$SECONDS rc budget
    shift 3
    STEP_S=0
    STEP_RC=124
    budget=$(left $((20 + RESERVE)))
    [ "$budget" -lt "$limit" ] && limit=$budget
    if [ "$limit" -lt 10 ]; then
        echo "== $name: not run, the ${BUDGET}s budget is spent" | tee "$logf"
        failed=1
        return 124
    fi
    echo "== $name (limit ${limit}s)"
    # a pipe (not a process substitution): tee has finished when the step
    # returns, so the log can be grepped right after
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logf"
    rc=${PIPESTATUS[0]}
    STEP_S=$((SECONDS - t0))
    STEP_RC=$rc
    echo "== $name: rc=$rc in ${STEP_S}s"
    [ "$rc" -eq 0 ] || failed=1
    return "$rc"
}

write_summary() {
    local gpu driver cuda_v
    gpu=$(nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader 2>/dev/null | head -1)
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
    cuda_v=$("$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -1)
    {
        echo "# W4A16 GPU check — $(date -u +%Y-%m-%d)"
        echo
        echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "- GPU: ${gpu:-none found}; driver ${driver:-?}; CUDA ${cuda_v:-?} (nvcc)"
        echo "- CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc 2>/dev/null) threads"
        echo "- total: $((SECONDS - T0)) s of a ${BUDGET} s budget; result: $([ "$failed" = 0 ] && echo PASS || echo FAIL)"
        echo
        echo "| step | result | s | notes |"
        echo "| --- | --- | --- | --- |"
        printf '%s\n' "${ROWS[@]}"
        if [ "$(wc -l < "$RESULTS/forward_table.md" 2> /dev/null || echo 0)" -gt 2 ]; then
            echo
            echo "Forward pass on the GPU (test_forward_cuda; worst |error| / (2^-11 * sum |W||x|) of"
            echo "the logits, bound kappa; docs/forward.md \"On a GPU\"):"
            echo
            cat "$RESULTS/forward_table.md"
        fi
        if [ -s "$RESULTS/bench_gpu.txt" ]; then
            echo
            echo "GPU benchmark (bench_w4a16_gpu --runs 50; bench/README.md protocol):"
            echo
            echo '```'
            cat "$RESULTS/bench_gpu.txt"
            echo '```'
        fi
        if [ -s "$RESULTS/bench_cpu.txt" ]; then
            echo
            echo "CPU benchmark (bench_w4a16_cpu --runs 3):"
            echo
            echo '```'
            cat "$RESULTS/bench_cpu.txt"
            echo '```'
        fi
    } > "$SUMMARY"
    echo "summary: $SUMMARY"
}

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

# ---- 1. a GPU, before spending anything on the build
if ! command -v nvidia-smi > /dev/null; then
    echo "nvidia-smi not installed (no NVIDIA driver)" > "$RESULTS/gpu.txt"
else
    nvidia-smi -L > "$RESULTS/gpu.txt" 2>&1
fi
if ! grep -q '^GPU ' "$RESULTS/gpu.txt"; then
    echo "no NVIDIA GPU found: $(head -1 "$RESULTS/gpu.txt")"
    if [ "${GPU_CHECK_WITHOUT_GPU:-0}" != 1 ]; then
        row gpu "no GPU" 0 "$(head -1 "$RESULTS/gpu.txt"): nothing built or run"
        failed=1
        write_summary
        exit 2
    fi
    row gpu "no GPU" 0 "GPU_CHECK_WITHOUT_GPU=1: GPU-free steps only"
    HAVE_GPU=0
    failed=1
else
    HAVE_GPU=1
    row gpu found 0 "$(head -1 "$RESULTS/gpu.txt")"
fi

{
    date -u +"date: %Y-%m-%dT%H:%M:%SZ"
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
    nvidia-smi 2>&1
    nvidia-smi -q -d CLOCK,POWER,ECC,PERFORMANCE 2>&1
    "$NVCC" --version 2>&1
    lscpu 2>/dev/null | head -20
} > "$RESULTS/env.txt" 2>&1

# ---- 2. configure and build (sm_86 + sm_90 (+ PTX), and this GPU's own
# architecture when it is neither: A100 8.0, Ada 8.9, Blackwell 10.0 ...)
ARCHS="86-real;90-real;90-virtual"
if [ "$HAVE_GPU" = 1 ]; then
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
    case "$cc" in
        '' | 86 | 90) ;;
        *) ARCHS="$ARCHS;${cc}-real" ;;
    esac
fi
LAUNCHER=()
if command -v ccache > /dev/null; then
    LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
        -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
if ! step configure 180 "$RESULTS/configure.log" \
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${LAUNCHER[@]}" \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DQB_W4A16_CUDA_ARCHS="$ARCHS" \
    "-DQB_ONLY_PLUGINS=hf-dense;sm86-w4a16" "-DQB_ONLY_TESTS=kernels;forward"; then
    row configure FAIL "$STEP_S" "see configure.log"
    write_summary
    exit 1
fi
row configure ok "$STEP_S" "archs $ARCHS"

# "CUDA kernels ON" is nvcc found; kernels/ also needs the toolkit's
# libraries and warns "QB_W4A16_NO_CUDA" otherwise.
CUDA_OK=0
if grep -q "CUDA kernels ON" "$RESULTS/configure.log" &&
    ! grep -q "QB_W4A16_NO_CUDA" "$RESULTS/configure.log"; then
    CUDA_OK=1
else
    echo "CUDA not enabled by the configure step (nvcc or the CUDA toolkit missing)"
    row cuda FAIL 0 "CUDA not enabled by configure (nvcc or toolkit missing)"
    failed=1
fi

TARGETS=(quantbridge-w4a16 test_w4a16_cpu test_w4a16_loader test_w4a16_cuda_plan bench_w4a16_cpu)
if [ "$CUDA_OK" = 1 ]; then
    TARGETS+=(quantbridge-w4a16-cuda test_w4a16_cuda bench_w4a16_gpu
        quantbridge qb_hf_dense qb_sm86_w4a16 test_forward_cuda)
fi
if ! step build 300 "$RESULTS/build.log" \
    cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}"; then
    row build FAIL "$STEP_S" "see build.log"
    write_summary
    exit 1
fi
row build ok "$STEP_S" "${#TARGETS[@]} targets"

# ---- 3. the kernels tests; ctest counts a skip as a pass, so with a GPU
# the CUDA test must really have run
# (test_w4a16_cuda forks one process, one CUDA context, per test case)
RESERVE=150 # the GPU benchmark's share, kept through tests and sanitizers
TESTS='^(test_w4a16_(cpu|loader|cuda_plan|cuda)|w4a16_emulate_mma)$'
if step tests 240 "$RESULTS/tests.log" \
    ctest --test-dir "$BUILD" -R "$TESTS" -j 4 --output-on-failure; then
    note=$(grep -E 'tests passed|tests failed' "$RESULTS/tests.log" | tail -1)
    res=ok
else
    note="see tests.log: $(grep -E 'tests passed|tests failed' "$RESULTS/tests.log" | tail -1)"
    res=FAIL
fi
if [ "$HAVE_GPU" = 1 ] && grep -Eq 'test_w4a16_cuda .*(Skipped|Not Run)' "$RESULTS/tests.log"; then
    note="test_w4a16_cuda was skipped although a GPU is present; $note"
    res=FAIL
    failed=1
fi
row tests "$res" "$STEP_S" "$note"

# ---- 4. compute-sanitizer on the reduced shape set
SAN=""
for c in "$(command -v compute-sanitizer 2> /dev/null)" "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
    "$(dirname "$NVCC")/compute-sanitizer" /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then
        SAN=$c
        break
    fi
done
CUDA_TEST=$BUILD/tests/bin/test_w4a16_cuda
if [ "$HAVE_GPU" = 0 ] || [ ! -x "$CUDA_TEST" ]; then
    row sanitizers "not run" 0 "no GPU or no test_w4a16_cuda"
elif [ -z "$SAN" ]; then
    row sanitizers FAIL 0 "compute-sanitizer not found (PATH, CUDA_HOME/bin, next to nvcc)"
    failed=1
else
    for tool in memcheck racecheck initcheck; do
        extra=()
        [ "$tool" = memcheck ] && extra=(--leak-check full)
        log=$RESULTS/sanitizer_$tool.log
        if step "$tool" 120 "$log" env CK_FORK=no QBT_W4A16_CUDA_REDUCED=1 \
            "$SAN" --tool "$tool" "${extra[@]}" --error-exitcode 99 "$CUDA_TEST"; then
            res=ok
        else
            res=FAIL
        fi
        # "ERROR SUMMARY: n errors" (memcheck, initcheck), "RACECHECK SUMMARY: ..."
        note=$(grep -Eo '(ERROR|RACECHECK) SUMMARY:.*' "$log" | tail -1)
        note="$note; $(grep -Eo '[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -1)"
        row "$tool" "$res" "$STEP_S" "exit $STEP_RC; reduced set, CK_FORK=no: $note"
    done
fi

# ---- 5. the forward pass on the GPU (issue 16): test_forward_cuda runs
# every architecture's W4A16 fixture with --device cuda and compares it with
# the CPU run and the float64 reference (docs/forward.md, "On a GPU")
FWD_TABLE=$RESULTS/forward_table.md
if [ "$CUDA_OK" = 1 ] && [ -x "$BUILD/tests/bin/test_forward_cuda" ]; then
    if step forward 180 "$RESULTS/forward.log" \
        ctest --test-dir "$BUILD" -L forward_cuda -V --no-tests=error; then
        res=ok
    else
        res=FAIL
    fi
    note="ctest -L forward_cuda: worst error / (u * mag) per architecture below"
    if grep -Eq 'test_forward_cuda .*(Skipped|Not Run)' "$RESULTS/forward.log"; then
        note="test_forward_cuda was skipped although this check needs it: $(grep -o 'no CUDA device.*' "$RESULTS/forward.log" | head -1)"
        res=FAIL
        failed=1
    fi
    # "<arch> w4a16[ cuda vs reference| cuda vs cpu]: max |logit| L, worst
    # error / (u * mag) = R (kappa K)" lines (ctest -V prefixes "N: ")
    awk '
        / w4a16.*: max \|logit\|.*worst error/ {
            l = $0; sub(/^[0-9]+: /, "", l)
            label = l; sub(/: max .*/, "", label); split(label, w, " "); a = w[1]
            v = l; sub(/.*= /, "", v); k = v; sub(/ .*/, "", v)
            sub(/.*kappa /, "", k); sub(/\).*/, "", k)
            kind = label ~ /vs reference$/ ? "gr" : label ~ /vs cpu$/ ? "gc" : "cr"
            val[a, kind] = v; kap[a] = k
            if (!(a in seen)) { seen[a] = 1; order[++na] = a }
        }
        END {
            print "| architecture | CPU vs reference | GPU vs reference | GPU vs CPU | kappa |"
            print "| --- | --- | --- | --- | --- |"
            for (i = 1; i <= na; i++) {
                a = order[i]
                printf "| %s | %s | %s | %s | %s |\n", a, val[a, "cr"], val[a, "gr"], val[a, "gc"], kap[a]
            }
        }' "$RESULTS/forward.log" > "$FWD_TABLE"
    row forward "$res" "$STEP_S" "$note"
else
    row forward "not run" 0 "no CUDA build or no test_forward_cuda"
    failed=1
fi

# ---- 6. benchmarks
RESERVE=0
if [ "$HAVE_GPU" = 1 ] && [ -x "$BUILD/bin/bench_w4a16_gpu" ]; then
    if step bench_gpu 300 "$RESULTS/bench_gpu.txt" \
        "$BUILD/bin/bench_w4a16_gpu" --runs 50 --json "$RESULTS/bench_gpu.json"; then
        row bench_gpu ok "$STEP_S" "table below; bench_gpu.json"
    else
        row bench_gpu FAIL "$STEP_S" "exit $STEP_RC (1: a correctness gate failed, 2: setup, 124: time); see bench_gpu.txt"
    fi
else
    row bench_gpu "not run" 0 "no GPU or no bench_w4a16_gpu"
fi
if [ "$(left)" -ge 60 ]; then
    if step bench_cpu 60 "$RESULTS/bench_cpu.txt" \
        "$BUILD/bin/bench_w4a16_cpu" --runs 3 --json "$RESULTS/bench_cpu.json"; then
        row bench_cpu ok "$STEP_S" "bench_cpu.json"
    else
        row bench_cpu FAIL "$STEP_S" "see bench_cpu.txt"
    fi
else
    row bench_cpu "not run" 0 "under 60 s of budget left"
fi

write_summary
echo "results in $RESULTS"
cat "$STATUS"
exit "$failed"
