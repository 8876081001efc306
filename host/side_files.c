/*
 * quantbridge host — the Hugging Face side files (tokenizer files, chat
 * template, generation_config.json) written by the host for a writer that
 * declares QB_WRITER_SIDE_FILES_HOST (qb_writer.h). The files themselves
 * come from the kit's one implementation, the same code the built-in
 * writers call (qbk_hf_write_tokenizer_files; docs/architecture.md, "HF
 * side files"); the host adds only the check that the writer did not
 * create one of them itself.
 *
 * They go through the same sink as the writer's files, after its finish
 * succeeded and before the sink is synced and renamed into place, so they
 * are hashed, synced and counted like any output file, and a failure
 * discards the whole output.
 */
#include "qbh.h"

#include "qbk_hf_sidefiles.h"

/* The writer's sink, refusing names the writer created itself. */
typedef struct side_adapter {
    qbh_sink *sink;
    const qb_sink *inner;
    const char *writer;
} side_adapter;

/* Two parties writing one file means one of them is silently lost. */
static qb_status side_create(void *handle, const char *name, qb_sink_file **out)
{
    side_adapter *a = handle;
    if (qbh_sink_has_file(a->sink, name))
        return qbh_error_set(QB_E_INVALID, "writer %s created %s itself but declares "
                             "QB_WRITER_SIDE_FILES_HOST, so the host writes that file; the "
                             "output is discarded", a->writer, name);
    return a->inner->create(a->inner->handle, name, out);
}

qb_status qbh_side_files_write(qbh_sink *sink, const qb_model_info *mi, const char *writer)
{
    side_adapter a;
    qb_sink t;
    qb_status rc;

    a.sink = sink;
    a.inner = qbh_sink_table(sink);
    a.writer = writer;
    t = *a.inner;
    t.handle = &a;
    t.create = side_create;
    /* the copy's write_file would reach the real sink with this handle:
     * the kit writes through create/write/close only */
    t.write_file = NULL;
    rc = qbk_hf_write_tokenizer_files(qbh_services_anonymous(), &t, mi);
    /* A source without tokenizer_config.json is no error, but reading it
     * left the host's "not found" message set. */
    if (rc == QB_OK)
        qbh_error_clear();
    return rc;
}
