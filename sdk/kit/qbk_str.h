/*
 * qbk_str.h — small string helpers every reader needs (internal kit).
 */
#ifndef QBK_STR_H
#define QBK_STR_H

/* printf into a new malloc'd string.
 * Returns: the string, owned by the caller (free), or NULL when the
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

#endif /* QBK_STR_H */
