#!/usr/bin/env bash
# Runs the golden error corpus (cases.txt, built by make_bad.py) through
# `quantbridge inspect` and `quantbridge convert`.
#
#   run_bad.sh QUANTBRIDGE CORPUS_DIR [CASE...]
#
# CORPUS_DIR holds manifest.txt and one folder per case (make_bad.py). With
# no CASE every case runs. For each case and each command it asserts:
#   - exit status 1 (not 0, not a usage error, not a signal, not a timeout);
#   - stderr has exactly one line starting "quantbridge: error:", and that
#     line contains the case's name (file, tensor or directory) and its word
#     (case-insensitive);
#   - no sanitizer report on stderr;
#   - convert leaves no output directory and no ".<out>.qbtmp*" beside it;
#   - address space limited to 2 GiB (prlimit / ulimit -v), unless the
#     binary is built with ASan (it reserves terabytes of shadow memory).
#   - each command finishes within 60 s (the fixtures are tiny: a hang is a
#     bug); SIGKILL 10 s after the SIGTERM, as the tool's SIGTERM handling is
#     cooperative and does not stop a parser stuck in a library call.
# A case with a "known bug" column still fails here; its note is printed.
# Exit 0 when every case passed, 1 otherwise.
set -u
qb=$1
corpus=$2
shift 2
manifest=$corpus/manifest.txt
[ -f "$manifest" ] || { echo "run_bad: no $manifest (run make_bad.py first)"; exit 1; }
limit_kb=$((2 * 1024 * 1024))
asan=0
if ldd "$qb" 2>/dev/null | grep -q libasan || nm -D "$qb" 2>/dev/null | grep -q __asan_init; then
  asan=1
fi

run_limited() { # out_file err_file args...
  local o=$1 e=$2
  shift 2
  if [ $asan = 1 ]; then
    timeout -k 10 60 "$qb" "$@" >"$o" 2>"$e"
  else
    (ulimit -v $limit_kb && exec timeout -k 10 60 "$qb" "$@") >"$o" 2>"$e"
  fi
}

pass=0
fail=0
failed=()
check() { # case path name word bug cmd...
  local c=$1 path=$2 name=$3 word=$4 bug=$5 what=$6
  shift 6
  local dir=$corpus/$c err=$corpus/$c/$what.err out=$corpus/$c/$what.out rc n line why=""
  rm -rf "$dir/out" "$dir"/.out.qbtmp*
  run_limited "$out" "$err" "$@"
  rc=$?
  n=$(grep -c '^quantbridge: error:' "$err")
  line=$(grep -m1 '^quantbridge: error:' "$err")
  if [ $rc -ne 1 ]; then
    why="exit status $rc (want 1)"
  elif [ "$n" -ne 1 ]; then
    why="$n 'quantbridge: error:' lines (want 1)"
  elif [[ "$line" != *"$name"* ]]; then
    why="error line does not name '$name'"
  elif ! grep -qiF -- "$word" <<<"$line"; then
    why="error line lacks '$word'"
  fi
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$err"; then
    why="${why:+$why; }sanitizer report"
  fi
  if [ -e "$dir/out" ]; then
    why="${why:+$why; }output directory left"
  fi
  if compgen -G "$dir/.out.qbtmp*" >/dev/null; then
    why="${why:+$why; }temporary directory left"
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
    return
  fi
  fail=$((fail + 1))
  failed+=("$c/$what")
  echo "FAIL $c ($what): $why"
  [ -n "$bug" ] && echo "     known bug: $bug"
  echo "     stderr:" && sed -n '1,6p' "$err" | sed 's/^/       /'
}

while IFS='|' read -r c path name word bug; do
  [ -n "$c" ] || continue
  if [ $# -gt 0 ]; then
    want=0
    for x in "$@"; do [ "$x" = "$c" ] && want=1; done
    [ $want = 1 ] || continue
  fi
  src=$corpus/$c/$path
  check "$c" "$path" "$name" "$word" "$bug" inspect inspect "$src"
  check "$c" "$path" "$name" "$word" "$bug" convert convert --source "$src" --output "$corpus/$c/out"
done <"$manifest"

echo "run_bad: $pass passed, $fail failed (asan=$asan)"
[ $fail -eq 0 ]
