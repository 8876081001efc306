/*
 * libFuzzer target: the GGUF container of the gguf reader (header,
 * metadata, tensor infos) through its in-memory entry gguf_file_parse.
 * When the container parses, the same bytes go to a scratch file and
 * through the whole reader (gguf_reader_open: split set, architecture
 * hparams, name mapping, config.json), and the first and last HF row of
 * every canonical tensor are decoded. Every tensor info's data range is
 * touched at both ends (ASan reports one outside the buffer). A failure
 * must carry its message (fuzz_host.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_host.h"
#include "gguf_container.h"
#include "gguf_reader.h"

/* Rows wider than this are not decoded (keeps one input fast). */
#define FZ_MAX_COLS (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    gguf_file *f = NULL;
    gguf_reader *r = NULL;
    const char *path;
    qb_status st;
    uint64_t i;
    size_t k, n;
    volatile uint8_t sink = 0;
    float *row = NULL;

    qbt_fuzz_reset();
    st = gguf_file_parse(h, "fuzz.gguf", data, size, &f);
    qbt_fuzz_check_status(st, "gguf_file_parse");
    if (st != QB_OK) {
        if (f)
            __builtin_trap();
        return 0;
    }
    for (i = 0; i < f->n_tensors; i++) {
        const gguf_tinfo *t = &f->t[i];
        if (t->data < data || t->nbytes > size || (size_t)(t->data - data) > size - t->nbytes)
            __builtin_trap();
        if (t->nbytes) {
            sink ^= t->data[0];
            sink ^= t->data[t->nbytes - 1];
        }
        if (gguf_file_find_tensor(f, t->name) != t)
            __builtin_trap();
    }
    gguf_file_close(f);

    if (!(path = qbt_fuzz_write_tmp("model.gguf", data, size)))
        return 0;
    qbt_fuzz_reset();
    st = gguf_reader_open(h, path, &r);
    qbt_fuzz_check_status(st, "gguf_reader_open");
    if (st != QB_OK)
        return 0;
    (void)gguf_reader_config_json(r);
    n = gguf_reader_count(r);
    for (k = 0; k < n; k++) {
        const gguf_ctensor *t = gguf_reader_tensor(r, k);
        int64_t rows = t->n_rows;
        if (t->cols <= 0 || t->cols > FZ_MAX_COLS || rows <= 0)
            continue;
        free(row);
        if (!(row = malloc((size_t)t->cols * sizeof(float))))
            break;
        qbt_fuzz_reset();
        st = gguf_reader_read_rows(r, k, 0, 1, row);
        qbt_fuzz_check_status(st, "gguf_reader_read_rows first");
        qbt_fuzz_reset();
        st = gguf_reader_read_rows(r, k, rows - 1, 1, row);
        qbt_fuzz_check_status(st, "gguf_reader_read_rows last");
        qbt_fuzz_reset();
        st = gguf_reader_read_rows(r, k, rows, 1, row);
        if (st == QB_OK)
            __builtin_trap(); /* one past the end must be refused */
        qbt_fuzz_check_status(st, "gguf_reader_read_rows past end");
    }
    free(row);
    gguf_reader_close(r);
    (void)sink;
    return 0;
}
