/*
 * sm86-w4a16 — the plan's output files as safetensors, written by the
 * kit's qbk_st_writer (which owns the file layout: qbk_st_writer.h).
 */
#include "w4w.h"

qb_status w4w_st_open_file(const qb_host *h, const qb_sink *sink, const struct w4w_file *f,
                           const w4w_st_tensor *outs, qbk_st_writer **out)
{
    return qbk_st_writer_open(h, sink, f->name, outs + f->first_out, f->n_out, out);
}
