/*
 * A qb_sink that keeps every file in memory, for writer unit tests: the
 * writer's sources are compiled into the test, handed &ms.sink, and the
 * test inspects what was written (names, bytes, closed) without a disk or
 * the quantbridge program.
 *
 * create refuses what the host's sink refuses (host/sink.c): an empty name,
 * one with '/', one starting with '.', and a name created twice; write
 * after close is an error. close reports the byte count and the real
 * SHA-256. Errors go through qbt_host()'s set_error (qbt_host_last_error).
 * Failure injection: qbt_mem_sink_fail_after lets the next N bytes through
 * and then fails every write with QB_E_IO ("disk full").
 * Not thread-safe: a writer calls its sink from one thread at a time.
 */
#ifndef QBT_MEM_SINK_H
#define QBT_MEM_SINK_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/quantbridge.h>

/* One file: the bytes written so far. Tests may also fill one themselves
 * (e.g. from disk) to share decoders with sink output. */
typedef struct qbt_mem_file {
    char name[256];
    uint8_t *data; /* malloc'd; NULL while empty */
    size_t len, cap;
    int closed;
    struct qbt_mem_sink *owner; /* the sink that created it; NULL otherwise */
} qbt_mem_file;

typedef struct qbt_mem_sink {
    qb_sink sink;         /* hand &ms.sink to the writer */
    qbt_mem_file **files; /* in creation order */
    size_t n;             /* files created */
    size_t cap_files;
    long long write_left; /* bytes before writes fail; < 0: no limit */
} qbt_mem_sink;

/* Empty sink, no failure injection. */
void qbt_mem_sink_init(qbt_mem_sink *ms);
/* Frees every file; the sink is empty (and still usable) afterwards. */
void qbt_mem_sink_free(qbt_mem_sink *ms);
/* The file created as `name`, or NULL. */
qbt_mem_file *qbt_mem_sink_find(const qbt_mem_sink *ms, const char *name);
/* Lets `n` more bytes be written, then every write fails with QB_E_IO;
 * n < 0 removes the limit. */
void qbt_mem_sink_fail_after(qbt_mem_sink *ms, long long n);
/* Bytes in all files together. */
size_t qbt_mem_sink_bytes(const qbt_mem_sink *ms);

#endif
