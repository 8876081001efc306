/*
 * The forward pass's dense products (host/model/gemm.c) against the loop
 * they replaced (one double accumulator per output, products of floats
 * widened one by one), on the linear shapes of Gemma 3 270M, one thread,
 * CPU time of the thread (a shared machine's load does not count). Not a
 * test: prints a table, and with --json FILE the same as JSON.
 *
 *   bench_fwd_dense [--runs N] [--json FILE]
 *
 * Per shape N x K (out x in) and M tokens: ms per product before and after
 * (median of N runs; after includes widening x to double, which
 * forward_weights.c does once per linear), their ratio, and the
 * largest difference between the two outputs relative to the largest
 * |output| (summation order only: both sum exact products in double).
 */
#define _GNU_SOURCE
#include "fwd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The dense loop as it was before forward_gemm.c (one output at a time). */
static void before(const float *x, int64_t M, int64_t K, const float *w, int64_t N, float *y)
{
    int64_t r, m, c;
    for (r = 0; r < N; r++) {
        const float *wr = w + r * K;
        for (m = 0; m < M; m++) {
            const float *xm = x + m * K;
            double s = 0.0;
            for (c = 0; c < K; c++)
                s += (double)xm[c] * (double)wr[c];
            y[m * N + r] = (float)s;
        }
    }
}

static void after(const float *x, int64_t M, int64_t K, const float *w, int64_t N, float *y,
                  double *xd)
{
    qbh_fwd_gemm_widen(x, M, K, xd);
    qbh_fwd_gemm(xd, M, K, w, N, y, N);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    /* Gemma 3 270M: hidden 640, 4 heads of 256 (q 1024), 1 kv head,
     * intermediate 2048, vocab 262144 (the tied head: timed on 8192 rows
     * of it, the per-row cost is the same) */
    static const struct { const char *name; int64_t N, K; } shapes[] = {
        {"q_proj", 1024, 640},  {"k_proj", 256, 640},   {"o_proj", 640, 1024},
        {"gate_proj", 2048, 640}, {"down_proj", 640, 2048}, {"head/32", 8192, 640},
    };
    static const int64_t Ms[] = {1, 4, 64, 256};
    int runs = 5, i, r;
    const char *json = NULL;
    FILE *jf = NULL;
    size_t s, mi;
    uint64_t z = 12345;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: bench_fwd_dense [--runs N] [--json FILE]\n");
            return 2;
        }
    }
    if (runs < 1)
        runs = 1;
    if (json && !(jf = fopen(json, "w"))) {
        perror(json);
        return 1;
    }
    printf("%-10s %7s %5s %4s %12s %12s %8s %10s\n", "shape", "N", "K", "M", "before_ms",
           "after_ms", "ratio", "rel_diff");
    if (jf)
        fputs("[", jf);
    for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
            int64_t N = shapes[s].N, K = shapes[s].K, M = Ms[mi], k;
            int64_t kp = qbh_fwd_gemm_kp(K);
            float *x = malloc(sizeof(float) * (size_t)(M * K));
            float *w = malloc(sizeof(float) * (size_t)(N * K));
            float *ya = malloc(sizeof(float) * (size_t)(M * N));
            float *yb = malloc(sizeof(float) * (size_t)(M * N));
            double *xd = malloc(sizeof(double) * (size_t)(M * kp));
            double tb[64], ta[64], big = 0, diff = 0;
            if (!x || !w || !ya || !yb || !xd) {
                fprintf(stderr, "out of memory\n");
                return 1;
            }
            for (k = 0; k < M * K; k++) {
                z = z * 6364136223846793005ULL + 1442695040888963407ULL;
                x[k] = (float)((double)(z >> 40) / 16777216.0 * 2.0 - 1.0);
            }
            for (k = 0; k < N * K; k++) {
                z = z * 6364136223846793005ULL + 1442695040888963407ULL;
                w[k] = (float)((double)(z >> 40) / 16777216.0 * 0.1 - 0.05);
            }
            for (r = 0; r < runs && r < 64; r++) {
                double t0 = cpu_s();
                before(x, M, K, w, N, ya);
                tb[r] = cpu_s() - t0;
                t0 = cpu_s();
                after(x, M, K, w, N, yb, xd);
                ta[r] = cpu_s() - t0;
            }
            qsort(tb, (size_t)r, sizeof *tb, cmp);
            qsort(ta, (size_t)r, sizeof *ta, cmp);
            for (k = 0; k < M * N; k++) {
                big = fmax(big, fabs(ya[k]));
                diff = fmax(diff, fabs((double)ya[k] - yb[k]));
            }
            printf("%-10s %7lld %5lld %4lld %12.3f %12.3f %8.2f %10.2g\n", shapes[s].name,
                   (long long)N, (long long)K, (long long)M, 1e3 * tb[r / 2], 1e3 * ta[r / 2],
                   tb[r / 2] / ta[r / 2], big > 0 ? diff / big : 0.0);
            if (jf)
                fprintf(jf, "%s{\"shape\": \"%s\", \"N\": %lld, \"K\": %lld, \"M\": %lld, "
                            "\"before_ms\": %.4f, \"after_ms\": %.4f, \"ratio\": %.3f}",
                        s || mi ? ", " : "", shapes[s].name, (long long)N, (long long)K,
                        (long long)M, 1e3 * tb[r / 2], 1e3 * ta[r / 2], tb[r / 2] / ta[r / 2]);
            free(x);
            free(w);
            free(ya);
            free(yb);
            free(xd);
        }
    if (jf) {
        fputs("]\n", jf);
        fclose(jf);
    }
    return 0;
}
