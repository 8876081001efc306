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
    """The host's own encoder (host/tokenizer/, through `quantbridge
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


# ---- A Gemma-shaped SentencePiece vocabulary (tests/data/tokenizers/gemma-mini) ------------------
#
# User-defined runs of spaces (written with plain spaces by llama.cpp's converter), tabs and newlines,
# HTML tags, byte and control tokens, add_space_prefix false (docs/formats/gguf.md, "User-defined
# tokens and the merges left out"). There is no original to compare with: the GGUF does not keep the
# U+2581 form of those tokens, and the rebuild follows the GGUF as llama.cpp runs it. Stated
# divergences (docs/formats/gguf.md, "Compared with llama.cpp and transformers"):
# - decoded without special tokens, llama.cpp leaves out "</s>" (a user-defined HTML tag here, which
#   its end-of-generation heuristics retype control), and llama-cpp-python's detokenize drops a
#   leading space after BOS; decoding with special tokens has neither;
# - transformers' GGUF tokenizer respells the space runs as U+2581 runs reached by merges, so a text
#   holding two or more spaces in a row may encode otherwise there (ours then equals llama.cpp).

import tokcases  # noqa: E402  (tests/support/py, on sys.path through conftest.py)

MINI = "gemma-mini"


@pytest.fixture(scope="module")
def mini(tmp_path_factory, build_dir, repo_root, run_qb):
    """(gguf, our tokenizer.json) of gemma-mini, converted once."""
    d = tmp_path_factory.mktemp(MINI)
    # gemma3: transformers chooses its GGUF tokenizer by the architecture
    gguf = tu.make_gguf(build_dir, repo_root, MINI, "-", d / f"{MINI}.gguf", arch="gemma3")
    return gguf, tu.convert(run_qb, gguf, d / "out")


@pytest.fixture(scope="module")
def mini_cases(repo_root):
    return tokcases.gemma_cases(repo_root)


def test_gemma_mini_ids_equal_llama_cpp(mini, mini_cases):
    """Every case, with and without BOS: our tokenizer.json (the tokenizers library) and llama.cpp's
    tokenizer with special tokens parsed give the same ids, and decode back to the same text."""
    from tokenizers import Tokenizer

    gguf, ours_path = mini
    ours = Tokenizer.from_file(str(ours_path))
    lc = tu.LlamaCppVocab(gguf)
    tally, decoded = Tally(), 0
    try:
        for cid, text in mini_cases:
            for add in (True, False):
                want = lc.ids(text, add)
                tally.compare(f"{cid} add_special={add}", want, ours.encode(text, add_special_tokens=add).ids)
            ids = lc.ids(text, True)
            assert ours.decode(ids, skip_special_tokens=False) == lc.text(ids, True), f"{cid}: decode differs"
            body = ids[1:]  # no BOS: llama-cpp-python's leading-space cut does not apply
            if 22 not in body:  # "</s>", retyped control by llama.cpp (module note)
                assert ours.decode(body, skip_special_tokens=True) == lc.text(body, False), \
                    f"{cid}: decode without special tokens differs"
            decoded += 1
    finally:
        lc.close()
    tally.check("gemma-mini vs llama.cpp")
    assert decoded == len(mini_cases)


def test_gemma_mini_transformers_gguf(mini, mini_cases):
    """transformers' own GGUF tokenizer: the same ids except on texts holding a run of spaces, where
    it reaches the runs through merges of U+2581 (module note) and ours is llama.cpp's."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    gguf, ours_path = mini
    hf = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    ours = Tokenizer.from_file(str(ours_path))
    lc = tu.LlamaCppVocab(gguf)
    tally = Tally()
    try:
        for cid, text in mini_cases:
            mine = ours.encode(text).ids
            tally.compare(cid, hf.encode(text), mine, divergence="  " in text and mine == lc.ids(text, True))
    finally:
        lc.close()
    tally.check("gemma-mini vs transformers GGUF tokenizer")


def test_gemma_mini_host_encoder(mini, mini_cases, run_qb, tmp_path):
    """The host's encoder on the rebuilt tokenizer.json (what forward --text and verify use) against
    the tokenizers library, every case."""
    from tokenizers import Tokenizer

    _, ours_path = mini
    lib = Tokenizer.from_file(str(ours_path))
    texts = [t for _, t in mini_cases]
    tally = Tally()
    for (cid, text), mine in zip(mini_cases, _host_ids(run_qb, ours_path.parent, texts, tmp_path)):
        tally.compare(cid, lib.encode(text).ids, mine)
    tally.check("gemma-mini: host encoder vs tokenizers")


def test_gemma_mini_overlap_note_is_true(tmp_path, build_dir, repo_root, run_qb):
    """gemma-mini with two more user-defined tokens that overlap, "ab" and "bcd": the reader says so
    (quantbridge_rebuild_notes), and what the note warns of happens: on "abcd" tokenizers matches "ab"
    first (leftmost), llama.cpp "bcd" (longest first); on text where they do not meet both agree."""
    from tokenizers import Tokenizer

    src = tu.data_dir(repo_root) / MINI
    tj = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    cfg = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    n = max(tj["model"]["vocab"].values()) + 1
    for k, text in enumerate(("ab", "bcd")):
        tj["model"]["vocab"][text] = n + k
        tj["added_tokens"].append({"id": n + k, "content": text, "single_word": False, "lstrip": False,
                                   "rstrip": False, "normalized": False, "special": False})
    folder = tmp_path / "overlap"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg, ensure_ascii=False), encoding="utf-8")
    gguf = tu.make_gguf(build_dir, repo_root, MINI, "-", tmp_path / "overlap.gguf", folder=folder)
    ours_path = tu.convert(run_qb, gguf, tmp_path / "out")
    notes = json.loads((ours_path.parent / "tokenizer_config.json").read_text())["quantbridge_rebuild_notes"]
    assert any(f'{n} "ab" and {n + 1} "bcd" overlap' in s for s in notes), notes
    ours = Tokenizer.from_file(str(ours_path))
    lc = tu.LlamaCppVocab(gguf)
    try:
        a, b, c, d = (ours.token_to_id(x) for x in "abcd")
        assert ours.encode("abcd", add_special_tokens=False).ids == [n, c, d]
        assert lc.ids("abcd", False) == [a, n + 1]
        assert ours.encode("xab bcdx", add_special_tokens=False).ids == lc.ids("xab bcdx", False)
    finally:
        lc.close()
