/*
 * Internal to libquantbridge-w4a16: the per-row kernels of the CPU GEMM,
 * one file per instruction set (w4a16_gemm_plain.c, w4a16_gemm_avx2.c),
 * driven by qb_w4a16_gemm_cpu.c.
 */
#ifndef W4A16_CPU_INTERNAL_H
#define W4A16_CPU_INTERNAL_H

#include <stdint.h>

/* Inputs of one row range, shared read-only by every worker. */
typedef struct w4a16_rows_job {
    const float *xf;          /* [M][K]: x as fp32, perm already applied */
    uint16_t *y;              /* [M][N] fp16 bits */
    const uint8_t *packed;    /* [N][ceil(K/2)] */
    const uint16_t *scales;   /* [N][ceil(K/g)] fp16 bits */
    int64_t M, N, K, g;
} w4a16_rows_job;

/* Computes y[m][n] for every m and n in [n0, n1). `codes` is caller scratch
 * of at least K + 64 floats (the decoded codes of one row, exact in fp32).
 * Pure; threads may run disjoint row ranges of one job concurrently. */
void w4a16_rows_plain(const w4a16_rows_job *job, int64_t n0, int64_t n1, float *codes);

/* Same with AVX2+FMA. Present only on x86; call only when
 * w4a16_cpu_avx2_usable() is nonzero. */
void w4a16_rows_avx2(const w4a16_rows_job *job, int64_t n0, int64_t n1, float *codes);
int w4a16_cpu_avx2_usable(void);

#endif
