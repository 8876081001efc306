/* The ABI 1.3 services of qb_host (issue 30) as a plugin reaches them:
 * streaming SHA-256 against FIPS 180-4's examples and whatever the split,
 * a mapped data file, the JSON copy/remove/typed setters, the Hugging Face
 * config.json clean-up and the sink's write_file; each present in a 1.3
 * table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_host.h"

static const qb_host *H;

static void setup(void)
{
    H = qbt_host();
    ck_assert(QB_HAS_FIELD(H, qb_host, hf_config_clean));
    ck_assert_ptr_nonnull(H->sha256_new);
    ck_assert_ptr_nonnull(H->map_file);
    ck_assert(QB_HAS_FIELD(H->json, qb_json_api, set_bool));
    qbt_host_reset();
}

static void hex(const uint8_t d[32], char out[65])
{
    int i;
    for (i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* FIPS 180-4 (and NIST's example values): "abc", and the two-block message. */
START_TEST(sha256_streams_in_any_split)
{
    static const char *const msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    uint8_t d[32];
    char x[65];
    size_t cut, n = strlen(msg);
    qb_sha256 *c = H->sha256_new(H);
    ck_assert_ptr_nonnull(c);
    H->sha256_update(c, "abc", 3);
    H->sha256_final(c, d);
    hex(d, x);
    ck_assert_str_eq(x, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    for (cut = 0; cut <= n; cut++) {
        c = H->sha256_new(H);
        H->sha256_update(c, msg, cut);
        H->sha256_update(c, msg + cut, 0);
        H->sha256_update(c, msg + cut, n - cut);
        H->sha256_final(c, d);
        hex(d, x);
        ck_assert_str_eq(x, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    }
    /* given up early: final with no digest frees it */
    c = H->sha256_new(H);
    H->sha256_update(c, "x", 1);
    H->sha256_final(c, NULL);
    ck_assert_int_eq(qbh_alloc_live(), 0);
}
END_TEST

START_TEST(map_file_maps_and_refuses)
{
    const char *dir = qbt_scratch("svc13-map");
    char *p = qbt_path(dir, "data.bin"), *e = qbt_path(dir, "empty.bin");
    qb_mapped_file m;
    qbt_write_file(p, "0123456789");
    qbt_write_file(e, "");
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    ck_assert_int_eq(H->map_file(H, p, &m), QB_OK);
    ck_assert_uint_eq(m.size, 10);
    ck_assert(memcmp(m.data, "0123456789", 10) == 0);
    H->unmap_file(H, &m);
    ck_assert_ptr_null(m.data);
    m.struct_size = sizeof m;
    ck_assert_int_eq(H->map_file(H, e, &m), QB_OK);
    ck_assert_uint_eq(m.size, 0);
    H->unmap_file(H, &m);
    ck_assert_int_eq(H->map_file(H, dir, &m), QB_E_IO);
    ck_assert_msg(strstr(qbt_host_last_error(), "not a regular file"), "%s",
                  qbt_host_last_error());
    ck_assert_int_eq(H->map_file(H, "/nonexistent/qb-data", &m), QB_E_NOT_FOUND);
    ck_assert_ptr_null(m.host_private);
    H->unmap_file(H, &m); /* zeroed: no-op */
    ck_assert_int_eq(qbh_alloc_live(), 0);
    free(p);
    free(e);
}
END_TEST

static char *emit(const qb_json *j)
{
    char *out = NULL;
    ck_assert_int_eq(H->json->emit(H, j, 0, &out, NULL), QB_OK);
    return out;
}

START_TEST(json_copy_remove_setters)
{
    const qb_json_api *J = H->json;
    static const char text[] = "{\"a\": {\"b\": [1, 2.5, \"x\"]}, \"n\": 9007199254740992, "
                               "\"k\": true}";
    qb_json *t = NULL, *c;
    char *s;
    int64_t i = 0;
    ck_assert_int_eq(J->parse(H, "t", text, strlen(text), &t), QB_OK);
    /* a copy of an inner node is a root of its own, the original intact */
    c = J->copy(J->get(t, "a"));
    ck_assert_ptr_nonnull(c);
    s = emit(c);
    ck_assert_str_eq(s, "{\"b\":[1,2.5,\"x\"]}");
    H->free(H, s);
    ck_assert_uint_eq(J->count(J->get(c, "b")), 3);
    ck_assert_int_eq(J->add(t, "copy", c), QB_OK); /* a root: movable */
    c = J->copy(t);
    ck_assert(J->get_int(J->get(c, "n"), &i));
    ck_assert(i == 9007199254740992LL);
    J->free(c);
    /* remove */
    ck_assert_int_eq(J->remove(t, "copy"), QB_OK);
    ck_assert_int_eq(J->remove(t, "copy"), QB_E_NOT_FOUND);
    ck_assert_int_eq(J->remove((qb_json *)J->get(t, "k"), "x"), QB_E_INVALID);
    ck_assert_uint_eq(J->count(t), 3);
    /* setters replace in place or append */
    ck_assert_int_eq(J->set_string(t, "k", "v\xc3\xa9"), QB_OK);
    ck_assert_int_eq(J->set_number(t, "m", 0.5), QB_OK);
    ck_assert_int_eq(J->set_bool(t, "a", 0), QB_OK);
    ck_assert_int_eq(J->set_number(t, "m2", 1.0 / 0.0), QB_E_INVALID);
    ck_assert_int_eq(J->set_string((qb_json *)J->get(t, "m"), "x", "y"), QB_E_INVALID);
    s = emit(t);
    ck_assert_str_eq(s, "{\"a\":false,\"n\":9007199254740992,\"k\":\"v\xc3\xa9\",\"m\":0.5}");
    H->free(H, s);
    J->free(t);
    ck_assert_int_eq(qbh_alloc_live(), 0);
}
END_TEST

START_TEST(hf_config_clean_one_rule)
{
    static const char cfg[] = "{\"model_type\": \"llama\", \"rope_theta\": 500000.0, "
                              "\"quantization_config\": {\"bits\": 4}, \"torch_dtype\": "
                              "\"bfloat16\", \"compression_config\": {}}";
    const char *keys[] = {"torch_dtype", "tie_word_embeddings", NULL};
    const char *vals[] = {"\"float16\"", "false", NULL};
    char *out = NULL;
    size_t len = 0;
    ck_assert_int_eq(H->hf_config_clean(H, "config.json", cfg, keys, vals, &out, &len), QB_OK);
    ck_assert_uint_eq(len, strlen(out));
    /* the quantization description gone, numbers as written, the key set in
     * place, the new one appended, a newline at the end */
    ck_assert_msg(!strstr(out, "quantization_config") && !strstr(out, "compression_config"),
                  "%s", out);
    ck_assert_msg(strstr(out, "500000.0"), "%s", out);
    ck_assert_msg(strstr(out, "\"torch_dtype\": \"float16\"") ||
                      strstr(out, "\"torch_dtype\":\"float16\""), "%s", out);
    ck_assert_msg(strstr(out, "tie_word_embeddings"), "%s", out);
    ck_assert_msg(strstr(out, "torch_dtype") < strstr(out, "tie_word_embeddings"), "%s", out);
    ck_assert_int_eq(out[len - 1], '\n');
    H->free(H, out);
    ck_assert_int_eq(H->hf_config_clean(H, "config.json", "[1]", NULL, NULL, &out, NULL),
                     QB_E_FORMAT);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(H->hf_config_clean(H, "config.json", "{\"a\": 1, \"a\": 2}", NULL, NULL,
                                        &out, NULL), QB_E_FORMAT);
    ck_assert_int_eq(qbh_alloc_live(), 0);
}
END_TEST

START_TEST(sink_write_file_whole)
{
    const char *dir = qbt_scratch("svc13-sink");
    qbh_sink *s = NULL;
    const qb_sink *t;
    uint8_t d[32], e[32];
    char *p = qbt_path(dir, "small.txt"), *got;
    qb_sha256 *c;
    ck_assert_int_eq(qbh_sink_open(dir, &s), QB_OK);
    t = qbh_sink_table(s);
    ck_assert(QB_HAS_FIELD(t, qb_sink, write_file));
    ck_assert_int_eq(t->write_file(t->handle, "small.txt", "hello\n", 6, d), QB_OK);
    c = H->sha256_new(H);
    H->sha256_update(c, "hello\n", 6);
    H->sha256_final(c, e);
    ck_assert(memcmp(d, e, 32) == 0);
    /* the same name twice: the sink's create refuses, nothing left open */
    ck_assert_int_eq(t->write_file(t->handle, "small.txt", "x", 1, NULL), QB_E_INVALID);
    ck_assert_uint_eq(qbh_sink_open_files(s), 0);
    ck_assert_uint_eq(qbh_sink_closed_files(s), 1);
    ck_assert_uint_eq(qbh_sink_bytes(s), 6);
    qbh_sink_free(s);
    got = qbt_read_file(p, NULL);
    ck_assert_str_eq(got, "hello\n");
    free(got);
    free(p);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("services_13");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, sha256_streams_in_any_split);
    tcase_add_test(tc, map_file_maps_and_refuses);
    tcase_add_test(tc, json_copy_remove_setters);
    tcase_add_test(tc, hf_config_clean_one_rule);
    tcase_add_test(tc, sink_write_file_whole);
    suite_add_tcase(s, tc);
    return s;
}
