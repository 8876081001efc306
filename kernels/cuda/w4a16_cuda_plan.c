/*
 * The host-side decisions of qb_w4a16_gemm_cuda (see w4a16_cuda_plan.h):
 * plain C, no CUDA, so they are tested without a GPU.
 */
#include "w4a16_cuda_plan.h"

#include <stdarg.h>
#include <stdio.h>

static qb_status fail(char *err, size_t err_len, qb_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static qb_status fail(char *err, size_t err_len, qb_status code, const char *fmt, ...)
{
    va_list ap;
    if (err && err_len) {
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return code;
}

static size_t align16(size_t v)
{
    return (v + 15) & ~(size_t)15;
}

qb_status w4a16_cuda_plan_sizes(const char *fn, int64_t M, int64_t N, int64_t K,
                                int64_t group_size, w4a16_cuda_plan *p, char *err, size_t err_len)
{
    int64_t g;
    if (M < 1 || N < 1 || K < 1 || group_size < 1)
        return fail(err, err_len, QB_E_INVALID,
                    "%s: M, N, K and group_size must be >= 1 (M = %lld, N = %lld, K = %lld, "
                    "group_size = %lld)",
                    fn, (long long)M, (long long)N, (long long)K, (long long)group_size);
    if (N > W4A16_CUDA_MAX_N || K > W4A16_CUDA_MAX_K || M > W4A16_CUDA_MAX_ROWS)
        return fail(err, err_len, QB_E_INVALID,
                    "%s: M = %lld, N = %lld or K = %lld too large for the kernels' int indexing "
                    "(limits %d, %d, %d)",
                    fn, (long long)M, (long long)N, (long long)K, W4A16_CUDA_MAX_ROWS,
                    W4A16_CUDA_MAX_N, W4A16_CUDA_MAX_K);
    /* One group per row whatever the value: the kernels never see a
     * group_size that does not fit int, and g >= K still qualifies for the
     * mma kernel when K % 32 == 0. */
    g = group_size < K ? group_size : K;
    *p = (w4a16_cuda_plan){.M = M, .N = (int)N, .K = (int)K, .g = (int)g,
                           .scols = (int)(K / g + (K % g != 0)), .use_mma = 0, .splits = 1,
                           .perm_bytes = 0};
    return QB_OK;
}

/* [a, a + la) and [b, b + lb) share a byte (neither wraps: checked by the
 * caller; a NULL or empty range shares none). */
static int overlap(uintptr_t a, uint64_t la, uintptr_t b, uint64_t lb)
{
    return a && b && la && lb && a < b + lb && b < a + la;
}

qb_status w4a16_cuda_plan_call(const w4a16_cuda_args *a, w4a16_cuda_plan *p, char *err,
                               size_t err_len)
{
    static const char fn[] = "qb_w4a16_gemm_cuda";
    enum { X, Y, PACKED, SCALES, PERM, WS, NBUF };
    static const char *const names[NBUF] = {"x", "y", "packed", "scales", "perm", "workspace"};
    uintptr_t addr[NBUF];
    uint64_t len[NBUF];
    uintptr_t xin;
    qb_status st;

    if (!a->x || !a->y || !a->packed || !a->scales)
        return fail(err, err_len, QB_E_INVALID, "%s: NULL pointer argument (x, y, packed or scales)",
                    fn);
    if (a->kernel != QB_W4A16_CUDA_AUTO && a->kernel != QB_W4A16_CUDA_GEMV &&
        a->kernel != QB_W4A16_CUDA_MMA)
        return fail(err, err_len, QB_E_INVALID, "%s: unknown kernel %d", fn, a->kernel);
    if ((st = w4a16_cuda_plan_sizes(fn, a->M, a->N, a->K, a->group_size, p, err, err_len)) != QB_OK)
        return st;
    if ((a->x & 1) || (a->y & 1) || (a->scales & 1))
        return fail(err, err_len, QB_E_INVALID, "%s: x, y and scales must be 2-byte aligned (fp16)",
                    fn);
    if (a->perm & 3)
        return fail(err, err_len, QB_E_INVALID, "%s: perm must be 4-byte aligned (int32)", fn);
    if (a->workspace & 15)
        return fail(err, err_len, QB_E_INVALID, "%s: workspace must be 16-byte aligned", fn);

    /* Sizes are bounded above (M < 2^31, N < 2^27, K < 2^30): every
     * product below fits in 64 bits. */
    addr[X] = a->x, len[X] = (uint64_t)a->M * (uint64_t)p->K * 2;
    addr[Y] = a->y, len[Y] = (uint64_t)a->M * (uint64_t)p->N * 2;
    addr[PACKED] = a->packed, len[PACKED] = (uint64_t)p->N * (uint64_t)(p->K / 2 + (p->K & 1));
    addr[SCALES] = a->scales, len[SCALES] = (uint64_t)p->N * (uint64_t)p->scols * 2;
    addr[PERM] = a->perm, len[PERM] = a->perm ? (uint64_t)p->K * 4 : 0;
    addr[WS] = a->workspace, len[WS] = a->workspace ? (uint64_t)a->workspace_bytes : 0;
    for (int i = 0; i < NBUF; i++)
        if (addr[i] && len[i] > UINTPTR_MAX - addr[i])
            return fail(err, err_len, QB_E_INVALID, "%s: %s + %llu bytes wraps the address space",
                        fn, names[i], (unsigned long long)len[i]);
    /* The kernels write y and the workspace while they read the rest. */
    for (int i = 0; i < NBUF; i++) {
        if (i != Y && overlap(addr[Y], len[Y], addr[i], len[i]))
            return fail(err, err_len, QB_E_INVALID, "%s: y overlaps %s", fn, names[i]);
        if (i != WS && i != Y && overlap(addr[WS], len[WS], addr[i], len[i]))
            return fail(err, err_len, QB_E_INVALID, "%s: workspace overlaps %s", fn, names[i]);
    }

    xin = a->x;
    if (a->perm) {
        const size_t need = align16((size_t)len[X]);
        const size_t have = a->workspace ? a->workspace_bytes : 0;
        if (have < need)
            return fail(err, err_len, QB_E_INVALID,
                        "%s: a perm needs %zu bytes of workspace (align16(M * K * 2)), got %zu", fn,
                        need, have);
        p->perm_bytes = need;
        xin = a->workspace; /* the kernels read the permuted copy */
    }
    p->use_mma = a->kernel != QB_W4A16_CUDA_GEMV && p->K % 32 == 0 && p->g % 32 == 0 &&
                 (xin & 15) == 0 && (a->packed & 15) == 0;
    if (a->kernel == QB_W4A16_CUDA_MMA && !p->use_mma)
        return fail(err, err_len, QB_E_UNSUPPORTED,
                    "%s: the mma kernel needs K %% 32 == 0 (K = %d), group_size %% 32 == 0 "
                    "(%d after clamping to K) and 16-byte aligned x and packed",
                    fn, p->K, p->g);
    return QB_OK;
}

int w4a16_cuda_mma_splits(int N, int K, int sms)
{
    const int ctas = (N + 15) / 16, chunks = (K + W4A16_MMA_CHUNK - 1) / W4A16_MMA_CHUNK;
    /* >= 4 CTAs per SM keep enough weight loads in flight (docs/kernels.md,
     * "Work split"); >= 8 chunks (one per warp) per split. ctas * splits
     * stays below 2^31: ctas < 2^23, splits <= 16. */
    int splits = 1;
    while (splits < 16 && (int64_t)ctas * splits < 4 * (int64_t)sms &&
           chunks / (2 * splits) >= W4A16_MMA_WARPS)
        splits *= 2;
    return splits;
}

int w4a16_cuda_mma_piece(int M, int chunks_per_split)
{
    int piece;
    if (M < 1 || M > QB_W4A16_CUDA_MAX_M || chunks_per_split < 1)
        return 0;
    piece = (W4A16_MMA_SMEM_BYTES / (2 * M) - W4A16_MMA_PAD) / W4A16_MMA_CHUNK;
    piece = piece >= 64 ? 64 : piece / W4A16_MMA_WARPS * W4A16_MMA_WARPS;
    return piece > chunks_per_split ? chunks_per_split : piece;
}

static uint64_t partial_bytes(const w4a16_cuda_plan *p, int splits)
{
    const int64_t rows = p->M < QB_W4A16_CUDA_MAX_M ? p->M : QB_W4A16_CUDA_MAX_M;
    return splits > 1 ? (uint64_t)splits * (uint64_t)rows * (uint64_t)p->N * sizeof(float) : 0;
}

void w4a16_cuda_plan_splits(w4a16_cuda_plan *p, int sms, size_t ws_left)
{
    int splits = p->use_mma ? w4a16_cuda_mma_splits(p->N, p->K, sms) : 1;
    if (partial_bytes(p, splits) > ws_left)
        splits = 1;
    p->splits = splits;
}

size_t w4a16_cuda_workspace_need(const w4a16_cuda_plan *p, int has_perm, int sms)
{
    /* alignment is unknown here: count the partial sums whenever the shape
     * could take the mma kernel */
    const int mma_shape = p->K % 32 == 0 && p->g % 32 == 0;
    size_t b = has_perm ? align16((size_t)p->M * (size_t)p->K * 2) : 0;
    return b + (size_t)(mma_shape ? partial_bytes(p, w4a16_cuda_mma_splits(p->N, p->K, sms)) : 0);
}
