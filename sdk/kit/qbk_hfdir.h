/*
 * A Hugging Face checkpoint directory for the fp8 and compressed-tensors
 * readers: config.json (parsed), generation_config.json, tokenizer presence
 * and the safetensors set opened through the host's parser (single file or
 * sharded with an index).
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI): each
 * plugin links its own copy. Strings are allocated with qbk_malloc and
 * owned by the qbk_hfdir; callers borrow them until qbk_hfdir_close.
 */
#ifndef QBK_HFDIR_H
#define QBK_HFDIR_H

#include <cjson/cJSON.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_safetensors.h>

typedef struct qbk_hfdir {
    char *dir;              /* the directory, as given */
    char *config_text;      /* config.json text (NUL-terminated) */
    cJSON *config;          /* parsed config.json (an object) */
    const cJSON *qcfg;      /* config.quantization_config (object) or NULL */
    const char *model_type; /* config.model_type; never NULL after open */
    char *gen_text;         /* generation_config.json text or NULL */
    int has_tokenizer;      /* a file of qbk_hf_tokenizer_files present (qbk_hf_dir_has_tokenizer) */
    qb_st_set *st;          /* the safetensors checkpoint */
} qbk_hfdir;

/* Opens the directory `path` (a file path means its directory): reads and
 * parses config.json (<= 4 MiB, must be an object with a string
 * model_type), reads generation_config.json when present, notes tokenizer
 * files and opens the safetensors checkpoint with h->safetensors->open_dir.
 * Returns QB_OK with *out owned by the caller (qbk_hfdir_close), or a
 * negative status with the message set through h and *out NULL.
 * Instance-class: not concurrent with itself on one object. */
qb_status qbk_hfdir_open(const qb_host *h, const char *path, qbk_hfdir **out);

/* Releases everything d owns (texts, parsed config, safetensors set) and d
 * itself; pointers borrowed from it become invalid. NULL is a no-op. Cannot
 * fail. Not concurrent with any other use of d. */
void qbk_hfdir_close(const qb_host *h, qbk_hfdir *d);

#endif /* QBK_HFDIR_H */
