/*
 * Tests of sm86-w4a16: an in-memory model source (f32 tensors and int4
 * grids, sm86-specific), decoding of the writer's safetensors output, and a
 * driver running the writer -- over the real host services (qbt_host) and
 * the memory sink (qbt_mem_sink) of tests/support, so the writer's files
 * can be compiled into the test and its output decoded without the
 * quantbridge program.
 */
#ifndef W4T_FAKE_H
#define W4T_FAKE_H

#include <quantbridge/quantbridge.h>
#include <stddef.h>
#include <stdint.h>

#include "qbt_host.h"
#include "qbt_host_log.h"
#include "qbt_mem_sink.h"

/* ---- model source ---- */
typedef struct w4t_tensor {
    char name[128];
    uint32_t n_dims;
    int64_t dims[2];
    float *data; /* rows * cols, owned */
    /* optional integer grid */
    int has_grid;
    uint32_t bits;
    int symmetric;
    int64_t group_size;
    int32_t *col_group; /* owned or NULL */
    uint32_t n_groups;
    uint8_t *codes; /* rows * cols */
    float *scales;  /* rows * n_groups */
    int32_t *zeros; /* rows * n_groups */
} w4t_tensor;

typedef struct w4t_model {
    qb_model_src src;
    qb_model_info info;
    w4t_tensor t[1024];
    qb_tensor_info ti[1024];
    size_t n;
    char config[4096];
} w4t_model;

/* Empty model of `arch` with config text `config` (copied). */
void w4t_model_init(w4t_model *m, const char *arch, const char *config);
/* Adds a dense tensor filled by a deterministic normal RNG (seed), values
 * scaled by `scale`; returns it. */
w4t_tensor *w4t_add(w4t_model *m, const char *name, int64_t rows, int64_t cols, uint64_t seed,
                    float scale);
w4t_tensor *w4t_add_1d(w4t_model *m, const char *name, int64_t n, uint64_t seed);
/* Removes a tensor by name (1 if found). */
int w4t_remove(w4t_model *m, const char *name);
w4t_tensor *w4t_find(w4t_model *m, const char *name);
/* Adds a full dense decoder model: embed, L layers of the arch's
 * projections and norms, final norm, lm_head unless tied. */
void w4t_model_dense(w4t_model *m, const char *arch, int L, int64_t hidden, int64_t inter,
                     int64_t vocab, int tied, int qwen2_bias, int gemma2_norms, int qk_norm);
/* Replaces t's values by a grid: codes in [0,15] random (seeded), fp16-exact
 * scales, zero 8, contiguous groups of gs; dense = (code - 8) * scale. */
void w4t_make_grid(w4t_tensor *t, int64_t gs, uint64_t seed);
void w4t_model_free(w4t_model *m);

/* ---- safetensors parsing of an output file ---- */
typedef struct w4t_st_view {
    char dtype[8];
    int n_dims;
    int64_t dims[4];
    const uint8_t *data;
    size_t n_bytes;
} w4t_st_view;
/* 0 when `name` is in the file, -1 otherwise (or the file is malformed). */
int w4t_st_get(const qbt_mem_file *f, const char *name, w4t_st_view *v);
/* Number of tensors in the header (without __metadata__), -1 malformed. */
int w4t_st_count(const qbt_mem_file *f);

/* ---- misc ---- */
void w4t_sha256(const uint8_t *data, size_t len, uint8_t out[32]);
double w4t_normal(uint64_t *state);

/* Threads of the host pool w4t_convert starts (qbt_host_threads): the
 * writer sizes its batches by thread_count and must not depend on the
 * order parallel_for items run in. */
#define W4T_THREADS 3

/* Runs the writer over the whole model with params, on a host pool of
 * W4T_THREADS threads; returns the first failure (message:
 * qbt_host_last_error). On success the sink holds the output. */
qb_status w4t_convert(w4t_model *m, qbt_mem_sink *s, const qb_param *params);

#endif
