/*
 * qb-gen-npy: writes a tiny llama-shaped model as a directory of .npy files
 * plus config.json, for the example third-party reader in
 * sdk/examples/npy-reader (the out-of-tree SDK test).
 *
 * usage: qb-gen-npy OUTDIR [seed]
 * Weights: deterministic normal(0, 0.02) from qbt_rng, float32.
 */
#include "qbt_st_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { NPY_HIDDEN = 64, NPY_INTER = 128, NPY_VOCAB = 128, NPY_LAYERS = 1, NPY_HEADS = 4, NPY_KV = 2 };

/* Writes one float32 C-order .npy (format 1.0, header padded to 64 bytes
 * as numpy.lib.format does). */
static int npy_write(const char *dir, const char *name, int n_dims, const int64_t *dims, qbt_rng *rng,
                     double stddev, double mean)
{
    char path[4096], hdr[256], shape[96] = "";
    size_t n = 1, i, hl;
    int d;
    FILE *f;
    for (d = 0; d < n_dims; d++) {
        char part[32];
        snprintf(part, sizeof(part), "%lld,%s", (long long)dims[d], n_dims == 1 ? "" : " ");
        strcat(shape, part);
        n *= (size_t)dims[d];
    }
    if (n_dims > 1)
        shape[strlen(shape) - 2] = '\0';
    snprintf(hdr, sizeof(hdr), "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
    hl = strlen(hdr);
    while ((10 + hl + 1) % 64)
        hdr[hl++] = ' ';
    hdr[hl++] = '\n';
    hdr[hl] = '\0';
    snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
    f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((int)(hl & 0xff), f);
    fputc((int)(hl >> 8), f);
    fwrite(hdr, 1, hl, f);
    for (i = 0; i < n; i++) {
        float v = (float)(mean + stddev * qbt_rng_normal(rng));
        fwrite(&v, 4, 1, f);
    }
    return fclose(f);
}

int main(int argc, char **argv)
{
    qbt_rng rng;
    char buf[4096];
    int l, rc = 0;
    const char *dir;
    if (argc < 2) {
        fprintf(stderr, "usage: qb-gen-npy OUTDIR [seed]\n");
        return 2;
    }
    dir = argv[1];
    rng.s = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    snprintf(buf, sizeof(buf), "%s/config.json", dir);
    {
        char cfg[1024];
        snprintf(cfg, sizeof(cfg),
                 "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\",\n"
                 " \"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d,\n"
                 " \"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"vocab_size\": %d,\n"
                 " \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"max_position_embeddings\": 256,\n"
                 " \"tie_word_embeddings\": false, \"bos_token_id\": 1, \"eos_token_id\": 2,\n"
                 " \"torch_dtype\": \"float32\"}\n",
                 NPY_HIDDEN, NPY_INTER, NPY_LAYERS, NPY_HEADS, NPY_KV, NPY_VOCAB);
        rc |= qbt_write_text(buf, cfg);
    }
    {
        int64_t emb[2] = {NPY_VOCAB, NPY_HIDDEN}, norm[1] = {NPY_HIDDEN};
        rc |= npy_write(dir, "model.embed_tokens.weight", 2, emb, &rng, 0.02, 0);
        rc |= npy_write(dir, "lm_head.weight", 2, emb, &rng, 0.02, 0);
        rc |= npy_write(dir, "model.norm.weight", 1, norm, &rng, 0.05, 1.0);
    }
    for (l = 0; l < NPY_LAYERS; l++) {
        const int hd = NPY_HIDDEN / NPY_HEADS;
        struct { const char *n; int64_t out, in; } lin[] = {
            {"self_attn.q_proj", NPY_HIDDEN, NPY_HIDDEN},   {"self_attn.k_proj", NPY_KV * hd, NPY_HIDDEN},
            {"self_attn.v_proj", NPY_KV * hd, NPY_HIDDEN},  {"self_attn.o_proj", NPY_HIDDEN, NPY_HIDDEN},
            {"mlp.gate_proj", NPY_INTER, NPY_HIDDEN},       {"mlp.up_proj", NPY_INTER, NPY_HIDDEN},
            {"mlp.down_proj", NPY_HIDDEN, NPY_INTER},
        };
        size_t k;
        int64_t norm[1] = {NPY_HIDDEN};
        for (k = 0; k < sizeof(lin) / sizeof(lin[0]); k++) {
            int64_t dims[2] = {lin[k].out, lin[k].in};
            snprintf(buf, sizeof(buf), "model.layers.%d.%s.weight", l, lin[k].n);
            rc |= npy_write(dir, buf, 2, dims, &rng, 0.02, 0);
        }
        snprintf(buf, sizeof(buf), "model.layers.%d.input_layernorm.weight", l);
        rc |= npy_write(dir, buf, 1, norm, &rng, 0.05, 1.0);
        snprintf(buf, sizeof(buf), "model.layers.%d.post_attention_layernorm.weight", l);
        rc |= npy_write(dir, buf, 1, norm, &rng, 0.05, 1.0);
    }
    if (rc)
        fprintf(stderr, "qb-gen-npy: failed writing %s\n", dir);
    return rc ? 1 : 0;
}
