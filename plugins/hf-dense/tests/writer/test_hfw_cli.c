/*
 * Tests of the hf-dense writer through the built `quantbridge` ($QB_TEST_BIN,
 * in-tree config and plugins). Every output is read back with the host's
 * strict safetensors parser (which also checks a shard index: every tensor
 * mapped once, in its shard) and compared bit for bit with ground truth
 * the fixture generators give: the hf-dense generator's seeded weights, the
 * GPTQ generator's integer codes and fp16 scales, the GGUF generator's
 * known Hugging Face tensors; and for W4A16 the sm86-w4a16 reader's decoded
 * rows (the plugin loaded here with the shared fake host).
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <quantbridge/quantbridge.h>

#include "qbt_run.h"
#include "gen_gguf.h"
#include "gen_gptq.h"
#include "gen_hf_dense.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_st_writer.h"

static char *tmp;
static const qb_host *host;

static void setup(void)
{
    tmp = qbt_tmpdir("hfw");
    ck_assert_ptr_nonnull(tmp);
    ck_assert_ptr_nonnull(getenv("QB_TEST_BIN"));
    host = qbt_host();
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

/* ---- helpers ------------------------------------------------------------ */

static char *sub(const char *name)
{
    static char b[8][1024];
    static int k;
    char *p = b[k++ & 7];
    snprintf(p, 1024, "%s/%s", tmp, name);
    return p;
}

/* convert SRC -> DST with the hf-dense writer and extra args; must succeed. */
static void convert_ok(const char *src, const char *dst, const char *extra)
{
    char args[4096], *out;
    int rc;
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense %s", src,
             dst, extra);
    rc = qbt_run_line(args, &out);
    ck_assert_msg(rc == 0, "%s\n-> %d: %s", args, rc, out);
    free(out);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long n;
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

static cJSON *json_file(const char *path)
{
    char *t = slurp(path, NULL);
    cJSON *j = cJSON_Parse(t);
    ck_assert_msg(cJSON_IsObject(j), "%s: not a JSON object", path);
    free(t);
    return j;
}

/* The written checkpoint, through the host's strict parser. */
static qb_st_set *open_out(const char *dir)
{
    qb_st_set *set = NULL;
    qb_status st = host->safetensors->open_dir(host, dir, &set);
    ck_assert_msg(st == QB_OK, "%s: %s", dir, qbt_host_last_error());
    return set;
}

static const qb_st_tensor *need(const qb_st_set *set, const char *name)
{
    const qb_st_tensor *t = host->safetensors->find(set, name);
    ck_assert_msg(t != NULL, "output lacks %s", name);
    return t;
}

/* Output tensor `t` holds exactly `want` (n float32 values) stored as
 * `dtype`: F32 the same bits; F16/BF16 each value rounded to nearest even. */
static void check_vals(const qb_st_tensor *t, const char *dtype, const float *want, size_t n)
{
    size_t i;
    ck_assert_str_eq(t->dtype_name, dtype);
    if (strcmp(dtype, "F32") == 0) {
        ck_assert_uint_eq(t->n_bytes, n * 4);
        for (i = 0; i < n; i++) {
            uint32_t got;
            memcpy(&got, t->data + 4 * i, 4);
            ck_assert_msg(got == qb_f32_bits(want[i]), "%s[%zu]: %08x, want %08x (%g)", t->name,
                          i, got, qb_f32_bits(want[i]), (double)want[i]);
        }
    } else {
        ck_assert_uint_eq(t->n_bytes, n * 2);
        for (i = 0; i < n; i++) {
            uint16_t got, w = strcmp(dtype, "F16") == 0 ? qb_f32_to_f16(want[i])
                                                         : qb_f32_to_bf16(want[i]);
            memcpy(&got, t->data + 2 * i, 2);
            ck_assert_msg(got == w, "%s[%zu]: %04x, want %04x", t->name, i, got, w);
        }
    }
}

static void check_shape(const qb_st_tensor *t, int n_dims, const int64_t *dims)
{
    int d;
    ck_assert_msg((int)t->n_dims == n_dims, "%s: %u dims, want %d", t->name, t->n_dims, n_dims);
    for (d = 0; d < n_dims; d++)
        ck_assert_msg(t->dims[d] == dims[d], "%s: dim %d is %lld, want %lld", t->name, d,
                      (long long)t->dims[d], (long long)dims[d]);
}

/* config.json of an output: no quantization description, torch_dtype set. */
static cJSON *check_config(const char *dir, const char *torch_dtype)
{
    char p[1200];
    cJSON *c;
    snprintf(p, sizeof(p), "%s/config.json", dir);
    c = json_file(p);
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "quantization_config"));
    ck_assert_ptr_null(cJSON_GetObjectItem(c, "compression_config"));
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(c, "torch_dtype")));
    ck_assert_str_eq(cJSON_GetObjectItem(c, "torch_dtype")->valuestring, torch_dtype);
    snprintf(p, sizeof(p), "%s/generation_config.json", dir);
    cJSON_Delete(json_file(p));
    return c;
}

/* Every tensor of the hf-dense fixture `s` (stored as s->dtype) in the
 * output `dir`, written as `dtype`, with nothing else there. */
static void check_hfd_fixture(const qbt_hfd_spec *s, const char *dir, const char *dtype)
{
    qbt_hfd_tensor *gt;
    size_t n, i, j;
    qb_st_set *set = open_out(dir);
    ck_assert_int_eq(qbt_hfd_tensors(s, &gt, &n), 0);
    ck_assert_uint_eq(host->safetensors->count(set), n);
    for (i = 0; i < n; i++) {
        size_t ne = qbt_hfd_numel(&gt[i]);
        float *v = malloc(ne * sizeof(float));
        const qb_st_tensor *t = need(set, gt[i].name);
        qbt_hfd_fill(s, &gt[i], v);
        for (j = 0; j < ne; j++)
            v[j] = qbt_hfd_round(s->dtype, v[j]); /* what the reader returns */
        check_shape(t, gt[i].n_dims, gt[i].dims);
        check_vals(t, dtype, v, ne);
        free(v);
    }
    free(gt);
    host->safetensors->close(set);
}

static qbt_hfd_spec hspec(const char *arch, const char *dtype, int tied)
{
    qbt_hfd_spec s = {.arch = arch, .dtype = dtype, .layers = 2, .hidden = 64, .intermediate = 96,
                      .vocab = 40, .tied = tied, .shards = 1, .seed = 5};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    return s;
}

/* ---- hf-dense sources --------------------------------------------------- */

START_TEST(hf_bf16_to_f32_exact_with_side_files)
{
    qbt_hfd_spec s = hspec("llama", "bf16", 0);
    char *a, *b;
    size_t la, lb;
    cJSON *c;
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    /* a tokenizer file to copy and a file that is no tokenizer's */
    ck_assert_int_eq(qbt_write_text(sub("src/tokenizer.json"), "{\"version\": \"1.0\", \"x\": [1]}"), 0);
    ck_assert_int_eq(qbt_write_text(sub("src/README.md"), "not a tokenizer file"), 0);
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    check_hfd_fixture(&s, sub("out"), "F32");
    ck_assert(exists(sub("out/model.safetensors")));
    ck_assert(!exists(sub("out/model.safetensors.index.json")));
    ck_assert(!exists(sub("out/README.md")));
    c = check_config(sub("out"), "float32");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "tie_word_embeddings")));
    ck_assert_str_eq(cJSON_GetObjectItem(c, "model_type")->valuestring, "llama");
    cJSON_Delete(c);
    /* the other members as the source wrote them (floats stay floats) */
    a = slurp(sub("out/config.json"), NULL);
    ck_assert_msg(strstr(a, "\"rope_theta\": 500000.0") != NULL, "%s", a);
    ck_assert_msg(strstr(a, "\"attention_dropout\": 0.0") != NULL, "%s", a);
    free(a);
    a = slurp(sub("src/tokenizer.json"), &la);
    b = slurp(sub("out/tokenizer.json"), &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(a, b, la);
    free(a);
    free(b);
    a = slurp(sub("src/tokenizer_config.json"), &la);
    b = slurp(sub("out/tokenizer_config.json"), &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(a, b, la);
    free(a);
    free(b);
    /* the source's generation config, as it was */
    a = slurp(sub("src/generation_config.json"), NULL);
    b = slurp(sub("out/generation_config.json"), NULL);
    ck_assert_ptr_nonnull(strstr(b, a));
    free(a);
    free(b);
}
END_TEST

START_TEST(hf_f32_to_f16_and_bf16_rne)
{
    qbt_hfd_spec s = hspec("qwen2", "f32", 0);
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    convert_ok(sub("src"), sub("o16"), "--option dtype=f16");
    convert_ok(sub("src"), sub("obf"), "--option dtype=bf16");
    convert_ok(sub("src"), sub("odef"), "");
    check_hfd_fixture(&s, sub("o16"), "F16");
    check_hfd_fixture(&s, sub("obf"), "BF16");
    check_hfd_fixture(&s, sub("odef"), "F16"); /* default dtype f16 */
    cJSON_Delete(check_config(sub("o16"), "float16"));
    cJSON_Delete(check_config(sub("obf"), "bfloat16"));
}
END_TEST

/* Rounding ties, subnormals, overflow, signed zero, NaN: expected bits
 * worked out by hand from IEEE 754 binary16 / bfloat16, independent of
 * the conversion code. */
START_TEST(rne_hand_checked_values)
{
    static const float v[] = {
        1.0f + 0x1p-11f,          /* f16 tie between 1 and 1+2^-10: even -> 1.0 */
        1.0f + 3 * 0x1p-11f,      /* tie, odd below -> up to 1+2^-9 */
        1.0f + 0x1p-11f + 0x1p-20f, /* just above the tie -> up */
        65504.0f,                 /* f16 max; bf16 rounds up to 2^16 */
        65520.0f,                 /* f16 halfway to 2^16 -> inf: refused (below) */
        0x1p-24f,                 /* smallest f16 subnormal */
        0x1p-25f,                 /* half of it: tie with 0 -> 0 */
        -0.0f,
        1.0f + 0x1p-8f,           /* bf16 tie between 1 and 1+2^-7: even -> 1.0 */
        1.0f + 3 * 0x1p-8f,       /* bf16 tie, odd -> 1+2^-6 */
        -2.5f,
        3.0e38f,                  /* bf16: 0x7f61b1e6 -> 0x7f62; f16: inf, refused */
    };
    /* the f16 run without the two values beyond its range: 65519 rounds
     * down to the f16 max, -1 is exact */
    static const size_t f16_bad[] = {4, 11};
    static const float f16_ok[] = {65519.0f, -1.0f};
    static const uint16_t f16[] = {0x3c00, 0x3c02, 0x3c01, 0x7bff, 0x7bff, 0x0001,
                                   0x0000, 0x8000, 0x3c04, 0x3c0c, 0xc100, 0xbc00};
    static const uint16_t bf16[] = {0x3f80, 0x3f80, 0x3f80, 0x4780, 0x4780, 0x3380,
                                    0x3300, 0x8000, 0x3f80, 0x3f82, 0xc020, 0x7f62};
    const size_t n = sizeof(v) / sizeof(v[0]);
    int64_t d[1] = {(int64_t)n};
    qbt_st_writer *w = qbt_st_writer_new();
    const char *dt[2] = {"f16", "bf16"};
    const uint16_t *want[2] = {f16, bf16};
    int k;
    size_t i;

    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_write_text(sub("src/config.json"), "{\"model_type\": \"llama\"}"), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "x.weight", "F32", 1, d, v, sizeof(v)), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, sub("src/model.safetensors")), 0);
    qbt_st_writer_free(w);
    for (k = 0; k < 2; k++) {
        char out[32], args[64];
        qb_st_set *set;
        const qb_st_tensor *t;
        if (k == 0) {
            /* a value beyond f16's range is an error naming it, not inf */
            char line[4096], *msg;
            float v2[sizeof(v) / sizeof(v[0])];
            snprintf(line, sizeof(line), "convert --source '%s' --output '%s' --writer hf-dense "
                     "--option dtype=f16", sub("src"), sub("ofail"));
            ck_assert_int_eq(qbt_run_line(line, &msg), 1);
            ck_assert_msg(strstr(msg, "x.weight") && strstr(msg, "[0, 4]") &&
                              strstr(msg, "65520"), "%s", msg);
            ck_assert(!exists(sub("ofail")));
            free(msg);
            memcpy(v2, v, sizeof(v));
            for (i = 0; i < 2; i++)
                v2[f16_bad[i]] = f16_ok[i];
            w = qbt_st_writer_new();
            ck_assert_int_eq(qbt_st_writer_add(w, "x.weight", "F32", 1, d, v2, sizeof(v2)), 0);
            ck_assert_int_eq(qbt_st_writer_save(w, sub("src/model.safetensors")), 0);
            qbt_st_writer_free(w);
        } else {
            w = qbt_st_writer_new();
            ck_assert_int_eq(qbt_st_writer_add(w, "x.weight", "F32", 1, d, v, sizeof(v)), 0);
            ck_assert_int_eq(qbt_st_writer_save(w, sub("src/model.safetensors")), 0);
            qbt_st_writer_free(w);
        }
        snprintf(out, sizeof(out), "o%s", dt[k]);
        snprintf(args, sizeof(args), "--option dtype=%s", dt[k]);
        convert_ok(sub("src"), sub(out), args);
        set = open_out(sub(out));
        t = need(set, "x.weight");
        check_shape(t, 1, d);
        for (i = 0; i < n; i++) {
            uint16_t got;
            memcpy(&got, t->data + 2 * i, 2);
            ck_assert_msg(got == want[k][i], "%s[%zu] (%a): %04x, want %04x", dt[k], i,
                          (double)v[i], got, want[k][i]);
        }
        host->safetensors->close(set);
    }
}
END_TEST

START_TEST(sharded_output_has_a_valid_index)
{
    qbt_hfd_spec s = hspec("llama", "bf16", 0);
    char p[1200];
    cJSON *idx, *wm, *e;
    uint64_t total = 0;
    size_t i, n_map = 0, n_files = 0;
    qb_st_set *set;
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    convert_ok(sub("src"), sub("out"), "--option dtype=f32 --option max_shard_size=100KB");
    check_hfd_fixture(&s, sub("out"), "F32");
    ck_assert(!exists(sub("out/model.safetensors")));
    snprintf(p, sizeof(p), "%s/model.safetensors.index.json", sub("out"));
    idx = json_file(p);
    wm = cJSON_GetObjectItem(idx, "weight_map");
    ck_assert(cJSON_IsObject(wm));
    set = open_out(sub("out"));
    for (i = 0; i < host->safetensors->count(set); i++)
        total += host->safetensors->tensor(set, i)->n_bytes;
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(idx, "metadata"), "total_size")));
    ck_assert_uint_eq((uint64_t)cJSON_GetObjectItem(cJSON_GetObjectItem(idx, "metadata"),
                                                    "total_size")->valuedouble, total);
    cJSON_ArrayForEach(e, wm)
    {
        const qb_st_tensor *t = need(set, e->string);
        const char *slash = strrchr(t->file, '/');
        ck_assert_str_eq(slash ? slash + 1 : t->file, e->valuestring);
        n_map++;
    }
    ck_assert_uint_eq(n_map, host->safetensors->count(set)); /* names are unique in a set */
    /* several files, each at most 100 KB of data unless one tensor is larger */
    {
        const char *last = NULL;
        uint64_t bytes = 0, biggest = 0;
        for (i = 0; i < host->safetensors->count(set); i++) {
            const qb_st_tensor *t = host->safetensors->tensor(set, i);
            if (!last || strcmp(last, t->file) != 0) {
                if (last)
                    ck_assert_msg(bytes <= 100000 || bytes == biggest, "%s: %llu bytes", last,
                                  (unsigned long long)bytes);
                n_files++;
                last = t->file;
                bytes = biggest = 0;
            }
            bytes += t->n_bytes;
            if (t->n_bytes > biggest)
                biggest = t->n_bytes;
            ck_assert_msg(strstr(t->file, "-of-0000") != NULL, "%s", t->file);
        }
    }
    ck_assert_uint_ge(n_files, 3);
    snprintf(p, sizeof(p), "model-00001-of-%05zu.safetensors", n_files);
    {
        char *txt = cJSON_PrintUnformatted(wm);
        ck_assert_ptr_nonnull(strstr(txt, p));
        free(txt);
    }
    host->safetensors->close(set);
    cJSON_Delete(idx);
    /* and that sharded output reads back as a source */
    convert_ok(sub("out"), sub("again"), "--option dtype=f32");
    check_hfd_fixture(&s, sub("again"), "F32");
}
END_TEST

START_TEST(tied_model_has_no_head)
{
    qbt_hfd_spec s = hspec("qwen3", "bf16", 1);
    cJSON *c;
    qb_st_set *set;
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    convert_ok(sub("src"), sub("out"), "--option dtype=bf16");
    check_hfd_fixture(&s, sub("out"), "BF16"); /* bf16 -> bf16: the same bits */
    set = open_out(sub("out"));
    ck_assert_ptr_null(host->safetensors->find(set, "lm_head.weight"));
    host->safetensors->close(set);
    c = check_config(sub("out"), "bfloat16");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(c, "tie_word_embeddings")));
    cJSON_Delete(c);
}
END_TEST

/* A config that says tied while the source carries lm_head: dropped when
 * bit-identical to the embedding, refused when it differs. */
static void write_tied_with_head(const char *dir, int same, const char *tie_json)
{
    float e[4 * 8], hd[4 * 8], nrm[8];
    int64_t de[2] = {4, 8}, dn[1] = {8};
    char cfg[256];
    qbt_st_writer *w = qbt_st_writer_new();
    int i;
    for (i = 0; i < 32; i++) {
        e[i] = (float)(i - 16) / 64.0f;
        hd[i] = same ? e[i] : e[i] + (i == 31 ? 1.0f / 64 : 0.0f);
    }
    for (i = 0; i < 8; i++)
        nrm[i] = 1.0f + (float)i / 8;
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    snprintf(cfg, sizeof(cfg), "{\"model_type\": \"llama\"%s, \"bos_token_id\": 3, "
             "\"eos_token_id\": [4, 5]}", tie_json);
    ck_assert_int_eq(qbt_write_text(sub("tmpcfg"), cfg), 0);
    {
        char p[1200];
        snprintf(p, sizeof(p), "%s/config.json", dir);
        ck_assert_int_eq(qbt_write_text(p, cfg), 0);
    }
    ck_assert_int_eq(qbt_st_writer_add(w, "model.embed_tokens.weight", "F32", 2, de, e, sizeof(e)), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "model.norm.weight", "F32", 1, dn, nrm, sizeof(nrm)), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "lm_head.weight", "F32", 2, de, hd, sizeof(hd)), 0);
    {
        char p[1200];
        snprintf(p, sizeof(p), "%s/model.safetensors", dir);
        ck_assert_int_eq(qbt_st_writer_save(w, p), 0);
    }
    qbt_st_writer_free(w);
}

START_TEST(tied_config_with_identical_head_drops_it)
{
    qb_st_set *set;
    cJSON *g, *eos;
    char p[1200];
    write_tied_with_head(sub("src"), 1, ", \"tie_word_embeddings\": true");
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    set = open_out(sub("out"));
    ck_assert_uint_eq(host->safetensors->count(set), 2);
    ck_assert_ptr_null(host->safetensors->find(set, "lm_head.weight"));
    host->safetensors->close(set);
    /* no generation config in the source: built from the config's ids */
    snprintf(p, sizeof(p), "%s/generation_config.json", sub("out"));
    g = json_file(p);
    ck_assert_int_eq(cJSON_GetObjectItem(g, "bos_token_id")->valueint, 3);
    eos = cJSON_GetObjectItem(g, "eos_token_id");
    ck_assert(cJSON_IsArray(eos));
    ck_assert_int_eq(cJSON_GetArrayItem(eos, 1)->valueint, 5);
    cJSON_Delete(g);
}
END_TEST

START_TEST(tied_config_with_different_head_is_refused)
{
    char args[4096], *out;
    write_tied_with_head(sub("src"), 0, ", \"tie_word_embeddings\": true");
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense",
             sub("src"), sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "lm_head.weight") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "tie_word_embeddings") != NULL, "%s", out);
    ck_assert(!exists(sub("out")));
    free(out);
}
END_TEST

START_TEST(untied_head_kept_and_tie_made_explicit)
{
    qb_st_set *set;
    cJSON *c;
    write_tied_with_head(sub("src"), 1, "");
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    set = open_out(sub("out"));
    ck_assert_ptr_nonnull(host->safetensors->find(set, "lm_head.weight"));
    host->safetensors->close(set);
    c = check_config(sub("out"), "float32");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(c, "tie_word_embeddings")));
    cJSON_Delete(c);
}
END_TEST

START_TEST(bad_dtype_option_is_a_usage_error)
{
    qbt_hfd_spec s = hspec("llama", "bf16", 0);
    char args[4096], *out;
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=f8", sub("src"), sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 2);
    ck_assert_msg(strstr(out, "dtype") != NULL, "%s", out);
    ck_assert(!exists(sub("out")));
    free(out);
}
END_TEST

/* dtype is the hf-dense writer's option (roles: writer). With another
 * writer it used to reach the hf-dense reader and be ignored silently;
 * now no role of the run declares it: a usage error saying who does. */
START_TEST(dtype_with_another_writer_is_a_usage_error)
{
    qbt_hfd_spec s = hspec("llama", "bf16", 0);
    char args[4096], *out;
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --option dtype=bf16",
             sub("src"), sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 2);
    ck_assert_msg(strstr(out, "--option dtype: no option dtype for reader hf-dense or writer "
                              "sm86-w4a16") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "(declared by writer compressed-tensors, writer hf-dense, writer mlx)") != NULL, "%s", out);
    ck_assert(!exists(sub("out")));
    free(out);
    /* Qualified for the reader role, which does not declare it. */
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option reader.dtype=bf16", sub("src"), sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 2);
    ck_assert_msg(strstr(out, "no option dtype for reader hf-dense") != NULL, "%s", out);
    ck_assert(!exists(sub("out")));
    free(out);
    /* And it still works where it belongs, qualified or not. */
    convert_ok(sub("src"), sub("out"), "--option writer.dtype=f32");
    cJSON_Delete(check_config(sub("out"), "float32"));
}
END_TEST

/* A tiny checkpoint of config `cfg` with F32 tensors `names` of [rows[i],
 * cols[i]] (cols NULL: 8), element j of tensor i = i * 1000 + j. */
static void write_named_cols(const char *dir, const char *cfg, const char *const *names,
                             const int64_t *rows, const int64_t *cols, int n)
{
    qbt_st_writer *w = qbt_st_writer_new();
    char p[1200];
    int i;
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    snprintf(p, sizeof(p), "%s/config.json", dir);
    ck_assert_int_eq(qbt_write_text(p, cfg), 0);
    for (i = 0; i < n; i++) {
        int64_t c = cols ? cols[i] : 8, d[2] = {rows[i], c}, j;
        float *v = malloc((size_t)(rows[i] * c) * sizeof(float));
        for (j = 0; j < rows[i] * c; j++)
            v[j] = (float)(i * 1000 + j);
        ck_assert_int_eq(qbt_st_writer_add(w, names[i], "F32", 2, d, v,
                                           (size_t)(rows[i] * c) * sizeof(float)), 0);
        free(v);
    }
    snprintf(p, sizeof(p), "%s/model.safetensors", dir);
    ck_assert_int_eq(qbt_st_writer_save(w, p), 0);
    qbt_st_writer_free(w);
}

static void write_named(const char *dir, const char *cfg, const char *const *names,
                        const int64_t *rows, int n)
{
    write_named_cols(dir, cfg, names, rows, NULL, n);
}

static const char phi3_cfg[] = "{\"model_type\": \"phi3\", \"tie_word_embeddings\": false}";

START_TEST(phi3_split_hf_source_fused_in_order)
{
    static const char *const names[] = {
        "model.embed_tokens.weight",          "model.layers.0.self_attn.v_proj.weight",
        "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
        "model.layers.0.mlp.up_proj.weight",  "model.layers.0.mlp.gate_proj.weight",
        "lm_head.weight"};
    static const int64_t rows[] = {5, 2, 4, 2, 6, 6, 5};
    qb_st_set *set;
    const qb_st_tensor *t;
    float want[8 * 12];
    int64_t j, dq[2] = {8, 8}, dg[2] = {12, 8};
    write_named(sub("src"), phi3_cfg, names, rows, 7);
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    set = open_out(sub("out"));
    ck_assert_uint_eq(host->safetensors->count(set), 4);
    /* rows q (tensor 2), k (3), v (1), whatever order the source had */
    t = need(set, "model.layers.0.self_attn.qkv_proj.weight");
    check_shape(t, 2, dq);
    for (j = 0; j < 64; j++)
        want[j] = j < 32 ? (float)(2000 + j) : j < 48 ? (float)(3000 + j - 32) : (float)(1000 + j - 48);
    check_vals(t, "F32", want, 64);
    /* rows gate (5), up (4) */
    t = need(set, "model.layers.0.mlp.gate_up_proj.weight");
    check_shape(t, 2, dg);
    for (j = 0; j < 96; j++)
        want[j] = j < 48 ? (float)(5000 + j) : (float)(4000 + j - 48);
    check_vals(t, "F32", want, 96);
    host->safetensors->close(set);
}
END_TEST

START_TEST(phi3_already_fused_passes_through)
{
    static const char *const names[] = {"model.embed_tokens.weight",
                                        "model.layers.0.self_attn.qkv_proj.weight",
                                        "model.layers.0.mlp.gate_up_proj.weight", "lm_head.weight"};
    static const int64_t rows[] = {5, 8, 12, 5};
    qb_st_set *set;
    float want[8 * 12];
    int64_t j;
    write_named(sub("src"), phi3_cfg, names, rows, 4);
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    set = open_out(sub("out"));
    ck_assert_uint_eq(host->safetensors->count(set), 4);
    for (j = 0; j < 96; j++)
        want[j] = (float)(2000 + j);
    check_vals(need(set, "model.layers.0.mlp.gate_up_proj.weight"), "F32", want, 96);
    host->safetensors->close(set);
}
END_TEST

/* Refusals: exit 1, the error names `needle`, no output left. */
static void expect_refusal_at(const char *src, const char *needle)
{
    char args[4096], *out;
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense", src,
             sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:") != NULL, "%s", out);
    ck_assert_msg(strstr(out, needle) != NULL, "want '%s' in: %s", needle, out);
    ck_assert(!exists(sub("out")));
    free(out);
}

static void expect_refusal(const char *cfg, const char *const *names, const int64_t *rows, int n,
                           const char *needle)
{
    write_named(sub("src"), cfg, names, rows, n);
    expect_refusal_at(sub("src"), needle);
}

START_TEST(phi3_missing_partner_is_refused)
{
    static const char *const names[] = {"model.embed_tokens.weight",
                                        "model.layers.0.self_attn.q_proj.weight",
                                        "model.layers.0.self_attn.k_proj.weight", "lm_head.weight"};
    static const int64_t rows[] = {5, 4, 2, 5};
    expect_refusal(phi3_cfg, names, rows, 4, "model.layers.0.self_attn.v_proj.weight");
}
END_TEST

START_TEST(phi3_fused_and_split_is_refused)
{
    static const char *const names[] = {
        "model.embed_tokens.weight", "model.layers.0.mlp.gate_up_proj.weight",
        "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
        "lm_head.weight"};
    static const int64_t rows[] = {5, 12, 6, 6, 5};
    expect_refusal(phi3_cfg, names, rows, 5, "model.layers.0.mlp.gate_up_proj.weight");
}
END_TEST

START_TEST(phi3_parts_of_different_widths_are_refused)
{
    static const char *const names[] = {"model.embed_tokens.weight",
                                        "model.layers.0.mlp.gate_proj.weight",
                                        "model.layers.0.mlp.up_proj.weight", "lm_head.weight"};
    static const int64_t rows[] = {5, 6, 6, 5}, cols[] = {8, 8, 4, 8};
    write_named_cols(sub("src"), phi3_cfg, names, rows, cols, 4);
    expect_refusal_at(sub("src"), "model.layers.0.mlp.gate_up_proj.weight");
}
END_TEST

START_TEST(untied_config_without_head_is_refused)
{
    static const char *const names[] = {"model.embed_tokens.weight", "model.norm.weight"};
    static const int64_t rows[] = {5, 1};
    expect_refusal("{\"model_type\": \"llama\", \"tie_word_embeddings\": false}", names, rows,
                   2, "lm_head.weight");
}
END_TEST

/* ---- quantized sources -------------------------------------------------- */

/* The output `dir` holds every tensor of the GPTQ/AWQ truth as F32 with
 * exactly the values the codes, scales and zeros give, and nothing else. */
static void check_qmodel(const char *dir, const qbt_qmodel *truth)
{
    qb_st_set *set = open_out(dir);
    size_t i;
    int64_t n, k;
    ck_assert_uint_eq(host->safetensors->count(set), truth->n_lin + truth->n_dense);
    for (i = 0; i < truth->n_lin; i++) {
        const qbt_qlin *l = &truth->lin[i];
        char name[160];
        float *want = malloc((size_t)(l->N * l->K) * sizeof(float));
        int64_t dims[2] = {l->N, l->K};
        const qb_st_tensor *t;
        snprintf(name, sizeof(name), "%s.weight", l->name);
        t = need(set, name);
        for (n = 0; n < l->N; n++)
            for (k = 0; k < l->K; k++)
                want[n * l->K + k] = qbt_qlin_value(l, n, k);
        check_shape(t, 2, dims);
        check_vals(t, "F32", want, (size_t)(l->N * l->K));
        free(want);
    }
    for (i = 0; i < truth->n_dense; i++) {
        const qbt_qdense *d = &truth->dense[i];
        size_t ne = (size_t)d->dims[0] * (size_t)(d->n_dims > 1 ? d->dims[1] : 1), j;
        float *want = malloc(ne * sizeof(float));
        const qb_st_tensor *t = need(set, d->name);
        for (j = 0; j < ne; j++) {
            if (strcmp(d->dtype, "F16") == 0) {
                uint16_t hb;
                memcpy(&hb, (const uint8_t *)d->data + 2 * j, 2);
                want[j] = qb_f16_to_f32(hb);
            } else {
                memcpy(&want[j], (const uint8_t *)d->data + 4 * j, 4);
            }
        }
        check_shape(t, d->n_dims, d->dims);
        check_vals(t, "F32", want, ne);
        free(want);
    }
    host->safetensors->close(set);
}

START_TEST(gptq_to_f32_equals_the_known_codes)
{
    qbt_gptq_spec g;
    qbt_qmodel *truth = NULL;
    cJSON *c;

    memset(&g, 0, sizeof(g));
    g.bits = 4;
    g.group_size = 32;
    g.sym = 0;
    g.label = 1;
    g.n_shards = 2;
    g.seed = 91;
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_gptq_write(sub("src"), &g, &truth), 0);
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    check_qmodel(sub("out"), truth);
    c = check_config(sub("out"), "float32");
    ck_assert_str_eq(cJSON_GetObjectItem(c, "model_type")->valuestring, "llama");
    cJSON_Delete(c);
    qbt_qmodel_free(truth);
    /* act-order (desc_act with a permuted g_idx), 8-bit */
    memset(&g, 0, sizeof(g));
    g.bits = 8;
    g.group_size = 32;
    g.sym = 1;
    g.act_order = 1;
    g.label = 1;
    g.n_shards = 1;
    g.seed = 92;
    ck_assert_int_eq(mkdir(sub("src8"), 0777), 0);
    ck_assert_int_eq(qbt_gptq_write(sub("src8"), &g, &truth), 0);
    convert_ok(sub("src8"), sub("out8"), "--option dtype=f32");
    check_qmodel(sub("out8"), truth);
    qbt_qmodel_free(truth);
}
END_TEST

#ifdef QBT_HAVE_AWQ
START_TEST(awq_to_f32_equals_the_known_codes)
{
    qbt_awq_spec a;
    qbt_qmodel *truth = NULL;
    memset(&a, 0, sizeof(a));
    a.zero_point = 1;
    a.group_size = 64;
    a.n_shards = 1;
    a.seed = 93;
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_awq_write(sub("src"), &a, &truth), 0);
    convert_ok(sub("src"), sub("out"), "--option dtype=f32");
    check_qmodel(sub("out"), truth);
    cJSON_Delete(check_config(sub("out"), "float32"));
    qbt_qmodel_free(truth);
}
END_TEST
#endif

static qbt_gguf_spec gspec(const char *arch, uint32_t wtype)
{
    qbt_gguf_spec s;
    memset(&s, 0, sizeof(s));
    s.arch = arch;
    s.n_layer = 2;
    s.n_embd = 64;
    s.n_ff = 96;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_vocab = 80;
    s.wtype = wtype;
    s.seed = 17;
    return s;
}

static void write_gguf(const qbt_gguf_spec *s, const char *path, qbt_hf_model *ref)
{
    qbt_gguf *g = NULL;
    ck_assert_int_eq(qbt_gguf_build_model(s, &g, ref), 0);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
}

static size_t numel(const qbt_hf_tensor *t)
{
    return (size_t)t->dims[0] * (size_t)(t->n_dims > 1 ? t->dims[1] : 1);
}

START_TEST(gguf_q4_0_to_f32_equals_the_known_weights)
{
    qbt_gguf_spec s = gspec("llama", 2); /* Q4_0 */
    qbt_hf_model ref;
    qb_st_set *set;
    size_t i;
    char p[1200];
    cJSON *tc;

    ck_assert_int_eq(mkdir(sub("g"), 0777), 0);
    write_gguf(&s, sub("g/model.gguf"), &ref);
    convert_ok(sub("g/model.gguf"), sub("out"), "--option dtype=f32");
    set = open_out(sub("out"));
    ck_assert_uint_eq(host->safetensors->count(set), ref.n);
    for (i = 0; i < ref.n; i++) {
        const qb_st_tensor *t = need(set, ref.t[i].name);
        check_shape(t, ref.t[i].n_dims, ref.t[i].dims);
        check_vals(t, "F32", ref.t[i].vals, numel(&ref.t[i]));
    }
    host->safetensors->close(set);
    cJSON_Delete(check_config(sub("out"), "float32"));
    /* GGUF carries its chat template outside tokenizer files */
    snprintf(p, sizeof(p), "%s/tokenizer_config.json", sub("out"));
    tc = json_file(p);
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(tc, "chat_template")));
    ck_assert_str_eq(cJSON_GetObjectItem(tc, "chat_template")->valuestring, "{{ messages }}");
    cJSON_Delete(tc);
    qbt_hf_model_free(&ref);
}
END_TEST

/* K-quants and Q8_0 (when the fixture library can quantize them): the
 * expected values are the decoded blocks. */
START_TEST(gguf_kquants_to_f32_equal_the_decoded_blocks)
{
    static const uint32_t types[] = {8 /* Q8_0 */, 12 /* Q4_K */, 14 /* Q6_K */};
    size_t k, i, done = 0;
    for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        qbt_gguf_spec s = gspec("qwen2", types[k]);
        qbt_hf_model ref;
        qb_st_set *set;
        char dir[32], file[64], out[32];
        if (!qbt_gguf_can_quantize(types[k]))
            continue;
        s.n_embd = 256; /* K-quant super-blocks are 256 wide */
        s.n_ff = 512;
        s.n_head = 4;
        s.n_head_kv = 2;
        snprintf(dir, sizeof(dir), "g%u", types[k]);
        snprintf(file, sizeof(file), "g%u/m.gguf", types[k]);
        snprintf(out, sizeof(out), "o%u", types[k]);
        ck_assert_int_eq(mkdir(sub(dir), 0777), 0);
        write_gguf(&s, sub(file), &ref);
        convert_ok(sub(file), sub(out), "--option dtype=f32");
        set = open_out(sub(out));
        ck_assert_uint_eq(host->safetensors->count(set), ref.n);
        for (i = 0; i < ref.n; i++)
            check_vals(need(set, ref.t[i].name), "F32", ref.t[i].vals, numel(&ref.t[i]));
        host->safetensors->close(set);
        qbt_hf_model_free(&ref);
        done++;
    }
    ck_assert_msg(done > 0 || !qbt_gguf_can_quantize(12), "no type tested");
}
END_TEST

/* Concatenation of the expected tensors `names` by rows. */
static float *concat_rows(const qbt_hf_model *ref, const char *const *names, int n, int64_t *rows,
                          int64_t *cols)
{
    size_t total = 0, off = 0;
    float *v;
    int i;
    *rows = 0;
    for (i = 0; i < n; i++) {
        const qbt_hf_tensor *t = qbt_hf_model_find(ref, names[i]);
        ck_assert_msg(t != NULL, "reference lacks %s", names[i]);
        total += numel(t);
        *rows += t->dims[0];
        *cols = t->dims[1];
    }
    v = malloc(total * sizeof(float));
    for (i = 0; i < n; i++) {
        const qbt_hf_tensor *t = qbt_hf_model_find(ref, names[i]);
        memcpy(v + off, t->vals, numel(t) * sizeof(float));
        off += numel(t);
    }
    return v;
}

START_TEST(gguf_phi3_fused_back)
{
    qbt_gguf_spec s = gspec("phi3", 2);
    qbt_hf_model ref;
    qb_st_set *set;
    size_t i, n_split = 0;
    int L;

    s.n_head_kv = 4;
    ck_assert_int_eq(mkdir(sub("g"), 0777), 0);
    write_gguf(&s, sub("g/phi3.gguf"), &ref);
    convert_ok(sub("g/phi3.gguf"), sub("out"), "--option dtype=f32");
    set = open_out(sub("out"));
    for (L = 0; L < 2; L++) {
        char q[96], k[96], v[96], g[96], u[96], name[96];
        const char *qkv[3] = {q, k, v}, *gu[2] = {g, u};
        int64_t rows, cols, dims[2];
        float *want;
        snprintf(q, sizeof(q), "model.layers.%d.self_attn.q_proj.weight", L);
        snprintf(k, sizeof(k), "model.layers.%d.self_attn.k_proj.weight", L);
        snprintf(v, sizeof(v), "model.layers.%d.self_attn.v_proj.weight", L);
        snprintf(g, sizeof(g), "model.layers.%d.mlp.gate_proj.weight", L);
        snprintf(u, sizeof(u), "model.layers.%d.mlp.up_proj.weight", L);
        want = concat_rows(&ref, qkv, 3, &rows, &cols);
        snprintf(name, sizeof(name), "model.layers.%d.self_attn.qkv_proj.weight", L);
        dims[0] = rows;
        dims[1] = cols;
        check_shape(need(set, name), 2, dims);
        check_vals(need(set, name), "F32", want, (size_t)(rows * cols));
        ck_assert_int_eq(rows, (4 + 2 * 4) * 16);
        free(want);
        want = concat_rows(&ref, gu, 2, &rows, &cols);
        snprintf(name, sizeof(name), "model.layers.%d.mlp.gate_up_proj.weight", L);
        dims[0] = rows;
        dims[1] = cols;
        check_shape(need(set, name), 2, dims);
        check_vals(need(set, name), "F32", want, (size_t)(rows * cols));
        ck_assert_int_eq(rows, 2 * 96);
        free(want);
        ck_assert_ptr_null(host->safetensors->find(set, q));
        ck_assert_ptr_null(host->safetensors->find(set, g));
    }
    /* everything else under its own name, the same values */
    for (i = 0; i < ref.n; i++) {
        const char *nm = ref.t[i].name;
        if (strstr(nm, "q_proj") || strstr(nm, "k_proj") || strstr(nm, "v_proj") ||
            strstr(nm, "gate_proj") || strstr(nm, "up_proj")) {
            n_split++;
            continue;
        }
        check_vals(need(set, nm), "F32", ref.t[i].vals, numel(&ref.t[i]));
    }
    ck_assert_uint_eq(n_split, 10);
    ck_assert_uint_eq(host->safetensors->count(set), ref.n - 10 + 4);
    host->safetensors->close(set);
    qbt_hf_model_free(&ref);
}
END_TEST

/* ---- our own format back ------------------------------------------------ */
#ifdef QBT_HAVE_SM86

/* Every tensor the reader of plugin `lib` serves for `src` equals, bit for
 * bit, the F32 tensor of the same name in `out`, and `out` has no other. */
static void check_against_reader(const char *lib_name, const char *src, const char *out)
{
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    char lib[2048];
    void *so;
    qb_plugin_entry_fn entry;
    const qb_plugin *p = NULL;
    qb_negotiation neg = {sizeof(neg), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    qb_reader_handle r = NULL;
    qb_model_info mi;
    qb_st_set *set = open_out(out);
    size_t i;

    snprintf(lib, sizeof(lib), "%s/lib/quantbridge/plugins/%s", bd, lib_name);
    so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(so != NULL, "dlopen %s: %s", lib, dlerror());
    *(void **)&entry = dlsym(so, QB_PLUGIN_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    ck_assert_int_eq(entry(&neg, host, &p), QB_OK);
    ck_assert_msg(p->reader->open(p->ctx, src, NULL, &r) == QB_OK, "%s", qbt_host_last_error());
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(p->reader->get_model_info(r, &mi), QB_OK);
    ck_assert_uint_eq(host->safetensors->count(set), mi.n_tensors);
    for (i = 0; i < mi.n_tensors; i++) {
        qb_tensor_info ti;
        const qb_st_tensor *t;
        float *want;
        size_t ne;
        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        ck_assert_int_eq(p->reader->get_tensor_info(r, i, &ti), QB_OK);
        t = need(set, ti.name);
        check_shape(t, (int)ti.n_dims, ti.dims);
        ne = (size_t)(qb_tensor_rows(&ti) * qb_tensor_cols(&ti));
        want = malloc(ne * sizeof(float));
        ck_assert_int_eq(p->reader->read_rows(r, i, 0, qb_tensor_rows(&ti), want), QB_OK);
        check_vals(t, "F32", want, ne);
        free(want);
    }
    p->reader->close(r);
    host->safetensors->close(set);
    dlclose(so);
}

START_TEST(w4a16_back_to_f32_equals_the_decoded_values)
{
    qbt_hfd_spec s = hspec("llama", "bf16", 0);
    qbt_hfd_spec t = hspec("qwen3", "bf16", 1);
    char args[4096], *out;
    qb_st_set *set;
    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    ck_assert_int_eq(qbt_hfd_write(&t, sub("srct")), 0);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer sm86-w4a16",
             sub("src"), sub("w4"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "%s", out);
    free(out);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer sm86-w4a16 "
             "--group-size 32", sub("srct"), sub("w4t"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "%s", out);
    free(out);
    convert_ok(sub("w4"), sub("back"), "--option dtype=f32");
    convert_ok(sub("w4t"), sub("backt"), "--option dtype=f32");
    check_against_reader("libqb_sm86_w4a16.so", sub("w4"), sub("back"));
    check_against_reader("libqb_sm86_w4a16.so", sub("w4t"), sub("backt"));
    set = open_out(sub("backt"));
    ck_assert_ptr_null(host->safetensors->find(set, "lm_head.weight"));
    host->safetensors->close(set);
    cJSON_Delete(check_config(sub("back"), "float32"));
}
END_TEST
#endif

/* ---- the writer's refusal without a config ------------------------------ */

START_TEST(supports_refuses_a_model_without_config)
{
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    char lib[2048];
    void *so;
    qb_plugin_entry_fn entry;
    const qb_plugin *p = NULL;
    qb_negotiation neg = {sizeof(neg), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    qb_model_info mi;
    size_t i;
    int have_dtype = 0, have_shard = 0;

    snprintf(lib, sizeof(lib), "%s/lib/quantbridge/plugins/libqb_hf_dense.so", bd);
    so = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(so != NULL, "dlopen %s: %s", lib, dlerror());
    *(void **)&entry = dlsym(so, QB_PLUGIN_ENTRY_SYMBOL);
    ck_assert_ptr_nonnull(entry);
    ck_assert_int_eq(entry(&neg, host, &p), QB_OK);
    ck_assert_ptr_nonnull(p->writer);
    ck_assert_ptr_nonnull(p->reader);
    for (i = 0; p->options && p->options[i]; i++) {
        if (strcmp(p->options[i]->name, "dtype") == 0) {
            have_dtype = 1;
            ck_assert_str_eq(p->options[i]->default_value, "f16");
            ck_assert_str_eq(p->options[i]->choices, "f32|f16|bf16");
        }
        if (strcmp(p->options[i]->name, "max_shard_size") == 0) {
            have_shard = 1;
            ck_assert_int_eq(p->options[i]->type, QB_PARAM_SIZE);
            ck_assert_str_eq(p->options[i]->default_value, "5GB");
        }
    }
    ck_assert(have_dtype && have_shard);
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    mi.architecture = "llama";
    mi.n_tensors = 1;
    qbt_host_clear_error();
    ck_assert_int_eq(p->writer->supports(p->ctx, &mi), 0);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "config"));
    mi.config_json = "[1, 2]";
    ck_assert_int_eq(p->writer->supports(p->ctx, &mi), 0);
    mi.config_json = "{\"model_type\": \"llama\"}";
    ck_assert_int_eq(p->writer->supports(p->ctx, &mi), 50);
    mi.architecture = "some-new-arch";
    ck_assert_int_eq(p->writer->supports(p->ctx, &mi), 50);
    dlclose(so);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("hf-dense-writer");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, hf_bf16_to_f32_exact_with_side_files);
    tcase_add_test(tc, hf_f32_to_f16_and_bf16_rne);
    tcase_add_test(tc, rne_hand_checked_values);
    tcase_add_test(tc, sharded_output_has_a_valid_index);
    tcase_add_test(tc, tied_model_has_no_head);
    tcase_add_test(tc, tied_config_with_identical_head_drops_it);
    tcase_add_test(tc, tied_config_with_different_head_is_refused);
    tcase_add_test(tc, untied_head_kept_and_tie_made_explicit);
    tcase_add_test(tc, bad_dtype_option_is_a_usage_error);
    tcase_add_test(tc, dtype_with_another_writer_is_a_usage_error);
    tcase_add_test(tc, phi3_split_hf_source_fused_in_order);
    tcase_add_test(tc, phi3_already_fused_passes_through);
    tcase_add_test(tc, phi3_missing_partner_is_refused);
    tcase_add_test(tc, phi3_fused_and_split_is_refused);
    tcase_add_test(tc, phi3_parts_of_different_widths_are_refused);
    tcase_add_test(tc, untied_config_without_head_is_refused);
    tcase_add_test(tc, gptq_to_f32_equals_the_known_codes);
#ifdef QBT_HAVE_AWQ
    tcase_add_test(tc, awq_to_f32_equals_the_known_codes);
#endif
    tcase_add_test(tc, gguf_q4_0_to_f32_equals_the_known_weights);
    tcase_add_test(tc, gguf_phi3_fused_back);
    tcase_add_test(tc, gguf_kquants_to_f32_equal_the_decoded_blocks);
    tcase_add_test(tc, supports_refuses_a_model_without_config);
#ifdef QBT_HAVE_SM86
    tcase_add_test(tc, w4a16_back_to_f32_equals_the_decoded_values);
#endif
    suite_add_tcase(s, tc);
    return s;
}

