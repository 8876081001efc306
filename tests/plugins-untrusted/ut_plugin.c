/*
 * A third-party reader whose probe misbehaves, built into variants:
 *   UT_SEGV   probe writes to a PROT_NONE page (SIGSEGV)
 *   UT_HANG   probe never returns
 *   (none)    probe answers 0 and, when $UT_PID_FILE is set, writes
 *             "<pid> <ppid>\n" there so a test can see whether it ran in
 *             the host process or in a forked child
 * The reader never claims an input, so conversions use the real plugins;
 * open and the data calls refuse (they are never reached).
 */
#include <quantbridge/quantbridge.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef UT_NAME
#define UT_NAME "ut-ok"
#endif

static const qb_host *H;

static int ut_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    (void)in;
#if defined(UT_SEGV)
    {
        /* a real invalid access (not NULL, which UBSan would catch first) */
        volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
            *p = 42;
    }
#elif defined(UT_HANG)
    for (;;)
        pause();
#else
    {
        const char *f = getenv("UT_PID_FILE");
        FILE *o = f ? fopen(f, "w") : NULL;
        if (o) {
            fprintf(o, "%ld %ld\n", (long)getpid(), (long)getppid());
            fclose(o);
        }
    }
#endif
    return 0;
}

static qb_status ut_open(void *ctx, const char *path, const qb_param *params,
                         qb_reader_handle *out)
{
    (void)ctx;
    (void)params;
    *out = NULL;
    return H->set_error(H, QB_E_UNSUPPORTED, "%s: " UT_NAME " reads nothing", path);
}

static void ut_close(qb_reader_handle h)
{
    (void)h;
}

static qb_status ut_model_info(qb_reader_handle h, qb_model_info *mi)
{
    (void)h;
    (void)mi;
    return QB_E_UNSUPPORTED;
}

static qb_status ut_tensor_info(qb_reader_handle h, size_t i, qb_tensor_info *ti)
{
    (void)h;
    (void)i;
    (void)ti;
    return QB_E_UNSUPPORTED;
}

static qb_status ut_read_rows(qb_reader_handle h, size_t i, int64_t row0, int64_t n_rows,
                              float *dst)
{
    (void)h;
    (void)i;
    (void)row0;
    (void)n_rows;
    (void)dst;
    return QB_E_UNSUPPORTED;
}

static const qb_reader_vtable ut_reader_vt = {
    sizeof(qb_reader_vtable), ut_probe, ut_open, ut_close, ut_model_info, ut_tensor_info,
    ut_read_rows, NULL, NULL, NULL, NULL, NULL, NULL,
};

static qb_plugin ut_desc = {
    sizeof(qb_plugin), QB_ABI_CURRENT, UT_NAME, "1.0.0", "misbehaving probe (tests)",
    "quantbridge tests", "MIT", 0, NULL, NULL, &ut_reader_vt, NULL, NULL, NULL, NULL,
};

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host,
                                       const qb_plugin **out)
{
    H = host;
    if (neg->host_abi_min > QB_ABI_CURRENT)
        return QB_E_ABI;
    neg->plugin_abi = neg->host_abi_max < QB_ABI_CURRENT ? neg->host_abi_max : QB_ABI_CURRENT;
    ut_desc.abi = neg->plugin_abi;
    *out = &ut_desc;
    return QB_OK;
}
