/* Quantized-linear reader core: see qlinear_model.h. */
#include "qlinear.h"
#include "qbk_hf_sidefiles.h"

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/qb_half.h>

#include "qbk_json.h"
#include "qbk_path.h"
#include "qbk_str.h"
#include "qbk_alloc.h"
#include <quantbridge/base/qb_rows.h>
#include <quantbridge/base/qb_stdir.h>

/* Rows decoded per scratch chunk: bounds read_rows memory to
 * QLINEAR_CHUNK * (K + 8 * G) bytes whatever range the caller asks for. */
#define QLINEAR_CHUNK 32

void qlinear_free(qlinear_model *m)
{
    size_t i;
    if (!m)
        return;
    for (i = 0; i < m->n; i++) {
        qbk_free(m->t[i].name);
        qbk_free(m->t[i].encoding);
        qbk_free(m->t[i].g_idx);
    }
    qbk_free(m->t);
    qbk_free(m->summary);
    qb_stdir_close(m->d);
    qbk_free(m);
}

qlinear_tensor *qlinear_append(qlinear_model *m, const char *name)
{
    qlinear_tensor *t;
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 64;
        qlinear_tensor *nt = qbk_realloc(m->t, cap * sizeof(*nt));
        if (!nt)
            goto nomem;
        m->t = nt;
        m->cap = cap;
    }
    t = &m->t[m->n];
    memset(t, 0, sizeof(*t));
    if (!(t->name = qbk_strdup(name)))
        goto nomem;
    m->n++;
    return t;
nomem:
    m->host->set_error(m->host, QB_E_NOMEM, "%s: %s: out of memory", m->dir, name);
    return NULL;
}

qlinear_tensor *qlinear_append_quant(qlinear_model *m, const char *module,
                                            const qlinear_tensor *proto)
{
    qlinear_tensor *t;
    char *w = qbk_strdupf("%s.weight", module), *name;
    if (!w) {
        m->host->set_error(m->host, QB_E_NOMEM, "%s: out of memory", module);
        return NULL;
    }
    t = qlinear_append(m, w);
    qbk_free(w);
    if (!t)
        return NULL;
    name = t->name;
    *t = *proto;
    t->name = name;
    t->kind = QLINEAR_QUANT;
    t->n_dims = 2;
    t->dims[0] = proto->N;
    t->dims[1] = proto->K;
    t->source_dtype = QB_DT_QUANTIZED;
    return t;
}

qb_status qlinear_add_dense(qlinear_model *m, const qb_st_tensor *st)
{
    qlinear_tensor *t;
    uint32_t d;
    if (st->dtype != QB_DT_F16 && st->dtype != QB_DT_BF16 && st->dtype != QB_DT_F32)
        return m->host->set_error(m->host, QB_E_UNSUPPORTED,
                                  "%s: %s: dtype %s is not a dense float type and no quantized "
                                  "module claims it",
                                  st->file, st->name, st->dtype_name);
    if (st->n_dims == 0)
        return m->host->set_error(m->host, QB_E_UNSUPPORTED, "%s: %s: scalar tensors are not supported",
                                  st->file, st->name);
    for (d = 0; d < st->n_dims; d++)
        if (st->dims[d] < 1)
            return m->host->set_error(m->host, QB_E_FORMAT, "%s: %s: empty dimension", st->file,
                                      st->name);
    if (!(t = qlinear_append(m, st->name)))
        return QB_E_NOMEM;
    t->kind = QLINEAR_DENSE;
    t->st = st;
    t->n_dims = st->n_dims;
    memcpy(t->dims, st->dims, sizeof(t->dims));
    t->source_dtype = st->dtype;
    t->encoding = qbk_strdup(st->dtype == QB_DT_F16 ? "f16" : st->dtype == QB_DT_BF16 ? "bf16" : "f32");
    if (!t->encoding)
        return m->host->set_error(m->host, QB_E_NOMEM, "%s: out of memory", st->name);
    return QB_OK;
}


const qb_st_tensor *qlinear_find(const qb_host *h, const qb_st_set *set, const char *module,
                                     const char *suffix)
{
    char name[1024];
    if ((size_t)snprintf(name, sizeof(name), "%s%s", module, suffix) >= sizeof(name))
        return NULL;
    return h->safetensors->find(set, name);
}

/* Splits tt's name at the first matching suffix: *module (qbk_malloc'd) and
 * *which, or NULL / -1 for a name with none. */
static qb_status split_name(qlinear_model *m, const qb_st_tensor *tt, const char *const *suffixes,
                            size_t n, char **module, int *which)
{
    size_t i;
    *module = NULL;
    *which = -1;
    for (i = 0; i < n; i++)
        if (qbk_ends_with(tt->name, suffixes[i])) {
            *which = (int)i;
            if (!(*module = qbk_strndup(tt->name, strlen(tt->name) - strlen(suffixes[i]))))
                return m->host->set_error(m->host, QB_E_NOMEM, "%s: out of memory", tt->name);
            return QB_OK;
        }
    return QB_OK;
}

qb_status qlinear_each(qlinear_model *m, const char *const *suffixes, size_t n_suffixes,
                           qlinear_part_fn fn, void *ctx)
{
    const qb_host *h = m->host;
    size_t i, n = h->safetensors->count(m->set);
    char *module = NULL;
    qb_status st = QB_OK;
    assert(n_suffixes > 0 && fn);
    for (i = 0; i < n && st == QB_OK; i++) {
        const qb_st_tensor *tt = h->safetensors->tensor(m->set, i);
        int which;
        qbk_free(module);
        if ((st = split_name(m, tt, suffixes, n_suffixes, &module, &which)) != QB_OK)
            break;
        if (!module) {
            if ((st = qlinear_add_dense(m, tt)) == QB_OK)
                st = fn(ctx, m, tt, NULL, -1);
            continue;
        }
        if (which != 0 && qlinear_find(h, m->set, module, suffixes[0]))
            continue; /* consumed by its quantized weight */
        st = fn(ctx, m, tt, module, which);
        if (st == QB_OK && which != 0)
            st = h->set_error(h, QB_E_FORMAT, "%s: %s: quantized part without %s%s in any shard", tt->file,
                              tt->name, module, suffixes[0]);
    }
    qbk_free(module);
    return st;
}

qb_status qlinear_model_info(const qlinear_model *m, qb_model_info *out)
{
    uint32_t ss = out->struct_size;
    if (ss < offsetof(qb_model_info, chat_template) + sizeof(out->chat_template))
        return m->host->set_error(m->host, QB_E_ABI, "%s: qb_model_info too small", m->dir);
    memset(out, 0, sizeof(*out));
    out->struct_size = ss < sizeof(*out) ? ss : (uint32_t)sizeof(*out);
    qb_stdir_model_info(m->d, m->n, m->source_format, m->summary, out);
    return QB_OK;
}

qb_status qlinear_tensor_info(const qlinear_model *m, size_t i, qb_tensor_info *out)
{
    const qlinear_tensor *t;
    uint32_t ss = out->struct_size;
    if (i >= m->n)
        return m->host->set_error(m->host, QB_E_RANGE, "%s: tensor index %zu out of range", m->dir, i);
    if (ss < offsetof(qb_tensor_info, has_grid) + sizeof(out->has_grid))
        return m->host->set_error(m->host, QB_E_ABI, "%s: qb_tensor_info too small", m->dir);
    t = &m->t[i];
    memset(out, 0, sizeof(*out));
    out->struct_size = ss < sizeof(*out) ? ss : (uint32_t)sizeof(*out);
    out->name = t->name;
    out->n_dims = t->n_dims;
    memcpy(out->dims, t->dims, sizeof(out->dims));
    out->source_dtype = t->source_dtype;
    out->source_encoding = t->encoding;
    out->has_grid = t->kind == QLINEAR_QUANT;
    return QB_OK;
}

uint32_t qlinear_word_bits(qb_dtype dt)
{
    switch (dt) {
    case QB_DT_I8:
    case QB_DT_U8:
        return 8;
    case QB_DT_I16:
    case QB_DT_U16:
        return 16;
    case QB_DT_I32:
    case QB_DT_U32:
        return 32;
    case QB_DT_I64:
    case QB_DT_U64:
        return 64;
    default:
        return 0;
    }
}

uint64_t qlinear_word(const qb_st_tensor *st, uint64_t idx)
{
    /* little-endian bytes assembled by hand: data may be unaligned and the
     * stored words are signed (trap: shift only unsigned values) */
    uint32_t nb = qlinear_word_bits(st->dtype) / 8, b;
    const uint8_t *p = st->data + idx * nb;
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (nb == 4) {
        /* the common int32 word: one load (perf: the byte loop was ~11 %
         * of an exact GPTQ repack) */
        uint32_t u;
        memcpy(&u, p, 4);
        return u;
    }
#endif
    for (b = 0; b < nb; b++)
        v |= (uint64_t)p[b] << (8 * b);
    return v;
}

uint32_t qlinear_field(const qb_st_tensor *st, uint64_t base, uint64_t stride, uint32_t word_bits,
                   uint32_t bits, uint64_t j)
{
    uint64_t pos = j * bits;
    uint64_t w = pos / word_bits;
    uint32_t sh = (uint32_t)(pos % word_bits);
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    uint64_t v = qlinear_word(st, base + w * stride) >> sh;
    if (sh + bits > word_bits) /* straddles into the next word (GPTQ 3-bit) */
        v |= qlinear_word(st, base + (w + 1) * stride) << (word_bits - sh);
    return (uint32_t)(v & mask);
}

float qlinear_float_at(const qb_st_tensor *st, uint64_t idx)
{
    uint16_t h;
    float f;
    switch (st->dtype) {
    case QB_DT_F16:
        memcpy(&h, st->data + 2 * idx, 2);
        return qb_f16_to_f32(h);
    case QB_DT_BF16:
        memcpy(&h, st->data + 2 * idx, 2);
        return qb_bf16_to_f32(h);
    default:
        memcpy(&f, st->data + 4 * idx, 4);
        return f;
    }
}

void qlinear_drop_pages(const qb_st_tensor *st)
{
    if (st)
        qb_rows_drop_pages(st->data, st->n_bytes);
}

/* Notes a read of tensor i; when the previous read was of another tensor,
 * drops that tensor's pages. A writer streams tensor after tensor (all
 * blocks of one before the next), so this bounds the mapped RSS to about
 * one tensor; any other access order only costs page faults. Thread-safe
 * (an atomic exchange; m itself is not const, only the read API is). */
static void qlinear_note_read(const qlinear_model *m, size_t i)
{
    size_t prev = __atomic_exchange_n(&((qlinear_model *)m)->last_read, i + 1, __ATOMIC_RELAXED);
    const qlinear_tensor *t;
    size_t k;
    if (prev == 0) {
        /* first read: open touched every tensor's scales / qzeros / g_idx
         * (checks, symmetric decision); drop them all once, else they stay
         * resident until each tensor's turn (~160 MB on a 7B model) */
        for (k = 0; k < m->n; k++)
            if (k != i) {
                qlinear_drop_pages(m->t[k].st);
                qlinear_drop_pages(m->t[k].qweight);
                qlinear_drop_pages(m->t[k].qzeros);
                qlinear_drop_pages(m->t[k].scales);
            }
        return;
    }
    if (prev == i + 1 || prev - 1 >= m->n)
        return;
    t = &m->t[prev - 1];
    if (t->kind == QLINEAR_DENSE) {
        qlinear_drop_pages(t->st);
    } else {
        qlinear_drop_pages(t->qweight);
        qlinear_drop_pages(t->qzeros);
        qlinear_drop_pages(t->scales);
    }
}

static int64_t qlinear_rows_of(const qlinear_tensor *t)
{
    int64_t r = 1;
    uint32_t i;
    if (t->n_dims < 2)
        return 1;
    for (i = 0; i + 1 < t->n_dims; i++)
        r *= t->dims[i];
    return r;
}

static qb_status qlinear_check_range(const qlinear_model *m, size_t i, int64_t row0, int64_t n_rows)
{
    int64_t rows;
    if (i >= m->n)
        return m->host->set_error(m->host, QB_E_RANGE, "%s: tensor index %zu out of range", m->dir, i);
    rows = qlinear_rows_of(&m->t[i]);
    if (row0 < 0 || n_rows < 0 || row0 > rows || n_rows > rows - row0)
        return m->host->set_error(m->host, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside [0, %lld)",
                                  m->dir, m->t[i].name, (long long)row0, (long long)n_rows,
                                  (long long)rows);
    return QB_OK;
}

/* d[i] = (float)(c[i] - z) * s for one contiguous group: the integer
 * difference converts exactly, then one rounded fp32 multiply (the
 * qb_tensor.h promise). SSE2 (part of x86-64) does 16 codes per step with
 * the same operations; perf: the scalar loop, then a 16-entry table, was
 * 12-14 % of a 7B GPTQ/AWQ convert. */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
static void qlinear_dequant_group(const uint8_t *c, int64_t n, int32_t z, float s, float *d)
{
    int64_t k = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128(), vz = _mm_set1_epi32(z);
    const __m128 vs = _mm_set1_ps(s);
    for (; k + 16 <= n; k += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(c + k));
        __m128i lo = _mm_unpacklo_epi8(b, zero), hi = _mm_unpackhi_epi8(b, zero);
        __m128i q0 = _mm_sub_epi32(_mm_unpacklo_epi16(lo, zero), vz);
        __m128i q1 = _mm_sub_epi32(_mm_unpackhi_epi16(lo, zero), vz);
        __m128i q2 = _mm_sub_epi32(_mm_unpacklo_epi16(hi, zero), vz);
        __m128i q3 = _mm_sub_epi32(_mm_unpackhi_epi16(hi, zero), vz);
        _mm_storeu_ps(d + k, _mm_mul_ps(_mm_cvtepi32_ps(q0), vs));
        _mm_storeu_ps(d + k + 4, _mm_mul_ps(_mm_cvtepi32_ps(q1), vs));
        _mm_storeu_ps(d + k + 8, _mm_mul_ps(_mm_cvtepi32_ps(q2), vs));
        _mm_storeu_ps(d + k + 12, _mm_mul_ps(_mm_cvtepi32_ps(q3), vs));
    }
#endif
    for (; k < n; k++)
        d[k] = (float)((int32_t)c[k] - z) * s;
}

static inline uint32_t qlinear_group_of(const qlinear_tensor *t, int64_t k)
{
    return t->g_idx ? (uint32_t)t->g_idx[k] : (uint32_t)(k / t->gs);
}

qb_status qlinear_read_rows(const qlinear_model *m, size_t i, int64_t row0, int64_t n_rows, float *dst)
{
    const qlinear_tensor *t;
    qb_status st = qlinear_check_range(m, i, row0, n_rows);
    uint8_t *codes = NULL;
    float *scales = NULL;
    int32_t *zeros = NULL;
    int64_t r0;
    if (st != QB_OK)
        return st;
    qlinear_note_read(m, i);
    t = &m->t[i];
    if (t->kind == QLINEAR_DENSE) {
        int64_t cols = t->dims[t->n_dims - 1];
        uint64_t e, base = (uint64_t)row0 * (uint64_t)cols, n = (uint64_t)n_rows * (uint64_t)cols;
        /* one loop per dtype (not qlinear_float_at per element): perf showed
         * the per-element dtype switch at ~7 % of a GPTQ conversion */
        if (qb_rows_dense_size(t->st->dtype)) {
            qb_rows_to_f32(t->st->dtype, t->st->data + qb_rows_dense_size(t->st->dtype) * base,
                           (size_t)n, dst);
        } else {
            for (e = 0; e < n; e++)
                dst[e] = qlinear_float_at(t->st, base + e);
        }
        /* dense rows are contiguous and read once: drop them now (a 32000 x
         * 4096 fp16 embedding alone is 250 MiB) */
        {
            /* element sizes as qlinear_float_at reads them */
            uint64_t esz = t->st->dtype == QB_DT_F16 || t->st->dtype == QB_DT_BF16 ? 2 : 4;
            qb_rows_drop_pages(t->st->data + base * esz, n * esz);
        }
        return QB_OK;
    }
    codes = qbk_malloc((size_t)QLINEAR_CHUNK * (size_t)t->K);
    scales = qbk_malloc((size_t)QLINEAR_CHUNK * t->G * sizeof(float));
    zeros = qbk_malloc((size_t)QLINEAR_CHUNK * t->G * sizeof(int32_t));
    if (!codes || !scales || !zeros) {
        st = m->host->set_error(m->host, QB_E_NOMEM, "%s: %s: out of memory", m->dir, t->name);
        goto out;
    }
    for (r0 = 0; r0 < n_rows; r0 += QLINEAR_CHUNK) {
        int64_t nr = n_rows - r0 < QLINEAR_CHUNK ? n_rows - r0 : QLINEAR_CHUNK, r, k;
        t->dec->codes(t, row0 + r0, nr, codes);
        t->dec->params(t, row0 + r0, nr, scales, zeros);
        for (r = 0; r < nr; r++) {
            const uint8_t *c = codes + r * t->K;
            const float *s = scales + r * t->G;
            const int32_t *z = zeros + r * t->G;
            float *d = dst + (r0 + r) * t->K;
            if (!t->g_idx) {
                /* contiguous groups: the group's zero and scale hoisted */
                int64_t k0;
                for (k0 = 0; k0 < t->K; k0 += t->gs) {
                    int64_t k1 = k0 + t->gs < t->K ? k0 + t->gs : t->K;
                    int32_t zg = z[k0 / t->gs];
                    float sg = s[k0 / t->gs];
                    qlinear_dequant_group(c + k0, k1 - k0, zg, sg, d + k0);
                }
                continue;
            }
            for (k = 0; k < t->K; k++) {
                uint32_t g = qlinear_group_of(t, k);
                /* the qb_tensor.h promise: integer difference, one fp32 multiply */
                d[k] = (float)((int32_t)c[k] - z[g]) * s[g];
            }
        }
    }
out:
    qbk_free(codes);
    qbk_free(scales);
    qbk_free(zeros);
    return st;
}

qb_status qlinear_grid_info(const qlinear_model *m, size_t i, qb_grid_info *out)
{
    const qlinear_tensor *t;
    uint32_t ss = out->struct_size;
    if (i >= m->n)
        return m->host->set_error(m->host, QB_E_RANGE, "%s: tensor index %zu out of range", m->dir, i);
    t = &m->t[i];
    if (t->kind != QLINEAR_QUANT)
        return m->host->set_error(m->host, QB_E_UNSUPPORTED, "%s: %s: dense tensor has no integer grid",
                                  m->dir, t->name);
    if (ss < offsetof(qb_grid_info, scale_dtype) + sizeof(out->scale_dtype))
        return m->host->set_error(m->host, QB_E_ABI, "%s: qb_grid_info too small", m->dir);
    memset(out, 0, sizeof(*out));
    out->struct_size = ss < sizeof(*out) ? ss : (uint32_t)sizeof(*out);
    out->bits = t->bits;
    out->n_groups = t->G;
    out->group_size = t->g_idx ? 0 : t->gs;
    out->col_group = t->g_idx;
    out->symmetric = t->symmetric;
    out->scale_dtype = t->scale_dtype;
    return QB_OK;
}

qb_status qlinear_read_grid(const qlinear_model *m, size_t i, int64_t row0, int64_t n_rows,
                        qb_grid_rows *out)
{
    const qlinear_tensor *t;
    qb_status st = qlinear_check_range(m, i, row0, n_rows);
    if (st != QB_OK)
        return st;
    qlinear_note_read(m, i);
    t = &m->t[i];
    if (t->kind != QLINEAR_QUANT)
        return m->host->set_error(m->host, QB_E_UNSUPPORTED, "%s: %s: dense tensor has no integer grid",
                                  m->dir, t->name);
    if (!out || !out->codes || !out->scales || !out->zeros)
        return m->host->set_error(m->host, QB_E_INVALID, "%s: %s: read_grid needs three buffers", m->dir,
                                  t->name);
    t->dec->codes(t, row0, n_rows, out->codes);
    t->dec->params(t, row0, n_rows, out->scales, out->zeros);
    return QB_OK;
}

qb_status qlinear_compute_symmetric(const qb_host *h, qlinear_tensor *t)
{
    float *s = qbk_malloc((size_t)QLINEAR_CHUNK * t->G * sizeof(float));
    int32_t *z = qbk_malloc((size_t)QLINEAR_CHUNK * t->G * sizeof(int32_t));
    int32_t want = (int32_t)1 << (t->bits - 1);
    int64_t r0, e;
    qb_status st = QB_OK;
    if (!s || !z) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", t->name);
        goto out;
    }
    t->symmetric = 1;
    for (r0 = 0; r0 < t->N && t->symmetric; r0 += QLINEAR_CHUNK) {
        int64_t nr = t->N - r0 < QLINEAR_CHUNK ? t->N - r0 : QLINEAR_CHUNK;
        t->dec->params(t, r0, nr, s, z);
        for (e = 0; e < nr * (int64_t)t->G; e++)
            if (z[e] != want) {
                t->symmetric = 0;
                break;
            }
    }
out:
    /* the scan read every row's zeros (and, through params, its scales):
     * without this, open kept ~150 MB of a 7B model's scales and zeros
     * mapped until the first read (measured VmHWM 147 MB vs 42 MB while
     * streaming) */
    qlinear_drop_pages(t->qzeros);
    qlinear_drop_pages(t->scales);
    qbk_free(s);
    qbk_free(z);
    return st;
}

int qlinear_gidx_valid(const int32_t *g, int64_t K, uint32_t G, int64_t gs, char *why, size_t why_len)
{
    int64_t *count = qbk_calloc(G ? G : 1, sizeof(int64_t));
    int64_t k;
    uint32_t j;
    int ok = 0;
    if (!count) {
        snprintf(why, why_len, "out of memory");
        return 0;
    }
    for (k = 0; k < K; k++) {
        if (g[k] < 0 || (uint32_t)g[k] >= G) {
            snprintf(why, why_len, "g_idx[%lld] = %d outside [0, %u)", (long long)k, (int)g[k], G);
            goto out;
        }
        count[g[k]]++;
    }
    /* act-order assigns groups to consecutive runs of gs columns of the
     * permuted order (AutoGPTQ GPTQ.fasterquant: g_idx = perm position // gs),
     * so every group holds exactly gs columns and only the last is short */
    for (j = 0; j < G; j++) {
        int64_t want = j + 1 < G ? gs : K - (int64_t)(G - 1) * gs;
        if (count[j] != want) {
            snprintf(why, why_len, "group %u has %lld columns, group size %lld implies %lld", j,
                     (long long)count[j], (long long)gs, (long long)want);
            goto out;
        }
    }
    ok = 1;
out:
    qbk_free(count);
    return ok;
}

int qlinear_gidx_trivial(const int32_t *g, int64_t K, int64_t gs)
{
    int64_t k;
    for (k = 0; k < K; k++)
        if (g[k] != k / gs)
            return 0;
    return 1;
}
