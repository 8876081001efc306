/*
 * GGUF reader — one GGUF file: header, metadata key/values and tensor
 * infos, parsed from a read-only memory map with every bound checked
 * before anything is allocated.
 *
 * Layout facts: ggml-org/ggml `src/gguf.cpp` (gguf_init_from_file_impl) and
 * docs/formats/gguf.md "Container layout". Internal to the gguf plugin.
 */
#ifndef GGUF_CONTAINER_H
#define GGUF_CONTAINER_H

#include <quantbridge/qb_host.h>

#include <stddef.h>
#include <stdint.h>

/* GGUF metadata value types (ggml `enum gguf_type`). */
enum {
    GGUF_VT_UINT8 = 0,
    GGUF_VT_INT8 = 1,
    GGUF_VT_UINT16 = 2,
    GGUF_VT_INT16 = 3,
    GGUF_VT_UINT32 = 4,
    GGUF_VT_INT32 = 5,
    GGUF_VT_FLOAT32 = 6,
    GGUF_VT_BOOL = 7,
    GGUF_VT_STRING = 8,
    GGUF_VT_ARRAY = 9,
    GGUF_VT_UINT64 = 10,
    GGUF_VT_INT64 = 11,
    GGUF_VT_FLOAT64 = 12,
    GGUF_VT_COUNT = 13
};

#define GGUF_MAX_DIMS 4          /* GGML_MAX_DIMS */
#define GGUF_MAX_NAME 64         /* GGML_MAX_NAME: names are shorter than this */
#define GGUF_DEFAULT_ALIGNMENT 32 /* GGUF_DEFAULT_ALIGNMENT in gguf.h */

struct gguf_file;

/* One metadata entry. `val` points at the value bytes inside the map (for
 * an ARRAY: at the first element, after elem type and count). */
typedef struct gguf_kv {
    char *key;          /* NUL-terminated copy, owned by the file */
    uint32_t type;      /* GGUF_VT_* */
    uint32_t arr_type;  /* element type when type == ARRAY */
    uint64_t arr_n;     /* element count when type == ARRAY */
    const uint8_t *val; /* value bytes in the map */
} gguf_kv;

/* One tensor info, validated: dims > 0, type known to gguf_ggml, data
 * inside the file, aligned, not overlapping another tensor. */
typedef struct gguf_tinfo {
    char *name;                 /* NUL-terminated copy, owned by the file */
    uint32_t n_dims;            /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS];  /* ggml order: ne[0] contiguous; unused = 1 */
    uint32_t type;              /* ggml type id */
    uint64_t offset;            /* relative to the data section */
    uint64_t row_bytes;         /* bytes of one ggml row (ne[0] elements) */
    int64_t n_rows;             /* ne[1]*ne[2]*ne[3] */
    uint64_t nbytes;            /* row_bytes * n_rows */
    const uint8_t *data;        /* absolute pointer into the map */
    const struct gguf_file *file;
} gguf_tinfo;

typedef struct gguf_file {
    char *path;              /* owned copy, used in every message */
    const uint8_t *map;      /* whole file */
    size_t size;
    int mapped;              /* 1: map came from mmap and is unmapped on close */
    uint32_t version;        /* 2 or 3 */
    uint32_t alignment;      /* general.alignment or 32 */
    uint64_t data_start;     /* absolute offset of the data section */
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tinfo *t;
} gguf_file;

/* Parses a whole GGUF image `buf` of `size` bytes (the caller keeps it
 * alive and unchanged until gguf_file_close). `path` names the file in
 * messages and is copied. On success *out owns the parsed description but
 * not buf. Failure: QB_E_FORMAT (corrupt, truncated, big-endian, bad
 * alignment/offsets, duplicate names), QB_E_UNSUPPORTED (version other than
 * 2/3, unknown ggml type id), QB_E_NOMEM; message set through h, *out NULL.
 * Allocates only after the counts it sizes were checked against the bytes
 * left in the file. Thread-safe (no shared state). */
qb_status gguf_file_parse(const qb_host *h, const char *path, const uint8_t *buf, size_t size,
                          gguf_file **out);

/* Opens and memory-maps `path` read-only, then parses it as above.
 * Extra failures: QB_E_NOT_FOUND (missing), QB_E_IO (not a regular file,
 * mmap failed). The map is released by gguf_file_close. */
qb_status gguf_file_open(const qb_host *h, const char *path, gguf_file **out);

/* Releases everything the file owns (and the map when it opened it).
 * NULL is a no-op. */
void gguf_file_close(gguf_file *f);

/* Tensor named `name` in this file, or NULL. O(n). */
const gguf_tinfo *gguf_file_find_tensor(const gguf_file *f, const char *name);

#endif /* GGUF_CONTAINER_H */
