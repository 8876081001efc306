/*
 * GGUF reader — the ABI 1.2 views of the source as stored (gguf_views.h):
 * stored tensors with their ggml type and byte count over the shards of a
 * split set, and the metadata key/values with their GGUF types. Ground
 * truth: the fixture's own spec (tests/gen/gen_gguf.h) and ggml's block
 * facts (Q4_0: 32 weights in 18 bytes; docs/formats/gguf.md "ggml type
 * table"), never the reader's other outputs.
 */
#include "qbt_fs.h"
#include "qbt_host.h"
#include "gen_gguf.h"
#include "gguf_reader.h"
#include <check.h>
#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qbt_gguf_spec spec(void)
{
    qbt_gguf_spec s;
    memset(&s, 0, sizeof(s));
    s.arch = "llama";
    s.n_layer = 3;
    s.n_embd = 64;
    s.n_ff = 96;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_vocab = 80;
    s.wtype = 2; /* Q4_0 */
    s.seed = 11;
    return s;
}

/* Opens a 2-shard split set of spec() through its directory. */
static gguf_reader *open_split(const char *tag)
{
    qbt_gguf_spec s = spec();
    qbt_gguf *g;
    qbt_hf_model ref;
    gguf_reader *r = NULL;
    char prefix[1200];
    const char *dir = qbt_scratch(tag);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    snprintf(prefix, sizeof(prefix), "%s/m", dir);
    ck_assert_int_eq(qbt_gguf_save_split(g, prefix, 2), 0);
    qbt_gguf_free(g);
    qbt_hf_model_free(&ref);
    ck_assert_int_eq(gguf_reader_open(qbt_host(), dir, &r), QB_OK);
    return r;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

START_TEST(raw_tensors_over_shards)
{
    const qb_reader_vtable *vt = gguf_reader_vtable();
    gguf_reader *r = open_split("views-raw");
    qbt_gguf_spec s = spec();
    qb_raw_tensor_info ri;
    size_t i, n = 0, n_canon = gguf_reader_count(r), in_shard2 = 0, seen_q = 0;
    int *fed = calloc(n_canon, sizeof *fed);

    ck_assert_ptr_nonnull(vt->get_raw_tensor_info);
    for (i = 0;; i++) {
        int64_t elems = 1;
        uint32_t d;
        memset(&ri, 0, sizeof ri);
        ri.struct_size = sizeof ri;
        if (vt->get_raw_tensor_info(r, i, &ri) == QB_E_RANGE)
            break;
        n++;
        ck_assert_ptr_nonnull(ri.name);
        ck_assert_ptr_nonnull(ri.file);
        for (d = 0; d < ri.n_dims; d++)
            elems *= ri.dims[d];
        if (ri.n_dims == 2 && strcmp(ri.name, "token_embd.weight") != 0) {
            /* 2-D weights are Q4_0 blocks: 18 bytes per 32 weights. */
            ck_assert_str_eq(ri.type, "Q4_0");
            ck_assert_int_eq((int64_t)ri.n_bytes, elems / 32 * 18);
        } else if (ri.n_dims == 1) {
            ck_assert_str_eq(ri.type, "F32");
            ck_assert_int_eq((int64_t)ri.n_bytes, elems * 4);
        }
        if (strcmp(ri.name, "blk.1.attn_q.weight") == 0) {
            const qb_tensor_info *ti;
            qb_tensor_info t;
            seen_q = 1;
            /* ggml order: ne[0] = in features, ne[1] = out features */
            ck_assert_int_eq(ri.n_dims, 2);
            ck_assert_int_eq(ri.dims[0], s.n_embd);
            ck_assert_int_eq(ri.dims[1], s.n_embd);
            ck_assert_int_ge(ri.canonical, 0);
            memset(&t, 0, sizeof t);
            t.struct_size = sizeof t;
            ck_assert_int_eq(vt->get_tensor_info(r, (size_t)ri.canonical, &t), QB_OK);
            ti = &t;
            ck_assert_str_eq(ti->name, "model.layers.1.self_attn.q_proj.weight");
        }
        if (ends_with(ri.file, "m-00002-of-00002.gguf"))
            in_shard2++;
        else
            ck_assert_msg(ends_with(ri.file, "m-00001-of-00002.gguf"), "file %s", ri.file);
        if (ri.canonical >= 0) {
            ck_assert_int_lt(ri.canonical, (int64_t)n_canon);
            fed[ri.canonical]++;
        }
    }
    ck_assert_int_eq(seen_q, 1);
    ck_assert_int_gt(in_shard2, 0);
    ck_assert_int_lt(in_shard2, n);
    /* llama without fused tensors: each canonical tensor is read from one stored tensor */
    for (i = 0; i < n_canon; i++)
        ck_assert_msg(fed[i] == 1, "canonical %zu fed by %d stored tensors", i, fed[i]);
    /* 9 stored tensors per layer plus token_embd, output_norm, output */
    ck_assert_int_eq(n, (size_t)(9 * s.n_layer + 3));
    free(fed);
    gguf_reader_close(r);
}
END_TEST

/* Finds key in the metadata view; returns 1 and fills e (value in buf). */
static int find_meta(gguf_reader *r, const char *key, qb_meta_entry *e, char *buf, size_t cap)
{
    const qb_reader_vtable *vt = gguf_reader_vtable();
    size_t i;
    for (i = 0;; i++) {
        memset(e, 0, sizeof *e);
        e->struct_size = sizeof *e;
        e->value = buf;
        e->value_cap = cap;
        if (vt->get_metadata(r, i, e) == QB_E_RANGE)
            return 0;
        ck_assert_ptr_nonnull(e->key);
        ck_assert_ptr_nonnull(e->type);
        ck_assert_uint_lt(strlen(buf), cap);
        if (strcmp(e->key, key) == 0)
            return 1;
    }
}

START_TEST(metadata_types_and_values)
{
    gguf_reader *r = open_split("views-meta");
    qbt_gguf_spec s = spec();
    qb_meta_entry e;
    char buf[256], want[64];

    ck_assert_int_eq(find_meta(r, "llama.block_count", &e, buf, sizeof buf), 1);
    ck_assert_str_eq(e.type, "u32");
    snprintf(want, sizeof want, "%d", s.n_layer);
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(find_meta(r, "general.architecture", &e, buf, sizeof buf), 1);
    ck_assert_str_eq(e.type, "string");
    ck_assert_str_eq(buf, "\"llama\"");
    ck_assert_int_eq(find_meta(r, "tokenizer.ggml.tokens", &e, buf, sizeof buf), 1);
    ck_assert_str_eq(e.type, "array[string]");
    snprintf(want, sizeof want, "[%d] ", s.n_vocab);
    ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "tokens summary: %s", buf);
    ck_assert_msg(ends_with(buf, ", ..."), "a long array is cut: %s", buf);
    /* split keys of the first shard are metadata too */
    ck_assert_int_eq(find_meta(r, "split.count", &e, buf, sizeof buf), 1);
    ck_assert_str_eq(buf, "2");
    /* a small buffer is never overrun */
    ck_assert_int_eq(find_meta(r, "tokenizer.ggml.tokens", &e, buf, 6), 1);
    ck_assert_uint_eq(strlen(buf), 5);
    ck_assert_int_eq(find_meta(r, "no.such.key", &e, buf, sizeof buf), 0);
    gguf_reader_close(r);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf_views");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, raw_tensors_over_shards);
    tcase_add_test(tc, metadata_types_and_values);
    suite_add_tcase(s, tc);
    return s;
}
