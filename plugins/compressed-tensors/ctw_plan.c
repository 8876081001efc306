/*
 * compressed-tensors writer — what each source tensor becomes, the model
 * dtype, and the files (docs/formats/compressed-tensors.md, "Writing").
 *
 * A linear is a 2-D `<m>.weight` other than the embeddings and lm_head
 * (transformers' nn.Linear modules a "Linear" target matches; llm-compressor
 * leaves lm_head out by default). A linear whose reader serves an integer
 * grid keeps its codes when the grid maps onto pack-quantized:
 *   - b <= 8 bits: into 4 bits when b <= 4, else 8; codes and zeros shift
 *     by 2^(B-1) - 2^(b-1), which keeps code - zero and the code range;
 *   - contiguous groups with ceil(K / G) groups (one group: channel), or an
 *     act-order map written as weight_g_idx when act_order=g_idx;
 *   - scales stored in the model dtype D without rounding: D is the grids'
 *     scale dtype (dtype=auto) or one that holds it (f32 holds f16, bf16).
 * Every other linear is quantized anew (round to nearest, ctw_encode.c),
 * unless its K is not a multiple of the group size: then it stays dense and
 * is listed in `ignore`.
 */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctw.h"
#include "qbk_alloc.h"
#include "qbk_fp8_decode.h"
#include "qbk_int4_rules.h"
#include "qbk_json.h"

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* A linear's weight by name and shape (file comment). */
static int is_linear(const qb_tensor_info *ti)
{
    return ti->n_dims == 2 && ends_with(ti->name, ".weight") && !strstr(ti->name, "embed") &&
           strcmp(ti->name, "lm_head.weight") != 0;
}

/* Width of a contiguous map c / w, or 0. */
static int64_t trivial_width(const int32_t *cg, int64_t cols)
{
    int64_t w, c;
    for (w = 0; w < cols && cg[w] == 0; w++)
        ;
    if (w < 1)
        return 0;
    for (c = 0; c < cols; c++)
        if (cg[c] != (int32_t)(c / w))
            return 0;
    return w;
}

/* Fills it's scheme when grid gi carries over (returns 1), else writes why
 * into it->reason and returns 0. */
static int grid_fits(const qb_grid_info *gi, qb_dtype dt, int act_gidx, ctw_item *it)
{
    int64_t cols = it->cols, gs = 0, c;
    int B;

    if (gi->bits < 1 || gi->bits > 8) {
        snprintf(it->reason, sizeof it->reason, "%u-bit grid (pack-quantized holds 4 or 8)",
                 gi->bits);
        return 0;
    }
    if (!qbk_out_dt_holds(dt, gi->scale_dtype)) {
        snprintf(it->reason, sizeof it->reason, "grid scales are %s, the model dtype %s would "
                 "round them (--option dtype)", qbk_out_dt_torch_name(gi->scale_dtype),
                 qbk_out_dt_torch_name(dt));
        return 0;
    }
    B = gi->bits <= 4 ? 4 : 8;
    if (gi->col_group) {
        gs = trivial_width(gi->col_group, cols);
        if (gs < 1) {
            uint32_t *count;
            uint32_t k, mx = 0;
            if (!act_gidx) {
                snprintf(it->reason, sizeof it->reason,
                         "act-order group map: compressed-tensors 0.20 removed actorder "
                         "\"group\" (--option act_order=g_idx writes weight_g_idx for older "
                         "loaders)");
                return 0;
            }
            count = qbk_calloc(gi->n_groups ? gi->n_groups : 1, sizeof *count);
            if (!count) {
                snprintf(it->reason, sizeof it->reason, "out of memory");
                return -1;
            }
            for (c = 0; c < cols; c++) {
                int32_t g = gi->col_group[c];
                if (g < 0 || (uint32_t)g >= gi->n_groups) {
                    qbk_free(count);
                    snprintf(it->reason, sizeof it->reason, "column %lld maps to group %d of %u",
                             (long long)c, (int)g, gi->n_groups);
                    return 0;
                }
                count[g]++;
            }
            for (k = 0; k < gi->n_groups; k++)
                mx = count[k] > mx ? count[k] : mx;
            qbk_free(count);
            gs = mx;
            it->sc.act_group = 1;
            it->col_group = gi->col_group;
        }
    } else {
        gs = gi->group_size;
    }
    if (gs < 1 || (cols + gs - 1) / gs != (int64_t)gi->n_groups || cols % gs != 0) {
        snprintf(it->reason, sizeof it->reason,
                 "grid of %u groups of %lld does not divide %lld columns evenly", gi->n_groups,
                 (long long)gs, (long long)cols);
        it->sc.act_group = 0;
        it->col_group = NULL;
        return 0;
    }
    it->sc.bits = B;
    it->sc.symmetric = gi->symmetric ? 1 : 0;
    it->sc.group_size = gi->n_groups == 1 && !it->sc.act_group ? 0 : gs;
    it->shift = (1 << (B - 1)) - (1 << (gi->bits - 1));
    it->src_bits = (int)gi->bits;
    it->n_groups = gi->n_groups;
    return 1;
}

#define CTW_ACCEPT (QB_CODES_BIT(QB_CODE_F8_E4M3) | QB_CODES_BIT(QB_CODE_F4_E2M1))

/* The tensor offers a grid: integer, or float-coded (ABI 1.4, 1.5). */
static int offers_grid(const qb_tensor_info *ti)
{
    return ti->has_grid || (QB_HAS_FIELD(ti, qb_tensor_info, grid_codes) &&
                            (ti->grid_codes & CTW_ACCEPT));
}

/* get_grid_info accepting e4m3 and e2m1 codes besides integers. */
static qb_status grid_of(const qb_model_src *src, size_t i, qb_grid_info *gi)
{
    memset(gi, 0, sizeof *gi);
    gi->struct_size = sizeof *gi;
    gi->accept_codes = CTW_ACCEPT;
    return src->get_grid_info(src->handle, i, gi);
}

/* An e2m1 grid (NVFP4, ABI 1.5) carries over as nvfp4-pack-quantized: the
 * codes and e4m3 group scales as they are, and a global scale G that the
 * library divides by (dense = e2m1 * (e4m3 / G), ct_read.c). A source that
 * divides keeps its G: exact. ModelOpt multiplies by weight_scale_2 (s2):
 * G = 1 / s2 in float32, exact only when e4m3 / G rounds like e4m3 * s2 for
 * every finite e4m3 value (a power-of-two s2 does; an arbitrary one rarely),
 * otherwise carried with the values measured (CTW_CARRY). Returns 1 exact,
 * 2 carried, 0 does not fit (reason set). */
static int nvfp4_fits(const qb_grid_info *gi, ctw_item *it)
{
    float g;
    int b;
    if (!QB_HAS_FIELD(gi, qb_grid_info, tensor_scale) || gi->col_group || gi->group_size != 16 ||
        it->cols % 16 != 0 || gi->n_groups != (uint32_t)(it->cols / 16) ||
        gi->scale_dtype != QB_DT_F8_E4M3 || !(gi->tensor_scale > 0.0f) ||
        !isfinite(gi->tensor_scale) ||
        (gi->tensor_scale_op != QB_TENSOR_SCALE_DIV && gi->tensor_scale_op != QB_TENSOR_SCALE_MUL)) {
        snprintf(it->reason, sizeof it->reason, "e2m1 grid of %u groups of %lld over %lld "
                 "columns, scales %s, tensor scale op %u: not nvfp4-pack-quantized's layout",
                 gi->n_groups, (long long)gi->group_size, (long long)it->cols,
                 qbk_out_dt_torch_name(gi->scale_dtype), gi->tensor_scale_op);
        return 0;
    }
    memset(&it->sc, 0, sizeof it->sc);
    it->sc.bits = 4;
    it->sc.symmetric = 1;
    it->sc.group_size = 16;
    it->sc.nvfp4 = 1;
    it->n_groups = gi->n_groups;
    if (gi->tensor_scale_op == QB_TENSOR_SCALE_DIV) {
        it->gscale = gi->tensor_scale;
        return 1;
    }
    g = 1.0f / gi->tensor_scale;
    if (!isfinite(g) || !(g > 0.0f)) {
        snprintf(it->reason, sizeof it->reason, "tensor scale %.9g has no finite float32 "
                 "reciprocal", (double)gi->tensor_scale);
        return 0;
    }
    it->gscale = g;
    for (b = 1; b < 0x7f; b++) {
        float v = qbk_fp8_e4m3fn_to_f32((uint8_t)b);
        if (qb_f32_bits(v / g) != qb_f32_bits(v * gi->tensor_scale))
            return 2;
    }
    return 1;
}

/* An e4m3 grid carries over as FP8 weights (naive-quantized): its bytes and its scales
 * (tensor, channel or [bn, bk] blocks, read from gi->scale_rows) when the
 * model dtype holds the scales. */
static int fp8_fits(const qb_grid_info *gi, qb_dtype dt, ctw_item *it)
{
    int64_t cols = it->cols;
    if (!QB_HAS_FIELD(gi, qb_grid_info, scale_rows) || gi->scale_rows < 1) {
        snprintf(it->reason, sizeof it->reason, "e4m3 grid without its scale layout");
        return 0;
    }
    if (!qbk_out_dt_holds(dt, gi->scale_dtype)) {
        snprintf(it->reason, sizeof it->reason, "e4m3 scales are %s, the model dtype %s would "
                 "round them (--option dtype)", qbk_out_dt_torch_name(gi->scale_dtype),
                 qbk_out_dt_torch_name(dt));
        return 0;
    }
    if (gi->col_group || gi->group_size < 1 ||
        (cols + gi->group_size - 1) / gi->group_size != (int64_t)gi->n_groups) {
        snprintf(it->reason, sizeof it->reason, "e4m3 grid of %u groups of %lld over %lld "
                 "columns", gi->n_groups, (long long)gi->group_size, (long long)cols);
        return 0;
    }
    memset(&it->sc, 0, sizeof it->sc);
    it->sc.bits = 8;
    it->sc.symmetric = 1;
    it->sc.fp8 = 1;
    /* tensor: one group of the whole row shared by every row; channel: one
     * group a row; anything else [scale_rows, group_size] blocks, also a
     * block larger than the tensor (its scale keeps the block shape) */
    if (gi->n_groups == 1 && gi->group_size == cols && gi->scale_rows == it->rows)
        it->sc.per_tensor = 1;
    else if (gi->n_groups > 1 || gi->scale_rows > 1 || gi->group_size != cols) {
        it->sc.group_size = gi->group_size;
        it->sc.block_rows = gi->scale_rows;
    }
    it->n_groups = gi->n_groups;
    return 1;
}

/* dtype=auto: the scale dtype of the grids when they agree, else the
 * source config's. */
static qb_status choose_dtype(const qb_host *h, const qb_model_src *src, const ctw_options *o,
                              ctw_plan *p)
{
    size_t i, n16 = 0, nb16 = 0, n32 = 0;
    if (strcmp(o->dtype, "auto") != 0) {
        p->dt = strcmp(o->dtype, "f32") == 0 ? QB_DT_F32
                : strcmp(o->dtype, "bf16") == 0 ? QB_DT_BF16 : QB_DT_F16;
        snprintf(p->dt_reason, sizeof p->dt_reason, "explicit: dtype=%s", o->dtype);
        return QB_OK;
    }
    for (i = 0; i < src->info->n_tensors; i++) {
        const qb_tensor_info *ti;
        qb_grid_info gi;
        qb_status st;
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            return st;
        if (!offers_grid(ti) || !is_linear(ti))
            continue;
        st = grid_of(src, i, &gi);
        if (st == QB_E_UNSUPPORTED)
            continue;
        if (st != QB_OK)
            return st;
        n16 += gi.scale_dtype == QB_DT_F16;
        nb16 += gi.scale_dtype == QB_DT_BF16;
        n32 += gi.scale_dtype == QB_DT_F32;
    }
    if (n16 + nb16 + n32 == 0) {
        p->dt = qbk_out_dt_of_config(h, src->source_path, src->info->config_json);
        snprintf(p->dt_reason, sizeof p->dt_reason, "auto: no integer grid; the source config's "
                 "dtype %s", qbk_out_dt_torch_name(p->dt));
    } else if (n32 || (n16 && nb16)) {
        p->dt = QB_DT_F32;
        snprintf(p->dt_reason, sizeof p->dt_reason,
                 "auto: grid scales in %s%s%s: float32 holds every one", n16 ? "f16 " : "",
                 nb16 ? "bf16 " : "", n32 ? "f32" : "");
    } else {
        p->dt = n16 ? QB_DT_F16 : QB_DT_BF16;
        snprintf(p->dt_reason, sizeof p->dt_reason,
                 "auto: the grids' scale dtype %s keeps every scale", qbk_out_dt_torch_name(p->dt));
    }
    return QB_OK;
}

static qb_status decide(const qb_host *h, const qb_model_src *src, const ctw_options *o,
                        ctw_plan *p, ctw_item *it, const qb_tensor_info *ti)
{
    int64_t gs = o->rtn.group_size;
    it->rows = qb_tensor_rows(ti);
    it->cols = qb_tensor_cols(ti);
    it->kind = CTW_DENSE;
    if (!is_linear(ti)) {
        snprintf(it->reason, sizeof it->reason, "%s: kept dense in %s", ti->source_encoding,
                 qbk_out_dt_torch_name(p->dt));
        return QB_OK;
    }
    if (offers_grid(ti)) {
        qb_grid_info gi;
        qb_status st;
        int r;
        st = grid_of(src, it->src, &gi);
        if (st != QB_OK && st != QB_E_UNSUPPORTED)
            return st;
        if (st == QB_OK && gi.code_kind == QB_CODE_F4_E2M1) {
            r = nvfp4_fits(&gi, it);
            if (r) {
                it->kind = r == 1 ? CTW_EXACT : CTW_CARRY;
                if (r == 1)
                    snprintf(it->reason, sizeof it->reason, "%s: e2m1 codes, e4m3 scales and "
                             "global scale %.9g carried over (nvfp4-pack-quantized)",
                             ti->source_encoding, (double)it->gscale);
                else
                    snprintf(it->reason, sizeof it->reason, "%s: e2m1 codes and e4m3 scales "
                             "carried over; global scale 1/%.9g = %.9g rounds, so values may "
                             "differ in the last bit (measured)", ti->source_encoding,
                             (double)gi.tensor_scale, (double)it->gscale);
                return QB_OK;
            }
        } else if (st == QB_OK && gi.code_kind == QB_CODE_F8_E4M3) {
            if (fp8_fits(&gi, p->dt, it)) {
                it->kind = CTW_EXACT;
                snprintf(it->reason, sizeof it->reason, "%s: e4m3 bytes and %s scales carried "
                         "over (FP8 naive-quantized)", ti->source_encoding,
                         it->sc.per_tensor ? "tensor" : it->sc.block_rows ? "block" : "channel");
                return QB_OK;
            }
        } else if (st == QB_OK) {
            r = grid_fits(&gi, p->dt, o->act_gidx, it);
            if (r < 0)
                return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", src->source_path,
                                    ti->name);
            if (r) {
                it->kind = CTW_EXACT;
                snprintf(it->reason, sizeof it->reason, "%s: codes carried over (%u-bit %s grid"
                         " as int%d%s)", ti->source_encoding, gi.bits,
                         gi.symmetric ? "symmetric" : "asymmetric", it->sc.bits,
                         it->sc.act_group ? ", weight_g_idx" : "");
                return QB_OK;
            }
        }
    } else {
        snprintf(it->reason, sizeof it->reason, "dense %s", ti->source_encoding);
    }
    if (gs > 0 && it->cols % gs != 0) {
        char why[240];
        snprintf(why, sizeof why, "%s", it->reason);
        snprintf(it->reason, sizeof it->reason, "%.150s; %lld columns are not a multiple of "
                 "group size %lld: kept dense and ignored", why, (long long)it->cols,
                 (long long)gs);
        return QB_OK;
    }
    {
        char why[240];
        snprintf(why, sizeof why, "%s", it->reason);
        it->kind = CTW_RTN;
        it->sc = o->rtn;
        it->n_groups = gs > 0 ? it->cols / gs : 1;
        if (it->sc.nvfp4)
            snprintf(it->reason, sizeof it->reason, "%.120s: quantized to nvfp4 (e2m1, e4m3 "
                     "scale per 16 columns, float32 global scale; round to nearest)", why);
        else if (it->sc.fp8)
            snprintf(it->reason, sizeof it->reason, "%.150s: quantized to fp8 e4m3, channel "
                     "(round to nearest, amax / 448 scale)", why);
        else if (o->i4rule >= 0)
            snprintf(it->reason, sizeof it->reason, "%.150s: quantized to int4 symmetric, %s "
                     "(quant_rule %s, %s scale)", why,
                     gs > 0 ? "group" : "channel",
                     qbk_int4_rule_name((qbk_int4_rule)o->i4rule), qbk_out_dt_torch_name(p->dt));
        else
            snprintf(it->reason, sizeof it->reason, "%.150s: quantized to int%d %s, %s (round to "
                 "nearest, %s scale)", why, it->sc.bits,
                 it->sc.symmetric ? "symmetric" : "asymmetric", gs > 0 ? "group" : "channel",
                 !it->sc.symmetric ? "min-max" : o->minmax ? "minmax" : "absmax");
    }
    return QB_OK;
}

static qb_status add_out(const qb_host *h, ctw_plan *p, const char *module, const char *suffix,
                         const char *dtype, uint32_t n_dims, int64_t d0, int64_t d1, size_t es)
{
    qbk_st_out_tensor *t = &p->out[p->n_out];
    size_t len = strlen(module) + strlen(suffix) + 1;
    char *name = qbk_malloc(len);
    if (!name)
        return h->set_error(h, QB_E_NOMEM, "compressed-tensors writer: out of memory");
    snprintf(name, len, "%s%s", module, suffix);
    memset(t, 0, sizeof *t);
    p->out_names[p->n_out] = name;
    t->name = name;
    t->dtype = dtype;
    t->n_dims = n_dims;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->n_bytes = (uint64_t)d0 * (uint64_t)(n_dims > 1 ? d1 : 1) * es;
    p->n_out++;
    return QB_OK;
}

static qb_status add_outputs(const qb_host *h, const qb_model_src *src, ctw_plan *p, ctw_item *it,
                             const qb_tensor_info *ti)
{
    char module[512];
    size_t nl = strlen(ti->name);
    int64_t pf;
    qb_status st;

    it->out0 = p->n_out;
    if (it->kind == CTW_DENSE) {
        qbk_st_out_tensor *t = &p->out[p->n_out];
        uint64_t e = 1;
        uint32_t d;
        memset(t, 0, sizeof *t);
        p->out_names[p->n_out] = qbk_strdup(ti->name);
        if (!p->out_names[p->n_out])
            return h->set_error(h, QB_E_NOMEM, "compressed-tensors writer: out of memory");
        t->name = p->out_names[p->n_out];
        t->dtype = qbk_out_dt_st_name(p->dt);
        t->n_dims = ti->n_dims;
        for (d = 0; d < ti->n_dims; d++) {
            t->dims[d] = ti->dims[d];
            e *= (uint64_t)ti->dims[d];
        }
        t->n_bytes = e * qbk_out_dt_size(p->dt);
        p->n_out++;
        it->n_out = 1;
        return QB_OK;
    }
    if (nl - 7 >= sizeof module)
        return h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': name too long", src->source_path,
                            ti->name);
    memcpy(module, ti->name, nl - 7); /* without ".weight" */
    module[nl - 7] = 0;
    if (it->sc.nvfp4) {
        if ((st = add_out(h, p, module, ".weight_packed", "U8", 2, it->rows, it->cols / 2, 1)) !=
                QB_OK ||
            (st = add_out(h, p, module, ".weight_scale", "F8_E4M3", 2, it->rows, it->cols / 16,
                          1)) != QB_OK ||
            (st = add_out(h, p, module, ".weight_global_scale", "F32", 1, 1, 0, 4)) != QB_OK)
            return st;
        it->n_out = p->n_out - it->out0;
        return QB_OK;
    }
    if (it->sc.fp8) {
        int64_t sr = it->sc.per_tensor ? 1
                     : it->sc.block_rows ? (it->rows + it->sc.block_rows - 1) / it->sc.block_rows
                                         : it->rows;
        if ((st = add_out(h, p, module, ".weight", "F8_E4M3", 2, it->rows, it->cols, 1)) != QB_OK)
            return st;
        st = it->sc.per_tensor
                 ? add_out(h, p, module, ".weight_scale", qbk_out_dt_st_name(p->dt), 1, 1, 0,
                           qbk_out_dt_size(p->dt))
                 : add_out(h, p, module, ".weight_scale", qbk_out_dt_st_name(p->dt), 2, sr,
                           it->n_groups, qbk_out_dt_size(p->dt));
        if (st != QB_OK)
            return st;
        it->n_out = p->n_out - it->out0;
        return QB_OK;
    }
    pf = 32 / it->sc.bits;
    if ((st = add_out(h, p, module, ".weight_packed", "I32", 2, it->rows,
                      (it->cols + pf - 1) / pf, 4)) != QB_OK ||
        (st = add_out(h, p, module, ".weight_scale", qbk_out_dt_st_name(p->dt), 2, it->rows,
                      it->n_groups, qbk_out_dt_size(p->dt))) != QB_OK)
        return st;
    if (!it->sc.symmetric &&
        (st = add_out(h, p, module, ".weight_zero_point", "I32", 2, (it->rows + pf - 1) / pf,
                      it->n_groups, 4)) != QB_OK)
        return st;
    if (it->sc.act_group &&
        (st = add_out(h, p, module, ".weight_g_idx", "I32", 1, it->cols, 0, 4)) != QB_OK)
        return st;
    if ((st = add_out(h, p, module, ".weight_shape", "I64", 1, 2, 0, 8)) != QB_OK)
        return st;
    it->n_out = p->n_out - it->out0;
    return QB_OK;
}

qb_status ctw_plan_build(const qb_host *h, const qb_model_src *src, const ctw_options *o,
                         ctw_plan *p)
{
    size_t n = src->info->n_tensors, i, k;
    uint64_t *item_bytes = NULL;
    qb_status st = QB_OK;

    memset(p, 0, sizeof *p);
    p->rtn = o->rtn;
    p->act_gidx = o->act_gidx;
    p->minmax = o->minmax;
    p->i4rule = o->i4rule;
    if (n == 0)
        return h->set_error(h, QB_E_FORMAT, "%s: nothing to write (no tensors)",
                            src->source_path);
    p->it = qbk_calloc(n, sizeof *p->it);
    p->out = qbk_calloc(n * CTW_MAX_OUT, sizeof *p->out);
    p->out_names = qbk_calloc(n * CTW_MAX_OUT, sizeof *p->out_names);
    if (!p->it || !p->out || !p->out_names) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    p->n = n;
    if ((st = choose_dtype(h, src, o, p)) != QB_OK)
        goto out;
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti;
        ctw_item *it = &p->it[i];
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            goto out;
        if (ti->n_dims < 1 || ti->n_dims > QB_MAX_DIMS) {
            st = h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': %u dimensions",
                              src->source_path, ti->name, ti->n_dims);
            goto out;
        }
        it->src = i;
        it->name = ti->name;
        if ((st = decide(h, src, o, p, it, ti)) != QB_OK ||
            (st = add_outputs(h, src, p, it, ti)) != QB_OK)
            goto out;
    }
    /* shards cut between source tensors (a module's tensors stay together),
     * greedy as save_pretrained does (docs/formats/hf-dense.md, "Sharding") */
    item_bytes = qbk_malloc(n * sizeof *item_bytes);
    if (!item_bytes) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    for (i = 0; i < n; i++) {
        item_bytes[i] = 0;
        for (k = 0; k < p->it[i].n_out; k++)
            item_bytes[i] += p->out[p->it[i].out0 + k].n_bytes;
    }
    if ((st = qbk_shards_cut(h, "compressed-tensors writer", item_bytes, n, o->max_shard,
                             QBK_SHARD_CUT_IF_BYTES, &p->sh)) != QB_OK)
        goto out;
    for (i = 0; i < n; i++)
        p->it[i].shard = qbk_shards_of(&p->sh, i);
out:
    qbk_free(item_bytes);
    if (st != QB_OK)
        ctw_plan_free(p);
    return st;
}

void ctw_plan_free(ctw_plan *p)
{
    size_t i;
    for (i = 0; p->out_names && i < p->n_out; i++)
        qbk_free(p->out_names[i]);
    qbk_free(p->out_names);
    qbk_free(p->out);
    qbk_free(p->it);
    qbk_shards_free(&p->sh);
    memset(p, 0, sizeof *p);
}
