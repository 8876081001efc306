/*
 * Tests of the hf-dense reader: its sources compiled in and driven through
 * the plugin entry with a fake host, plus the built plugin library loaded
 * with dlopen. Values are compared bit for bit with the generator's
 * weights recomputed from the seed (tests/gen/gen_hf_dense.h), not with
 * anything read back through the parser.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/quantbridge.h>

#include "gen_hf_dense.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_st_writer.h"
#include "qbt_json_refusals.h"

static char *tmp;
static const qb_host *host;
static const qb_plugin *plugin;
static const qb_reader_vtable *rd;

static void setup(void)
{
    qb_negotiation neg = {sizeof(neg), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    tmp = qbt_tmpdir("hfd");
    ck_assert_ptr_nonnull(tmp);
    host = qbt_host();
    ck_assert_int_eq(qb_plugin_entry_v1(&neg, host, &plugin), QB_OK);
    ck_assert_str_eq(plugin->name, "hf-dense");
    rd = plugin->reader;
    ck_assert_ptr_nonnull(rd);
    /* the host requires both grid functions or neither; dense has none */
    ck_assert_ptr_null(rd->get_grid_info);
    ck_assert_ptr_null(rd->read_grid);
    qbt_host_clear_error();
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

static char *path_in(const char *name)
{
    static char buf[8][1024];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, 1024, "%s/%s", tmp, name);
    return p;
}

static qbt_hfd_spec spec(const char *arch, const char *dtype, int shards, int tied)
{
    qbt_hfd_spec s = {.arch = arch, .dtype = dtype, .layers = 2, .hidden = 64, .intermediate = 96,
                      .vocab = 40, .tied = tied, .shards = shards, .seed = 7};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    return s;
}

/* Probes `path` as the host would: siblings of the directory and its config.json. */
static int probe(const char *path, int is_dir)
{
    qb_probe_input in;
    char dir[1024], cfg[1100];
    char **names = NULL;
    void *text = NULL;
    size_t len;
    int score;

    snprintf(dir, sizeof(dir), "%s", path);
    if (!is_dir)
        *strrchr(dir, '/') = '\0';
    ck_assert_int_eq(host->list_dir(host, dir, &names), QB_OK);
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    if (host->read_small_file(host, cfg, 4u << 20, &text, &len) != QB_OK)
        text = NULL;
    memset(&in, 0, sizeof(in));
    in.struct_size = sizeof(in);
    in.path = path;
    in.is_dir = is_dir;
    in.main_file = is_dir ? NULL : path;
    in.siblings = (const char *const *)names;
    in.config_json = text;
    score = rd->probe(plugin->ctx, &in);
    host->free_list(host, names);
    host->free(host, text);
    return score;
}

/* Opens the checkpoint written from s and checks every tensor: names,
 * shapes, encodings and all values, bit for bit. */
static void check_all(const qbt_hfd_spec *s, const char *path)
{
    qb_reader_handle r = NULL;
    qb_model_info mi;
    qbt_hfd_tensor *gt = NULL;
    size_t n = 0, i, j;

    ck_assert_int_eq(qbt_hfd_tensors(s, &gt, &n), 0);
    ck_assert_msg(rd->open(plugin->ctx, path, NULL, &r) == QB_OK, "open: %s", qbt_host_last_error());
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(rd->get_model_info(r, &mi), QB_OK);
    ck_assert_str_eq(mi.architecture, s->arch);
    ck_assert_str_eq(mi.source_format, "hf-dense");
    ck_assert_ptr_nonnull(strstr(mi.config_json, "\"num_hidden_layers\": 2"));
    ck_assert_ptr_nonnull(mi.generation_config_json);
    ck_assert_ptr_nonnull(strstr(mi.generation_config_json, "eos_token_id"));
    ck_assert_ptr_nonnull(mi.tokenizer_dir); /* tokenizer_config.json is written */
    ck_assert_uint_eq(mi.n_tensors, n);

    for (i = 0; i < n; i++) {
        qb_tensor_info ti;
        const qbt_hfd_tensor *g = &gt[i];
        size_t numel = qbt_hfd_numel(g);
        float *want = malloc(numel * sizeof(float)), *got = malloc(numel * sizeof(float));
        int64_t rows;
        ck_assert_ptr_nonnull(want);
        ck_assert_ptr_nonnull(got);
        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        ck_assert_int_eq(rd->get_tensor_info(r, i, &ti), QB_OK);
        /* single file and shards keep the writing order: (file, offset) */
        ck_assert_str_eq(ti.name, g->name);
        ck_assert_uint_eq(ti.n_dims, (uint32_t)g->n_dims);
        ck_assert_int_eq(ti.dims[0], g->dims[0]);
        if (g->n_dims == 2)
            ck_assert_int_eq(ti.dims[1], g->dims[1]);
        ck_assert_str_eq(ti.source_encoding, s->dtype);
        ck_assert_int_eq(ti.has_grid, 0);
        rows = qb_tensor_rows(&ti);
        ck_assert_int_eq(rows * qb_tensor_cols(&ti), (int64_t)numel);
        qbt_hfd_fill(s, g, want);
        for (j = 0; j < numel; j++)
            want[j] = qbt_hfd_round(s->dtype, want[j]);
        memset(got, 0xff, numel * sizeof(float));
        ck_assert_int_eq(rd->read_rows(r, i, 0, rows, got), QB_OK);
        ck_assert_msg(memcmp(got, want, numel * sizeof(float)) == 0, "%s: values differ", g->name);
        free(want);
        free(got);
    }
    rd->close(r);
    free(gt);
}

START_TEST(values_bf16_single)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(values_f16_single)
{
    qbt_hfd_spec s = spec("mistral", "f16", 1, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(values_f32_single)
{
    qbt_hfd_spec s = spec("llama", "f32", 1, 1);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(values_bf16_sharded)
{
    qbt_hfd_spec s = spec("qwen2", "bf16", 3, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(values_f16_sharded_qwen3)
{
    qbt_hfd_spec s = spec("qwen3", "f16", 2, 1);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(values_f32_sharded_gemma2)
{
    qbt_hfd_spec s = spec("gemma2", "f32", 4, 1);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(values_sharded_large_embedding)
{
    /* an embedding larger than a fair shard still gives every shard tensors */
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 4000, .shards = 5, .seed = 11};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, tmp);
}
END_TEST

START_TEST(arch_tensor_sets)
{
    /* the generator's tensor sets are what each architecture has */
    qbt_hfd_spec q2 = spec("qwen2", "bf16", 1, 1), q3 = spec("qwen3", "bf16", 1, 0),
                 g2 = spec("gemma2", "bf16", 1, 1), ll = spec("llama", "bf16", 1, 0);
    qbt_hfd_tensor *t;
    size_t n, i;
    int bias = 0, qn = 0, ff = 0, head = 0;
    ck_assert_int_eq(qbt_hfd_tensors(&q2, &t, &n), 0);
    for (i = 0; i < n; i++)
        bias += strstr(t[i].name, "_proj.bias") != NULL;
    free(t);
    ck_assert_int_eq(bias, 6);
    ck_assert_int_eq(qbt_hfd_tensors(&q3, &t, &n), 0);
    for (i = 0; i < n; i++)
        qn += strstr(t[i].name, "self_attn.q_norm.weight") || strstr(t[i].name, "self_attn.k_norm.weight");
    free(t);
    ck_assert_int_eq(qn, 4);
    ck_assert_int_eq(qbt_hfd_tensors(&g2, &t, &n), 0);
    for (i = 0; i < n; i++) {
        ff += strstr(t[i].name, "feedforward_layernorm") != NULL;
        head += strcmp(t[i].name, "lm_head.weight") == 0;
    }
    free(t);
    ck_assert_int_eq(ff, 4);
    ck_assert_int_eq(head, 0);
    ck_assert_int_eq(qbt_hfd_tensors(&ll, &t, &n), 0);
    ck_assert_str_eq(t[n - 1].name, "lm_head.weight");
    ck_assert_int_eq(n, 1 + 2 * 9 + 2);
    free(t);
}
END_TEST

START_TEST(row_ranges)
{
    qbt_hfd_spec s = spec("llama", "bf16", 2, 0);
    qb_reader_handle r = NULL;
    qbt_hfd_tensor *gt;
    size_t n, i, k;
    float *want, got[5 * 96 + 1];

    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(qbt_hfd_tensors(&s, &gt, &n), 0);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_OK);
    for (i = 0; i < n; i++)
        if (strcmp(gt[i].name, "model.layers.1.mlp.down_proj.weight") == 0)
            break;
    ck_assert_uint_lt(i, n);
    ck_assert_int_eq(gt[i].dims[0], 64);
    ck_assert_int_eq(gt[i].dims[1], 96);
    want = malloc(qbt_hfd_numel(&gt[i]) * sizeof(float));
    qbt_hfd_fill(&s, &gt[i], want);
    got[5 * 96] = 12345.0f;
    ck_assert_int_eq(rd->read_rows(r, i, 59, 5, got), QB_OK);
    for (k = 0; k < 5 * 96; k++)
        ck_assert_float_eq(got[k], qbt_hfd_round("bf16", want[59 * 96 + k]));
    ck_assert_float_eq(got[5 * 96], 12345.0f); /* nothing written past the range */
    ck_assert_int_eq(rd->read_rows(r, i, 64, 0, got), QB_OK);

    ck_assert_int_eq(rd->read_rows(r, i, 60, 5, got), QB_E_RANGE);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "down_proj"));
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), tmp));
    ck_assert_int_eq(rd->read_rows(r, i, -1, 1, got), QB_E_RANGE);
    ck_assert_int_eq(rd->read_rows(r, i, 0, -1, got), QB_E_RANGE);
    ck_assert_int_eq(rd->read_rows(r, i, INT64_MAX, INT64_MAX, got), QB_E_RANGE);
    ck_assert_int_eq(rd->read_rows(r, n, 0, 1, got), QB_E_RANGE);
    {
        qb_tensor_info ti = {.struct_size = sizeof(ti)};
        ck_assert_int_eq(rd->get_tensor_info(r, n, &ti), QB_E_RANGE);
    }
    /* a 1-D tensor is one row */
    for (k = 0; k < n; k++)
        if (strcmp(gt[k].name, "model.norm.weight") == 0)
            break;
    ck_assert_int_eq(rd->read_rows(r, k, 0, 1, got), QB_OK);
    ck_assert_int_eq(rd->read_rows(r, k, 1, 1, got), QB_E_RANGE);
    rd->close(r);
    free(want);
    free(gt);
}
END_TEST

/* Rewrites config.json with an extra member. */
static void add_to_config(const char *member)
{
    void *text = NULL;
    size_t len;
    char *buf;
    ck_assert_int_eq(host->read_small_file(host, path_in("config.json"), 1 << 20, &text, &len), QB_OK);
    buf = malloc(len + strlen(member) + 8);
    snprintf(buf, len + strlen(member) + 8, "{\n  %s,%s", member, (char *)text + 1);
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), buf), 0);
    free(buf);
    host->free(host, text);
}

START_TEST(quantization_config_refused)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    qb_reader_handle r = (qb_reader_handle)1;
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_LIKELY);
    add_to_config("\"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4}");
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_NONE);
    ck_assert_int_eq(probe(path_in("model.safetensors"), 0), QB_PROBE_NONE);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'awq'"));
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), path_in("config.json")));
}
END_TEST

START_TEST(compression_config_refused)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    qb_reader_handle r = NULL;
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    add_to_config("\"compression_config\": {\"quant_method\": \"compressed-tensors\"}");
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_NONE);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "compressed-tensors"));
}
END_TEST

START_TEST(quantize_sidecar_refused)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    qb_reader_handle r = NULL;
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(qbt_write_text(path_in("quantize_config.json"), "{\"bits\": 4}"), 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_NONE);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "quantize_config.json"));
}
END_TEST

START_TEST(probe_scores)
{
    qbt_hfd_spec s = spec("llama", "f16", 2, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_LIKELY);
    ck_assert_int_eq(probe(path_in("model-00001-of-00002.safetensors"), 0), QB_PROBE_LIKELY);
    ck_assert_int_eq(probe(path_in("config.json"), 0), QB_PROBE_NONE);
    remove(path_in("config.json"));
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_NONE);
    ck_assert_int_eq(probe(path_in("model-00001-of-00002.safetensors"), 0), QB_PROBE_WEAK);
}
END_TEST

START_TEST(probe_no_weights)
{
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{\"model_type\": \"llama\"}"), 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_NONE);
}
END_TEST

START_TEST(integer_tensor_refused)
{
    qbt_st_writer *w = qbt_st_writer_new();
    float f[4] = {1, 2, 3, 4};
    int32_t q[4] = {1, 2, 3, 4};
    int64_t d[2] = {2, 2};
    qb_reader_handle r = NULL;
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{\"model_type\": \"llama\"}"), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "a.weight", "F32", 2, d, f, sizeof(f)), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "a.qweight", "I32", 2, d, q, sizeof(q)), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, path_in("model.safetensors")), 0);
    qbt_st_writer_free(w);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_WEAK);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'a.qweight'"));
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "I32"));
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), path_in("model.safetensors")));
}
END_TEST

START_TEST(empty_tensor_refused)
{
    qbt_st_writer *w = qbt_st_writer_new();
    int64_t d[2] = {0, 4};
    qb_reader_handle r = NULL;
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{\"model_type\": \"llama\"}"), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "e.weight", "BF16", 2, d, NULL, 0), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, path_in("model.safetensors")), 0);
    qbt_st_writer_free(w);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'e.weight'"));
}
END_TEST

START_TEST(scalar_is_one_element)
{
    qbt_st_writer *w = qbt_st_writer_new();
    float v = -2.5f, got = 0;
    qb_reader_handle r = NULL;
    qb_tensor_info ti = {.struct_size = sizeof(ti)};
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{\"model_type\": \"llama\"}"), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "s", "F32", 0, NULL, &v, 4), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, path_in("model.safetensors")), 0);
    qbt_st_writer_free(w);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_OK);
    ck_assert_int_eq(rd->get_tensor_info(r, 0, &ti), QB_OK);
    ck_assert_uint_eq(ti.n_dims, 1);
    ck_assert_int_eq(ti.dims[0], 1);
    ck_assert_int_eq(rd->read_rows(r, 0, 0, 1, &got), QB_OK);
    ck_assert_float_eq(got, -2.5f);
    rd->close(r);
}
END_TEST

START_TEST(missing_config_refused)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    qb_reader_handle r = NULL;
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    remove(path_in("config.json"));
    ck_assert_int_eq(rd->open(plugin->ctx, path_in("model.safetensors"), NULL, &r), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "config.json"));
}
END_TEST

START_TEST(no_model_type_refused)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    qb_reader_handle r = NULL;
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{\"hidden_size\": 64}"), 0);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "model_type"));
}
END_TEST

/* config.json is read by the one strict parser (sdk/kit/qbk_json.h), as a
 * directory and as a named file beside it. */
START_TEST(strict_json_config)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    qbt_json_refusals(tmp, "config.json", "model_type", NULL, qbt_json_open_reader,
                      (void *)plugin, NULL);
    qbt_json_refusals(tmp, "config.json", "model_type", "model.safetensors",
                      qbt_json_open_reader, (void *)plugin, NULL);
}
END_TEST

START_TEST(malformed_file_reported)
{
    qb_reader_handle r = NULL;
    static const unsigned char bad[16] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    FILE *f;
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{\"model_type\": \"llama\"}"), 0);
    f = fopen(path_in("model.safetensors"), "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bad, 1, sizeof(bad), f), sizeof(bad));
    fclose(f);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_POSSIBLE);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), path_in("model.safetensors")));
}
END_TEST

START_TEST(open_file_path)
{
    /* naming the weights file of an unsharded checkpoint, or one shard of a
     * sharded one, opens the checkpoint */
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, path_in("model.safetensors"));
}
END_TEST

START_TEST(open_shard_path)
{
    qbt_hfd_spec s = spec("llama", "f16", 3, 0);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    check_all(&s, path_in("model-00002-of-00003.safetensors"));
}
END_TEST

typedef struct par_arg {
    qb_reader_handle r;
    size_t index;
    int64_t row0, rows, cols;
    const float *want;
    int ok;
} par_arg;

static void *par_read(void *p)
{
    par_arg *a = p;
    float *got = malloc((size_t)(a->rows * a->cols) * sizeof(float));
    int it;
    a->ok = 1;
    for (it = 0; it < 50 && got; it++)
        if (rd->read_rows(a->r, a->index, a->row0, a->rows, got) != QB_OK ||
            memcmp(got, a->want + a->row0 * a->cols, (size_t)(a->rows * a->cols) * sizeof(float)))
            a->ok = 0;
    free(got);
    return NULL;
}

START_TEST(concurrent_reads)
{
    qbt_hfd_spec s = spec("llama", "bf16", 1, 0);
    qb_reader_handle r = NULL;
    qbt_hfd_tensor *gt;
    size_t n, j, numel;
    float *want;
    pthread_t th[4];
    par_arg a[4];
    int k;

    ck_assert(plugin->flags & QB_PLUGIN_CONCURRENT_READS);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(qbt_hfd_tensors(&s, &gt, &n), 0);
    ck_assert_int_eq(rd->open(plugin->ctx, tmp, NULL, &r), QB_OK);
    numel = qbt_hfd_numel(&gt[0]); /* embedding [40, 64] */
    want = malloc(numel * sizeof(float));
    qbt_hfd_fill(&s, &gt[0], want);
    for (j = 0; j < numel; j++)
        want[j] = qbt_hfd_round("bf16", want[j]);
    for (k = 0; k < 4; k++) {
        a[k] = (par_arg){r, 0, 10 * k, 10, 64, want, 0};
        ck_assert_int_eq(pthread_create(&th[k], NULL, par_read, &a[k]), 0);
    }
    for (k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        ck_assert_int_eq(a[k].ok, 1);
    }
    rd->close(r);
    free(want);
    free(gt);
}
END_TEST

START_TEST(built_plugin_via_dlopen)
{
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    char lib[2048];
    void *so;
    qb_plugin_entry_fn entry;
    const qb_plugin *p = NULL;
    qb_negotiation neg = {sizeof(neg), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    qb_reader_handle r = NULL;
    qbt_hfd_spec s = spec("qwen2", "bf16", 2, 0);
    qb_model_info mi;
    float got[64], want[64];
    qbt_hfd_tensor *gt;
    size_t n, j;

    ck_assert_ptr_nonnull(bd);
    snprintf(lib, sizeof(lib), "%s/lib/quantbridge/plugins/libqb_hf_dense.so", bd);
    so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(so != NULL, "dlopen %s: %s", lib, dlerror());
    *(void **)&entry = dlsym(so, QB_PLUGIN_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    ck_assert_ptr_null(dlsym(so, "hfd_host")); /* nothing else exported */
    ck_assert_int_eq(entry(&neg, host, &p), QB_OK);
    ck_assert_uint_eq(neg.plugin_abi, QB_ABI_CURRENT);
    ck_assert_str_eq(p->name, "hf-dense");
    ck_assert_ptr_nonnull(p->reader);
    ck_assert_int_eq(qbt_hfd_write(&s, tmp), 0);
    ck_assert_int_eq(p->reader->open(p->ctx, tmp, NULL, &r), QB_OK);
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(p->reader->get_model_info(r, &mi), QB_OK);
    ck_assert_str_eq(mi.architecture, "qwen2");
    ck_assert_int_eq(qbt_hfd_tensors(&s, &gt, &n), 0);
    ck_assert_uint_eq(mi.n_tensors, n);
    /* last row of the embedding */
    {
        float *all = malloc(qbt_hfd_numel(&gt[0]) * sizeof(float));
        qbt_hfd_fill(&s, &gt[0], all);
        for (j = 0; j < 64; j++)
            want[j] = qbt_hfd_round("bf16", all[39 * 64 + j]);
        free(all);
    }
    ck_assert_int_eq(p->reader->read_rows(r, 0, 39, 1, got), QB_OK);
    ck_assert_mem_eq(got, want, sizeof(want));
    p->reader->close(r);
    free(gt);
    /* an ABI range the plugin cannot meet */
    neg.host_abi_min = QB_MAKE_ABI(2, 0);
    neg.host_abi_max = QB_MAKE_ABI(2, 0);
    ck_assert_int_eq(entry(&neg, host, &p), QB_E_ABI);
}
END_TEST

/* Writes config.json and a model.safetensors of 2x2 F32 tensors `names`
 * (NULL-terminated), plus model.embed_tokens.weight of embed_rows x
 * embed_cols when embed_rows > 0. */
static void write_layers(const char *config, const char *const *names, int64_t embed_rows,
                         int64_t embed_cols)
{
    qbt_st_writer *w = qbt_st_writer_new();
    float f[4] = {1, 2, 3, 4};
    int64_t d[2] = {2, 2};
    size_t i;
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), config), 0);
    for (i = 0; names[i]; i++)
        ck_assert_int_eq(qbt_st_writer_add(w, names[i], "F32", 2, d, f, sizeof(f)), 0);
    if (embed_rows > 0) {
        int64_t e[2] = {embed_rows, embed_cols};
        float *v = calloc((size_t)(embed_rows * embed_cols), sizeof(float));
        ck_assert_ptr_nonnull(v);
        ck_assert_int_eq(qbt_st_writer_add(w, "model.embed_tokens.weight", "F32", 2, e, v,
                                           (size_t)(embed_rows * embed_cols) * sizeof(float)),
                         0);
        free(v);
    }
    ck_assert_int_eq(qbt_st_writer_save(w, path_in("model.safetensors")), 0);
    qbt_st_writer_free(w);
}

/* open() result; the reader is closed again when it opened. */
static qb_status try_open(void)
{
    qb_reader_handle r = NULL;
    qb_status st;
    qbt_host_clear_error();
    st = rd->open(plugin->ctx, tmp, NULL, &r);
    if (st == QB_OK)
        rd->close(r);
    return st;
}

static void assert_error_has(const char *a, const char *b)
{
    ck_assert_msg(strstr(qbt_host_last_error(), a) && strstr(qbt_host_last_error(), b),
                  "want '%s' and '%s' in: %s", a, b, qbt_host_last_error());
}

START_TEST(broken_config_reported)
{
    static const char *const names[] = {"a.weight", NULL};
    /* unparsable or not an object beside safetensors: POSSIBLE, so open()
     * runs and names config.json (WEAK left the host naming the directory) */
    write_layers("{\"model_type\": \"llama\", ", names, 0, 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_POSSIBLE);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has(path_in("config.json"), "JSON");
    write_layers("[{\"model_type\": \"llama\"}]", names, 0, 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_POSSIBLE);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has(path_in("config.json"), "object");
    /* an object without model_type stays WEAK (maybe another format's config) */
    write_layers("{\"a\": 1}", names, 0, 0);
    ck_assert_int_eq(probe(tmp, 1), QB_PROBE_WEAK);
}
END_TEST

START_TEST(layer_count_checked)
{
    static const char *const two[] = {"model.layers.0.a.weight", "model.layers.1.a.weight", NULL};
    static const char *const gap[] = {"model.layers.0.a.weight", "model.layers.2.a.weight", NULL};
    static const char *const three[] = {"model.layers.0.a.weight", "model.layers.1.a.weight",
                                        "model.layers.2.a.weight", NULL};
    write_layers("{\"model_type\": \"llama\", \"num_hidden_layers\": 2}", two, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK);
    write_layers("{\"model_type\": \"llama\", \"num_hidden_layers\": 3}", two, 0, 0);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has(path_in("config.json"), "num_hidden_layers is 3");
    write_layers("{\"model_type\": \"llama\", \"num_hidden_layers\": 1e300}", two, 0, 0);
    ck_assert_int_eq(try_open(), QB_E_FORMAT); /* refused before any cast */
    assert_error_has(path_in("config.json"), "num_hidden_layers is 1e+300");
    write_layers("{\"model_type\": \"llama\", \"hidden_size\": -4}", two, 0, 0);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has(path_in("config.json"), "hidden_size is -4");
    write_layers("{\"model_type\": \"llama\"}", gap, 0, 0);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has("model.layers.1 ", "model.safetensors");
    /* DeepSeek-V3 style: MTP layers after num_hidden_layers */
    write_layers("{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, "
                 "\"num_nextn_predict_layers\": 1}",
                 three, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK);
}
END_TEST

START_TEST(layer_kinds_served)
{
    static const char *const missing[] = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.q_proj.weight",
        "model.layers.1.post_attention_layernorm.weight", "model.layers.2.self_attn.q_proj.weight",
        "model.layers.2.post_attention_layernorm.weight", NULL};
    /* dense layer 0, MoE layers 1-2 (first_k_dense_replace / mlp_only_layers) */
    static const char *const mixed[] = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.norm.weight",
        "model.layers.1.self_attn.q_proj.weight", "model.layers.1.mlp.gate.weight",
        "model.layers.1.mlp.experts.0.w1.weight", "model.layers.2.self_attn.q_proj.weight",
        "model.layers.2.mlp.gate.weight", "model.layers.2.mlp.experts.0.w1.weight", NULL};
    static const char *const mixed_missing[] = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.norm.weight",
        "model.layers.1.self_attn.q_proj.weight", "model.layers.1.mlp.gate.weight",
        "model.layers.1.mlp.experts.0.w1.weight", "model.layers.2.self_attn.q_proj.weight",
        "model.layers.2.mlp.gate.weight", NULL};
    /* hybrid: attention and Mamba mixers, neither a subset of the other */
    static const char *const hybrid[] = {
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.norm.weight",
        "model.layers.1.mamba.in_proj.weight", "model.layers.1.norm.weight", NULL};
    /* layers are not compared: the consumer names what is missing (verify
     * reports it, the writer's plan knows the architecture) */
    write_layers("{\"model_type\": \"llama\", \"num_hidden_layers\": 3}", missing, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK);
    write_layers("{\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 3}", mixed, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK);
    write_layers("{\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 3}", mixed_missing,
                 0, 0);
    ck_assert_int_eq(try_open(), QB_OK);
    write_layers("{\"model_type\": \"jamba\", \"num_hidden_layers\": 2}", hybrid, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK);
}
END_TEST

START_TEST(mlp_projection_missing)
{
    /* one layer: nothing to compare with, but a gated MLP has all three */
    static const char *const gated[] = {"model.layers.0.mlp.gate_proj.weight",
                                        "model.layers.0.mlp.down_proj.weight", NULL};
    static const char *const plain[] = {"model.layers.0.mlp.up_proj.weight",
                                        "model.layers.0.mlp.down_proj.weight", NULL};
    static const char *const lone[] = {"model.layers.0.mlp.experts.0.gate_proj.weight", NULL};
    static const char *const fused[] = {"model.layers.0.mlp.gate_up_proj.weight",
                                        "model.layers.0.mlp.down_proj.weight", NULL};
    write_layers("{\"model_type\": \"llama\", \"num_hidden_layers\": 1}", gated, 0, 0);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has("'model.layers.0.mlp.up_proj.weight' is missing", "model.safetensors");
    write_layers("{\"model_type\": \"nemotron\", \"num_hidden_layers\": 1}", plain, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK); /* non-gated MLP */
    write_layers("{\"model_type\": \"phi3\", \"num_hidden_layers\": 1}", fused, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK); /* Phi-3's fused gate_up_proj */
    write_layers("{\"model_type\": \"llama\", \"num_hidden_layers\": 1}", lone, 0, 0);
    ck_assert_int_eq(try_open(), QB_OK); /* a lone gate_proj: for the consumer to explain */
}
END_TEST

START_TEST(embedding_vs_config)
{
    static const char *const none[] = {NULL};
    write_layers("{\"model_type\": \"llama\", \"hidden_size\": 4, \"vocab_size\": 8}", none, 8, 4);
    ck_assert_int_eq(try_open(), QB_OK);
    write_layers("{\"model_type\": \"llama\", \"hidden_size\": 4, \"vocab_size\": 10}", none, 8, 4);
    ck_assert_int_eq(try_open(), QB_OK); /* fewer rows than vocab_size: left alone */
    write_layers("{\"model_type\": \"llama\", \"hidden_size\": 1099511627776}", none, 8, 4);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has("model.embed_tokens.weight", "hidden_size");
    write_layers("{\"model_type\": \"llama\", \"hidden_size\": 4, \"vocab_size\": 6}", none, 8, 4);
    ck_assert_int_eq(try_open(), QB_E_FORMAT);
    assert_error_has("model.embed_tokens.weight", "vocab_size is 6");
    write_layers("{\"model_type\": \"opt\", \"hidden_size\": 8, \"word_embed_proj_dim\": 4}", none,
                 8, 4);
    ck_assert_int_eq(try_open(), QB_OK);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("hf-dense");
    TCase *v = tcase_create("values"), *e = tcase_create("errors"), *x = tcase_create("plugin");
    tcase_add_checked_fixture(v, setup, teardown);
    tcase_add_checked_fixture(e, setup, teardown);
    tcase_add_checked_fixture(x, setup, teardown);
    tcase_add_test(v, values_bf16_single);
    tcase_add_test(v, values_f16_single);
    tcase_add_test(v, values_f32_single);
    tcase_add_test(v, values_bf16_sharded);
    tcase_add_test(v, values_f16_sharded_qwen3);
    tcase_add_test(v, values_f32_sharded_gemma2);
    tcase_add_test(v, values_sharded_large_embedding);
    tcase_add_test(v, arch_tensor_sets);
    tcase_add_test(v, row_ranges);
    tcase_add_test(v, scalar_is_one_element);
    tcase_add_test(v, open_file_path);
    tcase_add_test(v, open_shard_path);
    tcase_add_test(e, quantization_config_refused);
    tcase_add_test(e, compression_config_refused);
    tcase_add_test(e, quantize_sidecar_refused);
    tcase_add_test(e, probe_scores);
    tcase_add_test(e, probe_no_weights);
    tcase_add_test(e, integer_tensor_refused);
    tcase_add_test(e, empty_tensor_refused);
    tcase_add_test(e, missing_config_refused);
    tcase_add_test(e, no_model_type_refused);
    tcase_add_test(e, strict_json_config);
    tcase_add_test(e, malformed_file_reported);
    tcase_add_test(e, broken_config_reported);
    tcase_add_test(e, layer_count_checked);
    tcase_add_test(e, layer_kinds_served);
    tcase_add_test(e, embedding_vs_config);
    tcase_add_test(e, mlp_projection_missing);
    tcase_add_test(x, concurrent_reads);
    tcase_add_test(x, built_plugin_via_dlopen);
    suite_add_tcase(s, v);
    suite_add_tcase(s, e);
    suite_add_tcase(s, x);
    return s;
}
