/*
 * libquantbridge-w4a16 loader on hand-built tiny directories: a valid one
 * (tensors come back with the known bytes, shapes and a product equal to
 * the known one), and broken ones: bad sha256 (caught only with the flag),
 * wrong size, unknown feature, wrong format_version, wrong fixed fields,
 * missing layer file, perm without the feature, shape mismatches; and the
 * cases docs/w4a16-format.md "Strict reading" settles (uppercase digest,
 * duplicate key, name starting with '.', zero layers, layer file width
 * above 1,000 layers), each checked against the text of that document.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

#include "qbt_json_refusals.h"
#include "qbt_st_writer.h"
#include "qbt_w4a16_case.h"
#include "qbk_sha256.h"

enum { N = 6, K = 11, G = 4, SC = (K + G - 1) / G, PC = (K + 1) / 2 };
#define G_TEXT "4"

static char g_dir[512];
static int8_t g_q[N * K];
static uint8_t g_packed[N * PC];
static uint16_t g_scales[N * SC], g_bias[N], g_norm[K], g_scales1[N];
static int32_t g_perm[K];

/* Manifest overrides for the broken variants. */
typedef struct variant {
    const char *format_version; /* JSON text */
    const char *features;       /* JSON text */
    const char *bits;
    const char *extra_file;     /* JSON object text appended to files, or NULL */
    int bad_sha;                /* corrupt layer_00's sha256 */
    int bad_bytes;              /* corrupt layer_00's size */
    int num_layers;
    int with_perm;
    int upper_sha;              /* layer_00's sha256 in uppercase hex */
    const char *extra_member;   /* JSON text "key": value added at the top, or NULL */
    const char *group_size;     /* JSON text, NULL: G */
} variant;

static void make_dir(void)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    char tmpl[512];
    if (!base || !*base)
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(tmpl, sizeof(tmpl), "%s/w4a16-loader-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(g_dir, sizeof(g_dir), "%s", tmpl);
}

static void file_info(const char *name, char hex[65], long long *bytes)
{
    char path[700];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    uint8_t d[32];
    uint64_t n;
    ck_assert_int_eq(stat(path, &sb), 0);
    *bytes = (long long)sb.st_size;
    ck_assert_int_eq(qbk_sha256_file(path, d, &n), 0);
    ck_assert_uint_eq(n, (uint64_t)sb.st_size);
    qbk_sha256_hex(d, hex);
}

static void write_st(const char *name, qbt_st_writer *w)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    ck_assert_int_eq(qbt_st_writer_save(w, path), 0);
    qbt_st_writer_free(w);
}

static void build(const variant *v)
{
    qbt_rng rng = {99};
    qbt_st_writer *w = qbt_st_writer_new();
    int64_t dp[2] = {N, PC}, ds[2] = {N, SC}, dbad[2] = {N, 2}, dk[1] = {K}, dn[1] = {N};
    int64_t ds1[2] = {N, 1}, dempty[2] = {N, 0};
    char hex[65], man[8192], path[700], files[4096] = "";
    long long bytes;
    make_dir();
    for (int i = 0; i < N * K; i++)
        g_q[i] = (int8_t)((int)(qbt_rng_u64(&rng) % 16) - 8);
    qbt_w4a16_pack(g_q, N, K, g_packed);
    for (int i = 0; i < N * SC; i++)
        g_scales[i] = qb_f32_to_f16(i % 5 == 0 ? -0.25f : 0.125f * (float)(1 + i % 3));
    for (int i = 0; i < N; i++) {
        g_bias[i] = qb_f32_to_f16((float)i);
        g_scales1[i] = qb_f32_to_f16(i % 2 ? -0.5f : 0.25f * (float)(i + 1));
    }
    for (int i = 0; i < K; i++) {
        g_norm[i] = qb_f32_to_f16(1.0f);
        g_perm[i] = (i * 4) % K; /* 4 is coprime with 11: a permutation */
    }
    ck_assert_ptr_nonnull(w);
    qbt_st_writer_add(w, "input_layernorm.weight", "F16", 1, dk, g_norm, sizeof(g_norm));
    qbt_st_writer_add(w, "self_attn.q_proj.packed", "U8", 2, dp, g_packed, sizeof(g_packed));
    qbt_st_writer_add(w, "self_attn.q_proj.scales", "F16", 2, ds, g_scales, sizeof(g_scales));
    qbt_st_writer_add(w, "self_attn.q_proj.bias", "F16", 1, dn, g_bias, sizeof(g_bias));
    if (v->with_perm)
        qbt_st_writer_add(w, "self_attn.q_proj.perm", "I32", 1, dk, g_perm, sizeof(g_perm));
    /* a wrongly shaped linear for the mismatch test */
    qbt_st_writer_add(w, "mlp.bad.packed", "U8", 2, dp, g_packed, sizeof(g_packed));
    qbt_st_writer_add(w, "mlp.bad.scales", "F16", 2, dbad, g_scales, (size_t)N * 2 * 2);
    /* one scale per row: the shape of any group_size >= K; and a linear
     * without input columns (after perm: its offset stays as described) */
    qbt_st_writer_add(w, "mlp.one.packed", "U8", 2, dp, g_packed, sizeof(g_packed));
    qbt_st_writer_add(w, "mlp.one.scales", "F16", 2, ds1, g_scales1, sizeof(g_scales1));
    qbt_st_writer_add(w, "mlp.empty.packed", "U8", 2, dempty, g_packed, 0);
    qbt_st_writer_add(w, "mlp.empty.scales", "F16", 2, dempty, g_scales, 0);
    write_st("layer_00.safetensors", w);
    w = qbt_st_writer_new();
    qbt_st_writer_add(w, "norm.weight", "F16", 1, dk, g_norm, sizeof(g_norm));
    write_st("norm.safetensors", w);
    w = qbt_st_writer_new();
    qbt_st_writer_add(w, "embed_tokens.weight", "F16", 1, dk, g_norm, sizeof(g_norm));
    write_st("embed.safetensors", w);
    snprintf(path, sizeof(path), "%s/config.json", g_dir);
    ck_assert_int_eq(qbt_write_text(path, "{\"model_type\": \"llama\"}\n"), 0);

    {
        static const char *const names[] = {"layer_00.safetensors", "norm.safetensors",
                                            "config.json", "embed.safetensors"};
        for (int i = 0; i < 4; i++) {
            size_t l = strlen(files);
            file_info(names[i], hex, &bytes);
            if (i == 0 && v->bad_sha)
                hex[0] = hex[0] == '0' ? '1' : '0';
            if (i == 0 && v->bad_bytes)
                bytes += 1;
            for (int c = 0; i == 0 && v->upper_sha && c < 64; c++)
                if (hex[c] >= 'a' && hex[c] <= 'f')
                    hex[c] = (char)(hex[c] - 'a' + 'A');
            snprintf(files + l, sizeof(files) - l, "%s{\"name\": \"%s\", \"bytes\": %lld, \"sha256\": \"%s\"}",
                     i ? ", " : "", names[i], bytes, hex);
        }
        if (v->extra_file) {
            size_t l = strlen(files);
            snprintf(files + l, sizeof(files) - l, ", %s", v->extra_file);
        }
    }
    snprintf(man, sizeof(man),
             "{\"format\": \"sm86-w4a16\", \"format_version\": %s, \"bits\": %s,\n"
             " \"symmetric\": true, \"code_offset\": 8, \"nibble_order\": \"low-even\",\n"
             " \"group_size\": %s, \"architecture\": \"llama\", \"num_layers\": %d,\n"
             " \"tie_word_embeddings\": true, \"lm_head\": \"f16\", \"features\": %s,%s%s\n"
             " \"files\": [%s], \"tensors\": {}}\n",
             v->format_version ? v->format_version : "1", v->bits ? v->bits : "4",
             v->group_size ? v->group_size : G_TEXT,
             v->num_layers, v->features ? v->features : "[]", v->extra_member ? " " : "",
             v->extra_member ? v->extra_member : "", files);
    snprintf(path, sizeof(path), "%s/manifest.json", g_dir);
    ck_assert_int_eq(qbt_write_text(path, man), 0);
}

static qb_status open_variant(const variant *v, unsigned flags, qb_w4a16_model **m, char *err,
                              size_t len)
{
    build(v);
    return qb_w4a16_open(g_dir, flags, m, err, len);
}

static const variant good = {.num_layers = 1};

START_TEST(test_open_valid)
{
    qb_w4a16_model *m = NULL;
    qb_w4a16_linear lin;
    qb_w4a16_tensor t;
    char err[1024], name[64];
    uint16_t x[K], y[N];
    ck_assert_msg(open_variant(&good, QB_W4A16_OPEN_VERIFY_SHA256, &m, err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(qb_w4a16_group_size(m), G);
    ck_assert_int_eq(qb_w4a16_num_layers(m), 1);
    ck_assert_str_eq(qb_w4a16_architecture(m), "llama");
    ck_assert_int_eq(qb_w4a16_has_feature(m, "input_permutation"), 0);
    ck_assert_int_eq(qb_w4a16_layer_file(m, 0, name, sizeof(name)), 0);
    ck_assert_str_eq(name, "layer_00.safetensors");
    ck_assert_int_eq(qb_w4a16_layer_file(m, 1, name, sizeof(name)), QB_E_RANGE);

    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", K, &lin), 0);
    ck_assert_int_eq(lin.n, N);
    ck_assert_int_eq(lin.k, K);
    ck_assert_int_eq(lin.group_size, G);
    ck_assert_ptr_null(lin.perm);
    ck_assert_ptr_nonnull(lin.bias);
    ck_assert_int_eq(memcmp(lin.packed, g_packed, sizeof(g_packed)), 0);
    ck_assert_int_eq(memcmp(lin.scales, g_scales, sizeof(g_scales)), 0);
    ck_assert_int_eq(memcmp(lin.bias, g_bias, sizeof(g_bias)), 0);

    /* The product through the loaded tensors equals the known one. */
    for (int i = 0; i < K; i++)
        x[i] = qb_f32_to_f16((float)(i % 3) - 1.0f);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, lin.packed, lin.scales, lin.perm, 1, lin.n, lin.k,
                                       lin.group_size, 1, 0), 0);
    for (int n = 0; n < N; n++) {
        double want = 0;
        for (int k = 0; k < K; k++)
            want += g_q[n * K + k] * (double)qb_f16_to_f32(g_scales[n * SC + k / G]) *
                    qb_f16_to_f32(x[k]);
        ck_assert_double_eq(qb_f16_to_f32(y[n]), want);
    }

    /* K + 1 (even) and K - 1 do not match the shapes of an odd K = 11 with
     * g = 4: 12 columns imply 3 scale groups too, so k = 0 (even) passes. */
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", 0, &lin), 0);
    ck_assert_int_eq(lin.k, 12);
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", 9, &lin), QB_E_MISMATCH);
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "mlp.bad", K, &lin), QB_E_MISMATCH);
    ck_assert_ptr_nonnull(strstr(qb_w4a16_error(m), "mlp.bad"));
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "mlp.none", K, &lin), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(qb_w4a16_error(m), "mlp.none.packed"));
    ck_assert_int_eq(qb_w4a16_linear_get(m, 3, "self_attn.q_proj", K, &lin), QB_E_RANGE);

    ck_assert_int_eq(qb_w4a16_tensor_get(m, "norm.safetensors", "norm.weight", &t), 0);
    ck_assert_int_eq(t.dtype, QB_W4A16_DT_F16);
    ck_assert_int_eq(t.n_dims, 1);
    ck_assert_int_eq(t.dims[0], K);
    ck_assert_int_eq(qb_w4a16_tensor_get(m, "embed.safetensors", "x", &t), QB_E_NOT_FOUND);
    ck_assert_int_eq(qb_w4a16_tensor_get(m, "absent.safetensors", "x", &t), QB_E_NOT_FOUND);
    ck_assert_int_eq(qb_w4a16_tensor_get(m, "config.json", "x", &t), QB_E_NOT_FOUND);
    qb_w4a16_close(m);
}
END_TEST

START_TEST(test_perm_needs_feature)
{
    variant v = {.num_layers = 1, .with_perm = 1};
    qb_w4a16_model *m = NULL;
    qb_w4a16_linear lin;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), 0);
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", K, &lin), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qb_w4a16_error(m), "input_permutation"));
    qb_w4a16_close(m);

    v.features = "[\"input_permutation\"]";
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), 0);
    ck_assert_int_eq(qb_w4a16_has_feature(m, "input_permutation"), 1);
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", K, &lin), 0);
    ck_assert_ptr_nonnull(lin.perm);
    ck_assert_int_eq(memcmp(lin.perm, g_perm, sizeof(g_perm)), 0);
    /* the fixture puts perm at an offset that is not a multiple of 4 (after
     * 22 + 36 + 36 + 12 bytes): the loader hands out one aligned copy */
    ck_assert_uint_eq((uintptr_t)lin.perm % 4, 0);
    {
        qb_w4a16_linear again;
        ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", K, &again), 0);
        ck_assert_ptr_eq(again.perm, lin.perm);
    }
    qb_w4a16_close(m);
}
END_TEST

/* The product of mlp.one (one scale per row) through the CPU GEMM equals
 * the known one. */
static void check_one_group(const qb_w4a16_linear *lin, int64_t g)
{
    uint16_t x[K], y[N];
    for (int i = 0; i < K; i++)
        x[i] = qb_f32_to_f16((float)(i % 3) - 1.0f);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, lin->packed, lin->scales, NULL, 1, lin->n, lin->k, g,
                                       1, 0), 0);
    for (int n = 0; n < N; n++) {
        double want = 0;
        for (int k = 0; k < K; k++)
            want += g_q[n * K + k] * (double)qb_f16_to_f32(g_scales1[n]) * qb_f16_to_f32(x[k]);
        ck_assert_double_eq(qb_f16_to_f32(y[n]), want);
    }
}

START_TEST(test_group_size_at_least_k)
{
    /* any manifest group_size >= k means one group per row: the linear
     * comes back with group_size = k, the value the kernels take, and the
     * raw value gives the same product on the CPU */
    static const char *const gs[] = {"11", "12", "64", "2147483647"};
    static const long long gv[] = {11, 12, 64, 2147483647LL};
    for (int i = 0; i < 4; i++) {
        variant v = {.num_layers = 1, .group_size = gs[i]};
        qb_w4a16_model *m = NULL;
        qb_w4a16_linear lin;
        char err[1024];
        ck_assert_msg(open_variant(&v, 0, &m, err, sizeof(err)) == 0, "%s", err);
        ck_assert_int_eq(qb_w4a16_group_size(m), gv[i]);
        ck_assert_msg(qb_w4a16_linear_get(m, 0, "mlp.one", K, &lin) == 0, "%s", qb_w4a16_error(m));
        ck_assert_int_eq(lin.group_size, K);
        ck_assert_int_eq(lin.k, K);
        check_one_group(&lin, lin.group_size);
        check_one_group(&lin, gv[i]);
        /* 3 scales per row are not one group */
        ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_proj", K, &lin), QB_E_MISMATCH);
        qb_w4a16_close(m);
    }
}
END_TEST

START_TEST(test_group_size_refused)
{
    /* beyond int32, zero, negative, fractional: refused at open, naming
     * the field (w4a16-format.md "Strict reading") */
    static const char *const gs[] = {"2147483648", "4294967296", "4294967328", "0", "-128",
                                     "128.5", "\"128\""};
    for (int i = 0; i < 7; i++) {
        variant v = {.num_layers = 1, .group_size = gs[i]};
        qb_w4a16_model *m = NULL;
        char err[1024] = "";
        ck_assert_msg(open_variant(&v, 0, &m, err, sizeof(err)) == QB_E_FORMAT, "%s accepted",
                      gs[i]);
        ck_assert_ptr_null(m);
        ck_assert_ptr_nonnull(strstr(err, "\"group_size\" is not an integer in [1, 2147483647]"));
    }
}
END_TEST

START_TEST(test_linear_without_columns)
{
    qb_w4a16_model *m = NULL;
    qb_w4a16_linear lin;
    char err[1024];
    ck_assert_int_eq(open_variant(&good, 0, &m, err, sizeof(err)), 0);
    ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "mlp.empty", 0, &lin), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qb_w4a16_error(m), "mlp.empty.packed has no input columns"));
    qb_w4a16_close(m);
}
END_TEST

START_TEST(test_bad_sha)
{
    variant v = {.num_layers = 1, .bad_sha = 1};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, QB_W4A16_OPEN_VERIFY_SHA256, &m, err, sizeof(err)),
                     QB_E_MISMATCH);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err, "layer_00.safetensors"));
    ck_assert_ptr_nonnull(strstr(err, "SHA-256"));
    /* without the flag the hash is not read */
    ck_assert_int_eq(qb_w4a16_open(g_dir, 0, &m, err, sizeof(err)), 0);
    qb_w4a16_close(m);
}
END_TEST

START_TEST(test_bad_bytes)
{
    variant v = {.num_layers = 1, .bad_bytes = 1};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_MISMATCH);
    ck_assert_ptr_nonnull(strstr(err, "layer_00.safetensors"));
}
END_TEST

START_TEST(test_unknown_feature)
{
    variant v = {.num_layers = 1, .features = "[\"input_permutation\", \"zero_points\"]"};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_UNSUPPORTED);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err, "zero_points"));
    ck_assert_ptr_nonnull(strstr(err, "manifest.json"));
}
END_TEST

START_TEST(test_wrong_version)
{
    variant v = {.num_layers = 1, .format_version = "2"};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "format_version"));
    v.format_version = "\"1\"";
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    v.format_version = "1.5";
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
}
END_TEST

START_TEST(test_wrong_fixed_fields)
{
    variant v = {.num_layers = 1, .bits = "8"};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "bits"));
}
END_TEST

START_TEST(test_missing_layer_and_files)
{
    variant v = {.num_layers = 2};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "layer_01.safetensors"));
    v.num_layers = 1;
    v.extra_file = "{\"name\": \"extra.safetensors\", \"bytes\": 1, \"sha256\": "
                   "\"0000000000000000000000000000000000000000000000000000000000000000\"}";
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "extra.safetensors"));
    v.extra_file = "{\"name\": \"../x\", \"bytes\": 1, \"sha256\": "
                   "\"0000000000000000000000000000000000000000000000000000000000000000\"}";
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_int_eq(qb_w4a16_open("/nonexistent-w4a16-dir", 0, &m, err, sizeof(err)),
                     QB_E_NOT_FOUND);
}
END_TEST

START_TEST(test_corrupt_safetensors)
{
    /* size and hash right (recomputed) but the file is not safetensors */
    qb_w4a16_model *m = NULL;
    char err[1024], path[700];
    build(&good);
    snprintf(path, sizeof(path), "%s/norm.safetensors", g_dir);
    {
        FILE *f = fopen(path, "r+b");
        ck_assert_ptr_nonnull(f);
        fputc(0xff, f); /* header length becomes huge */
        fseek(f, 7, SEEK_SET);
        fputc(0x7f, f);
        fclose(f);
    }
    /* bytes unchanged, so only the parser can catch it */
    ck_assert_int_eq(qb_w4a16_open(g_dir, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "norm.safetensors"));
}
END_TEST

/* docs/w4a16-format.md "Strict reading": sha256 is 64 lowercase hex digits. */
START_TEST(test_strict_uppercase_sha)
{
    variant v = {.num_layers = 1, .upper_sha = 1};
    qb_w4a16_model *m = NULL;
    char err[1024];
    /* refused even without hashing: the field itself is malformed */
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(err, "layer_00.safetensors"));
    ck_assert_ptr_nonnull(strstr(err, "lowercase"));
}
END_TEST

/* "Strict reading": a key twice in any object is refused. */
START_TEST(test_strict_duplicate_key)
{
    variant v = {.num_layers = 1, .extra_member = "\"group_size\": 8,"};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "duplicate key 'group_size'"));
    /* inside a files entry too */
    v.extra_member = NULL;
    v.extra_file = "{\"name\": \"x.bin\", \"name\": \"y.bin\", \"bytes\": 1, \"sha256\": "
                   "\"0000000000000000000000000000000000000000000000000000000000000000\"}";
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "duplicate key 'name'"));
}
END_TEST

static char g_err[1024];

static qb_status loader_open_cb(const char *path, void *ctx)
{
    qb_w4a16_model *m = NULL;
    qb_status st = qb_w4a16_open(path, 0, &m, g_err, sizeof(g_err));
    (void)ctx;
    qb_w4a16_close(m);
    return st;
}

static const char *loader_err(void)
{
    return g_err;
}

/* manifest.json is read by the one strict parser (sdk/kit/qbk_json.h),
 * linked into the library: each refusal names the file and the reason. */
START_TEST(test_strict_json)
{
    build(&good);
    ck_assert_int_eq(loader_open_cb(g_dir, NULL), 0);
    qbt_json_refusals(g_dir, "manifest.json", "format", NULL, loader_open_cb, NULL, loader_err);
}
END_TEST

/* "Strict reading": a file name starting with '.' is refused, even when
 * the file exists and its size and digest match. */
START_TEST(test_strict_dot_name)
{
    variant v = {.num_layers = 1};
    qb_w4a16_model *m = NULL;
    char err[1024], path[700];
    v.extra_file = "{\"name\": \".hidden\", \"bytes\": 0, \"sha256\": "
                   "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}";
    build(&v);
    snprintf(path, sizeof(path), "%s/.hidden", g_dir);
    ck_assert_int_eq(qbt_write_text(path, ""), 0);
    ck_assert_int_eq(qb_w4a16_open(g_dir, QB_W4A16_OPEN_VERIFY_SHA256, &m, err, sizeof(err)),
                     QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "'.'"));
}
END_TEST

/* "Strict reading": num_layers is at least 1. */
START_TEST(test_strict_zero_layers)
{
    variant v = {.num_layers = 0};
    qb_w4a16_model *m = NULL;
    char err[1024];
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "num_layers"));
}
END_TEST

/* "Directory": layer numbers have the digits of the largest index, at
 * least two: 1000 layers are layer_000 .. layer_999, 1001 layers
 * layer_0000 .. layer_1000. The first missing file names the width. */
START_TEST(test_layer_name_width)
{
    variant v = {.num_layers = 1000};
    qb_w4a16_model *m = NULL;
    char err[1024];
    /* the fixture's layer_00 does not count: the first needed is missing */
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "layer_000.safetensors is not listed"));
    v.num_layers = 1001;
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "layer_0000.safetensors is not listed"));
    v.num_layers = 101;
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "layer_000.safetensors is not listed"));
    v.num_layers = 100;
    ck_assert_int_eq(open_variant(&v, 0, &m, err, sizeof(err)), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "layer_01.safetensors is not listed"));
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("w4a16_loader");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_open_valid);
    tcase_add_test(tc, test_perm_needs_feature);
    tcase_add_test(tc, test_group_size_at_least_k);
    tcase_add_test(tc, test_group_size_refused);
    tcase_add_test(tc, test_linear_without_columns);
    tcase_add_test(tc, test_bad_sha);
    tcase_add_test(tc, test_bad_bytes);
    tcase_add_test(tc, test_unknown_feature);
    tcase_add_test(tc, test_wrong_version);
    tcase_add_test(tc, test_wrong_fixed_fields);
    tcase_add_test(tc, test_missing_layer_and_files);
    tcase_add_test(tc, test_corrupt_safetensors);
    tcase_add_test(tc, test_strict_uppercase_sha);
    tcase_add_test(tc, test_strict_duplicate_key);
    tcase_add_test(tc, test_strict_json);
    tcase_add_test(tc, test_strict_dot_name);
    tcase_add_test(tc, test_strict_zero_layers);
    tcase_add_test(tc, test_layer_name_width);
    suite_add_tcase(s, tc);
    return s;
}
