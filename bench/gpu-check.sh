#!/usr/bin/env bash
# bench/gpu-check.sh — the one prepared GPU check of the W4A16 kernels.
#
# On a machine with an NVIDIA GPU, from any directory:
#   bench/gpu-check.sh            # results under $OUT if set, else build-gpu-check/out
# It configures and builds only what the kernels need (no plugins, only the
# kernels tests), runs the kernel tests (the CUDA test must PASS, a skip is
# a failure here), then the GPU benchmark (table + JSON) and a short CPU
# benchmark. Every step has its own timeout; the whole run is meant to fit
# in 10 minutes (build ~1-3 min, tests < 1 min, GPU benchmark ~1-4 min).
#
# Files written to the results folder:
#   env.txt            nvidia-smi, clocks, power, ECC, nvcc, CPU
#   build.log, tests.log
#   bench_gpu.txt/.json  the table (us, GB/s, % of measured read bandwidth,
#                        speedup over cuBLAS FP16) and its JSON
#   bench_cpu.txt/.json  qb_w4a16_gemm_cpu plain vs AVX2
#   status.txt         one line per step: name, exit status
# Exit status: 0 when every step passed, else 1.
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu-check}
RESULTS=${OUT:-$BUILD/out}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
mkdir -p "$RESULTS"
STATUS=$RESULTS/status.txt
: > "$STATUS"
failed=0

step() { # step NAME TIMEOUT_S LOGFILE CMD...
    local name=$1 limit=$2 logf=$3
    shift 3
    local t0=$SECONDS rc
    echo "== $name (limit ${limit}s)"
    # a pipe (not a process substitution): tee has finished when the step
    # returns, so the log can be grepped right after
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logf"
    rc=${PIPESTATUS[0]}
    echo "$name rc=$rc $((SECONDS - t0))s" >> "$STATUS"
    echo "== $name: rc=$rc in $((SECONDS - t0))s"
    [ "$rc" -eq 0 ] || failed=1
    return "$rc"
}

{
    date -u +"date: %Y-%m-%dT%H:%M:%SZ"
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
    nvidia-smi 2>&1
    nvidia-smi -q -d CLOCK,POWER,ECC,PERFORMANCE 2>&1
    command -v nvcc >/dev/null && nvcc --version
    [ -x /usr/local/cuda/bin/nvcc ] && /usr/local/cuda/bin/nvcc --version
    lscpu 2>/dev/null | head -20
} > "$RESULTS/env.txt" 2>&1

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU visible (nvidia-smi -L failed): build and CPU parts only" | tee -a "$STATUS"
    HAVE_GPU=0
else
    HAVE_GPU=1
fi

# The kernels are built for sm_86 + sm_90 (+ PTX); add this GPU's own
# architecture when it is neither (e.g. A100 8.0, Ada 8.9).
ARCHS="86-real;90-real;90-virtual"
if [ "$HAVE_GPU" = 1 ]; then
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
    case "$cc" in
        ''|86|90) ;;
        *) ARCHS="$ARCHS;${cc}-real" ;;
    esac
fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

step configure 180 "$RESULTS/configure.log" \
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DQB_W4A16_CUDA_ARCHS="$ARCHS" \
    -DQB_ONLY_PLUGINS=none -DQB_ONLY_TESTS=kernels || { echo "configure failed"; exit 1; }

# "CUDA kernels ON" is nvcc found; kernels/ also needs the toolkit's
# libraries and warns "QB_W4A16_NO_CUDA" otherwise.
CUDA_OK=0
if grep -q "CUDA kernels ON" "$RESULTS/configure.log" &&
    ! grep -q "QB_W4A16_NO_CUDA" "$RESULTS/configure.log"; then
    CUDA_OK=1
else
    echo "CUDA not enabled by the configure step (nvcc or the CUDA toolkit missing)" | tee -a "$STATUS"
    failed=1
fi

TARGETS=(quantbridge-w4a16 test_w4a16_cpu test_w4a16_loader test_w4a16_e2e bench_w4a16_cpu)
if [ "$CUDA_OK" = 1 ]; then
    TARGETS+=(quantbridge-w4a16-cuda test_w4a16_cuda bench_w4a16_gpu)
fi
step build 360 "$RESULTS/build.log" \
    cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" || { echo "build failed"; exit 1; }

# ctest counts a skip as a pass: with a GPU the CUDA test must really run.
step tests 180 "$RESULTS/tests.log" \
    ctest --test-dir "$BUILD" -R '^test_w4a16_' --output-on-failure
if [ "$HAVE_GPU" = 1 ] && grep -q "test_w4a16_cuda .*Skipped\|test_w4a16_cuda .*Not Run" "$RESULTS/tests.log"; then
    echo "test_w4a16_cuda was skipped although a GPU is present" | tee -a "$STATUS"
    failed=1
fi

if [ "$HAVE_GPU" = 1 ] && [ -x "$BUILD/bin/bench_w4a16_gpu" ]; then
    step bench_gpu 300 "$RESULTS/bench_gpu.txt" \
        "$BUILD/bin/bench_w4a16_gpu" --runs 50 --json "$RESULTS/bench_gpu.json"
fi
step bench_cpu 90 "$RESULTS/bench_cpu.txt" \
    "$BUILD/bin/bench_w4a16_cpu" --runs 3 --json "$RESULTS/bench_cpu.json"

echo "results in $RESULTS"
cat "$STATUS"
exit "$failed"
