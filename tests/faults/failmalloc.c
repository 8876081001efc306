/*
 * LD_PRELOAD allocator for fault tests: reaches the allocations the host's
 * countdown cannot, those plugins make with their own malloc. Counts only
 * calls whose immediate caller lies in a plugin library (a loaded object
 * whose file name contains "/libqb_", or libcjson, which plugins use
 * to parse JSON); after QBT_FAILMALLOC_PLUGIN_AFTER=N
 * such calls, every later one returns NULL (errno ENOMEM). At exit prints
 * "failmalloc: K plugin allocation(s) refused" on stderr. Everything else
 * goes to glibc (__libc_* entry points), so free() needs no wrapper.
 * Not usable under ASan (which owns malloc); CMake builds it only without
 * sanitizers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long countdown = -2; /* -2: not read yet; -1: off */
static atomic_long refused;
static __thread int inside;        /* dladdr may allocate: no recursion */

static long parse_env(void)
{
    const char *v = getenv("QBT_FAILMALLOC_PLUGIN_AFTER");
    return v && *v ? strtol(v, NULL, 10) : -1;
}

static int should_fail(void *caller)
{
    Dl_info di;
    long v;
    int from_plugin;
    if (inside)
        return 0;
    v = atomic_load(&countdown);
    if (v == -2) {
        v = parse_env();
        atomic_store(&countdown, v);
    }
    if (v < 0)
        return 0;
    inside = 1;
    from_plugin = dladdr(caller, &di) && di.dli_fname && (strstr(di.dli_fname, "/libqb_") || strstr(di.dli_fname, "/libcjson"));
    inside = 0;
    if (!from_plugin)
        return 0;
    for (;;) {
        if (v == 0) {
            atomic_fetch_add(&refused, 1);
            errno = ENOMEM;
            return 1;
        }
        if (atomic_compare_exchange_weak(&countdown, &v, v - 1))
            return 0;
    }
}

void *malloc(size_t n)
{
    return should_fail(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t s)
{
    return should_fail(__builtin_return_address(0)) ? NULL : __libc_calloc(n, s);
}

void *realloc(void *p, size_t n)
{
    return should_fail(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}

void *aligned_alloc(size_t a, size_t n)
{
    return should_fail(__builtin_return_address(0)) ? NULL : __libc_memalign(a, n);
}

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p;
    if (should_fail(__builtin_return_address(0)))
        return ENOMEM;
    p = __libc_memalign(a, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void)
{
    char b[96];
    long k = atomic_load(&refused), i = 0, j;
    char d[24];
    const char *pre = "failmalloc: ", *post = " plugin allocation(s) refused\n";
    if (atomic_load(&countdown) == -2 || parse_env() < 0)
        return;
    memcpy(b, pre, strlen(pre));
    i = (long)strlen(pre);
    j = 0;
    do {
        d[j++] = (char)('0' + k % 10);
        k /= 10;
    } while (k);
    while (j)
        b[i++] = d[--j];
    memcpy(b + i, post, strlen(post));
    i += (long)strlen(post);
    if (write(2, b, (size_t)i) < 0)
        return;
}
