#!/usr/bin/env bash
# Packaging checks (tests/install/CMakeLists.txt says what and why). Installs
# the build tree into temporary prefixes: the whole, --component runtime and
# --component sdk, and compares each with what must be there, no more.
# Exit 0 = pass, 1 = fail.
set -euo pipefail
: "${QB_TEST_BUILD_DIR:?}" "${QB_TEST_SOURCE_DIR:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qb-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src="$QB_TEST_SOURCE_DIR"

install_to() { # prefix [component]
  local log
  log="$tmp/install-$(basename "$1").log"
  cmake --install "$QB_TEST_BUILD_DIR" --prefix "$1" ${2:+--component "$2"} >"$log" 2>&1 ||
    { cat "$log"; fail "cmake --install ${2:+--component $2 }--prefix $1"; }
}
# Files (and symlinks) under $1, relative, sorted, one per line.
tree_of() { (cd "$1" && find . \( -type f -o -type l \) | sed 's#^\./##' | LC_ALL=C sort); }
same_set() { # what expected-file actual-file
  if ! diff -u "$2" "$3" >"$tmp/diff"; then
    cat "$tmp/diff" >&2
    fail "$1 (- expected, + installed)"
  fi
}

# The ABI version, from the header that defines it.
abi_major=$(sed -n 's/^#define QB_ABI_MAJOR \([0-9][0-9]*\)$/\1/p' "$src/sdk/include/quantbridge/qb_abi.h")
abi_minor=$(sed -n 's/^#define QB_ABI_MINOR \([0-9][0-9]*\)$/\1/p' "$src/sdk/include/quantbridge/qb_abi.h")
[ -n "$abi_major" ] && [ -n "$abi_minor" ] || fail "no ABI version in qb_abi.h"

# ---- the whole install: the real plugins and their confs, nothing else there
full="$tmp/full"
install_to "$full"
pc=$(cd "$full" && find . -name quantbridge-sdk.pc | sed 's#^\./##')
[ -n "$pc" ] || fail "no quantbridge-sdk.pc in the full install"
libdir=$(dirname "$(dirname "$pc")")
[ -x "$full/bin/quantbridge" ] || fail "bin/quantbridge not installed"

: >"$tmp/want-plugins"
: >"$tmp/want-confs"
n=0
for d in "$src"/plugins/*/; do
  name=$(basename "$d")
  # a plugin folder has its conf; one without holds shared code (plugins/qlinear)
  [ -f "$d/CMakeLists.txt" ] && [ -f "$d/$name.conf" ] || continue
  n=$((n + 1))
  echo "libqb_${name//-/_}.so" >>"$tmp/want-plugins"
  echo "$name.conf" >>"$tmp/want-confs"
done
[ "$n" -gt 0 ] || fail "no plugin folder under $src/plugins"
LC_ALL=C sort -o "$tmp/want-plugins" "$tmp/want-plugins"
LC_ALL=C sort -o "$tmp/want-confs" "$tmp/want-confs"
tree_of "$full/$libdir/quantbridge/plugins" >"$tmp/got-plugins"
same_set "plugin directory holds exactly the plugins of plugins/*/" "$tmp/want-plugins" "$tmp/got-plugins"
tree_of "$full/etc/quantbridge/plugins.d" >"$tmp/got-confs"
same_set "plugins.d holds exactly the confs of plugins/*/" "$tmp/want-confs" "$tmp/got-confs"
if tree_of "$full" | grep -E '(^|/)libqb_(ut|fake)_' >"$tmp/stray"; then
  cat "$tmp/stray" >&2
  fail "test plugins installed"
fi
echo "full install: $n plugins, $(wc -l <"$tmp/want-confs") confs, no test plugin"

# ---- the SDK component: headers, pkg-config, CMake package and the reader
#      base library (sdk/base: its headers and C sources), the README, the
#      examples and a sample model; no host, plugin, registered conf, kernel
#      or any compiled file (it installs after a configure alone)
sdk="$tmp/sdk"
install_to "$sdk" sdk
{
  for h in "$src"/sdk/include/quantbridge/*.h; do echo "include/quantbridge/$(basename "$h")"; done
  for h in "$src"/sdk/base/include/quantbridge/base/*.h; do
    echo "include/quantbridge/base/$(basename "$h")"
  done
  for f in QuantbridgePlugin.cmake QuantbridgeSDKConfig.cmake QuantbridgeSDKConfigVersion.cmake \
           QuantbridgeSDKTargets.cmake qb_plugin.map; do
    echo "$libdir/cmake/QuantbridgeSDK/$f"
  done
  for f in "$src"/sdk/base/*.c "$src"/sdk/base/*.h; do
    echo "share/quantbridge-sdk/base/$(basename "$f")"
  done
  echo "$libdir/pkgconfig/quantbridge-sdk.pc"
  echo "$libdir/pkgconfig/quantbridge-base.pc"
  # a vendor's start (issue 30): the README, the examples, a sample model
  echo "share/quantbridge-sdk/README.md"
  (cd "$src/sdk" && find examples sample -type f) | sed 's#^#share/quantbridge-sdk/#'
} | LC_ALL=C sort >"$tmp/want-sdk"
tree_of "$sdk" >"$tmp/got-sdk"
same_set "--component sdk installs the SDK and nothing else" "$tmp/want-sdk" "$tmp/got-sdk"
# ... and needs nothing built: a tree only configured installs the same.
cfgonly="$tmp/configured"
cmake -S "$src" -B "$cfgonly" -DQB_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_LIBDIR="$libdir" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "configure of $src alone"; }
cmake --install "$cfgonly" --component sdk --prefix "$tmp/sdk-cfg" >"$tmp/install-cfg.log" 2>&1 ||
  { cat "$tmp/install-cfg.log"; fail "cmake --install --component sdk after a configure alone"; }
tree_of "$tmp/sdk-cfg" >"$tmp/got-sdk-cfg"
same_set "--component sdk after a configure alone" "$tmp/want-sdk" "$tmp/got-sdk-cfg"
rm -rf "$cfgonly" "$tmp/sdk-cfg"

# ---- the runtime component: everything but the SDK
rt="$tmp/runtime"
install_to "$rt" runtime
[ -x "$rt/bin/quantbridge" ] || fail "--component runtime: no bin/quantbridge"
tree_of "$rt/$libdir/quantbridge/plugins" >"$tmp/got-rt-plugins"
same_set "--component runtime: plugins" "$tmp/want-plugins" "$tmp/got-rt-plugins"
# The kernels' public header goes with the kernels library (it includes
# qb_abi.h, so using it needs the sdk component too).
[ -f "$rt/include/quantbridge/qb_w4a16.h" ] || fail "--component runtime: no kernels header qb_w4a16.h"
if tree_of "$rt" | grep -E '(pkgconfig/|cmake/QuantbridgeSDK/|include/quantbridge/(qb_abi|qb_plugin|quantbridge)\.h$)' >"$tmp/stray"; then
  cat "$tmp/stray" >&2
  fail "--component runtime holds SDK files"
fi
echo "components: sdk and runtime split as declared"

# ---- pkg-config: version and variables, relocatable (moved tree)
moved="$tmp/moved/sdk-elsewhere"
mkdir -p "$tmp/moved"
cp -a "$sdk" "$moved"
rm -rf "$sdk"
pcq() { PKG_CONFIG_PATH="$moved/$libdir/pkgconfig" PKG_CONFIG_LIBDIR="" pkg-config "$@" quantbridge-sdk; }
[ "$(pcq --modversion)" = "$abi_major.$abi_minor" ] || fail "pkg-config version $(pcq --modversion), want the ABI $abi_major.$abi_minor"
[ "$(pcq --variable=abi_major)" = "$abi_major" ] || fail "pkg-config abi_major"
[ "$(pcq --variable=abi_minor)" = "$abi_minor" ] || fail "pkg-config abi_minor"
canon() { realpath -m "$1"; }
[ "$(canon "$(pcq --variable=plugindir)")" = "$moved/$libdir/quantbridge/plugins" ] ||
  fail "pkg-config plugindir $(pcq --variable=plugindir) is not under the moved prefix"
[ "$(canon "$(pcq --variable=plugin_confdir)")" = "$moved/etc/quantbridge/plugins.d" ] ||
  fail "pkg-config plugin_confdir $(pcq --variable=plugin_confdir)"
vs=$(pcq --variable=version_script)
[ -f "$vs" ] && [ "$(canon "$vs")" = "$moved/$libdir/cmake/QuantbridgeSDK/qb_plugin.map" ] ||
  fail "pkg-config version_script $vs"
inc=$(pcq --cflags-only-I | sed 's/^-I//; s/ *$//')
[ -f "$inc/quantbridge/quantbridge.h" ] || fail "pkg-config --cflags does not reach the moved headers ($inc)"
echo "pkg-config: version $abi_major.$abi_minor, variables relocatable"

# ---- CMake package: version follows the ABI (SameMajorVersion), relocatable
configure() { # build-dir want mode
  cmake -S "$src/tests/install/pkg" -B "$1" -DCMAKE_PREFIX_PATH="$moved" -DWANT="$2" -DMODE="$3" \
        -DCMAKE_INSTALL_PREFIX="$tmp/vendor-prefix" >"$1.log" 2>&1
}
for want in "$abi_major" "$abi_major.$abi_minor" "$abi_major.0"; do
  configure "$tmp/ok-$want" "$want" default || { cat "$tmp/ok-$want.log"; fail "find_package(QuantbridgeSDK $want) failed"; }
done
grep -q "QB_FOUND_VERSION=$abi_major.$abi_minor\$" "$tmp/ok-$abi_major.log" || fail "package version is not the ABI"
for want in "$abi_major.$((abi_minor + 1))" "$((abi_major + 1))" "0.1"; do
  if configure "$tmp/bad-$want" "$want" default; then
    fail "find_package(QuantbridgeSDK $want) accepted a $abi_major.$abi_minor SDK"
  fi
done
log="$tmp/ok-$abi_major.log"
grep -q "QB_PLUGIN_DIR=$moved/$libdir/quantbridge/plugins\$" "$log" || { cat "$log"; fail "QUANTBRIDGE_PLUGIN_DIR"; }
grep -q "QB_PLUGIN_CONF_DIR=$moved/etc/quantbridge/plugins.d\$" "$log" || { cat "$log"; fail "QUANTBRIDGE_PLUGIN_CONF_DIR"; }
grep -q "QB_VERSION_SCRIPT=$moved/$libdir/cmake/QuantbridgeSDK/qb_plugin.map\$" "$log" || { cat "$log"; fail "QUANTBRIDGE_VERSION_SCRIPT"; }
echo "CMake package: version $abi_major.$abi_minor, SameMajorVersion, relocatable"

# ---- qb_add_plugin out of tree: where `cmake --install` puts the plugin
plugin_install() { # build-dir mode
  configure "$1" "$abi_major" "$2" || { cat "$1.log"; fail "configure ($2)"; }
  cmake --build "$1" >"$1.build.log" 2>&1 || { cat "$1.build.log"; fail "build ($2)"; }
  cmake --install "$1" >"$1.install.log" 2>&1 || { cat "$1.install.log"; fail "install ($2)"; }
}
plugin_install "$tmp/p-default" default
[ -f "$moved/$libdir/quantbridge/plugins/libqb_tiny.so" ] || fail "default: not installed into the SDK's plugin directory"
grep -q '^\[plugin:tiny\]' "$moved/etc/quantbridge/plugins.d/tiny.conf" || fail "default: CONF not installed into the SDK's plugins.d"
[ ! -e "$tmp/vendor-prefix" ] || fail "default: installed under CMAKE_INSTALL_PREFIX too"
plugin_install "$tmp/p-dest" destination
[ -f "$tmp/vendor-prefix/vendor/plugins/libqb_tiny.so" ] || fail "DESTINATION: library not there"
[ -f "$tmp/vendor-prefix/vendor/plugins/tiny.conf" ] || fail "DESTINATION: conf not beside the library"
rm -rf "$tmp/vendor-prefix" "${moved:?}/$libdir/quantbridge" "${moved:?}/etc"
plugin_install "$tmp/p-none" none
[ ! -e "$moved/$libdir/quantbridge" ] && [ ! -e "$moved/etc" ] && [ ! -e "$tmp/vendor-prefix" ] ||
  fail "NO_INSTALL installed something"
echo "qb_add_plugin: installs into the SDK's directories, a DESTINATION, or nowhere"
echo "install-layout: ok"
