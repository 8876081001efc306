/*
 * The mlx writer's shards through the built `quantbridge` ($QB_TEST_BIN):
 * a GPTQ fixture (tests/gen) written whole and with small
 * --option max_shard_size caps. The expected layout is computed here from
 * the whole file's own header, with mlx-lm's make_shards rule written out
 * anew (tensors in file order; a tensor opens a new shard when the open
 * one holds a tensor and its bytes plus this tensor's would pass the cap),
 * and compared with every shard file's header, the file names and
 * model.safetensors.index.json (metadata total_size: the data bytes;
 * total_parameters: get_total_parameters' count, a quantized weight as
 * N x K; weight_map sorted). The sharded output is read back by the mlx
 * reader (--verify) and holds the same tensor bytes as the whole one.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gen_gptq.h"
#include "qbt_fs.h"
#include "qbt_run.h"

#define MAX_T 256

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("mlx-shards");
    ck_assert_ptr_nonnull(tmp);
    ck_assert_ptr_nonnull(getenv("QB_TEST_BIN"));
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

static char *sub(const char *name)
{
    static char b[4][1024];
    static int k;
    char *p = b[k++ & 3];
    snprintf(p, 1024, "%s/%s", tmp, name);
    return p;
}

/* One tensor of a safetensors file. */
typedef struct tens {
    char name[200];
    char dtype[16];
    int64_t shape[4];
    int nd;
    uint64_t off, nbytes;
    const unsigned char *data; /* into the file's bytes */
} tens;

typedef struct stfile {
    unsigned char *bytes;
    size_t len;
    tens t[MAX_T];
    size_t n;
} stfile;

static int by_off(const void *a, const void *b)
{
    const tens *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Reads a safetensors file: the header's tensors in data order. */
static void st_read(const char *path, stfile *f)
{
    uint64_t hl = 0;
    cJSON *h, *e;
    int i;
    memset(f, 0, sizeof *f);
    f->bytes = (unsigned char *)qbt_read_file(path, &f->len);
    ck_assert_msg(f->bytes && f->len >= 8, "cannot read %s", path);
    for (i = 7; i >= 0; i--)
        hl = hl << 8 | f->bytes[i];
    ck_assert_uint_le(8 + hl, f->len);
    h = cJSON_ParseWithLength((const char *)f->bytes + 8, (size_t)hl);
    ck_assert_ptr_nonnull(h);
    cJSON_ArrayForEach(e, h) {
        tens *t;
        cJSON *s, *o = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        if (strcmp(e->string, "__metadata__") == 0)
            continue;
        ck_assert_uint_lt(f->n, MAX_T);
        t = &f->t[f->n++];
        snprintf(t->name, sizeof t->name, "%s", e->string);
        snprintf(t->dtype, sizeof t->dtype, "%s",
                 cJSON_GetObjectItemCaseSensitive(e, "dtype")->valuestring);
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(e, "shape"))
            t->shape[t->nd++] = (int64_t)s->valuedouble;
        t->off = (uint64_t)cJSON_GetArrayItem(o, 0)->valuedouble;
        t->nbytes = (uint64_t)cJSON_GetArrayItem(o, 1)->valuedouble - t->off;
        t->data = f->bytes + 8 + hl + t->off;
    }
    cJSON_Delete(h);
    qsort(f->t, f->n, sizeof f->t[0], by_off);
}

static cJSON *read_json(const char *path, char *last)
{
    size_t n;
    char *s = qbt_read_file(path, &n);
    cJSON *j;
    ck_assert_msg(s != NULL, "cannot read %s", path);
    *last = n ? s[n - 1] : 0;
    j = cJSON_Parse(s);
    free(s);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void convert(const char *out, const char *extra)
{
    char args[4096], *text = NULL;
    int rc;
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer mlx --verify %s",
             sub("src"), out, extra);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 0 && strstr(text, "verify: PASS"), "exit %d: %s", rc, text);
    free(text);
}

/* bits of module m (config.json quantization: its own entry, else the default) */
static int bits_of(const cJSON *q, const char *m)
{
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(q, m);
    return cJSON_GetObjectItemCaseSensitive(cJSON_IsObject(own) ? own : q, "bits")->valueint;
}

/* total_parameters as mlx-lm counts them from the whole file's tensors */
static uint64_t count_params(const stfile *w, const cJSON *q)
{
    uint64_t n = 0;
    size_t i, j;
    for (i = 0; i < w->n; i++) {
        const tens *t = &w->t[i];
        size_t nl = strlen(t->name);
        uint64_t e = 1;
        int k, quant = 0;
        char base[200];
        if (nl > 7 && strcmp(t->name + nl - 7, ".weight") == 0 && !strcmp(t->dtype, "U32")) {
            snprintf(base, sizeof base, "%.*s.scales", (int)(nl - 7), t->name);
            for (j = 0; j < w->n; j++)
                quant |= strcmp(w->t[j].name, base) == 0;
        }
        if (quant) {
            base[nl - 7] = 0;
            n += (uint64_t)t->shape[0] * (uint64_t)t->shape[1] * 32u /
                 (uint64_t)bits_of(q, base);
            continue;
        }
        if ((nl > 7 && !strcmp(t->name + nl - 7, ".scales")) ||
            (nl > 7 && !strcmp(t->name + nl - 7, ".biases"))) {
            snprintf(base, sizeof base, "%.*s.weight", (int)(nl - 7), t->name);
            for (j = 0; j < w->n; j++)
                quant |= strcmp(w->t[j].name, base) == 0 && !strcmp(w->t[j].dtype, "U32");
            if (quant)
                continue;
        }
        for (k = 0; k < t->nd; k++)
            e *= (uint64_t)t->shape[k];
        n += e;
    }
    return n;
}

/* Writes with cap bytes and checks against the whole output in dir "whole". */
static void check_cap(const char *dir, uint64_t cap, uint32_t want_min_shards)
{
    stfile *whole = calloc(1, sizeof *whole), *part = calloc(1, sizeof *part);
    uint32_t shard_of[MAX_T], n_shards = 0, s;
    uint64_t cur = 0, total = 0;
    size_t i, seen = 0;
    char extra[64], path[1200], fname[64], last;
    cJSON *ix, *cfg, *meta, *wm, *e;
    const char *prev = "";

    ck_assert_ptr_nonnull(whole);
    ck_assert_ptr_nonnull(part);
    snprintf(extra, sizeof extra, "--option max_shard_size=%llu", (unsigned long long)cap);
    convert(dir, extra);
    snprintf(path, sizeof path, "%s/model.safetensors", sub("whole"));
    st_read(path, whole);
    ck_assert_uint_gt(whole->n, 3);
    /* make_shards' rule, written out anew */
    for (i = 0; i < whole->n; i++) {
        if (n_shards == 0 || cur + whole->t[i].nbytes > cap) {
            n_shards++;
            cur = 0;
        }
        cur += whole->t[i].nbytes;
        total += whole->t[i].nbytes;
        shard_of[i] = n_shards - 1;
    }
    ck_assert_uint_ge(n_shards, want_min_shards);
    /* every shard file: its tensors in order, the same bytes */
    for (s = 0; s < n_shards; s++) {
        size_t k = 0;
        if (n_shards == 1)
            snprintf(fname, sizeof fname, "model.safetensors");
        else
            snprintf(fname, sizeof fname, "model-%05u-of-%05u.safetensors", s + 1, n_shards);
        snprintf(path, sizeof path, "%s/%s", dir, fname);
        st_read(path, part);
        for (i = 0; i < whole->n; i++) {
            if (shard_of[i] != s)
                continue;
            ck_assert_uint_lt(k, part->n);
            ck_assert_str_eq(part->t[k].name, whole->t[i].name);
            ck_assert_str_eq(part->t[k].dtype, whole->t[i].dtype);
            ck_assert_uint_eq(part->t[k].nbytes, whole->t[i].nbytes);
            ck_assert_msg(memcmp(part->t[k].data, whole->t[i].data, whole->t[i].nbytes) == 0,
                          "%s: %s: bytes differ", fname, whole->t[i].name);
            k++;
        }
        ck_assert_uint_eq(k, part->n);
        seen += k;
        free(part->bytes);
    }
    ck_assert_uint_eq(seen, whole->n);
    /* no further shard file: exactly n_shards safetensors files */
    ck_assert_int_eq(qbt_count_entries(dir, ".safetensors") -
                         qbt_count_entries(dir, ".safetensors.index.json"),
                     (int)n_shards);
    /* the index: metadata then weight_map, sorted, each tensor's file */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    ix = read_json(path, &last);
    ck_assert_int_eq(last, '}'); /* json.dump writes no final newline */
    snprintf(path, sizeof path, "%s/config.json", dir);
    cfg = read_json(path, &last);
    meta = cJSON_GetArrayItem(ix, 0);
    wm = cJSON_GetArrayItem(ix, 1);
    ck_assert_str_eq(meta->string, "metadata");
    ck_assert_str_eq(wm->string, "weight_map");
    ck_assert_int_eq(cJSON_GetArraySize(ix), 2);
    ck_assert_int_eq(cJSON_GetArraySize(meta), 2);
    ck_assert_str_eq(cJSON_GetArrayItem(meta, 0)->string, "total_size");
    ck_assert_str_eq(cJSON_GetArrayItem(meta, 1)->string, "total_parameters");
    ck_assert_uint_eq((uint64_t)cJSON_GetArrayItem(meta, 0)->valuedouble, total);
    ck_assert_uint_eq((uint64_t)cJSON_GetArrayItem(meta, 1)->valuedouble,
                      count_params(whole, cJSON_GetObjectItemCaseSensitive(cfg, "quantization")));
    ck_assert_int_eq(cJSON_GetArraySize(wm), (int)whole->n);
    cJSON_ArrayForEach(e, wm) {
        ck_assert_msg(strcmp(prev, e->string) < 0, "weight_map not sorted at %s", e->string);
        prev = e->string;
        for (i = 0; i < whole->n && strcmp(whole->t[i].name, e->string) != 0; i++)
            ;
        ck_assert_uint_lt(i, whole->n);
        if (n_shards == 1)
            snprintf(fname, sizeof fname, "model.safetensors");
        else
            snprintf(fname, sizeof fname, "model-%05u-of-%05u.safetensors", shard_of[i] + 1,
                     n_shards);
        ck_assert_str_eq(e->valuestring, fname);
    }
    cJSON_Delete(ix);
    cJSON_Delete(cfg);
    free(whole->bytes);
    free(whole);
    free(part);
}

static void make_source(void)
{
    qbt_gptq_spec s = {.bits = 4, .group_size = 128, .sym = 1, .act_order = 0,
                       .label = 1, .n_shards = 1, .seed = 41};
    ck_assert_int_eq(mkdir(sub("src"), 0755), 0);
    ck_assert_int_eq(qbt_gptq_write(sub("src"), &s, NULL), 0);
    convert(sub("whole"), "");
}

START_TEST(whole_has_an_index_too)
{
    make_source();
    check_cap(sub("w2"), (uint64_t)5 << 30, 1);
}
END_TEST

START_TEST(small_caps_cut_as_make_shards)
{
    make_source();
    check_cap(sub("c60k"), 60000, 3);
    check_cap(sub("c1"), 1, 20); /* every tensor alone */
}
END_TEST

/* A cap equal to the first tensors' bytes: a shard may fill it exactly
 * (make_shards cuts only when the cap would be passed). */
START_TEST(cap_met_exactly_keeps_the_tensor)
{
    stfile *whole = calloc(1, sizeof *whole);
    char path[1200];
    uint64_t cap;
    ck_assert_ptr_nonnull(whole);
    make_source();
    snprintf(path, sizeof path, "%s/model.safetensors", sub("whole"));
    st_read(path, whole);
    cap = whole->t[0].nbytes + whole->t[1].nbytes + whole->t[2].nbytes;
    free(whole->bytes);
    free(whole);
    check_cap(sub("exact"), cap, 2);
    check_cap(sub("less"), cap - 1, 2);
}
END_TEST

START_TEST(zero_cap_refused)
{
    char args[2048], *text = NULL;
    ck_assert_int_eq(mkdir(sub("src"), 0755), 0);
    {
        qbt_gptq_spec s = {.bits = 4, .group_size = 128, .sym = 1, .label = 1, .n_shards = 1,
                           .seed = 41};
        ck_assert_int_eq(qbt_gptq_write(sub("src"), &s, NULL), 0);
    }
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer mlx "
             "--option max_shard_size=0", sub("src"), sub("z"));
    /* the host refuses it as a usage error (the option's minimum) */
    ck_assert_int_eq(qbt_run_line(args, &text), 2);
    ck_assert_msg(strstr(text, "max_shard_size: 0 outside"), "%s", text);
    free(text);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("mlx_shards");
    TCase *tc = tcase_create("shards");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, whole_has_an_index_too);
    tcase_add_test(tc, small_caps_cut_as_make_shards);
    tcase_add_test(tc, cap_met_exactly_keeps_the_tensor);
    tcase_add_test(tc, zero_cap_refused);
    suite_add_tcase(s, tc);
    return s;
}
