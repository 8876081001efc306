/*
 * Test fixtures: a small safetensors writer and helpers shared by every
 * fixture generator (tests only; never linked into the tool).
 *
 * Files follow the safetensors format exactly (huggingface/safetensors
 * README "Format"): u64 LE header length, JSON header padded with spaces to
 * a multiple of 8, tensor data in insertion order with no holes.
 *
 * All functions return 0 on success, -1 on failure (errno-style message on
 * stderr). Not thread-safe per writer.
 */
#ifndef QBT_ST_WRITER_H
#define QBT_ST_WRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct qbt_st_writer qbt_st_writer;

/* New empty file description. NULL on allocation failure. */
qbt_st_writer *qbt_st_writer_new(void);
void qbt_st_writer_free(qbt_st_writer *w);

/* Adds a tensor; `data` (n_bytes) is copied. dtype is the safetensors
 * string ("F32", "BF16", "I32", ...). n_dims may be 0 (scalar). */
int qbt_st_writer_add(qbt_st_writer *w, const char *name, const char *dtype, int n_dims,
                      const int64_t *dims, const void *data, size_t n_bytes);

/* Adds a `__metadata__` string entry. */
int qbt_st_writer_add_meta(qbt_st_writer *w, const char *key, const char *value);

/* Writes the file. */
int qbt_st_writer_save(const qbt_st_writer *w, const char *path);

/* Names of the tensors added so far, in order (for index files). */
size_t qbt_st_writer_count(const qbt_st_writer *w);
const char *qbt_st_writer_name(const qbt_st_writer *w, size_t i);
size_t qbt_st_writer_total_bytes(const qbt_st_writer *w);

/* Writes a whole text file. */
int qbt_write_text(const char *path, const char *text);

/* Deterministic generator (splitmix64), so fixtures are reproducible. */
typedef struct qbt_rng { uint64_t s; } qbt_rng;
uint64_t qbt_rng_u64(qbt_rng *r);
/* Uniform in [0, 1). */
double qbt_rng_uniform(qbt_rng *r);
/* Standard normal (Box-Muller). */
double qbt_rng_normal(qbt_rng *r);

#endif
