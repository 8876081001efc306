#!/usr/bin/env bash
# Issue 15's "done when": the llama2, llama3 and qwen3 vocabularies of
# tests/data/tokenizers, turned into GGUF metadata the way llama.cpp's
# converter does (qb-gen-gguf-tok), converted with `quantbridge convert
# --writer hf-dense`, give a tokenizer.json that encodes the corpus to the
# same ids as the original (tokenizer_ids.py, the `tokenizers` library).
# usage: tokenizer_ids.sh QUANTBRIDGE GEN_GGUF_TOK DATA_DIR VENV_DIR WORK_DIR [PYTHON]
# Exit 77 (skipped) when the venv or the pinned wheel cannot be installed
# (no network); any difference is a failure.
set -u
qb=$1 gen=$2 data=$3 venv=$4 work=$5 py=${6:-python3}
here=$(cd "$(dirname "$0")" && pwd)
TOKENIZERS_VERSION=0.21.1

if ! "$venv/bin/python" -c "import tokenizers, sys; sys.exit(tokenizers.__version__ != '$TOKENIZERS_VERSION')" 2>/dev/null; then
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
        echo "SKIP: $py -m venv $venv failed"
        exit 77
    fi
    if ! "$venv/bin/pip" install --disable-pip-version-check -q --timeout 30 --retries 1 \
            "tokenizers==$TOKENIZERS_VERSION" >"$work.pip.log" 2>&1; then
        echo "SKIP: pip install tokenizers==$TOKENIZERS_VERSION failed:"
        tail -3 "$work.pip.log"
        rm -rf "$venv"
        exit 77
    fi
fi

rm -rf "$work"
mkdir -p "$work" || exit 1
status=0
for spec in llama2:- llama3:llama-bpe qwen3:qwen2; do
    name=${spec%%:*} pre=${spec#*:}
    if ! "$gen" "$data/$name" "$pre" "$work/$name.gguf"; then
        echo "FAIL $name: qb-gen-gguf-tok failed"; status=1; continue
    fi
    if ! "$qb" convert --source "$work/$name.gguf" --output "$work/$name-out" --writer hf-dense >/dev/null; then
        echo "FAIL $name: convert --writer hf-dense failed"; status=1; continue
    fi
    if [ ! -f "$work/$name-out/tokenizer.json" ]; then
        echo "FAIL $name: the output has no tokenizer.json"; status=1; continue
    fi
    xz -dc "$data/$name/tokenizer.json.xz" >"$work/$name-orig.json" || { status=1; continue; }
    "$venv/bin/python" "$here/tokenizer_ids.py" "$name" "$work/$name-orig.json" "$work/$name-out/tokenizer.json" \
        "$data/corpus.txt" || status=1
done
exit $status
