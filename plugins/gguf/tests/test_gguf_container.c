/*
 * GGUF container: malformed files give a clear error naming the file (never
 * a crash or a huge allocation); well-formed corner cases parse.
 */
#include "qbt_fs.h"
#include "qbt_host.h"
#include "gen_gguf.h"
#include "qbk_alloc.h"
#include "gguf_container.h"
#include "gguf_kv.h"

#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH "fixture.gguf"

/* A small valid file: a few kvs of several types, two tensors. */
static uint8_t *small_file(qbt_gguf_layout *lay, const qbt_gguf_opts *o)
{
    qbt_gguf *g = qbt_gguf_new();
    float a[64], b[32];
    int64_t ne_a[2] = {32, 2}, ne_b[1] = {32};
    const char *toks[3] = {"a", "bc", ""};
    int32_t per_layer[2] = {5, 5};
    uint8_t *p;
    int i;
    for (i = 0; i < 64; i++)
        a[i] = (float)i;
    for (i = 0; i < 32; i++)
        b[i] = (float)-i;
    ck_assert_int_eq(qbt_gguf_kv_str(g, "general.architecture", "llama"), 0);
    ck_assert_int_eq(qbt_gguf_kv_u32(g, "llama.block_count", 1), 0);
    ck_assert_int_eq(qbt_gguf_kv_f32(g, "llama.rope.freq_base", 10000.0f), 0);
    ck_assert_int_eq(qbt_gguf_kv_bool(g, "x.flag", 1), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", 3, toks), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_i32(g, "llama.feed_forward_length", 2, per_layer), 0);
    ck_assert_int_eq(qbt_gguf_add_tensor(g, "a.weight", 2, ne_a, 0, a, sizeof(a)), 0);
    ck_assert_int_eq(qbt_gguf_add_tensor(g, "b.weight", 1, ne_b, 0, b, sizeof(b)), 0);
    p = qbt_gguf_serialize(g, o, lay);
    ck_assert_ptr_nonnull(p);
    qbt_gguf_free(g);
    return p;
}

static qb_status parse(const uint8_t *p, size_t n, gguf_file **f)
{
    return gguf_file_parse(qbt_host(), PATH, p, n, f);
}

static void expect_fail(const uint8_t *p, size_t n, qb_status code, const char *needle)
{
    gguf_file *f = (gguf_file *)1;
    qb_status st = parse(p, n, &f);
    ck_assert_msg(st == code, "expected %d, got %d (%s)", code, st, qbt_host_last_error());
    ck_assert_ptr_null(f);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), PATH));
    if (needle)
        ck_assert_msg(strstr(qbt_host_last_error(), needle) != NULL, "message '%s' lacks '%s'", qbt_host_last_error(), needle);
}

START_TEST(valid_small_file)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    gguf_file *f;
    const gguf_tinfo *t;
    int64_t v;
    double d;
    uint64_t n;
    char *s;
    ck_assert_int_eq(parse(p, l.size, &f), QB_OK);
    ck_assert_int_eq(f->version, 3);
    ck_assert_int_eq(f->n_tensors, 2);
    t = gguf_file_find_tensor(f, "a.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->ne[0], 32);
    ck_assert_int_eq(t->ne[1], 2);
    ck_assert_int_eq(t->n_rows, 2);
    ck_assert_int_eq(t->row_bytes, 128);
    ck_assert(((const float *)t->data)[33] == 33.0f);
    t = gguf_file_find_tensor(f, "b.weight");
    ck_assert(((const float *)t->data)[5] == -5.0f);
    ck_assert_int_eq(gguf_kv_int(qbt_host(), f, "llama.block_count", &v), QB_OK);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(gguf_kv_int_uniform(qbt_host(), f, "llama.feed_forward_length", &v), QB_OK);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(gguf_kv_float(qbt_host(), f, "llama.rope.freq_base", &d), QB_OK);
    ck_assert(d == 10000.0);
    ck_assert_int_eq(gguf_kv_array_len(qbt_host(), f, "tokenizer.ggml.tokens", &n), QB_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(gguf_kv_string(qbt_host(), f, "general.architecture", &s), QB_OK);
    ck_assert_str_eq(s, "llama");
    qbk_free(s); /* gguf_kv_string allocates with qbk_malloc */
    ck_assert_int_eq(gguf_kv_int(qbt_host(), f, "general.architecture", &v), QB_E_FORMAT);
    ck_assert_int_eq(gguf_kv_int(qbt_host(), f, "nope", &v), QB_E_NOT_FOUND);
    gguf_file_close(f);
    free(p);
}
END_TEST

START_TEST(version_2_and_alignment_64)
{
    qbt_gguf_layout l;
    qbt_gguf_opts o = {2, 64};
    uint8_t *p = small_file(&l, &o);
    gguf_file *f;
    ck_assert_int_eq(parse(p, l.size, &f), QB_OK);
    ck_assert_int_eq(f->version, 2);
    ck_assert_int_eq(f->alignment, 64);
    ck_assert_int_eq(f->data_start % 64, 0);
    gguf_file_close(f);
    free(p);
}
END_TEST

/* Every prefix of the file is refused (truncated in the header, metadata,
 * tensor infos, padding or data), with no crash under ASan. */
START_TEST(truncated_everywhere)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    size_t n;
    for (n = 0; n < l.size; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size so ASan sees over-reads */
        gguf_file *f = NULL;
        qb_status st;
        memcpy(copy, p, n);
        st = parse(copy, n, &f);
        ck_assert_msg(st == QB_E_FORMAT, "prefix %zu: status %d", n, st);
        ck_assert_ptr_null(f);
        ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), PATH));
        free(copy);
    }
    free(p);
}
END_TEST

static void put64(uint8_t *p, size_t at, uint64_t v)
{
    memcpy(p + at, &v, 8);
}

static void put32(uint8_t *p, size_t at, uint32_t v)
{
    memcpy(p + at, &v, 4);
}

START_TEST(absurd_counts_and_lengths)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    uint8_t *q = malloc(l.size);
    memcpy(q, p, l.size);
    put64(q, 8, (uint64_t)1 << 60); /* n_tensors */
    expect_fail(q, l.size, QB_E_FORMAT, "tensor count");
    memcpy(q, p, l.size);
    put64(q, 16, (uint64_t)1 << 60); /* n_kv */
    expect_fail(q, l.size, QB_E_FORMAT, "metadata count");
    memcpy(q, p, l.size);
    put64(q, l.kv_start, (uint64_t)1 << 62); /* first key length */
    expect_fail(q, l.size, QB_E_FORMAT, "string length");
    memcpy(q, p, l.size);
    put64(q, l.kv_start, 5000); /* key longer than any real key, but inside the file */
    {
        uint8_t *big = calloc(1, l.size + 6000);
        memcpy(big, q, l.size);
        expect_fail(big, l.size + 6000, QB_E_FORMAT, "metadata key #0");
        free(big);
    }
    memcpy(q, p, l.size);
    put64(q, l.tinfo_start, 1000000); /* first tensor name length */
    expect_fail(q, l.size, QB_E_FORMAT, NULL);
    {
        /* Array count of tokenizer.ggml.tokens: find the key and patch. */
        const char *key = "tokenizer.ggml.tokens";
        size_t i;
        for (i = 0; i + strlen(key) < l.size; i++)
            if (memcmp(p + i, key, strlen(key)) == 0)
                break;
        memcpy(q, p, l.size);
        put64(q, i + strlen(key) + 4 + 4, (uint64_t)1 << 61);
        expect_fail(q, l.size, QB_E_FORMAT, "tokenizer.ggml.tokens");
    }
    free(q);
    free(p);
}
END_TEST

START_TEST(versions_and_endianness)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    put32(p, 4, 1);
    expect_fail(p, l.size, QB_E_UNSUPPORTED, "version 1");
    put32(p, 4, 99);
    expect_fail(p, l.size, QB_E_UNSUPPORTED, "version 99");
    put32(p, 4, 0x03000000u); /* big-endian version 3 */
    expect_fail(p, l.size, QB_E_UNSUPPORTED, "big-endian");
    put32(p, 0, 0x12345678u);
    expect_fail(p, l.size, QB_E_FORMAT, "not a GGUF");
    free(p);
}
END_TEST

START_TEST(unknown_type_id)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    put32(p, l.first_type_field, 99);
    expect_fail(p, l.size, QB_E_UNSUPPORTED, "99");
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "a.weight"));
    put32(p, l.first_type_field, 4); /* removed Q4_2 */
    expect_fail(p, l.size, QB_E_UNSUPPORTED, "a.weight");
    free(p);
}
END_TEST

START_TEST(offsets_past_end_misaligned_overlapping)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    uint8_t *q = malloc(l.size);
    memcpy(q, p, l.size);
    put64(q, l.first_offset_field, 1u << 20);
    expect_fail(q, l.size, QB_E_FORMAT, "past the end");
    memcpy(q, p, l.size);
    put64(q, l.first_offset_field, 8);
    expect_fail(q, l.size, QB_E_FORMAT, "alignment");
    memcpy(q, p, l.size);
    put64(q, l.first_offset_field, (uint64_t)-32);
    expect_fail(q, l.size, QB_E_FORMAT, "past the end");
    memcpy(q, p, l.size);
    /* Tensor b's offset field: after a's offset (8) + b's name (8+8), n_dims (4), ne (8), type (4). */
    put64(q, l.first_offset_field + 8 + 8 + 8 + 4 + 8 + 4, 0);
    expect_fail(q, l.size, QB_E_FORMAT, "overlap");
    free(q);
    free(p);
}
END_TEST

START_TEST(bad_dims)
{
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    uint8_t *q = malloc(l.size);
    size_t ndims_at = l.tinfo_start + 8 + strlen("a.weight");
    memcpy(q, p, l.size);
    put32(q, ndims_at, 5);
    expect_fail(q, l.size, QB_E_FORMAT, "n_dims");
    memcpy(q, p, l.size);
    put64(q, ndims_at + 4, 0);
    expect_fail(q, l.size, QB_E_FORMAT, "dimension");
    memcpy(q, p, l.size);
    put64(q, ndims_at + 4 + 8, (uint64_t)1 << 62); /* ne[1]: product overflows / past end */
    expect_fail(q, l.size, QB_E_FORMAT, "a.weight");
    free(q);
    free(p);
}
END_TEST

START_TEST(duplicates_and_alignment_value)
{
    qbt_gguf *g = qbt_gguf_new();
    float a[32] = {0};
    int64_t ne[1] = {32};
    qbt_gguf_layout l;
    uint8_t *p;
    qbt_gguf_kv_u32(g, "k", 1);
    qbt_gguf_kv_u32(g, "k", 2);
    p = qbt_gguf_serialize(g, NULL, &l);
    expect_fail(p, l.size, QB_E_FORMAT, "duplicate metadata key 'k'");
    free(p);
    qbt_gguf_free(g);

    g = qbt_gguf_new();
    qbt_gguf_add_tensor(g, "t", 1, ne, 0, a, sizeof(a));
    qbt_gguf_add_tensor(g, "t", 1, ne, 0, a, sizeof(a));
    p = qbt_gguf_serialize(g, NULL, &l);
    expect_fail(p, l.size, QB_E_FORMAT, "duplicate tensor name 't'");
    free(p);
    qbt_gguf_free(g);

    g = qbt_gguf_new();
    qbt_gguf_kv_u32(g, "general.alignment", 48);
    qbt_gguf_add_tensor(g, "t", 1, ne, 0, a, sizeof(a));
    p = qbt_gguf_serialize(g, NULL, &l);
    expect_fail(p, l.size, QB_E_FORMAT, "power of two");
    free(p);
    qbt_gguf_free(g);
}
END_TEST

START_TEST(nested_arrays_parse)
{
    /* ARRAY of ARRAY of UINT32: [[1, 2], [3]] (nesting allowed: docs/formats/gguf.md "Metadata values"). */
    qbt_gguf *g = qbt_gguf_new();
    uint8_t raw[12 + 12 + 8 + 12 + 4];
    uint32_t et = 9, et2 = 4, v;
    uint64_t n = 2, n1 = 2, n2 = 1;
    size_t o = 0;
    qbt_gguf_layout l;
    uint8_t *p;
    gguf_file *f;
    uint64_t len;
    memcpy(raw + o, &et, 4), o += 4;
    memcpy(raw + o, &n, 8), o += 8;
    memcpy(raw + o, &et2, 4), o += 4;
    memcpy(raw + o, &n1, 8), o += 8;
    v = 1, memcpy(raw + o, &v, 4), o += 4;
    v = 2, memcpy(raw + o, &v, 4), o += 4;
    memcpy(raw + o, &et2, 4), o += 4;
    memcpy(raw + o, &n2, 8), o += 8;
    v = 3, memcpy(raw + o, &v, 4), o += 4;
    qbt_gguf_kv_raw(g, "nested", 9, raw, o);
    qbt_gguf_kv_u32(g, "after", 7);
    p = qbt_gguf_serialize(g, NULL, &l);
    ck_assert_int_eq(parse(p, l.size, &f), QB_OK);
    ck_assert_int_eq(gguf_kv_array_len(qbt_host(), f, "nested", &len), QB_OK);
    ck_assert_int_eq(len, 2);
    {
        int64_t after;
        ck_assert_int_eq(gguf_kv_int(qbt_host(), f, "after", &after), QB_OK);
        ck_assert_int_eq(after, 7);
    }
    gguf_file_close(f);
    free(p);
    qbt_gguf_free(g);
}
END_TEST

START_TEST(open_missing_and_mmap)
{
    gguf_file *f;
    const char *dir = qbt_scratch("open");
    char path[1200];
    qbt_gguf_layout l;
    uint8_t *p = small_file(&l, NULL);
    FILE *fp;
    snprintf(path, sizeof(path), "%s/nope.gguf", dir);
    ck_assert_int_eq(gguf_file_open(qbt_host(), path, &f), QB_E_NOT_FOUND);
    snprintf(path, sizeof(path), "%s/ok.gguf", dir);
    fp = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(p, 1, l.size, fp), l.size);
    fclose(fp);
    ck_assert_int_eq(gguf_file_open(qbt_host(), path, &f), QB_OK);
    ck_assert_int_eq(f->mapped, 1);
    gguf_file_close(f);
    free(p);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf_container");
    TCase *tc = tcase_create("all");
    tcase_add_test(tc, valid_small_file);
    tcase_add_test(tc, version_2_and_alignment_64);
    tcase_add_test(tc, truncated_everywhere);
    tcase_add_test(tc, absurd_counts_and_lengths);
    tcase_add_test(tc, versions_and_endianness);
    tcase_add_test(tc, unknown_type_id);
    tcase_add_test(tc, offsets_past_end_misaligned_overlapping);
    tcase_add_test(tc, bad_dims);
    tcase_add_test(tc, duplicates_and_alignment_value);
    tcase_add_test(tc, nested_arrays_parse);
    tcase_add_test(tc, open_missing_and_mmap);
    suite_add_tcase(s, tc);
    return s;
}
