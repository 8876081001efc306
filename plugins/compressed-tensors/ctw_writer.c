/*
 * compressed-tensors writer: any model the host reads, written as a
 * pack-quantized compressed-tensors checkpoint (vLLM's and SGLang's
 * Marlin/Machete int4/int8 paths, transformers' CompressedTensors
 * quantizer): config.json with quantization_config, model.safetensors (or
 * shards with model.safetensors.index.json), the tokenizer files and
 * generation_config.json as every writer copies them.
 *
 * Streaming: each tensor is read in row blocks (CTW_BLOCK_ELEMS floats, at
 * least CTW_ROW_ALIGN rows); the packed codes go out block by block, and a
 * quantized tensor's scales and zero points (N x G, 1/group_size of the
 * weight) are kept until its last block, because weight_zero_point packs
 * rows together and follows the codes in the file.
 *
 * Exact linears are checked while written: (u - z) * scale as the
 * compressed-tensors reader decodes it equals the source's dense rows bit
 * for bit, else the conversion fails naming the tensor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctw.h"
#include "qbk_alloc.h"
#include "qbk_encode_check.h"
#include "qbk_fp4_decode.h"
#include "qbk_fp8_decode.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_int4_rules.h"
#include "qbk_json_edit.h"
#include "qbk_pack32.h"
#include "qbk_sink_text.h"
#include "qbk_tensor_report.h"
#include "qbk_text.h"

#define CTW_BLOCK_ELEMS ((int64_t)1 << 20)
/* rows per block: a multiple of every pack factor (8 for 4 bits, 4 for 8) */
#define CTW_ROW_ALIGN 8

static const qb_option_decl opt_dtype = {
    .struct_size = sizeof(qb_option_decl),
    .name = "dtype",
    .type = QB_PARAM_STRING,
    .default_value = "auto",
    .help = "compressed-tensors writer: model dtype (scales and dense tensors); auto: the source "
            "grids' scale dtype, so their codes and scales carry over exactly",
    .choices = "auto|f16|bf16|f32",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_scheme = {
    .struct_size = sizeof(qb_option_decl),
    .name = "scheme",
    .type = QB_PARAM_STRING,
    .default_value = "w4a16",
    .help = "compressed-tensors writer: scheme for linears quantized anew from dense rows "
            "(w4a16: int4 symmetric; w4a16_asym: int4 with zero points; w8a16: int8 symmetric; "
            "fp8: float8 e4m3 with a scale per row, FP8_DYNAMIC's weights, written weight-only: "
            "naive-quantized; nvfp4: NVFP4A16's weights, e2m1 with an e4m3 scale per 16 columns "
            "and a float32 global scale: nvfp4-pack-quantized)",
    .choices = "w4a16|w4a16_asym|w8a16|fp8|nvfp4",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_group = {
    .struct_size = sizeof(qb_option_decl),
    .name = "group_size",
    .type = QB_PARAM_INT,
    .default_value = "128",
    .help = "compressed-tensors writer: columns per scale of linears quantized anew; -1: one "
            "scale per row (channel strategy). Exact linears keep the source's grouping; "
            "scheme fp8 is always per row",
    .choices = NULL,
    .min_int = -1,
    .max_int = 1 << 20,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_act_order = {
    .struct_size = sizeof(qb_option_decl),
    .name = "act_order",
    .type = QB_PARAM_STRING,
    .default_value = "requant",
    .help = "compressed-tensors writer: act-order (g_idx) sources: requant quantizes them anew; "
            "g_idx keeps the codes with weight_g_idx (actorder \"group\", which "
            "compressed-tensors 0.20 no longer loads)",
    .choices = "requant|g_idx",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_max_shard = {
    .struct_size = sizeof(qb_option_decl),
    .name = "max_shard_size",
    .type = QB_PARAM_SIZE,
    .default_value = "5GB",
    .help = "compressed-tensors writer: largest safetensors file before the weights are split "
            "into shards",
    .choices = NULL,
    .min_int = 1,
    .max_int = INT64_MAX,
    .roles = QB_OPTION_ROLE_WRITER,
};

static const qb_option_decl opt_rule = {
    .struct_size = sizeof(qb_option_decl),
    .name = "quant_rule",
    .type = QB_PARAM_STRING,
    .default_value = "absmax",
    .help = "compressed-tensors writer: scale of symmetric linears quantized anew: absmax "
            "(largest magnitude / 7 for int4: nothing clips), minmax (compressed-tensors' and "
            "llm-compressor's / 7.5, bit for bit), or for w4a16 the int4 rules of the W4A16 "
            "writer (sm86-w4a16): search (least squared error), keep (absmax / 7 or the extreme "
            "on code -8), auto (per group the better of absmax and search)",
    .choices = "absmax|minmax|search|keep|auto",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};

const qb_option_decl *const ct_option_decls[] = {&opt_dtype, &opt_scheme, &opt_group,
                                                 &opt_rule, &opt_act_order, &opt_max_shard,
                                                 NULL};

qb_status ctw_options_read(const qb_host *h, const qb_param *params, ctw_options *o)
{
    const qb_param *pd = qb_param_find(params, "dtype");
    const qb_param *ps = qb_param_find(params, "scheme");
    const qb_param *pg = qb_param_find(params, "group_size");
    const qb_param *pa = qb_param_find(params, "act_order");
    const qb_param *pm = qb_param_find(params, "max_shard_size");
    const qb_param *pr = qb_param_find(params, "quant_rule");
    const char *scheme = ps && ps->is_set ? ps->v.s : "w4a16";

    memset(o, 0, sizeof *o);
    o->dtype = pd && pd->is_set ? pd->v.s : "auto";
    o->rtn.fp8 = strcmp(scheme, "fp8") == 0;
    o->rtn.bits = strcmp(scheme, "w8a16") == 0 || o->rtn.fp8 ? 8 : 4;
    o->rtn.symmetric = strcmp(scheme, "w4a16_asym") != 0;
    o->rtn.group_size = pg && pg->is_set ? pg->v.i : 128;
    /* the host hands the default as set, so 128 cannot be told from it */
    if (o->rtn.fp8 && pg && pg->is_set && pg->v.i != -1 && pg->v.i != 128)
        return h->set_error(h, QB_E_INVALID, "scheme fp8 writes one scale per row (strategy "
                            "channel): group_size %lld does not apply (-1 or leave it out)",
                            (long long)pg->v.i);
    if (o->rtn.fp8)
        o->rtn.group_size = -1;
    o->rtn.nvfp4 = strcmp(scheme, "nvfp4") == 0;
    if (o->rtn.nvfp4 && pg && pg->is_set && pg->v.i != 16 && pg->v.i != 128)
        return h->set_error(h, QB_E_INVALID, "scheme nvfp4 has groups of 16 columns "
                            "(nvfp4-pack-quantized): group_size %lld does not apply",
                            (long long)pg->v.i);
    if (o->rtn.nvfp4) {
        o->rtn.group_size = 16;
        o->rtn.symmetric = 1;
    }
    o->act_gidx = pa && pa->is_set && strcmp(pa->v.s, "g_idx") == 0;
    o->minmax = pr && pr->is_set && strcmp(pr->v.s, "minmax") == 0;
    o->i4rule = -1;
    if (pr && pr->is_set && strcmp(pr->v.s, "absmax") != 0 && !o->minmax) {
        qbk_int4_rule r;
        if (qbk_int4_rule_parse(pr->v.s, &r) != 0)
            return h->set_error(h, QB_E_INVALID, "quant_rule %s: not a rule of the "
                                "compressed-tensors writer", pr->v.s);
        /* the kit's rules choose one scale per group for codes -8..7: the
         * symmetric int4 grid only */
        if (o->rtn.bits != 4 || !o->rtn.symmetric || o->rtn.fp8 || o->rtn.nvfp4)
            return h->set_error(h, QB_E_INVALID, "quant_rule %s does not apply to scheme %s: "
                                "it chooses symmetric int4 scales (scheme w4a16); use "
                                "quant_rule absmax or minmax", pr->v.s, scheme);
        o->i4rule = (int)r;
    }
    o->max_shard = pm && pm->is_set ? (uint64_t)pm->v.i : 5000000000u;
    if (o->rtn.group_size == 0)
        return h->set_error(h, QB_E_INVALID,
                            "group_size 0: give a positive group size or -1 (channel)");
    if (o->rtn.group_size < 0)
        o->rtn.group_size = 0;
    if (pm && pm->is_set && pm->v.i < 1)
        return h->set_error(h, QB_E_INVALID, "max_shard_size %lld: must be at least 1 byte",
                            (long long)pm->v.i);
    return QB_OK;
}

typedef struct ctw_writer {
    const qb_host *h;
    const qb_sink *sink;
    const qb_model_src *src;
    ctw_plan plan;
    char *qcfg;            /* quantization_config text */
    size_t next;           /* next item to write */
    qbk_st_writer *cur;    /* open shard */
    uint32_t next_shard;
    float *fbuf;           /* one block of floats */
    float *fref;           /* one block: the source's dense rows (exact check) */
    uint8_t *bbuf;         /* one block of output bytes */
    uint8_t *codes;        /* one block of codes */
} ctw_writer;

static int ctw_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    if (!mi || !mi->config_json) {
        ct_host->set_error(ct_host, QB_E_UNSUPPORTED,
                           "compressed-tensors writes a Hugging Face config.json, and the "
                           "source reader gives no model config");
        return 0;
    }
    return 50;
}

static void ctw_free(ctw_writer *w)
{
    if (!w)
        return;
    qbk_st_writer_discard(w->cur);
    ctw_plan_free(&w->plan);
    qbk_free(w->qcfg);
    qbk_free(w->fbuf);
    qbk_free(w->fref);
    qbk_free(w->bbuf);
    qbk_free(w->codes);
    qbk_free(w);
}

static int64_t block_rows(int64_t rows, int64_t cols)
{
    int64_t br = CTW_BLOCK_ELEMS / cols;
    br = br < CTW_ROW_ALIGN ? CTW_ROW_ALIGN : br - br % CTW_ROW_ALIGN;
    return br;
    (void)rows;
}

static qb_status ctw_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                           const qb_param *params, size_t *order, qb_writer_handle *out)
{
    const qb_host *h = ct_host;
    ctw_writer *w = NULL;
    ctw_options o;
    size_t i, block = 1, n_quant = 0;
    qb_status st;

    (void)ctx;
    *out = NULL;
    if (!src->info->config_json)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: no model config to write config.json from",
                            src->source_path);
    if ((st = ctw_options_read(h, params, &o)) != QB_OK)
        return st;
    w = qbk_calloc(1, sizeof *w);
    if (!w)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    w->h = h;
    w->sink = sink;
    w->src = src;
    if ((st = ctw_plan_build(h, src, &o, &w->plan)) != QB_OK)
        goto out;
    for (i = 0; i < w->plan.n; i++) {
        const ctw_item *it = &w->plan.it[i];
        size_t b = (size_t)(block_rows(it->rows, it->cols) * it->cols);
        block = b > block ? b : block;
        n_quant += it->kind != CTW_DENSE;
        order[i] = it->src;
    }
    if (n_quant == 0) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s: no linear to quantize (compressed-tensors "
                          "would describe a dense model)", src->source_path);
        goto out;
    }
    if ((st = ctw_quant_config(h, src, &w->plan, &w->qcfg)) != QB_OK)
        goto out;
    w->fbuf = qbk_malloc(block * sizeof(float));
    w->fref = qbk_malloc(block * sizeof(float));
    w->bbuf = qbk_malloc(block * 4);
    w->codes = qbk_malloc(block);
    if (!w->fbuf || !w->fref || !w->bbuf || !w->codes)
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
out:
    if (st != QB_OK) {
        ctw_free(w);
        return st;
    }
    *out = w;
    return QB_OK;
}

static qb_status ctw_plan_vt(void *ctx, const qb_model_src *src, const qb_param *params,
                             const qb_plan_sink *out)
{
    const qb_host *h = ct_host;
    ctw_options o;
    ctw_plan p;
    size_t i, k;
    qb_status st;

    (void)ctx;
    if ((st = ctw_options_read(h, params, &o)) != QB_OK)
        return st;
    if ((st = ctw_plan_build(h, src, &o, &p)) != QB_OK)
        return st;
    st = out->setting(out->handle, "dtype", qbk_out_dt_torch_name(p.dt), p.dt_reason);
    for (i = 0; st == QB_OK && i < p.n; i++) {
        const ctw_item *it = &p.it[i];
        const qb_tensor_info *ti;
        qb_plan_entry e;
        char target[520];
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        if ((st = src->tensor_info(src->handle, it->src, &ti)) != QB_OK)
            break;
        e.tensor = it->src;
        e.reason = it->reason;
        for (k = 0; k < it->n_out; k++)
            e.bytes_out += p.out[it->out0 + k].n_bytes;
        if (it->kind == CTW_DENSE) {
            e.action = ti->source_dtype == p.dt && !ti->has_grid ? QB_PLAN_COPY
                                                                 : QB_PLAN_CONVERT;
            e.target = ti->name;
        } else {
            size_t nl = strlen(ti->name);
            if (it->sc.fp8)
                snprintf(target, sizeof target, "%.*s (fp8 e4m3)", (int)(nl - 7), ti->name);
            else
                snprintf(target, sizeof target, "%.*s (int%d %s)", (int)(nl - 7), ti->name,
                         it->sc.bits, it->sc.symmetric ? "sym" : "asym");
            e.target = target;
            e.action = it->kind == CTW_EXACT ? QB_PLAN_EXACT : QB_PLAN_REQUANT;
            e.group_size = it->sc.group_size > 0 ? it->sc.group_size : it->cols;
        }
        st = out->tensor(out->handle, &e);
    }
    ctw_plan_free(&p);
    return st;
}

/* Dense tensor: rows rounded to D (refused when one would overflow or is
 * not finite). */
static qb_status write_dense(ctw_writer *w, const ctw_item *it)
{
    const qb_host *h = w->h;
    int64_t br = block_rows(it->rows, it->cols), r0;
    size_t es = qbk_out_dt_size(w->plan.dt);
    qb_status st;

    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        size_t cnt = (size_t)(nr * it->cols), bad;
        qbk_encode_bad why;
        if ((st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fbuf)) != QB_OK)
            return st;
        bad = qbk_encode_check(w->plan.dt, w->fbuf, cnt, 0, &why);
        if (bad < cnt)
            return h->set_error(h, why == QBK_ENCODE_NONFINITE ? QB_E_FORMAT : QB_E_RANGE,
                                "%s: %s: element %zu of rows from %lld is %g, which %s %s",
                                w->src->source_path, it->name, bad, (long long)r0,
                                (double)w->fbuf[bad],
                                why == QBK_ENCODE_NONFINITE ? "is not finite in" : "overflows",
                                qbk_out_dt_torch_name(w->plan.dt));
        qbk_out_dt_encode(w->plan.dt, w->fbuf, cnt, w->bbuf);
        if ((st = qbk_st_writer_write(w->cur, w->bbuf, cnt * es)) != QB_OK)
            return st;
    }
    return QB_OK;
}

/* Exact rows [r0, r0+nr): the source grid shifted into B bits, checked
 * against the dense rows; unsigned codes into w->codes, scales and zeros
 * into the tensor-wide arrays. */
static qb_status exact_block(ctw_writer *w, const ctw_item *it, int64_t r0, int64_t nr,
                             float *scales, int32_t *zeros)
{
    const qb_host *h = w->h;
    int64_t G = it->n_groups, r, k, maxc = (1 << it->sc.bits) - 1;
    int32_t half = 1 << (it->sc.bits - 1);
    qb_grid_rows gr;
    qb_status st;

    memset(&gr, 0, sizeof gr);
    gr.struct_size = sizeof gr;
    gr.codes = w->codes;
    gr.scales = scales + r0 * G;
    gr.zeros = zeros + r0 * G;
    if ((st = w->src->read_grid(w->src->handle, it->src, r0, nr, &gr)) != QB_OK ||
        (st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fref)) != QB_OK)
        return st;
    for (r = 0; r < nr; r++) {
        const float *s = gr.scales + r * G;
        int32_t *z = gr.zeros + r * G;
        uint8_t *c = w->codes + r * it->cols;
        const float *ref = w->fref + r * it->cols;
        int64_t g;
        for (g = 0; g < G; g++) {
            if (qbk_out_dt_round(w->plan.dt, s[g]) != s[g] && !(s[g] != s[g]))
                return h->set_error(h, QB_E_INTERNAL, "%s: %s: row %lld group %lld: scale %.9g "
                                    "is not a %s value", w->src->source_path, it->name,
                                    (long long)(r0 + r), (long long)g, (double)s[g],
                                    qbk_out_dt_torch_name(w->plan.dt));
            z[g] += it->shift;
            if (z[g] < 0 || z[g] > maxc || (it->sc.symmetric && z[g] != half))
                return h->set_error(h, QB_E_UNSUPPORTED,
                                    "%s: %s: row %lld group %lld: zero point %d does not fit "
                                    "int%d's zero points 0..%lld (--option scheme with "
                                    "requantization is not applied to planned-exact tensors)",
                                    w->src->source_path, it->name, (long long)(r0 + r),
                                    (long long)g, (int)(z[g] - it->shift), it->sc.bits,
                                    (long long)maxc);
        }
        for (k = 0; k < it->cols; k++) {
            int64_t g = it->col_group ? it->col_group[k] : k / (it->sc.group_size > 0
                                                                 ? it->sc.group_size
                                                                 : it->cols);
            float v;
            c[k] = (uint8_t)(c[k] + it->shift);
            /* the compressed-tensors reader's decode (ct_read.c) */
            v = (float)((int32_t)c[k] - z[g]) * s[g];
            if (qb_f32_bits(v) != qb_f32_bits(ref[k]))
                return h->set_error(h, QB_E_MISMATCH,
                                    "%s: %s: element [%lld, %lld]: the carried-over code gives "
                                    "%.9g, the source's dense value is %.9g",
                                    w->src->source_path, it->name, (long long)(r0 + r),
                                    (long long)k, (double)v, (double)ref[k]);
        }
    }
    return QB_OK;
}

/* RTN rows [r0, r0+nr) into w->codes (unsigned) and the tensor-wide
 * scales / zeros (unsigned). */
static qb_status rtn_block(ctw_writer *w, ctw_item *it, int64_t r0, int64_t nr, float *scales,
                           int32_t *zeros)
{
    const qb_host *h = w->h;
    int64_t G = it->n_groups, r, k;
    int32_t half = 1 << (it->sc.bits - 1);
    int8_t *q = NULL, *zq = NULL;
    size_t cnt = (size_t)(nr * it->cols), bad;
    qbk_encode_bad why;
    qb_status st;

    if ((st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fbuf)) != QB_OK)
        return st;
    bad = qbk_encode_check(w->plan.dt, w->fbuf, cnt, 0, &why);
    if (bad < cnt)
        return h->set_error(h, why == QBK_ENCODE_NONFINITE ? QB_E_FORMAT : QB_E_RANGE,
                            "%s: %s: element %zu of rows from %lld is %g, which cannot be "
                            "quantized in %s", w->src->source_path, it->name, bad,
                            (long long)r0, (double)w->fbuf[bad], qbk_out_dt_torch_name(w->plan.dt));
    q = qbk_malloc((size_t)it->cols);
    zq = qbk_malloc((size_t)G);
    if (!q || !zq) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path, it->name);
        goto out;
    }
    for (r = 0; r < nr; r++) {
        float *x = w->fbuf + r * it->cols;
        int64_t g;
        for (k = 0; k < it->cols; k++)
            x[k] = qbk_out_dt_round(w->plan.dt, x[k]);
        if (w->plan.i4rule >= 0) {
            memset(zq, 0, (size_t)G);
            if (ctw_int4_rule_row(w->plan.dt, w->plan.i4rule, it->sc.group_size, x, it->cols, q,
                                  scales + (r0 + r) * G, &it->err2, &it->ref2,
                                  &it->err_max) != 0) {
                st = h->set_error(h, QB_E_RANGE, "%s: %s: row %lld: no int4 scale in %s fits "
                                  "(quant_rule %s)", w->src->source_path, it->name,
                                  (long long)(r0 + r), qbk_out_dt_torch_name(w->plan.dt),
                                  qbk_int4_rule_name((qbk_int4_rule)w->plan.i4rule));
                goto out;
            }
        } else {
            ctw_rtn_row(w->plan.dt, &it->sc, w->plan.minmax, x, it->cols, q,
                        scales + (r0 + r) * G, zq, &it->err2, &it->ref2, &it->err_max);
        }
        for (k = 0; k < it->cols; k++)
            w->codes[r * it->cols + k] = (uint8_t)(q[k] + half);
        for (g = 0; g < G; g++)
            zeros[(r0 + r) * G + g] = zq[g] + half;
    }
out:
    qbk_free(q);
    qbk_free(zq);
    return st;
}

/* FP8 rows [r0, r0+nr): the source's e4m3 bytes (exact, checked against
 * its dense rows and, for tensor and block scales, against the scale row
 * the file keeps) or round to nearest, into w->codes; scales per row into
 * the tensor-wide array. */
static qb_status fp8_block(ctw_writer *w, ctw_item *it, int64_t r0, int64_t nr, float *scales)
{
    const qb_host *h = w->h;
    int64_t G = it->n_groups, r, k;
    qb_status st;

    if (it->kind == CTW_RTN) {
        size_t cnt = (size_t)(nr * it->cols), bad;
        qbk_encode_bad why;
        if ((st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fbuf)) != QB_OK)
            return st;
        bad = qbk_encode_check(w->plan.dt, w->fbuf, cnt, 0, &why);
        if (bad < cnt)
            return h->set_error(h, why == QBK_ENCODE_NONFINITE ? QB_E_FORMAT : QB_E_RANGE,
                                "%s: %s: element %zu of rows from %lld is %g, which cannot be "
                                "quantized in %s", w->src->source_path, it->name, bad,
                                (long long)r0, (double)w->fbuf[bad],
                                qbk_out_dt_torch_name(w->plan.dt));
        for (r = 0; r < nr; r++) {
            float *x = w->fbuf + r * it->cols;
            for (k = 0; k < it->cols; k++)
                x[k] = qbk_out_dt_round(w->plan.dt, x[k]);
            ctw_fp8_row(w->plan.dt, x, it->cols, w->codes + r * it->cols, scales + r0 + r,
                        &it->err2, &it->ref2, &it->err_max);
        }
        return QB_OK;
    }
    {
        qb_grid_rows gr;
        memset(&gr, 0, sizeof gr);
        gr.struct_size = sizeof gr;
        gr.codes = w->codes;
        gr.scales = scales + r0 * G;
        /* e4m3 zeros are 0; bbuf (4 bytes an element) has room for them */
        gr.zeros = (int32_t *)(void *)w->bbuf;
        if ((st = w->src->read_grid(w->src->handle, it->src, r0, nr, &gr)) != QB_OK ||
            (st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fref)) != QB_OK)
            return st;
    }
    for (r = 0; r < nr; r++) {
        const float *s = scales + (r0 + r) * G;
        /* the row of scales the file keeps for this row */
        int64_t kr = it->sc.per_tensor ? 0
                     : it->sc.block_rows ? (r0 + r) - (r0 + r) % it->sc.block_rows : r0 + r;
        const float *ks = scales + kr * G;
        const uint8_t *c = w->codes + r * it->cols;
        const float *ref = w->fref + r * it->cols;
        int64_t g;
        for (g = 0; g < G; g++) {
            if (qb_f32_bits(ks[g]) != qb_f32_bits(s[g]))
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: row %lld group %lld: scale %.9g "
                                    "differs from %.9g of row %lld, which the source declared "
                                    "shared", w->src->source_path, it->name,
                                    (long long)(r0 + r), (long long)g, (double)s[g],
                                    (double)ks[g], (long long)kr);
            if (qbk_out_dt_round(w->plan.dt, s[g]) != s[g] && !(s[g] != s[g]))
                return h->set_error(h, QB_E_INTERNAL, "%s: %s: row %lld group %lld: scale %.9g "
                                    "is not a %s value", w->src->source_path, it->name,
                                    (long long)(r0 + r), (long long)g, (double)s[g],
                                    qbk_out_dt_torch_name(w->plan.dt));
        }
        for (k = 0; k < it->cols; k++) {
            int64_t gs = it->sc.group_size > 0 ? it->sc.group_size : it->cols;
            /* the compressed-tensors reader's decode (ct_read.c) */
            float v = qbk_fp8_e4m3fn_to_f32(c[k]) * s[k / gs];
            if (qb_f32_bits(v) != qb_f32_bits(ref[k]))
                return h->set_error(h, QB_E_MISMATCH,
                                    "%s: %s: element [%lld, %lld]: the carried-over e4m3 code "
                                    "gives %.9g, the source's dense value is %.9g",
                                    w->src->source_path, it->name, (long long)(r0 + r),
                                    (long long)k, (double)v, (double)ref[k]);
        }
    }
    return QB_OK;
}

static qb_status write_fp8(ctw_writer *w, ctw_item *it)
{
    const qb_host *h = w->h;
    int64_t br = block_rows(it->rows, it->cols), r0, G = it->n_groups, r, n_keep;
    size_t es = qbk_out_dt_size(w->plan.dt), sz = (size_t)(it->rows * G);
    float *scales = qbk_malloc(sz * sizeof(float)), *keep = NULL;
    uint8_t *sb = NULL;
    qb_status st = QB_OK;

    if (!scales) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path, it->name);
        goto out;
    }
    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        if (h->cancelled(h)) {
            st = h->set_error(h, QB_E_CANCELLED, "%s: cancelled", it->name);
            goto out;
        }
        if ((st = fp8_block(w, it, r0, nr, scales)) != QB_OK ||
            (st = qbk_st_writer_write(w->cur, w->codes, (size_t)(nr * it->cols))) != QB_OK)
            goto out;
    }
    /* weight_scale as the source kept it: one value, a row each, or the
     * first row of each block of rows */
    n_keep = it->sc.per_tensor ? 1
             : it->sc.block_rows ? (it->rows + it->sc.block_rows - 1) / it->sc.block_rows
                                 : it->rows;
    keep = qbk_malloc((size_t)(n_keep * G) * sizeof(float));
    sb = qbk_malloc((size_t)(n_keep * G) * es);
    if (!keep || !sb) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path, it->name);
        goto out;
    }
    for (r = 0; r < n_keep; r++)
        memcpy(keep + r * G, scales + (it->sc.block_rows ? r * it->sc.block_rows : r) * G,
               (size_t)G * sizeof(float));
    qbk_out_dt_encode(w->plan.dt, keep, (size_t)(n_keep * G), sb);
    st = qbk_st_writer_write(w->cur, sb, (size_t)(n_keep * G) * es);
    if (st == QB_OK && it->kind == CTW_RTN)
        h->log(h, QB_LOG_INFO, "%s: fp8 RTN: relative RMS error %.3g, max abs error %.3g",
               it->name, it->ref2 > 0 ? sqrt(it->err2 / it->ref2) : 0.0, it->err_max);
out:
    qbk_free(scales);
    qbk_free(keep);
    qbk_free(sb);
    return st;
}

/* Rows [r0, r0 + nr) read and rounded to D into w->fbuf, refused when a
 * value cannot be quantized. */
static qb_status nvfp4_read(ctw_writer *w, ctw_item *it, int64_t r0, int64_t nr)
{
    size_t cnt = (size_t)(nr * it->cols), bad, k;
    qbk_encode_bad why;
    qb_status st;
    if ((st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fbuf)) != QB_OK)
        return st;
    bad = qbk_encode_check(w->plan.dt, w->fbuf, cnt, 0, &why);
    if (bad < cnt)
        return w->h->set_error(w->h, why == QBK_ENCODE_NONFINITE ? QB_E_FORMAT : QB_E_RANGE,
                               "%s: %s: element %zu of rows from %lld is %g, which cannot be "
                               "quantized in %s", w->src->source_path, it->name, bad,
                               (long long)r0, (double)w->fbuf[bad],
                               qbk_out_dt_torch_name(w->plan.dt));
    for (k = 0; k < cnt; k++)
        w->fbuf[k] = qbk_out_dt_round(w->plan.dt, w->fbuf[k]);
    return QB_OK;
}

/* NVFP4 rows [r0, r0 + nr) carried from an e2m1 grid: codes packed into
 * w->bbuf, e4m3 scale bytes into sb, every value decoded as the library
 * does (e2m1 * (e4m3 / G), ct_read.c) and compared with the source's dense
 * value: equal bit for bit when exact, measured when carried. */
static qb_status nvfp4_carry_block(ctw_writer *w, ctw_item *it, int64_t r0, int64_t nr,
                                   uint8_t *sb)
{
    const qb_host *h = w->h;
    int64_t G = it->cols / 16, r, k;
    /* fbuf (nr * cols floats) has room for the grid's nr * G scales and zeros */
    float *scales = w->fbuf;
    int32_t *zeros = (int32_t *)(void *)(w->fbuf + nr * G);
    qb_grid_rows gr;
    qb_status st;

    memset(&gr, 0, sizeof gr);
    gr.struct_size = sizeof gr;
    gr.codes = w->codes;
    gr.scales = scales;
    gr.zeros = zeros;
    if ((st = w->src->read_grid(w->src->handle, it->src, r0, nr, &gr)) != QB_OK ||
        (st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fref)) != QB_OK)
        return st;
    for (r = 0; r < nr; r++) {
        const uint8_t *c = w->codes + r * it->cols;
        const float *ref = w->fref + r * it->cols;
        uint8_t *srow = sb + (r0 + r) * G;
        int64_t g;
        for (g = 0; g < G; g++) {
            float s = scales[r * G + g];
            srow[g] = ctw_f32_to_e4m3(s);
            if (qb_f32_bits(qbk_fp8_e4m3fn_to_f32(srow[g])) != qb_f32_bits(s))
                return h->set_error(h, QB_E_INTERNAL, "%s: %s: row %lld group %lld: grid scale "
                                    "%.9g is not an e4m3 value", w->src->source_path, it->name,
                                    (long long)(r0 + r), (long long)g, (double)s);
            /* the group's decode scale, e4m3 / G rounded once (ct_read.c) */
            scales[r * G + g] = s / it->gscale;
        }
        for (k = 0; k < it->cols; k++) {
            float v = qbk_fp4_e2m1_to_f32(c[k]) * scales[r * G + k / 16];
            double e = fabs((double)v - (double)ref[k]);
            if (it->kind == CTW_EXACT && qb_f32_bits(v) != qb_f32_bits(ref[k]))
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: element [%lld, %lld]: the "
                                    "carried-over e2m1 code gives %.9g, the source's dense "
                                    "value is %.9g", w->src->source_path, it->name,
                                    (long long)(r0 + r), (long long)k, (double)v,
                                    (double)ref[k]);
            it->err2 += e * e;
            it->ref2 += (double)ref[k] * ref[k];
            if (e > it->err_max)
                it->err_max = e;
        }
        ctw_pack_e2m1_row(c, it->cols, w->bbuf + (size_t)(r * it->cols / 2));
    }
    return QB_OK;
}

/* NVFP4 round to nearest: one pass for the tensor's amax (the global
 * scale), a second for codes and group scales; or, for a carried e2m1
 * grid, one pass. */
static qb_status write_nvfp4(ctw_writer *w, ctw_item *it)
{
    const qb_host *h = w->h;
    int64_t br = block_rows(it->rows, it->cols), r0, r, G = it->cols / 16;
    uint8_t *sb = qbk_malloc((size_t)(it->rows * G) + 1);
    float amax = 0.0f, gs;
    qb_status st = QB_OK;
    size_t k;

    if (!sb)
        return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path,
                            it->name);
    for (r0 = 0; it->kind == CTW_RTN && r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        if ((st = nvfp4_read(w, it, r0, nr)) != QB_OK)
            goto out;
        for (k = 0; k < (size_t)(nr * it->cols); k++)
            amax = fabsf(w->fbuf[k]) > amax ? fabsf(w->fbuf[k]) : amax;
    }
    gs = it->kind == CTW_RTN ? ctw_nvfp4_global(w->plan.dt, amax) : it->gscale;
    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        if (h->cancelled(h)) {
            st = h->set_error(h, QB_E_CANCELLED, "%s: cancelled", it->name);
            goto out;
        }
        if (it->kind != CTW_RTN) {
            if ((st = nvfp4_carry_block(w, it, r0, nr, sb)) != QB_OK)
                goto out;
        } else if ((st = nvfp4_read(w, it, r0, nr)) != QB_OK) {
            goto out;
        }
        for (r = 0; it->kind == CTW_RTN && r < nr; r++) {
            ctw_nvfp4_row(w->plan.dt, gs, w->fbuf + r * it->cols, it->cols, w->codes,
                          sb + (r0 + r) * G, &it->err2, &it->ref2, &it->err_max);
            ctw_pack_e2m1_row(w->codes, it->cols, w->bbuf + (size_t)(r * it->cols / 2));
        }
        if ((st = qbk_st_writer_write(w->cur, w->bbuf, (size_t)(nr * it->cols / 2))) != QB_OK)
            goto out;
    }
    if ((st = qbk_st_writer_write(w->cur, sb, (size_t)(it->rows * G))) != QB_OK)
        goto out;
    {
        uint32_t b = qb_f32_bits(gs);
        uint8_t wb[4] = {(uint8_t)b, (uint8_t)(b >> 8), (uint8_t)(b >> 16), (uint8_t)(b >> 24)};
        st = qbk_st_writer_write(w->cur, wb, 4);
    }
    if (st == QB_OK && it->kind != CTW_EXACT)
        h->log(h, QB_LOG_INFO, "%s: nvfp4 %s (global scale %.9g): relative RMS error %.3g, "
               "max abs error %.3g", it->name, it->kind == CTW_RTN ? "RTN" : "carried", (double)gs,
               it->ref2 > 0 ? sqrt(it->err2 / it->ref2) : 0.0, it->err_max);
out:
    qbk_free(sb);
    return st;
}

static qb_status write_quant(ctw_writer *w, ctw_item *it)
{
    const qb_host *h = w->h;
    int64_t br = block_rows(it->rows, it->cols), r0, r, G = it->n_groups;
    int64_t pf = 32 / it->sc.bits, wpr = (it->cols + pf - 1) / pf;
    size_t es = qbk_out_dt_size(w->plan.dt), sz = (size_t)(it->rows * G);
    float *scales = qbk_malloc(sz * sizeof(float));
    int32_t *zeros = qbk_malloc(sz * sizeof(int32_t));
    uint8_t *sb = NULL;
    qb_status st = QB_OK;

    if (!scales || !zeros) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path, it->name);
        goto out;
    }
    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        if (h->cancelled(h)) {
            st = h->set_error(h, QB_E_CANCELLED, "%s: cancelled", it->name);
            goto out;
        }
        st = it->kind == CTW_EXACT ? exact_block(w, it, r0, nr, scales, zeros)
                                   : rtn_block(w, it, r0, nr, scales, zeros);
        if (st != QB_OK)
            goto out;
        for (r = 0; r < nr; r++)
            qbk_pack32_row(it->sc.bits, w->codes + r * it->cols, it->cols,
                         w->bbuf + (size_t)(r * wpr) * 4);
        if ((st = qbk_st_writer_write(w->cur, w->bbuf, (size_t)(nr * wpr) * 4)) != QB_OK)
            goto out;
    }
    /* weight_scale in D */
    sb = qbk_malloc(sz * es > 8 ? sz * es : 8);
    if (!sb) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path, it->name);
        goto out;
    }
    qbk_out_dt_encode(w->plan.dt, scales, sz, sb);
    if ((st = qbk_st_writer_write(w->cur, sb, sz * es)) != QB_OK)
        goto out;
    if (!it->sc.symmetric) {
        /* pack_to_int32(zero_point, packed_dim=0): rows r..r+pf-1 in one word */
        int64_t nw = (it->rows + pf - 1) / pf, g, j;
        uint8_t wb[4];
        for (r = 0; r < nw; r++)
            for (g = 0; g < G; g++) {
                uint32_t v = 0;
                for (j = 0; j < pf && r * pf + j < it->rows; j++)
                    v |= (uint32_t)zeros[(r * pf + j) * G + g] << (it->sc.bits * j);
                wb[0] = (uint8_t)v;
                wb[1] = (uint8_t)(v >> 8);
                wb[2] = (uint8_t)(v >> 16);
                wb[3] = (uint8_t)(v >> 24);
                if ((st = qbk_st_writer_write(w->cur, wb, 4)) != QB_OK)
                    goto out;
            }
    }
    if (it->sc.act_group) {
        int64_t k;
        for (k = 0; k < it->cols; k++) {
            uint32_t v = (uint32_t)it->col_group[k];
            uint8_t wb[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                             (uint8_t)(v >> 24)};
            if ((st = qbk_st_writer_write(w->cur, wb, 4)) != QB_OK)
                goto out;
        }
    }
    {
        uint8_t shp[16];
        uint64_t d[2] = {(uint64_t)it->rows, (uint64_t)it->cols};
        int i, j;
        for (i = 0; i < 2; i++)
            for (j = 0; j < 8; j++)
                shp[i * 8 + j] = (uint8_t)(d[i] >> (8 * j));
        st = qbk_st_writer_write(w->cur, shp, sizeof shp);
    }
    if (st == QB_OK && it->kind == CTW_RTN)
        h->log(h, QB_LOG_INFO, "%s: int%d RTN: relative RMS error %.3g, max abs error %.3g",
               it->name, it->sc.bits, it->ref2 > 0 ? sqrt(it->err2 / it->ref2) : 0.0,
               it->err_max);
out:
    qbk_free(scales);
    qbk_free(zeros);
    qbk_free(sb);
    return st;
}

static qb_status ctw_write_tensor(qb_writer_handle handle, size_t index)
{
    ctw_writer *w = handle;
    ctw_plan *p = &w->plan;
    ctw_item *it;
    qb_status st;

    if (w->next >= p->n || p->it[w->next].src != index)
        return w->h->set_error(w->h, QB_E_INTERNAL,
                               "compressed-tensors writer: tensor %zu written out of order", index);
    it = &p->it[w->next++];
    if (!w->cur) {
        char name[64];
        size_t first = p->sh.first[it->shard], last = p->sh.first[it->shard + 1];
        if (it->shard != w->next_shard || &p->it[first] != it)
            return w->h->set_error(w->h, QB_E_INTERNAL,
                                   "compressed-tensors writer: shard %u out of order", it->shard);
        qbk_shards_name(&p->sh, it->shard, name, sizeof name);
        if ((st = qbk_st_writer_open(w->h, w->sink, name, p->out + p->it[first].out0,
                                     p->it[last - 1].out0 + p->it[last - 1].n_out -
                                         p->it[first].out0,
                                     &w->cur)) != QB_OK)
            return st;
        w->next_shard++;
    }
    st = it->kind == CTW_DENSE ? write_dense(w, it)
         : it->sc.nvfp4        ? write_nvfp4(w, it)
         : it->sc.fp8          ? write_fp8(w, it)
                               : write_quant(w, it);
    if (st != QB_OK)
        return st;
    if (w->next == p->sh.first[it->shard + 1]) {
        st = qbk_st_writer_close(w->cur, NULL, NULL);
        w->cur = NULL;
    }
    return st;
}

/* model.safetensors.index.json as save_pretrained writes it for a sharded
 * checkpoint: metadata total_size (the tensors' bytes, headers not
 * counted), indent 2, a final newline (docs/formats/hf-dense.md,
 * "Sharding"). */
static qb_status write_index(ctw_writer *w)
{
    const ctw_plan *p = &w->plan;
    static const char *const keys[] = {"total_size"};
    const char **names = qbk_malloc(p->n_out * sizeof *names);
    uint32_t *of = qbk_malloc(p->n_out * sizeof *of);
    qbk_shard_index ix = {keys, &p->sh.total, 1, 2, 1};
    size_t i, k;
    qb_status st;

    if (!names || !of) {
        qbk_free(names);
        qbk_free(of);
        return w->h->set_error(w->h, QB_E_NOMEM, "model.safetensors.index.json: out of memory");
    }
    for (i = 0; i < p->n; i++)
        for (k = 0; k < p->it[i].n_out; k++) {
            names[p->it[i].out0 + k] = p->out_names[p->it[i].out0 + k];
            of[p->it[i].out0 + k] = p->it[i].shard;
        }
    st = qbk_shards_write_index(w->h, w->sink, &p->sh, names, of, p->n_out, &ix);
    qbk_free(names);
    qbk_free(of);
    return st;
}

/* quantbridge-report.json: per source tensor what it became and the error
 * measured while writing (requantized tensors; dense ones are not measured:
 * null), since compressed-tensors has no place for it. */
static qb_status write_report(ctw_writer *w)
{
    qbk_tensor_report r;
    size_t i;
    qbk_report_begin(&r, "compressed-tensors", w->src->source_path);
    for (i = 0; i < w->plan.n; i++) {
        const ctw_item *it = &w->plan.it[i];
        if (it->kind == CTW_EXACT)
            qbk_report_add(&r, it->name, "exact", it->reason, 0.0, 0.0, 0.0);
        else if (it->kind == CTW_RTN || it->kind == CTW_CARRY)
            qbk_report_add(&r, it->name, "quantized", it->reason, it->err2, it->ref2, it->err_max);
        else
            qbk_report_add(&r, it->name, "dense", it->reason, NAN, 1.0, NAN);
    }
    return qbk_report_write(&r, w->h, w->sink, "quantbridge-report.json");
}

static qb_status ctw_finish(qb_writer_handle handle)
{
    ctw_writer *w = handle;
    const qb_host *h = w->h;
    const char *keys[4], *values[4], *drop[8];
    char dtype[32], *cfg = NULL;
    size_t i, n;
    qb_status st = QB_OK;

    if (w->next != w->plan.n || w->cur) {
        st = h->set_error(h, QB_E_INTERNAL, "compressed-tensors writer: finish after %zu of %zu "
                          "tensors", w->next, w->plan.n);
        goto out;
    }
    snprintf(dtype, sizeof dtype, "\"%s\"", qbk_out_dt_torch_name(w->plan.dt));
    keys[0] = "torch_dtype";
    values[0] = dtype;
    /* transformers >= 4.56 reads `dtype`, older ones torch_dtype */
    keys[1] = "dtype";
    values[1] = dtype;
    keys[2] = "quantization_config";
    values[2] = w->qcfg;
    keys[3] = values[3] = NULL;
    /* the source's own quantization description goes (qbk_hf_sidefiles.h);
     * ours replaces quantization_config in place */
    for (i = 0, n = 0; qbk_hf_quant_config_keys[i] && n + 1 < sizeof drop / sizeof drop[0]; i++)
        if (strcmp(qbk_hf_quant_config_keys[i], "quantization_config") != 0)
            drop[n++] = qbk_hf_quant_config_keys[i];
    drop[n] = NULL;
    if ((st = qbk_json_edit(h, w->src->source_path, w->src->info->config_json, drop, keys,
                            values, &cfg)) != QB_OK)
        goto out;
    if ((st = qbk_sink_write_text(w->sink, "config.json", cfg)) != QB_OK)
        goto out;
    if ((st = qbk_hf_write_tokenizer_files(h, w->sink, w->src->info)) != QB_OK)
        goto out;
    if (w->plan.sh.n > 1 && (st = write_index(w)) != QB_OK)
        goto out;
    st = write_report(w);
out:
    qbk_free(cfg);
    ctw_free(w);
    return st;
}

static void ctw_abort(qb_writer_handle handle)
{
    ctw_free(handle);
}

const qb_writer_vtable ct_writer_vtable = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = ctw_supports,
    .begin = ctw_begin,
    .write_tensor = ctw_write_tensor,
    .finish = ctw_finish,
    .abort = ctw_abort,
    .plan = ctw_plan_vt,
};
