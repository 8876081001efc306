"""Helpers of test_real_vocab.py (module-private): llama.cpp's own tokenizer test suite -- the
vocabulary-only GGUFs its converter wrote from real models, `models/ggml-vocab-NAME.gguf`, with the
texts (`.inp`) and the ids the original Hugging Face tokenizer gives them (`.out`, made by llama.cpp's
convert_hf_to_gguf_update.py; llama.cpp's tests/test-tokenizer-0 checks its own tokenizer against
them) -- read as llama.cpp reads them, and grafted onto a tiny model quantbridge can open."""
import pathlib

import numpy as np

import gguf

SEP = "\n__ggml_vocab_test__\n"


def read_cases(vocab: pathlib.Path) -> list:
    """[(text, ids)] of NAME.gguf.inp / .out, split as tests/test-tokenizer-0.cpp
    (load_tests) splits them: texts separated by SEP (the text after the last one, empty in
    every file, is not a case), one line of space-separated ids per text, add_special false."""
    raw = pathlib.Path(str(vocab) + ".inp").read_text(encoding="utf-8")
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(SEP, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEP)
    lines = pathlib.Path(str(vocab) + ".out").read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(texts):
        raise ValueError(f"{vocab}: {len(texts)} texts but {len(lines)} lines of ids")
    return [(t, [int(x) for x in line.split()]) for t, line in zip(texts, lines)]


def graft(vocab: pathlib.Path, out: pathlib.Path) -> int:
    """Writes `out`: a tiny llama GGUF (1 layer, width 32, f16 tied embedding with one row per
    token) carrying every tokenizer.* key of `vocab` unchanged, and its general.name. Returns the
    number of tokens."""
    r = gguf.GGUFReader(str(vocab))
    n = len(r.fields["tokenizer.ggml.tokens"].data)
    w = gguf.GGUFWriter(str(out), "llama")
    name = r.fields.get("general.name")
    w.add_name(name.contents() if name is not None else vocab.stem)
    emb, ff, heads = 32, 64, 2
    w.add_context_length(256)
    w.add_embedding_length(emb)
    w.add_block_count(1)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_rope_dimension_count(emb // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = f.types[0]
        sub = f.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, f.contents(), vtype, sub_type=sub)
    rng = np.random.default_rng(5)
    tensors = {"token_embd.weight": (n, emb), "output_norm.weight": (emb,),
               "blk.0.attn_norm.weight": (emb,), "blk.0.ffn_norm.weight": (emb,),
               "blk.0.attn_q.weight": (emb, emb), "blk.0.attn_k.weight": (emb, emb),
               "blk.0.attn_v.weight": (emb, emb), "blk.0.attn_output.weight": (emb, emb),
               "blk.0.ffn_gate.weight": (ff, emb), "blk.0.ffn_up.weight": (ff, emb),
               "blk.0.ffn_down.weight": (emb, ff)}
    for tname, shape in tensors.items():
        a = rng.standard_normal(shape).astype(np.float32)
        w.add_tensor(tname, a.astype(np.float16) if len(shape) == 2 else a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return n
