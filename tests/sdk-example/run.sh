#!/usr/bin/env bash
# Out-of-tree SDK test: install quantbridge (SDK included) to a temporary
# prefix, build the example third-party reader against the INSTALLED SDK twice
# (find_package and pkg-config), check it exports only the entry point,
# register it through a config file and convert a model with it.
# Exit 0 = pass, 1 = fail, 77 = skipped (no compiler for the out-of-tree build).
set -euo pipefail
: "${QB_TEST_BUILD_DIR:?}" "${QB_TEST_SOURCE_DIR:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qb-sdk-example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix="$tmp/prefix"
cmake --install "$QB_TEST_BUILD_DIR" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "install"; }
[ -f "$prefix/include/quantbridge/quantbridge.h" ] || fail "headers not installed"
[ -f "$prefix/lib/pkgconfig/quantbridge-sdk.pc" ] || [ -f "$prefix/lib64/pkgconfig/quantbridge-sdk.pc" ] || fail "pkg-config file not installed"
libdir="$prefix/lib"
[ -d "$libdir/pkgconfig" ] || libdir="$prefix/lib64"

# 1. CMake package.
cmake -S "$QB_TEST_SOURCE_DIR/sdk/examples/npy-reader" -B "$tmp/b-cmake" \
      -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$tmp/cfg.log" 2>&1 || { cat "$tmp/cfg.log"; fail "find_package configure"; }
cmake --build "$tmp/b-cmake" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "find_package build"; }
so_cmake=$(find "$tmp/b-cmake" -name 'libqb_npy.so' | head -n1)
[ -n "$so_cmake" ] || fail "CMake build produced no libqb_npy.so"

# 2. pkg-config only.
cp -r "$QB_TEST_SOURCE_DIR/sdk/examples/npy-reader" "$tmp/src-pc"
PKG_CONFIG_PATH="$libdir/pkgconfig" make -C "$tmp/src-pc" >"$tmp/make.log" 2>&1 || { cat "$tmp/make.log"; fail "pkg-config build"; }
so_pc="$tmp/src-pc/libqb_npy.so"

# Only the entry point may be exported.
for so in "$so_cmake" "$so_pc"; do
  exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
  [ "$exported" = "qb_plugin_entry_v1 " ] || fail "$so exports: $exported"
done

# 3. Register through a config dir: a quantbridge.conf with npy.conf in the
#    plugins.d beside it. The built-ins register from the installation
#    whatever config is named; no copy of their conf files is needed.
conf="$tmp/conf"
mkdir -p "$conf/plugins.d"
cp "$prefix/etc/quantbridge/quantbridge.conf" "$conf/"
sed "s#^library=.*#library=$so_cmake#" "$QB_TEST_SOURCE_DIR/sdk/examples/npy-reader/npy.conf" >"$conf/plugins.d/npy.conf"
qb="$prefix/bin/quantbridge"

"$qb" --config "$conf/quantbridge.conf" plugins --json >"$tmp/plugins.json" || fail "plugins"
grep -q '"npy"' "$tmp/plugins.json" || fail "npy plugin not listed"
grep -q '"hf-dense"' "$tmp/plugins.json" || fail "built-in hf-dense not listed beside npy"

model="$tmp/model"
"$QB_TEST_BUILD_DIR/tests/bin/qb-gen-npy" "$model" 7 || fail "generator"
"$qb" --config "$conf/quantbridge.conf" inspect "$model" >"$tmp/inspect.txt" || { cat "$tmp/inspect.txt"; fail "inspect"; }
grep -q 'npy' "$tmp/inspect.txt" || fail "inspect did not choose npy"
"$qb" --config "$conf/quantbridge.conf" convert --source "$model" --output "$tmp/out" --group-size 32 \
    >"$tmp/convert.txt" 2>&1 || { cat "$tmp/convert.txt"; fail "convert"; }
[ -f "$tmp/out/manifest.json" ] || fail "no manifest"
[ -f "$tmp/out/layer_00.safetensors" ] || fail "no layer file"
grep -Eq '"reader":[[:space:]]*"npy"' "$tmp/out/manifest.json" || fail "manifest does not name the npy reader"

# The same plugin built with pkg-config loads too.
sed -i "s#^library=.*#library=$so_pc#" "$conf/plugins.d/npy.conf"
"$qb" --config "$conf/quantbridge.conf" inspect "$model" >/dev/null || fail "pkg-config-built plugin"
echo "sdk-example: ok"
