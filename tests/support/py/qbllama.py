"""llama.cpp driven through llama-cpp-python's low-level API, for the Python tiers (tests/interop,
tests/real): its tokenizer, the logits of every position of one batch, and its quantizer.
llama.cpp's log goes nowhere (a test prints what it measured, not llama.cpp's loading chatter)."""
import ctypes
import pathlib

import numpy as np

import llama_cpp

# ggml.h `enum ggml_type` values the tiers use.
GGML_F32 = 0
GGML_Q8_0 = 8

# llama_log_set keeps the pointer: the callback object must outlive every later llama.cpp call.
_LOG_CB = llama_cpp.llama_log_callback(lambda level, text, user: None)
_BACKEND = False


def _llama_init():
    global _BACKEND
    if not _BACKEND:
        llama_cpp.llama_log_set(_LOG_CB, None)
        llama_cpp.llama_backend_init()
        _BACKEND = True


def _load_model(path: pathlib.Path, vocab_only: bool = False):
    _llama_init()
    mp = llama_cpp.llama_model_default_params()
    mp.n_gpu_layers = 0
    mp.vocab_only = vocab_only
    # No "extra buffer types": llama.cpp would otherwise repack Q4_0/Q8_0/... weights for its AMX
    # or interleaved CPU kernels. In a llama.cpp built natively on the build machines (Xeons whose
    # /proc/cpuinfo lists amx_tile) the AMX matmul, ggml_backend_amx_mul_mat, dies with SIGSEGV
    # at its first tile instruction; tests/support/pytier.sh builds the tiers' llama.cpp without
    # AMX, and this keeps any other environment (QB_INTEROP_VENV) off it too. Without extra
    # buffers every product runs ggml's ordinary vec_dot kernels, whatever the build.
    mp.use_extra_bufts = False
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
    if not model:
        raise RuntimeError(f"llama.cpp could not load {path}")
    return model


def llama_tokenize(path: pathlib.Path, text: str) -> list[int]:
    """llama.cpp's own tokenizer on `text` (llama_tokenize with the vocabulary's special tokens
    added, special-token text not parsed). Raises when llama.cpp refuses the file or the text."""
    model = _load_model(path, vocab_only=True)
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        raw = text.encode()
        buf = (llama_cpp.llama_token * (len(raw) + 16))()
        n = llama_cpp.llama_tokenize(vocab, raw, len(raw), buf, len(buf), True, False)
        if n <= 0:
            raise RuntimeError(f"llama_tokenize returned {n}")
        return list(buf[:n])
    finally:
        llama_cpp.llama_model_free(model)


def llama_logits(path: pathlib.Path, ids: list[int], threads: int = 2) -> np.ndarray:
    """Logits of every position from llama.cpp's CPU backend: one batch (positions 0..n-1, one
    sequence), F32 K and V caches, flash attention off (ggml's plain soft_max and F32 products),
    no extra buffer types, `threads` threads. Returns float32 [len(ids), n_vocab]; raises with
    llama.cpp's status when it refuses the model or the batch."""
    model = _load_model(path)
    ctx = batch = None
    n = len(ids)
    try:
        cp = llama_cpp.llama_context_default_params()
        n_ctx = max(64, (n + 63) // 64 * 64)
        cp.n_ctx = cp.n_batch = cp.n_ubatch = n_ctx
        cp.n_threads = cp.n_threads_batch = threads
        cp.type_k = cp.type_v = GGML_F32
        cp.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        ctx = llama_cpp.llama_init_from_model(model, cp)
        if not ctx:
            raise RuntimeError(f"llama.cpp could not make a context for {path}")
        batch = llama_cpp.llama_batch_init(n, 0, 1)
        for i, t in enumerate(ids):
            batch.token[i] = t
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = True
        batch.n_tokens = n
        rc = llama_cpp.llama_decode(ctx, batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode on {path} returned {rc}")
        n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
        p = llama_cpp.llama_get_logits(ctx)
        return np.ctypeslib.as_array(p, shape=(n * n_vocab,)).reshape(n, n_vocab).copy()
    finally:
        if batch is not None:
            llama_cpp.llama_batch_free(batch)
        if ctx:
            llama_cpp.llama_free(ctx)
        llama_cpp.llama_model_free(model)


# llama.h `enum llama_ftype` values the real-model tier uses.
FTYPE = {"F32": 0, "Q4_0": 2, "Q8_0": 7, "Q6_K": 18, "IQ4_XS": 30}


def llama_quantize(src: pathlib.Path, dst: pathlib.Path, ftype: int, pure: bool,
                   embd_type: int | None = None):
    """llama.cpp's own quantizer (llama_model_quantize), allowed to requantize a quantized
    source. `pure`: every 2-D weight gets the file type's default type (where the row length
    admits it, see docs/real-models.md); `embd_type`: a tensor-type override for token_embd
    (what `llama-quantize --tensor-type token_embd=...` sets)."""
    _llama_init()
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = ftype
    p.allow_requantize = True
    p.pure = pure
    p.nthread = 2
    keep = None
    if embd_type is not None:
        tt = (llama_cpp.llama_model_tensor_override * 2)()
        tt[0].pattern = b"token_embd"
        tt[0].type = embd_type
        tt[1].pattern = None  # the list ends at a null pattern
        p.tt_overrides = ctypes.cast(tt, ctypes.POINTER(llama_cpp.llama_model_tensor_override))
        keep = tt
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p))
    del keep
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src.name} -> ftype {ftype}) returned {rc}")


