/*
 * quantbridge host — the end-of-conversion summary (convert_summary.c).
 */
#ifndef QBH_CONVERT_SUMMARY_H
#define QBH_CONVERT_SUMMARY_H

#include "pipeline.h"

/* What a finished conversion reports. Pointers are borrowed. */
typedef struct qbh_convert_result {
    const char *source, *output, *reader, *writer, *source_format;
    size_t n_tensors, n_files;
    uint64_t bytes_in, bytes_out;
    const qbh_plan *plan;   /* the writer's plan (counts per action), or NULL */
    double seconds;
    uint64_t peak_rss;      /* bytes */
    int verify_ran;         /* --verify ran (to a result or an error) */
    qb_status verify_rc;    /* QB_OK: passed */
    const char *verify_msg; /* its error message when it did not pass */
} qbh_convert_result;

/* Prints the summary lines: tensors per action (when the writer stated a
 * plan), bytes in and out, seconds, peak memory. Never fails. */
void qbh_convert_summary_print(const qbh_convert_result *r, FILE *f);

/* The `convert --json` document: output, source, reader, writer,
 * group_size, tensors {total, exact, requant, convert, copy, omit,
 * exact_share}, files, bytes_in, bytes_out, seconds, peak_rss_bytes,
 * verify ({passed, message} or null). malloc'd text (free); NULL with
 * QB_E_NOMEM set. */
char *qbh_convert_summary_json(const qbh_convert_result *r);

#endif
