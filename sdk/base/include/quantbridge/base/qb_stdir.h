/*
 * quantbridge reader base library — a Hugging Face safetensors checkpoint
 * directory (qb_base.h).
 *
 * What every reader of such a directory reads before its own format: the
 * strict config.json (through host->json: RFC 8259, no duplicate key),
 * its model_type and quantization_config, generation_config.json, whether
 * tokenizer files are there (the one rule below), and the safetensors set
 * through the host's strict parser (host->safetensors). A format then
 * reads its own tensors (and its own side files) from the result.
 *
 * Needs a host of ABI >= 1.1 (the JSON service); an older one is refused
 * with QB_E_UNSUPPORTED. Every message names the file.
 *
 * Memory: the qb_stdir and every string in it come from host->alloc and
 * belong to it; callers borrow them until qb_stdir_close.
 */
#ifndef QUANTBRIDGE_BASE_QB_STDIR_H
#define QUANTBRIDGE_BASE_QB_STDIR_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_json.h>
#include <quantbridge/qb_reader.h>
#include <quantbridge/qb_safetensors.h>

#include "qb_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An opened checkpoint directory. Read-only for its users: every field is
 * set by qb_stdir_open (st by qb_stdir_open_set with QB_STDIR_DEFER_SET). */
typedef struct qb_stdir {
    const qb_host *host;
    char *dir;                     /* the directory (the path, or a named file's directory) */
    char *file;                    /* with QB_STDIR_FILE_OK, the .safetensors file named; else NULL */
    char *config_path;             /* "<dir>/config.json", for messages */
    char *config_text;             /* config.json, NUL-terminated, config_len bytes */
    size_t config_len;
    qb_json *config;               /* config.json parsed: an object */
    const qb_json *quant_config;   /* config.quantization_config (an object), or NULL */
    const char *model_type;        /* config.model_type: a non-empty string inside config */
    char *generation_config_text;  /* generation_config.json (a JSON object), or NULL: absent */
    int has_tokenizer;             /* dir holds a file of qb_stdir_tokenizer_files */
    qb_st_set *st;                 /* the safetensors checkpoint (NULL while deferred) */
} qb_stdir;

/* qb_stdir_open flags. */
/* `path` may name one .safetensors file: its directory holds the side
 * files, and that file alone is the checkpoint unless
 * model.safetensors.index.json is beside it (a named shard then stands
 * for the whole sharded checkpoint). Without the flag a file path means
 * its directory. */
#define QB_STDIR_FILE_OK 1u
/* Leave st NULL: the format checks its own configuration first and then
 * calls qb_stdir_open_set. */
#define QB_STDIR_DEFER_SET 2u

/* Largest config.json / generation_config.json read (16 MiB). */
#define QB_STDIR_JSON_MAX ((size_t)16 << 20)

/* Opens the checkpoint at `path` (a directory; see QB_STDIR_FILE_OK for a
 * file): reads config.json (missing: QB_E_NOT_FOUND "<dir>/config.json:
 * missing ..."), parses it with host->json (its refusal: QB_E_FORMAT naming
 * the file, the byte and the reason), requires an object with a non-empty
 * string model_type and, when present, an object quantization_config
 * (QB_E_FORMAT); reads and checks generation_config.json the same way when
 * present; notes tokenizer files (host->list_dir); then opens the
 * safetensors set (host->safetensors: open_file for a named file, else
 * open_dir) unless `flags` has QB_STDIR_DEFER_SET. Returns QB_OK with *out
 * owned by the caller (qb_stdir_close), or a negative status with the
 * message set through h and *out NULL. Also QB_E_NOMEM, QB_E_INVALID (an
 * unknown flag, NULL arguments), QB_E_UNSUPPORTED (a host without the JSON
 * service). Instance class: one call per output. */
qb_status qb_stdir_open(const qb_host *h, const char *path, uint32_t flags, qb_stdir **out);

/* Opens d->st as qb_stdir_open would have (after QB_STDIR_DEFER_SET).
 * Returns the host's status with its message; QB_E_INVALID when d->st is
 * already open. Not concurrent with other uses of d. */
qb_status qb_stdir_open_set(qb_stdir *d);

/* Releases everything d owns (the set, the parsed config, the texts) and
 * d itself; pointers borrowed from it become invalid. NULL is a no-op.
 * Cannot fail. Not concurrent with any other use of d. */
void qb_stdir_close(qb_stdir *d);

/* Fills `out` (a reader's get_model_info, qb_reader.h) for a model read
 * from d: architecture = model_type, config and generation config texts,
 * tokenizer_dir = d->dir when it holds a tokenizer file, no chat template,
 * n_tensors, source_format = `format`, source_summary = `summary` (both
 * borrowed: they must live as long as the reader handle). Fields after
 * ABI 1.0 are written only under QB_HAS_FIELD. Cannot fail; thread-safe. */
void qb_stdir_model_info(const qb_stdir *d, size_t n_tensors, const char *format,
                         const char *summary, qb_model_info *out);

/* NULL-terminated list of the tokenizer files of a Hugging Face
 * directory: what transformers' PreTrainedTokenizer(Fast).from_pretrained
 * may read (tokenization_utils_base: tokenizer_config.json,
 * special_tokens_map.json, added_tokens.json, tokenizer.json; each
 * tokenizer class's vocab_files_names: tokenizer.model, vocab.json,
 * merges.txt, vocab.txt, spiece.model, sentencepiece.bpe.model,
 * tokenizer.tiktoken; chat_template.jinja / chat_template.json since
 * transformers 4.43). A directory holding none of them is no tokenizer
 * directory. Static; thread-safe. */
extern const char *const qb_stdir_tokenizer_files[];

/* 1 when the bare file name `name` is in qb_stdir_tokenizer_files, else 0.
 * Exact, case-sensitive. Pure. */
int qb_stdir_is_tokenizer_file(const char *name);

/* The one rule for a reader of a Hugging Face style directory: *has = 1
 * when `dir` holds a file of qb_stdir_tokenizer_files (the reader then
 * names dir as its tokenizer_dir), else 0: a directory without any never
 * claims to be a tokenizer directory. Lists dir through h->list_dir; its
 * failure is returned with its message (*has 0). Thread-safe. */
qb_status qb_stdir_has_tokenizer(const qb_host *h, const char *dir, int *has);

/* A probe (qb_reader.h) from config.json text alone, for formats that
 * config.json's quantization_config names: QB_PROBE_LIKELY + 10 when
 * in->config_json parses (host->json) to an object whose
 * quantization_config.quant_method is `quant_method` exactly, else
 * QB_PROBE_NONE (also without config text, without the JSON service, or
 * for text the parser refuses: the reader's open names the refusal; the
 * parser's message is never reported, a probe's answer is its score).
 * Thread-safe. */
int qb_stdir_probe_quant_method(const qb_host *h, const qb_probe_input *in,
                                const char *quant_method);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_BASE_QB_STDIR_H */
