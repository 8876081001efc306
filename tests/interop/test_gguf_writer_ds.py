"""Interop test: the gguf writer's issue-28 additions against llama.cpp and gguf-py.

1. deepseek2: the deepseek2 fixture of test_gguf_deepseek_oss.py (gguf-py's writer after the
   transforms llama.cpp's DeepseekV2Model applies: kv_b_proj split into attn_k_b / attn_v_b with
   k_b transposed, experts stacked, e_score_correction_bias as exp_probs_b.bias) goes
   GGUF (F32) -> hf-dense (f32) -> GGUF (type=F32) and every tensor comes back bit for bit under
   the same name, shape and type; the MLA and routing keys equal the fixture's. A DeepSeek-V3
   shaped Hugging Face checkpoint (qb-gen-hf-dense --arch deepseek_v3: q LoRA, a dense first
   layer, shared experts, sigmoid routing with groups, yarn rope) becomes a GGUF that llama.cpp
   runs, and its logits match `quantbridge forward` on the checkpoint.
"""
import json
import os
import shutil
import subprocess

os.environ["HF_HUB_OFFLINE"] = "1"

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

import _hf_util as H  # noqa: E402
import qbllama  # noqa: E402
from test_gguf_deepseek_oss import write_deepseek2  # noqa: E402
from test_gguf_writer import assert_same_tensors, convert_gguf, tensors  # noqa: E402

TOKENS = [1, 45, 260, 3, 120, 287, 77, 200, 261, 9, 150, 270, 33, 250, 99, 281]


def fields(path):
    """{key: python value} of a GGUF's metadata (arrays as lists)."""
    r = gguf.GGUFReader(str(path))
    return {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}


def forward_vs_llama_cpp(run_qb, model_dir, gguf_path, tmp_path, label):
    """max|diff| / logit scale and top-1 agreement of llama.cpp on gguf_path against
    `quantbridge forward` on model_dir, for TOKENS."""
    got = qbllama.llama_logits(gguf_path, TOKENS)
    f = tmp_path / f"fwd-{label}.safetensors"
    run_qb("forward", "--model", model_dir, "--tokens", ",".join(map(str, TOKENS)), "--output", f,
           "--threads", "2")
    ref = load_file(str(f))["logits"]
    assert got.shape == ref.shape, (got.shape, ref.shape)
    scale = float(np.abs(ref).max())
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
    print(f"\n{label}: llama.cpp on our GGUF vs quantbridge forward: max|diff|/scale "
          f"{diff / scale:.3g}, top-1 {agree:.3f}")
    return diff / scale, agree


DS2_KEYS = ["attention.head_count", "attention.head_count_kv", "attention.q_lora_rank",
            "attention.kv_lora_rank", "attention.key_length", "attention.value_length",
            "attention.key_length_mla", "attention.value_length_mla", "rope.dimension_count",
            "leading_dense_block_count", "expert_count", "expert_used_count",
            "expert_shared_count", "expert_feed_forward_length", "expert_weights_scale",
            "expert_weights_norm", "expert_gating_func", "rope.scaling.type", "rope.scaling.factor",
            "rope.scaling.original_context_length", "rope.scaling.yarn_log_multiplier",
            "block_count", "embedding_length", "feed_forward_length", "context_length"]


def test_deepseek2_round_trip(tmp_path, run_qb):
    src = tmp_path / "ds2.gguf"
    write_deepseek2(src)
    hf = tmp_path / "hf"
    run_qb("convert", "--source", src, "--output", hf, "--writer", "hf-dense", "--option", "dtype=f32")
    back = convert_gguf(run_qb, hf, tmp_path / "back", "type=F32")
    want = tensors(src)
    assert any(n.endswith("attn_k_b.weight") for n in want)
    assert_same_tensors(tensors(back), want, "deepseek2: GGUF -> hf-dense -> GGUF")
    fs, fb = fields(src), fields(back)
    for k in DS2_KEYS:
        key = "deepseek2." + k
        assert key in fb, f"{key} missing from our GGUF"
        a, b = fs[key], fb[key]
        if isinstance(a, float):
            assert np.float32(a) == np.float32(b), (key, a, b)
        else:
            assert a == b, (key, a, b)
    assert qbllama.llama_logits(back, [1, 45, 200, 3]).shape[0] == 4  # llama.cpp loads and runs it


def _tokenizer_into(run_qb, tmp_path, dst):
    """tokenizer.json / tokenizer_config.json of the tiny llama fixture (H.VOCAB pieces) copied
    into dst, so llama.cpp has a vocabulary to load."""
    g = tmp_path / "tok-src.gguf"
    H.write_gguf(g, "llama", gguf.GGMLQuantizationType.F32, seed=1)
    d = tmp_path / "tok-hf"
    run_qb("convert", "--source", g, "--output", d, "--writer", "hf-dense", "--option", "dtype=f32")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(d / f, dst / f)


@pytest.mark.parametrize("qname,rel,top1", [("F32", 2e-4, 1.0), ("Q8_0", 5e-2, 0.9)])
def test_deepseek_v3_hf_to_gguf_runs(qname, rel, top1, tmp_path, build_dir, run_qb):
    src = tmp_path / "dsv3"
    subprocess.run([str(build_dir / "tests" / "bin" / "qb-gen-hf-dense"), "--arch", "deepseek_v3",
                    "--dtype", "f32", "--layers", "3", "--hidden", "256", "--intermediate", "512",
                    "--vocab", str(H.VOCAB), "--heads", "4", "--experts", "8", "--experts-per-tok", "2",
                    "--n-group", "4", "--topk-group", "2", "--first-k-dense", "1", "--q-lora-rank", "96",
                    "--kv-lora-rank", "64", "--qk-nope-head-dim", "32", "--qk-rope-head-dim", "16",
                    "--v-head-dim", "32", "--moe-intermediate", "128", "--shared-experts", "1",
                    "--seed", "21", "--out", str(src)], check=True)
    _tokenizer_into(run_qb, tmp_path, src)
    out = tmp_path / "gguf"
    g = convert_gguf(run_qb, src, out, f"type={qname}")
    t = tensors(g)
    # kv_b split as llama.cpp writes it: k_b ne {nope, R, H}, v_b ne {R, v, H}
    assert t["blk.0.attn_k_b.weight"][1] == (32, 64, 4)
    assert t["blk.0.attn_v_b.weight"][1] == (64, 32, 4)
    assert "blk.0.attn_kv_b.weight" not in t
    assert t["blk.1.ffn_gate_exps.weight"][1] == (256, 128, 8)
    assert "blk.1.exp_probs_b.bias" in t and "blk.0.ffn_gate.weight" in t
    f = fields(g)
    assert f["deepseek2.attention.head_count_kv"] == 1
    assert f["deepseek2.expert_gating_func"] == 2 and f["deepseek2.expert_group_count"] == 4
    d, agree = forward_vs_llama_cpp(run_qb, src, g, tmp_path, f"deepseek_v3 {qname}")
    assert d <= rel, f"deepseek_v3 {qname}: {d:.3g} of the logit scale > {rel}"
    assert agree >= top1
