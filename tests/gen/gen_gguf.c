/* Test fixtures: GGUF writer and synthetic models. See gen_gguf.h. */
#include "gen_gguf.h"

#include "qbt_st_writer.h"

#include <quantbridge/qb_half.h>

#ifdef QBT_GGUF_HAVE_QUANT
#include "ggml_quant.h"
#include "ggml_types.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GGUF value types (ggml gguf.h enum gguf_type). */
enum { VT_U8 = 0, VT_U16 = 2, VT_U32 = 4, VT_I32 = 5, VT_F32 = 6, VT_BOOL = 7, VT_STR = 8, VT_ARR = 9 };
/* ggml type ids used here (ggml.h enum ggml_type). */
enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q8_0 = 8, T_BF16 = 30 };

typedef struct kv {
    char *key;
    uint32_t type;
    uint8_t *bytes;
    size_t n;
} kv;

typedef struct tensor {
    char *name;
    int n_dims;
    int64_t ne[4];
    uint32_t type;
    uint8_t *data;
    size_t nbytes;
} tensor;

struct qbt_gguf {
    kv *kv;
    size_t n_kv, cap_kv;
    tensor *t;
    size_t n_t, cap_t;
};

qbt_gguf *qbt_gguf_new(void)
{
    return calloc(1, sizeof(qbt_gguf));
}

void qbt_gguf_free(qbt_gguf *g)
{
    size_t i;
    if (!g)
        return;
    for (i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].bytes);
    }
    for (i = 0; i < g->n_t; i++) {
        free(g->t[i].name);
        free(g->t[i].data);
    }
    free(g->kv);
    free(g->t);
    free(g);
}

int qbt_gguf_kv_raw(qbt_gguf *g, const char *key, uint32_t type, const void *bytes, size_t n)
{
    kv *e;
    if (g->n_kv == g->cap_kv) {
        size_t nc = g->cap_kv ? 2 * g->cap_kv : 16;
        kv *nk = realloc(g->kv, nc * sizeof(*nk));
        if (!nk)
            return -1;
        g->kv = nk;
        g->cap_kv = nc;
    }
    e = &g->kv[g->n_kv];
    e->key = strdup(key);
    e->bytes = malloc(n ? n : 1);
    if (!e->key || !e->bytes) {
        free(e->key);
        free(e->bytes);
        return -1;
    }
    memcpy(e->bytes, bytes, n);
    e->n = n;
    e->type = type;
    g->n_kv++;
    return 0;
}

void qbt_gguf_kv_remove(qbt_gguf *g, const char *key)
{
    size_t i = 0;
    while (i < g->n_kv) {
        if (strcmp(g->kv[i].key, key) == 0) {
            free(g->kv[i].key);
            free(g->kv[i].bytes);
            memmove(&g->kv[i], &g->kv[i + 1], (g->n_kv - i - 1) * sizeof(g->kv[0]));
            g->n_kv--;
        } else {
            i++;
        }
    }
}

int qbt_gguf_kv_u32(qbt_gguf *g, const char *key, uint32_t v)
{
    return qbt_gguf_kv_raw(g, key, VT_U32, &v, 4);
}

int qbt_gguf_kv_u16(qbt_gguf *g, const char *key, uint16_t v)
{
    return qbt_gguf_kv_raw(g, key, VT_U16, &v, 2);
}

int qbt_gguf_kv_i32(qbt_gguf *g, const char *key, int32_t v)
{
    return qbt_gguf_kv_raw(g, key, VT_I32, &v, 4);
}

int qbt_gguf_kv_f32(qbt_gguf *g, const char *key, float v)
{
    return qbt_gguf_kv_raw(g, key, VT_F32, &v, 4);
}

int qbt_gguf_kv_bool(qbt_gguf *g, const char *key, int v)
{
    uint8_t b = v ? 1 : 0;
    return qbt_gguf_kv_raw(g, key, VT_BOOL, &b, 1);
}

int qbt_gguf_kv_str(qbt_gguf *g, const char *key, const char *v)
{
    uint64_t len = strlen(v);
    uint8_t *b = malloc(8 + len);
    int rc;
    if (!b)
        return -1;
    memcpy(b, &len, 8);
    memcpy(b + 8, v, len);
    rc = qbt_gguf_kv_raw(g, key, VT_STR, b, 8 + len);
    free(b);
    return rc;
}

int qbt_gguf_kv_arr_str(qbt_gguf *g, const char *key, size_t n, const char *const *v)
{
    size_t total = 12, i, pos;
    uint8_t *b;
    uint32_t et = VT_STR;
    uint64_t cnt = n;
    int rc;
    for (i = 0; i < n; i++)
        total += 8 + strlen(v[i]);
    if (!(b = malloc(total)))
        return -1;
    memcpy(b, &et, 4);
    memcpy(b + 4, &cnt, 8);
    pos = 12;
    for (i = 0; i < n; i++) {
        uint64_t l = strlen(v[i]);
        memcpy(b + pos, &l, 8);
        memcpy(b + pos + 8, v[i], l);
        pos += 8 + l;
    }
    rc = qbt_gguf_kv_raw(g, key, VT_ARR, b, total);
    free(b);
    return rc;
}

int qbt_gguf_kv_arr_i32(qbt_gguf *g, const char *key, size_t n, const int32_t *v)
{
    uint8_t *b = malloc(12 + 4 * n);
    uint32_t et = VT_I32;
    uint64_t cnt = n;
    int rc;
    if (!b)
        return -1;
    memcpy(b, &et, 4);
    memcpy(b + 4, &cnt, 8);
    memcpy(b + 12, v, 4 * n);
    rc = qbt_gguf_kv_raw(g, key, VT_ARR, b, 12 + 4 * n);
    free(b);
    return rc;
}

int qbt_gguf_add_tensor(qbt_gguf *g, const char *name, int n_dims, const int64_t *ne, uint32_t type,
                        const void *data, size_t nbytes)
{
    tensor *t;
    int i;
    if (g->n_t == g->cap_t) {
        size_t nc = g->cap_t ? 2 * g->cap_t : 32;
        tensor *nt = realloc(g->t, nc * sizeof(*nt));
        if (!nt)
            return -1;
        g->t = nt;
        g->cap_t = nc;
    }
    t = &g->t[g->n_t];
    memset(t, 0, sizeof(*t));
    t->name = strdup(name);
    t->data = malloc(nbytes ? nbytes : 1);
    if (!t->name || !t->data) {
        free(t->name);
        free(t->data);
        return -1;
    }
    memcpy(t->data, data, nbytes);
    t->nbytes = nbytes;
    t->n_dims = n_dims;
    for (i = 0; i < 4; i++)
        t->ne[i] = i < n_dims ? ne[i] : 1;
    t->type = type;
    g->n_t++;
    return 0;
}

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static int put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        uint8_t *np;
        while (nc < b->n + n)
            nc *= 2;
        np = realloc(b->p, nc);
        if (!np)
            return -1;
        b->p = np;
        b->cap = nc;
    }
    if (d)
        memcpy(b->p + b->n, d, n);
    else
        memset(b->p + b->n, 0, n);
    b->n += n;
    return 0;
}

static int put_u32(buf *b, uint32_t v)
{
    return put(b, &v, 4);
}

static int put_u64(buf *b, uint64_t v)
{
    return put(b, &v, 8);
}

static int put_str(buf *b, const char *s)
{
    return put_u64(b, strlen(s)) || put(b, s, strlen(s));
}

static size_t align_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* Serializes tensors [t0, t1) with the given kvs (+ extra kvs). */
static uint8_t *serialize_part(const qbt_gguf *g, const qbt_gguf_opts *o, qbt_gguf_layout *lay, size_t t0, size_t t1,
                               int with_kv, const qbt_gguf *extra)
{
    buf b = {0};
    uint32_t version = o && o->version ? o->version : 3;
    uint32_t al = o && o->alignment ? o->alignment : 32;
    size_t i, off = 0, n_kv = (with_kv ? g->n_kv : 0) + (extra ? extra->n_kv : 0) + (al != 32);
    qbt_gguf_layout l = {0};
    int err = 0;

    err |= put(&b, "GGUF", 4) | put_u32(&b, version) | put_u64(&b, t1 - t0) | put_u64(&b, n_kv);
    l.kv_start = b.n;
    if (al != 32)
        err |= put_str(&b, "general.alignment") | put_u32(&b, VT_U32) | put_u32(&b, al);
    for (i = 0; with_kv && i < g->n_kv; i++)
        err |= put_str(&b, g->kv[i].key) | put_u32(&b, g->kv[i].type) | put(&b, g->kv[i].bytes, g->kv[i].n);
    for (i = 0; extra && i < extra->n_kv; i++)
        err |= put_str(&b, extra->kv[i].key) | put_u32(&b, extra->kv[i].type) |
               put(&b, extra->kv[i].bytes, extra->kv[i].n);
    l.tinfo_start = b.n;
    for (i = t0; i < t1; i++) {
        const tensor *t = &g->t[i];
        int d;
        err |= put_str(&b, t->name) | put_u32(&b, (uint32_t)t->n_dims);
        for (d = 0; d < t->n_dims; d++)
            err |= put_u64(&b, (uint64_t)t->ne[d]);
        if (i == t0)
            l.first_type_field = b.n;
        err |= put_u32(&b, t->type);
        if (i == t0)
            l.first_offset_field = b.n;
        err |= put_u64(&b, off);
        off = align_up(off + t->nbytes, al);
    }
    if (t1 > t0)
        err |= put(&b, NULL, align_up(b.n, al) - b.n);
    l.data_start = b.n;
    for (i = t0; i < t1; i++) {
        err |= put(&b, g->t[i].data, g->t[i].nbytes);
        if (i + 1 < t1)
            err |= put(&b, NULL, align_up(g->t[i].nbytes, al) - g->t[i].nbytes);
    }
    l.size = b.n;
    if (err) {
        free(b.p);
        return NULL;
    }
    if (lay)
        *lay = l;
    return b.p;
}

uint8_t *qbt_gguf_serialize(const qbt_gguf *g, const qbt_gguf_opts *o, qbt_gguf_layout *lay)
{
    return serialize_part(g, o, lay, 0, g->n_t, 1, NULL);
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) {
        perror(path);
        return -1;
    }
    ok = fwrite(p, 1, n, f) == n;
    ok &= fclose(f) == 0;
    return ok ? 0 : -1;
}

int qbt_gguf_save(const qbt_gguf *g, const qbt_gguf_opts *o, const char *path)
{
    qbt_gguf_layout l;
    uint8_t *p = qbt_gguf_serialize(g, o, &l);
    int rc;
    if (!p)
        return -1;
    rc = write_file(path, p, l.size);
    free(p);
    return rc;
}

int qbt_gguf_save_split(const qbt_gguf *g, const char *prefix, int n_shards)
{
    int s;
    for (s = 0; s < n_shards; s++) {
        size_t t0 = g->n_t * (size_t)s / (size_t)n_shards, t1 = g->n_t * (size_t)(s + 1) / (size_t)n_shards;
        qbt_gguf *extra = qbt_gguf_new();
        char path[4096];
        qbt_gguf_layout l;
        uint8_t *p;
        int rc = -1;
        if (!extra)
            return -1;
        /* gguf-split: split.no u16 (0-based), split.count u16, split.tensors.count i32. */
        if (!qbt_gguf_kv_u16(extra, "split.no", (uint16_t)s) && !qbt_gguf_kv_u16(extra, "split.count", (uint16_t)n_shards) &&
            !qbt_gguf_kv_i32(extra, "split.tensors.count", (int32_t)g->n_t)) {
            p = serialize_part(g, NULL, &l, t0, t1, s == 0, extra);
            snprintf(path, sizeof(path), "%s-%05d-of-%05d.gguf", prefix, s + 1, n_shards);
            if (p)
                rc = write_file(path, p, l.size);
            free(p);
        }
        qbt_gguf_free(extra);
        if (rc)
            return -1;
    }
    return 0;
}

/* ---- synthetic models ---- */

/* HF tensor with its encoded rows in the chosen ggml type. */
typedef struct src {
    qbt_hf_tensor *hf;
    uint32_t type;
    size_t row_bytes;
    uint8_t *enc; /* rows * row_bytes */
} src;

typedef struct mb {
    const qbt_gguf_spec *s;
    qbt_rng rng;
    qbt_hf_model *ref;
    src *src;
    size_t n_src, cap;
    qbt_gguf *g;
    int plus_one;
} mb;

int qbt_gguf_can_quantize(uint32_t type)
{
#ifdef QBT_GGUF_HAVE_QUANT
    return qbt_ggml_can_quantize(type) && gguf_ggml_type_supported(type);
#else
    (void)type;
    return 0;
#endif
}

static int built_from_codes(uint32_t type)
{
    return type == T_F32 || type == T_F16 || type == T_BF16 || type == T_Q4_0 || type == T_Q8_0;
}

static size_t row_bytes_of(uint32_t type, int64_t cols)
{
#ifdef QBT_GGUF_HAVE_QUANT
    if (!built_from_codes(type)) {
        uint64_t n = 0;
        gguf_ggml_row_bytes(type, cols, &n);
        return (size_t)n;
    }
#endif
    switch (type) {
    case T_F32:
        return (size_t)cols * 4;
    case T_F16:
    case T_BF16:
        return (size_t)cols * 2;
    case T_Q4_0:
        return (size_t)cols / 32 * 18;
    default:
        return (size_t)cols / 32 * 34;
    }
}

/* Small fp16 scale in +-[0.002, 0.02], either sign (ggml's Q4_0/Q8_0 d may be negative). */
static uint16_t rand_scale(mb *b)
{
    float s = (float)(0.002 + 0.018 * qbt_rng_uniform(&b->rng));
    if (qbt_rng_u64(&b->rng) & 1)
        s = -s;
    return qb_f32_to_f16(s);
}

/* New HF tensor [rows, cols] (n_dims 1 => [cols]); kind 0 = weight,
 * 1 = norm (k/1024 in [0.5, 1.5), F32, +1 for Gemma), 2 = bias (F32). */
static src *new_src(mb *b, const char *name, int n_dims, int64_t rows, int64_t cols, int kind)
{
    qbt_hf_model *m = b->ref;
    qbt_hf_tensor *t;
    src *s;
    uint32_t type = kind ? T_F32 : b->s->wtype;
    int64_t r, c, n = rows * cols;
    /* Fixed capacity (qbt_gguf_build_model): builders hold src pointers
     * across calls, so the arrays must never move. */
    if (b->n_src == b->cap) {
        fprintf(stderr, "gen_gguf: more than %zu tensors\n", b->cap);
        return NULL;
    }
    t = &m->t[m->n++];
    s = &b->src[b->n_src++];
    memset(t, 0, sizeof(*t));
    t->name = strdup(name);
    t->n_dims = n_dims;
    t->dims[0] = n_dims == 1 ? cols : rows;
    t->dims[1] = cols;
    t->vals = malloc((size_t)n * sizeof(float));
    s->hf = t;
    s->type = type;
    s->row_bytes = row_bytes_of(type, cols);
    s->enc = malloc((size_t)rows * s->row_bytes);
    if (!built_from_codes(type) && !qbt_gguf_can_quantize(type)) {
        fprintf(stderr, "gen_gguf: cannot write ggml type %u\n", type);
        return NULL;
    }
    if (!built_from_codes(type))
        t->orig = malloc((size_t)n * sizeof(float));
    if (type == T_Q4_0) {
        t->codes = malloc((size_t)n);
        t->scales = malloc((size_t)n / 32 * sizeof(float));
    }
    for (r = 0; r < rows; r++) {
        uint8_t *e = s->enc + (size_t)r * s->row_bytes;
        float *v = t->vals + r * cols;
        if (!built_from_codes(type)) {
#ifdef QBT_GGUF_HAVE_QUANT
            float *o = t->orig + r * cols;
            for (c = 0; c < cols; c++)
                o[c] = (float)(qbt_rng_normal(&b->rng) * 0.05);
            if (qbt_ggml_quantize_row(type, o, e, cols) != 0)
                return NULL;
            gguf_ggml_dequantize_row(type, e, v, cols);
#endif
        } else if (type == T_F32) {
            for (c = 0; c < cols; c++) {
                float w, stored;
                if (kind == 1) {
                    w = (float)(512 + (int)(qbt_rng_u64(&b->rng) % 1024)) / 1024.0f;
                    stored = b->plus_one ? w + 1.0f : w;
                } else {
                    w = (float)(qbt_rng_normal(&b->rng) * 0.05);
                    stored = w;
                }
                v[c] = w;
                memcpy(e + 4 * c, &stored, 4);
            }
        } else if (type == T_F16 || type == T_BF16) {
            for (c = 0; c < cols; c++) {
                float w = (float)(qbt_rng_normal(&b->rng) * 0.05);
                uint16_t h = type == T_F16 ? qb_f32_to_f16(w) : qb_f32_to_bf16(w);
                v[c] = type == T_F16 ? qb_f16_to_f32(h) : qb_bf16_to_f32(h);
                memcpy(e + 2 * c, &h, 2);
            }
        } else {
            int64_t blk, nb = cols / 32;
            for (blk = 0; blk < nb; blk++) {
                uint16_t d = rand_scale(b);
                float df = qb_f16_to_f32(d);
                int j;
                if (type == T_Q4_0) {
                    uint8_t *q = e + blk * 18;
                    uint8_t codes[32];
                    memcpy(q, &d, 2);
                    for (j = 0; j < 32; j++)
                        codes[j] = (uint8_t)(qbt_rng_u64(&b->rng) & 15);
                    /* block_q4_0: qs[j] = element j | element j+16 << 4. */
                    for (j = 0; j < 16; j++)
                        q[2 + j] = (uint8_t)(codes[j] | codes[j + 16] << 4);
                    for (j = 0; j < 32; j++) {
                        v[blk * 32 + j] = (float)((int)codes[j] - 8) * df;
                        t->codes[r * cols + blk * 32 + j] = codes[j];
                    }
                    t->scales[r * nb + blk] = df;
                } else { /* Q8_0: d, 32 x int8; y = q * d. */
                    uint8_t *q = e + blk * 34;
                    memcpy(q, &d, 2);
                    for (j = 0; j < 32; j++) {
                        int8_t x = (int8_t)((int)(qbt_rng_u64(&b->rng) % 255) - 127);
                        q[2 + j] = (uint8_t)x;
                        v[blk * 32 + j] = (float)x * df;
                    }
                }
            }
        }
    }
    return s;
}

/* A GGUF tensor made of rows taken from sources: rows[i] = (src, row). */
typedef struct rowref {
    const src *s;
    int64_t row;
} rowref;

static int emit(mb *b, const char *name, int n_dims, const int64_t *ne, const rowref *rows, int64_t n_rows)
{
    size_t rb = rows[0].s->row_bytes, i;
    uint8_t *data = malloc((size_t)n_rows * rb);
    int rc;
    if (!data)
        return -1;
    for (i = 0; i < (size_t)n_rows; i++)
        memcpy(data + i * rb, rows[i].s->enc + (size_t)rows[i].row * rb, rb);
    rc = qbt_gguf_add_tensor(b->g, name, n_dims, ne, rows[0].s->type, data, (size_t)n_rows * rb);
    free(data);
    return rc;
}

/* Whole tensor, optionally with LlamaModel.permute(heads) on its rows:
 * GGUF_row[h*D + 2i + j] = HF_row[h*D + j*(D/2) + i]. */
static int emit_src(mb *b, const char *gname, const src *s, int heads)
{
    const qbt_hf_tensor *t = s->hf;
    int64_t rows = t->n_dims == 1 ? 1 : t->dims[0], r;
    int64_t ne[2] = {t->dims[1], rows};
    rowref *rr = malloc((size_t)rows * sizeof(*rr));
    int rc;
    if (!rr)
        return -1;
    for (r = 0; r < rows; r++) {
        int64_t hf = r;
        if (heads) {
            int64_t d = rows / heads, h = r / d, rem = r % d, i = rem / 2, j = rem % 2;
            hf = h * d + j * (d / 2) + i;
        }
        rr[r].s = s;
        rr[r].row = hf;
    }
    rc = emit(b, gname, t->n_dims, ne, rr, rows);
    free(rr);
    return rc;
}

/* Row concatenation of several same-width sources (phi3 fusing) or a 3-D
 * expert stack (n_dims 3: ne = {K, N, E}). */
static int emit_cat_grouped(mb *b, const char *gname, src *const *parts, int n_parts, int three_d, int group);

static int emit_cat(mb *b, const char *gname, src *const *parts, int n_parts, int three_d)
{
    return emit_cat_grouped(b, gname, parts, n_parts, three_d, 1);
}

/* As emit_cat; for a 3-D stack, `group` consecutive parts form one expert
 * (fused gate/up: ne = {K, group*N, n_parts/group}). */
static int emit_cat_grouped(mb *b, const char *gname, src *const *parts, int n_parts, int three_d, int group)
{
    int64_t total = 0, r, k = 0;
    int p, rc;
    rowref *rr;
    int64_t ne[3];
    for (p = 0; p < n_parts; p++)
        total += parts[p]->hf->dims[0];
    rr = malloc((size_t)total * sizeof(*rr));
    if (!rr)
        return -1;
    for (p = 0; p < n_parts; p++)
        for (r = 0; r < parts[p]->hf->dims[0]; r++) {
            rr[k].s = parts[p];
            rr[k++].row = r;
        }
    ne[0] = parts[0]->hf->dims[1];
    ne[1] = three_d ? parts[0]->hf->dims[0] * group : total;
    ne[2] = n_parts / group;
    rc = emit(b, gname, three_d ? 3 : 2, ne, rr, total);
    free(rr);
    return rc;
}

/* A 1-D F32 bias permuted like its weight's rows (LlamaModel.modify_tensors
 * permutes q_proj.bias/k_proj.bias too). */
static int emit_vec_permuted(mb *b, const char *gname, const src *s, int heads)
{
    int64_t n = s->hf->dims[0], k;
    int64_t ne[1] = {n};
    float *out = malloc((size_t)n * sizeof(float));
    const float *in = (const float *)s->enc;
    int rc;
    if (!out)
        return -1;
    for (k = 0; k < n; k++) {
        int64_t d = n / heads, h = k / d, rem = k % d, i = rem / 2, j = rem % 2;
        out[k] = in[h * d + j * (d / 2) + i];
    }
    rc = qbt_gguf_add_tensor(b->g, gname, 1, ne, T_F32, out, (size_t)n * sizeof(float));
    free(out);
    return rc;
}

/* rope_freqs.weight as LlamaModel.generate_extra_tensors writes it for
 * Llama 3.1 rope scaling (factor 8, low 1, high 4, original ctx 8192);
 * bogus != 0 perturbs it so it matches no parameter set. */
static int emit_rope_freqs(mb *b, int dim, double theta, int bogus)
{
    int64_t n = dim / 2, i;
    int64_t ne[1] = {n};
    float *f = malloc((size_t)n * sizeof(float));
    const double factor = 8, lo = 1, hi = 4, old = 8192;
    int rc;
    if (!f)
        return -1;
    for (i = 0; i < n; i++) {
        double freq = 1.0 / pow(theta, (double)(2 * i) / dim), wl = 2 * M_PI / freq;
        if (wl < old / hi)
            f[i] = 1.0f;
        else if (wl > old / lo)
            f[i] = (float)factor;
        else {
            double sm = (old / wl - lo) / (hi - lo);
            f[i] = (float)(1.0 / ((1 - sm) / factor + sm));
        }
        if (bogus)
            f[i] *= 1.5f;
    }
    rc = qbt_gguf_add_tensor(b->g, "rope_freqs.weight", 1, ne, T_F32, f, (size_t)n * sizeof(float));
    free(f);
    return rc;
}

static int has(const char *arch, const char *list)
{
    char tmp[256], *tok, *save = NULL;
    snprintf(tmp, sizeof(tmp), "%s", list);
    for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, arch) == 0)
            return 1;
    return 0;
}

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if (!(x))                                                                                                      \
            goto fail;                                                                                                 \
    } while (0)

static int build_layer(mb *b, int l)
{
    const qbt_gguf_spec *s = b->s;
    const char *a = s->arch;
    int hd = s->head_dim ? s->head_dim : s->n_embd / s->n_head;
    int64_t E = s->n_embd, q = (int64_t)s->n_head * hd, kv = (int64_t)s->n_head_kv * hd;
    int permute = strcmp(a, "llama") == 0;
    int gemma23 = has(a, "gemma2,gemma3");
    char hn[256], gn[128];
    src *sq, *sk, *sv, *x;
    int e;

#define HF(fmt) (snprintf(hn, sizeof(hn), "model.layers.%d." fmt, l), hn)
#define GG(fmt) (snprintf(gn, sizeof(gn), "blk.%d." fmt, l), gn)
    CHECK(x = new_src(b, HF("input_layernorm.weight"), 1, 1, E, 1));
    CHECK(!emit_src(b, GG("attn_norm.weight"), x, 0));
    CHECK(sq = new_src(b, HF("self_attn.q_proj.weight"), 2, q, E, 0));
    CHECK(sk = new_src(b, HF("self_attn.k_proj.weight"), 2, kv, E, 0));
    CHECK(sv = new_src(b, HF("self_attn.v_proj.weight"), 2, kv, E, 0));
    if (strcmp(a, "phi3") == 0) {
        src *parts[3] = {sq, sk, sv};
        CHECK(!emit_cat(b, GG("attn_qkv.weight"), parts, 3, 0));
    } else {
        CHECK(!emit_src(b, GG("attn_q.weight"), sq, permute ? s->n_head : 0));
        CHECK(!emit_src(b, GG("attn_k.weight"), sk, permute ? s->n_head_kv : 0));
        CHECK(!emit_src(b, GG("attn_v.weight"), sv, 0));
    }
    if (permute && s->qk_bias) {
        CHECK(x = new_src(b, HF("self_attn.q_proj.bias"), 1, 1, q, 2));
        CHECK(!emit_vec_permuted(b, GG("attn_q.bias"), x, s->n_head));
        CHECK(x = new_src(b, HF("self_attn.k_proj.bias"), 1, 1, kv, 2));
        CHECK(!emit_vec_permuted(b, GG("attn_k.bias"), x, s->n_head_kv));
        CHECK(x = new_src(b, HF("self_attn.v_proj.bias"), 1, 1, kv, 2));
        CHECK(!emit_src(b, GG("attn_v.bias"), x, 0));
    }
    if (strcmp(a, "qwen2") == 0 || strcmp(a, "qwen2moe") == 0) {
        CHECK(x = new_src(b, HF("self_attn.q_proj.bias"), 1, 1, q, 2));
        CHECK(!emit_src(b, GG("attn_q.bias"), x, 0));
        CHECK(x = new_src(b, HF("self_attn.k_proj.bias"), 1, 1, kv, 2));
        CHECK(!emit_src(b, GG("attn_k.bias"), x, 0));
        CHECK(x = new_src(b, HF("self_attn.v_proj.bias"), 1, 1, kv, 2));
        CHECK(!emit_src(b, GG("attn_v.bias"), x, 0));
    }
    if (has(a, "qwen3,qwen3moe,gemma3")) {
        CHECK(x = new_src(b, HF("self_attn.q_norm.weight"), 1, 1, hd, 1));
        CHECK(!emit_src(b, GG("attn_q_norm.weight"), x, 0));
        CHECK(x = new_src(b, HF("self_attn.k_norm.weight"), 1, 1, hd, 1));
        CHECK(!emit_src(b, GG("attn_k_norm.weight"), x, 0));
    }
    CHECK(x = new_src(b, HF("self_attn.o_proj.weight"), 2, E, q, 0));
    CHECK(!emit_src(b, GG("attn_output.weight"), x, 0));
    if (gemma23) {
        CHECK(x = new_src(b, HF("post_attention_layernorm.weight"), 1, 1, E, 1));
        CHECK(!emit_src(b, GG("post_attention_norm.weight"), x, 0));
        CHECK(x = new_src(b, HF("pre_feedforward_layernorm.weight"), 1, 1, E, 1));
        CHECK(!emit_src(b, GG("ffn_norm.weight"), x, 0));
        CHECK(x = new_src(b, HF("post_feedforward_layernorm.weight"), 1, 1, E, 1));
        CHECK(!emit_src(b, GG("post_ffw_norm.weight"), x, 0));
    } else {
        CHECK(x = new_src(b, HF("post_attention_layernorm.weight"), 1, 1, E, 1));
        CHECK(!emit_src(b, GG("ffn_norm.weight"), x, 0));
    }
    if (s->n_expert > 0) {
        int mixtral = strcmp(a, "llama") == 0;
        src **g = calloc((size_t)s->n_expert, sizeof(*g)), **u = calloc((size_t)s->n_expert, sizeof(*u)),
            **d = calloc((size_t)s->n_expert, sizeof(*d));
        int64_t F = mixtral ? s->n_ff : s->n_ff_exp;
        int ok = g && u && d;
        snprintf(hn, sizeof(hn), mixtral ? "model.layers.%d.block_sparse_moe.gate.weight" : "model.layers.%d.mlp.gate.weight", l);
        ok = ok && (x = new_src(b, hn, 2, s->n_expert, E, 2)) && !emit_src(b, GG("ffn_gate_inp.weight"), x, 0);
        for (e = 0; ok && e < s->n_expert; e++) {
            char n1[256];
            snprintf(n1, sizeof(n1), mixtral ? "model.layers.%d.block_sparse_moe.experts.%d.w1.weight"
                                             : "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e);
            ok = ok && (g[e] = new_src(b, n1, 2, F, E, 0));
            snprintf(n1, sizeof(n1), mixtral ? "model.layers.%d.block_sparse_moe.experts.%d.w3.weight"
                                             : "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e);
            ok = ok && (u[e] = new_src(b, n1, 2, F, E, 0));
            snprintf(n1, sizeof(n1), mixtral ? "model.layers.%d.block_sparse_moe.experts.%d.w2.weight"
                                             : "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e);
            ok = ok && (d[e] = new_src(b, n1, 2, E, F, 0));
        }
        if (ok && s->legacy_experts) {
            for (e = 0; ok && e < s->n_expert; e++) {
                char n2[128];
                snprintf(n2, sizeof(n2), "blk.%d.ffn_gate.%d.weight", l, e);
                ok = !emit_src(b, n2, g[e], 0);
                snprintf(n2, sizeof(n2), "blk.%d.ffn_up.%d.weight", l, e);
                ok = ok && !emit_src(b, n2, u[e], 0);
                snprintf(n2, sizeof(n2), "blk.%d.ffn_down.%d.weight", l, e);
                ok = ok && !emit_src(b, n2, d[e], 0);
            }
        } else if (ok && s->fuse_gate_up_exps) {
            src **gu = calloc(2 * (size_t)s->n_expert, sizeof(*gu));
            ok = gu != NULL;
            for (e = 0; ok && e < s->n_expert; e++) {
                gu[2 * e] = g[e];
                gu[2 * e + 1] = u[e];
            }
            ok = ok && !emit_cat_grouped(b, GG("ffn_gate_up_exps.weight"), gu, 2 * s->n_expert, 1, 2);
            free(gu);
        } else {
            ok = ok && !emit_cat(b, GG("ffn_gate_exps.weight"), g, s->n_expert, 1) &&
                 !emit_cat(b, GG("ffn_up_exps.weight"), u, s->n_expert, 1);
        }
        if (!s->legacy_experts)
            ok = ok && !emit_cat(b, GG("ffn_down_exps.weight"), d, s->n_expert, 1);
        free(g);
        free(u);
        free(d);
        CHECK(ok);
        if (s->n_ff_shexp > 0) {
            int64_t ne[1] = {E};
            CHECK(x = new_src(b, HF("mlp.shared_expert_gate.weight"), 2, 1, E, 2));
            CHECK(!qbt_gguf_add_tensor(b->g, GG("ffn_gate_inp_shexp.weight"), 1, ne, T_F32, x->enc, x->row_bytes));
            CHECK(x = new_src(b, HF("mlp.shared_expert.gate_proj.weight"), 2, s->n_ff_shexp, E, 0));
            CHECK(!emit_src(b, GG("ffn_gate_shexp.weight"), x, 0));
            CHECK(x = new_src(b, HF("mlp.shared_expert.up_proj.weight"), 2, s->n_ff_shexp, E, 0));
            CHECK(!emit_src(b, GG("ffn_up_shexp.weight"), x, 0));
            CHECK(x = new_src(b, HF("mlp.shared_expert.down_proj.weight"), 2, E, s->n_ff_shexp, 0));
            CHECK(!emit_src(b, GG("ffn_down_shexp.weight"), x, 0));
        }
    } else {
        src *sg, *su;
        CHECK(sg = new_src(b, HF("mlp.gate_proj.weight"), 2, s->n_ff, E, 0));
        CHECK(su = new_src(b, HF("mlp.up_proj.weight"), 2, s->n_ff, E, 0));
        if (strcmp(a, "phi3") == 0) {
            src *parts[2] = {sg, su};
            CHECK(!emit_cat(b, GG("ffn_up.weight"), parts, 2, 0));
        } else {
            CHECK(!emit_src(b, GG("ffn_gate.weight"), sg, 0));
            CHECK(!emit_src(b, GG("ffn_up.weight"), su, 0));
        }
        CHECK(x = new_src(b, HF("mlp.down_proj.weight"), 2, E, s->n_ff, 0));
        CHECK(!emit_src(b, GG("ffn_down.weight"), x, 0));
    }
#undef HF
#undef GG
    return 0;
fail:
    return -1;
}

/* deepseek2 kv_b in llama.cpp's split form (DeepseekV2Model.modify_tensors
 * since its MLA change): kv_b_proj [H*(nope+v), R] viewed [H, nope+v, R];
 * k_b = rows [0, nope) of each head transposed to [H, R, nope] (ggml ne
 * {nope, R, H}), v_b = rows [nope, nope+v) as [H, v, R] (ne {R, v, H}).
 * Float types only, so the transpose moves encoded elements unchanged. */
static int emit_kv_b_split(mb *b, int l, const src *kvb)
{
    const qbt_gguf_spec *s = b->s;
    const int64_t H = s->n_head, R = s->kv_lora, nope = s->qk_nope, v = s->v_head, per = nope + v;
    const size_t es = kvb->type == T_F32 ? 4 : 2;
    int64_t h, c, j, k = 0;
    int64_t ne_k[3] = {nope, R, H}, ne_v[3] = {R, v, H};
    uint8_t *kb = malloc((size_t)(H * R * nope) * es);
    rowref *rr = malloc((size_t)(H * v) * sizeof(*rr));
    char gn[128];
    int rc = -1;
    if (!kb || !rr)
        goto out;
    for (h = 0; h < H; h++)
        for (c = 0; c < R; c++)
            for (j = 0; j < nope; j++)
                memcpy(kb + (size_t)((h * R + c) * nope + j) * es,
                       kvb->enc + (size_t)(h * per + j) * kvb->row_bytes + (size_t)c * es, es);
    for (h = 0; h < H; h++)
        for (j = 0; j < v; j++) {
            rr[k].s = kvb;
            rr[k++].row = h * per + nope + j;
        }
    snprintf(gn, sizeof(gn), "blk.%d.attn_k_b.weight", l);
    if (qbt_gguf_add_tensor(b->g, gn, 3, ne_k, kvb->type, kb, (size_t)(H * R * nope) * es))
        goto out;
    snprintf(gn, sizeof(gn), "blk.%d.attn_v_b.weight", l);
    rc = emit(b, gn, 3, ne_v, rr, H * v);
out:
    free(kb);
    free(rr);
    return rc;
}

/* One deepseek2 block: HF DeepseekV2/V3 weights, written as
 * DeepseekV2Model does (no rope permutation, experts stacked). */
static int build_layer_ds2(mb *b, int l)
{
    const qbt_gguf_spec *s = b->s;
    const int64_t E = s->n_embd, H = s->n_head, qk = s->qk_nope + s->qk_rope, F = s->n_ff_exp;
    char hn[256], gn[128];
    src *x, **g = NULL, **u = NULL, **d = NULL;
    int e, ok;

#define HF(fmt) (snprintf(hn, sizeof(hn), "model.layers.%d." fmt, l), hn)
#define GG(fmt) (snprintf(gn, sizeof(gn), "blk.%d." fmt, l), gn)
    CHECK(x = new_src(b, HF("input_layernorm.weight"), 1, 1, E, 1));
    CHECK(!emit_src(b, GG("attn_norm.weight"), x, 0));
    if (s->q_lora) {
        CHECK(x = new_src(b, HF("self_attn.q_a_proj.weight"), 2, s->q_lora, E, 0));
        CHECK(!emit_src(b, GG("attn_q_a.weight"), x, 0));
        CHECK(x = new_src(b, HF("self_attn.q_a_layernorm.weight"), 1, 1, s->q_lora, 1));
        CHECK(!emit_src(b, GG("attn_q_a_norm.weight"), x, 0));
        CHECK(x = new_src(b, HF("self_attn.q_b_proj.weight"), 2, H * qk, s->q_lora, 0));
        CHECK(!emit_src(b, GG("attn_q_b.weight"), x, 0));
    } else {
        CHECK(x = new_src(b, HF("self_attn.q_proj.weight"), 2, H * qk, E, 0));
        CHECK(!emit_src(b, GG("attn_q.weight"), x, 0));
    }
    CHECK(x = new_src(b, HF("self_attn.kv_a_proj_with_mqa.weight"), 2, s->kv_lora + s->qk_rope, E, 0));
    CHECK(!emit_src(b, GG("attn_kv_a_mqa.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.kv_a_layernorm.weight"), 1, 1, s->kv_lora, 1));
    CHECK(!emit_src(b, GG("attn_kv_a_norm.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.kv_b_proj.weight"), 2, H * (s->qk_nope + s->v_head), s->kv_lora, 0));
    if (s->split_kv_b) {
        if (x->type != T_F32 && x->type != T_F16 && x->type != T_BF16) {
            fprintf(stderr, "gen_gguf: split kv_b needs a float weight type\n");
            goto fail;
        }
        CHECK(!emit_kv_b_split(b, l, x));
    } else {
        CHECK(!emit_src(b, GG("attn_kv_b.weight"), x, 0));
    }
    CHECK(x = new_src(b, HF("self_attn.o_proj.weight"), 2, E, H * s->v_head, 0));
    CHECK(!emit_src(b, GG("attn_output.weight"), x, 0));
    CHECK(x = new_src(b, HF("post_attention_layernorm.weight"), 1, 1, E, 1));
    CHECK(!emit_src(b, GG("ffn_norm.weight"), x, 0));
    if (l < s->n_dense) {
        CHECK(x = new_src(b, HF("mlp.gate_proj.weight"), 2, s->n_ff, E, 0));
        CHECK(!emit_src(b, GG("ffn_gate.weight"), x, 0));
        CHECK(x = new_src(b, HF("mlp.up_proj.weight"), 2, s->n_ff, E, 0));
        CHECK(!emit_src(b, GG("ffn_up.weight"), x, 0));
        CHECK(x = new_src(b, HF("mlp.down_proj.weight"), 2, E, s->n_ff, 0));
        CHECK(!emit_src(b, GG("ffn_down.weight"), x, 0));
        return 0;
    }
    CHECK(x = new_src(b, HF("mlp.gate.weight"), 2, s->n_expert, E, 2));
    CHECK(!emit_src(b, GG("ffn_gate_inp.weight"), x, 0));
    if (s->sigmoid) {
        /* "e_score_correction_bias" is renamed e_score_correction.bias,
         * tensor_mapping FFN_EXP_PROBS_B: blk.N.exp_probs_b.bias. */
        CHECK(x = new_src(b, HF("mlp.gate.e_score_correction_bias"), 1, 1, s->n_expert, 2));
        CHECK(!emit_src(b, GG("exp_probs_b.bias"), x, 0));
    }
    g = calloc((size_t)s->n_expert, sizeof(*g));
    u = calloc((size_t)s->n_expert, sizeof(*u));
    d = calloc((size_t)s->n_expert, sizeof(*d));
    ok = g && u && d;
    for (e = 0; ok && e < s->n_expert; e++) {
        char n1[256];
        snprintf(n1, sizeof(n1), "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e);
        ok = (g[e] = new_src(b, n1, 2, F, E, 0)) != NULL;
        snprintf(n1, sizeof(n1), "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e);
        ok = ok && (u[e] = new_src(b, n1, 2, F, E, 0));
        snprintf(n1, sizeof(n1), "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e);
        ok = ok && (d[e] = new_src(b, n1, 2, E, F, 0));
    }
    ok = ok && !emit_cat(b, GG("ffn_down_exps.weight"), d, s->n_expert, 1) &&
         !emit_cat(b, GG("ffn_gate_exps.weight"), g, s->n_expert, 1) &&
         !emit_cat(b, GG("ffn_up_exps.weight"), u, s->n_expert, 1);
    free(g);
    free(u);
    free(d);
    CHECK(ok);
    if (s->n_shared > 0) {
        CHECK(x = new_src(b, HF("mlp.shared_experts.gate_proj.weight"), 2, s->n_shared * F, E, 0));
        CHECK(!emit_src(b, GG("ffn_gate_shexp.weight"), x, 0));
        CHECK(x = new_src(b, HF("mlp.shared_experts.up_proj.weight"), 2, s->n_shared * F, E, 0));
        CHECK(!emit_src(b, GG("ffn_up_shexp.weight"), x, 0));
        CHECK(x = new_src(b, HF("mlp.shared_experts.down_proj.weight"), 2, E, s->n_shared * F, 0));
        CHECK(!emit_src(b, GG("ffn_down_shexp.weight"), x, 0));
    }
#undef HF
#undef GG
    return 0;
fail:
    return -1;
}

/* Encoded bytes of element (r, c) of a float-typed source. */
static const uint8_t *elem(const src *s, int64_t r, int64_t c)
{
    return s->enc + (size_t)r * s->row_bytes + (size_t)c * (s->type == T_F32 ? 4 : 2);
}

/* A GGUF tensor whose row `row` (of n_rows, each of `cols` elements) has
 * element k = pick(row, k) of source s, moved as encoded bytes. */
typedef void (*pick_fn)(int64_t row, int64_t k, int64_t *sr, int64_t *sc, const int64_t *dims);
static int emit_picked(mb *b, const char *gname, int n_dims, const int64_t *ne, const src *s, int64_t n_rows,
                       int64_t cols, pick_fn pick, const int64_t *dims)
{
    const size_t es = s->type == T_F32 ? 4 : 2;
    uint8_t *buf = malloc((size_t)(n_rows * cols) * es);
    int64_t r, k, sr, sc;
    int rc;
    if (!buf)
        return -1;
    for (r = 0; r < n_rows; r++)
        for (k = 0; k < cols; k++) {
            pick(r, k, &sr, &sc, dims);
            memcpy(buf + (size_t)(r * cols + k) * es, elem(s, sr, sc), es);
        }
    rc = qbt_gguf_add_tensor(b->g, gname, n_dims, ne, s->type, buf, (size_t)(n_rows * cols) * es);
    free(buf);
    return rc;
}

/* GptOssModel.modify_tensors (float experts): gate_up_proj [E, H, 2I]
 * transposed to [E, 2I, H], gate = [:, ::2, :], up = [:, 1::2, :]; dims =
 * {H, I, parity}. GGUF row e*I + c, element h = HF (e*H + h, 2c + parity). */
static void pick_gate_up(int64_t row, int64_t k, int64_t *sr, int64_t *sc, const int64_t *d)
{
    int64_t e = row / d[1], c = row % d[1];
    *sr = e * d[0] + k;
    *sc = 2 * c + d[2];
}

/* down_proj [E, I, H] transposed to [E, H, I]; dims = {H, I}. GGUF row
 * e*H + o, element i = HF (e*I + i, o). */
static void pick_down(int64_t row, int64_t k, int64_t *sr, int64_t *sc, const int64_t *d)
{
    int64_t e = row / d[0], o = row % d[0];
    *sr = e * d[1] + k;
    *sc = o;
}

/* gate_up_proj_bias [E, 2I] split [..., ::2] / [..., 1::2]; dims = {I, parity}. */
static void pick_bias(int64_t row, int64_t k, int64_t *sr, int64_t *sc, const int64_t *d)
{
    *sr = row;
    *sc = 2 * k + d[1];
}

/* One gpt-oss block: HF GptOss weights (experts fused, [E, in, out]),
 * written as GptOssModel's float path does. The reference holds the fused
 * experts in their row view ([E*in, out] for the 3-D ones). */
static int build_layer_oss(mb *b, int l)
{
    const qbt_gguf_spec *s = b->s;
    const int64_t E = s->n_embd, X = s->n_expert, I = s->n_ff, hd = s->head_dim;
    const int64_t q = s->n_head * hd, kv = s->n_head_kv * hd;
    char hn[256], gn[128];
    src *x;
    int64_t ne[3], d[3];

    if (s->wtype != T_F32 && s->wtype != T_F16 && s->wtype != T_BF16) {
        fprintf(stderr, "gen_gguf: gpt-oss fixtures need a float weight type\n");
        return -1;
    }
#define HF(fmt) (snprintf(hn, sizeof(hn), "model.layers.%d." fmt, l), hn)
#define GG(fmt) (snprintf(gn, sizeof(gn), "blk.%d." fmt, l), gn)
    CHECK(x = new_src(b, HF("input_layernorm.weight"), 1, 1, E, 1));
    CHECK(!emit_src(b, GG("attn_norm.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.q_proj.weight"), 2, q, E, 0));
    CHECK(!emit_src(b, GG("attn_q.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.q_proj.bias"), 1, 1, q, 2));
    CHECK(!emit_src(b, GG("attn_q.bias"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.k_proj.weight"), 2, kv, E, 0));
    CHECK(!emit_src(b, GG("attn_k.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.k_proj.bias"), 1, 1, kv, 2));
    CHECK(!emit_src(b, GG("attn_k.bias"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.v_proj.weight"), 2, kv, E, 0));
    CHECK(!emit_src(b, GG("attn_v.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.v_proj.bias"), 1, 1, kv, 2));
    CHECK(!emit_src(b, GG("attn_v.bias"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.o_proj.weight"), 2, E, q, 0));
    CHECK(!emit_src(b, GG("attn_output.weight"), x, 0));
    CHECK(x = new_src(b, HF("self_attn.o_proj.bias"), 1, 1, E, 2));
    CHECK(!emit_src(b, GG("attn_output.bias"), x, 0));
    /* "sinks" gets ".weight" appended by GptOssModel.modify_tensors */
    CHECK(x = new_src(b, HF("self_attn.sinks"), 1, 1, s->n_head, 2));
    CHECK(!emit_src(b, GG("attn_sinks.weight"), x, 0));
    CHECK(x = new_src(b, HF("post_attention_layernorm.weight"), 1, 1, E, 1));
    CHECK(!emit_src(b, GG("post_attention_norm.weight"), x, 0));
    CHECK(x = new_src(b, HF("mlp.router.weight"), 2, X, E, 0));
    CHECK(!emit_src(b, GG("ffn_gate_inp.weight"), x, 0));
    CHECK(x = new_src(b, HF("mlp.router.bias"), 1, 1, X, 2));
    CHECK(!emit_src(b, GG("ffn_gate_inp.bias"), x, 0));
    CHECK(x = new_src(b, HF("mlp.experts.gate_up_proj"), 2, X * E, 2 * I, 0));
    ne[0] = E, ne[1] = I, ne[2] = X;
    d[0] = E, d[1] = I, d[2] = 0;
    CHECK(!emit_picked(b, GG("ffn_gate_exps.weight"), 3, ne, x, X * I, E, pick_gate_up, d));
    d[2] = 1;
    CHECK(!emit_picked(b, GG("ffn_up_exps.weight"), 3, ne, x, X * I, E, pick_gate_up, d));
    CHECK(x = new_src(b, HF("mlp.experts.gate_up_proj_bias"), 2, X, 2 * I, 2));
    ne[0] = I, ne[1] = X;
    d[0] = I, d[1] = 0;
    CHECK(!emit_picked(b, GG("ffn_gate_exps.bias"), 2, ne, x, X, I, pick_bias, d));
    d[1] = 1;
    CHECK(!emit_picked(b, GG("ffn_up_exps.bias"), 2, ne, x, X, I, pick_bias, d));
    CHECK(x = new_src(b, HF("mlp.experts.down_proj"), 2, X * I, E, 0));
    ne[0] = I, ne[1] = E, ne[2] = X;
    d[0] = E, d[1] = I;
    CHECK(!emit_picked(b, GG("ffn_down_exps.weight"), 3, ne, x, X * E, I, pick_down, d));
    CHECK(x = new_src(b, HF("mlp.experts.down_proj_bias"), 2, X, E, 2));
    CHECK(!emit_src(b, GG("ffn_down_exps.bias"), x, 0));
#undef HF
#undef GG
    return 0;
fail:
    return -1;
}

static int build_meta(mb *b)
{
    const qbt_gguf_spec *s = b->s;
    qbt_gguf *g = b->g;
    char k[128];
    char **toks;
    int i, rc = 0;
#define K(suffix) (snprintf(k, sizeof(k), "%s." suffix, s->arch), k)
    rc |= qbt_gguf_kv_str(g, "general.architecture", s->arch);
    rc |= qbt_gguf_kv_str(g, "general.name", "quantbridge synthetic");
    rc |= qbt_gguf_kv_u32(g, K("block_count"), (uint32_t)s->n_layer);
    rc |= qbt_gguf_kv_u32(g, K("context_length"), 4096);
    rc |= qbt_gguf_kv_u32(g, K("embedding_length"), (uint32_t)s->n_embd);
    if (s->n_ff)
        rc |= qbt_gguf_kv_u32(g, K("feed_forward_length"), (uint32_t)s->n_ff);
    rc |= qbt_gguf_kv_u32(g, K("attention.head_count"), (uint32_t)s->n_head);
    if (strcmp(s->arch, "deepseek2") == 0) {
        /* DeepseekV2Model.set_gguf_parameters: the split (MLA) form stores
         * the absorbed MQA view (1 kv head, key kv_lora + rope, value
         * kv_lora) plus the HF widths in the _mla keys; older files the HF
         * widths in key_length/value_length. */
        const uint32_t R = (uint32_t)s->kv_lora, rope = (uint32_t)s->qk_rope, nope = (uint32_t)s->qk_nope;
        rc |= qbt_gguf_kv_u32(g, K("attention.head_count_kv"), s->split_kv_b ? 1u : (uint32_t)s->n_head);
        rc |= qbt_gguf_kv_u32(g, K("attention.key_length"), s->split_kv_b ? R + rope : nope + rope);
        rc |= qbt_gguf_kv_u32(g, K("attention.value_length"), s->split_kv_b ? R : (uint32_t)s->v_head);
        if (s->split_kv_b) {
            rc |= qbt_gguf_kv_u32(g, K("attention.key_length_mla"), nope + rope);
            rc |= qbt_gguf_kv_u32(g, K("attention.value_length_mla"), (uint32_t)s->v_head);
        }
        rc |= qbt_gguf_kv_u32(g, K("attention.kv_lora_rank"), R);
        if (s->q_lora)
            rc |= qbt_gguf_kv_u32(g, K("attention.q_lora_rank"), (uint32_t)s->q_lora);
        rc |= qbt_gguf_kv_u32(g, K("rope.dimension_count"), rope);
        rc |= qbt_gguf_kv_u32(g, K("leading_dense_block_count"), (uint32_t)s->n_dense);
        rc |= qbt_gguf_kv_u32(g, K("expert_shared_count"), (uint32_t)s->n_shared);
        rc |= qbt_gguf_kv_f32(g, K("expert_weights_scale"), s->sigmoid ? 2.5f : 16.0f);
        if (s->sigmoid) {
            rc |= qbt_gguf_kv_bool(g, K("expert_weights_norm"), 1);
            rc |= qbt_gguf_kv_u32(g, K("expert_gating_func"), s->sigmoid == 2 ? 1 : 2);
            rc |= qbt_gguf_kv_u32(g, K("expert_group_count"), 2);
            rc |= qbt_gguf_kv_u32(g, K("expert_group_used_count"), 1);
            rc |= qbt_gguf_kv_str(g, K("rope.scaling.type"), "yarn");
            rc |= qbt_gguf_kv_f32(g, K("rope.scaling.factor"), 40.0f);
            rc |= qbt_gguf_kv_u32(g, K("rope.scaling.original_context_length"), 4096);
            rc |= qbt_gguf_kv_f32(g, K("rope.scaling.yarn_log_multiplier"), (float)(0.1 * 0.707));
        }
    } else {
        rc |= qbt_gguf_kv_u32(g, K("attention.head_count_kv"), (uint32_t)s->n_head_kv);
        if (s->head_dim) {
            rc |= qbt_gguf_kv_u32(g, K("attention.key_length"), (uint32_t)s->head_dim);
            rc |= qbt_gguf_kv_u32(g, K("attention.value_length"), (uint32_t)s->head_dim);
        }
        rc |= qbt_gguf_kv_u32(g, K("rope.dimension_count"), (uint32_t)(s->head_dim ? s->head_dim : s->n_embd / s->n_head));
    }
    rc |= qbt_gguf_kv_f32(g, K("attention.layer_norm_rms_epsilon"), 1e-5f);
    rc |= qbt_gguf_kv_f32(g, K("rope.freq_base"), 500000.0f);
    if (s->sliding_window)
        rc |= qbt_gguf_kv_u32(g, K("attention.sliding_window"), (uint32_t)s->sliding_window);
    if (strcmp(s->arch, "gpt-oss") == 0) { /* GptOssModel.set_gguf_parameters */
        rc |= qbt_gguf_kv_str(g, K("rope.scaling.type"), "yarn");
        rc |= qbt_gguf_kv_f32(g, K("rope.scaling.factor"), 32.0f);
        rc |= qbt_gguf_kv_u32(g, K("rope.scaling.original_context_length"), 4096);
    }
    if (s->n_expert) {
        rc |= qbt_gguf_kv_u32(g, K("expert_count"), (uint32_t)s->n_expert);
        rc |= qbt_gguf_kv_u32(g, K("expert_used_count"), (uint32_t)s->n_expert_used);
        if (s->n_ff_exp)
            rc |= qbt_gguf_kv_u32(g, K("expert_feed_forward_length"), (uint32_t)s->n_ff_exp);
        if (s->n_ff_shexp)
            rc |= qbt_gguf_kv_u32(g, K("expert_shared_feed_forward_length"), (uint32_t)s->n_ff_shexp);
    }
#undef K
    if (s->no_tokenizer)
        return rc ? -1 : 0;
    /* A complete (if tiny) byte-level BPE vocabulary: the reader rebuilds
     * tokenizer.json from it, and refuses gpt2 without pre or merges. */
    rc |= qbt_gguf_kv_str(g, "tokenizer.ggml.model", "gpt2");
    rc |= qbt_gguf_kv_str(g, "tokenizer.ggml.pre", "gpt-2");
    rc |= qbt_gguf_kv_arr_str(g, "tokenizer.ggml.merges", 0, NULL);
    toks = calloc((size_t)s->n_vocab, sizeof(*toks));
    if (!toks)
        return -1;
    for (i = 0; i < s->n_vocab; i++) {
        toks[i] = malloc(16);
        if (toks[i])
            snprintf(toks[i], 16, "t%d", i);
        else
            rc = -1;
    }
    if (!rc)
        rc |= qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", (size_t)s->n_vocab, (const char *const *)toks);
    for (i = 0; i < s->n_vocab; i++)
        free(toks[i]);
    free(toks);
    rc |= qbt_gguf_kv_u32(g, "tokenizer.ggml.bos_token_id", 1);
    rc |= qbt_gguf_kv_u32(g, "tokenizer.ggml.eos_token_id", 2);
    rc |= qbt_gguf_kv_str(g, "tokenizer.chat_template", "{{ messages }}");
    return rc ? -1 : 0;
}

int qbt_gguf_build_model(const qbt_gguf_spec *spec, qbt_gguf **out, qbt_hf_model *ref)
{
    mb b;
    src *x;
    int l;
    size_t i;
    memset(&b, 0, sizeof(b));
    memset(ref, 0, sizeof(*ref));
    b.s = spec;
    b.rng.s = spec->seed ? spec->seed : 1;
    b.ref = ref;
    b.g = qbt_gguf_new();
    b.cap = 4096;
    b.src = calloc(b.cap, sizeof(*b.src));
    ref->t = calloc(b.cap, sizeof(*ref->t));
    CHECK(b.src && ref->t);
    /* GemmaModel/Gemma2Model/Gemma3Model store every "*norm.weight" as w + 1. */
    b.plus_one = has(spec->arch, "gemma,gemma2,gemma3");
    *out = NULL;
    CHECK(b.g && !build_meta(&b));
    CHECK(x = new_src(&b, "model.embed_tokens.weight", 2, spec->n_vocab, spec->n_embd, 0));
    CHECK(!emit_src(&b, "token_embd.weight", x, 0));
    if (spec->llama3_rope)
        CHECK(!emit_rope_freqs(&b, spec->head_dim ? spec->head_dim : spec->n_embd / spec->n_head, 500000.0,
                               spec->llama3_rope == 2));
    for (l = 0; l < spec->n_layer; l++)
        CHECK(!(strcmp(spec->arch, "deepseek2") == 0 ? build_layer_ds2(&b, l)
                : strcmp(spec->arch, "gpt-oss") == 0  ? build_layer_oss(&b, l)
                                                      : build_layer(&b, l)));
    CHECK(x = new_src(&b, "model.norm.weight", 1, 1, spec->n_embd, 1));
    CHECK(!emit_src(&b, "output_norm.weight", x, 0));
    if (!spec->tied) {
        CHECK(x = new_src(&b, "lm_head.weight", 2, spec->n_vocab, spec->n_embd, 0));
        CHECK(!emit_src(&b, "output.weight", x, 0));
    }
    for (i = 0; i < b.n_src; i++)
        free(b.src[i].enc);
    free(b.src);
    *out = b.g;
    return 0;
fail:
    for (i = 0; i < b.n_src; i++)
        free(b.src[i].enc);
    free(b.src);
    qbt_gguf_free(b.g);
    qbt_hf_model_free(ref);
    fprintf(stderr, "qbt_gguf_build_model(%s) failed\n", spec->arch);
    return -1;
}

void qbt_hf_model_free(qbt_hf_model *m)
{
    size_t i;
    for (i = 0; i < m->n; i++) {
        free(m->t[i].name);
        free(m->t[i].vals);
        free(m->t[i].orig);
        free(m->t[i].codes);
        free(m->t[i].scales);
    }
    free(m->t);
    m->t = NULL;
    m->n = 0;
}

const qbt_hf_tensor *qbt_hf_model_find(const qbt_hf_model *m, const char *name)
{
    size_t i;
    for (i = 0; i < m->n; i++)
        if (strcmp(m->t[i].name, name) == 0)
            return &m->t[i];
    return NULL;
}

#ifdef QBT_GEN_GGUF_MAIN
/* qb-gen-gguf ARCH WTYPE OUT.gguf [SHARDS]: writes one synthetic model
 * (for CLI tests). ARCH: a GGUF architecture, "mistral", or the deepseek2
 * variants "deepseek2-kvb" / "deepseek2-v2" (see main); WTYPE: f32,
 * f16, bf16, q4_0, q8_0, or a ggml type id qbt_gguf_can_quantize() takes
 * (then n_embd/n_ff are 256 so K-quant blocks fit). With SHARDS, OUT is the split-file prefix. */
int main(int argc, char **argv)
{
    qbt_gguf_spec s;
    qbt_gguf *g;
    qbt_hf_model ref;
    int rc;
    if (argc < 4) {
        fprintf(stderr, "usage: %s ARCH f32|f16|bf16|q4_0|q8_0 OUT.gguf [SHARDS]\n", argv[0]);
        return 2;
    }
    memset(&s, 0, sizeof(s));
    s.arch = argv[1];
    s.n_layer = 2;
    s.n_embd = 128;
    s.n_ff = 256;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_vocab = 256;
    s.seed = 42;
    s.wtype = (argv[2][0] >= '0' && argv[2][0] <= '9') ? (uint32_t)atoi(argv[2])
            : strcmp(argv[2], "f16") == 0 ? T_F16 : strcmp(argv[2], "bf16") == 0 ? T_BF16
            : strcmp(argv[2], "q4_0") == 0 ? T_Q4_0 : strcmp(argv[2], "q8_0") == 0 ? T_Q8_0 : T_F32;
    if (strncmp(s.arch, "gemma", 5) == 0 || strcmp(s.arch, "qwen3") == 0)
        s.head_dim = 64;
    if (strcmp(s.arch, "gemma") == 0 || strcmp(s.arch, "gemma2") == 0)
        s.tied = 1;
    if (strcmp(s.arch, "qwen2moe") == 0 || strcmp(s.arch, "qwen3moe") == 0) {
        s.n_expert = 4;
        s.n_expert_used = 2;
        s.n_ff_exp = 64;
        s.n_ff = 0;
        if (strcmp(s.arch, "qwen2moe") == 0)
            s.n_ff_shexp = 128;
    }
    if (!built_from_codes(s.wtype)) {
        s.n_embd = 256;
        s.n_ff = 512;
    }
    if (getenv("QBT_GGUF_DIMS")) { /* "layers,embd,ff,heads,kv_heads,vocab" for bigger fixtures */
        if (sscanf(getenv("QBT_GGUF_DIMS"), "%d,%d,%d,%d,%d,%d", &s.n_layer, &s.n_embd, &s.n_ff, &s.n_head,
                   &s.n_head_kv, &s.n_vocab) != 6) {
            fprintf(stderr, "QBT_GGUF_DIMS: expected layers,embd,ff,heads,kv_heads,vocab\n");
            return 2;
        }
    }
    if (strncmp(s.arch, "deepseek2", 9) == 0) {
        /* deepseek2: DeepSeek-V3 shape, kv_b split (llama.cpp's MLA form);
         * deepseek2-kvb: the same HF weights with attn_kv_b (older files);
         * deepseek2-v2: DeepSeek-V2-Lite shape (softmax, q_proj, kv_b). */
        const char *v = s.arch + 9;
        s.n_head_kv = s.n_head;
        s.n_expert = 4;
        s.n_expert_used = 2;
        s.n_ff_exp = 64;
        s.n_dense = 1;
        s.n_shared = 1;
        s.kv_lora = 64;
        s.qk_nope = 32;
        s.qk_rope = 32;
        s.v_head = 32;
        s.q_lora = strcmp(v, "-v2") == 0 ? 0 : 96;
        s.sigmoid = strcmp(v, "-v2") != 0;
        s.split_kv_b = v[0] == '\0';
        s.arch = "deepseek2";
    }
    if (strcmp(s.arch, "gpt-oss") == 0) {
        s.head_dim = 32;
        s.n_expert = 4;
        s.n_expert_used = 2;
        s.n_ff_exp = s.n_ff;
        s.sliding_window = 128;
    }
    if (strcmp(s.arch, "mistral") == 0) { /* Mistral GGUFs say "llama" plus a sliding window */
        s.arch = "llama";
        s.sliding_window = 4096;
    }
    if (qbt_gguf_build_model(&s, &g, &ref))
        return 1;
    rc = argc > 4 ? qbt_gguf_save_split(g, argv[3], atoi(argv[4])) : qbt_gguf_save(g, NULL, argv[3]);
    qbt_gguf_free(g);
    qbt_hf_model_free(&ref);
    return rc ? 1 : 0;
}
#endif
