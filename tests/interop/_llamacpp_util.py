"""Helpers private to test_llamacpp_quant.py: a tiny random llama GGUF written by gguf-py,
llama.cpp's own quantizer, and two independent dequantization oracles (gguf-py's numpy code and
ggml's C `to_float` reached through the libraries llama-cpp-python ships)."""
import ctypes
import json
import pathlib

import numpy as np

import gguf
import llama_cpp

# The tiny model. Every row length (ne[0]) is a multiple of 256 so that no K/IQ/TQ type falls
# back to a 32-element type (llama.cpp `tensor_type_fallback`), and the K heads differ from the
# Q heads so that undoing the llama Q/K permutation with the wrong head count would show.
N_EMBD = 256
N_HEAD = 4
N_HEAD_KV = 2
HEAD_DIM = N_EMBD // N_HEAD
N_FF = 512
N_LAYER = 2
N_VOCAB = 256


def tensor_shapes():
    """GGUF tensor name -> numpy shape (rows, row length), i.e. ne reversed."""
    shapes = {
        "token_embd.weight": (N_VOCAB, N_EMBD),
        "output_norm.weight": (N_EMBD,),
        "output.weight": (N_VOCAB, N_EMBD),
    }
    for i in range(N_LAYER):
        b = f"blk.{i}."
        shapes.update({
            b + "attn_norm.weight": (N_EMBD,),
            b + "attn_q.weight": (N_HEAD * HEAD_DIM, N_EMBD),
            b + "attn_k.weight": (N_HEAD_KV * HEAD_DIM, N_EMBD),
            b + "attn_v.weight": (N_HEAD_KV * HEAD_DIM, N_EMBD),
            b + "attn_output.weight": (N_EMBD, N_HEAD * HEAD_DIM),
            b + "ffn_norm.weight": (N_EMBD,),
            b + "ffn_gate.weight": (N_FF, N_EMBD),
            b + "ffn_up.weight": (N_FF, N_EMBD),
            b + "ffn_down.weight": (N_EMBD, N_FF),
        })
    return shapes


def write_f32_gguf(path: pathlib.Path, seed: int = 1234):
    """Writes the tiny llama model as an all-F32 GGUF with gguf-py; returns {name: array}."""
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("quantbridge-interop-tiny")
    w.add_context_length(256)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # A byte-level SentencePiece-style vocabulary so llama.cpp's loader finds a complete model.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(N_VOCAB - 3)]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * N_VOCAB)
    w.add_token_types([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
                      + [gguf.TokenType.BYTE] * (N_VOCAB - 3))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    values = {}
    for name, shape in tensor_shapes().items():
        if len(shape) == 1:
            a = (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            a = (0.05 * rng.standard_normal(shape)).astype(np.float32)
        values[name] = a
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return values


def importance_matrix(seed: int = 99):
    """llama.cpp importance data for every quantizable tensor: one positive weight per column
    (`imatrix size == ne[0] * ne[2]`, llama-quant.cpp). Returns (ctypes array, keep-alive list)."""
    rng = np.random.default_rng(seed)
    entries, keep = [], []
    for name, shape in tensor_shapes().items():
        if len(shape) != 2:
            continue
        data = rng.uniform(0.25, 4.0, size=shape[1]).astype(np.float32)
        cname = name.encode()
        keep += [data, cname]
        entries.append((cname, data))
    arr = (llama_cpp.llama_model_imatrix_data * (len(entries) + 1))()
    for i, (cname, data) in enumerate(entries):
        arr[i].name = cname
        arr[i].data = data.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        arr[i].size = data.size
    arr[len(entries)].name = None  # the list ends at a null name
    return arr, keep


def quantize(src: pathlib.Path, dst: pathlib.Path, ftype: int, with_imatrix: bool,
             override_type: int | None = None):
    """llama.cpp's own quantizer (`llama_model_quantize`), every 2-D weight to the ftype's
    default type (`pure`), or to ggml type `override_type` through a tensor-type override
    (`tt_overrides`, what `llama-quantize --tensor-type` sets) matching every weight.
    Raises with llama.cpp's status on failure."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.pure = True
    params.nthread = 2
    keep = None
    if override_type is not None:
        tt = (llama_cpp.llama_model_tensor_override * 2)()
        tt[0].pattern = b"weight"
        tt[0].type = override_type
        tt[1].pattern = None  # the list ends at a null pattern
        params.tt_overrides = ctypes.cast(tt, ctypes.POINTER(llama_cpp.llama_model_tensor_override))
        keep = [tt]
    if with_imatrix:
        arr, imx = importance_matrix()
        params.imatrix = ctypes.cast(arr, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
        keep = (keep or []) + imx + [arr]
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    del keep
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src.name} -> ftype {ftype}) returned {rc}")


class _Traits(ctypes.Structure):
    # struct ggml_type_traits (ggml.h)
    _fields_ = [("type_name", ctypes.c_char_p), ("blck_size", ctypes.c_int64),
                ("blck_size_interleave", ctypes.c_int64), ("type_size", ctypes.c_size_t),
                ("is_quantized", ctypes.c_bool), ("to_float", ctypes.c_void_p),
                ("from_float_ref", ctypes.c_void_p)]


class _GgufInitParams(ctypes.Structure):
    _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]


_TO_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64)


def _libggml():
    import llama_cpp._ggml as g

    lib = g.libggml  # llama-cpp-python's own handle; dlsym also sees ggml-base
    lib.ggml_get_type_traits.restype = ctypes.POINTER(_Traits)
    lib.ggml_get_type_traits.argtypes = [ctypes.c_int]
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, _GgufInitParams]
    lib.gguf_free.argtypes = [ctypes.c_void_p]
    lib.gguf_get_n_tensors.restype = ctypes.c_int64
    lib.gguf_get_n_tensors.argtypes = [ctypes.c_void_p]
    lib.gguf_get_tensor_name.restype = ctypes.c_char_p
    lib.gguf_get_tensor_name.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_get_tensor_type.restype = ctypes.c_int
    lib.gguf_get_tensor_type.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_get_tensor_offset.restype = ctypes.c_size_t
    lib.gguf_get_tensor_offset.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_get_tensor_size.restype = ctypes.c_size_t
    lib.gguf_get_tensor_size.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.gguf_get_data_offset.restype = ctypes.c_size_t
    lib.gguf_get_data_offset.argtypes = [ctypes.c_void_p]
    return lib


def ggml_read(path: pathlib.Path):
    """Oracle B: ggml's own GGUF parser and `type_traits[type].to_float` (the reference
    `dequantize_row_*` of ggml-quants.c). Returns {name: (ggml type id, float32 array)}."""
    lib = _libggml()
    ctx = lib.gguf_init_from_file(str(path).encode(), _GgufInitParams(True, None))
    if not ctx:
        raise RuntimeError(f"ggml's gguf_init_from_file refused {path}")
    raw = path.read_bytes()
    shapes = tensor_shapes()
    out = {}
    try:
        base = lib.gguf_get_data_offset(ctx)
        for i in range(lib.gguf_get_n_tensors(ctx)):
            name = lib.gguf_get_tensor_name(ctx, i).decode()
            t = lib.gguf_get_tensor_type(ctx, i)
            off = base + lib.gguf_get_tensor_offset(ctx, i)
            size = lib.gguf_get_tensor_size(ctx, i)
            n = int(np.prod(shapes[name]))
            buf = ctypes.create_string_buffer(raw[off:off + size], size)
            y = np.empty(n, dtype=np.float32)
            if t == 0:  # F32 has no to_float
                y[:] = np.frombuffer(buf.raw, dtype=np.float32)
            else:
                fn = lib.ggml_get_type_traits(t).contents.to_float
                if not fn:
                    raise RuntimeError(f"ggml has no to_float for type {t} ({name})")
                _TO_FLOAT(fn)(ctypes.cast(buf, ctypes.c_void_p),
                              y.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), n)
            out[name] = (t, y.reshape(shapes[name]))
    finally:
        lib.gguf_free(ctx)
    return out


def ggufpy_read(path: pathlib.Path):
    """Oracle A: gguf-py's GGUFReader and `gguf.quants.dequantize`.
    Returns {name: (ggml type id, float32 array)}; raises NotImplementedError for a type gguf-py
    cannot dequantize."""
    r = gguf.GGUFReader(str(path))
    out = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type)
        out[t.name] = (int(t.tensor_type), np.asarray(a, dtype=np.float32).reshape(tensor_shapes()[t.name]))
    return out


def undo_llama_qk_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """The row order GGUF llama files use for Q/K (adjacent rope pairs) back to Hugging Face's
    rotate-half order: HF_row[h*D + j*(D/2) + i] = GGUF_row[h*D + 2i + j]
    (docs/formats/gguf.md, "Q/K permutation")."""
    rows, k = w.shape
    d = rows // n_head
    return w.reshape(n_head, d // 2, 2, k).swapaxes(1, 2).reshape(rows, k)


def hf_name_map():
    """Hugging Face name -> GGUF name for the tiny model, from gguf-py's own TensorNameMap."""
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, N_LAYER)
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    for i in range(N_LAYER):
        p = f"model.layers.{i}."
        names += [p + s for s in (
            "input_layernorm.weight", "post_attention_layernorm.weight",
            "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
            "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
            "mlp.down_proj.weight")]
    out = {}
    for n in names:
        g = tmap.get_name(n, try_suffixes=(".weight",))
        assert g is not None, f"gguf-py has no GGUF name for {n}"
        out[n] = g
    return out


def oracle_in_hf_order(gguf_name: str, values: np.ndarray) -> np.ndarray:
    """The one transform between a GGUF llama tensor and its Hugging Face tensor: the Q/K
    row permutation (Q with head_count, K with head_count_kv)."""
    if gguf_name.endswith("attn_q.weight"):
        return undo_llama_qk_permute(values, N_HEAD)
    if gguf_name.endswith("attn_k.weight"):
        return undo_llama_qk_permute(values, N_HEAD_KV)
    return values


def read_safetensors_dir(d: pathlib.Path):
    """All tensors of a safetensors directory (single file or sharded) as numpy arrays."""
    from safetensors.numpy import load_file
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        for k, v in load_file(str(f)).items():
            assert k not in out, f"{k} appears in two shards of {d}"
            out[k] = v
    return out


def read_manifest(d: pathlib.Path):
    return json.loads((d / "manifest.json").read_text())
