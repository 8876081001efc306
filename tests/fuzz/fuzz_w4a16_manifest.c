/*
 * libFuzzer target: manifest.json of the W4A16 format as the kernels'
 * loader reads it (issue 30): w4a16_manifest_parse
 * (kernels/format/w4a16_manifest.c), the one strict reading the kernels'
 * backends and the sm86-w4a16 reader share. A refusal names the file in
 * err->msg and leaves *out zeroed; an accepted manifest's file list is
 * walked (w4a16_manifest_find of every name must find that entry).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "w4a16_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qbk_st_err err;
    w4a16_manifest m;
    qb_status st;
    size_t i;

    memset(&err, 0, sizeof(err));
    st = w4a16_manifest_parse(&err, "manifest.json", (const char *)data, size, &m);
    if (st != QB_OK) {
        if (st > 0 || !err.msg[0] || m.n_files != 0)
            __builtin_trap();
        return 0;
    }
    for (i = 0; i < m.n_files; i++)
        if (w4a16_manifest_find(&m, m.files[i].name) != &m.files[i])
            __builtin_trap();
    w4a16_manifest_free(&m);
    return 0;
}
