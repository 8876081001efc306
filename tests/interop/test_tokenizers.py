"""Interop test 5: the tokenizer quantbridge rebuilds from a GGUF's
tokenizer.ggml.* metadata (plugins/gguf/tokenizer.c, docs/formats/gguf.md
"Tokenizer") against three oracles, on the multilingual corpus of
tests/data/tokenizers:

- the original tokenizer.json the GGUF was made from (`tokenizers`):
  ids, offsets, special-token masks and decoded text must be identical,
  with and without special tokens (this replaces the CTest
  gguf_tokenizer_ids and its private venv);
- transformers' own GGUF tokenizer (AutoTokenizer.from_pretrained(dir,
  gguf_file=...)): identical ids;
- llama.cpp's tokenizer (llama_cpp.Llama(vocab_only=True).tokenize):
  identical ids.

Exact comparison everywhere: token ids are integers, no tolerance applies.
Two stated adjustments for llama.cpp, both places where it and the
Hugging Face original disagree by design, not where our rebuild could hide
a difference:
- llama.cpp implements no normalizer for byte-level vocabularies; where the
  original tokenizer.json has one (Qwen's NFC), llama.cpp is given the
  NFC form of the text, so the split and merges are what is compared;
- with special tokens added, llama.cpp falls back on its pre type's
  default when the GGUF states no tokenizer.ggml.add_bos_token (llama3:
  add BOS), while the original (and so our rebuild) adds none; that
  combination is compared without special tokens only.

Where an oracle disagrees with the original tokenizer.json itself (ours
giving the original's ids), the encoding is counted and printed as that
oracle's divergence, not as a failure: the original model is the truth the
rebuild must reproduce. Seen with these versions: transformers' GGUF
tokenizer applies no NFC for qwen3, and for llama2 encodes a lone space,
runs of leading spaces and the text around special tokens otherwise than
the original (its prefix-space handling); llama.cpp matches "</s>" as a control token in the
qwen3 vocabulary (its end-of-generation text heuristics). For pre types
without an original (test_pre_type_splits_as_llama_cpp), the one stated
exception is gpt-4o and tekken on text with non-ASCII letters: llama.cpp
runs an adapted regex there (letter-case classes as lookaheads on its
collapsed categories) that src/llama-vocab.cpp quotes next to the
tokenizer.json original our table uses.
"""
import json
import pathlib
import unicodedata

import pytest

import _tokenizers_util as tu

# The first differences shown when a comparison fails.
SHOW = 5


def _states_add_bos(repo_root, name):
    cfg = json.loads((tu.data_dir(repo_root) / name / "tokenizer_config.json").read_text(encoding="utf-8"))
    return isinstance(cfg.get("add_bos_token"), bool)


def _has_nfc(tokenizer_json: pathlib.Path) -> bool:
    norm = json.loads(tokenizer_json.read_text(encoding="utf-8")).get("normalizer") or {}
    return norm.get("type") == "NFC"


def _first_diff(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"at {i}: oracle {a[i:i + 8]} ours {b[i:i + 8]}"


class Tally:
    """Tokens compared, the encodings whose ids differ, and those among them
    that are a stated divergence of the oracle (module docstring)."""

    def __init__(self):
        self.tokens = 0
        self.diffs = []
        self.divergent = []

    def compare(self, what, want, got, divergence=False):
        self.tokens += len(want)
        if want != got:
            (self.divergent if divergence else self.diffs).append(f"{what}: {_first_diff(want, got)}")

    def check(self, label):
        print(f"{label}: {self.tokens} tokens compared, {len(self.diffs) + len(self.divergent)} mismatching "
              f"encodings, {len(self.divergent)} of them the oracle's stated divergence")
        for d in self.divergent:
            print(f"  divergence: {d}")
        assert not self.diffs, f"{label}: {len(self.diffs)} encodings differ:\n" + "\n".join(self.diffs[:SHOW])


@pytest.fixture(scope="module")
def records(repo_root):
    return tu.corpus_records(repo_root)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory, build_dir, repo_root, run_qb):
    """{name: (gguf, our tokenizer.json, original tokenizer.json)} for the
    three vocabularies, each converted once."""
    out = {}
    for name, pre in tu.VOCABULARIES:
        d = tmp_path_factory.mktemp(name)
        gguf = tu.make_gguf(build_dir, repo_root, name, pre, d / f"{name}.gguf")
        out[name] = (gguf, tu.convert(run_qb, gguf, d / "out"), tu.original_tokenizer_json(repo_root, name, d))
    return out


@pytest.fixture(scope="module")
def pre_rebuilt(tmp_path_factory, build_dir, repo_root, run_qb):
    """pre_rebuilt(pre) -> (gguf, our tokenizer.json): the llama3 vocabulary
    with pre type `pre`, made and converted once for the two pre-type tests
    (both only read it)."""
    done = {}

    def get(pre):
        if pre not in done:
            d = tmp_path_factory.mktemp(f"pre-{pre}")
            gguf = tu.make_gguf(build_dir, repo_root, "llama3", pre, d / "m.gguf")
            done[pre] = (gguf, tu.convert(run_qb, gguf, d / "out"))
        return done[pre]

    return get


@pytest.mark.parametrize("name", [v[0] for v in tu.VOCABULARIES])
def test_ids_equal_original(name, rebuilt, records):
    """Ours against the original tokenizer.json: ids, offsets, special-token
    masks and decode(skip_special_tokens False/True)."""
    from tokenizers import Tokenizer

    _, ours_path, orig_path = rebuilt[name]
    orig, ours = Tokenizer.from_file(str(orig_path)), Tokenizer.from_file(str(ours_path))
    assert ours.get_vocab_size(with_added_tokens=True) == orig.get_vocab_size(with_added_tokens=True)
    tally = Tally()
    for i, rec in enumerate(records):
        for add in (True, False):
            a, b = orig.encode(rec, add_special_tokens=add), ours.encode(rec, add_special_tokens=add)
            where = f"{name} record {i} {rec[:30]!r} add_special_tokens={add}"
            tally.compare(where, a.ids, b.ids)
            if a.ids != b.ids:
                continue
            if a.offsets != b.offsets or a.special_tokens_mask != b.special_tokens_mask:
                tally.diffs.append(f"{where}: offsets or special-token masks differ")
            for skip in (False, True):
                if orig.decode(a.ids, skip_special_tokens=skip) != ours.decode(b.ids, skip_special_tokens=skip):
                    tally.diffs.append(f"{where} skip_special_tokens={skip}: decode differs")
    tally.check(f"{name} vs original tokenizer.json")


@pytest.mark.parametrize("name", [v[0] for v in tu.VOCABULARIES])
def test_ids_equal_transformers_gguf(name, rebuilt, records):
    """Ours against transformers' tokenizer built from the same GGUF."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    gguf, ours_path, orig_path = rebuilt[name]
    hf = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    ours, orig = Tokenizer.from_file(str(ours_path)), Tokenizer.from_file(str(orig_path))
    tally = Tally()
    for i, rec in enumerate(records):
        for add in (True, False):
            mine = ours.encode(rec, add_special_tokens=add).ids
            tally.compare(f"{name} record {i} {rec[:30]!r} add_special_tokens={add}",
                          hf.encode(rec, add_special_tokens=add), mine,
                          divergence=mine == orig.encode(rec, add_special_tokens=add).ids)
    tally.check(f"{name} vs transformers GGUF tokenizer")


@pytest.mark.parametrize("name", [v[0] for v in tu.VOCABULARIES])
def test_ids_equal_llama_cpp(name, rebuilt, records, repo_root):
    """Ours against llama.cpp's tokenizer reading the same GGUF."""
    from tokenizers import Tokenizer

    gguf, ours_path, orig_path = rebuilt[name]
    ours, orig = Tokenizer.from_file(str(ours_path)), Tokenizer.from_file(str(orig_path))
    nfc = _has_nfc(ours_path)
    adds = (True, False) if _states_add_bos(repo_root, name) else (False,)
    lc = tu.LlamaCppVocab(gguf)
    tally = Tally()
    try:
        for i, rec in enumerate(records):
            for add in adds:
                text = unicodedata.normalize("NFC", rec) if nfc else rec
                mine = ours.encode(rec, add_special_tokens=add).ids
                tally.compare(f"{name} record {i} {rec[:30]!r} add_special={add}", lc.ids(text, add), mine,
                              divergence=mine == orig.encode(rec, add_special_tokens=add).ids)
    finally:
        lc.close()
    tally.check(f"{name} vs llama.cpp")


@pytest.mark.parametrize("pre", tu.PRE_TYPES)
def test_pre_type_splits_as_llama_cpp(pre, pre_rebuilt, records):
    """Every pre type we take, on the llama3 vocabulary: our tokenizer.json
    (its Split regexes from the pretok.c table) and llama.cpp's regex_exprs
    for that pre type give the same ids on the corpus."""
    from tokenizers import Tokenizer

    gguf, ours_path = pre_rebuilt(pre)
    ours = Tokenizer.from_file(str(ours_path))
    nfc = _has_nfc(ours_path)
    adapted = pre in ("gpt-4o", "tekken")
    lc = tu.LlamaCppVocab(gguf)
    tally = Tally()
    try:
        for i, rec in enumerate(records):
            text = unicodedata.normalize("NFC", rec) if nfc else rec
            tally.compare(f"pre {pre} record {i} {rec[:30]!r}", lc.ids(text, False),
                          ours.encode(rec, add_special_tokens=False).ids,
                          divergence=adapted and any(ord(c) > 127 and c.isalpha() for c in rec))
    finally:
        lc.close()
    tally.check(f"pre {pre} (llama3 vocabulary) vs llama.cpp")


def _host_ids(run_qb, tokenizer_dir, texts, scratch):
    """The host encoder's ids for every text, from one `quantbridge forward
    --tokenizer DIR --text-file F --print-tokens` process: the texts go in F
    separated by NUL bytes (they hold newlines, never a NUL) and come back
    as one line of comma-separated ids each, in order."""
    assert not any("\0" in t for t in texts), "a text holds a NUL: it cannot be framed by NULs"
    f = scratch / "texts.nul"
    f.write_bytes("\0".join(texts).encode("utf-8"))
    out = run_qb("forward", "--tokenizer", tokenizer_dir, "--text-file", f, "--print-tokens").stdout
    lines = out.split("\n")
    assert lines[-1] == "" and len(lines) == len(texts) + 1, \
        f"{len(texts)} texts gave {len(lines) - 1} lines of ids"
    return [[int(x) for x in line.split(",")] if line else [] for line in lines[:-1]]


@pytest.mark.parametrize("name", [v[0] for v in tu.VOCABULARIES])
def test_host_encoder_equals_tokenizers(name, rebuilt, records, run_qb, tmp_path):
    """The host's own encoder (host/tokenize_*.c, through `quantbridge
    forward --tokenizer DIR --text-file F --print-tokens`, the encoder
    `forward --text` and verify's model check use) against the live
    `tokenizers` library, on every record, for the publisher's
    tokenizer.json and for the one rebuilt from the GGUF. Exact ids, special
    tokens added (the library's default, as forward and verify encode)."""
    from tokenizers import Tokenizer

    _, ours_path, orig_path = rebuilt[name]
    orig_dir = tmp_path / "original"
    orig_dir.mkdir()
    (orig_dir / "tokenizer.json").write_bytes(orig_path.read_bytes())
    for label, d in (("original", orig_dir), ("GGUF-rebuilt", ours_path.parent)):
        lib = Tokenizer.from_file(str(d / "tokenizer.json"))
        got = _host_ids(run_qb, d, records, tmp_path)
        tally = Tally()
        for i, (rec, mine) in enumerate(zip(records, got)):
            tally.compare(f"{name} ({label}) record {i} {rec[:30]!r}", lib.encode(rec).ids, mine)
        tally.check(f"{name} {label} tokenizer.json: host encoder vs tokenizers")


@pytest.mark.parametrize("pre", tu.PRE_TYPES)
def test_host_encoder_pre_types(pre, tmp_path, pre_rebuilt, run_qb, records):
    """The host's encoder on the tokenizer.json the GGUF reader rebuilds for
    every pre type we take (llama3 vocabulary; GPT-2's ByteLevel regex,
    Digits, the DeepSeek Split chains...) against the live `tokenizers`
    library: every record, the whole corpus as one text included."""
    from tokenizers import Tokenizer

    _, ours_path = pre_rebuilt(pre)
    lib = Tokenizer.from_file(str(ours_path))
    tally = Tally()
    for i, (rec, mine) in enumerate(zip(records, _host_ids(run_qb, ours_path.parent, records, tmp_path))):
        tally.compare(f"pre {pre} record {i} {rec[:30]!r}", lib.encode(rec).ids, mine)
    tally.check(f"pre {pre}: host encoder vs tokenizers")
