/*
 * qbk_str.h — small string helpers every reader needs (internal kit).
 */
#ifndef QBK_STR_H
#define QBK_STR_H

#include <stddef.h>

/* printf into a new qbk_malloc'd string.
 * Returns: the string, owned by the caller (qbk_free), or NULL when the
 * format fails or memory is short (no message is set: the caller names
 * the file or tensor). Thread-safe. */
char *qbk_strdupf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Returns 1 when `s` ends with `suffix` (an empty suffix always matches),
 * else 0. Both must be NUL-terminated. Pure, thread-safe. */
int qbk_ends_with(const char *s, const char *suffix);

/* Returns 1 when `s` is a non-empty stem followed by `suffix` (s longer
 * than suffix and ending with it), with *stem set to the stem's length;
 * else 0 and *stem untouched. Used to split "module.weight_scale" into
 * module and role. Pure, thread-safe. */
int qbk_split_suffix(const char *s, const char *suffix, size_t *stem);

/* The first n bytes of s followed by `suffix` (NULL or "" for none) as a
 * new string owned by the caller (qbk_free), or NULL when memory is short
 * (no message is set). s must hold at least n bytes. Thread-safe. */
char *qbk_stem_cat(const char *s, size_t n, const char *suffix);

#endif /* QBK_STR_H */
