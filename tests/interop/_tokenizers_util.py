"""Helpers of test_tokenizers.py (module-private): fixtures made from the real
vocabularies of tests/data/tokenizers, and the three ways of tokenizing a
GGUF's vocabulary that the test compares."""
import lzma
import pathlib
import subprocess

import pytest

# (folder, tokenizer.ggml.pre as llama.cpp's converter names it; "-" for
# the SentencePiece llama2 vocabulary, which has none)
VOCABULARIES = [("llama2", "-"), ("llama3", "llama-bpe"), ("qwen3", "qwen2")]

# Every pre type plugins/gguf/pretok.c takes. Each is put on the llama3
# byte-level vocabulary (its merges and tokens do not depend on the split,
# only the ids a text gets do), so llama.cpp's own regex_exprs for that
# pre type (src/llama-vocab.cpp) and our tokenizer.json's Splits split
# the same text, or the ids differ.
PRE_TYPES = ["gpt-2", "phi-2", "llama-bpe", "llama3", "llama-v3", "qwen2", "deepseek-r1-qwen", "qwen35", "mpt",
             "falcon", "smollm", "command-r", "starcoder", "refact", "gpt-4o", "tekken", "deepseek-llm",
             "deepseek-coder", "deepseek-v3"]


def data_dir(repo_root: pathlib.Path) -> pathlib.Path:
    return repo_root / "tests" / "data" / "tokenizers"


def corpus_records(repo_root: pathlib.Path) -> list:
    """Each record of corpus.txt (separated by a line holding a lone form
    feed, tests/data/tokenizers/README.md), then the whole file."""
    text = (data_dir(repo_root) / "corpus.txt").read_text(encoding="utf-8")
    return text.split("\n\x0c\n") + [text]


def original_tokenizer_json(repo_root: pathlib.Path, name: str, dest: pathlib.Path) -> pathlib.Path:
    out = dest / f"{name}-original.json"
    out.write_bytes(lzma.decompress((data_dir(repo_root) / name / "tokenizer.json.xz").read_bytes()))
    return out


def make_gguf(build_dir: pathlib.Path, repo_root: pathlib.Path, name: str, pre: str,
              out: pathlib.Path, arch: str = "llama", folder: pathlib.Path = None) -> pathlib.Path:
    """A tiny GGUF of architecture `arch` carrying vocabulary `name` (or the
    tokenizer files in `folder`) as tokenizer.ggml.* with pre type `pre`
    (qb-gen-gguf-tok: what convert_hf_to_gguf.py writes)."""
    gen = build_dir / "tests" / "bin" / "qb-gen-gguf-tok"
    if not gen.is_file():
        pytest.fail(f"{gen} is missing: build the project first")
    src = folder if folder is not None else data_dir(repo_root) / name
    proc = subprocess.run([str(gen), str(src), pre, str(out), arch], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"qb-gen-gguf-tok {name} {pre} failed:\n{proc.stderr}")
    return out


def convert(run_qb, gguf: pathlib.Path, out: pathlib.Path) -> pathlib.Path:
    """quantbridge convert --writer hf-dense; returns the output's tokenizer.json."""
    run_qb("convert", "--source", gguf, "--output", out, "--writer", "hf-dense")
    tj = out / "tokenizer.json"
    if not tj.is_file():
        pytest.fail(f"{out}: convert wrote no tokenizer.json")
    return tj


class LlamaCppVocab:
    """llama.cpp's own tokenizer over the GGUF (vocab_only: no weights)."""

    def __init__(self, gguf: pathlib.Path):
        import llama_cpp

        self.llm = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)

    def ids(self, text: str, add_special: bool) -> list:
        # special=True: special-token texts in the input are matched as
        # tokens, as the tokenizers library matches added tokens.
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=True))

    def text(self, ids: list, special: bool) -> str:
        # llama_cpp.Llama.detokenize: llama_token_to_piece per id (special: control tokens shown)
        return self.llm.detokenize(ids, special=special).decode("utf-8", errors="replace")

    def close(self):
        self.llm.close()
