/*
 * Unit tests of the hf-dense writer: its sources compiled in, driven
 * directly through the plugin's writer vtable with a fake model source
 * (values a function of tensor, row and column; every read_rows request
 * recorded) and a sink that keeps the files in memory. Checks what the CLI
 * tests cannot see: the row blocks requested stay bounded (a block, or one
 * row when a row is larger), the shard cut, and the order contract.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include <quantbridge/base/qb_stdir.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/quantbridge.h>

#include "hfw.h"
#include "qbk_json_edit.h"
#include "qbk_alloc.h"
#include "qbk_hf_sidefiles.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_mem_sink.h"

/* ---- fake model source --------------------------------------------------- */

#define FK_MAX 8

typedef struct fake_src {
    qb_model_src src;
    qb_model_info info;
    qb_tensor_info ti[FK_MAX];
    char names[FK_MAX][64];
    size_t n;
    int64_t max_request;   /* largest n_rows * cols asked for */
    int64_t max_whole;     /* largest rows * cols of a tensor */
    int64_t rows_read[FK_MAX];
} fake_src;

static float fk_value(size_t t, int64_t r, int64_t c)
{
    /* distinct, exactly representable, some not exact in f16 */
    return (float)(t + 1) * 0.5f + (float)r * 0.25f - (float)(c % 1024) / 4096.0f;
}

static qb_status fk_tensor_info(void *h, size_t i, const qb_tensor_info **out)
{
    fake_src *f = h;
    if (i >= f->n)
        return QB_E_RANGE;
    *out = &f->ti[i];
    return QB_OK;
}

static qb_status fk_find(void *h, const char *name, size_t *i)
{
    fake_src *f = h;
    size_t k;
    for (k = 0; k < f->n; k++)
        if (strcmp(f->names[k], name) == 0) {
            *i = k;
            return QB_OK;
        }
    return QB_E_NOT_FOUND;
}

static qb_status fk_read_rows(void *h, size_t i, int64_t row0, int64_t n_rows, float *dst)
{
    fake_src *f = h;
    int64_t cols = qb_tensor_cols(&f->ti[i]), r, c;
    ck_assert_int_le(row0 + n_rows, qb_tensor_rows(&f->ti[i]));
    if (n_rows * cols > f->max_request)
        f->max_request = n_rows * cols;
    f->rows_read[i] += n_rows;
    for (r = 0; r < n_rows; r++)
        for (c = 0; c < cols; c++)
            dst[r * cols + c] = fk_value(i, row0 + r, c);
    return QB_OK;
}

static void fk_add(fake_src *f, const char *name, uint32_t n_dims, int64_t d0, int64_t d1)
{
    qb_tensor_info *t = &f->ti[f->n];
    snprintf(f->names[f->n], sizeof(f->names[0]), "%s", name);
    memset(t, 0, sizeof(*t));
    t->struct_size = sizeof(*t);
    t->name = f->names[f->n];
    t->n_dims = n_dims;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->source_dtype = QB_DT_F32;
    t->source_encoding = "f32";
    if (qb_tensor_rows(t) * qb_tensor_cols(t) > f->max_whole)
        f->max_whole = qb_tensor_rows(t) * qb_tensor_cols(t);
    f->n++;
    f->info.n_tensors = f->n;
}

static void fk_init(fake_src *f, const char *config)
{
    memset(f, 0, sizeof(*f));
    f->info.struct_size = sizeof(f->info);
    f->info.architecture = "llama";
    f->info.config_json = config;
    f->info.source_format = "fake";
    f->src.struct_size = sizeof(f->src);
    f->src.handle = f;
    f->src.info = &f->info;
    f->src.source_path = "fake-src";
    f->src.reader_name = "fake";
    f->src.tensor_info = fk_tensor_info;
    f->src.find = fk_find;
    f->src.read_rows = fk_read_rows;
}

/* ---- the plugin ------------------------------------------------------------- */

static const qb_plugin *plugin;

static void setup(void)
{
    qb_negotiation neg = {sizeof(neg), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    ck_assert_int_eq(qb_plugin_entry_v1(&neg, qbt_host(), &plugin), QB_OK);
    ck_assert_ptr_nonnull(plugin->writer);
    qbt_host_clear_error();
}

/* Params as the host hands them: every declared option present. */
static void params(qb_param p[3], const char *dtype, int64_t max_shard)
{
    memset(p, 0, 3 * sizeof(*p));
    p[0].struct_size = p[1].struct_size = p[2].struct_size = sizeof(qb_param);
    p[0].key = "dtype";
    p[0].type = QB_PARAM_STRING;
    p[0].is_set = 1;
    p[0].v.s = dtype;
    p[1].key = "max_shard_size";
    p[1].type = QB_PARAM_SIZE;
    p[1].is_set = 1;
    p[1].v.i = max_shard;
    p[2].type = QB_PARAM_END;
}

/* begin + every write_tensor in order + finish; returns the status of the
 * first failure. */
static qb_status write_all(fake_src *f, qbt_mem_sink *m, const char *dtype, int64_t max_shard)
{
    const qb_writer_vtable *wv = plugin->writer;
    qb_param p[3];
    size_t order[FK_MAX], i;
    qb_writer_handle w = NULL;
    qb_status st;
    params(p, dtype, max_shard);
    st = wv->begin(plugin->ctx, &m->sink, &f->src, p, order, &w);
    if (st != QB_OK) {
        fprintf(stderr, "begin: %s\n", qbt_host_last_error());
        ck_assert_ptr_null(w);
        return st;
    }
    for (i = 0; i < f->n; i++) {
        if ((st = wv->write_tensor(w, order[i])) != QB_OK) {
            wv->abort(w);
            return st;
        }
    }
    return wv->finish(w);
}

/* The safetensors file `name` in the sink: header parsed, data pointer. */
static cJSON *st_header(qbt_mem_file *f, const uint8_t **data)
{
    uint64_t n = 0;
    int i;
    cJSON *h;
    ck_assert_uint_ge(f->len, 8);
    for (i = 0; i < 8; i++)
        n |= (uint64_t)f->data[i] << (8 * i);
    ck_assert_uint_eq(n % 8, 0);
    h = cJSON_ParseWithLength((const char *)f->data + 8, (size_t)n);
    ck_assert(cJSON_IsObject(h));
    *data = f->data + 8 + n;
    return h;
}

START_TEST(row_blocks_stay_bounded_and_values_are_exact)
{
    fake_src f;
    qbt_mem_sink m;
    qbt_mem_file *out;
    const uint8_t *data;
    cJSON *h, *t, *off;
    size_t i;
    int64_t r, c;

    fk_init(&f, "{\"model_type\": \"llama\"}");
    fk_add(&f, "big.weight", 2, 3000, 1000);     /* 3M elements: several blocks */
    fk_add(&f, "wide.weight", 2, 3, 3 << 20);    /* a row larger than a block */
    fk_add(&f, "vec.bias", 1, 5, 0);
    qbt_mem_sink_init(&m);
    ck_assert_int_eq(write_all(&f, &m, "f32", (int64_t)1 << 40), QB_OK);
    /* never a whole tensor at once: at most 2^20 elements, or one row */
    ck_assert_int_le(f.max_request, 3 << 20);
    ck_assert_int_le(f.max_request, f.max_whole / 3);
    ck_assert_int_eq(f.rows_read[0], 3000);
    ck_assert_int_eq(f.rows_read[1], 3);
    out = qbt_mem_sink_find(&m, "model.safetensors");
    ck_assert_ptr_nonnull(out);
    ck_assert(out->closed);
    h = st_header(out, &data);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(h, "__metadata__"), "format")->valuestring,
                     "pt");
    for (i = 0; i < f.n; i++) {
        int64_t rows = qb_tensor_rows(&f.ti[i]), cols = qb_tensor_cols(&f.ti[i]);
        uint64_t o0;
        t = cJSON_GetObjectItem(h, f.names[i]);
        ck_assert_ptr_nonnull(t);
        ck_assert_str_eq(cJSON_GetObjectItem(t, "dtype")->valuestring, "F32");
        off = cJSON_GetObjectItem(t, "data_offsets");
        o0 = (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble;
        ck_assert_uint_eq((uint64_t)cJSON_GetArrayItem(off, 1)->valuedouble - o0,
                          (uint64_t)(rows * cols * 4));
        for (r = 0; r < rows; r += rows > 7 ? 997 : 1)
            for (c = 0; c < cols; c += cols > 1000 ? 4099 : 1) {
                uint32_t got;
                float want = fk_value(i, r, c);
                memcpy(&got, data + o0 + (uint64_t)(r * cols + c) * 4, 4);
                ck_assert_uint_eq(got, qb_f32_bits(want));
            }
    }
    /* 1-D keeps its shape */
    t = cJSON_GetObjectItem(h, "vec.bias");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(t, "shape")), 1);
    cJSON_Delete(h);
    ck_assert_ptr_nonnull(qbt_mem_sink_find(&m, "config.json"));
    ck_assert_ptr_nonnull(qbt_mem_sink_find(&m, "generation_config.json"));
    ck_assert_ptr_null(qbt_mem_sink_find(&m, "model.safetensors.index.json"));
    for (i = 0; i < m.n; i++)
        ck_assert_msg(m.files[i]->closed, "%s left open", m.files[i]->name);
    qbt_mem_sink_free(&m);
}
END_TEST

START_TEST(shards_cut_greedily_with_a_large_tensor_alone)
{
    fake_src f;
    qbt_mem_sink m;
    qbt_mem_file *idx;
    cJSON *j, *wm;
    static const char *const want[][2] = {
        {"a.weight", "model-00001-of-00003.safetensors"},
        {"b.weight", "model-00001-of-00003.safetensors"},
        {"c.weight", "model-00002-of-00003.safetensors"},
        {"d.weight", "model-00003-of-00003.safetensors"},
        {"e.weight", "model-00003-of-00003.safetensors"},
    };
    size_t i;

    fk_init(&f, "{\"model_type\": \"llama\"}");
    /* bf16 bytes: 40, 40, 200, 40, 20; limit 100 */
    fk_add(&f, "a.weight", 2, 2, 10);
    fk_add(&f, "b.weight", 2, 2, 10);
    fk_add(&f, "c.weight", 2, 10, 10);
    fk_add(&f, "d.weight", 2, 2, 10);
    fk_add(&f, "e.weight", 1, 10, 0);
    qbt_mem_sink_init(&m);
    ck_assert_int_eq(write_all(&f, &m, "bf16", 100), QB_OK);
    ck_assert_ptr_null(qbt_mem_sink_find(&m, "model.safetensors"));
    idx = qbt_mem_sink_find(&m, "model.safetensors.index.json");
    ck_assert_ptr_nonnull(idx);
    j = cJSON_ParseWithLength((const char *)idx->data, idx->len);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq((int)cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "total_size")->valuedouble,
                     40 + 40 + 200 + 40 + 20);
    wm = cJSON_GetObjectItem(j, "weight_map");
    ck_assert_int_eq(cJSON_GetArraySize(wm), 5);
    for (i = 0; i < 5; i++)
        ck_assert_str_eq(cJSON_GetObjectItem(wm, want[i][0])->valuestring, want[i][1]);
    cJSON_Delete(j);
    for (i = 0; i < 3; i++) {
        char name[64];
        qbt_mem_file *sf;
        const uint8_t *data;
        cJSON *h;
        snprintf(name, sizeof(name), "model-%05zu-of-00003.safetensors", i + 1);
        sf = qbt_mem_sink_find(&m, name);
        ck_assert_ptr_nonnull(sf);
        h = st_header(sf, &data);
        /* the file is exactly header + its tensors' bytes */
        ck_assert_uint_eq(sf->len - (size_t)(data - sf->data), i == 0 ? 80 : i == 1 ? 200 : 60);
        cJSON_Delete(h);
    }
    qbt_mem_sink_free(&m);
}
END_TEST

START_TEST(out_of_order_write_is_refused)
{
    fake_src f;
    qbt_mem_sink m;
    qb_param p[3];
    size_t order[FK_MAX];
    qb_writer_handle w = NULL;
    const qb_writer_vtable *wv = plugin->writer;

    fk_init(&f, "{\"model_type\": \"llama\"}");
    fk_add(&f, "a.weight", 2, 2, 10);
    fk_add(&f, "b.weight", 2, 2, 10);
    qbt_mem_sink_init(&m);
    params(p, "f16", 1000);
    ck_assert_int_eq(wv->begin(plugin->ctx, &m.sink, &f.src, p, order, &w), QB_OK);
    ck_assert_int_eq(wv->write_tensor(w, order[1]), QB_E_INTERNAL);
    wv->abort(w); /* frees everything, closes the open file (ASan checks) */
    qbt_mem_sink_free(&m);
    /* finish before every tensor was written */
    qbt_mem_sink_init(&m);
    ck_assert_int_eq(wv->begin(plugin->ctx, &m.sink, &f.src, p, order, &w), QB_OK);
    ck_assert_int_eq(wv->write_tensor(w, order[0]), QB_OK);
    ck_assert_int_eq(wv->finish(w), QB_E_INTERNAL);
    qbt_mem_sink_free(&m);
}
END_TEST

START_TEST(bad_config_and_mismatched_architecture_are_refused)
{
    fake_src f;
    qbt_mem_sink m;
    fk_init(&f, "[1]");
    fk_add(&f, "a.weight", 2, 2, 10);
    qbt_mem_sink_init(&m);
    ck_assert_int_eq(write_all(&f, &m, "f16", 1000), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "fake-src"));
    fk_init(&f, "{\"model_type\": \"qwen2\"}");
    fk_add(&f, "a.weight", 2, 2, 10);
    ck_assert_int_eq(write_all(&f, &m, "f16", 1000), QB_E_MISMATCH);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "qwen2"));
    ck_assert_uint_eq(m.n, 0); /* nothing written */
    qbt_mem_sink_free(&m);
}
END_TEST

START_TEST(json_edit_keeps_members_as_written)
{
    static const char src[] =
        "{ \"a\" : 1.0, \"quantization_config\": {\"x\": [1, {\"y\": \"}]\\\"\"}], \"q\": null},\n"
        "\t\"big\": 1000000000000000019884624838656, \"s\": \"a,b}\\\\\", \"torch_dtype\": \"bfloat16\",\n"
        "  \"arr\": [ 1.50, -2e-05 ], \"compression_config\": 3 }";
    static const char *const drop[] = {"quantization_config", "compression_config", NULL};
    static const char *const keys[] = {"torch_dtype", "tie_word_embeddings", NULL};
    static const char *const vals[] = {"\"float32\"", "true", NULL};
    char *out = NULL;
    cJSON *j;
    ck_assert_int_eq(qbk_json_edit(qbt_host(), "t", src, drop, keys, vals, &out), QB_OK);
    /* numbers and strings byte for byte */
    ck_assert_msg(strstr(out, "\"a\" : 1.0") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"big\": 1000000000000000019884624838656") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"arr\": [ 1.50, -2e-05 ]") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"s\": \"a,b}\\\\\"") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "\"torch_dtype\": \"float32\"") != NULL, "%s", out);
    ck_assert_ptr_null(strstr(out, "quantization_config"));
    ck_assert_ptr_null(strstr(out, "compression_config"));
    ck_assert_ptr_null(strstr(out, "bfloat16"));
    j = cJSON_Parse(out);
    ck_assert(cJSON_IsObject(j));
    ck_assert_int_eq(cJSON_GetArraySize(j), 6);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "tie_word_embeddings")));
    cJSON_Delete(j);
    qbk_free(out);
    /* an empty object gains the keys; a non-object is refused */
    ck_assert_int_eq(qbk_json_edit(qbt_host(), "t", " {}", drop, keys, vals, &out), QB_OK);
    j = cJSON_Parse(out);
    ck_assert_int_eq(cJSON_GetArraySize(j), 2);
    cJSON_Delete(j);
    qbk_free(out);
    ck_assert_int_eq(qbk_json_edit(qbt_host(), "bad.json", "[1]", drop, keys, vals, &out),
                     QB_E_FORMAT);
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "bad.json"));
}
END_TEST

/* Both writers (hf-dense here, sm86-w4a16 config_out.c) take the side-file
 * list and the config clean-up from qbk_hf_sidefiles: the hf-dense text
 * edit and the kit's cJSON strip leave the same members. */
START_TEST(config_cleanup_and_side_files_follow_the_kit_rule)
{
    static const char src[] = "{\"model_type\": \"llama\", \"quantization_config\": {\"bits\": 4},"
                              " \"compression_config\": {}, \"hidden_size\": 8}";
    static const char *const copied[] = {"tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                                         "special_tokens_map.json", "spiece.model",
                                         "tokenizer.tiktoken", "sentencepiece.bpe.model",
                                         "chat_template.jinja", NULL};
    static const char *const not_copied[] = {"config.json", "model.safetensors", "quant_config.json",
                                             "TOKENIZER.JSON", "tokenizer.json.bak", "", NULL};
    char *out = NULL;
    cJSON *edited, *stripped;
    const cJSON *m;
    size_t i;

    ck_assert_int_eq(hfw_config_text(qbt_host(), "config.json", src, HFW_F16, -1, &out), QB_OK);
    edited = cJSON_Parse(out);
    stripped = cJSON_Parse(src);
    qbk_hf_config_strip_quant(stripped);
    cJSON_DeleteItemFromObjectCaseSensitive(edited, "torch_dtype");
    for (i = 0; qbk_hf_quant_config_keys[i]; i++)
        ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(edited, qbk_hf_quant_config_keys[i]));
    ck_assert_int_eq(cJSON_GetArraySize(edited), cJSON_GetArraySize(stripped));
    cJSON_ArrayForEach(m, stripped)
        ck_assert_msg(cJSON_GetObjectItemCaseSensitive(edited, m->string) != NULL, "%s", m->string);
    cJSON_Delete(edited);
    cJSON_Delete(stripped);
    qbk_free(out);
    qbk_hf_config_strip_quant(NULL); /* no-op */

    for (i = 0; copied[i]; i++)
        ck_assert_msg(qb_stdir_is_tokenizer_file(copied[i]), "%s", copied[i]);
    for (i = 0; not_copied[i]; i++)
        ck_assert_msg(!qb_stdir_is_tokenizer_file(not_copied[i]), "%s", not_copied[i]);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("hf-dense-writer-unit");
    TCase *tc = tcase_create("unit");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, row_blocks_stay_bounded_and_values_are_exact);
    tcase_add_test(tc, shards_cut_greedily_with_a_large_tensor_alone);
    tcase_add_test(tc, out_of_order_write_is_refused);
    tcase_add_test(tc, bad_config_and_mismatched_architecture_are_refused);
    tcase_add_test(tc, json_edit_keeps_members_as_written);
    tcase_add_test(tc, config_cleanup_and_side_files_follow_the_kit_rule);
    suite_add_tcase(s, tc);
    return s;
}

