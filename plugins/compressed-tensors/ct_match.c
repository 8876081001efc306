/* compressed-tensors reader — target / ignore patterns. See ct_match.h. */
#include "ct_match.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"

/* Appends s to the growing buffer; -1 when it would not fit. */
static int ct_put(char *out, size_t cap, size_t *n, const char *s)
{
    size_t l = strlen(s);
    if (*n + l + 1 > cap)
        return -1;
    memcpy(out + *n, s, l + 1);
    *n += l;
    return 0;
}

/* Longest "re:" pattern accepted; keeps the translated ERE and regcomp's
 * work bounded. */
#define CT_PATTERN_MAX 1024
/* Largest {m,n} count accepted (glibc's RE_DUP_MAX is 0x7fff, and regcomp
 * expands counted repeats: large counts cost memory, not meaning). */
#define CT_REPEAT_MAX 255

/* What precedes the current position, for Python's quantifier rules
 * (sre_parse._parse): a quantifier needs an atom before it ("nothing to
 * repeat" otherwise) and may not follow another quantifier ("multiple
 * repeat"), except for a single lazy '?' right after it. */
enum ct_prev { CT_PREV_NONE, CT_PREV_ATOM, CT_PREV_QUANT, CT_PREV_LAZY };

/* When s starts a Python counted repeat "{m}", "{m,}", "{,n}" or "{m,n}"
 * (sre_parse: anything else after '{' is a literal '{'), returns its length
 * and sets *lo / *hi (-1: no upper bound); otherwise returns 0. */
static size_t ct_counted_repeat(const char *s, long *lo, long *hi)
{
    const char *q = s + 1;
    long a = 0, b = -1;
    int has_a = 0, has_b = 0, comma = 0;
    while (*q >= '0' && *q <= '9') {
        if (a <= 100000)
            a = a * 10 + (*q - '0');
        has_a = 1;
        q++;
    }
    if (*q == ',') {
        comma = 1;
        q++;
        b = 0;
        while (*q >= '0' && *q <= '9') {
            if (b <= 100000)
                b = b * 10 + (*q - '0');
            has_b = 1;
            q++;
        }
        if (!has_b)
            b = -1;
    }
    if (*q != '}' || (!has_a && !has_b))
        return 0;
    *lo = a;
    *hi = comma ? b : a;
    return (size_t)(q - s) + 1;
}

/* Python re -> POSIX ERE for the one-to-one subset (see ct_match.h). */
static int ct_py_to_ere(const char *py, char *out, size_t cap, char *why, size_t why_len)
{
    size_t n = 0, len;
    int in_class = 0;
    enum ct_prev prev = CT_PREV_NONE;
    const char *s;
    char one[3], rep[48];
    long lo = 0, hi = 0;

    out[0] = '\0';
    if (strlen(py) > CT_PATTERN_MAX) {
        snprintf(why, why_len, "pattern longer than %d characters", CT_PATTERN_MAX);
        return -1;
    }
    if (ct_put(out, cap, &n, "^(") != 0)
        goto too_long;
    for (s = py; *s; s++) {
        if (in_class) {
            if (*s == '\\') {
                snprintf(why, why_len, "escape inside [...] is not supported");
                return -1;
            }
            if (*s == ']')
                in_class = 0;
            one[0] = *s;
            one[1] = '\0';
            if (ct_put(out, cap, &n, one) != 0)
                goto too_long;
            continue;
        }
        switch (*s) {
        case '[':
            in_class = 1;
            prev = CT_PREV_ATOM;
            one[0] = '[';
            one[1] = '\0';
            if (s[1] == '^') {
                one[1] = '^';
                one[2] = '\0';
                s++;
            }
            if (ct_put(out, cap, &n, one) != 0)
                goto too_long;
            if (s[1] == ']') { /* a leading ']' is a literal in both */
                s++;
                if (ct_put(out, cap, &n, "]") != 0)
                    goto too_long;
            }
            break;
        case '(':
            if (s[1] == '?') {
                snprintf(why, why_len, "\"(?\" groups are not supported");
                return -1;
            }
            if (ct_put(out, cap, &n, "(") != 0)
                goto too_long;
            prev = CT_PREV_NONE;
            break;
        case '*':
        case '+':
        case '?':
        case '{':
            len = 1;
            if (*s == '{' && !(len = ct_counted_repeat(s, &lo, &hi))) {
                /* not a counted repeat: Python reads a literal '{' */
                if (ct_put(out, cap, &n, "\\{") != 0)
                    goto too_long;
                break;
            }
            if (prev == CT_PREV_QUANT && *s == '?') {
                /* lazy: same match/no-match answer as greedy */
                prev = CT_PREV_LAZY;
                continue;
            }
            /* glibc regcomp accepts stacked quantifiers ("a??????", "+++++")
             * that Python refuses, and needs minutes and gigabytes for them */
            if (prev == CT_PREV_QUANT || prev == CT_PREV_LAZY) {
                snprintf(why, why_len, "multiple repeat at offset %zu", (size_t)(s - py));
                return -1;
            }
            if (prev == CT_PREV_NONE) {
                snprintf(why, why_len, "nothing to repeat at offset %zu", (size_t)(s - py));
                return -1;
            }
            prev = CT_PREV_QUANT;
            if (*s != '{') {
                one[0] = *s;
                one[1] = '\0';
                if (ct_put(out, cap, &n, one) != 0)
                    goto too_long;
                break;
            }
            if (lo > CT_REPEAT_MAX || hi > CT_REPEAT_MAX || (hi >= 0 && hi < lo)) {
                snprintf(why, why_len, "repeat count at offset %zu is above %d or min > max",
                         (size_t)(s - py), CT_REPEAT_MAX);
                return -1;
            }
            if (hi < 0)
                snprintf(rep, sizeof(rep), "{%ld,}", lo);
            else
                snprintf(rep, sizeof(rep), "{%ld,%ld}", lo, hi);
            if (ct_put(out, cap, &n, rep) != 0)
                goto too_long;
            s += len - 1;
            break;
        case '\\':
            prev = CT_PREV_ATOM;
            s++;
            switch (*s) {
            case 'd': if (ct_put(out, cap, &n, "[0-9]") != 0) goto too_long; break;
            case 'D': if (ct_put(out, cap, &n, "[^0-9]") != 0) goto too_long; break;
            case 'w': if (ct_put(out, cap, &n, "[A-Za-z0-9_]") != 0) goto too_long; break;
            case 'W': if (ct_put(out, cap, &n, "[^A-Za-z0-9_]") != 0) goto too_long; break;
            case 's': if (ct_put(out, cap, &n, "[[:space:]]") != 0) goto too_long; break;
            case 'S': if (ct_put(out, cap, &n, "[^[:space:]]") != 0) goto too_long; break;
            case '\0':
                snprintf(why, why_len, "trailing backslash");
                return -1;
            default:
                if (isalnum((unsigned char)*s)) {
                    snprintf(why, why_len, "escape \\%c is not supported", *s);
                    return -1;
                }
                one[0] = '\\';
                one[1] = *s;
                one[2] = '\0';
                if (ct_put(out, cap, &n, one) != 0)
                    goto too_long;
            }
            break;
        default:
            /* sre_parse: '^', '$' (AT codes) and '|' leave nothing to repeat */
            prev = (*s == '|' || *s == '^' || *s == '$') ? CT_PREV_NONE : CT_PREV_ATOM;
            one[0] = *s;
            one[1] = '\0';
            if (ct_put(out, cap, &n, one) != 0)
                goto too_long;
        }
    }
    if (in_class) {
        snprintf(why, why_len, "unterminated [...]");
        return -1;
    }
    if (ct_put(out, cap, &n, ")") != 0)
        goto too_long;
    return 0;
too_long:
    snprintf(why, why_len, "pattern too long");
    return -1;
}

int ct_pattern_init(ct_pattern *p, const char *text, char *why, size_t why_len)
{
    char *ere = NULL;
    size_t cap;
    int rc = -1;

    memset(p, 0, sizeof(*p));
    p->text = qbk_strdup(text);
    if (!p->text) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    if (!strncmp(text, "re:", 3)) {
        p->kind = CT_PAT_REGEX;
        cap = 16 * strlen(text) + 16;
        ere = qbk_malloc(cap);
        if (!ere) {
            snprintf(why, why_len, "out of memory");
            goto out;
        }
        if (ct_py_to_ere(text + 3, ere, cap, why, why_len) != 0)
            goto out;
        if (regcomp(&p->re, ere, REG_EXTENDED | REG_NOSUB) != 0) {
            snprintf(why, why_len, "not a valid regular expression");
            goto out;
        }
        p->compiled = 1;
    } else if (!strcmp(text, "Linear")) {
        p->kind = CT_PAT_LINEAR;
    } else if (!strchr(text, '.') && isupper((unsigned char)text[0])) {
        /* a class name other than Linear (Embedding, LlamaAttention, ...):
         * the checkpoint alone cannot tell which modules are of it */
        snprintf(why, why_len, "class target \"%s\" is not supported (only \"Linear\")", text);
        goto out;
    } else {
        p->kind = CT_PAT_EXACT;
    }
    rc = 0;
out:
    qbk_free(ere);
    return rc;
}

void ct_pattern_free(ct_pattern *p)
{
    if (p->compiled)
        regfree(&p->re);
    qbk_free(p->text);
    memset(p, 0, sizeof(*p));
}

int ct_pattern_match(const ct_pattern *p, const char *module, int is_linear)
{
    switch (p->kind) {
    case CT_PAT_EXACT:
        return strcmp(p->text, module) == 0;
    case CT_PAT_REGEX:
        return regexec(&p->re, module, 0, NULL, 0) == 0;
    case CT_PAT_LINEAR:
        return is_linear;
    }
    return 0;
}
