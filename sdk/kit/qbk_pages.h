/*
 * Releasing the pages of a read-only file mapping once they have been read,
 * so a reader that streams a checkpoint keeps a flat resident set.
 *
 * Internal kit code (static library qbk, hidden symbols, never ABI).
 */
#ifndef QBK_PAGES_H
#define QBK_PAGES_H

#include <stddef.h>
#include <stdint.h>

/* Unmaps from this process the whole pages that lie inside [p, p + n): the
 * range is rounded inward, so a page shared with bytes outside the range
 * stays (another thread may be reading the neighbouring rows). The bytes
 * must be a read-only file mapping such as the host's safetensors mapping
 * (qb_safetensors.h: "mapped bytes"): MADV_DONTNEED then only drops the
 * mapping, the page cache keeps the data and a later read maps it again.
 * Never call it on anonymous or written memory (its contents would be
 * lost). p NULL or n 0 does nothing; a failure of madvise is ignored (the
 * pages only stay resident). Thread-safe. */
void qbk_pages_drop(const void *p, size_t n);

#endif /* QBK_PAGES_H */
