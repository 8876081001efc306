/*
 * GGUF reader — the stored-rows view (ABI 1.4, qb_reader.h
 * get_stored_rows): a canonical tensor whose values are whole ggml rows of
 * the file, offered as those rows in encoding "ggml:<TYPE>"
 * (docs/plugin-design.md, "Stored encodings"), so the gguf writer copies a
 * Q4_K or IQ2_XXS tensor's blocks instead of requantizing its floats.
 *
 * Offered where each stored row decodes to the canonical values as they
 * are: a plain tensor, a row range of a fused or stacked one, a row-
 * permuted q/k weight (the rows are handed out in the canonical order),
 * and gpt-oss / llama4 fused experts, transposed (QB_STORED_TRANSPOSED:
 * the ggml row of each expert output is a canonical column). Not where the
 * reader computes values (Gemma's norm - 1, a permuted bias's elements,
 * deepseek2's kv_b rebuilt from transposed blocks, a fused expert bias).
 */
#include "gguf_stored.h"

#include "ggml_types.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* "ggml:<name>" per type id, built once: reader-owned strings that
 * outlive every handle. */
#define N_IDS 64
static char enc_names[N_IDS][32];
static pthread_once_t enc_once = PTHREAD_ONCE_INIT;

static void enc_init(void)
{
    uint32_t i;
    for (i = 0; i < N_IDS; i++) {
        const char *n = gguf_ggml_type_name(i);
        if (n)
            snprintf(enc_names[i], sizeof(enc_names[i]), "ggml:%s", n);
    }
}

const char *gguf_stored_encoding(uint32_t type)
{
    pthread_once(&enc_once, enc_init);
    return type < N_IDS && enc_names[type][0] ? enc_names[type] : NULL;
}

static int transposed(const gguf_ctensor *c)
{
    return c->oss == GGUF_OSS_COLUMNS && c->n_dims == 3 &&
           (!c->oss_up || c->oss_up->type == c->src->type);
}

qb_status gguf_stored_info(const gguf_ctensor *c, qb_stored_rows_info *out)
{
    const char *enc = gguf_stored_encoding(c->src->type);
    if (!enc || c->minus_one || c->kv_v || (c->n_dims == 1 && c->perm_heads))
        return QB_E_UNSUPPORTED;
    if (c->oss && !transposed(c))
        return QB_E_UNSUPPORTED;
    out->encoding = enc;
    out->row_bytes = c->src->row_bytes;
    if (c->oss) {
        out->layout = QB_STORED_TRANSPOSED;
        out->rows = c->dims[0] * c->dims[2];
        out->cols = c->dims[1];
        return QB_OK;
    }
    if (c->cols != c->src->ne[0])
        return QB_E_UNSUPPORTED;
    out->layout = QB_STORED_ROWS;
    out->rows = c->n_rows;
    out->cols = c->cols;
    return QB_OK;
}

const uint8_t *gguf_stored_row(const gguf_ctensor *c, int64_t r)
{
    if (c->oss) {
        /* stored row (e, j) of canonical [E, K, m*N]: output j of expert e */
        const int64_t mN = c->dims[2], N = c->oss_n, e = r / mN, j = r % mN;
        const gguf_tinfo *t = c->src;
        int64_t row = j;
        if (c->oss_up && c->oss_concat) {
            t = j < N ? c->src : c->oss_up;
            row = j < N ? j : j - N;
        } else if (c->oss_up) {
            t = j % 2 ? c->oss_up : c->src; /* gate at even places */
            row = j / 2;
        }
        return t->data + (uint64_t)(e * N + row) * t->row_bytes;
    }
    if (c->perm_heads)
        r = gguf_unpermute_row(r, c->n_rows, c->perm_heads);
    return c->src->data + (uint64_t)(c->row0 + r) * c->src->row_bytes;
}
