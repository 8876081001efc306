/*
 * Internal to libquantbridge-w4a16: SHA-256 (FIPS 180-4) of a file, for the
 * loader's optional integrity check of manifest "files" entries.
 */
#ifndef W4A16_SHA256_H
#define W4A16_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct w4a16_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t buf[64];
    size_t buf_len;
} w4a16_sha256;

void w4a16_sha256_init(w4a16_sha256 *s);
void w4a16_sha256_update(w4a16_sha256 *s, const void *data, size_t len);
/* Writes the digest as 64 lowercase hex characters plus NUL into hex[65]. */
void w4a16_sha256_final_hex(w4a16_sha256 *s, char hex[65]);

/* Hashes the whole file at `path` with bounded memory (1 MiB reads).
 * Returns 0, or -1 with errno set when the file cannot be read. */
int w4a16_sha256_file(const char *path, char hex[65]);

#endif
