#!/usr/bin/env bash
# Packages the build tree with CPack and checks what the packages hold and
# that it works where it lands (issue 17 point 8):
#   - TGZ: host, every plugin of plugins/*/ and its conf, the config, the
#     kernels library, SDK headers, a man page per command, bash and zsh
#     completion; unpacked, the host loads every plugin (`plugins --check`);
#   - DEB (when dpkg-deb exists): quantbridge (runtime, under /usr) and
#     quantbridge-dev (the SDK), each holding its part and nothing of the other;
#   - every man page renders (man -l, else groff) with its NAME section and
#     no roff warning;
#   - the bash completion offers `convert` and, after --format, the reader
#     names the unpacked host lists in `plugins --json`; zsh's parses (zsh -n)
#     when zsh is installed.
#
#   test_package.sh BUILD_DIR WORK_DIR
set -u
build=$1
work=$2
src=$(cd "$(dirname "$0")/.." && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
# The packaged host must not see this machine's user or environment config.
export HOME=$work/home
mkdir -p "$HOME"
unset QUANTBRIDGE_CONFIG QUANTBRIDGE_PLUGIN_PATH

commands=$("$build/bin/quantbridge" --help | awk '/^commands:/ {on = 1; next} on && /^$/ {exit}
  on && /^  [a-z]/ {print $1}' | grep -vx help)
[ -n "$commands" ] || fail "no commands in quantbridge --help"
plugins=""
for d in "$src"/plugins/*/; do
  # a plugin folder has its conf; one without holds shared code (plugins/qlinear)
  [ -f "$d/CMakeLists.txt" ] && [ -f "$d/$(basename "$d").conf" ] && plugins="$plugins $(basename "$d")"
done

# ---- TGZ ----
if ! cpack --config "$build/CPackConfig.cmake" -G TGZ -B "$work/tgz" >"$work/cpack-tgz.log" 2>&1; then
  cat "$work/cpack-tgz.log"
  fail "cpack -G TGZ failed"
fi
tgz=$(ls "$work"/tgz/*.tar.gz 2>/dev/null | head -1)
[ -f "$tgz" ] || { fail "no .tar.gz made"; echo "$fails failure(s)"; exit 1; }
tar tzf "$tgz" | sed 's#^[^/]*/##' | LC_ALL=C sort >"$work/tgz.list"
want=(bin/quantbridge etc/quantbridge/quantbridge.conf lib/libquantbridge-w4a16.so
      include/quantbridge/qb_reader.h include/quantbridge/qb_w4a16.h
      share/man/man1/quantbridge.1 share/bash-completion/completions/quantbridge
      share/zsh/site-functions/_quantbridge)
for c in $commands; do want+=("share/man/man1/quantbridge-$c.1"); done
for p in $plugins; do
  want+=("lib/quantbridge/plugins/libqb_${p//-/_}.so" "etc/quantbridge/plugins.d/$p.conf")
done
for f in "${want[@]}"; do
  grep -qx "$f" "$work/tgz.list" || fail "TGZ lacks $f"
done
mkdir -p "$work/tgz-root"
tar xzf "$tgz" -C "$work/tgz-root" --strip-components=1
root=$work/tgz-root
out=$("$root/bin/quantbridge" plugins --check 2>&1) || fail "unpacked TGZ: plugins --check: $out"

# ---- DEB ----
if command -v dpkg-deb >/dev/null; then
  if ! cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/deb" >"$work/cpack-deb.log" 2>&1; then
    cat "$work/cpack-deb.log"
    fail "cpack -G DEB failed"
  fi
  rt=$(ls "$work"/deb/quantbridge_*.deb 2>/dev/null | head -1)
  dev=$(ls "$work"/deb/quantbridge-dev_*.deb 2>/dev/null | head -1)
  [ -f "$rt" ] || fail "no quantbridge_*.deb"
  [ -f "$dev" ] || fail "no quantbridge-dev_*.deb"
  if [ -f "$rt" ] && [ -f "$dev" ]; then
    [ "$(dpkg-deb -f "$rt" Package)" = quantbridge ] || fail "runtime package name"
    [ "$(dpkg-deb -f "$dev" Package)" = quantbridge-dev ] || fail "SDK package name"
    dpkg-deb -c "$rt" | awk '{print $6}' | sed 's#^\./##' | LC_ALL=C sort >"$work/rt.list"
    dpkg-deb -c "$dev" | awk '{print $6}' | sed 's#^\./##' | LC_ALL=C sort >"$work/dev.list"
    for f in "${want[@]}"; do
      case $f in
        include/quantbridge/qb_reader.h) grep -qx "usr/$f" "$work/dev.list" || fail "quantbridge-dev lacks usr/$f"
                                         grep -qx "usr/$f" "$work/rt.list" && fail "quantbridge holds usr/$f" ;;
        *) grep -qx "usr/$f" "$work/rt.list" || fail "quantbridge lacks usr/$f" ;;
      esac
    done
    grep -q 'usr/.*/quantbridge-sdk.pc$' "$work/dev.list" || fail "quantbridge-dev lacks quantbridge-sdk.pc"
    grep -q 'bin/quantbridge$' "$work/dev.list" && fail "quantbridge-dev holds the host"
    mkdir -p "$work/deb-root"
    dpkg-deb -x "$rt" "$work/deb-root"
    out=$("$work/deb-root/usr/bin/quantbridge" plugins --check 2>&1) || fail "extracted DEB: plugins --check: $out"
  fi
else
  echo "test_package: dpkg-deb not installed; DEB not checked"
fi

# ---- man pages render ----
for page in "$root"/share/man/man1/*.1; do
  name=$(basename "$page" .1)
  if command -v man >/dev/null; then
    text=$(MANWIDTH=100 man -l "$page" 2>"$work/man.err")
  elif command -v groff >/dev/null; then
    text=$(groff -man -Tutf8 "$page" 2>"$work/man.err")
  else
    echo "test_package: neither man nor groff; man pages not rendered"
    break
  fi
  [ -s "$work/man.err" ] && fail "$name: render warnings: $(cat "$work/man.err")"
  grep -q '^NAME' <<<"$text" || fail "$name: no NAME section"
  grep -q "^ *$name - " <<<"$text" || fail "$name: NAME line does not name $name"
  if command -v groff >/dev/null; then
    groff -ww -z -man "$page" 2>"$work/groff.err"
    [ -s "$work/groff.err" ] && fail "$name: groff warnings: $(cat "$work/groff.err")"
  fi
done
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$root/share/man/man1/quantbridge-inspect.1" | grep -q -- '--raw' ||
    fail "quantbridge-inspect(1) lacks --raw (from inspect --help)"
fi

# ---- completion ----
readers=$("$root/bin/quantbridge" plugins --json | python3 -c '
import json, sys
print(" ".join(sorted(p["name"] for p in json.load(sys.stdin)["plugins"] if p.get("kind") in ("reader", "both"))))')
got=$(bash -c '
  source "$1/share/bash-completion/completions/quantbridge"
  COMP_WORDS=("$1/bin/quantbridge" con); COMP_CWORD=1; _quantbridge; echo "${COMPREPLY[*]}"
  COMP_WORDS=("$1/bin/quantbridge" convert --format ""); COMP_CWORD=3; _quantbridge
  printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort | tr "\n" " "
' _ "$root")
first=$(head -1 <<<"$got")
formats=$(tail -1 <<<"$got" | sed 's/ $//')
[ "$first" = convert ] || fail "bash completion of 'con': '$first' (want convert)"
want_formats=$(printf "%s\n" auto $readers | LC_ALL=C sort | tr "\n" " " | sed 's/ $//')
[ "$formats" = "$want_formats" ] || fail "bash completion after --format: '$formats' (want '$want_formats')"
z=$root/share/zsh/site-functions/_quantbridge
head -1 "$z" | grep -qx '#compdef quantbridge' || fail "zsh completion lacks #compdef"
grep -q "'convert:" "$z" || fail "zsh completion does not offer convert"
if command -v zsh >/dev/null; then
  zsh -n "$z" || fail "zsh completion does not parse"
fi

if [ $fails -ne 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "test_package: all checks passed"
