"""Real tier: llama.cpp's own tokenizer test suite (docs/real-models.md, "llama.cpp's vocabularies").
Each vocabulary-only GGUF of `vendor/llama.cpp/models` in the pinned llama-cpp-python source package
(fetch_models.py puts them in $QB_REAL_CACHE/llama-vocab) is grafted onto a tiny llama model with every
tokenizer.* key unchanged (_vocab_util.graft); `quantbridge convert --writer hf-dense` rebuilds its
tokenizer.json (plugins/gguf/tokenizer.c) and the host's encoder (`quantbridge forward --tokenizer DIR
--text-file F --print-tokens`, what forward --text and verify use) encodes every text of NAME.gguf.inp.
Two independent oracles:
- NAME.gguf.out: the ids the model's original Hugging Face tokenizer gives each text, without special
  tokens (what llama.cpp's tests/test-tokenizer-0 checks llama.cpp against);
- the `tokenizers` library on the rebuilt tokenizer.json: the host's ids with the special tokens of its
  post-processor, and the .out ids without them.
Every text is compared exactly; the test passes only when every text of every decoder vocabulary does.

The gpt2 vocabularies without a pre type (aquila, gpt-neox: no .inp/.out) are refused by name
(docs/formats/gguf.md, "A gpt2 vocabulary without a pre type"); the test shows why no choice would be
exact: llama.cpp's own fallback split and GPT-2's split, the two candidates, give different ids on the
suite's texts. Vocabularies of encoder-only models (bert-bge: WordPiece; nomic-bert-moe: Unigram) and
baichuan (no test texts) are not decoder vocabularies of the suite; the first two are refused by name.
"""
import json

import pytest

import _vocab_util as V

# Every decoder vocabulary of the suite that has test texts (NAME.gguf.inp/.out).
DECODERS = ["llama-spm", "phi-3", "qwen2", "qwen35", "llama-bpe", "deepseek-llm", "deepseek-coder", "command-r",
            "gpt-2", "starcoder", "refact", "falcon", "mpt", "gemma-4"]
NO_PRE = ["aquila", "gpt-neox"]
ENCODERS = {"bert-bge": "bert", "nomic-bert-moe": "t5"}


@pytest.fixture(scope="session")
def vocab_dir(real_cache):
    d = real_cache / "llama-vocab"
    if not (d / "ggml-vocab-gpt-2.gguf").is_file():
        pytest.fail(f"{d} is missing the suite: tests/real/run.sh fetches it (fetch_models.py)")
    return d


def test_suite_is_what_this_test_covers(vocab_dir):
    """Every vocabulary with test texts is one of DECODERS or an encoder's: a new one in a later
    llama.cpp is not silently left out."""
    with_texts = sorted(p.name[len("ggml-vocab-"):-len(".gguf.inp")] for p in vocab_dir.glob("*.gguf.inp"))
    assert with_texts == sorted(DECODERS + ["bert-bge"])


@pytest.fixture(scope="session")
def rebuilt(vocab_dir, run_qb, tmp_path_factory):
    """rebuilt(name) -> folder holding the tokenizer.json convert rebuilt from the grafted vocabulary."""
    done = {}

    def get(name):
        if name not in done:
            d = tmp_path_factory.mktemp(f"vocab-{name}")
            V.graft(vocab_dir / f"ggml-vocab-{name}.gguf", d / "m.gguf")
            run_qb("convert", "--source", d / "m.gguf", "--output", d / "out", "--writer", "hf-dense", "-q")
            done[name] = d / "out"
        return done[name]

    return get


def host_ids(run_qb, tok_dir, texts, scratch):
    """One line of ids per text from one `forward --tokenizer DIR --text-file F --print-tokens` (the
    texts separated by NUL bytes, forward --help)."""
    assert not any("\0" in t for t in texts)
    f = scratch / "texts.nul"
    f.write_bytes("\0".join(texts).encode("utf-8"))
    lines = run_qb("forward", "--tokenizer", tok_dir, "--text-file", f, "--print-tokens").stdout.split("\n")
    assert lines[-1] == "" and len(lines) == len(texts) + 1
    return [[int(x) for x in line.split(",")] if line else [] for line in lines[:-1]]


def template(tok_json):
    """(ids before, ids after) the sequence in the post-processor's single template."""
    pp = tok_json.get("post_processor") or {}
    procs = pp.get("processors", [pp]) if pp.get("type") == "Sequence" else [pp]
    before, after, seen = [], [], False
    for p in procs:
        if p.get("type") != "TemplateProcessing":
            continue
        for item in p["single"]:
            if "Sequence" in item:
                seen = True
            else:
                ids = p["special_tokens"][item["SpecialToken"]["id"]]["ids"]
                (after if seen else before).extend(ids)
    return before, after


@pytest.mark.parametrize("name", DECODERS)
def test_vocabulary_gives_expected_ids(name, vocab_dir, rebuilt, run_qb, tmp_path):
    from tokenizers import Tokenizer

    cases = V.read_cases(vocab_dir / f"ggml-vocab-{name}.gguf")
    out = rebuilt(name)
    tj = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    before, after = template(tj)
    lib = Tokenizer.from_file(str(out / "tokenizer.json"))
    got = host_ids(run_qb, out, [t for t, _ in cases], tmp_path)
    bad = []
    for i, ((text, want), mine) in enumerate(zip(cases, got)):
        body = mine[len(before):len(mine) - len(after)]
        lib_plain = lib.encode(text, add_special_tokens=False).ids
        lib_full = lib.encode(text).ids
        if mine[:len(before)] != before or mine[len(mine) - len(after):] != after or body != want \
                or lib_plain != want or lib_full != mine:
            bad.append(f"text {i} {text[:40]!r}: .out {want[:12]} host {body[:12]} tokenizers {lib_plain[:12]}")
    print(f"{name}: {len(cases) - len(bad)}/{len(cases)} texts give the expected ids")
    assert not bad, f"{name}: {len(bad)} of {len(cases)} texts differ:\n" + "\n".join(bad[:5])


@pytest.mark.parametrize("name", NO_PRE)
def test_gpt2_without_pre_type_is_refused(name, vocab_dir, run_qb, tmp_path):
    """The rule (docs/formats/gguf.md, "A gpt2 vocabulary without a pre type"): refused by name, with
    the way out, by inspect and convert; and the refusal is needed: on the suite's texts, llama.cpp's
    fallback split of this very file and GPT-2's split (tokenizers' ByteLevel over the same vocabulary
    and merges) give different ids, so the file leaves its tokenizer undetermined."""
    import llama_cpp
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    import gguf

    src = vocab_dir / f"ggml-vocab-{name}.gguf"
    V.graft(src, tmp_path / "m.gguf")
    proc = run_qb("convert", "--source", tmp_path / "m.gguf", "--output", tmp_path / "out", "--writer", "hf-dense",
                  ok=False)
    msg = proc.stderr + proc.stdout
    assert "tokenizer.ggml.model gpt2 without tokenizer.ggml.pre" in msg, msg
    assert "convert_hf_to_gguf.py" in msg, msg
    assert not (tmp_path / "out" / "tokenizer.json").exists()

    r = gguf.GGUFReader(str(src))
    toks = r.fields["tokenizer.ggml.tokens"].contents()
    merges = [tuple(m.split(" ", 1)) for m in r.fields["tokenizer.ggml.merges"].contents()]
    gpt2 = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(toks)}, merges=merges))
    gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    gpt2.decoder = decoders.ByteLevel()
    llm = llama_cpp.Llama(model_path=str(src), vocab_only=True, verbose=False)
    try:
        texts = [t for t, _ in V.read_cases(vocab_dir / "ggml-vocab-gpt-2.gguf")]
        differ = [t for t in texts if list(llm.tokenize(t.encode(), add_bos=False, special=False))
                  != gpt2.encode(t, add_special_tokens=False).ids]
    finally:
        llm.close()
    assert differ, "llama.cpp's fallback and GPT-2's split agree on every text"
    print(f"{name}: llama.cpp's fallback and GPT-2's split differ on {len(differ)}/{len(texts)} texts")


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_encoder_vocabulary_is_refused(name, vocab_dir, run_qb, tmp_path):
    """An encoder-only model's vocabulary (WordPiece, Unigram) is not rebuilt: refused by name with
    the tokenizer models that are."""
    V.graft(vocab_dir / f"ggml-vocab-{name}.gguf", tmp_path / "m.gguf")
    proc = run_qb("convert", "--source", tmp_path / "m.gguf", "--output", tmp_path / "out", "--writer", "hf-dense",
                  ok=False)
    msg = proc.stderr + proc.stdout
    assert f'tokenizer.ggml.model "{ENCODERS[name]}" cannot be rebuilt' in msg, msg
    assert "handled: gpt2, llama, gemma4" in msg, msg
