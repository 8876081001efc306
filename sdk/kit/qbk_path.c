/* File system paths. See qbk_path.h. */
#include "qbk_path.h"

#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"

char *qbk_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    /* A trailing '/' (a user-typed "model/") or an empty dir needs none. */
    size_t sep = (a > 0 && dir[a - 1] != '/') ? 1 : 0;
    char *p = qbk_malloc(a + sep + b + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    if (sep)
        p[a] = '/';
    memcpy(p + a + sep, name, b + 1);
    return p;
}
