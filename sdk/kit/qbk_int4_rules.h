/*
 * Symmetric int4 group quantization: codes q in [-8, 7] and one scale per
 * group, decoded w = q * scale in fp32, the scale stored in a float dtype
 * (F16, BF16 or F32). Every candidate scale is rounded to that dtype before
 * codes and error are computed against it, so the error measured is the
 * error of the file. Shared by the writers that store such a grid
 * (docs/fidelity.md, "Requantizing lossy sources (issue 27)").
 */
#ifndef QBK_INT4_RULES_H
#define QBK_INT4_RULES_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/quantbridge.h>

#include "qbk_int4_eval.h"

/* How a group's scale is chosen (qbk_int4_rules.c states each). */
typedef enum qbk_int4_rule {
    QBK_INT4_AUTO = 0,   /* per group the smaller error of ABSMAX and SEARCH (ABSMAX on ties) */
    QBK_INT4_ABSMAX = 1, /* scale = absmax / 7, q = clamp(rint(w / scale)) */
    QBK_INT4_SEARCH = 2, /* least squared error over a grid and refits; never worse than ABSMAX */
    QBK_INT4_KEEP = 3    /* the better of absmax/7 and +-absmax/8 (the extreme on code -8) */
} qbk_int4_rule;

#define QBK_INT4_ENONFINITE (-1) /* NaN or infinity in the input */
#define QBK_INT4_EOVERFLOW (-2)  /* the scale does not fit in the scale dtype */

/* The rule's option name: "auto", "absmax", "search" or "keep". Pure. */
const char *qbk_int4_rule_name(qbk_int4_rule rule);

/* Parses an option name of qbk_int4_rule_name into *rule. Returns 0, or -1
 * for any other text (*rule untouched). Pure. */
int qbk_int4_rule_parse(const char *name, qbk_int4_rule *rule);

/* Quantizes one group w[0..n) under `rule` into codes q[0..n) and *scale, a
 * value of dtype sdt (QB_DT_F16, QB_DT_BF16 or QB_DT_F32; converting it to
 * sdt is exact); decoded values are (float)q * *scale. *err receives the
 * group's squared reconstruction error (double). An all-zero group gives
 * codes 0 and scale 0. impl picks the inner loops (QBK_I4E_AUTO normally;
 * every impl gives identical results). Returns 0, QBK_INT4_ENONFINITE or
 * QBK_INT4_EOVERFLOW (then q, *scale and *err are unspecified). Pure,
 * thread-safe. */
int qbk_int4_group(qbk_i4e_impl impl, qb_dtype sdt, const float *w, size_t n, qbk_int4_rule rule,
                   int8_t *q, float *scale, double *err);

/* s rounded to sdt (ties to even) into *used. Returns 0, or -1 when the
 * result is not finite. For F16 a few integer operations where the result
 * is a normal fp16 (the generic conversion elsewhere): the same value as
 * qb_f32_to_f16. Pure. */
int qbk_int4_round_scale(qb_dtype sdt, float s, float *used);

/* Largest finite value of sdt (65504 for F16), as double. Pure. */
double qbk_int4_scale_max(qb_dtype sdt);

/* Codes of w[0..n) against the float scale s (q = clamp(rint(w / s), -8,
 * 7), all zero when s == 0) into q and their squared error in double. Pure,
 * thread-safe. */
double qbk_int4_codes(const float *w, size_t n, float s, int8_t *q);

#endif /* QBK_INT4_RULES_H */
