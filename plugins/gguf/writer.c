/*
 * GGUF writer: any model the host reads, for the architectures the gguf
 * reader maps, written as one GGUF v3 file (model.gguf), or split files
 * in gguf-split's layout (split_max_size / split_max_tensors), that
 * llama.cpp loads, plus gguf-manifest.json (per tensor: type, exact or
 * quantized, error). Facts: docs/formats/gguf.md "Container layout",
 * "Split files", "Writing GGUF".
 *
 * The plan (wplan.c) fixes every tensor's name, type and offset before
 * any data, so the header and metadata (wmeta.c) are written in begin and
 * each tensor's rows are then pulled, converted and appended a row block
 * at a time (at most GGW_BLOCK_ELEMS floats, at least one row or one
 * attention head's rows): memory is flat in the model size.
 *
 * Exact paths: a symmetric 4-bit (8-bit) grid whose groups are multiples
 * of 32 columns becomes Q4_0 (Q8_0) blocks holding its codes and its
 * scales as fp16. Each block is checked while writing: its decoded values
 * must equal the reader's float rows bit for bit; a block that is not
 * (a scale that is no fp16 value, a zero point other than 8 / 128) is
 * quantized from the float values instead and counted in the manifest.
 */
#include "gguf_writer.h"

#include "ggml_quant.h"
#include "ggml_types.h"
#include "qbk_alloc.h"
#include "qbk_json.h"

#include <quantbridge/qb_half.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Row block in float32 elements (4 MiB). */
#define GGW_BLOCK_ELEMS ((int64_t)1 << 20)
#define GGW_MAX_PIECES 64

extern const qb_host *gguf_writer_host; /* set by the plugin entry (reader.c) */

typedef struct ggw_stats {
    uint64_t blocks, exact_blocks;
    double err2, ref2; /* sum of squared error and of squared source values */
} ggw_stats;

typedef struct ggw_writer {
    const qb_host *h;
    const qb_sink *sink;
    const qb_model_src *src;
    ggw_opts opts;
    ggw_plan plan;
    size_t *order;
    size_t next;
    qb_sink_file *f;
    uint64_t data_written; /* bytes of the current file's data section so far */
    uint32_t cur_shard;    /* file being written */
    size_t block;          /* floats per block buffer */
    float *fbuf;
    uint8_t *bbuf;  /* converted bytes of one block */
    uint8_t *codes; /* grid codes of one block */
    float *scales;
    int32_t *zeros;
    size_t grid_cap; /* entries of scales/zeros */
    ggw_stats *stats; /* [plan.n] */
} ggw_writer;

const qb_option_decl gguf_writer_opt_type = {
    .struct_size = sizeof(qb_option_decl),
    .name = "type",
    .type = QB_PARAM_STRING,
    .default_value = "auto",
    .help = "gguf writer: ggml type of the weight matrices (auto: exact Q4_0/Q8_0 from symmetric grids, else Q8_0)",
    .choices = "auto|F32|F16|BF16|Q8_0|Q4_0|Q4_1|Q5_0|Q5_1|Q4_K|Q5_K|Q6_K|Q4_K_M|Q5_K_M",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
const qb_option_decl gguf_writer_opt_tensor_type = {
    .struct_size = sizeof(qb_option_decl),
    .name = "tensor_type",
    .type = QB_PARAM_STRING,
    .default_value = NULL,
    .help = "gguf writer: per-tensor types REGEX=TYPE[,REGEX=TYPE...] (extended regex searched in the GGUF "
            "name, first match wins; as llama-quantize --tensor-type)",
    .choices = NULL,
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};

const qb_option_decl gguf_writer_opt_split_max_size = {
    .struct_size = sizeof(qb_option_decl),
    .name = "split_max_size",
    .type = QB_PARAM_STRING,
    .default_value = NULL,
    .help = "gguf writer: split the output as gguf-split --split-max-size does: at most N bytes of tensor data "
            "per file (N[K|M|G], 10^3/10^6/10^9), files model-0000i-of-0000n.gguf",
    .choices = NULL,
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
const qb_option_decl gguf_writer_opt_split_max_tensors = {
    .struct_size = sizeof(qb_option_decl),
    .name = "split_max_tensors",
    .type = QB_PARAM_STRING,
    .default_value = NULL,
    .help = "gguf writer: split the output as gguf-split --split-max-tensors does: at most N tensors per file",
    .choices = NULL,
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};

static int ggw_supports(void *ctx, const qb_model_info *mi)
{
    const qb_host *h = gguf_writer_host;
    const gguf_arch *a;
    (void)ctx;
    a = mi ? gguf_arch_for_model_type(mi->architecture) : NULL;
    if (!a || (a->bit & GGUF_A_GPTOSS)) {
        h->set_error(h, QB_E_UNSUPPORTED, "the gguf writer writes llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, "
                                          "qwen3_moe, gemma, gemma2, gemma3_text, phi3, deepseek_v2 and deepseek_v3; "
                                          "not '%s'",
                     mi && mi->architecture ? mi->architecture : "(none)");
        return 0;
    }
    return 50;
}

static void ggw_free(ggw_writer *w)
{
    if (!w)
        return;
    if (w->f)
        w->sink->close(w->f, NULL, NULL);
    ggw_plan_free(&w->plan);
    ggw_opts_free(&w->opts);
    qbk_free(w->order);
    qbk_free(w->fbuf);
    qbk_free(w->bbuf);
    qbk_free(w->codes);
    qbk_free(w->scales);
    qbk_free(w->zeros);
    qbk_free(w->stats);
    qbk_free(w);
}

/* Rows per block of a tensor of `cols` columns; with the rope permutation
 * a whole number of heads (rows / heads rows each). */
static int64_t block_rows(const ggw_tensor *t, int64_t rows, int64_t cols)
{
    int64_t br = cols >= GGW_BLOCK_ELEMS ? 1 : GGW_BLOCK_ELEMS / cols;
    if (t->perm_heads && t->n_dims > 1) {
        int64_t d = rows / t->perm_heads;
        br = br < d ? d : br / d * d;
    }
    return br < rows ? br : rows;
}

/* Opens file `shard` and writes its header: every key in the first file
 * (cfg non-NULL), gguf-split's split.* keys in each file of a split model,
 * then the infos of the file's own tensors (docs/formats/gguf.md "Split
 * files"). */
static qb_status write_header(ggw_writer *w, const cJSON *cfg, uint32_t shard)
{
    const ggw_plan *p = &w->plan;
    ggw_kv kv;
    ggw_buf hb;
    size_t i, n_here = 0;
    uint32_t d;
    qb_status st = QB_OK;
    char fname[64];
    static const uint8_t zero[GGW_ALIGN] = {0};

    memset(&kv, 0, sizeof(kv));
    memset(&hb, 0, sizeof(hb));
    if (cfg && (st = ggw_meta_build(w->h, w->src, cfg, p, &kv)))
        goto out;
    if (p->split) {
        /* gguf-split sets these after copying the other keys: u16, u16, i32 */
        ggw_kv_u16(&kv, "split.no", (uint16_t)shard);
        ggw_kv_u16(&kv, "split.count", (uint16_t)p->n_shards);
        ggw_kv_i32(&kv, "split.tensors.count", (int32_t)p->n);
    }
    for (i = 0; i < p->n; i++)
        n_here += p->t[i].shard == shard;
    ggw_put(&hb, "GGUF", 4);
    ggw_u32(&hb, 3);
    ggw_u64(&hb, (uint64_t)n_here);
    ggw_u64(&hb, kv.n);
    ggw_put(&hb, kv.b.p, kv.b.n);
    for (i = 0; i < p->n; i++) {
        const ggw_tensor *t = &p->t[i];
        if (t->shard != shard)
            continue;
        ggw_str(&hb, t->name);
        ggw_u32(&hb, t->n_dims);
        for (d = 0; d < t->n_dims; d++)
            ggw_u64(&hb, (uint64_t)t->ne[d]);
        ggw_u32(&hb, t->type);
        ggw_u64(&hb, t->offset);
    }
    if (hb.n % GGW_ALIGN)
        ggw_put(&hb, zero, GGW_ALIGN - hb.n % GGW_ALIGN);
    if (hb.oom || kv.b.oom) {
        st = w->h->set_error(w->h, QB_E_NOMEM, "%s: out of memory building the GGUF header", w->src->source_path);
        goto out;
    }
    /* llama_split_path: PREFIX-%05d-of-%05d.gguf, 1-based */
    if (p->split)
        snprintf(fname, sizeof(fname), "model-%05u-of-%05u.gguf", shard + 1, p->n_shards);
    else
        snprintf(fname, sizeof(fname), "model.gguf");
    if ((st = w->sink->create(w->sink->handle, fname, &w->f)))
        goto out;
    w->cur_shard = shard;
    w->data_written = 0;
    st = w->sink->write(w->f, hb.p, hb.n);
out:
    ggw_buf_free(&kv.b);
    ggw_buf_free(&hb);
    return st;
}

/* Before output tensor o's data: the next file when o starts one, and
 * the planned offset checked. */
static qb_status enter_tensor(ggw_writer *w, size_t o)
{
    const ggw_tensor *t = &w->plan.t[o];
    qb_status st;
    if (t->shard != w->cur_shard) {
        st = w->sink->close(w->f, NULL, NULL);
        w->f = NULL;
        if (st || (st = write_header(w, NULL, t->shard)))
            return st;
    }
    if (w->data_written != t->offset)
        return w->h->set_error(w->h, QB_E_INTERNAL, "gguf writer: %s at data offset %llu, planned %llu", t->name,
                               (unsigned long long)w->data_written, (unsigned long long)t->offset);
    return QB_OK;
}

/* Zero padding after a tensor up to the alignment. */
static qb_status pad_tensor(ggw_writer *w)
{
    static const uint8_t zero[GGW_ALIGN] = {0};
    qb_status st;
    size_t padn;
    if (w->data_written % GGW_ALIGN == 0)
        return QB_OK;
    padn = GGW_ALIGN - (size_t)(w->data_written % GGW_ALIGN);
    if ((st = w->sink->write(w->f, zero, padn)))
        return st;
    w->data_written += padn;
    return QB_OK;
}

/* The tensors made from config.json (rope factors), first in the file. */
static qb_status write_generated(ggw_writer *w)
{
    size_t i;
    qb_status st;
    for (i = 0; i < w->plan.n; i++) {
        const ggw_tensor *t = &w->plan.t[i];
        if (t->how != GGW_GEN)
            continue;
        if ((st = enter_tensor(w, i)) || (st = w->sink->write(w->f, t->gen, (size_t)t->nbytes)))
            return st;
        w->data_written += t->nbytes;
        if ((st = pad_tensor(w)))
            return st;
    }
    return QB_OK;
}

static qb_status ggw_begin(void *ctx, const qb_sink *sink, const qb_model_src *src, const qb_param *params,
                           size_t *order, qb_writer_handle *out)
{
    const qb_host *h = gguf_writer_host;
    ggw_writer *w = NULL;
    cJSON *cfg = NULL;
    size_t n = src->info->n_tensors, i;
    qb_status st;

    (void)ctx;
    *out = NULL;
    if ((st = qbk_json_parse_config(h, src->source_path, src->info->config_json, &cfg)))
        return st;
    w = qbk_calloc(1, sizeof(*w));
    if (!w) {
        cJSON_Delete(cfg);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    }
    w->h = h;
    w->sink = sink;
    w->src = src;
    w->order = qbk_malloc((n ? n : 1) * sizeof(*w->order));
    if (!w->order) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    if ((st = ggw_opts_parse(h, params, &w->opts)) || (st = ggw_plan_build(h, src, cfg, &w->opts, w->order, &w->plan)))
        goto out;
    w->block = 1;
    w->grid_cap = 1;
    for (i = 0; i < w->plan.n; i++) {
        const ggw_tensor *t = &w->plan.t[i];
        size_t k;
        for (k = 0; k < t->n_parts; k++) {
            const qb_tensor_info *ti;
            int64_t rows, cols, br;
            if ((st = src->tensor_info(src->handle, t->part[k], &ti)))
                goto out;
            rows = qb_tensor_rows(ti);
            cols = qb_tensor_cols(ti);
            br = block_rows(t, rows, cols);
            if ((size_t)(br * cols) > w->block)
                w->block = (size_t)(br * cols);
            if (t->how != GGW_FLOAT && (size_t)(br * (cols / 32 + 1)) > w->grid_cap)
                w->grid_cap = (size_t)(br * (cols / 32 + 1));
            if (t->kv == GGW_KV_K) {
                /* one head of k_b or v_b, and its transpose */
                int64_t m = (t->kv_nope > t->kv_vdim ? t->kv_nope : t->kv_vdim) * cols;
                if ((size_t)m > w->block)
                    w->block = (size_t)m;
            }
        }
    }
    w->fbuf = qbk_malloc(w->block * sizeof(float));
    w->bbuf = qbk_malloc(w->block * 4);
    w->codes = qbk_malloc(w->block * sizeof(float)); /* also a vector's permutation scratch */
    w->scales = qbk_malloc(w->grid_cap * sizeof(float));
    w->zeros = qbk_malloc(w->grid_cap * sizeof(int32_t));
    w->stats = qbk_calloc(w->plan.n ? w->plan.n : 1, sizeof(*w->stats));
    if (!w->fbuf || !w->bbuf || !w->codes || !w->scales || !w->zeros || !w->stats) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    if ((st = write_header(w, cfg, 0)) || (st = write_generated(w)))
        goto out;
    memcpy(order, w->order, n * sizeof(*order));
out:
    cJSON_Delete(cfg);
    if (st) {
        ggw_free(w);
        return st;
    }
    *out = w;
    return QB_OK;
}

/* One row block, split among workers. */
typedef struct ggw_job {
    ggw_writer *w;
    const ggw_tensor *t;
    size_t index;
    const char *name;
    int64_t row0, n_rows, cols, per, rows; /* rows: of this part */
    int64_t ng;                            /* grid groups per row */
    int64_t gs;                            /* grid group size */
    uint64_t row_bytes;
    ggw_stats piece[GGW_MAX_PIECES];
} ggw_job;

/* Error statistics of one converted row against its float source. */
static void account(ggw_stats *s, uint32_t type, const uint8_t *blk, const float *x, int64_t n, float *tmp)
{
    int64_t i;
    gguf_ggml_dequantize_row(type, blk, tmp, n);
    for (i = 0; i < n; i++) {
        double e = (double)tmp[i] - (double)x[i];
        s->err2 += e * e;
        s->ref2 += (double)x[i] * (double)x[i];
    }
}

/* Q4_0 / Q8_0 blocks of one row from its grid codes; a block whose
 * decoded values differ from x is quantized from x. */
static void grid_row(const ggw_job *j, ggw_stats *s, const uint8_t *codes, const float *scales, const int32_t *zeros,
                     const float *x, uint8_t *dst)
{
    const int q4 = j->t->how == GGW_GRID_Q4_0;
    const int64_t nb = j->cols / 32;
    const size_t bs = q4 ? 18 : 34;
    const uint32_t type = q4 ? GGUF_GGML_TYPE_Q4_0 : GGUF_GGML_TYPE_Q8_0;
    float dec[32];
    int64_t b;
    int k;
    for (b = 0; b < nb; b++) {
        const int64_t g = b * 32 / j->gs;
        const float sc = scales[g];
        const uint16_t d16 = qb_f32_to_f16(sc);
        uint8_t *out = dst + (size_t)b * bs;
        int ok = zeros[g] == (q4 ? 8 : 128) && qb_f32_bits(qb_f16_to_f32(d16)) == qb_f32_bits(sc);
        if (ok) {
            if (q4) {
                gguf_ggml_q4_0_pack(codes + b * 32, d16, out);
            } else {
                int8_t qv[32];
                for (k = 0; k < 32; k++)
                    qv[k] = (int8_t)((int)codes[b * 32 + k] - 128);
                gguf_ggml_q8_0_pack(qv, d16, out);
            }
            gguf_ggml_dequantize_row(type, out, dec, 32);
            for (k = 0; k < 32 && ok; k++)
                ok = qb_f32_bits(dec[k]) == qb_f32_bits(x[b * 32 + k]);
        }
        s->blocks++;
        if (ok)
            s->exact_blocks++;
        else
            gguf_ggml_quantize_row(type, x + b * 32, out, 32);
    }
}

static qb_status job_run(void *arg, size_t i)
{
    ggw_job *j = arg;
    ggw_writer *w = j->w;
    const qb_model_src *src = w->src;
    const ggw_tensor *t = j->t;
    ggw_stats *s = &j->piece[i];
    int64_t r = (int64_t)i * j->per, n, g, e;
    size_t off;
    float tmp[256];
    qb_status st;
    int one_d = t->n_dims == 1;

    if (r >= j->n_rows)
        return QB_OK;
    n = j->n_rows - r < j->per ? j->n_rows - r : j->per;
    off = (size_t)r * (size_t)j->cols;
    if ((st = src->read_rows(src->handle, j->index, j->row0 + r, n, w->fbuf + off)))
        return st;
    for (e = 0; e < n * j->cols; e++)
        if (!isfinite(w->fbuf[off + (size_t)e]))
            return w->h->set_error(w->h, QB_E_FORMAT, "%s: %s: element [%lld, %lld] is %g in the source",
                                   src->source_path, j->name, (long long)(j->row0 + r + e / j->cols),
                                   (long long)(e % j->cols), (double)w->fbuf[off + (size_t)e]);
    if (t->plus_one)
        for (e = 0; e < n * j->cols; e++)
            w->fbuf[off + (size_t)e] += 1.0f;
    if (one_d && t->perm_heads) {
        /* a q/k bias: its elements are permuted as the rows are */
        float *x = w->fbuf + off, *y = (float *)w->codes;
        for (e = 0; e < j->cols; e++)
            y[e] = x[gguf_permute_row(e, j->cols, t->perm_heads)];
        memcpy(x, y, (size_t)j->cols * sizeof(float));
    }
    if (t->how != GGW_FLOAT) {
        qb_grid_rows gr;
        gr.struct_size = sizeof(gr);
        gr.codes = w->codes + off;
        gr.scales = w->scales + (size_t)r * (size_t)j->ng;
        gr.zeros = w->zeros + (size_t)r * (size_t)j->ng;
        if ((st = src->read_grid(src->handle, j->index, j->row0 + r, n, &gr)))
            return st;
    }
    for (g = r; g < r + n; g++) {
        /* output row g of this block holds source row p(g) of the same block
         * (blocks are whole heads when permuted) */
        int64_t sr = g;
        uint8_t *dst = w->bbuf + (size_t)g * j->row_bytes;
        const float *x;
        if (t->perm_heads && !one_d)
            sr = gguf_permute_row(j->row0 + g, j->rows, t->perm_heads) - j->row0;
        x = w->fbuf + (size_t)sr * (size_t)j->cols;
        if (t->how != GGW_FLOAT) {
            grid_row(j, s, w->codes + (size_t)sr * (size_t)j->cols, w->scales + (size_t)sr * (size_t)j->ng,
                     w->zeros + (size_t)sr * (size_t)j->ng, x, dst);
        } else {
            gguf_ggml_quantize_row(t->type, x, dst, j->cols);
        }
        for (e = 0; e < j->cols; e += 256) {
            int64_t m = j->cols - e < 256 ? j->cols - e : 256;
            uint64_t bo = 0;
            gguf_ggml_row_bytes(t->type, e, &bo);
            account(s, t->type, dst + bo, x + e, m, tmp);
        }
    }
    return QB_OK;
}

static qb_status stream(ggw_writer *w, size_t index, const ggw_tensor *t, ggw_stats *stats)
{
    const qb_model_src *src = w->src;
    const qb_tensor_info *ti;
    int64_t br;
    size_t pieces, k;
    ggw_job *j;
    qb_status st = QB_OK;

    if ((st = src->tensor_info(src->handle, index, &ti)))
        return st;
    j = qbk_calloc(1, sizeof(*j));
    if (!j)
        return w->h->set_error(w->h, QB_E_NOMEM, "out of memory");
    j->w = w;
    j->t = t;
    j->index = index;
    j->name = ti->name;
    j->rows = qb_tensor_rows(ti);
    j->cols = qb_tensor_cols(ti);
    if (gguf_ggml_row_bytes(t->type, j->cols, &j->row_bytes)) {
        st = w->h->set_error(w->h, QB_E_INTERNAL, "gguf writer: row size of %s", t->name);
        goto out;
    }
    if (t->how != GGW_FLOAT) {
        qb_grid_info gi;
        memset(&gi, 0, sizeof(gi));
        gi.struct_size = sizeof(gi);
        if ((st = src->get_grid_info(src->handle, index, &gi)))
            goto out;
        j->ng = gi.n_groups;
        j->gs = gi.group_size;
    }
    br = block_rows(t, j->rows, j->cols);
    for (j->row0 = 0; j->row0 < j->rows; j->row0 += br) {
        int64_t unit = t->perm_heads && t->n_dims > 1 ? j->rows / t->perm_heads : 1;
        j->n_rows = j->rows - j->row0 < br ? j->rows - j->row0 : br;
        if (w->h->cancelled(w->h)) {
            st = w->h->set_error(w->h, QB_E_CANCELLED, "%s: cancelled", ti->name);
            goto out;
        }
        pieces = w->h->thread_count(w->h);
        if (pieces < 1)
            pieces = 1;
        if (pieces > GGW_MAX_PIECES)
            pieces = GGW_MAX_PIECES;
        if ((int64_t)pieces > j->n_rows / unit)
            pieces = (size_t)(j->n_rows / unit);
        if (pieces < 1)
            pieces = 1;
        /* pieces are whole heads when permuted */
        j->per = (j->n_rows / unit + (int64_t)pieces - 1) / (int64_t)pieces * unit;
        if ((st = w->h->parallel_for(w->h, pieces, job_run, j)))
            goto out;
        if ((st = w->sink->write(w->f, w->bbuf, (size_t)j->n_rows * j->row_bytes)))
            goto out;
        w->data_written += (uint64_t)j->n_rows * j->row_bytes;
    }
    for (k = 0; k < GGW_MAX_PIECES; k++) {
        stats->blocks += j->piece[k].blocks;
        stats->exact_blocks += j->piece[k].exact_blocks;
        stats->err2 += j->piece[k].err2;
        stats->ref2 += j->piece[k].ref2;
    }
out:
    qbk_free(j);
    return st;
}

/* Rows of n floats at x, converted to type and appended, with the error
 * statistics. */
static qb_status emit_rows(ggw_writer *w, const ggw_tensor *t, const float *x, int64_t rows, int64_t n,
                           ggw_stats *s)
{
    uint64_t rb = 0;
    int64_t r, e;
    float tmp[256];
    gguf_ggml_row_bytes(t->type, n, &rb);
    for (r = 0; r < rows; r++) {
        uint8_t *dst = w->bbuf + (size_t)r * rb;
        const float *xr = x + (size_t)r * (size_t)n;
        gguf_ggml_quantize_row(t->type, xr, dst, n);
        for (e = 0; e < n; e += 256) {
            int64_t m = n - e < 256 ? n - e : 256;
            uint64_t bo = 0;
            gguf_ggml_row_bytes(t->type, e, &bo);
            account(s, t->type, dst + bo, xr + e, m, tmp);
        }
    }
    w->data_written += (uint64_t)rows * rb;
    return w->sink->write(w->f, w->bbuf, (size_t)((uint64_t)rows * rb));
}

/* deepseek2 kv_b_proj (source `index`) as attn_k_b then attn_v_b (output
 * tensors ok and its kv_other), head by head: k_b's head h is rows
 * [h*(nope+v), h*(nope+v)+nope) transposed, v_b's the next v rows as they
 * are (DeepseekV2Model.modify_tensors; docs/formats/gguf.md "deepseek2"). */
static qb_status stream_kv_b(ggw_writer *w, size_t index, size_t ok)
{
    const ggw_tensor *tk = &w->plan.t[ok], *tv = &w->plan.t[tk->kv_other];
    const qb_model_src *src = w->src;
    const int64_t H = tk->kv_heads, nope = tk->kv_nope, vd = tk->kv_vdim, R = tk->ne[1];
    float *y = (float *)w->codes;
    int64_t h, j, c;
    int half;
    qb_status st;
    for (half = 0; half < 2; half++) {
        const ggw_tensor *t = half ? tv : tk;
        const int64_t nr = half ? vd : nope;
        if ((st = enter_tensor(w, half ? tk->kv_other : ok)))
            return st;
        for (h = 0; h < H; h++) {
            if (w->h->cancelled(w->h))
                return w->h->set_error(w->h, QB_E_CANCELLED, "%s: cancelled", t->name);
            if ((st = src->read_rows(src->handle, index, h * (nope + vd) + (half ? nope : 0), nr, w->fbuf)))
                return st;
            for (j = 0; j < nr * R; j++)
                if (!isfinite(w->fbuf[j]))
                    return w->h->set_error(w->h, QB_E_FORMAT, "%s: kv_b_proj row %lld holds %g", src->source_path,
                                           (long long)(h * (nope + vd) + (half ? nope : 0) + j / R),
                                           (double)w->fbuf[j]);
            if (half) {
                st = emit_rows(w, t, w->fbuf, vd, R, &w->stats[tk->kv_other]);
            } else {
                for (j = 0; j < nope; j++)
                    for (c = 0; c < R; c++)
                        y[c * nope + j] = w->fbuf[j * R + c];
                st = emit_rows(w, t, y, R, nope, &w->stats[ok]);
            }
            if (st)
                return st;
        }
        if ((st = pad_tensor(w)))
            return st;
    }
    return QB_OK;
}

static qb_status ggw_write_tensor(qb_writer_handle handle, size_t index)
{
    ggw_writer *w = handle;
    const ggw_plan *p = &w->plan;
    const ggw_tensor *t;
    size_t o;
    qb_status st;

    if (w->next >= p->n_src || w->order[w->next] != index)
        return w->h->set_error(w->h, QB_E_INTERNAL, "gguf writer: tensor %zu written out of the planned order", index);
    w->next++;
    o = p->out_of[index];
    t = &p->t[o];
    if (t->kv == GGW_KV_K)
        return stream_kv_b(w, index, o);
    if (index == t->part[0] && (st = enter_tensor(w, o)))
        return st;
    if ((st = stream(w, index, t, &w->stats[o])))
        return st;
    if (index == t->part[t->n_parts - 1])
        return pad_tensor(w);
    return QB_OK;
}

static const char *action_name(int a)
{
    switch (a) {
    case QB_PLAN_EXACT:
        return "exact";
    case QB_PLAN_REQUANT:
        return "quantized";
    case QB_PLAN_CONVERT:
        return "converted";
    case QB_PLAN_COPY:
        return "copied";
    default:
        return "omitted";
    }
}

/* gguf-manifest.json: per GGUF tensor its type, action, blocks carried
 * over exactly and the relative RMS error against the reader's floats. */
static qb_status write_manifest(ggw_writer *w)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    char *text = NULL;
    size_t i;
    qb_status st = QB_OK;
    qb_sink_file *f = NULL;
    if (!root || !arr) {
        cJSON_Delete(root);
        cJSON_Delete(arr);
        return w->h->set_error(w->h, QB_E_NOMEM, "out of memory");
    }
    cJSON_AddItemToObject(root, "format", cJSON_CreateString("gguf"));
    cJSON_AddItemToObject(root, "source", cJSON_CreateString(w->src->source_path));
    cJSON_AddItemToObject(root, "tensors", arr);
    for (i = 0; i < w->plan.n; i++) {
        const ggw_tensor *t = &w->plan.t[i];
        const ggw_stats *s = &w->stats[i];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddItemToObject(o, "name", cJSON_CreateString(t->name));
        cJSON_AddItemToObject(o, "type", cJSON_CreateString(gguf_ggml_type_name(t->type)));
        cJSON_AddItemToObject(o, "action", cJSON_CreateString(action_name(t->action)));
        cJSON_AddItemToObject(o, "why", cJSON_CreateString(t->why));
        if (w->plan.split)
            cJSON_AddItemToObject(o, "file", cJSON_CreateNumber((double)t->shard + 1));
        if (t->how != GGW_FLOAT) {
            cJSON_AddItemToObject(o, "blocks", cJSON_CreateNumber((double)s->blocks));
            cJSON_AddItemToObject(o, "exact_blocks", cJSON_CreateNumber((double)s->exact_blocks));
        }
        cJSON_AddItemToObject(o, "rel_rmse", cJSON_CreateNumber(s->ref2 > 0 ? sqrt(s->err2 / s->ref2) : 0.0));
    }
    text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return w->h->set_error(w->h, QB_E_NOMEM, "out of memory");
    if (!(st = w->sink->create(w->sink->handle, "gguf-manifest.json", &f))) {
        st = w->sink->write(f, text, strlen(text));
        if (!st)
            st = w->sink->write(f, "\n", 1);
        {
            qb_status c = w->sink->close(f, NULL, NULL);
            if (!st)
                st = c;
        }
    }
    cJSON_free(text);
    return st;
}

static qb_status ggw_finish(qb_writer_handle handle)
{
    ggw_writer *w = handle;
    qb_status st = QB_OK;
    if (w->next != w->plan.n_src) {
        st = w->h->set_error(w->h, QB_E_INTERNAL, "gguf writer: finish after %zu of %zu tensors", w->next,
                             w->plan.n_src);
        goto out;
    }
    if (w->plan.n && w->cur_shard + 1 != w->plan.n_shards) {
        st = w->h->set_error(w->h, QB_E_INTERNAL, "gguf writer: finish in file %u of %u", w->cur_shard + 1,
                             w->plan.n_shards);
        goto out;
    }
    st = w->sink->close(w->f, NULL, NULL);
    w->f = NULL;
    if (!st)
        st = write_manifest(w);
out:
    ggw_free(w);
    return st;
}

static void ggw_abort(qb_writer_handle handle)
{
    ggw_free(handle);
}

static qb_status ggw_plan_cb(void *ctx, const qb_model_src *src, const qb_param *params, const qb_plan_sink *out)
{
    const qb_host *h = gguf_writer_host;
    ggw_opts o;
    ggw_plan p;
    memset(&o, 0, sizeof(o));
    cJSON *cfg = NULL;
    size_t *order, i, n = src->info->n_tensors;
    qb_status st;
    (void)ctx;
    if ((st = qbk_json_parse_config(h, src->source_path, src->info->config_json, &cfg)))
        return st;
    order = qbk_malloc((n ? n : 1) * sizeof(*order));
    if (!order) {
        cJSON_Delete(cfg);
        return h->set_error(h, QB_E_NOMEM, "out of memory");
    }
    if ((st = ggw_opts_parse(h, params, &o)) || (st = ggw_plan_build(h, src, cfg, &o, order, &p)))
        goto out;
    {
        char ft[32];
        snprintf(ft, sizeof(ft), "%u", p.ftype);
        st = out->setting(out->handle, "file_type", ft,
                          o.auto_type ? "type=auto: exact where a grid allows, else Q8_0 (llama_ftype 7)"
                                      : "llama_ftype of the type asked for");
    }
    for (i = 0; i < n && !st; i++) {
        const ggw_tensor *t = &p.t[p.out_of[order[i]]];
        qb_plan_entry e;
        char target[2 * GGUF_MAX_NAME + 48];
        const qb_tensor_info *ti;
        if ((st = src->tensor_info(src->handle, order[i], &ti)))
            break;
        memset(&e, 0, sizeof(e));
        e.struct_size = sizeof(e);
        e.action = (uint32_t)t->action;
        e.tensor = order[i];
        snprintf(target, sizeof(target), "%s %s", t->name, gguf_ggml_type_name(t->type));
        e.target = target;
        e.reason = t->why;
        e.group_size = t->type == GGUF_GGML_TYPE_F32 || t->type == GGUF_GGML_TYPE_F16 ||
                               t->type == GGUF_GGML_TYPE_BF16
                           ? 0
                           : 32;
        e.bytes_out = t->nbytes * (uint64_t)qb_tensor_rows(ti) / (uint64_t)(t->n_dims == 1 ? 1 : t->ne[1] * (t->n_dims == 3 ? t->ne[2] : 1));
        if (t->kv == GGW_KV_K) {
            /* kv_b_proj: both halves */
            const ggw_tensor *tv = &p.t[t->kv_other];
            e.bytes_out = t->nbytes + tv->nbytes;
            snprintf(target, sizeof(target), "%s %s + %s %s", t->name, gguf_ggml_type_name(t->type), tv->name,
                     gguf_ggml_type_name(tv->type));
        }
        st = out->tensor(out->handle, &e);
    }
    ggw_plan_free(&p);
out:
    ggw_opts_free(&o);
    qbk_free(order);
    cJSON_Delete(cfg);
    return st;
}

const qb_writer_vtable gguf_writer_vtable = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = ggw_supports,
    .begin = ggw_begin,
    .write_tensor = ggw_write_tensor,
    .finish = ggw_finish,
    .abort = ggw_abort,
    .plan = ggw_plan_cb,
};
