/* The kit's SHA-256 (sdk/kit/qbk_sha256.c) against the FIPS 180-2/180-4
 * example vectors (NIST CSRC "SHA256.pdf" examples: "abc", the 448- and
 * 896-bit messages, one million 'a'), the empty string, chunked updates
 * equal to one-shot updates, and the whole-file helper. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbh.h"
#include "qbt_check_main.h"

static void hex_of(const void *data, size_t len, char out[65])
{
    qbk_sha256 c;
    uint8_t d[32];
    qbk_sha256_init(&c);
    qbk_sha256_update(&c, data, len);
    qbk_sha256_final(&c, d);
    qbk_sha256_hex(d, out);
}

START_TEST(standard_vectors)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnop"
         "qrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    size_t i;
    char h[65];
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        hex_of(v[i].msg, strlen(v[i].msg), h);
        ck_assert_str_eq(h, v[i].hex);
    }
}
END_TEST

START_TEST(million_a)
{
    char *m = malloc(1000000), h[65];
    ck_assert_ptr_nonnull(m);
    memset(m, 'a', 1000000);
    hex_of(m, 1000000, h);
    ck_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}
END_TEST

START_TEST(chunked_equals_oneshot)
{
    uint8_t buf[1000];
    size_t i, pos, step;
    char want[65], got[65];
    for (i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 131u + 7u);
    hex_of(buf, sizeof buf, want);
    /* Chunk sizes around the 64-byte block and the 56-byte padding edge. */
    for (step = 1; step <= 130; step++) {
        qbk_sha256 c;
        uint8_t d[32];
        qbk_sha256_init(&c);
        for (pos = 0; pos < sizeof buf; pos += step)
            qbk_sha256_update(&c, buf + pos, pos + step > sizeof buf ? sizeof buf - pos : step);
        qbk_sha256_final(&c, d);
        qbk_sha256_hex(d, got);
        ck_assert_str_eq(got, want);
    }
    /* Lengths 55, 56, 63, 64 exercise both padding branches. */
    hex_of("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 55, got);
    ck_assert_str_eq(got, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    hex_of("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 56, got);
    ck_assert_str_eq(got, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}
END_TEST

/* qbk_sha256_file: the FIPS "abc" vector from a file, its size, and a
 * missing file reported through errno. */
START_TEST(file_digest)
{
    char path[] = "/tmp/qbk-sha256-XXXXXX", h[65];
    uint8_t d[32];
    uint64_t n = 0;
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "abc", 3), 3);
    close(fd);
    ck_assert_int_eq(qbk_sha256_file(path, d, &n), 0);
    qbk_sha256_hex(d, h);
    ck_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ck_assert_uint_eq(n, 3);
    unlink(path);
    errno = 0;
    ck_assert_int_eq(qbk_sha256_file(path, d, &n), -1);
    ck_assert_int_eq(errno, ENOENT);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sha256");
    TCase *tc = tcase_create("fips180");
    tcase_add_test(tc, standard_vectors);
    tcase_add_test(tc, million_a);
    tcase_add_test(tc, chunked_equals_oneshot);
    tcase_add_test(tc, file_digest);
    suite_add_tcase(s, tc);
    return s;
}
