/*
 * Portable C row kernel of qb_w4a16_gemm_cpu. Decodes a packed row into
 * fp32 codes once (exact: integers -8..7), then for every activation row
 * sums q*x per group in fp32 and adds scale * group_sum to an fp32
 * accumulator. The group sum uses 8 interleaved partial sums (columns
 * c mod 8), like the AVX2 kernel's 8 lanes: it breaks the add-latency chain
 * and lets the compiler vectorise without reassociating anything.
 */
#include "w4a16_cpu_internal.h"

#include <quantbridge/qb_half.h>

#include "w4a16_int4.h"

static float group_dot(const float *q, const float *x, int64_t n)
{
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float sum;
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (int j = 0; j < 8; j++)
            part[j] += q[c + j] * x[c + j];
    sum = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
    for (; c < n; c++)
        sum += q[c] * x[c];
    return sum;
}

void w4a16_rows_plain(const w4a16_rows_job *job, int64_t n0, int64_t n1, float *codes)
{
    const int64_t K = job->K, g = job->g;
    const int64_t pcols = w4a16_int4_packed_bytes(K), scols = w4a16_int4_n_groups(K, g);
    for (int64_t n = n0; n < n1; n++) {
        const uint16_t *srow = job->scales + n * scols;
        w4a16_int4_codes_f32(job->packed + n * pcols, K, codes);
        for (int64_t m = 0; m < job->M; m++) {
            const float *xm = job->xf + m * K;
            float acc = 0.0f;
            for (int64_t grp = 0; grp < scols; grp++) {
                int64_t k0 = grp * g, k1 = k0 + g < K ? k0 + g : K;
                acc += qb_f16_to_f32(srow[grp]) * group_dot(codes + k0, xm + k0, k1 - k0);
            }
            job->y[m * job->N + n] = qb_f32_to_f16(acc);
        }
    }
}
