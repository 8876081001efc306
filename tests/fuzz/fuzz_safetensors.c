/*
 * libFuzzer target: the host's strict safetensors parser (sdk/kit).
 *
 * The parser has no in-memory entry point (it memory-maps what it opens),
 * so the input goes to a scratch file. First byte chooses the mode:
 *   even: the rest is one .safetensors file for open_file;
 *   odd:  the rest is model.safetensors.index.json of a directory that also
 *         holds two valid shards (a.safetensors: "x", "y"; b.safetensors:
 *         "z"), opened with open_dir.
 * After a successful open every tensor is looked up by name and its first
 * and last data byte are read: a tensor claiming bytes outside its mapping
 * is an ASan report. A failure must carry its message (fuzz_host.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <quantbridge/qb_safetensors.h>

#include "fuzz_host.h"

static void st_write_shard(const char *name, const char *hdr, const void *data, size_t n)
{
    unsigned char buf[512];
    size_t hl = strlen(hdr), i;
    uint64_t l = hl;
    for (i = 0; i < 8; i++)
        buf[i] = (unsigned char)(l >> (8 * i));
    memcpy(buf + 8, hdr, hl);
    memcpy(buf + 8 + hl, data, n);
    qbt_fuzz_write_tmp(name, buf, 8 + hl + n);
}

static void st_setup(void)
{
    static int done;
    static const float v[3] = {1.0f, 2.0f, 3.0f};
    if (done)
        return;
    done = 1;
    st_write_shard("a.safetensors",
                   "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                   "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                   v, 8);
    st_write_shard("b.safetensors", "{\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                   v + 2, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const qb_host *h = qbt_fuzz_host();
    const qb_st_api *api = h->safetensors;
    qb_st_set *set = NULL;
    qb_status st;
    const char *path;
    size_t i, n;
    volatile uint8_t sink = 0;

    if (size < 1)
        return 0;
    st_setup();
    qbt_fuzz_reset();
    if ((data[0] & 1) == 0) {
        if (!(path = qbt_fuzz_write_tmp("single.bin", data + 1, size - 1)))
            return 0;
        st = api->open_file(h, path, &set);
        qbt_fuzz_check_status(st, "open_file");
    } else {
        if (!qbt_fuzz_write_tmp("model.safetensors.index.json", data + 1, size - 1))
            return 0;
        st = api->open_dir(h, qbt_fuzz_tmpdir(), &set);
        qbt_fuzz_check_status(st, "open_dir");
    }
    if (st != QB_OK) {
        if (set)
            __builtin_trap(); /* *out must be NULL on failure */
        return 0;
    }
    n = api->count(set);
    for (i = 0; i < n; i++) {
        const qb_st_tensor *t = api->tensor(set, i);
        if (!t || api->find(set, t->name) != t)
            __builtin_trap();
        if (t->n_bytes) {
            sink ^= t->data[0];
            sink ^= t->data[t->n_bytes - 1];
        }
    }
    if (api->tensor(set, n))
        __builtin_trap();
    (void)api->metadata(set, "format");
    api->close(set);
    (void)sink;
    return 0;
}
