"""Fixtures of the real-model tier (tests/real/run.sh runs pytest here): the shared tier fixtures
(tests/support/py/qbtier.py), the published checkpoints that fetch_models.py put in
$QB_REAL_CACHE (default $QB_BUILD_DIR/real-cache), and what several tests share within one
session: the token ids of the tier's text, quantbridge's conversions and forward runs of the
real model, and the logits of llama.cpp and transformers (docs/real-models.md)."""
import os
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support" / "py"))

from qbtier import *  # noqa: E402,F401,F403  (the fixtures)
from qbtier import BUILD_DIR  # noqa: E402

import _real_util as U  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
REAL_CACHE = pathlib.Path(os.environ.get("QB_REAL_CACHE", BUILD_DIR / "real-cache")).resolve()
TEXT_FILE = HERE / "text.txt"


@pytest.fixture(scope="session")
def real_cache() -> pathlib.Path:
    return REAL_CACHE


@pytest.fixture(scope="session")
def gemma_gguf(real_cache) -> pathlib.Path:
    """The published Gemma 3 270M GGUF Q4_K_M (tests/real/models.txt), as its publisher made it."""
    p = real_cache / "gemma-3-270m-q4_k_m.gguf"
    if not p.is_file():
        pytest.fail(f"{p} is missing: tests/real/run.sh fetches it (fetch_models.py)")
    return p


@pytest.fixture(scope="session")
def text_file() -> pathlib.Path:
    """The tier's own English text (tests/real/text.txt, 620 tokens in Gemma's vocabulary: more
    than the 512-token sliding window of Gemma 3's local layers)."""
    return TEXT_FILE


@pytest.fixture(scope="session")
def text_ids(gemma_gguf, text_file) -> list:
    """The text's token ids by llama.cpp's own tokenizer: every engine gets these ids, so the
    logit comparisons do not depend on quantbridge's encoder (tests/real/test_real_tokenizer.py
    compares that one)."""
    ids = U.llama_tokenize(gemma_gguf, text_file.read_text())
    assert len(ids) > 512, f"the text has {len(ids)} tokens; it must pass the sliding window"
    return ids


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("real")


class Made:
    """quantbridge runs shared by the tests of one session: each conversion, forward run and
    verify report is made once, on first use, under `work`."""

    def __init__(self, run_qb, work: pathlib.Path):
        self.run_qb = run_qb
        self.work = work
        self.memo = {}

    def _once(self, key, make):
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def convert(self, src: pathlib.Path, name: str, *args) -> pathlib.Path:
        """`quantbridge convert --source src --output work/name ARGS`; the output directory."""
        def make():
            out = self.work / name
            if out.exists():
                shutil.rmtree(out)
            self.run_qb("convert", "--source", src, "--output", out, *args)
            return out
        return self._once(("convert", name), make)

    def forward(self, model: pathlib.Path, name: str, ids) -> "object":
        """`quantbridge forward --model model --tokens ids` (default options); the logits."""
        def make():
            from safetensors.numpy import load_file
            f = self.work / f"{name}-logits.safetensors"
            self.run_qb("forward", "--model", model, "--tokens", ",".join(map(str, ids)),
                        "--output", f)
            t = load_file(str(f))
            assert set(t) == {"logits"}, f"{f}: tensors {sorted(t)}, want only logits"
            assert t["logits"].shape[0] == len(ids), f"{f}: logits {t['logits'].shape}"
            return t["logits"]
        return self._once(("forward", name), make)

    def drop(self, name: str):
        """Deletes the output of `convert(..., name, ...)` once no later test needs it (the
        tier writes about 1 GB per f32 output)."""
        out = self.memo.pop(("convert", name), None)
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)

    def verify(self, src: pathlib.Path, conv: pathlib.Path, name: str, *args) -> dict:
        """`quantbridge verify --source src --converted conv --json ARGS`: exit status 0 required
        (every tensor passes its rule); the JSON report."""
        def make():
            import json
            proc = self.run_qb("verify", "--source", src, "--converted", conv, "--json", *args,
                               ok=False)
            assert proc.returncode == 0, (
                f"verify {src.name} vs {conv.name} exited {proc.returncode}:\n"
                f"{proc.stderr[-4000:]}")
            return json.loads(proc.stdout)
        return self._once(("verify", name), make)


@pytest.fixture(scope="session")
def made(run_qb, work) -> Made:
    return Made(run_qb, work)


# The real model's conversions and forward runs, shared by the tests that need them.

@pytest.fixture(scope="session")
def hf_f32(made, gemma_gguf) -> pathlib.Path:
    """hf-dense at float32: the dequantized values, nothing rounded."""
    return made.convert(gemma_gguf, "gemma-hf-f32", "--writer", "hf-dense", "--option", "dtype=f32")


@pytest.fixture(scope="session")
def hf_default(made, gemma_gguf) -> pathlib.Path:
    """hf-dense with the default options (f16)."""
    return made.convert(gemma_gguf, "gemma-hf-default", "--writer", "hf-dense")


@pytest.fixture(scope="session")
def w4a16_default(made, gemma_gguf) -> pathlib.Path:
    """The default writer (sm86-w4a16) with the default options."""
    return made.convert(gemma_gguf, "gemma-w4a16")


@pytest.fixture(scope="session")
def fwd_source(made, gemma_gguf, text_ids):
    """quantbridge forward on the published GGUF, on the text's ids."""
    return made.forward(gemma_gguf, "gemma-source", text_ids)


@pytest.fixture(scope="session")
def gemma_reader(gemma_gguf):
    """gguf-py's GGUFReader of the published file (opening one parses the 262,144-entry
    vocabulary: about 10 s, so once per session)."""
    return U.gguf_reader(gemma_gguf)


@pytest.fixture(scope="session")
def gemma_types(gemma_reader) -> dict:
    """GGUF tensor name -> ggml type name of the published file, by gguf-py."""
    return {t.name: t.tensor_type.name for t in gemma_reader.tensors}


@pytest.fixture(scope="session")
def f32_gguf(work, gemma_gguf) -> pathlib.Path:
    """The real weights as an all-F32 GGUF, dequantized by llama.cpp's own quantizer
    (llama_model_quantize, file type ALL_F32, requantizing allowed) from the published file."""
    out = work / "gemma-f32.gguf"
    if not out.exists():
        U.make_f32_gguf(gemma_gguf, out)
    return out


@pytest.fixture(scope="session")
def tf_logits(hf_f32, text_ids):
    """transformers' logits (Gemma3ForCausalLM, float32, eager attention) on our hf-dense f32
    output, on the text's ids."""
    import _tf_util as T
    return T.logits(T.load(hf_f32), text_ids)
