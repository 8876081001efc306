/* model_src.c: the reader's description is validated once (names unique,
 * dims sane), bounds are checked before the reader is called, data calls
 * are serialised for a reader without QB_PLUGIN_CONCURRENT_READS, and a
 * reader failure without a message gets one naming file and tensor. */
#include <stdatomic.h>
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_host_log.h"

static const char *names[3];
static uint32_t ndims0 = 2;
static atomic_int in_flight, overlap, calls;
static int fail_silently;
/* what the reader says about facts it must not fill (qb_tensor.h) */
static const char *reader_config;
static int reader_is_1_0;
static const qb_model_facts reader_facts = {sizeof(qb_model_facts), QB_FACT_ALL, 99, 99, 99,
                                            99, 99, 99, 99, 99, 99, 1};

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
    mi->config_json = reader_config;
    if (reader_is_1_0)
        mi->struct_size = QB_MODEL_INFO_SIZE_1_0; /* as a 1.0 reader would fill it */
    else
        mi->facts = &reader_facts;
    return QB_OK;
}
static qb_status t_tinfo(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    (void)h;
    ti->name = names[i];
    ti->n_dims = i == 0 ? ndims0 : 2;
    ti->dims[0] = 4;
    ti->dims[1] = 3;
    ti->source_encoding = "f32";
    return QB_OK;
}
static qb_status t_rows(qb_reader_handle h, size_t i, int64_t r0, int64_t n, float *dst)
{
    volatile int spin;
    (void)h;
    (void)i;
    if (atomic_fetch_add(&in_flight, 1) > 0)
        atomic_store(&overlap, 1);
    for (spin = 0; spin < 20000; spin++)
        ;
    atomic_fetch_add(&calls, 1);
    memset(dst, 0, (size_t)(n * 3) * sizeof *dst);
    dst[0] = (float)r0;
    atomic_fetch_sub(&in_flight, 1);
    return fail_silently ? QB_E_IO : QB_OK;
}
static const qb_reader_vtable vt = {sizeof vt, t_probe, t_open, t_close, t_info, t_tinfo, t_rows,
                                    NULL, NULL, NULL, NULL, NULL, NULL};
/* ABI 1.4 stored rows: tensor 0 as 4 rows of 6 bytes (byte k of row r is
 * 10 r + k), tensor 1 out of contract (a transposed [4, 3] has 3 stored
 * rows of 4, not 4 of 3), tensor 2 none. */
static atomic_int stored_calls;
static qb_status t_stored_info(qb_reader_handle h, size_t i, qb_stored_rows_info *out)
{
    (void)h;
    atomic_fetch_add(&stored_calls, 1);
    if (i == 2)
        return QB_E_UNSUPPORTED;
    out->encoding = "test:x";
    out->layout = i == 0 ? QB_STORED_ROWS : QB_STORED_TRANSPOSED;
    out->rows = 4;
    out->cols = 3;
    out->row_bytes = 6;
    return QB_OK;
}
static qb_status t_stored_read(qb_reader_handle h, size_t i, int64_t r0, int64_t n, void *dst)
{
    int64_t r, k;
    (void)h;
    (void)i;
    atomic_fetch_add(&stored_calls, 1);
    for (r = 0; r < n; r++)
        for (k = 0; k < 6; k++)
            ((uint8_t *)dst)[r * 6 + k] = (uint8_t)(10 * (r0 + r) + k);
    return QB_OK;
}
static qb_reader_vtable vt_stored = {sizeof vt_stored, t_probe, t_open, t_close, t_info, t_tinfo, t_rows,
                                     NULL, NULL, NULL, NULL, t_stored_info, t_stored_read};
static qb_plugin desc;
static qbh_plugin plug;

static void setup(uint32_t flags)
{
    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    desc.name = "t";
    desc.version = "1";
    desc.reader = &vt;
    desc.flags = flags;
    memset(&plug, 0, sizeof plug);
    plug.name = "t";
    plug.desc = &desc;
    pthread_mutex_init(&plug.read_lock, NULL);
    names[0] = "a";
    names[1] = "b";
    names[2] = "c";
    ndims0 = 2;
    fail_silently = 0;
    reader_config = NULL;
    reader_is_1_0 = 0;
}

START_TEST(validation)
{
    qbh_source s;
    size_t idx;
    setup(0);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(s.src.find(s.src.handle, "c", &idx), QB_OK);
    ck_assert_uint_eq(idx, 2);
    ck_assert_int_eq(s.src.find(s.src.handle, "zz", &idx), QB_E_NOT_FOUND);
    qbh_source_close(&s);
    qbh_source_close(&s); /* closing twice is harmless */

    names[2] = "a";
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_E_FORMAT);
    ck_assert_str_eq(qbh_error_message(), "/m: reader t lists tensor a twice");
    names[2] = "c";
    ndims0 = 0;
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "/m: a: reader t reports 0 dims"));
}
END_TEST

START_TEST(bounds_and_context)
{
    qbh_source s;
    float buf[12];
    setup(0);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    atomic_store(&calls, 0);
    ck_assert_int_eq(s.src.read_rows(s.src.handle, 1, 3, 2, buf), QB_E_RANGE);
    ck_assert_str_eq(qbh_error_message(), "/m: b: rows [3, +2) outside [0, 4)");
    ck_assert_int_eq(s.src.read_rows(s.src.handle, 7, 0, 1, buf), QB_E_RANGE);
    ck_assert_int_eq(s.src.read_rows(s.src.handle, 0, -1, 1, buf), QB_E_RANGE);
    ck_assert_int_eq(atomic_load(&calls), 0);
    ck_assert_int_eq(s.src.read_rows(s.src.handle, 0, 0, 4, buf), QB_OK);
    fail_silently = 1;
    ck_assert_int_eq(s.src.read_rows(s.src.handle, 2, 1, 1, buf), QB_E_IO);
    ck_assert_str_eq(qbh_error_message(), "/m: c: reader t: read_rows failed (QB_E_IO)");
    ck_assert_int_eq(s.src.get_grid_info(s.src.handle, 0, NULL), QB_E_UNSUPPORTED);
    qbh_source_close(&s);
}
END_TEST

START_TEST(host_fills_facts)
{
    qbh_source s;
    setup(0);
    names[0] = "model.embed_tokens.weight";
    names[1] = "model.layers.4.mlp.up_proj.weight";
    reader_config = "{\"num_attention_heads\": 2}";
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    /* the reader's facts pointer is replaced by the host's */
    ck_assert_uint_eq(s.src.info->struct_size, sizeof(qb_model_info));
    ck_assert_ptr_eq(s.src.info->facts, &s.facts);
    ck_assert_uint_eq(s.facts.known, QB_FACT_LAYERS | QB_FACT_HIDDEN | QB_FACT_VOCAB |
                                         QB_FACT_HEADS | QB_FACT_TIED_EMBEDDINGS |
                                         QB_FACT_EXPERTS);
    ck_assert_int_eq(s.facts.n_layers, 5);
    ck_assert_int_eq(s.facts.vocab_size, 4);
    ck_assert_int_eq(s.facts.hidden_size, 3);
    ck_assert_int_eq(s.facts.n_heads, 2);
    ck_assert_int_eq(s.facts.tied_embeddings, 1);
    qbh_source_close(&s);

    /* a 1.0 reader's info is 1.0-sized: the writer still gets 1.1 with facts */
    reader_is_1_0 = 1;
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_uint_eq(s.src.info->struct_size, sizeof(qb_model_info));
    ck_assert_ptr_eq(s.src.info->facts, &s.facts);
    ck_assert_int_eq(s.facts.n_heads, 2);
    qbh_source_close(&s);
}
END_TEST

START_TEST(bad_config_warns_and_opens)
{
    qbh_source s;
    setup(0);
    qbt_host_log_install();
    qbt_host_log_reset();
    reader_config = "{\"num_attention_heads\": 2,}";
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(qbt_host_warn_count(), 1);
    ck_assert_str_eq(qbt_host_log_last(), "/m: config.json of reader t: invalid JSON at byte 26: "
                                          "trailing comma before '}'; model facts from the "
                                          "config are unknown");
    ck_assert_uint_eq(s.facts.known & QB_FACT_HEADS, 0);
    ck_assert_ptr_eq(s.src.info->facts, &s.facts);
    qbh_source_close(&s);
}
END_TEST

typedef struct job {
    qbh_source *s;
} job;

static qb_status read_item(void *arg, size_t i)
{
    job *j = arg;
    float buf[3];
    return j->s->src.read_rows(j->s->src.handle, i % 3, (int64_t)(i % 4), 1, buf);
}

START_TEST(serialised_without_flag)
{
    qbh_source s;
    job j;
    setup(0);
    ck_assert_int_eq(qbh_pool_start(4), QB_OK);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    j.s = &s;
    atomic_store(&overlap, 0);
    ck_assert_int_eq(qbh_parallel_for(2000, read_item, &j), QB_OK);
    ck_assert_int_eq(atomic_load(&overlap), 0);
    qbh_source_close(&s);
    qbh_pool_stop();
}
END_TEST

/* The host forwards a 1.4 reader's stored rows checked against the
 * tensor's shape and the view's rows, and never calls them in a 1.2 table. */
START_TEST(stored_rows)
{
    qbh_source s;
    qb_stored_rows_info si;
    uint8_t buf[24];
    setup(0);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    ck_assert_int_eq(s.src.stored_rows_info(s.src.handle, 0, &si), QB_E_UNSUPPORTED);
    qbh_source_close(&s);

    setup(0);
    desc.reader = &vt_stored;
    atomic_store(&stored_calls, 0);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(s.src.stored_rows_info(s.src.handle, 0, &si), QB_OK);
    ck_assert_str_eq(si.encoding, "test:x");
    ck_assert_int_eq(si.rows, 4);
    ck_assert_int_eq(si.cols, 3);
    ck_assert_int_eq(s.src.read_stored_rows(s.src.handle, 0, 1, 2, buf), QB_OK);
    ck_assert_int_eq(buf[0], 10);
    ck_assert_int_eq(buf[11], 25);
    atomic_store(&stored_calls, 0);
    ck_assert_int_eq(s.src.read_stored_rows(s.src.handle, 0, 3, 2, buf), QB_E_RANGE);
    ck_assert_str_eq(qbh_error_message(), "/m: a: stored rows [3, +2) outside [0, 4)");
    ck_assert_int_eq(atomic_load(&stored_calls), 1); /* the info, never the read */
    ck_assert_int_eq(s.src.stored_rows_info(s.src.handle, 1, &si), QB_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "out of contract"));
    ck_assert_int_eq(s.src.read_stored_rows(s.src.handle, 1, 0, 1, buf), QB_E_INTERNAL);
    ck_assert_int_eq(s.src.stored_rows_info(s.src.handle, 2, &si), QB_E_UNSUPPORTED);
    ck_assert_int_eq(s.src.stored_rows_info(s.src.handle, 9, &si), QB_E_RANGE);
    qbh_source_close(&s);

    vt_stored.struct_size = QB_READER_VTABLE_SIZE_1_2; /* a 1.2 reader: the fields are not there */
    atomic_store(&stored_calls, 0);
    ck_assert_int_eq(qbh_source_open(&plug, "/m", NULL, &s), QB_OK);
    ck_assert_int_eq(s.src.stored_rows_info(s.src.handle, 0, &si), QB_E_UNSUPPORTED);
    ck_assert_int_eq(atomic_load(&stored_calls), 0);
    qbh_source_close(&s);
    vt_stored.struct_size = sizeof vt_stored;
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("model_src");
    TCase *tc = tcase_create("model_src");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, validation);
    tcase_add_test(tc, bounds_and_context);
    tcase_add_test(tc, serialised_without_flag);
    tcase_add_test(tc, host_fills_facts);
    tcase_add_test(tc, bad_config_warns_and_opens);
    tcase_add_test(tc, stored_rows);
    suite_add_tcase(s, tc);
    return s;
}
