/*
 * compressed-tensors reader — module-name patterns of `targets` and
 * `ignore` lists.
 *
 * Semantics follow compressed-tensors utils/match.py (_match_name,
 * _match_class): "re:<regex>" is Python re.match (anchored at the start,
 * not at the end) against the module name; any other string is an exact
 * module name, except class names. The only class this reader can decide
 * from a checkpoint is "Linear" (a module with a 2-D weight); other class
 * names are refused when the config is read.
 *
 * Python regex syntax is translated to POSIX ERE for the subset that maps
 * one to one (literals, . * + ? {m,n} | () [] ^ $, \d \w \s \D \W \S and
 * escaped punctuation, lazy quantifiers as greedy since only "is there a
 * match" is asked); anything else ("(?...)", back references, other
 * escapes) is an error rather than a guess. What Python's re refuses is
 * refused too, before regcomp (which accepts some of it and then needs
 * minutes and gigabytes): a quantifier after a quantifier other than one
 * lazy '?' ("multiple repeat"), a quantifier with nothing to repeat. Also
 * refused: patterns over 1024 characters, {m,n} counts above 255.
 */
#ifndef CT_MATCH_H
#define CT_MATCH_H

#include <regex.h>

typedef enum ct_pat_kind {
    CT_PAT_EXACT = 0,  /* exact module name */
    CT_PAT_REGEX = 1,  /* "re:" */
    CT_PAT_LINEAR = 2  /* class "Linear" */
} ct_pat_kind;

typedef struct ct_pattern {
    ct_pat_kind kind;
    char *text;     /* the string as written (owned) */
    regex_t re;     /* compiled, CT_PAT_REGEX only */
    int compiled;
} ct_pattern;

/* Parses `text` into *p. Returns 0, or -1 with a reason in why[why_len]
 * (unsupported regex construct, unknown class name, out of memory).
 * *p must be released with ct_pattern_free even after failure. */
int ct_pattern_init(ct_pattern *p, const char *text, char *why, size_t why_len);

void ct_pattern_free(ct_pattern *p);

/* Nonzero when module name `module` matches p. `is_linear` says whether
 * the module is a Linear (used by CT_PAT_LINEAR only). Thread-safe
 * (regexec on a compiled pattern is reentrant). */
int ct_pattern_match(const ct_pattern *p, const char *module, int is_linear);

#endif /* CT_MATCH_H */
