/*
 * The per-tensor report a writer leaves beside its output
 * (quantbridge-report.json, sdk/kit/qbk_tensor_report.h) held against
 * verify's own measurement of that output through its reader: the
 * independent figure each reported error must equal.
 */
#ifndef QBT_REPORT_H
#define QBT_REPORT_H

/* Runs `verify --source src --converted out --json` (must exit 0) and
 * asserts, with check's macros, that out/quantbridge-report.json names
 * `format`, lists exactly the tensors verify compared, gives exact ones no
 * error (and verify finds them exact), and gives each requantized one
 * verify's rel_rmse within 1e-3 relative and its max abs error within
 * 1e-6 relative (the writer measures in float32 what verify measures in
 * double; a requantized tensor that came out exact has 0 in both). Returns
 * the number of requantized tensors. */
int qbt_report_matches_verify(const char *src, const char *out, const char *format);

/* The same with verify_args (e.g. "--max-rel-rmse 1e-6") added to verify's
 * command line, for outputs whose encoding has no default rule. */
int qbt_report_matches_verify_with(const char *src, const char *out, const char *format,
                                   const char *verify_args);

#endif /* QBT_REPORT_H */
