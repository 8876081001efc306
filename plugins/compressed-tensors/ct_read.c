/*
 * compressed-tensors reader — row and grid decoding. See ct_model.h for
 * the conventions (pack_to_int32 / unpack_from_int32 bit order and offset,
 * forward.py _dequantize order of operations).
 */
#include <stdlib.h>
#include <string.h>

#include "qbk_fp4_decode.h"
#include "qbk_fp8_decode.h"
#include "qbk_nvfp4_grid.h"
#include "ct_model.h"
#include "qbk_alloc.h"

static uint32_t ct_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/* Row of the scale-shaped tensors (scale, unpacked zero points) that
 * output row r uses. */
static int64_t ct_param_row(const ct_tensor *t, int64_t r)
{
    switch (t->strategy) {
    case CT_S_TENSOR:
        return 0;
    case CT_S_BLOCK:
        return r / t->bh;
    default:
        return r;
    }
}

/* Scale row of output row r: n_groups floats (tensor: 1). */
static void ct_scale_row(const ct_tensor *t, int64_t r, float *out)
{
    const qb_st_tensor *s = t->scale;
    size_t es = qbk_float_store_size(s->dtype);

    qbk_float_store_to_f32(s->dtype, s->data + (size_t)(ct_param_row(t, r) * t->n_groups) * es,
                     (size_t)t->n_groups, out);
}

/* Unsigned zero points of output row r: n_groups values (tensor: 1). */
static void ct_zero_row(const ct_tensor *t, int64_t r, int32_t *out)
{
    int32_t half = 1 << (t->bits - 1);
    int64_t g, pf = 32 / t->bits, ng = t->n_groups;
    uint32_t mask = (uint32_t)((1u << t->bits) - 1u);

    if (!t->zp) {
        for (g = 0; g < ng; g++)
            out[g] = half;
        return;
    }
    if (t->zp_packed) {
        /* packed along rows: pack_to_int32(zero_point, packed_dim=0) */
        for (g = 0; g < ng; g++)
            out[g] = (int32_t)((ct_u32(t->zp->data + 4 * (size_t)((r / pf) * ng + g)) >>
                                (t->bits * (r % pf))) & mask);
        return;
    }
    /* signed I8 in the scale's shape; stored zq, unsigned zu = zq + 2^(b-1) */
    if (t->strategy == CT_S_TENSOR) {
        out[0] = (int8_t)t->zp->data[0] + half;
        return;
    }
    for (g = 0; g < ng; g++)
        out[g] = (int8_t)t->zp->data[(size_t)(ct_param_row(t, r) * ng + g)] + half;
}

static int64_t ct_col_group(const ct_tensor *t, int64_t k)
{
    if (t->g_idx)
        return t->g_idx[k];
    if (t->strategy == CT_S_GROUP || t->strategy == CT_S_BLOCK)
        return k / t->gs;
    return 0;
}

/* Unsigned codes of row r into out[cols]; -1 when a naive int8 code is
 * outside the b-bit range. */
static int ct_code_row(const ct_tensor *t, int64_t r, uint8_t *out)
{
    const qb_st_tensor *w = t->w;
    int32_t half = 1 << (t->bits - 1);
    int64_t k;

    if (t->kind == CT_K_PACKED) {
        /* value k at bits [b*(k%pf), b*(k%pf)+b) of word k/pf (unpack_from_int32) */
        int64_t pf = 32 / t->bits, wc = w->dims[1];
        uint32_t mask = (uint32_t)((1u << t->bits) - 1u);
        const uint8_t *row = w->data + 4 * (size_t)(r * wc);
        for (k = 0; k < t->cols; k++)
            out[k] = (uint8_t)((ct_u32(row + 4 * (size_t)(k / pf)) >> (t->bits * (k % pf))) & mask);
        return 0;
    }
    for (k = 0; k < t->cols; k++) {
        int32_t q = (int8_t)w->data[(size_t)(r * t->cols + k)];
        if (q < -half || q > half - 1)
            return -1;
        out[k] = (uint8_t)(q + half);
    }
    return 0;
}

/* FP4 row r into d[cols]: per group one scale, then E2M1 x scale as one
 * float32 product (ct_model.h: NVFP4 e4m3 / global rounded first, MXFP4
 * 2^(e-127) exact). */
static void ct_fp4_row(const ct_tensor *t, int64_t r, float *d)
{
    const uint8_t *codes = t->w->data + (size_t)(r * (t->cols / 2));
    const uint8_t *sc = t->scale->data + (size_t)(r * t->n_groups);
    int64_t g;

    for (g = 0; g < t->n_groups; g++) {
        float s = t->kind == CT_K_NVFP4 ? qbk_fp8_e4m3fn_to_f32(sc[g]) / t->gscale
                                        : qbk_e8m0_to_f32(sc[g]);
        qbk_fp4_e2m1_row_to_f32(codes + (size_t)(g * t->gs / 2), (size_t)t->gs, s,
                                d + (size_t)(g * t->gs));
    }
}

qb_status ct_tensor_read_rows(const qb_host *h, const ct_tensor *t, int64_t row0, int64_t n_rows,
                              float *dst)
{
    const qb_st_tensor *w = t->w;
    float *srow = NULL;
    int32_t *zrow = NULL;
    uint8_t *codes = NULL;
    int64_t r, k;
    qb_status st = QB_OK;

    if (t->kind == CT_K_DENSE)
        return qb_streader_dense_rows(h, w, row0, n_rows, dst);
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)", w->file,
                            t->name, (long long)row0, (long long)n_rows, (long long)t->rows);
    if (t->kind == CT_K_NVFP4 || t->kind == CT_K_MXFP4) {
        for (r = row0; r < row0 + n_rows; r++)
            ct_fp4_row(t, r, dst + (size_t)((r - row0) * t->cols));
        return QB_OK;
    }
    srow = qbk_malloc((size_t)t->n_groups * sizeof(float));
    zrow = qbk_malloc((size_t)t->n_groups * sizeof(int32_t));
    codes = qbk_malloc((size_t)t->cols);
    if (!srow || !zrow || !codes) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->file, t->name);
        goto out;
    }
    for (r = row0; r < row0 + n_rows; r++) {
        float *d = dst + (size_t)((r - row0) * t->cols);
        ct_scale_row(t, r, srow);
        if (t->kind == CT_K_FLOAT) {
            /* FP8 value times scale, one float32 product */
            qbk_float_store_to_f32(QB_DT_F8_E4M3, w->data + (size_t)(r * t->cols), (size_t)t->cols, d);
            for (k = 0; k < t->cols; k++)
                d[k] = d[k] * srow[ct_col_group(t, k)];
            continue;
        }
        ct_zero_row(t, r, zrow);
        if (ct_code_row(t, r, codes) != 0) {
            st = h->set_error(h, QB_E_FORMAT, "%s: %s: row %lld holds a code outside the %d-bit "
                              "range", w->file, w->name, (long long)r, t->bits);
            goto out;
        }
        for (k = 0; k < t->cols; k++) {
            int64_t g = ct_col_group(t, k);
            /* (q - zq) * scale: the difference is an exact small integer */
            d[k] = (float)((int32_t)codes[k] - zrow[g]) * srow[g];
        }
    }
out:
    qbk_free(srow);
    qbk_free(zrow);
    qbk_free(codes);
    return st;
}

qb_status ct_tensor_read_grid(const qb_host *h, const ct_tensor *t, int64_t row0, int64_t n_rows,
                              uint8_t *codes, float *scales, int32_t *zeros)
{
    int64_t r;

    int fp8 = t->kind == CT_K_FLOAT && !t->zp && t->w->dtype == QB_DT_F8_E4M3;

    if (t->kind == CT_K_NVFP4) {
        if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
            return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)",
                                t->w->file, t->name, (long long)row0, (long long)n_rows,
                                (long long)t->rows);
        for (r = row0; r < row0 + n_rows; r++)
            qbk_nvfp4_grid_row(t->w->data + (size_t)(r * (t->cols / 2)),
                               t->scale->data + (size_t)(r * t->n_groups), t->cols,
                               codes + (size_t)(r - row0) * (size_t)t->cols,
                               scales + (size_t)(r - row0) * (size_t)t->n_groups,
                               zeros + (size_t)(r - row0) * (size_t)t->n_groups);
        return QB_OK;
    }
    if (!t->has_grid && !fp8)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: no integer grid", t->w->file, t->name);
    if (row0 < 0 || n_rows < 0 || row0 > t->rows || n_rows > t->rows - row0)
        return h->set_error(h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)",
                            t->w->file, t->name, (long long)row0, (long long)n_rows,
                            (long long)t->rows);
    for (r = row0; r < row0 + n_rows; r++) {
        size_t i = (size_t)(r - row0);
        ct_scale_row(t, r, scales + i * (size_t)t->n_groups);
        if (fp8) {
            /* e4m3 bytes as stored; zeros unused (qb_tensor.h QB_CODE_F8_E4M3) */
            memcpy(codes + i * (size_t)t->cols, t->w->data + (size_t)(r * t->cols),
                   (size_t)t->cols);
            memset(zeros + i * (size_t)t->n_groups, 0, (size_t)t->n_groups * sizeof(int32_t));
            continue;
        }
        ct_zero_row(t, r, zeros + i * (size_t)t->n_groups);
        if (ct_code_row(t, r, codes + i * (size_t)t->cols) != 0)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: row %lld holds a code outside the %d-bit "
                                "range", t->w->file, t->w->name, (long long)r, t->bits);
    }
    return QB_OK;
}
