/*
 * Tests of the strict safetensors parser (sdk/kit): good files
 * (single, sharded, scalar, empty, unaligned) read back to known values,
 * and malformed files each refused with the right status and a message
 * naming the file.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <quantbridge/qb_half.h>

#include "qbk_safetensors.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_st_writer.h"

static char *tmp;
static const qb_st_api *api;
static const qb_host *host;

static void setup(void)
{
    tmp = qbt_tmpdir("st");
    ck_assert_ptr_nonnull(tmp);
    api = qbk_safetensors_api();
    host = qbt_host();
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

/* Writes a raw safetensors file: u64 header length (hl_override when not
 * UINT64_MAX), the header text as given, then `data`. */
static void write_raw(const char *path, const char *header, uint64_t hl_override, const void *data,
                      size_t n)
{
    FILE *f = fopen(path, "wb");
    uint64_t hl = hl_override != UINT64_MAX ? hl_override : strlen(header);
    unsigned char le[8];
    int i;
    ck_assert_ptr_nonnull(f);
    for (i = 0; i < 8; i++)
        le[i] = (unsigned char)(hl >> (8 * i));
    ck_assert_uint_eq(fwrite(le, 1, 8, f), 8);
    ck_assert_uint_eq(fwrite(header, 1, strlen(header), f), strlen(header));
    if (n)
        ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* Opens a file that must fail with `code`; checks the message names it. */
static void expect_file_error(const char *path, qb_status code)
{
    qb_st_set *set = (qb_st_set *)1;
    qb_status st = api->open_file(host, path, &set);
    ck_assert_msg(st == code, "%s: status %d, expected %d (%s)", path, st, code,
                  qbt_host_last_error());
    ck_assert_ptr_null(set);
    ck_assert_msg(strstr(qbt_host_last_error(), path) != NULL, "message '%s' does not name %s",
                  qbt_host_last_error(), path);
}

static void expect_dir_error(const char *dir, qb_status code, const char *must_name)
{
    qb_st_set *set = (qb_st_set *)1;
    qb_status st = api->open_dir(host, dir, &set);
    ck_assert_msg(st == code, "%s: status %d, expected %d (%s)", dir, st, code,
                  qbt_host_last_error());
    ck_assert_ptr_null(set);
    ck_assert_msg(strstr(qbt_host_last_error(), must_name) != NULL, "message '%s' does not name %s",
                  qbt_host_last_error(), must_name);
}

static const uint8_t zeros64[64];

/* ---- good files ------------------------------------------------------ */

START_TEST(good_single_file)
{
    qbt_st_writer *w = qbt_st_writer_new();
    float a[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.125f, 1e-30f};
    uint16_t b[4] = {qb_f32_to_bf16(1.0f), qb_f32_to_bf16(-3.5f), qb_f32_to_bf16(0.0078125f),
                     qb_f32_to_bf16(65504.0f)};
    int32_t s = -7;
    int64_t da[2] = {2, 3}, db[1] = {4}, de[2] = {0, 5};
    const char *p = path_in("one.safetensors");
    qb_st_set *set = NULL;
    const qb_st_tensor *t;
    float got[6];
    int32_t sv;

    ck_assert_int_eq(qbt_st_writer_add(w, "a.weight", "F32", 2, da, a, sizeof(a)), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "b", "BF16", 1, db, b, sizeof(b)), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "scalar", "I32", 0, NULL, &s, sizeof(s)), 0);
    ck_assert_int_eq(qbt_st_writer_add(w, "empty", "F16", 2, de, NULL, 0), 0);
    ck_assert_int_eq(qbt_st_writer_add_meta(w, "format", "pt"), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, p), 0);
    qbt_st_writer_free(w);

    ck_assert_int_eq(api->open_file(host, p, &set), QB_OK);
    ck_assert_uint_eq(api->count(set), 4);
    /* ordered by offset: a, b, scalar, then the empty one at the end */
    ck_assert_str_eq(api->tensor(set, 0)->name, "a.weight");
    ck_assert_str_eq(api->tensor(set, 1)->name, "b");
    ck_assert_str_eq(api->tensor(set, 2)->name, "scalar");
    ck_assert_str_eq(api->tensor(set, 3)->name, "empty");
    ck_assert_ptr_null(api->tensor(set, 4));

    t = api->find(set, "a.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->dtype, QB_DT_F32);
    ck_assert_str_eq(t->dtype_name, "F32");
    ck_assert_uint_eq(t->n_dims, 2);
    ck_assert_int_eq(t->dims[0], 2);
    ck_assert_int_eq(t->dims[1], 3);
    ck_assert_uint_eq(t->n_bytes, 24);
    ck_assert_str_eq(t->file, p);
    memcpy(got, t->data, sizeof(got));
    ck_assert_mem_eq(got, a, sizeof(a));

    t = api->find(set, "b");
    ck_assert_int_eq(t->dtype, QB_DT_BF16);
    ck_assert_mem_eq(t->data, b, sizeof(b));

    t = api->find(set, "scalar");
    ck_assert_uint_eq(t->n_dims, 0);
    ck_assert_uint_eq(t->n_bytes, 4);
    memcpy(&sv, t->data, 4);
    ck_assert_int_eq(sv, -7);

    t = api->find(set, "empty");
    ck_assert_int_eq(t->dtype, QB_DT_F16);
    ck_assert_uint_eq(t->n_bytes, 0);
    ck_assert_int_eq(t->dims[0], 0);

    ck_assert_ptr_null(api->find(set, "missing"));
    ck_assert_ptr_null(api->find(set, "a.weigh"));
    ck_assert_str_eq(api->metadata(set, "format"), "pt");
    ck_assert_ptr_null(api->metadata(set, "nope"));
    api->close(set);
    api->close(NULL);
}
END_TEST

START_TEST(good_unaligned_and_whitespace)
{
    /* Header of odd length with leading whitespace: data starts at an odd
     * offset, and the F32 tensor sits at data offset 3. */
    const char *hdr = "  {\"u\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
                      "\"f\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[3,11]}}\n\n";
    uint8_t data[11] = {7, 8, 9};
    float fv[2] = {-1.75f, 3.0e-5f}, got[2];
    const char *p = path_in("unaligned.safetensors");
    qb_st_set *set = NULL;
    const qb_st_tensor *t;

    memcpy(data + 3, fv, sizeof(fv));
    ck_assert_uint_eq(strlen(hdr) % 2, 1);
    write_raw(p, hdr, UINT64_MAX, data, sizeof(data));
    ck_assert_int_eq(api->open_file(host, p, &set), QB_OK);
    t = api->find(set, "f");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(((uintptr_t)t->data) & 3, (8 + strlen(hdr) + 3) & 3);
    memcpy(got, t->data, sizeof(got));
    ck_assert_mem_eq(got, fv, sizeof(fv));
    ck_assert_mem_eq(api->find(set, "u")->data, data, 3);
    ck_assert_ptr_null(api->metadata(set, "format"));
    api->close(set);
}
END_TEST

START_TEST(good_empty_file_no_tensors)
{
    const char *p = path_in("none.safetensors");
    qb_st_set *set = NULL;
    write_raw(p, "{}", UINT64_MAX, NULL, 0);
    ck_assert_int_eq(api->open_file(host, p, &set), QB_OK);
    ck_assert_uint_eq(api->count(set), 0);
    ck_assert_ptr_null(api->find(set, "x"));
    api->close(set);
}
END_TEST

/* Writes shard k of a two-shard checkpoint with tensors t<k>_<j>. */
static void write_shard(const char *name, int k, int n)
{
    qbt_st_writer *w = qbt_st_writer_new();
    int j;
    for (j = 0; j < n; j++) {
        char tn[32];
        float v[2] = {(float)k, (float)j};
        int64_t d[1] = {2};
        snprintf(tn, sizeof(tn), "t%d_%d", k, j);
        ck_assert_int_eq(qbt_st_writer_add(w, tn, "F32", 1, d, v, sizeof(v)), 0);
    }
    if (k == 1)
        ck_assert_int_eq(qbt_st_writer_add_meta(w, "format", "pt"), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, path_in(name)), 0);
    qbt_st_writer_free(w);
}

static void write_index(const char *body)
{
    size_t n = strlen(body) + 128;
    char *text = malloc(n);
    ck_assert_ptr_nonnull(text);
    snprintf(text, n, "{\"metadata\":{\"total_size\":40},\"weight_map\":{%s}}", body);
    ck_assert_int_eq(qbt_write_text(path_in("model.safetensors.index.json"), text), 0);
    free(text);
}

#define SH1 "model-00001-of-00002.safetensors"
#define SH2 "model-00002-of-00002.safetensors"
#define GOOD_MAP                                                                              \
    "\"t1_0\":\"" SH1 "\",\"t1_1\":\"" SH1 "\",\"t1_2\":\"" SH1 "\",\"t2_0\":\"" SH2 "\"," \
    "\"t2_1\":\"" SH2 "\""

START_TEST(good_sharded_dir)
{
    qb_st_set *set = NULL;
    const qb_st_tensor *t;
    float v[2];
    write_shard(SH1, 1, 3);
    write_shard(SH2, 2, 2);
    write_index(GOOD_MAP);
    ck_assert_int_eq(api->open_dir(host, tmp, &set), QB_OK);
    ck_assert_uint_eq(api->count(set), 5);
    /* ordered by (file, offset) */
    ck_assert_str_eq(api->tensor(set, 0)->name, "t1_0");
    ck_assert_str_eq(api->tensor(set, 3)->name, "t2_0");
    t = api->find(set, "t2_1");
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t->file, SH2));
    memcpy(v, t->data, sizeof(v));
    ck_assert(v[0] == 2.0f && v[1] == 1.0f);
    ck_assert_str_eq(api->metadata(set, "format"), "pt");
    api->close(set);
}
END_TEST

START_TEST(good_dir_model_safetensors_preferred)
{
    qb_st_set *set = NULL;
    write_shard("model.safetensors", 1, 2);
    write_shard("other.safetensors", 2, 1);
    ck_assert_int_eq(api->open_dir(host, tmp, &set), QB_OK);
    ck_assert_uint_eq(api->count(set), 2);
    ck_assert_ptr_nonnull(api->find(set, "t1_1"));
    api->close(set);
}
END_TEST

START_TEST(good_dir_single_gptq_name)
{
    qb_st_set *set = NULL;
    write_shard("gptq_model-4bit-128g.safetensors", 2, 3);
    ck_assert_int_eq(qbt_write_text(path_in("config.json"), "{}"), 0);
    ck_assert_int_eq(api->open_dir(host, tmp, &set), QB_OK);
    ck_assert_uint_eq(api->count(set), 3);
    api->close(set);
}
END_TEST

START_TEST(bad_dir_several_without_index)
{
    write_shard("a.safetensors", 1, 1);
    write_shard("b.safetensors", 2, 1);
    expect_dir_error(tmp, QB_E_MISMATCH, tmp);
}
END_TEST

START_TEST(bad_dir_empty)
{
    expect_dir_error(tmp, QB_E_NOT_FOUND, tmp);
}
END_TEST

/* ---- malformed single files ----------------------------------------- */

#define T_U8_4 "\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}"

START_TEST(bad_truncated_length)
{
    const char *p = path_in("short.safetensors");
    ck_assert_int_eq(qbt_write_text(p, "\x10\x00\x00"), 0);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_header_longer_than_file)
{
    const char *p = path_in("hl.safetensors");
    write_raw(p, "{" T_U8_4 "}", 1000, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_header_over_limit)
{
    const char *p = path_in("huge.safetensors");
    write_raw(p, "{" T_U8_4 "}", 100000001ull, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "limit"));
}
END_TEST

START_TEST(bad_not_json)
{
    const char *p = path_in("nj.safetensors");
    write_raw(p, "{\"x\":{\"dtype\":\"U8\",", UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_not_object)
{
    const char *p = path_in("arr.safetensors");
    write_raw(p, "[1,2,3]", UINT64_MAX, NULL, 0);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_duplicate_key)
{
    const char *p = path_in("dup.safetensors");
    write_raw(p,
              "{\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
              "\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
              UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "duplicate"));
}
END_TEST

START_TEST(bad_duplicate_field_in_entry)
{
    const char *p = path_in("dupf.safetensors");
    write_raw(p, "{\"x\":{\"dtype\":\"U8\",\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
              UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'x'"));
}
END_TEST

START_TEST(bad_unknown_dtype)
{
    const char *p = path_in("dt.safetensors");
    write_raw(p, "{\"w\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,4]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'w'"));
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "Q4"));
}
END_TEST

START_TEST(bad_unsupported_known_dtype)
{
    const char *p = path_in("f4.safetensors");
    write_raw(p, "{\"w\":{\"dtype\":\"F4\",\"shape\":[8],\"data_offsets\":[0,4]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "F4"));
}
END_TEST

START_TEST(bad_negative_dim)
{
    const char *p = path_in("neg.safetensors");
    write_raw(p, "{\"w\":{\"dtype\":\"U8\",\"shape\":[-4],\"data_offsets\":[0,4]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'w'"));
}
END_TEST

START_TEST(bad_fractional_dim)
{
    const char *p = path_in("frac.safetensors");
    write_raw(p, "{\"w\":{\"dtype\":\"U8\",\"shape\":[2.5],\"data_offsets\":[0,4]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_shape_overflow)
{
    const char *p = path_in("ovf.safetensors");
    /* 2^32 * 2^32 * 16 overflows 64 bits; each dim alone is exact in JSON */
    write_raw(p,
              "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
              "\"data_offsets\":[0,4]}}",
              UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "overflow"));
}
END_TEST

START_TEST(bad_bytes_overflow)
{
    const char *p = path_in("ovf2.safetensors");
    /* element count fits in 64 bits, element count * 64 bits does not */
    write_raw(p,
              "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,1073741824],"
              "\"data_offsets\":[0,4]}}",
              UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "overflow"));
}
END_TEST

START_TEST(bad_offsets_overlap)
{
    const char *p = path_in("ovl.safetensors");
    write_raw(p,
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
              UINT64_MAX, zeros64, 6);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "overlap"));
}
END_TEST

START_TEST(bad_offsets_gap)
{
    const char *p = path_in("gap.safetensors");
    write_raw(p,
              "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
              "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[6,10]}}",
              UINT64_MAX, zeros64, 10);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "gap"));
}
END_TEST

START_TEST(bad_offsets_not_from_zero)
{
    const char *p = path_in("nz.safetensors");
    write_raw(p, "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", UINT64_MAX,
              zeros64, 6);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_offsets_out_of_range)
{
    const char *p = path_in("oor.safetensors");
    write_raw(p, "{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "outside"));
}
END_TEST

START_TEST(bad_offsets_byte_count)
{
    const char *p = path_in("cnt.safetensors");
    write_raw(p, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'a'"));
}
END_TEST

START_TEST(bad_offsets_reversed)
{
    const char *p = path_in("rev.safetensors");
    write_raw(p, "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_offsets_three_numbers)
{
    const char *p = path_in("three.safetensors");
    write_raw(p, "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4,4]}}", UINT64_MAX,
              zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_trailing_bytes)
{
    const char *p = path_in("trail.safetensors");
    write_raw(p, "{" T_U8_4 "}", UINT64_MAX, zeros64, 5);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "trailing"));
}
END_TEST

START_TEST(bad_trailing_text_in_header)
{
    const char *p = path_in("trailjson.safetensors");
    write_raw(p, "{" T_U8_4 "}xx", UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_metadata_not_string)
{
    const char *p = path_in("meta.safetensors");
    write_raw(p, "{\"__metadata__\":{\"format\":\"pt\",\"n\":3}," T_U8_4 "}", UINT64_MAX, zeros64,
              4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "__metadata__"));
}
END_TEST

START_TEST(bad_metadata_not_object)
{
    const char *p = path_in("meta2.safetensors");
    write_raw(p, "{\"__metadata__\":\"pt\"," T_U8_4 "}", UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_unknown_entry_key)
{
    const char *p = path_in("key.safetensors");
    write_raw(p, "{\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"scale\":2}}",
              UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
}
END_TEST

START_TEST(bad_utf8_header)
{
    const char *p = path_in("utf.safetensors");
    write_raw(p, "{\"x\xc3\x28\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
              UINT64_MAX, zeros64, 4);
    expect_file_error(p, QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "UTF-8"));
}
END_TEST

START_TEST(bad_missing_file)
{
    expect_file_error(path_in("nothing.safetensors"), QB_E_NOT_FOUND);
}
END_TEST

START_TEST(bad_not_regular_file)
{
    expect_file_error(tmp, QB_E_IO);
}
END_TEST

/* ---- malformed sharded checkpoints ---------------------------------- */

START_TEST(bad_index_parent_path)
{
    write_shard(SH1, 1, 1);
    write_index("\"t1_0\":\"../x.safetensors\"");
    expect_dir_error(tmp, QB_E_MISMATCH, "model.safetensors.index.json");
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "../x.safetensors"));
}
END_TEST

START_TEST(bad_index_subdir_path)
{
    write_index("\"t1_0\":\"sub/x.safetensors\"");
    expect_dir_error(tmp, QB_E_MISMATCH, "model.safetensors.index.json");
}
END_TEST

START_TEST(bad_index_missing_shard)
{
    write_shard(SH1, 1, 3);
    write_index(GOOD_MAP);
    expect_dir_error(tmp, QB_E_NOT_FOUND, SH2);
}
END_TEST

START_TEST(bad_index_tensor_not_listed)
{
    write_shard(SH1, 1, 3);
    write_shard(SH2, 2, 2);
    write_index("\"t1_0\":\"" SH1 "\",\"t1_1\":\"" SH1 "\",\"t1_2\":\"" SH1 "\",\"t2_0\":\"" SH2
                "\"");
    expect_dir_error(tmp, QB_E_MISMATCH, "t2_1");
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), SH2));
}
END_TEST

START_TEST(bad_index_tensor_missing_from_shard)
{
    write_shard(SH1, 1, 3);
    write_shard(SH2, 2, 2);
    write_index(GOOD_MAP ",\"t2_9\":\"" SH2 "\"");
    expect_dir_error(tmp, QB_E_MISMATCH, "t2_9");
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "index.json"));
}
END_TEST

START_TEST(bad_index_tensor_in_other_shard)
{
    write_shard(SH1, 1, 3);
    write_shard(SH2, 2, 2);
    write_index("\"t1_0\":\"" SH1 "\",\"t1_1\":\"" SH1 "\",\"t1_2\":\"" SH2 "\",\"t2_0\":\"" SH2
                "\",\"t2_1\":\"" SH2 "\"");
    expect_dir_error(tmp, QB_E_MISMATCH, "t1_2");
}
END_TEST

START_TEST(bad_index_same_tensor_two_shards)
{
    qbt_st_writer *w = qbt_st_writer_new();
    float v[2] = {0, 0};
    int64_t d[1] = {2};
    write_shard(SH1, 1, 1);
    ck_assert_int_eq(qbt_st_writer_add(w, "t1_0", "F32", 1, d, v, sizeof(v)), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, path_in(SH2)), 0);
    qbt_st_writer_free(w);
    write_index("\"t1_0\":\"" SH1 "\",\"other\":\"" SH2 "\"");
    expect_dir_error(tmp, QB_E_MISMATCH, "t1_0");
}
END_TEST

START_TEST(bad_index_duplicate_key)
{
    write_shard(SH1, 1, 1);
    write_index("\"t1_0\":\"" SH1 "\",\"t1_0\":\"" SH1 "\"");
    expect_dir_error(tmp, QB_E_FORMAT, "index.json");
}
END_TEST

START_TEST(bad_index_not_json)
{
    ck_assert_int_eq(qbt_write_text(path_in("model.safetensors.index.json"), "{\"weight_map\":"), 0);
    expect_dir_error(tmp, QB_E_FORMAT, "index.json");
}
END_TEST

START_TEST(bad_symlink_escaping_dir)
{
    char *outside = qbt_tmpdir("st-outside");
    char target[1024];
    qbt_st_writer *w = qbt_st_writer_new();
    float v[2] = {0, 0};
    int64_t d[1] = {2};
    ck_assert_ptr_nonnull(outside);
    snprintf(target, sizeof(target), "%s/secret.safetensors", outside);
    ck_assert_int_eq(qbt_st_writer_add(w, "t2_0", "F32", 1, d, v, sizeof(v)), 0);
    ck_assert_int_eq(qbt_st_writer_save(w, target), 0);
    qbt_st_writer_free(w);
    write_shard(SH1, 1, 1);
    ck_assert_int_eq(symlink(target, path_in(SH2)), 0);
    write_index("\"t1_0\":\"" SH1 "\",\"t2_0\":\"" SH2 "\"");
    expect_dir_error(tmp, QB_E_MISMATCH, SH2);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "outside"));
    qbt_rmtree(outside);
    free(outside);
}
END_TEST

START_TEST(bad_index_symlink_escaping_dir)
{
    char *outside = qbt_tmpdir("st-outside");
    char target[1024];
    ck_assert_ptr_nonnull(outside);
    snprintf(target, sizeof(target), "%s/model.safetensors.index.json", outside);
    ck_assert_int_eq(qbt_write_text(target, "{\"weight_map\":{}}"), 0);
    ck_assert_int_eq(symlink(target, path_in("model.safetensors.index.json")), 0);
    expect_dir_error(tmp, QB_E_MISMATCH, "model.safetensors.index.json");
    qbt_rmtree(outside);
    free(outside);
}
END_TEST

START_TEST(good_symlink_inside_dir)
{
    qb_st_set *set = NULL;
    write_shard("real.bin", 1, 1);
    ck_assert_int_eq(symlink("real.bin", path_in("model.safetensors")), 0);
    ck_assert_int_eq(api->open_dir(host, tmp, &set), QB_OK);
    ck_assert_uint_eq(api->count(set), 1);
    api->close(set);
}
END_TEST

START_TEST(many_shards_few_descriptors)
{
    /* File descriptors are closed once a shard is mapped, so a checkpoint
     * with more shards than the process may open files still opens
     * (a sharded 70B has ~30 shards, large MoE models several hundred). */
    struct rlimit rl = {32, 32};
    char *map = malloc(200 * 64), name[64];
    size_t len = 0;
    int k;
    qb_st_set *set = NULL;
    ck_assert_ptr_nonnull(map);
    map[0] = '\0';
    for (k = 0; k < 200; k++) {
        snprintf(name, sizeof(name), "model-%05d-of-00200.safetensors", k + 1);
        write_shard(name, k, 1);
        len += (size_t)snprintf(map + len, 200 * 64 - len, "%s\"t%d_0\":\"%s\"", k ? "," : "", k,
                                name);
    }
    write_index(map);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(api->open_dir(host, tmp, &set) == QB_OK, "%s", qbt_host_last_error());
    ck_assert_uint_eq(api->count(set), 200);
    for (k = 0; k < 200; k++) {
        char tn[32];
        float v[2];
        const qb_st_tensor *t;
        snprintf(tn, sizeof(tn), "t%d_0", k);
        t = api->find(set, tn);
        ck_assert_ptr_nonnull(t);
        memcpy(v, t->data, sizeof(v));
        ck_assert(v[0] == (float)k && v[1] == 0.0f);
    }
    api->close(set);
    free(map);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("safetensors");
    TCase *g = tcase_create("good"), *b = tcase_create("malformed"), *d = tcase_create("dir");
    tcase_add_checked_fixture(g, setup, teardown);
    tcase_add_checked_fixture(b, setup, teardown);
    tcase_add_checked_fixture(d, setup, teardown);
    tcase_add_test(g, good_single_file);
    tcase_add_test(g, good_unaligned_and_whitespace);
    tcase_add_test(g, good_empty_file_no_tensors);
    tcase_add_test(d, good_sharded_dir);
    tcase_add_test(d, good_dir_model_safetensors_preferred);
    tcase_add_test(d, good_dir_single_gptq_name);
    tcase_add_test(d, good_symlink_inside_dir);
    tcase_add_test(d, bad_dir_several_without_index);
    tcase_add_test(d, bad_dir_empty);
    tcase_add_test(b, bad_truncated_length);
    tcase_add_test(b, bad_header_longer_than_file);
    tcase_add_test(b, bad_header_over_limit);
    tcase_add_test(b, bad_not_json);
    tcase_add_test(b, bad_not_object);
    tcase_add_test(b, bad_duplicate_key);
    tcase_add_test(b, bad_duplicate_field_in_entry);
    tcase_add_test(b, bad_unknown_dtype);
    tcase_add_test(b, bad_unsupported_known_dtype);
    tcase_add_test(b, bad_negative_dim);
    tcase_add_test(b, bad_fractional_dim);
    tcase_add_test(b, bad_shape_overflow);
    tcase_add_test(b, bad_bytes_overflow);
    tcase_add_test(b, bad_offsets_overlap);
    tcase_add_test(b, bad_offsets_gap);
    tcase_add_test(b, bad_offsets_not_from_zero);
    tcase_add_test(b, bad_offsets_out_of_range);
    tcase_add_test(b, bad_offsets_byte_count);
    tcase_add_test(b, bad_offsets_reversed);
    tcase_add_test(b, bad_offsets_three_numbers);
    tcase_add_test(b, bad_trailing_bytes);
    tcase_add_test(b, bad_trailing_text_in_header);
    tcase_add_test(b, bad_metadata_not_string);
    tcase_add_test(b, bad_metadata_not_object);
    tcase_add_test(b, bad_unknown_entry_key);
    tcase_add_test(b, bad_utf8_header);
    tcase_add_test(b, bad_missing_file);
    tcase_add_test(b, bad_not_regular_file);
    tcase_add_test(d, bad_index_parent_path);
    tcase_add_test(d, bad_index_subdir_path);
    tcase_add_test(d, bad_index_missing_shard);
    tcase_add_test(d, bad_index_tensor_not_listed);
    tcase_add_test(d, bad_index_tensor_missing_from_shard);
    tcase_add_test(d, bad_index_tensor_in_other_shard);
    tcase_add_test(d, bad_index_same_tensor_two_shards);
    tcase_add_test(d, bad_index_duplicate_key);
    tcase_add_test(d, bad_index_not_json);
    tcase_add_test(d, bad_symlink_escaping_dir);
    tcase_add_test(d, many_shards_few_descriptors);
    tcase_add_test(d, bad_index_symlink_escaping_dir);
    suite_add_tcase(s, g);
    suite_add_tcase(s, b);
    suite_add_tcase(s, d);
    return s;
}
