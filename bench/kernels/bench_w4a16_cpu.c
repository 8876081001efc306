/*
 * CPU benchmark of qb_w4a16_gemm_cpu: GB/s of packed weights (packed +
 * scales bytes per call / time), plain C vs AVX2, M = 1 and 4, on linear
 * shapes of Llama-2-7B / Llama-3-8B / Qwen2.5-3B. Median of --runs runs
 * (default 7) after one warm-up; single-threaded unless --threads.
 * With one thread the time is the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), so a shared, loaded machine does not count the
 * time the benchmark was descheduled; the wall-clock median is printed too.
 * Not a test: prints a table and, with --json FILE, writes it as JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

typedef struct shape {
    const char *name;
    int64_t N, K;
} shape;

static const shape shapes[] = {
    {"llama2-7b q/k/v/o 4096x4096", 4096, 4096},
    {"llama2-7b gate/up 11008x4096", 11008, 4096},
    {"llama2-7b down 4096x11008", 4096, 11008},
    {"llama3-8b gate/up 14336x4096", 14336, 4096},
    {"qwen2.5-3b down 2048x11008", 2048, 11008},
};

static double now_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int runs = 7, threads = 1, g = 128;
    const char *json = NULL;
    FILE *jf = NULL;
    int first = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--group") && i + 1 < argc)
            g = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--runs N] [--threads T] [--group G] [--json FILE]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || g < 1) {
        fprintf(stderr, "bad --runs or --group\n");
        return 2;
    }
    if (json && !(jf = fopen(json, "w"))) {
        perror(json);
        return 1;
    }
    if (jf)
        fprintf(jf, "{\"bench\": \"w4a16_cpu\", \"threads\": %d, \"group_size\": %d, \"runs\": %d, "
                    "\"avx2_available\": %d, \"results\": [\n",
                threads, g, runs, qb_w4a16_cpu_has_avx2());
    printf("qb_w4a16_gemm_cpu, %d thread(s), g=%d, median of %d; GB/s = (packed + scales) / t\n",
           threads, g, runs);
    printf("time: %s\n", threads <= 1 ? "thread CPU time (wall-clock ms in brackets)" : "wall clock");
    printf("%-30s %2s %9s %8s %10s %9s %8s %10s %7s\n", "shape (NxK)", "M", "plain ms", "[wall]",
           "plain GB/s", "avx2 ms", "[wall]", "avx2 GB/s", "speedup");
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        const int64_t N = shapes[s].N, K = shapes[s].K, sc = (K + g - 1) / g;
        const size_t pbytes = (size_t)(N * ((K + 1) / 2)), sbytes = (size_t)(N * sc) * 2;
        uint8_t *packed = malloc(pbytes);
        uint16_t *scales = malloc(sbytes), *x = malloc((size_t)(4 * K) * 2), *y = malloc((size_t)(4 * N) * 2);
        double *t = malloc(sizeof(double) * (size_t)runs), *tw = malloc(sizeof(double) * (size_t)runs);
        const clockid_t clk = threads <= 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
        uint64_t r = 0x9e3779b97f4a7c15ull;
        if (!packed || !scales || !x || !y || !t || !tw) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (size_t i = 0; i < pbytes; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            packed[i] = (uint8_t)(r >> 56);
        }
        for (int64_t i = 0; i < N * sc; i++)
            scales[i] = qb_f32_to_f16(0.01f * (float)(1 + i % 7) * (i % 11 ? 1.0f : -1.0f));
        for (int64_t i = 0; i < 4 * K; i++)
            x[i] = qb_f32_to_f16((float)(i % 13) * 0.1f - 0.6f);
        for (int M = 1; M <= 4; M *= 4) {
            double ms[2] = {0, 0}, wall[2] = {0, 0};
            for (int path = QB_W4A16_CPU_PLAIN; path <= QB_W4A16_CPU_AVX2; path++) {
                if (path == QB_W4A16_CPU_AVX2 && !qb_w4a16_cpu_has_avx2())
                    continue;
                for (int i = -1; i < runs; i++) {
                    double t0 = now_s(clk), w0 = now_s(CLOCK_MONOTONIC);
                    if (qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, M, N, K, g, threads, path) != 0) {
                        fprintf(stderr, "gemm failed\n");
                        return 1;
                    }
                    if (i >= 0) {
                        t[i] = now_s(clk) - t0;
                        tw[i] = now_s(CLOCK_MONOTONIC) - w0;
                    }
                }
                qsort(t, (size_t)runs, sizeof(double), cmp_double);
                qsort(tw, (size_t)runs, sizeof(double), cmp_double);
                ms[path - 1] = 1e3 * t[runs / 2];
                wall[path - 1] = 1e3 * tw[runs / 2];
            }
            {
                double gb = (double)(pbytes + sbytes) / 1e9;
                printf("%-30s %2d %9.2f %8.2f %10.2f %9.2f %8.2f %10.2f %7.2f\n", shapes[s].name, M,
                       ms[0], wall[0], gb / (ms[0] / 1e3), ms[1], wall[1],
                       ms[1] > 0 ? gb / (ms[1] / 1e3) : 0.0, ms[1] > 0 ? ms[0] / ms[1] : 0.0);
                if (jf) {
                    fprintf(jf, "%s  {\"shape\": \"%s\", \"N\": %lld, \"K\": %lld, \"M\": %d, "
                                "\"plain_ms\": %.4f, \"plain_wall_ms\": %.4f, \"plain_GBps\": %.3f, "
                                "\"avx2_ms\": %.4f, \"avx2_wall_ms\": %.4f, \"avx2_GBps\": %.3f}",
                            first ? "" : ",\n", shapes[s].name, (long long)N, (long long)K, M, ms[0],
                            wall[0], gb / (ms[0] / 1e3), ms[1], wall[1],
                            ms[1] > 0 ? gb / (ms[1] / 1e3) : 0.0);
                    first = 0;
                }
            }
        }
        free(packed);
        free(scales);
        free(x);
        free(y);
        free(t);
        free(tw);
    }
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    return 0;
}
