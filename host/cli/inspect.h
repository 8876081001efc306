/*
 * quantbridge host — what `inspect` derives from an opened source beyond
 * the reader's canonical view: sizes per tensor and per encoding, and the
 * reader's stored-tensor and metadata views (SDK ABI 1.2).
 */
#ifndef QBH_INSPECT_H
#define QBH_INSPECT_H

#include "qbh.h"

/* Size of one canonical tensor. */
typedef struct qbh_tensor_size {
    int64_t params; /* elements of the tensor: the product of its dims */
    int64_t bytes;  /* bytes it occupies in the source, -1 when unknown */
} qbh_tensor_size;

/* Totals of the tensors sharing one source encoding. */
typedef struct qbh_encoding_total {
    const char *encoding; /* borrowed from the reader (valid until close) */
    size_t n_tensors;
    int64_t params;
    int64_t bytes;        /* sum of the known bytes */
    int bytes_known;      /* 1 when every tensor's bytes are known */
} qbh_encoding_total;

typedef struct qbh_sizes {
    qbh_tensor_size *t;         /* [s->info.n_tensors] */
    qbh_encoding_total *enc;    /* [n_enc], in order of first appearance */
    size_t n_enc;
    int64_t params, bytes;      /* over every tensor; bytes: the known ones */
    int bytes_known;            /* 1 when every tensor's bytes are known */
    int64_t other_bytes;        /* stored bytes feeding no single canonical tensor */
    int from_raw;               /* 1: bytes come from the reader's stored view */
} qbh_sizes;

/* Computes the sizes of every tensor of the open source s. Bytes come from
 * the reader's stored-tensor view when it offers one (the stored tensors
 * each canonical tensor is read from, scales and group maps included);
 * else from the source dtype's element size for plain dtypes, unknown for
 * a quantized encoding. Returns QB_OK, QB_E_NOMEM, or a failure of the
 * reader's view (message set, naming the reader). Free with
 * qbh_sizes_free. Main thread (calls into the reader). */
qb_status qbh_sizes_compute(const qbh_source *s, qbh_sizes *out);
void qbh_sizes_free(qbh_sizes *z);

/* Bits per weight of bytes over params, or a negative value when either
 * is unknown or params is 0. Pure. */
double qbh_bits_per_weight(int64_t bytes, int64_t params);

/* ---- inspect_views.c: rendering of --raw and --metadata -------------- */

struct cJSON;

/* QB_OK when the reader of s offers the stored-tensor view, else
 * QB_E_UNSUPPORTED with a message naming the reader (qbh_inspect_no_raw
 * sets it unconditionally). */
qb_status qbh_inspect_raw_check(const qbh_source *s);
qb_status qbh_inspect_no_raw(const qbh_source *s);

/* Prints the stored tensors of s ("stored tensors: N", then name, type,
 * shape as stored, bytes, file and the canonical tensor each feeds) to
 * stdout. QB_E_UNSUPPORTED naming the reader when it has no such view;
 * else a failure of the view. Main thread. */
qb_status qbh_inspect_raw_text(const qbh_source *s);
/* The same as root["raw_tensors"]: [{name, type, shape, bytes, file,
 * canonical}], canonical a name or null. Same failures, and QB_E_NOMEM. */
qb_status qbh_inspect_raw_json(const qbh_source *s, struct cJSON *root);

/* The model's config.json (qb_model_info.config_json) read by the strict
 * JSON parser into a new cJSON tree *out (cJSON_Delete; NULL when the
 * reader gives none): a text the parser refuses (a duplicate key, 1e400)
 * is QB_E_FORMAT naming "PATH: config.json of reader NAME" and the byte;
 * QB_E_NOMEM. `inspect` asks before it prints anything. */
qb_status qbh_inspect_config(const qbh_source *s, struct cJSON **out);

/* Prints the reader's metadata view (key, type, value) when it has one,
 * then the top-level fields of cfg, the model's config.json
 * (qbh_inspect_config; name, JSON type, value; arrays and objects
 * summarised) to stdout: "config.json: none" for NULL, "not a JSON
 * object" for another value. Failures of the view. */
qb_status qbh_inspect_meta_text(const qbh_source *s, const struct cJSON *cfg);
/* The same as root["metadata"] ([{key, type, value}], only when the reader
 * has the view) and root["config"] (a copy of cfg when it is an object,
 * else null). Same failures, and QB_E_NOMEM. */
qb_status qbh_inspect_meta_json(const qbh_source *s, const struct cJSON *cfg, struct cJSON *root);

/* ---- inspect_tokenizer.c ---------------------------------------------------- */

struct cJSON;
/* What `inspect` shows of mi's tokenizer, read from the files in
 * mi->tokenizer_dir (tokenizer.json, tokenizer_config.json,
 * chat_template.jinja) and mi->chat_template: {"dir", "kind" (model.type,
 * null without tokenizer.json), "byte_level", "byte_fallback",
 * "pre_tokenizer", "normalizer" (component types, "Split x3 + ByteLevel"),
 * "vocab_size", "special_tokens": {bos|eos|unk|pad: {"token", "id"} or
 * null}, "add_bos_token", "add_eos_token" (bool or null), "chat_template"
 * (bool), "chat_templates" (names of the list form), "rebuild_notes"
 * (tokenizer_config.json's quantbridge_rebuild_notes: what a reader that
 * rebuilt the files could not recover; [] when none)}, plus "error" naming
 * the file when one cannot be read or is no JSON object. *out: a new cJSON
 * object (caller deletes), NULL when the source has no tokenizer dir and no
 * chat template. The files are read by the strict JSON parser: one it
 * refuses (a duplicate key, 1e400) is QB_E_FORMAT naming the file (*out
 * NULL); QB_E_NOMEM. Reads files; thread-safe. */
qb_status qbh_inspect_tokenizer_json(const qb_model_info *mi, struct cJSON **out);
/* That object (qbh_inspect_tokenizer_json's) as text lines ("tokenizer
 * kind: ...", "tokenizer special: ...", "chat template: ...", one
 * "tokenizer note: ..." per rebuild note) on f; "tokenizer: none" for NULL. */
void qbh_inspect_tokenizer_text(FILE *f, const struct cJSON *o);

#endif /* QBH_INSPECT_H */
