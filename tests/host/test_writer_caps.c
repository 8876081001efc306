/* writer_caps.c and the 1.1 parts of qbh_plugin_validate: option roles and
 * writer capabilities refused or accepted as qb_param.h and qb_writer.h
 * say; fact names; the architecture and required-fact checks of convert. */
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"

static int stub_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    (void)in;
    return 0;
}
static qb_status stub_open(void *ctx, const char *path, const qb_param *params,
                           qb_reader_handle *out)
{
    (void)ctx;
    (void)path;
    (void)params;
    (void)out;
    return QB_E_UNSUPPORTED;
}
static void stub_close(qb_reader_handle h)
{
    (void)h;
}
static qb_status stub_info(qb_reader_handle h, qb_model_info *mi)
{
    (void)h;
    (void)mi;
    return QB_E_UNSUPPORTED;
}
static qb_status stub_tinfo(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    (void)h;
    (void)i;
    (void)ti;
    return QB_E_UNSUPPORTED;
}
static qb_status stub_rows(qb_reader_handle h, size_t i, int64_t r0, int64_t n, float *dst)
{
    (void)h;
    (void)i;
    (void)r0;
    (void)n;
    (void)dst;
    return QB_E_UNSUPPORTED;
}
static int stub_supports(void *ctx, const qb_model_info *mi)
{
    (void)ctx;
    (void)mi;
    return 0;
}
static qb_status stub_begin(void *ctx, const qb_sink *sink, const qb_model_src *src,
                            const qb_param *params, size_t *order, qb_writer_handle *out)
{
    (void)ctx;
    (void)sink;
    (void)src;
    (void)params;
    (void)order;
    (void)out;
    return QB_E_UNSUPPORTED;
}
static qb_status stub_write(qb_writer_handle w, size_t i)
{
    (void)w;
    (void)i;
    return QB_E_UNSUPPORTED;
}
static qb_status stub_finish(qb_writer_handle w)
{
    (void)w;
    return QB_E_UNSUPPORTED;
}
static void stub_abort(qb_writer_handle w)
{
    (void)w;
}

static const qb_reader_vtable rvt = {sizeof(qb_reader_vtable), stub_probe, stub_open, stub_close,
                                     stub_info, stub_tinfo, stub_rows, NULL, NULL, NULL, NULL, NULL, NULL};
static const qb_writer_vtable wvt = {sizeof(qb_writer_vtable), stub_supports, stub_begin,
                                     stub_write, stub_finish, stub_abort, NULL};

/* A valid descriptor of a plugin that is a reader (r) and/or writer (w). */
static qb_plugin desc(int r, int w)
{
    qb_plugin d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.abi = QB_ABI_CURRENT;
    d.name = "p";
    d.version = "1";
    d.reader = r ? &rvt : NULL;
    d.writer = w ? &wvt : NULL;
    return d;
}

static qb_status validate(const qb_plugin *d)
{
    return qbh_plugin_validate(d, QB_ABI_CURRENT, "p", "lib.so");
}

static qb_option_decl opt(const char *name, uint32_t roles)
{
    qb_option_decl o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.name = name;
    o.type = QB_PARAM_INT;
    o.min_int = 0;
    o.max_int = -1;
    o.roles = roles;
    return o;
}

START_TEST(option_roles_validated)
{
    qb_option_decl a = opt("x", QB_OPTION_ROLE_READER), b = opt("x", QB_OPTION_ROLE_WRITER);
    const qb_option_decl *list[3] = {&a, &b, NULL};
    qb_plugin both = desc(1, 1), ronly = desc(1, 0), wonly = desc(0, 1);
    both.options = ronly.options = wonly.options = list;

    /* One name, once per role: two options. */
    ck_assert_int_eq(validate(&both), QB_OK);
    /* Overlapping roles: declared twice. */
    b.roles = 0;
    ck_assert_int_eq(validate(&both), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "option x declared twice for the reader role"));
    b.roles = QB_OPTION_ROLE_WRITER;
    /* A role the plugin does not have. */
    ck_assert_int_eq(validate(&ronly), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "option x is declared for the writer role "
                                                      "but plugin p has no writer"));
    ck_assert_int_eq(validate(&wonly), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "for the reader role but plugin p has no "
                                                      "reader"));
    /* Unknown bits. */
    list[1] = NULL;
    a.roles = 1u << 2;
    ck_assert_int_eq(validate(&both), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "unknown role bits 0x4"));
    /* 0 means both; on a one-role plugin that is its one role. */
    a.roles = 0;
    ck_assert_int_eq(validate(&ronly), QB_OK);
    ck_assert_int_eq(validate(&wonly), QB_OK);
    /* A 1.0 declaration has no roles field: the bytes after it are not read. */
    a.roles = 0xffu;
    a.struct_size = QB_OPTION_DECL_SIZE_1_0;
    ck_assert_int_eq(validate(&wonly), QB_OK);
    ck_assert_uint_eq(qbh_option_roles(&a), QB_OPTION_ROLE_BOTH);
}
END_TEST

START_TEST(writer_caps_validated)
{
    static const char *const archs[] = {"llama", "qwen2", NULL};
    static const char *const none[] = {NULL};
    static const char *const blank[] = {"llama", "", NULL};
    qb_writer_caps c;
    qb_plugin d = desc(0, 1), r = desc(1, 0);
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.flags = QB_WRITER_SIDE_FILES_HOST;
    c.architectures = archs;
    c.required_facts = QB_FACT_LAYERS | QB_FACT_TIED_EMBEDDINGS;
    c.verify_reader = "hf-dense";
    d.writer_caps = &c;
    ck_assert_int_eq(validate(&d), QB_OK);
    ck_assert_ptr_eq(qbh_writer_caps(&d), &c);
    ck_assert_uint_eq(qbh_writer_side_files(&d), QB_WRITER_SIDE_FILES_HOST);

    c.flags = QB_WRITER_SIDE_FILES_HOST | QB_WRITER_SIDE_FILES_SELF;
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "both QB_WRITER_SIDE_FILES_SELF and"));
    c.flags = 1u << 5;
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "unknown flag bits 0x20"));
    c.flags = 0;
    c.struct_size = QB_WRITER_CAPS_SIZE_1_1 - 1;
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "writer_caps struct_size"));
    c.struct_size = sizeof c;
    c.architectures = none;
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "empty architecture list"));
    c.architectures = blank;
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "architecture 1 is an empty string"));
    c.architectures = NULL;
    c.verify_reader = "Not A Name";
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "verify_reader 'Not A Name'"));
    c.verify_reader = NULL;
    c.required_facts = QB_FACT_ALL + 1;
    ck_assert_int_eq(validate(&d), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "model facts this host does not know"));
    c.required_facts = 0;
    ck_assert_int_eq(validate(&d), QB_OK);

    /* A 1.0-sized descriptor has no writer_caps: not read. */
    c.flags = 0xff;
    d.struct_size = QB_PLUGIN_SIZE_1_0;
    ck_assert_int_eq(validate(&d), QB_OK);
    ck_assert_ptr_null(qbh_writer_caps(&d));
    ck_assert_uint_eq(qbh_writer_side_files(&d), 0);
    /* Ignored on a plugin without a writer. */
    r.writer_caps = &c;
    ck_assert_int_eq(validate(&r), QB_OK);
    ck_assert_ptr_null(qbh_writer_caps(&r));
}
END_TEST

START_TEST(fact_names)
{
    char buf[256];
    uint32_t bit;
    for (bit = 1; bit & QB_FACT_ALL; bit <<= 1)
        ck_assert_ptr_nonnull(qbh_fact_name(bit));
    ck_assert_str_eq(qbh_fact_name(QB_FACT_LAYERS), "layers");
    ck_assert_str_eq(qbh_fact_name(QB_FACT_TIED_EMBEDDINGS), "tied_embeddings");
    ck_assert_str_eq(qbh_fact_name(QB_FACT_EXPERTS), "experts");
    ck_assert_ptr_null(qbh_fact_name(QB_FACT_ALL + 1));
    ck_assert_ptr_null(qbh_fact_name(QB_FACT_LAYERS | QB_FACT_HIDDEN));
    qbh_fact_names(QB_FACT_HEADS | QB_FACT_KV_HEADS | (1u << 20), buf, sizeof buf);
    ck_assert_str_eq(buf, "heads, kv_heads, bit 20");
    qbh_fact_names(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(model_checked_against_caps)
{
    static const char *const archs[] = {"llama", "qwen2", NULL};
    qb_writer_caps c;
    qb_plugin d = desc(0, 1);
    qbh_plugin w;
    qb_model_info mi;
    qb_model_facts f;
    memset(&c, 0, sizeof c);
    memset(&w, 0, sizeof w);
    memset(&mi, 0, sizeof mi);
    memset(&f, 0, sizeof f);
    c.struct_size = sizeof c;
    d.writer_caps = &c;
    w.name = "vw";
    w.desc = &d;
    mi.struct_size = sizeof mi;
    mi.architecture = "mistral";

    /* Nothing declared: nothing refused. */
    ck_assert_int_eq(qbh_writer_check_arch(&w, &mi, "src"), QB_OK);
    ck_assert_int_eq(qbh_writer_check_facts(&w, &mi, "src"), QB_OK);

    c.architectures = archs;
    ck_assert_int_eq(qbh_writer_check_arch(&w, &mi, "src"), QB_E_UNSUPPORTED);
    ck_assert_str_eq(qbh_error_message(), "src: writer vw cannot write this 'mistral' model: it "
                                          "declares the architectures llama, qwen2");
    mi.architecture = "qwen2";
    ck_assert_int_eq(qbh_writer_check_arch(&w, &mi, "src"), QB_OK);

    /* Facts: NULL facts know nothing. */
    c.required_facts = QB_FACT_LAYERS | QB_FACT_TIED_EMBEDDINGS;
    ck_assert_int_eq(qbh_writer_check_facts(&w, &mi, "src"), QB_E_UNSUPPORTED);
    ck_assert_str_eq(qbh_error_message(), "src: writer vw requires model facts the source does "
                                          "not state: layers, tied_embeddings");
    f.struct_size = sizeof f;
    f.known = QB_FACT_LAYERS | QB_FACT_VOCAB;
    mi.facts = &f;
    ck_assert_int_eq(qbh_writer_check_facts(&w, &mi, "src"), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "not state: tied_embeddings"));
    f.known |= QB_FACT_TIED_EMBEDDINGS;
    ck_assert_int_eq(qbh_writer_check_facts(&w, &mi, "src"), QB_OK);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("writer-caps");
    TCase *tc = tcase_create("writer-caps");
    tcase_add_test(tc, option_roles_validated);
    tcase_add_test(tc, writer_caps_validated);
    tcase_add_test(tc, fact_names);
    tcase_add_test(tc, model_checked_against_caps);
    suite_add_tcase(s, tc);
    return s;
}
