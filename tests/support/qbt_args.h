/*
 * Splits a command-line string into an argv vector without a shell, for
 * tests that format their arguments with snprintf: words separated by
 * blanks, '...' and "..." group literally (no escapes, no expansion).
 * A shell operator outside quotes (> < | ; & $ ` *) aborts the test, so a
 * caller cannot silently depend on a shell.
 */
#ifndef QBT_ARGS_H
#define QBT_ARGS_H

/* NULL-terminated vector of malloc'd words; release with qbt_args_free.
 * ck_abort on an unterminated quote or a shell operator. */
char **qbt_args_split(const char *line);
/* Frees a vector from qbt_args_split (NULL is fine). */
void qbt_args_free(char **argv);

#endif
