/*
 * qbk_pages_drop (qbk_pages.h). Readers call it after each row block: rows
 * are read once per conversion, so without it every source byte read stays
 * in the peak RSS (a 7B BF16 source: 14 GB; a 6 GB DeepSeek-V3-shaped FP8
 * source peaked at 5.6 GiB, bench/RESULTS.md "DeepSeek-V3 FP8 (issue 18)").
 */
#define _DEFAULT_SOURCE /* madvise, MADV_DONTNEED */
#include "qbk_pages.h"

#include <sys/mman.h>
#include <unistd.h>

void qbk_pages_drop(const void *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a, e;
    if (!p || n == 0 || pg <= 0)
        return;
    a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    e = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
}
