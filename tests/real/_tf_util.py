"""transformers on our hf-dense output of the real Gemma 3 model, and two switches that make it
compute what ggml's CPU backend computes differently (docs/real-models.md, "llama.cpp"):

- ggml's GELU: GGML_GELU_FP16 is defined in ggml-cpu, so ggml_vec_geglu_f32 reads the tanh GELU
  from a 65,536-entry table indexed by the input rounded to fp16, and the value it reads is an
  fp16 (ggml_table_gelu_f16); inputs at or below -10 give 0, at or above 10 the input itself.
- ggml's quantized products: a weight of a quantized type is multiplied by the activations
  quantized to the type's vec_dot_type first: Q8_0 (blocks of 32, scale amax/127 stored in fp16,
  codes rint(x * 127/amax)) for Q4_0, Q5_0, Q8_0 and IQ4_NL; Q8_K (blocks of 256, float scale
  max/-127 with the sign of the largest element, codes rint(x / scale) at most 127) for the
  K-quants and IQ4_XS (quantize_row_q8_0 on x86, quantize_row_q8_K_ref).

Neither switch claims to reproduce llama.cpp's bits: each measures how large an effect the
difference has on this model and text, which is what the tier's bounds against llama.cpp are
stated from.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

torch.set_num_threads(2)

# ggml type name -> the activation quantizer its vec_dot_type implies (see the docstring).
Q8_0_TYPES = {"Q4_0", "Q5_0", "Q8_0", "IQ4_NL"}
Q8_K_TYPES = {"Q4_K", "Q5_K", "Q6_K", "IQ4_XS"}

# Hugging Face projection name -> GGUF tensor name part (gguf-py's TensorNameMap for gemma3).
_PROJ = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
         "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


def load(d):
    """Gemma3ForCausalLM from our hf-dense directory, float32, eager attention, offline."""
    m = AutoModelForCausalLM.from_pretrained(str(d), local_files_only=True, dtype=torch.float32,
                                             attn_implementation="eager")
    m.eval()
    return m


def logits(model, ids) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor([list(ids)])).logits[0].numpy().astype(np.float32)


def _gelu_fp16_table(x: torch.Tensor) -> torch.Tensor:
    xh = x.to(torch.float16).to(torch.float32)
    y = 0.5 * xh * (1.0 + torch.tanh(0.7978845608028654 * xh * (1.0 + 0.044715 * xh * xh)))
    y = y.to(torch.float16).to(torch.float32)
    y = torch.where(x <= -10.0, torch.zeros_like(x), y)
    return torch.where(x >= 10.0, x, y)


class _GgmlGelu(torch.nn.Module):
    def forward(self, x):
        return _gelu_fp16_table(x)


def use_ggml_gelu(model):
    """Every MLP's activation becomes ggml's fp16-table GELU (irreversible for this model)."""
    for layer in model.model.layers:
        layer.mlp.act_fn = _GgmlGelu()


def _q8_0(x: torch.Tensor) -> torch.Tensor:
    v = x.reshape(-1, 32)
    amax = v.abs().amax(-1, keepdim=True)
    d = (amax / 127.0).to(torch.float16).to(torch.float32)
    inv = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    return (torch.round(v * inv) * d).reshape(x.shape)


def _q8_k(x: torch.Tensor) -> torch.Tensor:
    v = x.reshape(-1, 256)
    mx = torch.gather(v, -1, v.abs().argmax(-1, keepdim=True))
    iscale = torch.where(mx != 0, -127.0 / mx, torch.zeros_like(mx))
    q = torch.clamp(torch.round(iscale * v), max=127.0)
    d = torch.where(mx != 0, 1.0 / iscale, torch.zeros_like(mx))
    return (q * d).reshape(x.shape)


def use_ggml_activation_rounding(model, gguf_types: dict):
    """Each Linear's input is rounded as ggml rounds it for that weight's GGUF type
    (`gguf_types`: GGUF tensor name -> ggml type name); the tied head uses token_embd's type.
    Returns the hook handles."""
    handles = []
    for name, mod in model.named_modules():
        if not isinstance(mod, torch.nn.Linear):
            continue
        if name == "lm_head":
            g = "token_embd.weight"
        else:
            parts = name.split(".")  # model.layers.N.{self_attn,mlp}.X_proj
            g = f"blk.{parts[2]}.{_PROJ[parts[-1]]}.weight"
        t = gguf_types[g]
        if t in Q8_0_TYPES:
            f = _q8_0
        elif t in Q8_K_TYPES:
            f = _q8_k
        else:
            raise AssertionError(f"{g}: no activation rounding known for ggml type {t}")
        handles.append(mod.register_forward_pre_hook(lambda m, inp, f=f: (f(inp[0]),)))
    return handles


def perturb_embedding_one_ulp(model, seed: int = 0):
    """Moves every element of the embedding table one float32 ulp up or down at random: a change
    of the size of one rounding, to measure how much rounding noise the computation amplifies."""
    rng = np.random.default_rng(seed)
    a = model.model.embed_tokens.weight.data.numpy()
    up = rng.random(a.shape) < 0.5
    a[:] = np.where(up, np.nextafter(a, np.float32(np.inf)), np.nextafter(a, np.float32(-np.inf)))
