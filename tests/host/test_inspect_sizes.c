/* inspect_sizes.c: bytes per canonical tensor from the reader's ABI 1.2
 * stored-tensor view (summed per canonical index; a tensor no stored one
 * feeds alone is unknown, not 0), from plain dtypes without the view, never
 * from a 1.0/1.1-sized vtable; a view out of contract is an error naming the
 * reader; metadata values stay inside the caller's buffer. Ground truth:
 * the fake reader's own tables below. */
#include <string.h>

#include "inspect.h"
#include "qbh.h"
#include "qbt_check_main.h"

typedef struct raw_row {
    const char *name;
    uint64_t bytes;
    int64_t canonical;
} raw_row;

/* w [8, 32] quantized: codes + scales; n [32] f16; e [4, 32] quantized, part of a fused stored tensor */
static const raw_row raw_rows[] = {
    {"w.codes", 128, 0}, {"w.scales", 16, 0}, {"n", 64, 1}, {"fused", 100, -1},
};
static int64_t bad_canonical = -1; /* >= 0: the first row claims this index */

static int t_probe(void *c, const qb_probe_input *in)
{
    (void)c;
    (void)in;
    return 0;
}
static qb_status t_open(void *c, const char *p, const qb_param *pr, qb_reader_handle *out)
{
    (void)c;
    (void)p;
    (void)pr;
    *out = (void *)1;
    return QB_OK;
}
static void t_close(qb_reader_handle h)
{
    (void)h;
}
static qb_status t_info(qb_reader_handle h, qb_model_info *mi)
{
    (void)h;
    mi->architecture = "llama";
    mi->source_format = "t";
    mi->n_tensors = 3;
    return QB_OK;
}
static qb_status t_tinfo(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    static const char *const names[] = {"w", "n", "e"};
    (void)h;
    ti->name = names[i];
    ti->n_dims = i == 1 ? 1 : 2;
    ti->dims[0] = i == 0 ? 8 : i == 1 ? 32 : 4;
    ti->dims[1] = 32;
    ti->source_dtype = i == 1 ? QB_DT_F16 : QB_DT_QUANTIZED;
    ti->source_encoding = i == 1 ? "f16" : "q4";
    return QB_OK;
}
static qb_status t_rows(qb_reader_handle h, size_t i, int64_t r0, int64_t n, float *dst)
{
    (void)h;
    (void)i;
    (void)r0;
    (void)n;
    (void)dst;
    return QB_OK;
}
static qb_status t_raw(qb_reader_handle h, size_t i, qb_raw_tensor_info *out)
{
    (void)h;
    if (i >= sizeof raw_rows / sizeof raw_rows[0])
        return QB_E_RANGE;
    out->name = raw_rows[i].name;
    out->type = "U8";
    out->n_dims = 1;
    out->dims[0] = (int64_t)raw_rows[i].bytes;
    out->n_bytes = raw_rows[i].bytes;
    out->canonical = i == 0 && bad_canonical >= 0 ? bad_canonical : raw_rows[i].canonical;
    return QB_OK;
}
static qb_status t_meta(qb_reader_handle h, size_t i, qb_meta_entry *e)
{
    (void)h;
    if (i > 0)
        return QB_E_RANGE;
    e->key = "k";
    e->type = "string";
    /* a careless reader: fills the whole buffer, no terminating NUL */
    memset(e->value, 'x', e->value_cap);
    return QB_OK;
}

static qb_reader_vtable vt = {sizeof vt, t_probe, t_open, t_close, t_info, t_tinfo, t_rows,
                              NULL, NULL, t_raw, t_meta, NULL, NULL};
static qb_plugin desc;
static qbh_plugin plug;

static void setup(uint32_t vt_size)
{
    vt.struct_size = vt_size;
    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    desc.name = "t";
    desc.version = "1";
    desc.reader = &vt;
    memset(&plug, 0, sizeof plug);
    plug.name = "t";
    plug.desc = &desc;
    pthread_mutex_init(&plug.read_lock, NULL);
    bad_canonical = -1;
}

START_TEST(bytes_from_stored_view)
{
    qbh_source s;
    qbh_sizes z;
    setup(sizeof vt);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(qbh_source_has_raw(&s), 1);
    ck_assert_int_eq(qbh_sizes_compute(&s, &z), QB_OK);
    ck_assert_int_eq(z.from_raw, 1);
    ck_assert_int_eq(z.t[0].params, 8 * 32);
    ck_assert_int_eq(z.t[0].bytes, 128 + 16);
    ck_assert_int_eq(z.t[1].bytes, 64);
    ck_assert_int_eq(z.t[2].bytes, -1); /* fed only by the fused tensor: unknown */
    ck_assert_int_eq(z.other_bytes, 100);
    ck_assert_uint_eq(z.n_enc, 2);
    ck_assert_str_eq(z.enc[0].encoding, "q4");
    ck_assert_uint_eq(z.enc[0].n_tensors, 2);
    ck_assert_int_eq(z.enc[0].params, 8 * 32 + 4 * 32);
    ck_assert_int_eq(z.enc[0].bytes_known, 0);
    ck_assert_int_eq(z.enc[1].bytes_known, 1);
    ck_assert_int_eq(z.params, 8 * 32 + 32 + 4 * 32);
    ck_assert_int_eq(z.bytes_known, 0);
    ck_assert_int_eq(z.bytes, 144 + 64);
    ck_assert(qbh_bits_per_weight(z.t[0].bytes, z.t[0].params) == 4.5);
    ck_assert(qbh_bits_per_weight(-1, 10) < 0);
    ck_assert(qbh_bits_per_weight(10, 0) < 0);
    qbh_sizes_free(&z);
    qbh_source_close(&s);
}
END_TEST

START_TEST(old_vtable_is_not_read_past_its_size)
{
    qbh_source s;
    qbh_sizes z;
    setup(QB_READER_VTABLE_SIZE_1_0); /* as a 1.1 plugin fills it: the entries are not there */
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(qbh_source_has_raw(&s), 0);
    ck_assert_int_eq(qbh_source_has_meta(&s), 0);
    ck_assert_int_eq(qbh_inspect_raw_check(&s), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "reader t"));
    ck_assert_int_eq(qbh_sizes_compute(&s, &z), QB_OK);
    ck_assert_int_eq(z.from_raw, 0);
    ck_assert_int_eq(z.t[0].bytes, -1);     /* quantized: no element size */
    ck_assert_int_eq(z.t[1].bytes, 32 * 2); /* f16 */
    qbh_sizes_free(&z);
    qbh_source_close(&s);
}
END_TEST

START_TEST(stored_view_out_of_contract)
{
    qbh_source s;
    qbh_sizes z;
    setup(sizeof vt);
    bad_canonical = 3;
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(qbh_sizes_compute(&s, &z), QB_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "reader t"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "w.codes"));
    ck_assert_ptr_null(z.t);
    qbh_source_close(&s);
}
END_TEST

START_TEST(metadata_value_stays_in_buffer)
{
    qbh_source s;
    qb_meta_entry e;
    char buf[5];
    setup(sizeof vt);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(qbh_source_meta(&s, 0, &e, buf, sizeof buf), QB_OK);
    ck_assert_str_eq(buf, "xxxx");
    ck_assert_str_eq(e.key, "k");
    ck_assert_int_eq(qbh_source_meta(&s, 1, &e, buf, sizeof buf), QB_E_RANGE);
    qbh_source_close(&s);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("inspect_sizes");
    TCase *tc = tcase_create("all");
    tcase_add_test(tc, bytes_from_stored_view);
    tcase_add_test(tc, old_vtable_is_not_read_past_its_size);
    tcase_add_test(tc, stored_view_out_of_contract);
    tcase_add_test(tc, metadata_value_stays_in_buffer);
    suite_add_tcase(s, tc);
    return s;
}
