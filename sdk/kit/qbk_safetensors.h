/*
 * quantbridge internal kit — the strict safetensors parser.
 *
 * Two doors to one parser: direct entry points that report a failure into
 * a qbk_st_err the caller owns (for code without a qb_host, such as
 * libquantbridge-w4a16), and the qb_st_api table of
 * sdk/include/quantbridge/qb_safetensors.h, a thin adapter that hands the
 * same message to qb_host.set_error (the host puts it into
 * qb_host.safetensors; tests may call it with any qb_host whose set_error
 * works). Sets are allocated with plain malloc (a set never crosses an
 * allocator boundary: whoever opened it closes it).
 */
#ifndef QBK_SAFETENSORS_H
#define QBK_SAFETENSORS_H

#include <quantbridge/qb_host.h>
#include <quantbridge/qb_safetensors.h>

/* Longest message kept by a qbk_st_err, NUL included (longer ones are cut). */
#define QBK_ST_ERR_LEN 4096

/* Where a kit parser writes the message of its failure. Plain data owned by
 * the caller (a stack object is fine); one per thread. msg is only
 * meaningful after a call returned a negative status. */
typedef struct qbk_st_err {
    char msg[QBK_ST_ERR_LEN];
} qbk_st_err;

/* Formats the message into err->msg (cut to fit) and returns `code`, so a
 * failure is `return qbk_st_fail(err, QB_E_FORMAT, "%s: ...", path)`.
 * Never fails; err must be non-NULL. */
qb_status qbk_st_fail(qbk_st_err *err, qb_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Maps one .safetensors file and validates it strictly (qb_safetensors.h,
 * qb_st_api.open_file). Returns QB_OK and a new set in *out, or
 * QB_E_NOT_FOUND / QB_E_IO / QB_E_FORMAT / QB_E_MISMATCH / QB_E_NOMEM with
 * *out NULL and err->msg naming the file (and tensor). Thread-safe for
 * distinct err objects. */
qb_status qbk_st_open_file(qbk_st_err *err, const char *path, qb_st_set **out);

/* qb_st_api.open_dir with the same error reporting as qbk_st_open_file. */
qb_status qbk_st_open_dir(qbk_st_err *err, const char *dir, qb_st_set **out);

/* Tensor `name` of the set, or NULL (also for NULL arguments). Pure; the
 * pointer lives as long as the set. Thread-safe (the set is read-only). */
const qb_st_tensor *qbk_st_find(const qb_st_set *set, const char *name);

/* Unmaps every file and frees the set. NULL is a no-op. */
void qbk_st_set_free(qb_st_set *set);

/* Returns the parser's qb_st_api table: a static object, valid for the life
 * of the process, never NULL. Thread-safe. Its open functions report
 * failures through h->set_error (h must be non-NULL). */
const qb_st_api *qbk_safetensors_api(void);

#endif /* QBK_SAFETENSORS_H */
