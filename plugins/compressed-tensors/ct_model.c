/*
 * compressed-tensors reader — pairing and validation. See ct_model.h.
 */
#include "ct_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "qbk_fp4_decode.h"
#include "qbk_fp8_decode.h"
#include "qbk_nvfp4_grid.h"
#include "qbk_str.h"
#include "qbk_alloc.h"
#include "qbk_reader.h"

/* Pointer set of consumed partner tensors (open addressing). */
typedef struct ct_pset {
    const void **slot;
    size_t mask;
} ct_pset;

static int ct_pset_init(ct_pset *s, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2)
        cap *= 2;
    s->slot = qbk_calloc(cap, sizeof(*s->slot));
    s->mask = cap - 1;
    return s->slot ? 0 : -1;
}

static size_t ct_pset_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static void ct_pset_add(ct_pset *s, const void *p)
{
    size_t i = ct_pset_hash(p) & s->mask;
    while (s->slot[i] && s->slot[i] != p)
        i = (i + 1) & s->mask;
    s->slot[i] = p;
}

static int ct_pset_has(const ct_pset *s, const void *p)
{
    size_t i = ct_pset_hash(p) & s->mask;
    while (s->slot[i]) {
        if (s->slot[i] == p)
            return 1;
        i = (i + 1) & s->mask;
    }
    return 0;
}

static int64_t ct_cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t ct_le_int(const uint8_t *p, size_t size)
{
    uint64_t v = 0;
    size_t i;
    for (i = 0; i < size; i++)
        v |= (uint64_t)p[i] << (8 * i);
    if (size == 4)
        return (int64_t)(int32_t)(uint32_t)v;
    return (int64_t)v;
}

static const char *const ct_partner_suffix[] = {".weight_scale", ".weight_zero_point",
                                                ".weight_g_idx", ".weight_shape",
                                                ".weight_global_scale", NULL};
#define CT_N_PARTNERS 5

static int ct_fp4_format(ct_format f)
{
    return f == CT_F_NVFP4 || f == CT_F_MXFP4;
}

/* Activation / KV-cache parameters: not weights (docs/formats/compressed-tensors.md, "Non-weight parameters"). */
static int ct_is_activation_param(const char *name)
{
    static const char *const suf[] = {".input_scale", ".input_zero_point", ".output_scale",
                                      ".output_zero_point", ".k_scale", ".v_scale",
                                      ".kv_scale", ".q_scale", ".input_g_idx", NULL};
    size_t i, stem;
    for (i = 0; suf[i]; i++)
        if (qbk_split_suffix(name, suf[i], &stem))
            return 1;
    return 0;
}

static qb_status ct_add(const qb_host *h, ct_model *m, ct_tensor **out)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        ct_tensor *nt = qbk_realloc(m->t, cap * sizeof(*nt));
        if (!nt)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", m->b.d->dir);
        m->t = nt;
        m->cap = cap;
    }
    *out = &m->t[m->n++];
    memset(*out, 0, sizeof(**out));
    return QB_OK;
}

/* FP4 group scales: NVFP4 F8_E4M3 [N, K/16] without NaN bytes (S.1111.111:
 * upstream would turn the group into NaN), MXFP4 U8 E8M0 [N, K/32] without
 * 255 (NaN in OCP MX; upstream's 2.0 ** 128 in bf16 is inf). K must be a
 * whole number of groups: _process_group raises otherwise. */
static qb_status ct_check_fp4_scale(const qb_host *h, const ct_scheme *sc, ct_tensor *t)
{
    const qb_st_tensor *s = t->scale;
    int nv = t->kind == CT_K_NVFP4;
    int64_t i, n;

    t->gs = sc->group_size;
    if (t->cols % t->gs != 0)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: %lld columns are not a whole number of "
                            "%lld-element groups", t->w->file, t->w->name, (long long)t->cols,
                            (long long)t->gs);
    t->n_groups = t->cols / t->gs;
    if (s->dtype != (nv ? QB_DT_F8_E4M3 : QB_DT_U8) || s->n_dims != 2 || s->dims[0] != t->rows ||
        s->dims[1] != t->n_groups)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: scale should be %s [%lld, %lld] for weight "
                            "[%lld, %lld] (%s %s [%lld, %lld])", s->file, s->name,
                            nv ? "F8_E4M3" : "U8 (E8M0)", (long long)t->rows,
                            (long long)t->n_groups, (long long)t->rows, (long long)t->cols,
                            "found", s->dtype_name, (long long)(s->n_dims > 0 ? s->dims[0] : 0),
                            (long long)(s->n_dims > 1 ? s->dims[1] : 0));
    n = t->rows * t->n_groups;
    for (i = 0; i < n; i++) {
        uint8_t b = s->data[i];
        if (nv ? (b & 0x7Fu) == 0x7Fu : b == 0xFFu)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: scale [%lld, %lld] is NaN (byte 0x%02X)",
                                s->file, s->name, (long long)(i / t->n_groups),
                                (long long)(i % t->n_groups), b);
    }
    return QB_OK;
}

/* NVFP4 weight_global_scale: F32 [1] as the compressor saves it. A 0-d
 * tensor would make upstream divide in bf16 instead (torch type
 * promotion), a different value, so it is refused rather than guessed. */
static qb_status ct_check_gscale(const qb_host *h, ct_tensor *t, const qb_st_tensor *g)
{
    if (g->dtype != QB_DT_F32 || g->n_dims != 1 || g->dims[0] != 1)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: global scale should be F32 [1] (found %s "
                            "with %u dims)", g->file, g->name, g->dtype_name, (unsigned)g->n_dims);
    qbk_float_store_to_f32(QB_DT_F32, g->data, 1, &t->gscale);
    if (!isfinite(t->gscale) || !(t->gscale > 0.0f))
        return h->set_error(h, QB_E_FORMAT, "%s: %s: global scale %g is not a positive finite "
                            "number", g->file, g->name, (double)t->gscale);
    return QB_OK;
}

/* Validates the scale of t (strategy geometry) and sets n_groups / gs. */
static qb_status ct_check_scale(const qb_host *h, const ct_scheme *sc, ct_tensor *t)
{
    const qb_st_tensor *s = t->scale;
    int64_t N = t->rows, K = t->cols, er = 0, ec = 0;
    int ok = 0;

    if (t->kind == CT_K_NVFP4 || t->kind == CT_K_MXFP4)
        return ct_check_fp4_scale(h, sc, t);
    if (!qbk_float_store_ok(s->dtype) || qbk_float_store_size(s->dtype) < 2)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: scale dtype %s is not F32/BF16/F16", s->file,
                            s->name, s->dtype_name);
    switch (sc->strategy) {
    case CT_S_TENSOR:
        ok = qbk_reader_numel(s) == 1 && s->n_dims <= 2;
        t->n_groups = 1;
        t->gs = K;
        er = ec = 1;
        break;
    case CT_S_CHANNEL:
        ok = (s->n_dims == 2 && s->dims[0] == N && s->dims[1] == 1) ||
             (s->n_dims == 1 && s->dims[0] == N);
        t->n_groups = 1;
        t->gs = K;
        er = N;
        ec = 1;
        break;
    case CT_S_GROUP:
        t->n_groups = ct_cdiv(K, sc->group_size);
        t->gs = sc->group_size;
        ok = s->n_dims == 2 && s->dims[0] == N && s->dims[1] == t->n_groups;
        er = N;
        ec = t->n_groups;
        break;
    case CT_S_TENSOR_GROUP: /* FP4 only, checked above */
        break;
    case CT_S_BLOCK:
        t->bh = sc->bh;
        t->bw = sc->bw;
        t->n_groups = ct_cdiv(K, sc->bw);
        t->gs = sc->bw;
        er = ct_cdiv(N, sc->bh);
        ec = t->n_groups;
        ok = s->n_dims == 2 && s->dims[0] == er && s->dims[1] == ec;
        break;
    }
    if (!ok)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: scale shape does not fit weight [%lld, %lld] "
                            "under the scheme's strategy (expected [%lld, %lld])", s->file, s->name,
                            (long long)N, (long long)K, (long long)er, (long long)ec);
    return QB_OK;
}

static qb_status ct_check_zp(const qb_host *h, const ct_scheme *sc, ct_tensor *t)
{
    const qb_st_tensor *z = t->zp, *s = t->scale;
    int64_t N = t->rows, G = t->n_groups, pf = 32 / t->bits, r, g, zq;
    int32_t half = 1 << (t->bits - 1), lo = -half, hi = half - 1;
    uint32_t mask = (uint32_t)((1u << t->bits) - 1u);
    uint32_t i;

    t->grid_symmetric = 1;
    if (t->kind == CT_K_PACKED && z->dtype == QB_DT_I32 &&
        (sc->strategy == CT_S_GROUP || sc->strategy == CT_S_CHANNEL)) {
        /* compressed-tensors >= 0.10: pack_to_int32(zero_point, packed_dim=0) */
        if (z->n_dims != 2 || z->dims[0] != ct_cdiv(N, pf) || z->dims[1] != G)
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: packed zero points should be I32 "
                                "[%lld, %lld] for weight [%lld, %lld]", z->file, z->name,
                                (long long)ct_cdiv(N, pf), (long long)G, (long long)N,
                                (long long)t->cols);
        t->zp_packed = 1;
        for (r = 0; r < N; r++)
            for (g = 0; g < G; g++) {
                uint32_t w = (uint32_t)ct_le_int(z->data + 4 * (size_t)((r / pf) * G + g), 4);
                if (((w >> (t->bits * (r % pf))) & mask) != (uint32_t)half)
                    t->grid_symmetric = 0;
            }
        return QB_OK;
    }
    /* unpacked signed zero points (older pack-quantized, naive, tensor
     * strategy): I8 in the scale's shape */
    if (z->dtype != QB_DT_I8 || z->n_dims != s->n_dims)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: zero points should be I8 shaped like %s "
                            "(or I32 packed along rows)", z->file, z->name, s->name);
    for (i = 0; i < z->n_dims; i++)
        if (z->dims[i] != s->dims[i])
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: zero point shape differs from %s",
                                z->file, z->name, s->name);
    for (r = 0; r < qbk_reader_numel(z); r++) {
        zq = (int8_t)z->data[r];
        if (zq < lo || zq > hi)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: zero point %lld outside [%d, %d] of "
                                "%d-bit codes", z->file, z->name, (long long)zq, lo, hi, t->bits);
        if (zq != 0)
            t->grid_symmetric = 0;
    }
    return QB_OK;
}

static qb_status ct_check_gidx(const qb_host *h, ct_tensor *t, const qb_st_tensor *gi)
{
    int64_t k, v;

    if (gi->dtype != QB_DT_I32 || gi->n_dims != 1 || gi->dims[0] != t->cols)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: g_idx should be I32 [%lld]", gi->file,
                            gi->name, (long long)t->cols);
    t->g_idx = qbk_malloc((size_t)t->cols * sizeof(int32_t));
    if (!t->g_idx)
        return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", gi->file, gi->name);
    for (k = 0; k < t->cols; k++) {
        v = ct_le_int(gi->data + 4 * (size_t)k, 4);
        if (v < 0 || v >= t->n_groups)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: g_idx[%lld] = %lld outside [0, %lld)",
                                gi->file, gi->name, (long long)k, (long long)v,
                                (long long)t->n_groups);
        t->g_idx[k] = (int32_t)v;
    }
    return QB_OK;
}

static qb_status ct_encoding(const qb_host *h, const ct_scheme *sc, ct_tensor *t)
{
    char enc[128], strat[48];

    switch (sc->strategy) {
    case CT_S_TENSOR: snprintf(strat, sizeof(strat), "tensor"); break;
    case CT_S_CHANNEL: snprintf(strat, sizeof(strat), "channel"); break;
    case CT_S_GROUP: snprintf(strat, sizeof(strat), "g%lld", (long long)sc->group_size); break;
    case CT_S_BLOCK:
        snprintf(strat, sizeof(strat), "block%lldx%lld", (long long)sc->bh, (long long)sc->bw);
        break;
    case CT_S_TENSOR_GROUP:
        snprintf(strat, sizeof(strat), "g%lld+global", (long long)sc->group_size);
        break;
    }
    if (ct_fp4_format(sc->format))
        snprintf(enc, sizeof(enc), "ct %s e2m1 %s", sc->format == CT_F_NVFP4 ? "nvfp4" : "mxfp4",
                 strat);
    else
    snprintf(enc, sizeof(enc), "ct %s%d %s %s%s%s%s", sc->is_float ? "fp" : "int", sc->bits, strat,
             sc->symmetric ? "sym" : "asym", t->g_idx ? " act-order" : "",
             sc->format == CT_F_PACK ? "" : " ", sc->format == CT_F_PACK ? "" : sc->format_name);
    t->encoding = qbk_strdup(enc);
    if (!t->encoding)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", t->w->file);
    return QB_OK;
}

/* The scheme of quantized module `module` (weight w, partners p: scale,
 * zp, g_idx, shape, global scale) in config_groups, and the partners and
 * layout it requires against those present: one scheme, not ignored,
 * quantizing weights, the packed or naive layout, the dtype, each partner
 * present exactly when the scheme needs it. */
static qb_status ct_scheme_of(const qb_host *h, const ct_model *m, const qb_st_tensor *w,
                              const char *module, int packed,
                              const qb_st_tensor *const p[CT_N_PARTNERS], const ct_scheme **out)
{
    const ct_scheme *sc;
    int ignored, n_match, by_name;

    sc = *out = ct_config_lookup(&m->cfg, module, 1, &ignored, &n_match, &by_name);
    if (ignored)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover quantized tensor: module %s is in "
                            "the ignore list", w->file, w->name, module);
    if (!sc || !sc->has_weights)
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover quantized tensor: no config_groups "
                            "scheme quantizes the weights of module %s", w->file, w->name, module);
    if (n_match > 1)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: module %s matches several config_groups "
                            "with different weight schemes; which applies is ambiguous", w->file,
                            w->name, module);
    if (packed != (sc->format == CT_F_PACK || ct_fp4_format(sc->format)))
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: tensor layout disagrees with format "
                            "\"%s\" of config_groups.%s", w->file, w->name, sc->format_name,
                            sc->name);
    if (!packed && (sc->is_float ? w->dtype != QB_DT_F8_E4M3 : w->dtype != QB_DT_I8))
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: dtype %s but config_groups.%s stores %s",
                            w->file, w->name, w->dtype_name, sc->name,
                            sc->is_float ? "F8_E4M3" : "I8");
    if (!p[0])
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s: partner %s.weight_scale is missing",
                            w->file, w->name, module);
    if (!sc->symmetric && !p[1])
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s: partner %s.weight_zero_point is missing "
                            "(config_groups.%s is asymmetric)", w->file, w->name, module, sc->name);
    if (sc->act_group != !!p[2])
        return h->set_error(h, p[2] ? QB_E_MISMATCH : QB_E_NOT_FOUND,
                            p[2] ? "%s: %s: leftover %s.weight_g_idx: config_groups.%s has no "
                                   "actorder group" : "%s: %s: partner %s.weight_g_idx is missing "
                                   "(config_groups.%s has actorder group)",
                            w->file, w->name, module, sc->name);
    if ((sc->format == CT_F_NVFP4) != !!p[4])
        return h->set_error(h, p[4] ? QB_E_MISMATCH : QB_E_NOT_FOUND,
                            p[4] ? "%s: %s: leftover %s.weight_global_scale: config_groups.%s is "
                                   "not nvfp4-pack-quantized" : "%s: %s: partner "
                                   "%s.weight_global_scale is missing (config_groups.%s is "
                                   "nvfp4-pack-quantized)", w->file, w->name, module, sc->name);
    if ((sc->format == CT_F_PACK) != !!p[3] && !(ct_fp4_format(sc->format) && p[3]))
        return h->set_error(h, packed ? QB_E_NOT_FOUND : QB_E_MISMATCH,
                            packed ? "%s: %s: partner %s.weight_shape is missing"
                                   : "%s: %s: leftover %s.weight_shape for an unpacked weight",
                            w->file, w->name, module);
    return QB_OK;
}

/* t's matrix view from its weight and weight_shape: FP4 formats hold two
 * codes per byte, pack-quantized ceil(K / (32 / bits)) words per row
 * (weight_shape gives K), naive ones the matrix itself. */
static qb_status ct_geometry(const qb_host *h, const ct_scheme *sc, ct_tensor *t, int packed,
                             const qb_st_tensor *const p[CT_N_PARTNERS])
{
    const qb_st_tensor *w = t->w;

    if (w->n_dims != 2 || w->dims[0] < 1 || w->dims[1] < 1)
        return h->set_error(h, QB_E_FORMAT, "%s: %s: not a 2-D [out, in] tensor", w->file, w->name);
    if (ct_fp4_format(sc->format)) {
        /* two E2M1 codes per byte: K = 2 * packed width (unpack_fp4_from_uint8) */
        const qb_st_tensor *ws = p[3];
        if (w->dtype != QB_DT_U8)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: weight_packed dtype %s is not U8 (%s)",
                                w->file, w->name, w->dtype_name, sc->format_name);
        t->rows = w->dims[0];
        t->cols = 2 * w->dims[1];
        if (ws) {
            size_t es = ws->dtype == QB_DT_I64 ? 8 : 4;
            if ((ws->dtype != QB_DT_I64 && ws->dtype != QB_DT_I32) || ws->n_dims != 1 ||
                ws->dims[0] != 2 || ct_le_int(ws->data, es) != t->rows ||
                ct_le_int(ws->data + es, es) != t->cols)
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: weight_shape disagrees with "
                                    "weight_packed [%lld, %lld] holding %lld FP4 columns", ws->file,
                                    ws->name, (long long)w->dims[0], (long long)w->dims[1],
                                    (long long)t->cols);
        }
        if (p[4])
            return ct_check_gscale(h, t, p[4]);
    } else if (packed) {
        const qb_st_tensor *ws = p[3];
        int64_t pf = 32 / sc->bits, n0, k0;
        size_t es = ws->dtype == QB_DT_I64 ? 8 : 4;
        if (w->dtype != QB_DT_I32)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: weight_packed dtype %s is not I32",
                                w->file, w->name, w->dtype_name);
        /* declared int32, written from torch.tensor(weight.shape) = int64
         * (compress_weight); both occur */
        if ((ws->dtype != QB_DT_I64 && ws->dtype != QB_DT_I32) || ws->n_dims != 1 ||
            ws->dims[0] != 2)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: weight_shape is not an I32/I64 [2]",
                                ws->file, ws->name);
        n0 = ct_le_int(ws->data, es);
        k0 = ct_le_int(ws->data + es, es);
        if (n0 != w->dims[0] || k0 < 1 || ct_cdiv(k0, pf) != w->dims[1])
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: weight_shape [%lld, %lld] disagrees "
                                "with weight_packed [%lld, %lld] at %d bits (%lld codes per word)",
                                ws->file, ws->name, (long long)n0, (long long)k0,
                                (long long)w->dims[0], (long long)w->dims[1], sc->bits,
                                (long long)pf);
        t->rows = n0;
        t->cols = k0;
    } else {
        t->rows = w->dims[0];
        t->cols = w->dims[1];
    }
    return QB_OK;
}

/* One quantized module: its weight tensor w (weight_packed or a quantized
 * weight), found by suffix; module name is w->name[0..stem). */
static qb_status ct_quantized(const qb_host *h, ct_model *m, ct_pset *used, const qb_st_tensor *w,
                              size_t stem, int packed)
{
    const qb_st_api *api = h->safetensors;
    const ct_scheme *sc;
    const qb_st_tensor *p[CT_N_PARTNERS] = {NULL}; /* scale, zp, g_idx, shape, global */
    char *module = NULL, *nm = NULL;
    int i;
    ct_tensor *t = NULL;
    qb_status st;

    module = qbk_stem_cat(w->name, stem, "");
    if (!module)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
    for (i = 0; i < CT_N_PARTNERS; i++) {
        nm = qbk_stem_cat(w->name, stem, ct_partner_suffix[i]);
        if (!nm) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
            goto out;
        }
        p[i] = api->find(m->b.d->st, nm);
        qbk_free(nm);
        nm = NULL;
    }
    if (!packed) {
        nm = qbk_stem_cat(w->name, stem, ".weight_packed");
        if (!nm) {
            st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
            goto out;
        }
        if (api->find(m->b.d->st, nm)) {
            qbk_free(nm);
            st = h->set_error(h, QB_E_MISMATCH, "%s: %s: module has both a quantized weight and "
                              "weight_packed", w->file, w->name);
            goto out;
        }
        qbk_free(nm);
        nm = NULL;
    }
    st = ct_scheme_of(h, m, w, module, packed, p, &sc);
    if (st != QB_OK)
        goto out;
    st = ct_add(h, m, &t);
    if (st != QB_OK)
        goto out;
    t->w = w;
    t->scale = p[0];
    t->zp = p[1];
    t->bits = sc->bits;
    t->strategy = sc->strategy;
    t->kind = sc->format == CT_F_NVFP4 ? CT_K_NVFP4 : sc->format == CT_F_MXFP4 ? CT_K_MXFP4
              : packed ? CT_K_PACKED : sc->is_float ? CT_K_FLOAT : CT_K_INT;
    t->name = qbk_stem_cat(w->name, stem, ".weight");
    if (!t->name) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", w->file);
        goto out;
    }
    st = ct_geometry(h, sc, t, packed, p);
    if (st != QB_OK)
        goto out;
    st = ct_check_scale(h, sc, t);
    if (st == QB_OK && p[2])
        st = ct_check_gidx(h, t, p[2]);
    if (st == QB_OK && p[1])
        st = ct_check_zp(h, sc, t);
    else
        t->grid_symmetric = 1;
    if (st != QB_OK)
        goto out;
    if (sc->symmetric && p[1]) {
        /* BaseQuantizationCompressor.compress skips the zero point of a
         * symmetric scheme, but older writers saved it (all zero); only
         * zeros agree with the config, anything else is a contradiction */
        if (!t->grid_symmetric) {
            st = h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover weight_zero_point with nonzero "
                              "zero points although config_groups.%s is symmetric", p[1]->file,
                              p[1]->name, sc->name);
            goto out;
        }
        h->log(h, QB_LOG_WARN, "%s: %s: zero points of a symmetric scheme (all zero); ignored",
               p[1]->file, p[1]->name);
        t->zp = NULL;
        t->zp_packed = 0;
    }
    t->has_grid = (t->kind == CT_K_PACKED || t->kind == CT_K_INT) && t->strategy != CT_S_BLOCK;
    st = ct_encoding(h, sc, t);
    if (st != QB_OK)
        goto out;
    m->scheme_use[sc - m->cfg.s]++;
    for (i = 0; i < CT_N_PARTNERS; i++)
        if (p[i])
            ct_pset_add(used, p[i]);
    ct_pset_add(used, w);
    m->n_quant++;
out:
    qbk_free(module);
    return st;
}

static qb_status ct_dense(const qb_host *h, ct_model *m, const qb_st_tensor *x)
{
    ct_tensor *t = NULL;
    size_t stem;
    qb_status st;

    if (!qb_streader_is_dense(x))
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: %s: dtype %s is not a float dense tensor and "
                            "no compressed-tensors scheme explains it", x->file, x->name,
                            x->dtype_name);
    if (qbk_split_suffix(x->name, ".weight", &stem) && x->n_dims == 2) {
        int ignored, n_match, by_name;
        const ct_scheme *sc;
        char *module = qbk_stem_cat(x->name, stem, "");
        char *packed = qbk_stem_cat(x->name, stem, ".weight_packed");
        if (!module || !packed) {
            qbk_free(module);
            qbk_free(packed);
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", x->file);
        }
        if (h->safetensors->find(m->b.d->st, packed)) {
            qbk_free(module);
            qbk_free(packed);
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: module has both a dense weight and "
                                "weight_packed", x->file, x->name);
        }
        qbk_free(packed);
        sc = ct_config_lookup(&m->cfg, module, 1, &ignored, &n_match, &by_name);
        qbk_free(module);
        if (!ignored && sc && sc->has_weights) {
            if (by_name)
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: config_groups.%s quantizes this "
                                    "module but its weight is stored dense (missing "
                                    "weight_packed/weight_scale?)", x->file, x->name, sc->name);
            /* matched only by class "Linear": an Embedding is 2-D too and is
             * never a Linear, so a dense float weight is taken as it is */
            h->log(h, QB_LOG_INFO, "%s: %s: dense 2-D weight although \"Linear\" is targeted; "
                   "taken as a non-Linear module (embedding) and passed through", x->file,
                   x->name);
        }
    }
    st = ct_add(h, m, &t);
    if (st != QB_OK)
        return st;
    t->kind = CT_K_DENSE;
    t->w = x;
    qb_streader_matrix(x->n_dims, x->dims, &t->rows, &t->cols);
    return QB_OK;
}

static qb_status ct_model_open(qb_streader *r, const qb_param *params)
{
    const qb_host *h = r->host;
    const qb_st_api *api = h->safetensors;
    const char *path = r->dir->dir;
    ct_pset used = {NULL, 0};
    ct_model *m;
    size_t n_st, i, stem, j;
    qb_status st;

    (void)params;
    st = qbk_reader_model_new(r, sizeof(*m), (void **)&m);
    if (st != QB_OK)
        goto out;
    st = ct_config_parse(h, m->b.d->dir, m->b.qcfg, &m->cfg);
    if (st != QB_OK)
        goto out;
    n_st = api->count(m->b.d->st);
    m->scheme_use = qbk_calloc(m->cfg.n ? m->cfg.n : 1, sizeof(size_t));
    if (!m->scheme_use || ct_pset_init(&used, n_st) != 0) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        goto out;
    }
    /* Pass 1: quantized modules take their partners, in source order. */
    for (i = 0; i < n_st; i++) {
        const qb_st_tensor *x = api->tensor(m->b.d->st, i);
        if (qbk_split_suffix(x->name, ".weight_packed", &stem))
            st = ct_quantized(h, m, &used, x, stem, 1);
        else if (qbk_split_suffix(x->name, ".weight", &stem) &&
                 (x->dtype == QB_DT_I8 || x->dtype == QB_DT_F8_E4M3 ||
                  x->dtype == QB_DT_F8_E5M2))
            st = ct_quantized(h, m, &used, x, stem, 0);
        if (st != QB_OK)
            goto out;
    }
    /* Pass 2: leftovers are errors, activation parameters are dropped,
     * the rest is dense. */
    for (i = 0; i < n_st; i++) {
        const qb_st_tensor *x = api->tensor(m->b.d->st, i);
        if (ct_pset_has(&used, x))
            continue;
        for (j = 0; ct_partner_suffix[j]; j++)
            if (qbk_split_suffix(x->name, ct_partner_suffix[j], &stem))
                break;
        if (ct_partner_suffix[j]) {
            st = h->set_error(h, QB_E_MISMATCH, "%s: %s: leftover quantization tensor: its module "
                              "has no quantized weight", x->file, x->name);
            goto out;
        }
        if (ct_is_activation_param(x->name)) {
            h->log(h, QB_LOG_DEBUG, "%s: %s: activation parameter, not a weight; dropped",
                   x->file, x->name);
            continue;
        }
        st = ct_dense(h, m, x);
        if (st != QB_OK)
            goto out;
    }
    if (m->n_quant == 0) {
        st = h->set_error(h, QB_E_FORMAT, "%s: config says compressed-tensors but no quantized "
                          "weight was found", m->b.d->dir);
        goto out;
    }
    {
        /* one line for inspect: format, then per scheme bits, strategy,
         * group size, symmetry, act-order and how many modules use it */
        char buf[512];
        size_t off;
        off = (size_t)snprintf(buf, sizeof(buf), "compressed-tensors %s;",
                               m->cfg.global_format ? m->cfg.global_format : "(per scheme)");
        for (i = 0; i < m->cfg.n && off < sizeof(buf) - 1; i++) {
            const ct_scheme *sc = &m->cfg.s[i];
            static const char *const strat[] = {"tensor", "channel", "group", "block",
                                                "tensor_group"};
            char gs[48] = "", ty[16];
            if (!sc->has_weights || !m->scheme_use[i])
                continue;
            if (sc->is_float)
                snprintf(ty, sizeof(ty), sc->bits == 4 ? "fp4-e2m1" : "fp8-e4m3");
            else
                snprintf(ty, sizeof(ty), "int%d", sc->bits);
            if (sc->strategy == CT_S_GROUP || sc->strategy == CT_S_TENSOR_GROUP)
                snprintf(gs, sizeof(gs), " group_size %lld", (long long)sc->group_size);
            else if (sc->strategy == CT_S_BLOCK)
                snprintf(gs, sizeof(gs), " block %lldx%lld", (long long)sc->bh,
                         (long long)sc->bw);
            off += (size_t)snprintf(buf + off, sizeof(buf) - off,
                                    " %s: %s %s%s %s%s %s (%zu modules);", sc->name, ty,
                                    strat[sc->strategy], gs,
                                    sc->symmetric ? "symmetric" : "asymmetric",
                                    sc->act_group ? " act-order" : "", sc->format_name,
                                    m->scheme_use[i]);
        }
        if (off < sizeof(buf) - 1)
            snprintf(buf + off, sizeof(buf) - off, " %zu quantized + %zu dense tensors",
                     m->n_quant, m->n - m->n_quant);
        if ((st = qb_streader_set_summary(r, "%s", buf)) != QB_OK)
            goto out;
    }
    r->n_tensors = m->n;
    st = QB_OK;
out:
    qbk_free(used.slot);
    return st;
}

static void ct_model_close(qb_streader *r)
{
    ct_model *m = r->model;
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n; i++) {
        qbk_free(m->t[i].name);
        qbk_free(m->t[i].encoding);
        qbk_free(m->t[i].g_idx);
    }
    qbk_free(m->t);
    qbk_free(m->scheme_use);
    ct_config_free(&m->cfg);
    qbk_reader_model_free(r);
}

static void ct_describe(const qb_streader *r, size_t i, qb_streader_tensor *out)
{
    const ct_tensor *t = &((const ct_model *)r->model)->t[i];
    qb_streader_describe_dense(t->w, out); /* its data first */
    if (t->kind == CT_K_DENSE)
        return;
    out->name = t->name;
    out->n_dims = 2;
    out->dims[0] = t->rows;
    out->dims[1] = t->cols;
    memset(out->dims + 2, 0, sizeof(out->dims) - 2 * sizeof(out->dims[0]));
    out->source_dtype = t->kind == CT_K_FLOAT ? QB_DT_F8_E4M3 : QB_DT_QUANTIZED;
    out->encoding = t->encoding;
    out->has_grid = t->has_grid;
    /* FP8 weights: their e4m3 bytes and scales as a float-coded grid (ABI
     * 1.3); ct_read.c's value is that code times its scale, one product */
    if (t->kind == CT_K_FLOAT && !t->zp && t->w->dtype == QB_DT_F8_E4M3)
        out->grid_codes = QB_CODES_BIT(QB_CODE_F8_E4M3);
    /* NVFP4: e2m1 codes, e4m3 group scales and the global scale (ABI 1.5),
     * whose value ct_read.c computes as e2m1 * (e4m3 / global) */
    if (t->kind == CT_K_NVFP4)
        out->grid_codes = QB_CODES_BIT(QB_CODE_F4_E2M1);
    /* weight_g_idx, weight_shape and other "<module>.*" parts reach the
     * tensor through its name (qb_streader.h) */
    out->stored[1] = t->scale;
    out->stored[2] = t->zp;
}

static qb_status ct_read_rows_cb(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                                 float *dst)
{
    return ct_tensor_read_rows(r->host, &((const ct_model *)r->model)->t[i], row0, n_rows, dst);
}

static qb_status ct_grid_info(const qb_streader *r, size_t i, qb_grid_info *out)
{
    const ct_tensor *t = &((const ct_model *)r->model)->t[i];
    if (t->kind == CT_K_FLOAT) {
        if (t->zp || t->w->dtype != QB_DT_F8_E4M3 || !QB_HAS_FIELD(out, qb_grid_info, scale_rows) ||
            !(out->accept_codes & QB_CODES_BIT(QB_CODE_F8_E4M3)))
            return r->host->set_error(r->host, QB_E_UNSUPPORTED, "%s: %s: no integer grid (its "
                                      "e4m3 grid goes to callers that accept float codes)",
                                      t->w->file, t->name);
        out->bits = 8;
        out->n_groups = (uint32_t)t->n_groups;
        out->group_size = t->strategy == CT_S_BLOCK ? t->bw : t->gs;
        out->col_group = NULL;
        out->symmetric = 1;
        out->scale_dtype = t->scale->dtype;
        out->code_kind = QB_CODE_F8_E4M3;
        out->scale_rows = t->strategy == CT_S_TENSOR ? t->rows
                          : t->strategy == CT_S_BLOCK ? t->bh : 1;
        return QB_OK;
    }
    if (t->kind == CT_K_NVFP4) {
        if (!QB_HAS_FIELD(out, qb_grid_info, tensor_scale) ||
            !(out->accept_codes & QB_CODES_BIT(QB_CODE_F4_E2M1)))
            return r->host->set_error(r->host, QB_E_UNSUPPORTED, "%s: %s: no integer grid (its "
                                      "e2m1 grid goes to callers that accept e2m1 codes and a "
                                      "tensor scale, ABI 1.5)", t->w->file, t->name);
        qbk_nvfp4_grid_info(out, (uint32_t)t->n_groups, QB_TENSOR_SCALE_DIV, t->gscale);
        return QB_OK;
    }
    out->bits = (uint32_t)t->bits;
    out->n_groups = (uint32_t)t->n_groups;
    out->group_size = t->g_idx ? 0 : t->gs;
    out->col_group = t->g_idx;
    out->symmetric = t->grid_symmetric;
    out->scale_dtype = t->scale->dtype;
    return QB_OK;
}

static qb_status ct_read_grid_cb(const qb_streader *r, size_t i, int64_t row0, int64_t n_rows,
                                 qb_grid_rows *out)
{
    return ct_tensor_read_grid(r->host, &((const ct_model *)r->model)->t[i], row0, n_rows,
                               out->codes, out->scales, out->zeros);
}

const qb_streader_class ct_class = {
    .struct_size = sizeof(qb_streader_class),
    .format = "compressed-tensors",
    .open = ct_model_open,
    .close = ct_model_close,
    .describe = ct_describe,
    .read_rows = ct_read_rows_cb,
    .grid_info = ct_grid_info,
    .read_grid = ct_read_grid_cb,
};
