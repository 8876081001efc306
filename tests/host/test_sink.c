/* sink.c: name rules, buffered writes with the right bytes and SHA-256,
 * file-size limit mapped to QB_E_NOSPACE, allocation failure, services. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_run.h"

START_TEST(names_and_duplicates)
{
    char *d = qbt_mkdtemp("sink-names");
    qbh_sink *s;
    const qb_sink *t;
    qb_sink_file *f;
    ck_assert_int_eq(qbh_sink_open(d, &s), QB_OK);
    t = qbh_sink_table(s);
    ck_assert_int_eq(t->create(t->handle, "a/b", &f), QB_E_INVALID);
    ck_assert_int_eq(t->create(t->handle, ".hidden", &f), QB_E_INVALID);
    ck_assert_int_eq(t->create(t->handle, "..", &f), QB_E_INVALID);
    ck_assert_int_eq(t->create(t->handle, "", &f), QB_E_INVALID);
    ck_assert_int_eq(t->create(t->handle, "ok.bin", &f), QB_OK);
    ck_assert_uint_eq(qbh_sink_open_files(s), 1);
    ck_assert_int_eq(t->close(f, NULL, NULL), QB_OK);
    ck_assert_int_eq(t->create(t->handle, "ok.bin", &f), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "created twice"));
    ck_assert_uint_eq(qbh_sink_open_files(s), 0);
    ck_assert_uint_eq(qbh_sink_closed_files(s), 1);
    qbh_sink_free(s);
    free(d);
}
END_TEST

START_TEST(bytes_and_hash)
{
    char *d = qbt_mkdtemp("sink-data"), *p, *back, hex[65], want[65];
    size_t n = 3u << 20, len = 0, pos = 0, step = 1;
    uint8_t *buf = malloc(n), sha[32], d2[32];
    uint64_t bytes = 0;
    qbh_sink *s;
    const qb_sink *t;
    qb_sink_file *f;
    qbk_sha256 c;
    size_t i;
    for (i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 13);
    ck_assert_int_eq(qbh_sink_open(d, &s), QB_OK);
    t = qbh_sink_table(s);
    ck_assert_int_eq(t->create(t->handle, "data.bin", &f), QB_OK);
    /* Mixed write sizes: tiny, across the 1 MiB buffer, bigger than it. */
    while (pos < n) {
        size_t k = step > n - pos ? n - pos : step;
        ck_assert_int_eq(t->write(f, buf + pos, k), QB_OK);
        pos += k;
        step = step * 7 + 1;
    }
    ck_assert_int_eq(t->close(f, &bytes, sha), QB_OK);
    ck_assert_uint_eq(bytes, n);
    ck_assert_uint_eq(qbh_sink_bytes(s), n);
    ck_assert_int_eq(qbh_sink_sync(s), QB_OK);
    qbh_sink_free(s);
    p = qbt_path(d, "data.bin");
    back = qbt_read_file(p, &len);
    ck_assert_uint_eq(len, n);
    ck_assert_int_eq(memcmp(back, buf, n), 0);
    qbk_sha256_init(&c);
    qbk_sha256_update(&c, buf, n);
    qbk_sha256_final(&c, d2);
    qbk_sha256_hex(sha, hex);
    qbk_sha256_hex(d2, want);
    ck_assert_str_eq(hex, want);
    free(back);
    free(p);
    free(buf);
    free(d);
}
END_TEST

START_TEST(file_size_limit_is_nospace)
{
    char *d = qbt_mkdtemp("sink-fsize");
    static uint8_t block[1 << 16];
    struct rlimit rl = {100000, 100000};
    qbh_sink *s;
    const qb_sink *t;
    qb_sink_file *f;
    qb_status rc = QB_OK;
    int i;
    /* RLIMIT_FSIZE: write() fails with EFBIG once SIGXFSZ is ignored. */
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(qbh_sink_open(d, &s), QB_OK);
    t = qbh_sink_table(s);
    ck_assert_int_eq(t->create(t->handle, "big.bin", &f), QB_OK);
    for (i = 0; i < 40 && rc == QB_OK; i++)
        rc = t->write(f, block, sizeof block);
    ck_assert_int_eq(rc, QB_E_NOSPACE);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "big.bin"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "file size limit"));
    ck_assert_int_eq(t->write(f, block, 1), QB_E_IO);
    ck_assert_int_eq(t->close(f, NULL, NULL), QB_E_NOSPACE);
    qbh_sink_free(s);
    free(d);
}
END_TEST

START_TEST(alloc_failure)
{
    char *d = qbt_mkdtemp("sink-oom");
    qbh_sink *s;
    const qb_sink *t;
    qb_sink_file *f = (qb_sink_file *)1;
    ck_assert_int_eq(qbh_sink_open(d, &s), QB_OK);
    t = qbh_sink_table(s);
    qbh_alloc_fail_after(1);
    ck_assert_int_eq(t->create(t->handle, "x.bin", &f), QB_E_NOMEM);
    ck_assert_ptr_null(f);
    qbh_alloc_fail_after(-1);
    ck_assert_int_eq(t->create(t->handle, "x.bin", &f), QB_OK);
    ck_assert_int_eq(t->close(f, NULL, NULL), QB_OK);
    /* A file left open is discarded by free, without leaks. */
    ck_assert_int_eq(t->create(t->handle, "y.bin", &f), QB_OK);
    ck_assert_int_eq(t->write(f, "abc", 3), QB_OK);
    qbh_sink_free(s);
    free(d);
}
END_TEST

START_TEST(services_read_and_list)
{
    const qb_host *h = qbh_services_anonymous();
    char *d = qbt_mkdtemp("svc"), *a = qbt_path(d, "b.txt"), *b = qbt_path(d, "a.txt");
    char **names = NULL;
    void *data = NULL;
    size_t len = 0;
    qbt_write_file(a, "hello");
    qbt_write_file(b, "");
    ck_assert_int_eq(h->read_small_file(h, a, 100, &data, &len), QB_OK);
    ck_assert_uint_eq(len, 5);
    ck_assert_str_eq((char *)data, "hello");
    h->free(h, data);
    ck_assert_int_eq(h->read_small_file(h, a, 4, &data, &len), QB_E_RANGE);
    ck_assert_ptr_null(data);
    ck_assert_int_eq(h->read_small_file(h, "/nonexistent/f", 4, &data, &len), QB_E_NOT_FOUND);
    ck_assert_int_eq(h->read_small_file(h, d, 4, &data, &len), QB_E_IO);
    ck_assert_int_eq(h->list_dir(h, d, &names), QB_OK);
    ck_assert_str_eq(names[0], "a.txt");
    ck_assert_str_eq(names[1], "b.txt");
    ck_assert_ptr_null(names[2]);
    h->free_list(h, names);
    ck_assert_int_eq(h->list_dir(h, "/nonexistent/d", &names), QB_E_NOT_FOUND);
    ck_assert_int_eq(h->set_error(h, QB_E_FORMAT, "x %d", 5), QB_E_FORMAT);
    ck_assert_str_eq(qbh_error_message(), "x 5");
    ck_assert_ptr_null(h->get_config(h, "anything"));
    ck_assert_ptr_null(h->get_proc(h, "anything"));
    ck_assert_ptr_nonnull(h->safetensors);
    ck_assert_uint_ge(h->thread_count(h), 1);
    free(a);
    free(b);
    free(d);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sink");
    TCase *tc = tcase_create("sink");
    tcase_add_test(tc, names_and_duplicates);
    tcase_add_test(tc, bytes_and_hash);
    tcase_add_test(tc, file_size_limit_is_nospace);
    tcase_add_test(tc, alloc_failure);
    tcase_add_test(tc, services_read_and_list);
    suite_add_tcase(s, tc);
    return s;
}
