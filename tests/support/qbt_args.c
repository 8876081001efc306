/* See qbt_args.h. */
#include "qbt_args.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

char **qbt_args_split(const char *line)
{
    size_t cap = 8, n = 0, len = strlen(line);
    char **v = calloc(cap, sizeof *v);
    const char *p = line;
    ck_assert_ptr_nonnull(v);
    for (;;) {
        char *w, *o;
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        w = o = malloc(len + 1);
        ck_assert_ptr_nonnull(w);
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                const char *e = strchr(p, q);
                ck_assert_msg(e != NULL, "unterminated quote in: %s", line);
                memcpy(o, p, (size_t)(e - p));
                o += e - p;
                p = e + 1;
                continue;
            }
            ck_assert_msg(!strchr("<>|;&$`*", *p), "shell operator '%c' in: %s", *p, line);
            *o++ = *p++;
        }
        *o = '\0';
        if (n + 2 > cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            ck_assert_ptr_nonnull(v);
        }
        v[n++] = w;
        v[n] = NULL;
    }
    return v;
}

void qbt_args_free(char **argv)
{
    size_t i;
    for (i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}
