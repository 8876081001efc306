"""GPTQ-style and AWQ-style 4-bit quantization of a dense llama checkpoint, written in the GPTQ
(v1) and AWQ (gemm) checkpoint layouts, for the fidelity table (docs/fidelity.md). Bench code:
what matters is that the sources carry the statistics real GPTQ/AWQ checkpoints have (error
feedback through the Hessian, act-order g_idx, activation-aware scales folded into the norms,
clipped ranges), not bit-for-bit agreement with any upstream tool.

Layouts and quantizer conventions: docs/formats/gptq.md ("Packing", "Zero points",
"Act-order and g_idx") and docs/formats/awq.md ("Zero points", "GEMM layout").

Calibration: the activations entering every linear of the float model (transformers, forward
hooks) over random token sequences. Every layer is calibrated on the float model's activations
(upstream tools feed each layer the already-quantized model's): a simplification that changes
the error slightly, not the kind of error.
"""
import json
import pathlib
import shutil

import numpy as np

MAXQ = 15  # 4 bits

LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def f16(x):
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


# ---- calibration ---------------------------------------------------------------------------

def load_and_calibrate(src_dir, n_seq=8, seq_len=64, seed=3):
    """The float32 state dict of the HF checkpoint at src_dir and, per linear module name, the
    inputs it saw ([samples, K] float64) over n_seq random sequences."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(src_dir), dtype=torch.float32)
    model.eval()
    acts, hooks = {}, []
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and name.startswith("model.layers."):
            def hook(m, inp, out, name=name):
                acts.setdefault(name, []).append(inp[0].detach().reshape(-1, inp[0].shape[-1]))
            hooks.append(mod.register_forward_hook(hook))
    rng = np.random.default_rng(seed)
    vocab = model.config.vocab_size
    with torch.no_grad():
        for _ in range(n_seq):
            ids = torch.from_numpy(rng.integers(0, vocab, size=(1, seq_len)))
            model(input_ids=ids)
    for h in hooks:
        h.remove()
    sd = {k: v.detach().numpy().astype(np.float64) for k, v in model.state_dict().items()}
    x = {k: torch.cat(v).numpy().astype(np.float64) for k, v in acts.items()}
    return model.config, sd, x


# ---- group quantizers ------------------------------------------------------------------------

def group_params(w, sym, clip=1.0):
    """Scale (fp16-rounded) and zero of each row of w [N, g]: symmetric around the zero 8 with
    scale 2 max|w| / 15, or asymmetric over [min(w, 0), max(w, 0)] (docs/formats/gptq.md and
    docs/formats/awq.md, "Zero points"); clip shrinks the range (AWQ's clip search)."""
    if sym:
        amax = np.abs(w).max(axis=1) * clip
        s = f16(np.where(amax > 0, 2 * amax / MAXQ, 1.0))
        s = np.where(s > 0, s, f16(1e-7))
        z = np.full(w.shape[0], (MAXQ + 1) // 2, dtype=np.float64)
    else:
        lo = np.minimum(w.min(axis=1), 0) * clip
        hi = np.maximum(w.max(axis=1), 0) * clip
        s = f16(np.where(hi > lo, (hi - lo) / MAXQ, 1.0))
        s = np.where(s > 0, s, f16(1e-7))
        z = np.clip(np.round(-lo / s), 0, MAXQ)
    return s, z


def quant(w, s, z):
    return np.clip(np.round(w / s[:, None]) + z[:, None], 0, MAXQ)


# ---- GPTQ ------------------------------------------------------------------------------------

def gptq(W, X, gs, sym, act_order, damp=0.01):
    """GPTQ (Frantar et al. 2022): columns quantized one at a time, each one's error spread over
    the columns not yet quantized through the inverse Hessian of the layer's inputs; with
    act_order the columns go in decreasing order of their Hessian diagonal and the groups are
    consecutive in that order (docs/formats/gptq.md, "Act-order and g_idx"). Returns codes
    [N, K], scales and zeros [N, G] (group ids as in g_idx) and g_idx [K], all in the original
    column order."""
    W = W.astype(np.float64).copy()
    N, K = W.shape
    H = X.T @ X / len(X)
    dead = np.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0
    perm = np.argsort(-np.diag(H), kind="stable") if act_order else np.arange(K)
    W = W[:, perm]
    H = H[perm][:, perm]
    H += damp * np.mean(np.diag(H)) * np.eye(K)
    U = np.linalg.cholesky(np.linalg.inv(H)).T  # upper: H^-1 = U^T U
    G = (K + gs - 1) // gs
    Q = np.zeros((N, K))
    S = np.zeros((N, G))
    Z = np.zeros((N, G))
    for i in range(K):
        g = i // gs
        if i % gs == 0:
            S[:, g], Z[:, g] = group_params(W[:, i:i + gs], sym)
            if not sym:  # v1 cannot store a zero of 0 (docs/formats/gptq.md, "Zero points")
                Z[:, g] = np.maximum(Z[:, g], 1)
        q = np.clip(np.round(W[:, i] / S[:, g]) + Z[:, g], 0, MAXQ)
        Q[:, i] = q
        err = (W[:, i] - S[:, g] * (q - Z[:, g])) / U[i, i]
        W[:, i + 1:] -= np.outer(err, U[i, i + 1:])
    codes = np.zeros((N, K))
    codes[:, perm] = Q
    g_idx = np.zeros(K, dtype=np.int32)
    g_idx[perm] = np.arange(K) // gs
    return codes.astype(np.int64), S, Z.astype(np.int64), g_idx


def pack_gptq(codes, S, Z):
    """qweight [K/8, N], qzeros [G, N/8] (zero - 1, v1), scales [G, N]
    (docs/formats/gptq.md, "Packing")."""
    N, K = codes.shape
    G = S.shape[1]
    qw = np.zeros((K // 8, N), dtype=np.uint32)
    for j in range(8):
        qw |= (codes[:, j::8].T.astype(np.uint32) & 15) << (4 * j)
    zr = (Z.T - 1).astype(np.int64)  # [G, N]
    assert (zr >= 0).all()
    qz = np.zeros((G, N // 8), dtype=np.uint32)
    for j in range(8):
        qz |= (zr[:, j::8].astype(np.uint32) & 15) << (4 * j)
    return qw.view(np.int32), qz.view(np.int32), S.T.astype(np.float16)


# ---- AWQ -------------------------------------------------------------------------------------

def fake_quant(W, gs, clip=None):
    """W quantized asymmetrically per contiguous group and dequantized (clip: [N, G] range
    ratios, None for 1)."""
    out = np.empty_like(W)
    for g0 in range(0, W.shape[1], gs):
        c = 1.0 if clip is None else clip[:, g0 // gs]
        s, z = group_params(W[:, g0:g0 + gs], False, c)
        out[:, g0:g0 + gs] = s[:, None] * (quant(W[:, g0:g0 + gs], s, z) - z[:, None])
    return out


def awq_scales(Ws, X, gs, grid=20):
    """AWQ's per-input-channel scale: s = mean|x|^a, a searched on a grid for the least output
    error of the linears Ws that share the input X when quantized as Q(W s) (X / s)."""
    xm = np.abs(X).mean(axis=0)
    ref = [X @ W.T for W in Ws]
    best, best_s = None, np.ones(X.shape[1])
    for a in np.arange(grid) / grid:
        s = np.maximum(xm, 1e-8) ** a
        s = s / np.sqrt(s.max() * s.min())
        err = sum(np.sum((r - (X / s) @ fake_quant(W * s, gs).T) ** 2) for W, r in zip(Ws, ref))
        if best is None or err < best:
            best, best_s = err, s
    return best_s


def awq_clip(W, X, gs, ratios=np.arange(20, 10, -1) / 20):
    """Per row and group, the range shrink (1 .. 0.55) with the least output error on X."""
    N, K = W.shape
    G = K // gs
    best = np.full((N, G), np.inf)
    clip = np.ones((N, G))
    for r in ratios:
        D = W - fake_quant(W, gs, clip=np.full((N, G), r))
        for g in range(G):
            e = np.sum((X[:, g * gs:(g + 1) * gs] @ D[:, g * gs:(g + 1) * gs].T) ** 2, axis=0)
            better = e < best[:, g]
            best[better, g] = e[better]
            clip[better, g] = r
    return clip


def awq_quantize(W, gs, clip):
    N, K = W.shape
    G = K // gs
    codes = np.zeros((N, K), dtype=np.int64)
    S = np.zeros((N, G))
    Z = np.zeros((N, G), dtype=np.int64)
    for g in range(G):
        s, z = group_params(W[:, g * gs:(g + 1) * gs], False, clip[:, g])
        codes[:, g * gs:(g + 1) * gs] = quant(W[:, g * gs:(g + 1) * gs], s, z)
        S[:, g], Z[:, g] = s, z
    return codes, S, Z


# nibble of column n % 8 in its word (docs/formats/awq.md, "GEMM layout")
AWQ_SHIFT = np.array([0, 4, 1, 5, 2, 6, 3, 7])


def pack_awq(codes, S, Z):
    """qweight [K, N/8], qzeros [G, N/8] (zeros as they are), scales [G, N]."""
    N, K = codes.shape
    qw = np.zeros((K, N // 8), dtype=np.uint32)
    qz = np.zeros((S.shape[1], N // 8), dtype=np.uint32)
    for c in range(8):
        qw |= (codes[c::8, :].T.astype(np.uint32) & 15) << (4 * int(AWQ_SHIFT[c]))
        qz |= (Z[c::8, :].T.astype(np.uint32) & 15) << (4 * int(AWQ_SHIFT[c]))
    return qw.view(np.int32), qz.view(np.int32), S.T.astype(np.float16)


# ---- checkpoints -----------------------------------------------------------------------------

def _write(out, src_dir, tensors, qc):
    from safetensors.numpy import save_file

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = json.loads((pathlib.Path(src_dir) / "config.json").read_text())
    cfg["quantization_config"] = qc
    cfg["torch_dtype"] = "float16"
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (pathlib.Path(src_dir) / f).exists():
            shutil.copy(pathlib.Path(src_dir) / f, out / f)
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
              str(out / "model.safetensors"))
    return out


def _dense(sd, skip):
    return {k: v.astype(np.float16) for k, v in sd.items()
            if not any(k == f"{m}.weight" for m in skip) and "rotary" not in k}


def write_gptq(out, src_dir, cal, gs, sym, act_order):
    cfg, sd, X = cal
    mods = [f"model.layers.{L}.{p}" for L in range(cfg.num_hidden_layers) for p in LINEARS]
    t = _dense(sd, mods)
    for m in mods:
        codes, S, Z, g_idx = gptq(sd[f"{m}.weight"], X[m], gs, sym, act_order)
        t[f"{m}.qweight"], t[f"{m}.qzeros"], t[f"{m}.scales"] = pack_gptq(codes, S, Z)
        t[f"{m}.g_idx"] = g_idx
    qc = {"quant_method": "gptq", "bits": 4, "group_size": gs, "desc_act": bool(act_order),
          "sym": bool(sym), "static_groups": False, "checkpoint_format": "gptq",
          "true_sequential": True}
    return _write(out, src_dir, t, qc)


def write_awq(out, src_dir, cal, gs):
    cfg, sd, X = cal
    sd = dict(sd)
    X = dict(X)
    for L in range(cfg.num_hidden_layers):
        p = f"model.layers.{L}."
        # q/k/v and gate/up: the scale folds into the RMSNorm before them.
        for norm, group in (("input_layernorm", ("self_attn.q_proj", "self_attn.k_proj",
                                                 "self_attn.v_proj")),
                            ("post_attention_layernorm", ("mlp.gate_proj", "mlp.up_proj"))):
            xin = X[p + group[0]]
            s = awq_scales([sd[p + m + ".weight"] for m in group], xin, gs)
            sd[p + norm + ".weight"] = sd[p + norm + ".weight"] / s
            for m in group:
                sd[p + m + ".weight"] = sd[p + m + ".weight"] * s
                X[p + m] = xin / s
        # down_proj: into the rows of up_proj (its input is silu(gate) * up).
        s = awq_scales([sd[p + "mlp.down_proj.weight"]], X[p + "mlp.down_proj"], gs)
        sd[p + "mlp.up_proj.weight"] = sd[p + "mlp.up_proj.weight"] / s[:, None]
        sd[p + "mlp.down_proj.weight"] = sd[p + "mlp.down_proj.weight"] * s
        X[p + "mlp.down_proj"] = X[p + "mlp.down_proj"] / s
        # o_proj is left unscaled: with grouped KV heads v_proj's rows do not map one to one
        # onto o_proj's inputs, the case where AWQ skips that pair.
    mods = [f"model.layers.{L}.{m}" for L in range(cfg.num_hidden_layers) for m in LINEARS]
    t = _dense(sd, mods)
    for m in mods:
        W = sd[f"{m}.weight"]
        # clipping is searched for every linear but q/k (their error is seen through softmax)
        clip = (np.ones((W.shape[0], W.shape[1] // gs)) if m.endswith(("q_proj", "k_proj"))
                else awq_clip(W, X[m][:256], gs))
        codes, S, Z = awq_quantize(W, gs, clip)
        t[f"{m}.qweight"], t[f"{m}.qzeros"], t[f"{m}.scales"] = pack_awq(codes, S, Z)
    qc = {"quant_method": "awq", "zero_point": True, "group_size": gs, "bits": 4,
          "version": "gemm", "modules_to_not_convert": None}
    return _write(out, src_dir, t, qc)
