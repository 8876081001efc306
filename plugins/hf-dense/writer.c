/*
 * hf-dense writer: any model the host can read, written as a plain Hugging
 * Face checkpoint transformers loads — config.json, generation_config.json,
 * tokenizer files, model.safetensors or shards with
 * model.safetensors.index.json.
 *
 * Values are the reader's dense float32 rows: stored as F32 they are those
 * exact bits; as F16/BF16 each is rounded to nearest, ties to even
 * (qb_half.h). Memory is bounded by one row block (HFW_BLOCK_ELEMS floats,
 * at least one row), never a tensor: the plan fixes every file's header
 * before any data, and each tensor's rows are pulled, converted and
 * appended block by block.
 *
 * Tied embeddings: transformers ties lm_head to embed_tokens when
 * config.tie_word_embeddings is true (PreTrainedModel.tie_weights), so a
 * tied model's file carries no lm_head.weight. A source that presents one
 * while its config says tied is written without it only when it is bit for
 * bit the embedding; otherwise it is refused, since a loader would replace
 * it by the embedding and its own values would be lost unnoticed. A config without the key gets it set from what the source
 * has, since the per-architecture default differs (Llama false, Gemma
 * true) and must not decide.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hfw.h"
#include "qbk_mtp.h"
#include "qbk_mm.h"
#include "qbk_alloc.h"
#include "qbk_encode_check.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_json.h"

/* Row block size in float32 elements (4 MiB). */
#define HFW_BLOCK_ELEMS ((int64_t)1 << 20)

static const qb_option_decl hfw_opt_dtype = {
    .struct_size = sizeof(qb_option_decl),
    .name = "dtype",
    .type = QB_PARAM_STRING,
    .default_value = "f16",
    .help = "hf-dense writer: element type of the written weights (round to nearest even from the "
            "reader's float32)",
    .choices = "f32|f16|bf16",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};
static const qb_option_decl hfw_opt_max_shard = {
    .struct_size = sizeof(qb_option_decl),
    .name = "max_shard_size",
    .type = QB_PARAM_SIZE,
    .default_value = "5GB",
    .help = "hf-dense writer: largest safetensors file before the weights are split into shards "
            "with model.safetensors.index.json",
    .choices = NULL,
    .min_int = 1,
    .max_int = INT64_MAX,
    .roles = QB_OPTION_ROLE_WRITER,
};

static const qb_option_decl hfw_opt_allow_nonfinite = {
    .struct_size = sizeof(qb_option_decl),
    .name = "allow_nonfinite",
    .type = QB_PARAM_BOOL,
    .default_value = "false",
    .help = "hf-dense writer: write NaN and infinite source values as they are instead of "
            "refusing the tensor that holds one (convert --allow-nonfinite)",
    .choices = NULL,
    .min_int = 0,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_WRITER,
};

/* The plugin's options: the writer's, and the reader's mtp (kit qbk_mtp.h)
 * and towers (multimodal wrappers, kit qbk_mm.h). */
const qb_option_decl *const hfd_option_decls[] = {&hfw_opt_dtype, &hfw_opt_max_shard,
                                                  &hfw_opt_allow_nonfinite, &qbk_mtp_option,
                                                  &qbk_towers_option, NULL};

typedef struct hfw_writer {
    const qb_host *h;
    const qb_sink *sink;
    const qb_model_src *src;
    hfw_dtype dt;
    int allow_nonfinite; /* allow_nonfinite=true: NaN/Inf pass through */
    hfw_plan plan;
    size_t *order; /* copy of begin's order */
    size_t next;   /* position in order of the next write_tensor */
    qbk_st_writer *cur;   /* open shard, or NULL */
    uint32_t next_shard;
    char *config_text;
    size_t block;  /* elements per row block (largest over the tensors) */
    float *fbuf;   /* 2 blocks */
    uint8_t *bbuf; /* 1 block of output bytes */
} hfw_writer;

static int hfw_supports(void *ctx, const qb_model_info *mi)
{
    cJSON *root = NULL;
    int ok;
    (void)ctx;
    if (!mi || !mi->config_json) {
        hfd_host->set_error(hfd_host, QB_E_UNSUPPORTED,
                            "hf-dense writes a Hugging Face config.json, and the source "
                            "reader gives no model config");
        return 0;
    }
    /* the one strict reading (qbk_json.h); its refusal is the message */
    ok = qbk_json_parse_config(hfd_host, NULL, mi->config_json, &root) == QB_OK;
    cJSON_Delete(root);
    if (!ok)
        return 0;
    /* Names are written as the reader gives them, so any architecture
     * works; a writer specific to it should win when one exists. */
    return 50;
}

static void hfw_free(hfw_writer *w)
{
    if (!w)
        return;
    /* discard: a writer freed with a shard open failed already, and that
     * first message must survive */
    qbk_st_writer_discard(w->cur);
    hfw_plan_free(&w->plan);
    qbk_free(w->order);
    qbk_free(w->config_text);
    qbk_free(w->fbuf);
    qbk_free(w->bbuf);
    qbk_free(w);
}

static void hfw_encode(hfw_dtype dt, const float *src, size_t n, uint8_t *dst)
{
    size_t i;
    switch (dt) {
    case HFW_F32:
        for (i = 0; i < n; i++) {
            uint32_t u = qb_f32_bits(src[i]);
            dst[4 * i] = (uint8_t)u;
            dst[4 * i + 1] = (uint8_t)(u >> 8);
            dst[4 * i + 2] = (uint8_t)(u >> 16);
            dst[4 * i + 3] = (uint8_t)(u >> 24);
        }
        break;
    case HFW_F16:
    case HFW_BF16:
        for (i = 0; i < n; i++) {
            uint16_t u = dt == HFW_F16 ? qb_f32_to_f16(src[i]) : qb_f32_to_bf16(src[i]);
            dst[2 * i] = (uint8_t)u;
            dst[2 * i + 1] = (uint8_t)(u >> 8);
        }
        break;
    }
}

/* Rows per block for a tensor of `cols` columns. */
static int64_t hfw_block_rows(int64_t rows, int64_t cols)
{
    int64_t br = cols >= HFW_BLOCK_ELEMS ? 1 : HFW_BLOCK_ELEMS / cols;
    return br < rows ? br : rows;
}

/* *same = 1 when lm_head (index hi) equals embed_tokens (index ei) bit
 * for bit, 0 when it differs; compared in row blocks. Uses w->fbuf (2
 * blocks). */
static qb_status hfw_same_rows(hfw_writer *w, size_t ei, size_t hi, int *same)
{
    const qb_model_src *src = w->src;
    const qb_tensor_info *a, *b;
    int64_t rows, cols, r, br;
    uint32_t d;
    qb_status st;

    *same = 0;
    if ((st = src->tensor_info(src->handle, ei, &a)) != QB_OK ||
        (st = src->tensor_info(src->handle, hi, &b)) != QB_OK)
        return st;
    if (a->n_dims != b->n_dims)
        return QB_OK;
    for (d = 0; d < a->n_dims; d++)
        if (a->dims[d] != b->dims[d])
            return QB_OK;
    rows = qb_tensor_rows(a);
    cols = qb_tensor_cols(a);
    br = hfw_block_rows(rows, cols);
    for (r = 0; r < rows; r += br) {
        int64_t nr = rows - r < br ? rows - r : br;
        size_t bytes = (size_t)nr * (size_t)cols * sizeof(float);
        if ((st = src->read_rows(src->handle, ei, r, nr, w->fbuf)) != QB_OK ||
            (st = src->read_rows(src->handle, hi, r, nr, w->fbuf + w->block)) != QB_OK)
            return st;
        if (memcmp(w->fbuf, w->fbuf + w->block, bytes) != 0)
            return QB_OK;
    }
    *same = 1;
    return QB_OK;
}

/* Decides the lm_head: *drop = its index when it is not written, *tie =
 * the tie_word_embeddings value to write (-1: leave the config's). */
static qb_status hfw_tie_plan(hfw_writer *w, size_t *drop, int *tie)
{
    const qb_host *h = w->h;
    const qb_model_src *src = w->src;
    size_t head, embed;
    int has_head, has_embed, cfg, same = 0;
    qb_status st;

    *drop = HFW_DROPPED;
    *tie = -1;
    cfg = hfw_config_bool(h, src->source_path, src->info->config_json, "tie_word_embeddings", &st);
    if (st != QB_OK)
        return st;
    has_head = src->find(src->handle, "lm_head.weight", &head) == QB_OK;
    has_embed = src->find(src->handle, "model.embed_tokens.weight", &embed) == QB_OK;
    if (cfg < 0) {
        *tie = has_head ? 0 : 1;
        return QB_OK;
    }
    if (cfg == 0) {
        /* A causal LM (embed_tokens) needs its head; other layouts
         * (encoders) may have none. */
        if (!has_head && has_embed)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: config says tie_word_embeddings false but the model has no "
                                "lm_head.weight (transformers would initialise it at random)",
                                src->source_path);
        return QB_OK;
    }
    if (!has_head)
        return QB_OK;
    if (!has_embed)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: tensor 'lm_head.weight': config says tied but there is no "
                            "model.embed_tokens.weight to compare it with",
                            src->source_path);
    if ((st = hfw_same_rows(w, embed, head, &same)) != QB_OK)
        return st;
    if (!same)
        return h->set_error(h, QB_E_MISMATCH,
                            "%s: tensor 'lm_head.weight' differs from model.embed_tokens.weight "
                            "but config says tie_word_embeddings true (a loader would replace "
                            "it by the embedding)",
                            src->source_path);
    *drop = head;
    return QB_OK;
}

/* Checks the config is an object whose model_type (when present) agrees
 * with the reader's architecture; *phi3 when either names phi3. */
static qb_status hfw_arch(const qb_host *h, const qb_model_src *src, int *phi3)
{
    cJSON *root = NULL;
    qb_status st = qbk_json_parse_config(h, src->source_path, src->info->config_json, &root);
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *arch = src->info->architecture;

    *phi3 = 0;
    if (st == QB_OK && cJSON_IsString(mt) && arch && strcmp(mt->valuestring, arch) != 0)
        st = h->set_error(h, QB_E_MISMATCH,
                          "%s: the reader says architecture '%s' but its config says "
                          "model_type '%s'",
                          src->source_path, arch, mt->valuestring);
    *phi3 = (arch && strcmp(arch, "phi3") == 0) ||
            (cJSON_IsString(mt) && strcmp(mt->valuestring, "phi3") == 0);
    cJSON_Delete(root);
    return st;
}

static qb_status hfw_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                           const qb_param *params, size_t *order, qb_writer_handle *out)
{
    const qb_host *h = hfd_host;
    const qb_param *pd = qb_param_find(params, "dtype");
    const qb_param *ps = qb_param_find(params, "max_shard_size");
    const qb_param *pa = qb_param_find(params, "allow_nonfinite");
    const char *dts = pd && pd->is_set ? pd->v.s : "f16";
    uint64_t max_shard = ps && ps->is_set ? (uint64_t)ps->v.i : 5000000000u;
    hfw_writer *w = NULL;
    size_t drop, n, i;
    int tie, phi3 = 0;
    qb_status st = QB_OK;

    (void)ctx;
    *out = NULL;
    if (!src->info->config_json)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: no model config to write config.json from",
                            src->source_path);
    if (ps && ps->is_set && ps->v.i < 1)
        return h->set_error(h, QB_E_INVALID, "max_shard_size %lld: must be at least 1 byte",
                            (long long)ps->v.i);
    w = qbk_calloc(1, sizeof(*w));
    if (!w)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    w->h = h;
    w->sink = sink;
    w->src = src;
    w->allow_nonfinite = pa && pa->is_set && pa->v.b;
    if (strcmp(dts, "f32") == 0)
        w->dt = HFW_F32;
    else if (strcmp(dts, "f16") == 0)
        w->dt = HFW_F16;
    else if (strcmp(dts, "bf16") == 0)
        w->dt = HFW_BF16;
    else {
        st = h->set_error(h, QB_E_INVALID, "dtype '%s': hf-dense writes f32, f16 or bf16", dts);
        goto out;
    }
    n = src->info->n_tensors;
    w->block = 1;
    for (i = 0; i < n; i++) {
        const qb_tensor_info *ti;
        int64_t rows, cols;
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            goto out;
        rows = qb_tensor_rows(ti);
        cols = qb_tensor_cols(ti);
        if (rows < 1 || cols < 1) {
            st = h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': empty matrix view",
                              src->source_path, ti->name);
            goto out;
        }
        if ((size_t)(hfw_block_rows(rows, cols) * cols) > w->block)
            w->block = (size_t)(hfw_block_rows(rows, cols) * cols);
    }
    w->order = qbk_malloc((n ? n : 1) * sizeof(*w->order));
    /* two blocks: the tied-head comparison reads embedding and head side
     * by side; writing uses the first */
    w->fbuf = qbk_malloc(2 * w->block * sizeof(float));
    w->bbuf = qbk_malloc(w->block * 4);
    if (!w->order || !w->fbuf || !w->bbuf) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    if ((st = hfw_arch(h, src, &phi3)) != QB_OK)
        goto out;
    if ((st = hfw_tie_plan(w, &drop, &tie)) != QB_OK)
        goto out;
    if ((st = hfw_plan_build(h, src, w->dt, phi3, drop, max_shard, w->order, &w->plan)) != QB_OK)
        goto out;
    if ((st = hfw_config_text(h, src->source_path, src->info->config_json, w->dt, tie,
                              &w->config_text)) != QB_OK)
        goto out;
    memcpy(order, w->order, n * sizeof(*order));
out:
    if (st != QB_OK) {
        hfw_free(w);
        return st;
    }
    *out = w;
    return QB_OK;
}

/* One row block split among parallel_for workers: piece i reads rows
 * [row0 + i*per, ...) into its own part of the block and encodes them. */
typedef struct hfw_job {
    hfw_writer *w;
    size_t index;
    const char *name;
    int64_t row0, n_rows, cols, per;
} hfw_job;

static qb_status hfw_job_run(void *arg, size_t i)
{
    const hfw_job *j = arg;
    const qb_model_src *src = j->w->src;
    int64_t r = (int64_t)i * j->per, n;
    size_t off;
    qb_status st;

    if (r >= j->n_rows)
        return QB_OK;
    n = j->n_rows - r < j->per ? j->n_rows - r : j->per;
    off = (size_t)r * (size_t)j->cols;
    if ((st = src->read_rows(src->handle, j->index, j->row0 + r, n, j->w->fbuf + off)) != QB_OK)
        return st;
    {
        /* Never silently wrong: rounding a value beyond the dtype's range
         * would write infinity, and a NaN from the source would pass into
         * the model unnoticed. */
        static const qb_dtype qdt[] = {[HFW_F32] = QB_DT_F32, [HFW_F16] = QB_DT_F16,
                                       [HFW_BF16] = QB_DT_BF16};
        size_t cnt = (size_t)n * (size_t)j->cols;
        qbk_encode_bad why;
        size_t k = qbk_encode_check(qdt[j->w->dt], j->w->fbuf + off, cnt, j->w->allow_nonfinite,
                                    &why);
        if (k < cnt) {
            float v = j->w->fbuf[off + k];
            long long row = (long long)(j->row0 + r) + (long long)(k / (size_t)j->cols);
            long long col = (long long)(k % (size_t)j->cols);
            if (why == QBK_ENCODE_NONFINITE)
                return j->w->h->set_error(j->w->h, QB_E_FORMAT,
                                          "%s: %s: element [%lld, %lld] is %g in the source "
                                          "(convert --allow-nonfinite keeps such values)",
                                          j->w->src->source_path, j->name, row, col, (double)v);
            return j->w->h->set_error(j->w->h, QB_E_RANGE,
                                      "%s: %s: element [%lld, %lld] = %.9g is beyond the range "
                                      "of dtype %s (it would be written as infinity)",
                                      j->w->src->source_path, j->name, row, col, (double)v,
                                      qbk_encode_dtype_name(qdt[j->w->dt]));
        }
    }
    hfw_encode(j->w->dt, j->w->fbuf + off, (size_t)n * (size_t)j->cols,
               j->w->bbuf + off * hfw_dtype_size(j->w->dt));
    return QB_OK;
}

/* Streams all rows of source tensor `index` into the open shard, a block
 * at a time; within a block the reads (dequantization, for a quantized
 * source) and conversions run on the host's threads, and the block is
 * appended once they are all done, so the file stays in row order. */
static qb_status hfw_stream(hfw_writer *w, size_t index)
{
    const qb_model_src *src = w->src;
    const qb_tensor_info *ti;
    int64_t rows, br;
    size_t es = hfw_dtype_size(w->dt), pieces;
    hfw_job j;
    qb_status st;

    if ((st = src->tensor_info(src->handle, index, &ti)) != QB_OK)
        return st;
    rows = qb_tensor_rows(ti);
    j.w = w;
    j.index = index;
    j.name = ti->name;
    j.cols = qb_tensor_cols(ti);
    br = hfw_block_rows(rows, j.cols);
    for (j.row0 = 0; j.row0 < rows; j.row0 += br) {
        j.n_rows = rows - j.row0 < br ? rows - j.row0 : br;
        if (w->h->cancelled(w->h))
            return w->h->set_error(w->h, QB_E_CANCELLED, "%s: cancelled", ti->name);
        pieces = w->h->thread_count(w->h);
        if (pieces < 1)
            pieces = 1;
        if ((int64_t)pieces > j.n_rows)
            pieces = (size_t)j.n_rows;
        j.per = (j.n_rows + (int64_t)pieces - 1) / (int64_t)pieces;
        if ((st = w->h->parallel_for(w->h, pieces, hfw_job_run, &j)) != QB_OK)
            return st;
        if ((st = qbk_st_writer_write(w->cur, w->bbuf, (size_t)j.n_rows * (size_t)j.cols * es)) != QB_OK)
            return st;
    }
    return QB_OK;
}

static qb_status hfw_write_tensor(qb_writer_handle handle, size_t index)
{
    hfw_writer *w = handle;
    const hfw_plan *p = &w->plan;
    const hfw_tensor *t;
    size_t o;
    qb_status st;

    if (w->next >= p->n_src || w->order[w->next] != index)
        return w->h->set_error(w->h, QB_E_INTERNAL,
                               "hf-dense writer: tensor %zu written out of the planned order", index);
    w->next++;
    o = p->out_of[index];
    if (o == HFW_DROPPED)
        return QB_OK; /* the tied lm_head, checked equal to the embedding in begin */
    t = &p->t[o];
    if (!w->cur) {
        char name[64];
        if (t->shard != w->next_shard || o != p->sh.first[t->shard] || index != t->part[0])
            return w->h->set_error(w->h, QB_E_INTERNAL, "hf-dense writer: shard %u out of order",
                                   t->shard);
        qbk_shards_name(&p->sh, t->shard, name, sizeof(name));
        if ((st = hfw_st_open(w->h, w->sink, name, p, p->sh.first[t->shard],
                              p->sh.first[t->shard + 1], w->dt, &w->cur)) != QB_OK)
            return st;
        w->next_shard++;
    }
    if ((st = hfw_stream(w, index)) != QB_OK)
        return st;
    if (index == t->part[t->n_parts - 1] && o + 1 == p->sh.first[t->shard + 1]) {
        st = qbk_st_writer_close(w->cur, NULL, NULL);
        w->cur = NULL;
    }
    return st;
}

static qb_status hfw_finish(qb_writer_handle handle)
{
    hfw_writer *w = handle;
    const qb_host *h = w->h;
    const qb_model_info *mi = w->src->info;
    qb_status st = QB_OK;

    if (w->next != w->plan.n_src || w->cur || w->next_shard != w->plan.sh.n) {
        st = h->set_error(h, QB_E_INTERNAL, "hf-dense writer: finish after %zu of %zu tensors",
                          w->next, w->plan.n_src);
        goto out;
    }
    if ((st = hfw_write_text(h, w->sink, "config.json", w->config_text)) != QB_OK)
        goto out;
    /* Tokenizer files and generation_config.json: the one implementation
     * every writer and the host share (qbk_hf_sidefiles.h). */
    if ((st = qbk_hf_write_tokenizer_files(h, w->sink, mi)) != QB_OK)
        goto out;
    if (w->plan.sh.n > 1)
        st = hfw_write_index(h, w->sink, &w->plan);
out:
    hfw_free(w);
    return st;
}

static void hfw_abort(qb_writer_handle handle)
{
    hfw_free(handle);
}

const qb_writer_vtable hfd_writer_vtable = {
    .struct_size = sizeof(qb_writer_vtable),
    .supports = hfw_supports,
    .begin = hfw_begin,
    .write_tensor = hfw_write_tensor,
    .finish = hfw_finish,
    .abort = hfw_abort,
};
