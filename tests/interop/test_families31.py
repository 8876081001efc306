"""Interop (issue 31): GLM-4.5/4.6 (glm4_moe), MiniMax-M2 (minimax_m2) and DeepSeek-V3.2
(deepseek_v32) against transformers 5.24's own classes.

Each tiny model is built by transformers (fixed seed, float32, eager attention), its weights
spread out (the init's 0.02 leaves every logit near 0), and saved with save_pretrained (the
checkpoint names the families publish: per-expert tensors, MiniMax-M2 under Mixtral's
block_sparse_moe names). Then:

1  hf-dense: quantbridge converts the source to hf-dense f32; transformers loads that with no
   missing, unexpected or mismatched keys and its state dict equals the source's bit for bit
   (the routed experts compared slice by slice of transformers' fused gate_up_proj / down_proj,
   gate rows first as its forward's chunk(2) reads them); the router biases stay float32.
2  forward: `quantbridge forward` on the source against transformers' eager fp32 logits on
   TOKENS, max |diff| at most 1e-4 of the largest logit (FWD_REL).
3  W4A16: the sm86-w4a16 writer takes every tensor kind (its layout, docs/w4a16-format.md);
   `quantbridge verify` (tensors and the model check, which runs the CPU forward pass on the
   W4A16 output) passes with a model verdict that is no defect; and `quantbridge forward` on the
   W4A16 output agrees with transformers running the W4A16 weights decoded back to f32 (the
   sm86-w4a16 reader to hf-dense): same weights, only the W4A16 linears' fp16 activations
   differ, so W4_REL = 2e-2 of the logit scale (fp16 keeps 11 bits: ~5e-4 per product,
   chained over two layers) and top-1 on at least 90% of the positions.

Variants: GLM with attention biases and q/k norms, and without q/k norms and with groups;
MiniMax-M2 with partial rotation (rotary_dim); DeepSeek-V3.2 with index_topk at least the
sequence length (the indexer keeps every visible key: dense MLA) and smaller (it drops keys;
the test checks that the logits then differ from the dense model's, so the sparse path is
exercised, not assumed).

Block FP8 (test_block_fp8_family): MiniMax-M2 and DeepSeek-V3.2 as their FP8 checkpoints are
published (docs/formats/fp8.md), quantized here in numpy; hf-dense f32 equals the numpy
dequantization bit for bit, forward matches transformers on the dequantized model (FWD_REL), and
W4A16 of the FP8 checkpoint passes verify.
"""
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

import _hf_util as U  # noqa: E402

FWD_REL = 1e-4
W4_REL = 2e-2
W4_MIN_TOP1 = 0.9
VOCAB = 320
TOKENS = [1, 45, 260, 3, 120, 287, 77, 200, 261, 9, 150, 270, 33, 250, 99, 281]


def _glm(**kw):
    from transformers import Glm4MoeConfig, Glm4MoeForCausalLM
    base = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=3,
                first_k_dense_replace=1, routed_scaling_factor=2.5, max_position_embeddings=256,
                num_mtp_layers=0)
    base.update(kw)
    return Glm4MoeForCausalLM(Glm4MoeConfig(**base))


def _minimax(**kw):
    from transformers import MiniMaxM2Config, MiniMaxM2ForCausalLM
    base = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=6,
                num_experts_per_tok=2, rotary_dim=8, max_position_embeddings=256,
                bos_token_id=1, eos_token_id=2)
    base.update(kw)
    return MiniMaxM2ForCausalLM(MiniMaxM2Config(**base))


def _dsv32(**kw):
    from transformers import DeepseekV32Config, DeepseekV32ForCausalLM
    base = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=3, n_group=4,
                topk_group=2, kv_lora_rank=32, q_lora_rank=32, qk_nope_head_dim=16,
                qk_rope_head_dim=16, v_head_dim=24, first_k_dense_replace=1,
                index_head_dim=32, index_n_heads=8, max_position_embeddings=256)
    base.update(kw)
    return DeepseekV32ForCausalLM(DeepseekV32Config(**base))


MODELS = {
    "glm4_moe_bias_qknorm": lambda: _glm(attention_bias=True, use_qk_norm=True),
    "glm4_moe_groups_noqknorm": lambda: _glm(attention_bias=True, use_qk_norm=False, n_group=4,
                                             topk_group=2, rope_parameters={
                                                 "rope_type": "default", "rope_theta": 5000.0,
                                                 "partial_rotary_factor": 0.25}),
    "minimax_m2": lambda: _minimax(),
    "deepseek_v32_dense": lambda: _dsv32(index_topk=len(TOKENS)),
    "deepseek_v32_sparse": lambda: _dsv32(index_topk=5, rope_parameters={
        "rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
        "original_max_position_embeddings": 64, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 0.8}),
}


def _spread(model, seed):
    """Weights of scale 0.1, norms around 1, router biases that change choices."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.normal_(0.0, 0.1)
            if "norm" in n and n.endswith("weight"):
                p.add_(1.0)
            if "router" in n or n.endswith("gate.weight"):
                p.mul_(3.0)  # routers without near-ties
        for n, b in model.named_buffers():
            if n.endswith("e_score_correction_bias"):
                b.normal_(0.0, 0.3)


_CACHE = {}


def build(name, tmp_path_factory):
    """(source dir, transformers' logits) of MODELS[name], built once per session."""
    if name in _CACHE:
        return _CACHE[name]
    torch.manual_seed(11)
    model = MODELS[name]()
    model.config._attn_implementation = "eager"
    model = model.float().eval()
    _spread(model, 11)
    out = tmp_path_factory.mktemp(name) / "src"
    model.save_pretrained(str(out))
    with torch.no_grad():
        ref = model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    _CACHE[name] = (out, ref, model)
    return _CACHE[name]


def qb_logits(run_qb, model_dir, out_file):
    run_qb("forward", "--model", model_dir, "--tokens", ",".join(map(str, TOKENS)), "--output",
           out_file, "--threads", "2")
    t = load_file(str(out_file))
    assert set(t) == {"logits"} and t["logits"].shape == (len(TOKENS), VOCAB)
    return t["logits"]


def compare(name, got, ref, rel, min_top1=1.0):
    scale = float(np.abs(ref).max())
    assert scale > 0.1, f"{name}: reference logits ~0 (max {scale}): the test would prove nothing"
    assert np.isfinite(got).all(), f"{name}: non-finite logits"
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    top1 = float((got.argmax(-1) == ref.argmax(-1)).mean())
    fig = {"max_abs": float(diff.max()), "rel_to_scale": float(diff.max()) / scale,
           "scale": scale, "top1": top1}
    print(f"\n{name}: {fig}")
    assert fig["rel_to_scale"] <= rel, \
        f"{name}: max |diff| {fig['max_abs']:.3g} is {fig['rel_to_scale']:.3g} of the logit " \
        f"scale {scale:.3g}, bound {rel}"
    assert top1 >= min_top1, f"{name}: top-1 agreement {top1:.3f} < {min_top1}"
    return fig


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_vs_transformers(name, tmp_path_factory, tmp_path, run_qb):
    src, ref, _ = build(name, tmp_path_factory)
    got = qb_logits(run_qb, src, tmp_path / "fwd.safetensors")
    compare(f"{name} quantbridge forward vs transformers", got, ref, FWD_REL)


def _index_margins(model, topk):
    """Per layer, the smallest gap between the topk-th and the next index score of any query
    with more than topk visible keys, recomputed in float64 from the indexer's inputs
    (DeepseekV32Indexer's formula). relu makes exact ties possible (a key every head scores <= 0
    gets 0.0), and torch.topk orders ties as it likes: the test model must have none at the
    boundary for the comparison to be defined."""
    caps, gaps = {}, []

    def pre(mod, args, kwargs):
        caps[mod.layer_idx] = (args[0], args[1], args[2])

    hooks = [l.self_attn.indexer.register_forward_pre_hook(pre, with_kwargs=True)
             for l in model.model.layers]
    with torch.no_grad():
        model(torch.tensor([TOKENS]))
    for h in hooks:
        h.remove()
    for li, layer in enumerate(model.model.layers):
        ix = layer.self_attn.indexer
        h, qr, (cos, sin) = caps[li]
        h, qr, c, s = h[0].double(), qr[0].double(), cos[0].double(), sin[0].double()
        n, nh, D, r = len(TOKENS), ix.n_heads, ix.head_dim, ix.qk_rope_head_dim
        q = (qr @ ix.wq_b.weight.double().T).view(n, nh, D)
        k = torch.nn.functional.layer_norm(h @ ix.wk.weight.double().T, (D,),
                                           ix.k_norm.weight.double(), ix.k_norm.bias.double(),
                                           1e-6)

        def rope(x, cc, ss):
            x1, x2 = x[..., : r // 2], x[..., r // 2: r]
            rot = torch.cat([-x2, x1], -1)
            return torch.cat([x[..., :r] * cc + rot * ss, x[..., r:]], -1)

        q = rope(q, c[:, None, :], s[:, None, :])
        k = rope(k, c, s)
        sc = torch.relu(torch.einsum("thd,sd->ths", q, k) * D ** -0.5)
        w = (h @ ix.weights_proj.weight.double().T) * nh ** -0.5
        score = torch.einsum("th,ths->ts", w, sc)
        for t in range(topk, n):
            v = torch.sort(score[t, : t + 1], descending=True).values
            gaps.append(float((v[topk - 1] - v[topk]).detach()))
    return min(gaps)


def test_deepseek_v32_sparse_drops_keys(tmp_path_factory):
    """The sparse variant's indexer must change the result: the same weights with index_topk at
    the sequence length (dense MLA) give logits far from the sparse ones."""
    src, ref, model = build("deepseek_v32_sparse", tmp_path_factory)
    model.config.index_topk = len(TOKENS)
    for layer in model.model.layers:
        layer.self_attn.indexer.index_topk = len(TOKENS)
    with torch.no_grad():
        dense = model(torch.tensor([TOKENS])).logits[0].numpy()
    for layer in model.model.layers:
        layer.self_attn.indexer.index_topk = 5
    model.config.index_topk = 5
    gap = _index_margins(model, 5)
    print(f"deepseek_v32 sparse: smallest index-score gap at the top-5 boundary {gap:.3g}")
    assert gap > 1e-5, f"a near-tie ({gap}) at the indexer's top-k boundary: pick another seed"
    d = float(np.abs(dense - ref).max()) / float(np.abs(ref).max())
    print(f"\ndeepseek_v32 sparse vs dense logits: {d:.3g} of the scale")
    assert d > 100 * FWD_REL, f"index_topk 5 < {len(TOKENS)} tokens changed the logits by only {d}"


def _expert_slice(sd, key, mi):
    """Our per-expert tensor `key` taken from transformers' fused experts."""
    for tag in (".mlp.experts.", ".block_sparse_moe.experts."):
        if tag in key:
            pre, rest = key.split(tag)
            e, proj = int(rest.split(".")[0]), rest.split(".")[1]
            fused_pre = f"{pre}.mlp.experts."
            if proj in ("down_proj", "w2"):
                return sd[fused_pre + "down_proj"][e], fused_pre + "down_proj"
            fused = sd[fused_pre + "gate_up_proj"][e]
            first = proj in ("gate_proj", "w1")
            return (fused[:mi] if first else fused[mi:]), fused_pre + "gate_up_proj"
    return None, None


@pytest.mark.parametrize("name", list(MODELS))
def test_hf_dense_loads_in_transformers(name, tmp_path_factory, tmp_path, run_qb):
    src, _, _ = build(name, tmp_path_factory)
    out = tmp_path / "f32"
    run_qb("convert", "--source", src, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    model, info = AutoModelForCausalLM.from_pretrained(
        str(out), output_loading_info=True, local_files_only=True, dtype=torch.float32)
    for key in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
        assert not info.get(key), f"{name}: {key} = {sorted(info[key])}"
    sd = model.state_dict()
    ours = U.read_safetensors_dir(out)
    raw = U.read_safetensors_dir(src)
    assert set(ours) == set(raw), f"{name}: tensors differ from the source's"
    cfg = U.config(out)
    mi = cfg.get("moe_intermediate_size") if "minimax" not in name else cfg["intermediate_size"]
    seen = set()
    for k, v in ours.items():
        U.assert_same_tensor(k, v, raw[k], f"{name} hf-dense vs source")
        got, fused = _expert_slice(sd, k, mi)
        if got is not None:
            U.assert_same_tensor(k, got.contiguous(), v, f"{name} expert slice")
            seen.add(fused)
            continue
        hk = k.replace("block_sparse_moe.e_score_correction_bias", "mlp.e_score_correction_bias")
        hk = hk.replace("block_sparse_moe.gate", "mlp.gate")
        assert hk in sd, f"{name}: our {k} is not a parameter of {type(model).__name__}"
        U.assert_same_tensor(k, sd[hk], v, f"{name} loaded by transformers")
        seen.add(hk)
        if k.endswith("e_score_correction_bias"):
            assert v.dtype == torch.float32
    assert set(sd) == seen, f"{name}: parameters we did not write: {sorted(set(sd) - seen)}"


@pytest.mark.parametrize("name", list(MODELS))
def test_w4a16_layout_verify_and_forward(name, tmp_path_factory, tmp_path, run_qb):
    src, ref, _ = build(name, tmp_path_factory)
    w4 = tmp_path / "w4a16"
    run_qb("convert", "--source", src, "--output", w4, "--writer", "sm86-w4a16",
           "--group-size", "32")
    man = json.loads((w4 / "manifest.json").read_text())
    assert man["architecture"] == name.split("_bias")[0].split("_groups")[0].split(
        "_dense")[0].split("_sparse")[0]
    # Every linear of the source is packed, every other tensor kept under its name.
    raw = U.read_safetensors_dir(src)
    layer0 = load_file(str(w4 / "layer_01.safetensors"))
    for k in raw:
        if not k.startswith("model.layers.1."):
            continue
        rest = k[len("model.layers.1."):]
        dense2d = rest.endswith("gate.weight") or rest.endswith("weights_proj.weight")
        if raw[k].ndim == 2 and not dense2d:
            base = rest[: -len(".weight")]
            assert base + ".packed" in layer0 and base + ".scales" in layer0, f"{rest} not packed"
        elif rest.endswith("e_score_correction_bias"):
            assert layer0[rest].dtype == np.float32, rest
        else:
            assert layer0[rest].dtype == np.float16, rest
    proc = run_qb("verify", "--source", src, "--converted", w4, "--tokens",
                  ",".join(map(str, TOKENS)), "--json", "--threads", "2", ok=False)
    assert proc.returncode == 0, f"verify exited {proc.returncode}:\n{proc.stderr}"
    rep = json.loads(proc.stdout)
    verdict = json.dumps(rep.get("model_verdict"))
    print(f"\n{name} verify model check: {json.dumps(rep.get('model_check'))[:400]}\n"
          f"verdict: {verdict[:300]}")
    assert rep.get("model_check"), f"{name}: verify ran no model check"
    v = rep["model_verdict"]
    assert v.get("verdict") != "defect" and v.get("fails") is False, verdict
    # Same weights in both: the W4A16 output decoded to f32 for transformers.
    back = tmp_path / "back"
    run_qb("convert", "--source", w4, "--output", back, "--writer", "hf-dense",
           "--option", "dtype=f32")
    model = AutoModelForCausalLM.from_pretrained(str(back), local_files_only=True,
                                                 dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    with torch.no_grad():
        ref4 = model(torch.tensor([TOKENS])).logits[0].numpy()
    got = qb_logits(run_qb, w4, tmp_path / "fwd4.safetensors")
    compare(f"{name} quantbridge forward on W4A16 vs transformers on its weights", got, ref4,
            W4_REL, W4_MIN_TOP1)
    q = compare(f"{name} W4A16 vs source (transformers, information only)", ref4, ref, 10.0, 0.0)
    assert q["rel_to_scale"] > 0, "the W4A16 weights equal the source's: nothing was quantized"


def _patched(src, tmp_path, edit):
    """A copy of the model directory `src` with config.json changed by edit(dict)."""
    import shutil
    dst = tmp_path / "patched"
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    edit(cfg)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


REFUSED = {
    # (model, config edit, command, text the error must hold)
    "v32_mlp_layer_types": ("deepseek_v32_dense",
                            lambda c: c.update(mlp_layer_types=["sparse", "sparse"]),
                            "forward", 'mlp_layer_types[0] is "sparse", not "dense"'),
    "v32_mlp_layer_types_w4a16": ("deepseek_v32_dense",
                                  lambda c: c.update(mlp_layer_types=["sparse", "sparse"]),
                                  "w4a16", "mlp_layer_types is not 1 \"dense\""),
    "v32_layer_types": ("deepseek_v32_dense",
                        lambda c: c.update(layer_types=["full_attention", "indexed_attention"]),
                        "forward", 'layer_types[0] is "full_attention"'),
    "v32_no_q_lora": ("deepseek_v32_dense", lambda c: c.update(q_lora_rank=None),
                      "forward", 'deepseek_v32 needs "q_lora_rank"'),
    "glm_qk_norm_off_with_norms": ("glm4_moe_bias_qknorm", lambda c: c.update(use_qk_norm=False),
                                   "w4a16", "self_attn.k_norm.weight: unexpected: config.json does not set "
                                   "head_dim (use_qk_norm)"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_by_name(case, tmp_path_factory, tmp_path, run_qb):
    """What the forward pass or the W4A16 writer cannot take exactly as transformers defines it
    is refused, exit 1, naming the key or tensor; nothing is written."""
    name, edit, cmd, want = REFUSED[case]
    src, _, _ = build(name, tmp_path_factory)
    bad = _patched(src, tmp_path, edit)
    out = tmp_path / "out"
    if cmd == "forward":
        proc = run_qb("forward", "--model", bad, "--tokens", "1,2,3", "--output",
                      out, ok=False)
    else:
        proc = run_qb("convert", "--source", bad, "--output", out, "--writer", "sm86-w4a16",
                      ok=False)
    assert proc.returncode == 1, f"{case}: exit {proc.returncode}\n{proc.stderr}"
    assert want in proc.stderr, f"{case}: stderr lacks {want!r}:\n{proc.stderr}"
    assert not out.exists(), f"{case}: {out} was written"


# --- Block FP8, as MiniMax-M2 and DeepSeek-V3.2 are published (docs/formats/fp8.md) -----------
# The tiny models' linears quantized here in numpy to F8_E4M3 with a float32 weight_scale_inv grid
# per block, every other tensor stored as the published checkpoints store it (BF16; MiniMax-M2's
# router weight and every router bias F32). Block 128 is the published size (every tiny matrix is
# then one partial edge block); block 24 exercises the grid: several blocks per matrix, with
# partial edge blocks (64 = 2 * 24 + 16, 32 = 24 + 8) and whole ones (96, 48).
FP8_QCFG = {
    "minimax_m2": {"activation_scheme": "dynamic", "fmt": "float8_e4m3fn", "quant_method": "fp8",
                   "modules_to_not_convert": ["gate", "e_score_correction_bias", "lm_head"]},
    "deepseek_v32_sparse": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "scale_fmt": "ue8m0"},
}
FP8_CASES = [(m, b) for m in FP8_QCFG for b in (128, 24)]
E4M3_MAX = 448.0


def _fp8_quantized(name, key, v):
    """Whether the published checkpoint of family `name` stores tensor `key` as block FP8: the
    2-D linears of the decoder layers; not norms, routers, the V3.2 indexer's weights_proj,
    embeddings or the head."""
    if not key.startswith("model.layers.") or v.ndim != 2 or not key.endswith(".weight"):
        return False
    return not ("norm" in key or key.endswith(".gate.weight") or "weights_proj" in key)


def _block_fp8(w, block, pow2):
    """(e4m3 bytes as torch float8 [N, K], float32 scale_inv [ceil(N/b), ceil(K/b)]) of float32
    numpy w: per block scale = amax / 448 (a power of two at or above it when pow2, the ue8m0
    scale_fmt), values w / scale rounded to nearest e4m3."""
    n, k = w.shape
    gn, gk = -(-n // block), -(-k // block)
    s = np.zeros((gn, gk), np.float32)
    q = np.zeros_like(w, dtype=np.float32)
    for i in range(gn):
        for j in range(gk):
            b = w[i * block:(i + 1) * block, j * block:(j + 1) * block]
            sc = np.float32(max(float(np.abs(b).max()), 1e-12) / E4M3_MAX)
            if pow2:
                sc = np.float32(2.0 ** np.ceil(np.log2(sc)))
            s[i, j] = sc
            # float32 division may land a hair above 448 at the block's maximum: clamped, as
            # DeepSeek's quantizer clamps, before rounding to e4m3
            q[i * block:(i + 1) * block, j * block:(j + 1) * block] = np.clip(
                b / sc, -E4M3_MAX, E4M3_MAX)
    return torch.from_numpy(q).to(torch.float8_e4m3fn), s


def _block_dequant(q8, s, block):
    """numpy: float(e4m3) * scale_inv of its block, float32 (DeepSeek's weight_dequant)."""
    full = np.repeat(np.repeat(s, block, 0), block, 1)[: q8.shape[0], : q8.shape[1]]
    return q8.to(torch.float32).numpy() * full


def build_fp8(name, block, tmp_path_factory):
    """(FP8 checkpoint dir, its numpy dequantization {name: float32}, dequantized HF dir) of
    MODELS[name]'s source at block size `block`."""
    import shutil
    from safetensors.torch import save_file
    src, _, _ = build(name, tmp_path_factory)
    root = tmp_path_factory.mktemp(f"{name}-fp8-{block}")
    fp8, deq = root / "fp8", root / "dequant"
    fp8.mkdir()
    deq.mkdir()
    qcfg = dict(FP8_QCFG[name], weight_block_size=[block, block])
    stored, want, grid = {}, {}, 0
    for k, v in U.read_safetensors_dir(src).items():
        w = v.numpy().astype(np.float32)
        if _fp8_quantized(name, k, v):
            q8, s = _block_fp8(w, block, qcfg.get("scale_fmt") == "ue8m0")
            stored[k], stored[k[: -len("weight")] + "weight_scale_inv"] = q8, torch.from_numpy(s)
            grid = max(grid, len(np.unique(s)))
            want[k] = _block_dequant(q8, s, block)
        else:
            keep32 = k.endswith("e_score_correction_bias") or (
                name == "minimax_m2" and k.endswith("block_sparse_moe.gate.weight"))
            t = v.to(torch.float32 if keep32 else torch.bfloat16)
            stored[k] = t.contiguous()
            want[k] = t.to(torch.float32).numpy()
    save_file(stored, str(fp8 / "model.safetensors"), metadata={"format": "pt"})
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in want.items()},
              str(deq / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((src / "config.json").read_text())
    (deq / "config.json").write_text(json.dumps(cfg, indent=2))
    cfg["quantization_config"] = qcfg
    (fp8 / "config.json").write_text(json.dumps(cfg, indent=2))
    if (src / "generation_config.json").exists():
        shutil.copy(src / "generation_config.json", fp8)
    n_fp8 = sum(1 for t in stored.values() if t.dtype == torch.float8_e4m3fn)
    assert n_fp8 > 0
    # below 64 every matrix spans several blocks: some grid must hold distinct scales, or a
    # wrong block index in the reader would go unseen
    assert block >= 64 or grid > 1, f"{name}: every block scale of every grid is the same"
    return fp8, want, deq


@pytest.mark.parametrize("name,block", FP8_CASES)
def test_block_fp8_family(name, block, tmp_path_factory, tmp_path, run_qb):
    """hf-dense f32 of the FP8 checkpoint equals the numpy dequantization bit for bit;
    `quantbridge forward` on the FP8 checkpoint against transformers on the dequantized model
    (FWD_REL); W4A16 of the FP8 checkpoint passes verify with its model check."""
    fp8, want, deq = build_fp8(name, block, tmp_path_factory)
    out = tmp_path / "f32"
    run_qb("convert", "--source", fp8, "--output", out, "--writer", "hf-dense",
           "--option", "dtype=f32")
    got = U.read_safetensors_dir(out)
    assert set(got) == set(want), f"{name}: {sorted(set(got) ^ set(want))}"
    for k, v in want.items():
        U.assert_same_tensor(k, got[k], torch.from_numpy(np.ascontiguousarray(v)),
                             f"{name} block {block} hf-dense vs numpy dequantization")
    model = AutoModelForCausalLM.from_pretrained(str(deq), local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval()
    if "deepseek_v32" in name:
        topk = model.config.index_topk
        gap = _index_margins(model, topk)
        print(f"{name} block {block}: smallest index-score gap at the top-{topk} boundary {gap:.3g}")
        assert gap > 1e-5, f"a near-tie ({gap}) at the indexer's top-k boundary"
    with torch.no_grad():
        ref = model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float32)
    got = qb_logits(run_qb, fp8, tmp_path / "fwd.safetensors")
    compare(f"{name} block {block} FP8 quantbridge forward vs transformers on its dequantization",
            got, ref, FWD_REL)
    w4 = tmp_path / "w4a16"
    run_qb("convert", "--source", fp8, "--output", w4, "--writer", "sm86-w4a16",
           "--group-size", "32")
    proc = run_qb("verify", "--source", fp8, "--converted", w4, "--tokens",
                  ",".join(map(str, TOKENS)), "--json", "--threads", "2", ok=False)
    assert proc.returncode == 0, f"verify exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    rep = json.loads(proc.stdout)
    verdict = json.dumps(rep.get("model_verdict"))
    print(f"\n{name} block {block} W4A16 verify model check: "
          f"{json.dumps(rep.get('model_check'))[:400]}\nverdict: {verdict[:300]}")
    assert rep.get("model_check"), f"{name}: verify ran no model check"
    v = rep["model_verdict"]
    assert v.get("verdict") != "defect" and v.get("fails") is False, verdict
