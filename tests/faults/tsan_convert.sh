#!/bin/sh
# ThreadSanitizer check of a multi-threaded conversion (issue 8): converts the
# bundled sample with 4 threads, then reads the output back with --verify
# (the verify engine streams row blocks on the pool too). Needs a build
# configured with -DQB_SANITIZE=thread. Fails on any TSan report.
# usage: tsan_convert.sh QUANTBRIDGE_BIN SAMPLE_DIR SCRATCH_DIR
set -u
bin=$1 sample=$2 scratch=$3
out="$scratch/tsan-out"
log="$scratch/tsan.log"
mkdir -p "$scratch"
rm -rf "$out"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" \
  "$bin" convert --threads 4 --verify --source "$sample" --output "$out" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] || grep -q "ThreadSanitizer" "$log"; then
  cat "$log"
  echo "tsan_convert: FAILED (exit $rc)" >&2
  exit 1
fi
grep "quantbridge: wrote" "$log"
echo "tsan_convert: no ThreadSanitizer report"
