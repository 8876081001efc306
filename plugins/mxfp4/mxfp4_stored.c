/*
 * mxfp4 reader — the stored-rows view (ABI 1.4, qb_reader.h
 * get_stored_rows) of each expert tensor, in encoding "ocp:mxfp4"
 * (docs/plugin-design.md, "Stored encodings"): a writer whose target holds
 * MXFP4 blocks (the gguf writer's ggml MXFP4) copies the checkpoint's codes
 * and scales instead of requantizing the exact floats.
 *
 * The presented tensor is [E, K, R] (input features first) while the
 * checkpoint stores, per expert, R output rows of K inputs in blocks of 32:
 * so the view is QB_STORED_TRANSPOSED, stored row (e, j) = output row j of
 * expert e, one 17-byte block per 32 inputs: its `_scales` byte (E8M0),
 * then its 16 `_blocks` bytes as stored (element 2i in the low nibble of
 * byte i) -- docs/formats/mxfp4.md, "Stored tensors".
 */
#include "mxfp4_model.h"

#include <string.h>

#define MX_BLOCK 32
#define MX_BLOCK_BYTES 16

static const mx_tensor *expert(const qb_streader *r, size_t i)
{
    const mx_model *m = r->model;
    return i < m->n && m->t[i].kind == MX_K_EXPERTS ? &m->t[i] : NULL;
}

qb_status mx_vt_stored_info(qb_reader_handle h, size_t i, qb_stored_rows_info *out)
{
    const qb_streader *r = h;
    const mx_tensor *t = expert(r, i);
    if (!t)
        return QB_E_UNSUPPORTED; /* a dense tensor: its rows are the floats */
    out->encoding = "ocp:mxfp4";
    out->layout = QB_STORED_TRANSPOSED;
    out->rows = t->E * t->R;
    out->cols = t->G * MX_BLOCK;
    out->row_bytes = (uint64_t)t->G * (1 + MX_BLOCK_BYTES);
    return QB_OK;
}

qb_status mx_vt_read_stored(qb_reader_handle h, size_t i, int64_t row0, int64_t n_rows, void *dst)
{
    const qb_streader *r = h;
    const mx_tensor *t = expert(r, i);
    uint8_t *o = dst;
    int64_t row, g;
    if (!t)
        return r->host->set_error(r->host, QB_E_UNSUPPORTED, "tensor %zu has no stored rows", i);
    if (row0 < 0 || n_rows < 0 || row0 > t->E * t->R || n_rows > t->E * t->R - row0)
        return r->host->set_error(r->host, QB_E_RANGE, "%s: stored rows [%lld, +%lld) outside [0, %lld)", t->name,
                                  (long long)row0, (long long)n_rows, (long long)(t->E * t->R));
    /* stored row (e, j) is row e * R + j of `_blocks` [E, R, G, 16] / `_scales` [E, R, G] */
    for (row = row0; row < row0 + n_rows; row++)
        for (g = 0; g < t->G; g++) {
            const size_t blk = (size_t)(row * t->G + g);
            const uint8_t sc = t->scale->data[blk];
            if (sc == 255) /* NaN in E8M0: read_rows refuses it too */
                return r->host->set_error(r->host, QB_E_FORMAT, "%s: %s: E8M0 scale 255 (NaN) at [%lld, %lld, %lld]",
                                          t->scale->file, t->scale->name, (long long)(row / t->R),
                                          (long long)(row % t->R), (long long)g);
            *o++ = sc;
            memcpy(o, t->w->data + blk * MX_BLOCK_BYTES, MX_BLOCK_BYTES);
            o += MX_BLOCK_BYTES;
        }
    return QB_OK;
}
