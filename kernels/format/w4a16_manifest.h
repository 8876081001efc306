/*
 * The W4A16 format (kernels/format, internal) — the one reader and
 * checker of a native W4A16 directory's manifest.json
 * (docs/w4a16-format.md, format "sm86-w4a16" version 1), shared by the sm86-w4a16 plugin's reader and
 * libquantbridge-w4a16's loader so both accept exactly the same
 * directories. What the format leaves open is settled strictly in
 * w4a16-format.md "Strict reading": lowercase hex digests, no duplicate
 * JSON keys, no file name starting with '.', at least one layer, layer
 * file numbers as wide as the largest index (w4a16_names.h).
 * No GLib, no qb_host (the library links it too): failures go to a
 * qbk_st_err.
 */
#ifndef W4A16_MANIFEST_H
#define W4A16_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "qbk_safetensors.h"
#include "w4a16_names.h"

/* One "files" entry. */
typedef struct w4a16_file {
    char *name;        /* plain file name inside the directory; owned */
    uint64_t bytes;    /* size the manifest states */
    char sha256[65];   /* 64 lowercase hex digits */
} w4a16_file;

/* A manifest that passed w4a16_manifest_parse. Immutable afterwards:
 * any thread may read it. */
typedef struct w4a16_manifest {
    int64_t group_size;     /* 1 .. INT32_MAX; a linear with fewer columns has one group per row */
    int64_t num_layers;     /* 1 .. W4A16_MAX_LAYERS */
    int tied;               /* tie_word_embeddings */
    int quantized_head;     /* feature quantized_lm_head (lm_head "quantized") */
    int input_perm;         /* feature input_permutation */
    char *architecture;     /* non-empty; owned. Whether it is supported is the caller's call */
    char *source_format;    /* source.format, "" when absent; owned */
    w4a16_file *files;  /* in manifest order, names distinct; owned */
    size_t n_files;
} w4a16_manifest;

/* Parses and checks the text of manifest.json (`path` only names it in
 * messages; text need not be NUL-terminated):
 *   - a JSON object without a duplicate key in any object;
 *   - format "sm86-w4a16"; format_version an integer, 1 (another integer is
 *     QB_E_UNSUPPORTED); bits 4, symmetric true, code_offset 8,
 *     nibble_order "low-even"; group_size an integer in [1, INT32_MAX]
 *     (w4a16-format.md "Strict reading"); num_layers an
 *     integer in [1, W4A16_MAX_LAYERS]; architecture a non-empty
 *     string; tie_word_embeddings a boolean;
 *   - features a list of distinct known feature strings (an unknown one is
 *     QB_E_UNSUPPORTED); lm_head "quantized" exactly when quantized_lm_head
 *     is listed (never with tied embeddings), else "f16";
 *   - files a list of objects {name, bytes, sha256}: name non-empty, no
 *     '/', not starting with '.', listed once; bytes an integer >= 0;
 *     sha256 64 lowercase hex digits; config.json, embed.safetensors,
 *     norm.safetensors, every layer file (w4a16_layer_file) and
 *     lm_head.safetensors unless tied must be listed; lm_head.safetensors
 *     must not be listed when tied.
 * Returns QB_OK with *out filled (free with w4a16_manifest_free), or
 * QB_E_FORMAT / QB_E_UNSUPPORTED / QB_E_NOMEM with err->msg naming `path`
 * and the field, and *out zeroed. Thread-safe for distinct outputs. */
qb_status w4a16_manifest_parse(qbk_st_err *err, const char *path, const char *text, size_t len,
                                   w4a16_manifest *out);

/* Frees what parse allocated and zeroes *m. NULL or zeroed is a no-op. */
void w4a16_manifest_free(w4a16_manifest *m);

/* The entry named `name`, or NULL. Pure. */
const w4a16_file *w4a16_manifest_find(const w4a16_manifest *m, const char *name);

/* Checks entry f against dir/f->name on disk: a regular file of f->bytes
 * bytes and, when verify_sha256 is nonzero, of digest f->sha256 (reads the
 * whole file). Returns QB_OK, QB_E_NOT_FOUND (missing), QB_E_IO,
 * QB_E_FORMAT (not a regular file), QB_E_MISMATCH (size or digest) or
 * QB_E_NOMEM, with err->msg naming the file. Thread-safe. */
qb_status w4a16_file_check(qbk_st_err *err, const char *dir, const w4a16_file *f,
                               int verify_sha256);

#endif /* W4A16_MANIFEST_H */
