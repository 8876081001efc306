/*
 * quantbridge internal kit — SHA-256 (FIPS 180-4), streaming.
 *
 * The one implementation in the project: the host's sink hashes every
 * output file with it, the W4A16 format code (the sm86-w4a16 plugin and
 * libquantbridge-w4a16, through w4a16_manifest.h) checks manifest
 * digests with it. Internal: linked statically, hidden, never part of the ABI.
 */
#ifndef QBK_SHA256_H
#define QBK_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Running hash state. Plain data: copy it to fork a hash. */
typedef struct qbk_sha256 {
    uint32_t h[8];
    uint64_t n_bytes;
    uint8_t buf[64];
    size_t buf_len;
} qbk_sha256;

/* Starts a new hash in *c. Never fails. Thread-safe for distinct states. */
void qbk_sha256_init(qbk_sha256 *c);
/* Feeds len bytes (len 0 is allowed; data may then be NULL). Never fails. */
void qbk_sha256_update(qbk_sha256 *c, const void *data, size_t len);
/* Writes the 32-byte digest; *c must be re-initialised before reuse. */
void qbk_sha256_final(qbk_sha256 *c, uint8_t out[32]);
/* Lowercase hex of a digest into out[65] (NUL-terminated). */
void qbk_sha256_hex(const uint8_t d[32], char out[65]);

/* Digest and size of the whole file at `path`, read in 1 MiB chunks (the
 * memory used does not grow with the file). Returns 0 with out and *bytes
 * set, or -1 with errno set (ENOENT, EIO, ENOMEM, ...) and out, *bytes
 * unspecified. Thread-safe. */
int qbk_sha256_file(const char *path, uint8_t out[32], uint64_t *bytes);

#endif /* QBK_SHA256_H */
