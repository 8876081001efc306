/*
 * The host-side checks and decisions of qb_w4a16_gemm_cuda
 * (kernels/cuda/w4a16_cuda_plan.c), without a GPU: device addresses are
 * plain numbers here, the functions only compare them.
 *   - group_size >= K, up to INT64_MAX (2^31 - 1, 2^31, 2^32, 2^32 + 32:
 *     the values that made the kernels use row 0's scale for every row,
 *     divide by zero, or read scales out of bounds) is clamped to K, the
 *     group count is right and the mma kernel still qualifies;
 *   - sizes < 1 and sizes past the kernels' int indexing are QB_E_INVALID;
 *   - any M is taken and the mma piece is >= 1 for every M a launch gets
 *     (0, refused, above QB_W4A16_CUDA_MAX_M: the old endless loop);
 *   - alignment (fp16, perm, workspace), overlap, a perm's workspace, an
 *     unknown kernel, forced mma on ineligible problems (including K % 32
 *     == 0 with g not a multiple of 32);
 *   - split-K count and the workspace sizes.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdint.h>
#include <string.h>

#include "w4a16_cuda_plan.h"

static char g_err[512];

/* Disjoint, 256-byte aligned fake device buffers, each 1 TiB apart. */
#define TIB ((uintptr_t)1 << 40)

static w4a16_cuda_args args(int64_t M, int64_t N, int64_t K, int64_t g)
{
    return (w4a16_cuda_args){.x = 1 * TIB, .y = 2 * TIB, .packed = 3 * TIB, .scales = 4 * TIB,
                             .perm = 0, .workspace = 0, .workspace_bytes = 0,
                             .M = M, .N = N, .K = K, .group_size = g,
                             .kernel = QB_W4A16_CUDA_AUTO};
}

static qb_status plan(const w4a16_cuda_args *a, w4a16_cuda_plan *p)
{
    g_err[0] = '\0';
    memset(p, 0x5a, sizeof(*p));
    return w4a16_cuda_plan_call(a, p, g_err, sizeof(g_err));
}

/* The example: K = 4096, N = 3; every g >= K is one group per
 * row, the kernels get g = K and one scale per row, and the mma kernel
 * takes it. */
static const int64_t big_g[] = {4096,        4097,        8192,        (1LL << 31) - 1,
                                1LL << 31,   (1LL << 32) - 1, 1LL << 32, (1LL << 32) + 32,
                                1LL << 62,   INT64_MAX};

START_TEST(test_group_size_clamped)
{
    w4a16_cuda_args a = args(1, 3, 4096, big_g[_i]);
    w4a16_cuda_plan p;
    ck_assert_msg(plan(&a, &p) == QB_OK, "g = %lld: %s", (long long)big_g[_i], g_err);
    ck_assert_int_eq(p.scols, 1);
    ck_assert_int_eq(p.g, 4096);
    ck_assert_int_eq(p.use_mma, 1);
    ck_assert_int_eq(p.splits, 1);
    a.kernel = QB_W4A16_CUDA_MMA;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    /* odd K: clamped too, the GEMV takes it */
    a = args(2, 3, 4095, big_g[_i]);
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_int_eq(p.scols, 1);
    ck_assert_int_eq(p.g, 4095);
    ck_assert_int_eq(p.use_mma, 0);
}
END_TEST

START_TEST(test_group_counts)
{
    static const struct {
        int64_t K, g;
        int scols, mma;
    } c[] = {
        {4096, 128, 32, 1}, {4096, 32, 128, 1}, {4096, 96, 43, 1}, {4096, 4095, 2, 0},
        {4096, 1, 4096, 0}, {4096, 100, 41, 0}, {4096, 48, 86, 0}, {2080, 2080, 1, 1},
        {77, 7, 11, 0},     {1, 1, 1, 0},       {1, INT64_MAX, 1, 0},
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        w4a16_cuda_args a = args(4, 8, c[i].K, c[i].g);
        w4a16_cuda_plan p;
        ck_assert_msg(plan(&a, &p) == QB_OK, "case %zu: %s", i, g_err);
        ck_assert_msg(p.scols == c[i].scols && p.use_mma == c[i].mma,
                      "K = %lld g = %lld: scols %d mma %d", (long long)c[i].K, (long long)c[i].g,
                      p.scols, p.use_mma);
        /* K % 32 == 0 with g not a multiple of 32 (and every other
         * ineligible case): forced mma is refused, the GEMV is not */
        a.kernel = QB_W4A16_CUDA_MMA;
        ck_assert_int_eq(plan(&a, &p), c[i].mma ? QB_OK : QB_E_UNSUPPORTED);
        if (!c[i].mma)
            ck_assert_ptr_nonnull(strstr(g_err, "mma kernel needs"));
        a.kernel = QB_W4A16_CUDA_GEMV;
        ck_assert_int_eq(plan(&a, &p), QB_OK);
        ck_assert_int_eq(p.use_mma, 0);
    }
}
END_TEST

START_TEST(test_sizes_refused)
{
    static const int64_t bad[][4] = {
        /* M, N, K, g */
        {0, 8, 64, 32},
        {-1, 8, 64, 32},
        {1, 0, 64, 32},
        {1, -5, 64, 32},
        {1, 8, 0, 32},
        {1, 8, -64, 32},
        {1, 8, 64, 0},
        {1, 8, 64, -32},
        {1, 8, 64, INT64_MIN},
        {1, W4A16_CUDA_MAX_N + 1LL, 64, 32},
        {1, 8, W4A16_CUDA_MAX_K + 1LL, 32},
        {1, 1LL << 32, 64, 32},
        {1, 8, 1LL << 32, 32},
        {(int64_t)INT32_MAX + 1, 8, 64, 32},
        {INT64_MAX, 8, 64, 32},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        w4a16_cuda_args a = args(bad[i][0], bad[i][1], bad[i][2], bad[i][3]);
        w4a16_cuda_plan p;
        ck_assert_msg(plan(&a, &p) == QB_E_INVALID, "case %zu accepted", i);
        ck_assert_ptr_nonnull(strstr(g_err, "qb_w4a16_gemm_cuda"));
        g_err[0] = '\0';
        ck_assert_int_eq(w4a16_cuda_plan_sizes("f", bad[i][0], bad[i][1], bad[i][2], bad[i][3],
                                               &p, g_err, sizeof(g_err)),
                         QB_E_INVALID);
        ck_assert_int_eq(g_err[0], 'f');
    }
    /* the limits themselves are accepted */
    {
        w4a16_cuda_plan p;
        ck_assert_int_eq(w4a16_cuda_plan_sizes("f", INT32_MAX, W4A16_CUDA_MAX_N, W4A16_CUDA_MAX_K,
                                               INT64_MAX, &p, g_err, sizeof(g_err)),
                         QB_OK);
        ck_assert_int_eq(p.g, W4A16_CUDA_MAX_K);
        ck_assert_int_eq(p.scols, 1);
        ck_assert_int_eq(p.M, INT32_MAX);
    }
}
END_TEST

START_TEST(test_rows_any_m)
{
    /* M above QB_W4A16_CUDA_MAX_M runs as row chunks: taken, same kernel */
    static const int64_t ms[] = {1, 6, 10, 11, 13, 14, 15, 16, 17, 19, 20, 33, 1000, 1 << 20};
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        w4a16_cuda_args a = args(ms[i], 64, 4096, 128);
        w4a16_cuda_plan p;
        ck_assert_int_eq(plan(&a, &p), QB_OK);
        ck_assert_int_eq(p.M, ms[i]);
        ck_assert_int_eq(p.use_mma, 1);
    }
}
END_TEST

START_TEST(test_mma_piece)
{
    /* every M a launch gets stages a positive piece: a multiple of the warp
     * count (or the whole split), within the shared-memory budget */
    for (int M = 1; M <= QB_W4A16_CUDA_MAX_M; M++)
        for (int cps = 1; cps <= 200; cps++) {
            int piece = w4a16_cuda_mma_piece(M, cps);
            ck_assert_msg(piece >= 1 && piece <= cps && piece <= 64, "M %d cps %d piece %d", M,
                          cps, piece);
            ck_assert(piece == cps || piece % W4A16_MMA_WARPS == 0);
            ck_assert((size_t)M * (size_t)(piece * W4A16_MMA_CHUNK + W4A16_MMA_PAD) * 2 <=
                      W4A16_MMA_SMEM_BYTES);
        }
    /* above the maximum (and nonsense) the launcher gets 0 and refuses */
    for (int M = QB_W4A16_CUDA_MAX_M + 1; M <= 64; M++)
        ck_assert_int_eq(w4a16_cuda_mma_piece(M, 64), 0);
    ck_assert_int_eq(w4a16_cuda_mma_piece(0, 64), 0);
    ck_assert_int_eq(w4a16_cuda_mma_piece(-3, 64), 0);
    ck_assert_int_eq(w4a16_cuda_mma_piece(4, 0), 0);
}
END_TEST

START_TEST(test_alignment)
{
    w4a16_cuda_args a = args(3, 64, 1024, 128);
    w4a16_cuda_plan p;
    a.x += 1;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "2-byte"));
    a = args(3, 64, 1024, 128);
    a.y += 1;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    a = args(3, 64, 1024, 128);
    a.scales += 1;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    /* misaligned x (2 bytes) and packed (1 byte): legal, the GEMV */
    a = args(3, 64, 1024, 128);
    a.x += 2;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_int_eq(p.use_mma, 0);
    a.kernel = QB_W4A16_CUDA_MMA;
    ck_assert_int_eq(plan(&a, &p), QB_E_UNSUPPORTED);
    a = args(3, 64, 1024, 128);
    a.packed += 1;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_int_eq(p.use_mma, 0);
    a = args(3, 64, 1024, 128);
    a.packed += 8;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_int_eq(p.use_mma, 0);
    /* perm: int32, 4-byte aligned */
    for (int off = 1; off < 4; off++) {
        a = args(3, 64, 1024, 128);
        a.perm = 5 * TIB + (uintptr_t)off;
        a.workspace = 6 * TIB;
        a.workspace_bytes = 1 << 20;
        ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
        ck_assert_ptr_nonnull(strstr(g_err, "perm must be 4-byte aligned"));
    }
    /* workspace: 16-byte aligned */
    a = args(3, 64, 1024, 128);
    a.workspace = 6 * TIB + 8;
    a.workspace_bytes = 1 << 20;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "workspace must be 16-byte aligned"));
    /* with a perm the kernels read the (aligned) workspace copy of x */
    a = args(3, 64, 1024, 128);
    a.x += 2;
    a.perm = 5 * TIB + 4;
    a.workspace = 6 * TIB;
    a.workspace_bytes = 1 << 20;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_int_eq(p.use_mma, 1);
}
END_TEST

START_TEST(test_null_and_kernel)
{
    w4a16_cuda_args a = args(1, 8, 64, 32);
    w4a16_cuda_plan p;
    uintptr_t *fields[] = {&a.x, &a.y, &a.packed, &a.scales};
    for (int i = 0; i < 4; i++) {
        uintptr_t keep = *fields[i];
        *fields[i] = 0;
        ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
        ck_assert_ptr_nonnull(strstr(g_err, "NULL"));
        *fields[i] = keep;
    }
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    a.kernel = 3;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "unknown kernel 3"));
    a.kernel = -1;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
}
END_TEST

START_TEST(test_perm_workspace)
{
    /* M = 5, K = 100: 1000 bytes of permuted x, rounded up to 1008 */
    w4a16_cuda_args a = args(5, 8, 100, 32);
    w4a16_cuda_plan p;
    a.perm = 5 * TIB;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "1008 bytes of workspace"));
    a.workspace_bytes = 4096; /* bytes without a pointer are no workspace */
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    a.workspace = 6 * TIB;
    a.workspace_bytes = 1007;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    a.workspace_bytes = 1008;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_uint_eq(p.perm_bytes, 1008);
    /* forced mma on an ineligible problem with a perm: refused before
     * anything (the old code had enqueued the gather already) */
    a.kernel = QB_W4A16_CUDA_MMA;
    ck_assert_int_eq(plan(&a, &p), QB_E_UNSUPPORTED);
    /* without a perm no workspace is needed */
    a = args(5, 8, 100, 32);
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_uint_eq(p.perm_bytes, 0);
}
END_TEST

START_TEST(test_overlap)
{
    /* M = 2, N = 16, K = 64: x 256 bytes, y 64, packed 512, scales 64 */
    w4a16_cuda_args a = args(2, 16, 64, 32);
    w4a16_cuda_plan p;
    a.y = a.x;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "y overlaps x"));
    a.y = a.x + 254; /* last fp16 of x */
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    a.y = a.x + 256; /* right after x */
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    a = args(2, 16, 64, 32);
    a.y = a.scales - 32; /* y's last half touches scales */
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "y overlaps scales"));
    a = args(2, 16, 64, 32);
    a.workspace = a.y - 64;
    a.workspace_bytes = 80;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "y overlaps workspace"));
    a.workspace_bytes = 64;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    a = args(2, 16, 64, 32);
    a.workspace = a.packed + 496;
    a.workspace_bytes = 64;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "workspace overlaps packed"));
    a = args(2, 16, 64, 32);
    a.perm = 5 * TIB;
    a.workspace = a.perm + 240; /* perm is 256 bytes */
    a.workspace_bytes = 4096;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "workspace overlaps perm"));
    /* inputs may share memory (read only) */
    a = args(2, 16, 64, 32);
    a.scales = a.x;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    /* a range running off the end of the address space */
    a = args(2, 16, 64, 32);
    a.packed = UINTPTR_MAX - 255;
    ck_assert_int_eq(plan(&a, &p), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(g_err, "wraps"));
}
END_TEST

START_TEST(test_splits_and_workspace)
{
    w4a16_cuda_plan p;
    w4a16_cuda_args a;
    size_t need;
    /* narrow N (1 CTA): split while every split keeps >= 8 chunks of 128
     * columns (one per warp): K = 4096 is 32 chunks, 4 splits of 8 */
    ck_assert_int_eq(w4a16_cuda_mma_splits(16, 4096, 132), 4);
    ck_assert_int_eq(w4a16_cuda_mma_splits(16, 8192, 132), 8);
    ck_assert_int_eq(w4a16_cuda_mma_splits(16, 2048, 132), 2);
    ck_assert_int_eq(w4a16_cuda_mma_splits(16, 1024, 132), 1);
    ck_assert_int_eq(w4a16_cuda_mma_splits(16, 1 << 20, 132), 16);
    /* wide N fills the device (4 CTAs per SM) without splitting */
    ck_assert_int_eq(w4a16_cuda_mma_splits(16 * 528, 1 << 20, 132), 1);
    ck_assert_int_eq(w4a16_cuda_mma_splits(16 * 264, 1 << 20, 132), 2);
    ck_assert_int_eq(w4a16_cuda_mma_splits(W4A16_CUDA_MAX_N, W4A16_CUDA_MAX_K, INT32_MAX / 4), 16);

    a = args(40, 16, 4096, 128);
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    need = w4a16_cuda_workspace_need(&p, 0, 132);
    ck_assert_uint_eq(need, 4u * 16u * 16u * 4u); /* 4 splits, one 16-row chunk */
    ck_assert_uint_eq(w4a16_cuda_workspace_need(&p, 1, 132), 40u * 4096u * 2u + need);
    w4a16_cuda_plan_splits(&p, 132, need);
    ck_assert_int_eq(p.splits, 4);
    w4a16_cuda_plan_splits(&p, 132, need - 1); /* too small: unsplit */
    ck_assert_int_eq(p.splits, 1);
    w4a16_cuda_plan_splits(&p, 132, 0);
    ck_assert_int_eq(p.splits, 1);
    a.kernel = QB_W4A16_CUDA_GEMV;
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    w4a16_cuda_plan_splits(&p, 132, need);
    ck_assert_int_eq(p.splits, 1);
    /* M < 16: partials for M rows; shapes the mma cannot take need none */
    a = args(3, 16, 4096, 128);
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_uint_eq(w4a16_cuda_workspace_need(&p, 0, 132), 4u * 3u * 16u * 4u);
    a = args(3, 16, 4096, 100);
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_uint_eq(w4a16_cuda_workspace_need(&p, 0, 132), 0);
    ck_assert_uint_eq(w4a16_cuda_workspace_need(&p, 1, 132), 3u * 4096u * 2u);
    /* g >= K (2^32 + 32) sizes like g = K */
    a = args(3, 16, 4096, (1LL << 32) + 32);
    ck_assert_int_eq(plan(&a, &p), QB_OK);
    ck_assert_uint_eq(w4a16_cuda_workspace_need(&p, 0, 132), 4u * 3u * 16u * 4u);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("w4a16_cuda_plan");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_group_size_clamped, 0, (int)(sizeof(big_g) / sizeof(big_g[0])));
    tcase_add_test(tc, test_group_counts);
    tcase_add_test(tc, test_sizes_refused);
    tcase_add_test(tc, test_rows_any_m);
    tcase_add_test(tc, test_mma_piece);
    tcase_add_test(tc, test_alignment);
    tcase_add_test(tc, test_null_and_kernel);
    tcase_add_test(tc, test_perm_workspace);
    tcase_add_test(tc, test_overlap);
    tcase_add_test(tc, test_splits_and_workspace);
    suite_add_tcase(s, tc);
    return s;
}
