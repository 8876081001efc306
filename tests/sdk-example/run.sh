#!/usr/bin/env bash
# Out-of-tree SDK test, a vendor's steps (sdk/README.md) replayed:
#   build  install the `sdk` component into one prefix (no host, no plugin)
#          and everything into another; build the example reader
#          (sdk/examples/npy-reader) and writer (sdk/examples/npy-writer)
#          against the SDK-only prefix, with find_package(QuantbridgeSDK 1)
#          and with pkg-config, -Werror; check each exports only the entry
#          and needs nothing from the host; install them into a vendor
#          directory (qb_add_plugin DESTINATION).
#   all    build, then register reader and writer with the full install's
#          host each of three ways -- $XDG_CONFIG_HOME/quantbridge/plugins.d,
#          a directory in $QUANTBRIDGE_PLUGIN_PATH, --plugin-dir -- checking
#          `quantbridge plugins` lists them and every built-in; convert an
#          npy model into hf-dense with the example reader and an hf-dense
#          model into npy with the example writer (values, manifest facts,
#          tokenizer files copied by the host, read back by the reader);
#          finally install both into the full install's own plugin directory
#          (qb_add_plugin's default) and list them there.
# Usage: run.sh build|all. Exit 0 = pass, 1 = fail, 77 = skipped (no python3
# for the output checks of `all`).
set -euo pipefail
: "${QB_TEST_BUILD_DIR:?}" "${QB_TEST_SOURCE_DIR:?}"
stage=${1:-all}
case "$stage" in build | all) ;; *) echo "usage: run.sh build|all" >&2; exit 2 ;; esac
if [ "$stage" = all ] && ! command -v python3 >/dev/null; then
  echo "SKIP: no python3 for the output checks"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qb-sdk-example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
src="$QB_TEST_SOURCE_DIR"
examples="$src/sdk/examples"
checks="$src/tests/sdk-example/sdk_checks.py"
logrun() { # log-file command... : runs it, shows the log and fails on error
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$* (log above)"; }
}

# ---- 1. the SDK alone, and the full install --------------------------------
sdk="$tmp/sdk"
full="$tmp/full"
logrun "$tmp/install-sdk.log" cmake --install "$QB_TEST_BUILD_DIR" --component sdk --prefix "$sdk"
logrun "$tmp/install-full.log" cmake --install "$QB_TEST_BUILD_DIR" --prefix "$full"
[ -f "$sdk/include/quantbridge/quantbridge.h" ] || fail "sdk component: no headers"
[ ! -e "$sdk/bin/quantbridge" ] || fail "sdk component holds bin/quantbridge"
# (the examples' own confs are sources a vendor copies, not a registration)
if find "$sdk" \( -name '*.so*' -o -name '*.conf' \) -not -path "$sdk/share/quantbridge-sdk/examples/*" |
    grep . >&2; then
  fail "sdk component holds a library or a conf (above)"
fi
pcdir=$(dirname "$(find "$sdk" -name quantbridge-sdk.pc | head -n1)")
[ -d "$pcdir" ] || fail "sdk component: no quantbridge-sdk.pc"
# What a vendor reads and starts from travels with the SDK (issue 30).
for f in README.md examples/npy-reader/npy_reader.c examples/npy-writer/npy_writer.c \
    examples/int8-reader/int8_reader.c examples/npy-writer/Makefile \
    sample/tiny-llama/config.json sample/tiny-llama/model.safetensors; do
  [ -f "$sdk/share/quantbridge-sdk/$f" ] || fail "sdk component: no share/quantbridge-sdk/$f"
done

# The installed README's own pkg-config command line (step 3, "With
# pkg-config only"), as a vendor pastes it, on each example: POSIX code
# included (the npy reader maps its files).
readme_cc=$(python3 - "$sdk/share/quantbridge-sdk/README.md" <<'PY' || true
import re, sys
text = open(sys.argv[1]).read()
block = text.split("With pkg-config only", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
cmd = re.search(r"^cc .*?-o libqb_myformat\.so$", block, re.S | re.M).group(0)
print(cmd.replace("\\\n", " "))
PY
)
[ -n "$readme_cc" ] || fail "the installed README has no pkg-config command line in step 3"
for ex in npy-reader/npy_reader.c npy-writer/npy_writer.c; do
  line=${readme_cc//my_reader.c/$sdk/share/quantbridge-sdk/examples/$ex}
  line=${line//libqb_myformat.so/$tmp/readme-$(basename "$ex" .c).so}
  PKG_CONFIG_PATH="$pcdir" logrun "$tmp/readme-$(basename "$ex" .c).log" bash -c "$line -Werror" ||
    fail "the README's pkg-config line does not build $ex"
done

# ---- 2. build both examples against the SDK-only prefix, two ways ----------
strict="-O2 -Wall -Wextra -Werror"
build_example() { # dir lib -> sets so_cmake, so_pc
  local ex=$1 lib=$2
  logrun "$tmp/$ex-cfg.log" cmake -S "$examples/$ex" -B "$tmp/b-$ex" -DCMAKE_PREFIX_PATH="$sdk" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$strict"
  logrun "$tmp/$ex-build.log" cmake --build "$tmp/b-$ex"
  so_cmake=$(find "$tmp/b-$ex" -name "$lib" | head -n1)
  [ -n "$so_cmake" ] || fail "$ex: the CMake build produced no $lib"
  cp -r "$examples/$ex" "$tmp/src-$ex"
  PKG_CONFIG_PATH="$pcdir" logrun "$tmp/$ex-make.log" make -C "$tmp/src-$ex" CFLAGS="$strict"
  so_pc="$tmp/src-$ex/$lib"
  [ -f "$so_pc" ] || fail "$ex: make produced no $lib"
  for so in "$so_cmake" "$so_pc"; do
    exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^_' | sort | tr '\n' ' ')
    [ "$exported" = "qb_plugin_entry_v1 " ] || fail "$so exports: $exported"
    if readelf -d "$so" | grep NEEDED | grep -Ei 'quantbridge|glib|cjson|qb_' >&2; then
      fail "$so needs a library of the host (above)"
    fi
  done
}
build_example npy-reader libqb_npy.so
reader_cmake=$so_cmake
reader_pc=$so_pc
build_example npy-writer libqb_npy_writer.so
writer_cmake=$so_cmake
writer_pc=$so_pc
# The reader on the reader base library (QuantbridgeSDK::base, built from
# the SDK's installed sources; pkg-config quantbridge-base).
build_example int8-reader libqb_int8_example.so
int8_cmake=$so_cmake
int8_pc=$so_pc

# A vendor directory: qb_add_plugin ... DESTINATION puts library and conf there.
vendor="$tmp/vendor/plugins"
for ex in npy-reader:NPY_PLUGIN_DESTINATION npy-writer:NPY_WRITER_DESTINATION; do
  logrun "$tmp/${ex%%:*}-dest.log" cmake "$tmp/b-${ex%%:*}" -D"${ex#*:}=$vendor"
  logrun "$tmp/${ex%%:*}-inst.log" cmake --install "$tmp/b-${ex%%:*}"
done
for f in libqb_npy.so npy.conf libqb_npy_writer.so npy-writer.conf; do
  [ -f "$vendor/$f" ] || fail "DESTINATION install: no $vendor/$f"
done
echo "sdk-example: the examples built against the SDK-only prefix (find_package, pkg-config)"
[ "$stage" = build ] && { echo "sdk-example build: ok"; exit 0; }

# ---- 3. drop-in registration, three ways ------------------------------------
qb="$full/bin/quantbridge"
builtins=()
for d in "$src"/plugins/*/; do
  # a plugin folder has its conf; one without holds shared code (plugins/qlinear)
  [ -f "$d/CMakeLists.txt" ] && [ -f "$d/$(basename "$d").conf" ] && builtins+=("$(basename "$d")")
done
# A clean environment: no user config, no search path unless a way sets one.
export HOME="$tmp/home"
export XDG_CONFIG_HOME="$tmp/xdg"
unset QUANTBRIDGE_CONFIG QUANTBRIDGE_PLUGIN_PATH
mkdir -p "$HOME" "$XDG_CONFIG_HOME"

expect_listed() { # label [env/args...]: `plugins --json` lists ours and the built-ins
  local label=$1
  shift
  "$@" plugins --json >"$tmp/plugins-$label.json" 2>"$tmp/plugins-$label.err" ||
    { cat "$tmp/plugins-$label.err" >&2; fail "$label: quantbridge plugins failed"; }
  python3 "$checks" listed "$tmp/plugins-$label.json" npy npy-writer "${builtins[@]}" ||
    fail "$label: quantbridge plugins does not list the examples and the ${#builtins[@]} built-ins"
}

# (a) $XDG_CONFIG_HOME/quantbridge/plugins.d/NAME.conf, absolute library paths.
xdg_pd="$XDG_CONFIG_HOME/quantbridge/plugins.d"
mkdir -p "$xdg_pd"
sed "s#^library=.*#library=$reader_cmake#" "$examples/npy-reader/npy.conf" >"$xdg_pd/npy.conf"
sed "s#^library=.*#library=$writer_cmake#" "$examples/npy-writer/npy-writer.conf" >"$xdg_pd/npy-writer.conf"
expect_listed xdg "$qb"
rm -rf "$XDG_CONFIG_HOME/quantbridge"

# (b) a directory of $QUANTBRIDGE_PLUGIN_PATH: NAME.conf + libraries, bare
#     library= names (the DESTINATION install above).
expect_listed plugin-path env QUANTBRIDGE_PLUGIN_PATH="$vendor" "$qb"

# (c) --plugin-dir DIR, with the pkg-config builds.
pdir="$tmp/plugin-dir"
mkdir -p "$pdir"
cp "$reader_pc" "$writer_pc" "$examples/npy-reader/npy.conf" "$examples/npy-writer/npy-writer.conf" "$pdir/"
expect_listed plugin-dir "$qb" --plugin-dir "$pdir"
echo "sdk-example: registered by plugins.d, \$QUANTBRIDGE_PLUGIN_PATH and --plugin-dir, built-ins kept"

# ---- 4. conversions ----------------------------------------------------------
gen="$QB_TEST_BUILD_DIR/tests/bin"
# The example reader: an npy model into hf-dense (float32, so values compare exactly).
npy_model="$tmp/npy-model"
"$gen/qb-gen-npy" "$npy_model" 7 || fail "qb-gen-npy"
QUANTBRIDGE_PLUGIN_PATH="$vendor" "$qb" inspect "$npy_model" >"$tmp/inspect-npy.txt" 2>&1 ||
  { cat "$tmp/inspect-npy.txt" >&2; fail "inspect of the npy model"; }
grep -q 'npy' "$tmp/inspect-npy.txt" || fail "inspect did not choose the npy reader"
logrun "$tmp/convert-npy.log" env QUANTBRIDGE_PLUGIN_PATH="$vendor" "$qb" convert --source "$npy_model" \
  --output "$tmp/out-hf" --writer hf-dense --option dtype=f32
[ -f "$tmp/out-hf/config.json" ] || fail "npy -> hf-dense: no config.json"
for t in model.norm.weight model.layers.0.self_attn.q_proj.weight; do
  python3 "$checks" same-tensor "$npy_model/$t.npy" "$tmp/out-hf" "$t" || fail "npy -> hf-dense: $t"
done

# The example writer: an hf-dense model (with tokenizer files) into npy,
# its writer-role option set, read back by the npy reader (--verify).
hf_model="$tmp/hf-model"
"$gen/qb-gen-hf-dense" --out "$hf_model" --dtype f32 --layers 2 --hidden 64 --intermediate 128 \
  --vocab 128 --heads 4 --kv-heads 2 --seed 3 || fail "qb-gen-hf-dense"
[ -f "$hf_model/tokenizer_config.json" ] || fail "the hf-dense fixture has no tokenizer_config.json"
logrun "$tmp/convert-writer.log" "$qb" --plugin-dir "$pdir" convert --source "$hf_model" \
  --output "$tmp/out-npy" --writer npy-writer --option block_rows=5 --verify
python3 "$checks" manifest "$tmp/out-npy" "$hf_model" hf-dense || fail "npy-writer manifest"
for t in model.embed_tokens.weight model.norm.weight model.layers.1.mlp.down_proj.weight; do
  python3 "$checks" same-tensor "$tmp/out-npy/$t.npy" "$hf_model" "$t" || fail "hf-dense -> npy: $t"
done
# Side files are the host's (SIDE_FILES_HOST): the tokenizer file byte for
# byte, generation_config.json with the source's content.
cmp -s "$hf_model/tokenizer_config.json" "$tmp/out-npy/tokenizer_config.json" ||
  fail "hf-dense -> npy: tokenizer_config.json not copied by the host"
[ -f "$tmp/out-npy/generation_config.json" ] || fail "hf-dense -> npy: no generation_config.json"
python3 "$checks" same-json "$hf_model/generation_config.json" "$tmp/out-npy/generation_config.json" ||
  fail "hf-dense -> npy: generation_config.json differs from the source's"
"$qb" --plugin-dir "$pdir" inspect "$tmp/out-npy" >"$tmp/inspect-out.txt" 2>&1 ||
  { cat "$tmp/inspect-out.txt" >&2; fail "inspect of the npy-writer output"; }
grep -q 'npy' "$tmp/inspect-out.txt" || fail "the npy reader does not read the writer's output back"
echo "sdk-example: npy -> hf-dense and hf-dense -> npy converted and checked"

# The reader base library out of tree: an example-int8 checkpoint through
# the int8-example reader (both builds), into hf-dense f32; every value is
# (float)q * scale and every dense tensor its own.
i8_model="$tmp/int8-model"
python3 "$checks" int8-model "$i8_model" || fail "int8 fixture"
for so in "$int8_cmake" "$int8_pc"; do
  i8dir="$tmp/int8-dir-$(basename "$(dirname "$so")")"
  mkdir -p "$i8dir"
  cp "$so" "$examples/int8-reader/int8-example.conf" "$i8dir/"
  "$qb" --plugin-dir "$i8dir" inspect "$i8_model" >"$tmp/inspect-int8.txt" 2>&1 ||
    { cat "$tmp/inspect-int8.txt" >&2; fail "inspect of the int8 model ($so)"; }
  grep -q 'example-int8' "$tmp/inspect-int8.txt" || fail "inspect did not choose the int8-example reader"
  rm -rf "$tmp/out-int8"
  logrun "$tmp/convert-int8.log" "$qb" --plugin-dir "$i8dir" convert --source "$i8_model" \
    --output "$tmp/out-int8" --writer hf-dense --option dtype=f32
  python3 "$checks" int8-same "$i8_model" "$tmp/out-int8" || fail "int8 -> hf-dense ($so)"
done
echo "sdk-example: the reader base library built out of tree, example-int8 -> hf-dense checked"

# ---- 5. installed into the host's own plugin directory ----------------------
# qb_add_plugin's default out of tree: the found SDK's QUANTBRIDGE_PLUGIN_DIR
# and plugins.d, here the full install; no environment or option needed.
for ex in npy-reader npy-writer; do
  logrun "$tmp/$ex-full-cfg.log" cmake -S "$examples/$ex" -B "$tmp/f-$ex" -DCMAKE_PREFIX_PATH="$full" \
    -DCMAKE_BUILD_TYPE=Release
  logrun "$tmp/$ex-full-build.log" cmake --build "$tmp/f-$ex"
  logrun "$tmp/$ex-full-inst.log" cmake --install "$tmp/f-$ex"
done
expect_listed installed "$qb"
echo "sdk-example: ok"
