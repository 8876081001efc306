/*
 * mlx writer: any model the host reads, written in the layout mlx-lm loads
 * (mlx.h; docs/formats/mlx.md, "Writing"): config.json with `quantization`
 * (and the same object as quantization_config, as mlx_lm.convert writes
 * it), model.safetensors or shards of at most max_shard_size cut as
 * mlx-lm's save_model cuts them, with model.safetensors.index.json either
 * way (docs/formats/mlx.md, "Shards"), the tokenizer files and
 * generation_config.json.
 *
 * A linear (2-D <m>.weight other than the embeddings and lm_head) whose
 * reader serves an integer grid keeps its codes when MLX holds the grid:
 * b <= 8 bits as 2, 4 or 8 (codes and zeros shifted by 2^(B-1) - 2^(b-1)),
 * contiguous groups of 32, 64 or 128, the scales in the scale dtype S, and
 * bias = -z * scale. The bias is exact when z is 2^(B-1) (a power of two
 * times the scale) or S is float32 and the grid's scales are f16/bf16
 * (then z * scale needs at most 19 significant bits); otherwise the codes
 * are kept and the bias is rounded to S (plan: requant, the error measured
 * by verify). Every other linear is quantized anew, symmetric absmax
 * (scale = amax / (2^(B-1) - 1), bias = -2^(B-1) * scale).
 *
 * Streaming: the codes go out in row blocks; a linear's scales and biases
 * (N x G) are kept until its last block, since they follow in the file.
 * Shards are cut between output tensors, so a linear's weight, scales and
 * biases may sit in different files, as save_model puts them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "mlx.h"
#include "qbk_alloc.h"
#include "qbk_encode_check.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_json.h"
#include "qbk_json_edit.h"
#include "qbk_out_dtype.h"
#include "qbk_shards.h"
#include "qbk_pack32.h"
#include "qbk_sink_text.h"
#include "qbk_tensor_report.h"
#include "qbk_st_writer.h"
#include "qbk_text.h"

#define MLXW_BLOCK_ELEMS ((int64_t)1 << 20)

static const qb_option_decl opt_dtype = {
    .struct_size = sizeof(qb_option_decl), .name = "dtype", .type = QB_PARAM_STRING,
    .default_value = "auto",
    .help = "mlx writer: model dtype (dense tensors, and scales/biases unless scale_dtype=f32); "
            "auto: the source grids' scale dtype",
    .choices = "auto|f16|bf16|f32", .min_int = 1, .max_int = 0, .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_scale_dtype = {
    .struct_size = sizeof(qb_option_decl), .name = "scale_dtype", .type = QB_PARAM_STRING,
    .default_value = "auto",
    .help = "mlx writer: dtype of scales and biases: model (the model dtype), f32 (keeps the "
            "biases of asymmetric sources exact), auto (f32 when a source grid is asymmetric, "
            "else the model dtype)",
    .choices = "auto|model|f32", .min_int = 1, .max_int = 0, .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_bits = {
    .struct_size = sizeof(qb_option_decl), .name = "bits", .type = QB_PARAM_INT,
    .default_value = "4",
    .help = "mlx writer: bits of linears quantized anew (4 or 8)", .choices = NULL,
    .min_int = 4, .max_int = 8, .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl opt_group = {
    .struct_size = sizeof(qb_option_decl), .name = "group_size", .type = QB_PARAM_INT,
    .default_value = "64",
    .help = "mlx writer: columns per scale of linears quantized anew (32, 64 or 128); exact "
            "linears keep the source's", .choices = NULL,
    .min_int = 32, .max_int = 128, .roles = QB_OPTION_ROLE_WRITER,
};

/* mlx-lm's MAX_FILE_SIZE_GB = 5, in units of 2^30 bytes (make_shards) */
#define MLXW_MAX_SHARD ((uint64_t)5 << 30)
static const qb_option_decl opt_max_shard = {
    .struct_size = sizeof(qb_option_decl), .name = "max_shard_size", .type = QB_PARAM_SIZE,
    .default_value = "5GiB",
    .help = "mlx writer: largest safetensors file before the weights are split into shards "
            "(mlx-lm's save_model: 5 GiB)", .choices = NULL,
    .min_int = 1, .max_int = INT64_MAX, .roles = QB_OPTION_ROLE_WRITER,
};

const qb_option_decl *const mlx_option_decls[] = {&opt_dtype, &opt_scale_dtype, &opt_bits,
                                                  &opt_group, &opt_max_shard, NULL};

typedef enum { MW_DENSE, MW_EXACT, MW_BIAS_ROUND, MW_RTN } mw_kind;

typedef struct mw_item {
    size_t src;
    const char *name;
    mw_kind kind;
    int bits, shift;
    int64_t rows, cols, gs, G;
    size_t out0, n_out;
    char reason[240];
    /* filled while writing (RTN, BIAS_ROUND): squared errors of MLX's
     * decode against the reader's floats, squared source values, largest
     * absolute error */
    double err2, ref2, err_max;
} mw_item;

typedef struct mw_plan {
    qb_dtype dt, sdt;     /* model dtype, scale dtype */
    char dt_reason[160];
    int bits;             /* requant */
    int64_t gs;
    mw_item *it;
    size_t n;
    qbk_st_out_tensor *out;
    char **names;
    size_t n_out;
    qbk_shards sh;        /* output tensor ranges of the shard files */
    uint64_t n_params;    /* index metadata total_parameters */
} mw_plan;

typedef struct mw_writer {
    const qb_host *h;
    const qb_sink *sink;
    const qb_model_src *src;
    mw_plan p;
    size_t next;
    qbk_st_writer *cur;   /* open shard */
    uint32_t shard;       /* the open (or next) shard */
    float *fbuf, *fref;
    uint8_t *bbuf, *codes;
} mw_writer;

static int is_linear(const qb_tensor_info *ti)
{
    size_t n = strlen(ti->name);
    return ti->n_dims == 2 && n > 7 && strcmp(ti->name + n - 7, ".weight") == 0 &&
           !strstr(ti->name, "embed") && strcmp(ti->name, "lm_head.weight") != 0;
}

static void mw_plan_free(mw_plan *p)
{
    size_t i;
    for (i = 0; p->names && i < p->n_out; i++)
        qbk_free(p->names[i]);
    qbk_free(p->names);
    qbk_free(p->out);
    qbk_free(p->it);
    qbk_shards_free(&p->sh);
    memset(p, 0, sizeof *p);
}

static qb_status add_out(const qb_host *h, mw_plan *p, const char *base, const char *suffix,
                         const char *dtype, uint32_t nd, const int64_t *dims, size_t es)
{
    qbk_st_out_tensor *t = &p->out[p->n_out];
    size_t len = strlen(base) + strlen(suffix) + 1;
    uint64_t e = 1;
    uint32_t d;
    char *nm = qbk_malloc(len);
    if (!nm)
        return h->set_error(h, QB_E_NOMEM, "mlx writer: out of memory");
    snprintf(nm, len, "%s%s", base, suffix);
    memset(t, 0, sizeof *t);
    p->names[p->n_out] = nm;
    t->name = nm;
    t->dtype = dtype;
    t->n_dims = nd;
    for (d = 0; d < nd; d++) {
        t->dims[d] = dims[d];
        e *= (uint64_t)dims[d];
    }
    t->n_bytes = e * es;
    p->n_out++;
    return QB_OK;
}

/* The grid decision (file comment). 1: carried over (kind EXACT or
 * BIAS_ROUND), 0: not (reason written). */
static int grid_fits(const qb_grid_info *gi, const mw_plan *p, mw_item *it)
{
    int64_t gs = gi->group_size, c;
    int B;
    if (gi->bits < 1 || gi->bits > 8) {
        snprintf(it->reason, sizeof it->reason, "%u-bit grid", gi->bits);
        return 0;
    }
    if (gi->col_group) {
        for (gs = 0; gs < it->cols && gi->col_group[gs] == 0; gs++)
            ;
        for (c = 0; gs > 0 && c < it->cols; c++)
            if (gi->col_group[c] != (int32_t)(c / gs))
                gs = 0;
        if (gs < 1) {
            snprintf(it->reason, sizeof it->reason,
                     "act-order group map (MLX groups are contiguous)");
            return 0;
        }
    }
    if ((gs != 32 && gs != 64 && gs != 128) || it->cols % gs != 0 ||
        (int64_t)gi->n_groups != it->cols / gs) {
        snprintf(it->reason, sizeof it->reason, "grid of %u groups of %lld columns (MLX takes "
                 "groups of 32, 64 or 128)", gi->n_groups, (long long)gs);
        return 0;
    }
    if (!qbk_out_dt_holds(p->sdt, gi->scale_dtype)) {
        snprintf(it->reason, sizeof it->reason, "grid scales in %s would round in %s",
                 qbk_out_dt_torch_name(gi->scale_dtype), qbk_out_dt_torch_name(p->sdt));
        return 0;
    }
    B = gi->bits <= 2 ? 2 : gi->bits <= 4 ? 4 : 8;
    it->bits = B;
    it->shift = (1 << (B - 1)) - (1 << (gi->bits - 1));
    it->gs = gs;
    it->G = it->cols / gs;
    if (gi->symmetric || (p->sdt == QB_DT_F32 && gi->scale_dtype != QB_DT_F32)) {
        it->kind = MW_EXACT;
        snprintf(it->reason, sizeof it->reason, "codes carried over (%u-bit %s grid as %d-bit "
                 "g%lld, bias = -zero * scale exact in %s)", gi->bits,
                 gi->symmetric ? "symmetric" : "asymmetric", B, (long long)gs,
                 qbk_out_dt_torch_name(p->sdt));
    } else {
        it->kind = MW_BIAS_ROUND;
        snprintf(it->reason, sizeof it->reason, "codes carried over, bias -zero * scale rounded "
                 "to %s (--option scale_dtype=f32 keeps it exact)", qbk_out_dt_torch_name(p->sdt));
    }
    return 1;
}

static qb_status mw_plan_build(const qb_host *h, const qb_model_src *src, const qb_param *params,
                               mw_plan *p)
{
    const qb_param *pd = qb_param_find(params, "dtype");
    const qb_param *ps = qb_param_find(params, "scale_dtype");
    const qb_param *pb = qb_param_find(params, "bits");
    const qb_param *pg = qb_param_find(params, "group_size");
    const qb_param *pm = qb_param_find(params, "max_shard_size");
    const char *dts = pd && pd->is_set ? pd->v.s : "auto";
    size_t n = src->info->n_tensors, i;
    size_t n16 = 0, nb16 = 0, n32 = 0, n_asym = 0;
    uint64_t *sizes = NULL;
    qb_status st = QB_OK;

    memset(p, 0, sizeof *p);
    p->bits = pb && pb->is_set ? (int)pb->v.i : 4;
    p->gs = pg && pg->is_set ? pg->v.i : 64;
    if ((p->bits != 4 && p->bits != 8) || (p->gs != 32 && p->gs != 64 && p->gs != 128))
        return h->set_error(h, QB_E_INVALID, "mlx writer: bits %d, group_size %lld: MLX affine "
                            "takes bits 4 or 8 and groups of 32, 64 or 128", p->bits,
                            (long long)p->gs);
    if (pm && pm->is_set && pm->v.i < 1)
        return h->set_error(h, QB_E_INVALID, "max_shard_size %lld: must be at least 1 byte",
                            (long long)pm->v.i);
    p->it = qbk_calloc(n ? n : 1, sizeof *p->it);
    p->out = qbk_calloc(3 * (n ? n : 1), sizeof *p->out);
    p->names = qbk_calloc(3 * (n ? n : 1), sizeof *p->names);
    if (!p->it || !p->out || !p->names) {
        mw_plan_free(p);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    }
    p->n = n;
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti;
        qb_grid_info gi;
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            goto out;
        if (!ti->has_grid || !is_linear(ti))
            continue;
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
        if (src->get_grid_info(src->handle, i, &gi) != QB_OK)
            continue;
        n16 += gi.scale_dtype == QB_DT_F16;
        nb16 += gi.scale_dtype == QB_DT_BF16;
        n32 += gi.scale_dtype == QB_DT_F32;
        n_asym += !gi.symmetric;
    }
    if (strcmp(dts, "auto") != 0) {
        p->dt = !strcmp(dts, "f32") ? QB_DT_F32 : !strcmp(dts, "bf16") ? QB_DT_BF16 : QB_DT_F16;
        snprintf(p->dt_reason, sizeof p->dt_reason, "explicit: dtype=%s", dts);
    } else if (n16 + nb16 + n32 == 0) {
        p->dt = qbk_out_dt_of_config(h, src->source_path, src->info->config_json);
        snprintf(p->dt_reason, sizeof p->dt_reason, "auto: no grid; the source config's %s",
                 qbk_out_dt_torch_name(p->dt));
    } else {
        p->dt = (n32 || (n16 && nb16)) ? QB_DT_F32 : n16 ? QB_DT_F16 : QB_DT_BF16;
        snprintf(p->dt_reason, sizeof p->dt_reason, "auto: the grids' scale dtype %s",
                 qbk_out_dt_torch_name(p->dt));
    }
    if (ps && ps->is_set && !strcmp(ps->v.s, "f32"))
        p->sdt = QB_DT_F32;
    else if (ps && ps->is_set && !strcmp(ps->v.s, "model"))
        p->sdt = p->dt;
    else
        p->sdt = n_asym ? QB_DT_F32 : p->dt;
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti;
        mw_item *it = &p->it[i];
        char base[520];
        size_t nl;
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            goto out;
        it->src = i;
        it->name = ti->name;
        it->rows = qb_tensor_rows(ti);
        it->cols = qb_tensor_cols(ti);
        it->kind = MW_DENSE;
        it->out0 = p->n_out;
        nl = strlen(ti->name);
        snprintf(it->reason, sizeof it->reason, "%s: kept dense in %s", ti->source_encoding,
                 qbk_out_dt_torch_name(p->dt));
        if (is_linear(ti)) {
            int fit = 0;
            if (ti->has_grid) {
                qb_grid_info gi;
                memset(&gi, 0, sizeof gi);
                gi.struct_size = sizeof gi;
                if (src->get_grid_info(src->handle, i, &gi) == QB_OK)
                    fit = grid_fits(&gi, p, it);
            } else {
                snprintf(it->reason, sizeof it->reason, "dense %s", ti->source_encoding);
            }
            if (!fit && it->cols % p->gs == 0) {
                char why[240];
                snprintf(why, sizeof why, "%s", it->reason);
                it->kind = MW_RTN;
                it->bits = p->bits;
                it->gs = p->gs;
                it->G = it->cols / p->gs;
                it->shift = 0;
                snprintf(it->reason, sizeof it->reason, "%.160s: quantized to %d-bit g%lld "
                         "(symmetric absmax)", why, p->bits, (long long)p->gs);
            }
        }
        /* total_parameters as mlx-lm's get_total_parameters counts them: a
         * quantized module's weight as weight.size * 32 / bits (N x K), its
         * scales and biases not at all, every other tensor by its size */
        if (it->kind == MW_DENSE) {
            uint64_t e = 1;
            uint32_t d;
            for (d = 0; d < ti->n_dims; d++)
                e *= (uint64_t)ti->dims[d];
            p->n_params += e;
        } else {
            p->n_params += (uint64_t)it->rows * (uint64_t)it->cols;
        }
        if (it->kind == MW_DENSE) {
            if ((st = add_out(h, p, ti->name, "", qbk_out_dt_st_name(p->dt), ti->n_dims, ti->dims,
                              qbk_out_dt_size(p->dt))) != QB_OK)
                goto out;
        } else {
            int64_t wd[2] = {it->rows, it->cols * it->bits / 32};
            int64_t sd[2] = {it->rows, it->G};
            snprintf(base, sizeof base, "%.*s", (int)(nl - 7), ti->name);
            if ((st = add_out(h, p, base, ".weight", "U32", 2, wd, 4)) != QB_OK ||
                (st = add_out(h, p, base, ".scales", qbk_out_dt_st_name(p->sdt), 2, sd,
                              qbk_out_dt_size(p->sdt))) !=
                    QB_OK ||
                (st = add_out(h, p, base, ".biases", qbk_out_dt_st_name(p->sdt), 2, sd,
                              qbk_out_dt_size(p->sdt))) !=
                    QB_OK)
                goto out;
        }
        it->n_out = p->n_out - it->out0;
    }
    /* shards cut tensor by tensor as mlx-lm's make_shards does */
    sizes = qbk_malloc((p->n_out ? p->n_out : 1) * sizeof *sizes);
    if (!sizes) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    for (i = 0; i < p->n_out; i++)
        sizes[i] = p->out[i].n_bytes;
    if (p->n_out > 0)
        st = qbk_shards_cut(h, "mlx writer", sizes, p->n_out,
                            pm && pm->is_set ? (uint64_t)pm->v.i : MLXW_MAX_SHARD,
                            QBK_SHARD_CUT_IF_TENSORS, &p->sh);
out:
    qbk_free(sizes);
    if (st != QB_OK)
        mw_plan_free(p);
    return st;
}

/* config.json's `quantization`: the most common (group_size, bits) as the
 * default, every other quantized module by its path. */
static qb_status quant_json(const qb_host *h, const mw_plan *p, char **out)
{
    qbk_text b = {0};
    size_t i, k, best = 0, cnt_best = 0;
    char num[96];
    for (i = 0; i < p->n; i++) {
        size_t c = 0;
        if (p->it[i].kind == MW_DENSE)
            continue;
        for (k = 0; k < p->n; k++)
            c += p->it[k].kind != MW_DENSE && p->it[k].bits == p->it[i].bits &&
                 p->it[k].gs == p->it[i].gs;
        if (c > cnt_best) {
            cnt_best = c;
            best = i;
        }
    }
    snprintf(num, sizeof num, "{\"group_size\": %lld, \"bits\": %d, \"mode\": \"affine\"",
             (long long)p->it[best].gs, p->it[best].bits);
    qbk_text_str(&b, num);
    for (i = 0; i < p->n; i++) {
        const mw_item *it = &p->it[i];
        char mod[520];
        if (it->kind == MW_DENSE || (it->bits == p->it[best].bits && it->gs == p->it[best].gs))
            continue;
        snprintf(mod, sizeof mod, "%.*s", (int)(strlen(it->name) - 7), it->name);
        qbk_text_str(&b, ", ");
        qbk_text_json_str(&b, mod);
        snprintf(num, sizeof num, ": {\"group_size\": %lld, \"bits\": %d, \"mode\": \"affine\"}",
                 (long long)it->gs, it->bits);
        qbk_text_str(&b, num);
    }
    qbk_text_str(&b, "}");
    if (b.oom) {
        qbk_text_free(&b);
        return h->set_error(h, QB_E_NOMEM, "config.json: out of memory");
    }
    *out = b.p;
    return QB_OK;
}

static int mw_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    if (!mi || !mi->config_json) {
        mlx_host->set_error(mlx_host, QB_E_UNSUPPORTED, "mlx writes a Hugging Face config.json, "
                            "and the source reader gives no model config");
        return 0;
    }
    return 50;
}

static void mw_free(mw_writer *w)
{
    if (!w)
        return;
    qbk_st_writer_discard(w->cur);
    mw_plan_free(&w->p);
    qbk_free(w->fbuf);
    qbk_free(w->fref);
    qbk_free(w->bbuf);
    qbk_free(w->codes);
    qbk_free(w);
}

static int64_t block_rows(int64_t cols)
{
    int64_t br = MLXW_BLOCK_ELEMS / cols;
    return br < 1 ? 1 : br;
}

static qb_status mw_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                          const qb_param *params, size_t *order, qb_writer_handle *out)
{
    const qb_host *h = mlx_host;
    mw_writer *w;
    size_t i, block = 1, nq = 0;
    qb_status st;

    (void)ctx;
    *out = NULL;
    if (!src->info->config_json)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: no model config", src->source_path);
    w = qbk_calloc(1, sizeof *w);
    if (!w)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    w->h = h;
    w->sink = sink;
    w->src = src;
    if ((st = mw_plan_build(h, src, params, &w->p)) != QB_OK)
        goto out;
    for (i = 0; i < w->p.n; i++) {
        size_t b = (size_t)(block_rows(w->p.it[i].cols) * w->p.it[i].cols);
        block = b > block ? b : block;
        nq += w->p.it[i].kind != MW_DENSE;
        order[i] = i;
    }
    if (nq == 0) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s: no linear to quantize", src->source_path);
        goto out;
    }
    w->fbuf = qbk_malloc(block * sizeof(float));
    w->fref = qbk_malloc(block * sizeof(float));
    w->bbuf = qbk_malloc(block * 4);
    w->codes = qbk_malloc(block);
    if (!w->fbuf || !w->fref || !w->bbuf || !w->codes)
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
out:
    if (st != QB_OK) {
        mw_free(w);
        return st;
    }
    *out = w;
    return QB_OK;
}

static qb_status mw_plan_vt(void *ctx, const qb_model_src *src, const qb_param *params,
                            const qb_plan_sink *out)
{
    mw_plan p;
    size_t i, k;
    qb_status st;
    (void)ctx;
    if ((st = mw_plan_build(mlx_host, src, params, &p)) != QB_OK)
        return st;
    st = out->setting(out->handle, "dtype", qbk_out_dt_torch_name(p.dt), p.dt_reason);
    for (i = 0; st == QB_OK && i < p.n; i++) {
        const mw_item *it = &p.it[i];
        const qb_tensor_info *ti;
        qb_plan_entry e;
        memset(&e, 0, sizeof e);
        e.struct_size = sizeof e;
        if ((st = src->tensor_info(src->handle, it->src, &ti)) != QB_OK)
            break;
        e.tensor = it->src;
        e.reason = it->reason;
        e.target = ti->name;
        for (k = 0; k < it->n_out; k++)
            e.bytes_out += p.out[it->out0 + k].n_bytes;
        e.action = it->kind == MW_EXACT ? QB_PLAN_EXACT
                   : it->kind == MW_DENSE ? (ti->source_dtype == p.dt && !ti->has_grid
                                                 ? QB_PLAN_COPY : QB_PLAN_CONVERT)
                                          : QB_PLAN_REQUANT;
        e.group_size = it->kind == MW_DENSE ? 0 : it->gs;
        st = out->tensor(out->handle, &e);
    }
    mw_plan_free(&p);
    return st;
}

/* Makes the shard that holds output tensor o the open one: closes the
 * previous shard when o is the first of the next. Tensors come in file
 * order. */
static qb_status mw_enter(mw_writer *w, size_t o)
{
    const qbk_shards *s = &w->p.sh;
    char name[64];
    qb_status st;
    if (w->cur && o < s->first[w->shard + 1])
        return QB_OK;
    if (w->cur) {
        st = qbk_st_writer_close(w->cur, NULL, NULL);
        w->cur = NULL;
        if (st != QB_OK)
            return st;
        w->shard++;
    }
    if (w->shard >= s->n || o != s->first[w->shard])
        return w->h->set_error(w->h, QB_E_INTERNAL, "mlx writer: output tensor %zu out of "
                               "shard order", o);
    qbk_shards_name(s, w->shard, name, sizeof name);
    return qbk_st_writer_open(w->h, w->sink, name, w->p.out + o,
                              s->first[w->shard + 1] - o, &w->cur);
}

static qb_status write_dense(mw_writer *w, const mw_item *it)
{
    int64_t br = block_rows(it->cols), r0;
    qb_status st0;
    if ((st0 = mw_enter(w, it->out0)) != QB_OK)
        return st0;
    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        size_t cnt = (size_t)(nr * it->cols), bad;
        qbk_encode_bad why;
        qb_status st;
        if ((st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fbuf)) != QB_OK)
            return st;
        bad = qbk_encode_check(w->p.dt, w->fbuf, cnt, 0, &why);
        if (bad < cnt)
            return w->h->set_error(w->h, QB_E_RANGE, "%s: %s: value %g at flat %zu of rows from "
                                   "%lld is not finite in %s", w->src->source_path, it->name,
                                   (double)w->fbuf[bad], bad, (long long)r0,
                                   qbk_out_dt_torch_name(w->p.dt));
        qbk_out_dt_encode(w->p.dt, w->fbuf, cnt, w->bbuf);
        if ((st = qbk_st_writer_write(w->cur, w->bbuf, cnt * qbk_out_dt_size(w->p.dt))) != QB_OK)
            return st;
    }
    return QB_OK;
}

/* Rows [r0, r0+nr) of a quantized item: unsigned codes into w->codes,
 * scales and biases (already in S) into the tensor-wide arrays. */
static void account(mw_item *it, float decoded, float source)
{
    double e = (double)decoded - (double)source;
    it->err2 += e * e;
    it->ref2 += (double)source * source;
    if (fabs(e) > it->err_max)
        it->err_max = fabs(e);
}

static qb_status quant_block(mw_writer *w, mw_item *it, int64_t r0, int64_t nr, float *sc,
                             float *bi, int32_t *zb)
{
    const qb_host *h = w->h;
    int64_t G = it->G, r, g, k, half = 1 << (it->bits - 1);
    qb_status st;

    if (it->kind == MW_RTN) {
        if ((st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fbuf)) != QB_OK)
            return st;
        for (r = 0; r < nr; r++)
            for (g = 0; g < G; g++) {
                const float *x = w->fbuf + r * it->cols + g * it->gs;
                float amax = 0.0f, s;
                for (k = 0; k < it->gs; k++)
                    amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
                if (!isfinite(amax))
                    return h->set_error(h, QB_E_FORMAT, "%s: %s: row %lld holds a value that is "
                                        "not finite", w->src->source_path, it->name,
                                        (long long)(r0 + r));
                s = qbk_out_dt_round(w->p.sdt, amax / (float)(half - 1));
                if (w->p.sdt == QB_DT_F32) {
                    /* 16 significant bits: scale * q (q < 2^8) stays exact in
                     * float32, so MLX's scale * q + bias is (q - z) * scale
                     * and the output keeps an integer grid */
                    uint32_t u = qb_f32_bits(s);
                    u = (u + 0x7Fu + ((u >> 8) & 1u)) & ~0xFFu;
                    s = qb_bits_f32(u);
                }
                if (s == 0.0f)
                    s = 1.0f;
                sc[(r0 + r) * G + g] = s;
                bi[(r0 + r) * G + g] = qbk_out_dt_round(w->p.sdt, -(float)half * s);
                for (k = 0; k < it->gs; k++) {
                    float q = rintf(x[k] / s);
                    q = q < (float)-half ? (float)-half : q > (float)(half - 1) ? (float)(half - 1)
                                                                                 : q;
                    w->codes[r * it->cols + g * it->gs + k] = (uint8_t)((int)q + half);
                    /* what mlx.core.dequantize gives: scale * code + bias */
                    account(it, s * (float)((int)q + half) + bi[(r0 + r) * G + g], x[k]);
                }
            }
        return QB_OK;
    }
    {
        qb_grid_rows gr;
        memset(&gr, 0, sizeof gr);
        gr.struct_size = sizeof gr;
        gr.codes = w->codes;
        gr.scales = sc + r0 * G;
        gr.zeros = zb;
        if ((st = w->src->read_grid(w->src->handle, it->src, r0, nr, &gr)) != QB_OK ||
            (st = w->src->read_rows(w->src->handle, it->src, r0, nr, w->fref)) != QB_OK)
            return st;
    }
    for (r = 0; r < nr; r++) {
        for (g = 0; g < G; g++) {
            float s = sc[(r0 + r) * G + g];
            int32_t z = zb[r * G + g] + it->shift;
            float b = qbk_out_dt_round(w->p.sdt, -(float)z * s);
            if (qbk_out_dt_round(w->p.sdt, s) != s)
                return h->set_error(h, QB_E_INTERNAL, "%s: %s: scale %.9g is not a %s value",
                                    w->src->source_path, it->name, (double)s,
                                    qbk_out_dt_torch_name(w->p.sdt));
            bi[(r0 + r) * G + g] = b;
        }
        for (k = 0; k < it->cols; k++) {
            uint8_t c = (uint8_t)(w->codes[r * it->cols + k] + it->shift);
            float s = sc[(r0 + r) * G + k / it->gs], b = bi[(r0 + r) * G + k / it->gs];
            float p = s * (float)c, d = p + b;
            w->codes[r * it->cols + k] = c;
            /* an exact item decodes (mlx dequantize, float32) to the source's
             * value; MLX's x + -x is +0 where the source may hold -0 */
            if (it->kind == MW_BIAS_ROUND)
                account(it, d, w->fref[r * it->cols + k]);
            if (it->kind == MW_EXACT && !(d == w->fref[r * it->cols + k]))
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: element [%lld, %lld]: the "
                                    "carried-over code decodes to %.9g, the source's value is "
                                    "%.9g", w->src->source_path, it->name, (long long)(r0 + r),
                                    (long long)k, (double)d, (double)w->fref[r * it->cols + k]);
        }
    }
    return QB_OK;
}

static qb_status write_quant(mw_writer *w, mw_item *it)
{
    const qb_host *h = w->h;
    int64_t br = block_rows(it->cols), r0, r, wpr = it->cols * it->bits / 32;
    size_t sz = (size_t)(it->rows * it->G), es = qbk_out_dt_size(w->p.sdt);
    float *sc = qbk_malloc(sz * sizeof(float)), *bi = qbk_malloc(sz * sizeof(float));
    int32_t *zb = qbk_malloc((size_t)(br * it->G) * sizeof(int32_t));
    uint8_t *ob = qbk_malloc(sz * es + 8);
    qb_status st = QB_OK;

    if (!sc || !bi || !zb || !ob) {
        st = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", w->src->source_path, it->name);
        goto out;
    }
    if ((st = mw_enter(w, it->out0)) != QB_OK)
        goto out;
    for (r0 = 0; r0 < it->rows; r0 += br) {
        int64_t nr = it->rows - r0 < br ? it->rows - r0 : br;
        if ((st = quant_block(w, it, r0, nr, sc, bi, zb)) != QB_OK)
            goto out;
        for (r = 0; r < nr; r++)
            qbk_pack32_row(it->bits, w->codes + r * it->cols, it->cols,
                           w->bbuf + (size_t)(r * wpr) * 4);
        if ((st = qbk_st_writer_write(w->cur, w->bbuf, (size_t)(nr * wpr) * 4)) != QB_OK)
            goto out;
    }
    qbk_out_dt_encode(w->p.sdt, sc, sz, ob);
    if ((st = mw_enter(w, it->out0 + 1)) != QB_OK ||
        (st = qbk_st_writer_write(w->cur, ob, sz * es)) != QB_OK)
        goto out;
    qbk_out_dt_encode(w->p.sdt, bi, sz, ob);
    if ((st = mw_enter(w, it->out0 + 2)) == QB_OK)
        st = qbk_st_writer_write(w->cur, ob, sz * es);
out:
    qbk_free(sc);
    qbk_free(bi);
    qbk_free(zb);
    qbk_free(ob);
    return st;
}

static qb_status mw_write_tensor(qb_writer_handle handle, size_t index)
{
    mw_writer *w = handle;
    mw_item *it;
    if (w->next >= w->p.n || w->p.it[w->next].src != index)
        return w->h->set_error(w->h, QB_E_INTERNAL, "mlx writer: tensor %zu out of order", index);
    it = &w->p.it[w->next++];
    return it->kind == MW_DENSE ? write_dense(w, it) : write_quant(w, it);
}

/* model.safetensors.index.json as mlx-lm's save_model writes it, also for
 * one shard: metadata total_size (the tensors' bytes) then
 * total_parameters, json.dump's indent 4 and no final newline. */
static qb_status write_index(mw_writer *w)
{
    static const char *const keys[] = {"total_size", "total_parameters"};
    const mw_plan *p = &w->p;
    uint64_t vals[2] = {p->sh.total, p->n_params};
    qbk_shard_index ix = {keys, vals, 2, 4, 0};
    uint32_t *of = qbk_malloc(p->n_out * sizeof *of);
    size_t i;
    qb_status st;
    if (!of)
        return w->h->set_error(w->h, QB_E_NOMEM, "model.safetensors.index.json: out of memory");
    for (i = 0; i < p->n_out; i++)
        of[i] = qbk_shards_of(&p->sh, i);
    st = qbk_shards_write_index(w->h, w->sink, &p->sh, (const char *const *)p->names, of,
                                p->n_out, &ix);
    qbk_free(of);
    return st;
}

/* quantbridge-report.json: per source tensor what it became and the error
 * of MLX's decode measured while writing (dense tensors: not measured,
 * null), since MLX's config has no place for it. */
static qb_status write_report(mw_writer *w)
{
    qbk_tensor_report r;
    size_t i;
    qbk_report_begin(&r, "mlx", w->src->source_path);
    for (i = 0; i < w->p.n; i++) {
        const mw_item *it = &w->p.it[i];
        if (it->kind == MW_EXACT)
            qbk_report_add(&r, it->name, "exact", it->reason, 0.0, 0.0, 0.0);
        else if (it->kind == MW_DENSE)
            qbk_report_add(&r, it->name, "dense", it->reason, NAN, 1.0, NAN);
        else
            qbk_report_add(&r, it->name, "quantized", it->reason, it->err2, it->ref2, it->err_max);
    }
    return qbk_report_write(&r, w->h, w->sink, "quantbridge-report.json");
}

static qb_status mw_finish(qb_writer_handle handle)
{
    mw_writer *w = handle;
    const qb_host *h = w->h;
    const char *keys[5], *values[5];
    char dtype[32], *qz = NULL, *cfg = NULL;
    qb_status st;

    if (w->next != w->p.n || !w->cur || w->shard + 1 != w->p.sh.n) {
        st = h->set_error(h, QB_E_INTERNAL, "mlx writer: finish after %zu of %zu tensors "
                          "(shard %u of %u)", w->next, w->p.n, w->shard + 1, w->p.sh.n);
        goto out;
    }
    st = qbk_st_writer_close(w->cur, NULL, NULL);
    w->cur = NULL;
    if (st != QB_OK || (st = write_index(w)) != QB_OK ||
        (st = quant_json(h, &w->p, &qz)) != QB_OK)
        goto out;
    snprintf(dtype, sizeof dtype, "\"%s\"", qbk_out_dt_torch_name(w->p.dt));
    keys[0] = "torch_dtype";
    values[0] = dtype;
    keys[1] = "quantization";
    values[1] = qz;
    /* mlx_lm.convert writes the same object under both names */
    keys[2] = "quantization_config";
    values[2] = qz;
    keys[3] = values[3] = NULL;
    if ((st = qbk_json_edit(h, w->src->source_path, w->src->info->config_json,
                            (const char *const[]){"compression_config", NULL}, keys, values,
                            &cfg)) != QB_OK ||
        (st = qbk_sink_write_text(w->sink, "config.json", cfg)) != QB_OK)
        goto out;
    if ((st = qbk_hf_write_tokenizer_files(h, w->sink, w->src->info)) != QB_OK)
        goto out;
    st = write_report(w);
out:
    qbk_free(qz);
    qbk_free(cfg);
    mw_free(w);
    return st;
}

static void mw_abort(qb_writer_handle handle)
{
    mw_free(handle);
}

const qb_writer_vtable mlx_writer_vtable = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = mw_supports,
    .begin = mw_begin,
    .write_tensor = mw_write_tensor,
    .finish = mw_finish,
    .abort = mw_abort,
    .plan = mw_plan_vt,
};
