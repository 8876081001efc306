/*
 * quantbridge plugin-check — the reader contract on --sample.
 *
 * The sample is opened through the host's own qbh_source_open (default
 * parameters), which validates the model and every tensor description, and
 * read through the qb_model_src a writer would see. What a writer relies
 * on is then checked (qb_reader.h, qb_tensor.h): a tensor read in one call
 * equals the same rows read in three uneven ranges, bit for bit; a grid
 * is well formed and its dense rows are (float)(code - zero) * scale in
 * float32 bit for bit; with QB_PLUGIN_CONCURRENT_READS, reads from several
 * threads at once equal serial reads; close releases every host
 * allocation and every host-service object. Each part runs in its own
 * child.
 *
 * Every buffer handed to the reader (rows, grid codes, scales, zero
 * points) is exactly the size the call asks for and lies between guard
 * bytes of a known pattern, one row long and more, in serial and
 * concurrent reads alike: a reader that writes a row too many (or one
 * before the start) is named with the call and the buffer, even when no
 * crash follows.
 */
#include "plugin_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_fp4_decode.h"
#include "qbk_fp8_decode.h"

/* Elements read per tensor at most: samples are small, and a large one is
 * checked on its first rows. */
#define PCR_MAX_ELEMS ((int64_t)1 << 24)
#define PCR_THREADS 4

typedef struct pcr {
    const qbh_pc_session *s;
    qbh_plugin p;
    qbh_params pp;
    qbh_source src;
    long live0;
} pcr;

static void close_sample(void *arg)
{
    qbh_source_close(&((pcr *)arg)->src);
}

static void open_sample(pcr *r)
{
    qbh_pc_child_load(r->s, &r->p);
    qbh_pc_default_params(&r->p, QB_OPTION_ROLE_READER, &r->pp);
    r->live0 = qbh_alloc_live();
    qbh_objects_track(1);
    qbh_objects_set_call("open");
    qbh_pc_ctx("open %s", r->s->sample);
    if (qbh_source_open(&r->p, r->s->sample, r->pp.items, &r->src) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "open failed: %s", qbh_error_message());
    qbh_pc_at_result(close_sample, r);
}

/* Rows of tensor i this check reads: all, or the first that fit the cap. */
static int64_t rows_checked(const qb_tensor_info *t)
{
    int64_t rows = qb_tensor_rows(t), cols = qb_tensor_cols(t);
    if (rows * cols > PCR_MAX_ELEMS)
        rows = PCR_MAX_ELEMS / cols > 0 ? PCR_MAX_ELEMS / cols : 1;
    return rows;
}

/* Up to three uneven ranges covering [0, rows): starts in r0[], ends at
 * the next start (or rows). Returns how many. */
static int split3(int64_t rows, int64_t r0[3])
{
    int64_t a, b;
    r0[0] = 0;
    if (rows < 2)
        return 1;
    if (rows == 2) {
        r0[1] = 1;
        return 2;
    }
    a = rows / 5 > 0 ? rows / 5 : 1;
    b = a + ((rows - a) * 2 / 3 > 0 ? (rows - a) * 2 / 3 : 1);
    if (b >= rows)
        b = rows - 1;
    r0[1] = a;
    r0[2] = b;
    return 3;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        qbh_pc_result(QBH_PC_FAIL, "plugin-check: out of memory (%zu bytes)", n);
    return p;
}

/* ---- guarded buffers ------------------------------------------------------ */

#define PCR_GUARD_MIN 64

typedef struct guarded {
    uint8_t *base;  /* guard, data, guard */
    size_t n, g;    /* data bytes, bytes of each guard */
} guarded;

static uint8_t guard_byte(size_t i)
{
    return (uint8_t)(0xA7u + 13u * (unsigned)(i % 19u));
}

/* n bytes between two guards of `row` bytes and more; data = the n bytes,
 * NULL when out of memory. */
static void *guarded_new(guarded *b, size_t n, size_t row)
{
    size_t i;
    b->n = n;
    b->g = PCR_GUARD_MIN + row;
    b->base = malloc(n + 2 * b->g);
    if (!b->base)
        return NULL;
    for (i = 0; i < b->g; i++) {
        b->base[i] = guard_byte(i);
        b->base[b->g + n + i] = guard_byte(i);
    }
    return b->base + b->g;
}

/* "past the end" or "before the start" when a guard changed, else NULL. */
static const char *guarded_broken(const guarded *b)
{
    size_t i;
    for (i = 0; i < b->g; i++)
        if (b->base[b->g + b->n + i] != guard_byte(i))
            return "past the end of";
    for (i = 0; i < b->g; i++)
        if (b->base[i] != guard_byte(i))
            return "before the start of";
    return NULL;
}

static void guarded_free(guarded *b)
{
    free(b->base);
    b->base = NULL;
}

/* Rows [row0, row0 + n) of tensor i through a guarded buffer of exactly
 * their size, copied to dst. 0 with err set when the read fails or wrote
 * outside the buffer (then the buffer is left allocated: the heap around
 * it may be damaged). */
static int rows_guarded(pcr *r, size_t i, int64_t row0, int64_t n, float *dst, char *err,
                        size_t cap)
{
    const qb_model_src *m = &r->src.src;
    const char *name = r->src.tensors[i].name, *broken;
    size_t row = (size_t)qb_tensor_cols(&r->src.tensors[i]) * sizeof(float);
    guarded b;
    float *buf = guarded_new(&b, (size_t)n * row, row);
    if (!buf) {
        snprintf(err, cap, "plugin-check: out of memory");
        return 0;
    }
    if (m->read_rows(m->handle, i, row0, n, buf) != QB_OK) {
        snprintf(err, cap, "%s: read_rows [%lld, +%lld) failed: %s", name, (long long)row0,
                 (long long)n, qbh_error_message());
        guarded_free(&b);
        return 0;
    }
    if ((broken = guarded_broken(&b))) {
        snprintf(err, cap, "%s: read_rows [%lld, +%lld) wrote %s the rows buffer it was given "
                 "(%zu bytes: %lld rows of %zu): a buffer overrun by read_rows", name,
                 (long long)row0, (long long)n, broken, b.n, (long long)n, row);
        return 0;
    }
    memcpy(dst, buf, b.n);
    guarded_free(&b);
    return 1;
}

/* The grid of rows [row0, row0 + n) of tensor i through three guarded
 * buffers of exactly their size, copied to codes, scales and zeros; as
 * rows_guarded. */
static int grid_guarded(pcr *r, size_t i, int64_t row0, int64_t n, int64_t cols, int64_t ng,
                        uint8_t *codes, float *scales, int32_t *zeros, char *err, size_t cap)
{
    static const char *const what[3] = {"grid codes", "scales", "zero points"};
    const qb_model_src *m = &r->src.src;
    const char *name = r->src.tensors[i].name, *broken;
    size_t row[3] = {(size_t)cols, (size_t)ng * sizeof(float), (size_t)ng * sizeof(int32_t)};
    void *dst[3] = {codes, scales, zeros};
    guarded b[3];
    qb_grid_rows gr;
    int k, ok = 1;
    memset(&gr, 0, sizeof gr);
    gr.struct_size = sizeof gr;
    memset(b, 0, sizeof b);
    gr.codes = guarded_new(&b[0], (size_t)n * row[0], row[0]);
    gr.scales = guarded_new(&b[1], (size_t)n * row[1], row[1]);
    gr.zeros = guarded_new(&b[2], (size_t)n * row[2], row[2]);
    if (!gr.codes || !gr.scales || !gr.zeros) {
        snprintf(err, cap, "plugin-check: out of memory");
        ok = 0;
    } else if (m->read_grid(m->handle, i, row0, n, &gr) != QB_OK) {
        snprintf(err, cap, "%s: read_grid [%lld, +%lld) failed: %s", name, (long long)row0,
                 (long long)n, qbh_error_message());
        ok = 0;
    } else {
        for (k = 0; k < 3; k++)
            if ((broken = guarded_broken(&b[k]))) {
                snprintf(err, cap, "%s: read_grid [%lld, +%lld) wrote %s the %s buffer it was "
                         "given (%zu bytes: %lld rows of %zu): a buffer overrun by read_grid",
                         name, (long long)row0, (long long)n, broken, what[k], b[k].n,
                         (long long)n, row[k]);
                return 0;
            }
        for (k = 0; k < 3; k++)
            memcpy(dst[k], b[k].base + b[k].g, b[k].n);
    }
    for (k = 0; k < 3; k++)
        guarded_free(&b[k]);
    return ok;
}

static void read_rows(pcr *r, size_t i, int64_t row0, int64_t n, float *dst)
{
    char err[1024];
    if (!rows_guarded(r, i, row0, n, dst, err, sizeof err))
        qbh_pc_result(QBH_PC_FAIL, "%s", err);
}

/* Grid buffers for `rows` rows of tensor i. */
typedef struct grid_buf {
    uint8_t *codes;
    float *scales;
    int32_t *zeros;
} grid_buf;

static void grid_alloc(grid_buf *g, int64_t rows, int64_t cols, int64_t ng)
{
    g->codes = xmalloc((size_t)(rows * cols));
    g->scales = xmalloc((size_t)(rows * ng) * sizeof *g->scales);
    g->zeros = xmalloc((size_t)(rows * ng) * sizeof *g->zeros);
}

static void grid_free(grid_buf *g)
{
    free(g->codes);
    free(g->scales);
    free(g->zeros);
}

static void read_grid(pcr *r, size_t i, int64_t row0, int64_t n, int64_t cols, int64_t ng,
                      grid_buf *g)
{
    char err[1024];
    if (!grid_guarded(r, i, row0, n, cols, ng, g->codes + row0 * cols, g->scales + row0 * ng,
                      g->zeros + row0 * ng, err, sizeof err))
        qbh_pc_result(QBH_PC_FAIL, "%s", err);
}

static void part_open(pcr *r)
{
    const qb_model_info *mi = &r->src.info;
    size_t i, grids = 0, fgrids = 0;
    /* qb_tensor.h: only the fields marked "or NULL" may be NULL */
    if (!mi->config_json)
        qbh_pc_result(QBH_PC_FAIL, "the model info has no config_json");
    if (!mi->source_summary)
        qbh_pc_result(QBH_PC_FAIL, "the model info has no source_summary");
    if (mi->n_tensors == 0)
        qbh_pc_result(QBH_PC_FAIL, "the model has no tensors");
    for (i = 0; i < mi->n_tensors; i++) {
        const qb_tensor_info *t = &r->src.tensors[i];
        if ((t->has_grid || (QB_HAS_FIELD(t, qb_tensor_info, grid_codes) && t->grid_codes)) &&
            !r->p.desc->reader->get_grid_info)
            qbh_pc_result(QBH_PC_FAIL, "%s: the tensor offers a grid but the reader has no "
                          "get_grid_info", t->name);
        grids += t->has_grid != 0;
        fgrids += !t->has_grid && QB_HAS_FIELD(t, qb_tensor_info, grid_codes) && t->grid_codes;
    }
    qbh_pc_result(QBH_PC_PASS, "%s model (%s: %s), %zu tensors (%zu with an integer grid, %zu "
                  "with only float-coded ones), every description well formed",
                  mi->architecture, mi->source_format, mi->source_summary, mi->n_tensors, grids,
                  fgrids);
}

static void part_rows(pcr *r)
{
    size_t i, n = r->src.info.n_tensors;
    uint64_t elems = 0;
    for (i = 0; i < n; i++) {
        const qb_tensor_info *t = &r->src.tensors[i];
        int64_t rows = rows_checked(t), cols = qb_tensor_cols(t), r0[3], k, e;
        float *whole = xmalloc((size_t)(rows * cols) * sizeof(float));
        float *part = xmalloc((size_t)(rows * cols) * sizeof(float));
        int nr = split3(rows, r0);
        qbh_pc_ctx("read_rows of %s", t->name);
        memset(part, 0xA5, (size_t)(rows * cols) * sizeof(float));
        read_rows(r, i, 0, rows, whole);
        for (k = 0; k < nr; k++) {
            int64_t end = k + 1 < nr ? r0[k + 1] : rows;
            qbh_pc_ctx("read_rows of %s, rows [%lld, %lld)", t->name, (long long)r0[k],
                       (long long)end);
            read_rows(r, i, r0[k], end - r0[k], part + r0[k] * cols);
        }
        for (e = 0; e < rows * cols; e++)
            if (memcmp(&whole[e], &part[e], sizeof(float)) != 0)
                qbh_pc_result(QBH_PC_FAIL, "%s: row %lld col %lld is %.9g read in one call but "
                              "%.9g read in the range holding it", t->name,
                              (long long)(e / cols), (long long)(e % cols), (double)whole[e],
                              (double)part[e]);
        elems += (uint64_t)(rows * cols);
        free(whole);
        free(part);
    }
    qbh_pc_result(QBH_PC_PASS, "%zu tensors, %llu values: whole reads equal reads in three "
                  "uneven row ranges, bit for bit", n, (unsigned long long)elems);
}

/* Ends the child naming the first element where two reads differ. */
static void grid_compare(const char *name, const char *how, const grid_buf *a, const grid_buf *b,
                         int64_t rows, int64_t cols, int64_t ng)
{
    int64_t e;
    for (e = 0; e < rows * cols; e++)
        if (a->codes[e] != b->codes[e])
            qbh_pc_result(QBH_PC_FAIL, "%s: grid code of row %lld col %lld is %u read in one "
                          "call, %u read in %s", name, (long long)(e / cols),
                          (long long)(e % cols), a->codes[e], b->codes[e], how);
    for (e = 0; e < rows * ng; e++)
        if (memcmp(&a->scales[e], &b->scales[e], sizeof(float)) != 0 ||
            a->zeros[e] != b->zeros[e])
            qbh_pc_result(QBH_PC_FAIL, "%s: row %lld group %lld: scale %.9g zero %d read in one "
                          "call, scale %.9g zero %d read in %s", name, (long long)(e / ng),
                          (long long)(e % ng), (double)a->scales[e], a->zeros[e],
                          (double)b->scales[e], b->zeros[e], how);
}

/* Value of code c of a float-coded kind (qb_tensor.h, QB_CODE_*). */
static float float_code_value(uint32_t kind, uint8_t c)
{
    return kind == QB_CODE_F8_E4M3 ? qbk_fp8_e4m3fn_to_f32(c) : qbk_fp4_e2m1_to_f32(c);
}

/* The grid of tensor i well formed and agreeing with its dense rows: the
 * integer grid (kind QB_CODE_INT), or a float-coded one asked for by its
 * kind alone (ABI 1.4/1.5), which a caller accepting no float codes must
 * not get. */
static void check_grid(pcr *r, size_t i, uint32_t kind)
{
    const qb_tensor_info *t = &r->src.tensors[i];
    const qb_model_src *m = &r->src.src;
    int64_t rows = rows_checked(t), cols = qb_tensor_cols(t), ng, e, c, r0[3], k;
    qb_grid_info gi;
    grid_buf whole, part;
    float *dense;
    int nr;

    memset(&gi, 0, sizeof gi);
    gi.struct_size = sizeof gi;
    if (kind != QB_CODE_INT && !t->has_grid) {
        qbh_pc_ctx("get_grid_info of %s without accept_codes", t->name);
        if (m->get_grid_info(m->handle, i, &gi) != QB_E_UNSUPPORTED)
            qbh_pc_result(QBH_PC_FAIL, "%s: a float-coded grid went to a caller that accepts "
                          "no float codes (qb_tensor.h: QB_E_UNSUPPORTED)", t->name);
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
    }
    gi.accept_codes = kind == QB_CODE_INT ? 0u : QB_CODES_BIT(kind);
    qbh_pc_ctx("get_grid_info of %s", t->name);
    if (m->get_grid_info(m->handle, i, &gi) != QB_OK)
        qbh_pc_result(QBH_PC_FAIL, "%s: the tensor offers a grid of code kind %u but "
                      "get_grid_info fails: %s", t->name, kind, qbh_error_message());
    if (gi.code_kind != kind)
        qbh_pc_result(QBH_PC_FAIL, "%s: asked for code kind %u, got %u", t->name, kind,
                      gi.code_kind);
    if (kind == QB_CODE_INT && gi.tensor_scale_op != QB_TENSOR_SCALE_NONE)
        qbh_pc_result(QBH_PC_FAIL, "%s: integer grid with a tensor scale (op %u)", t->name,
                      gi.tensor_scale_op);
    if (gi.tensor_scale_op > QB_TENSOR_SCALE_DIV ||
        (gi.tensor_scale_op != QB_TENSOR_SCALE_NONE &&
         !(gi.tensor_scale > 0.0f && gi.tensor_scale < INFINITY)))
        qbh_pc_result(QBH_PC_FAIL, "%s: tensor scale op %u with scale %.9g", t->name,
                      gi.tensor_scale_op, (double)gi.tensor_scale);
    if (gi.bits < 1 || gi.bits > 8)
        qbh_pc_result(QBH_PC_FAIL, "%s: grid bits %u outside 1..8", t->name, gi.bits);
    if (gi.n_groups < 1)
        qbh_pc_result(QBH_PC_FAIL, "%s: grid has %u groups", t->name, gi.n_groups);
    if (gi.symmetric != 0 && gi.symmetric != 1)
        qbh_pc_result(QBH_PC_FAIL, "%s: grid symmetric is %d, not 0 or 1", t->name, gi.symmetric);
    ng = gi.n_groups;
    if (gi.col_group) {
        for (c = 0; c < cols; c++)
            if (gi.col_group[c] < 0 || gi.col_group[c] >= (int32_t)ng)
                qbh_pc_result(QBH_PC_FAIL, "%s: col_group[%lld] = %d outside [0, %u)", t->name,
                              (long long)c, gi.col_group[c], gi.n_groups);
    } else if (gi.group_size < 1 || (cols + gi.group_size - 1) / gi.group_size != ng) {
        qbh_pc_result(QBH_PC_FAIL, "%s: %lld columns in groups of %lld do not make %u groups",
                      t->name, (long long)cols, (long long)gi.group_size, gi.n_groups);
    }
    grid_alloc(&whole, rows, cols, ng);
    grid_alloc(&part, rows, cols, ng);
    dense = xmalloc((size_t)(rows * cols) * sizeof(float));
    qbh_pc_ctx("read_grid of %s", t->name);
    read_grid(r, i, 0, rows, cols, ng, &whole);
    read_rows(r, i, 0, rows, dense);
    for (e = 0; e < rows * ng; e++)
        if (kind == QB_CODE_INT && gi.symmetric &&
            whole.zeros[e] != (int32_t)(1u << (gi.bits - 1)))
            qbh_pc_result(QBH_PC_FAIL, "%s: symmetric grid, but row %lld group %lld has zero "
                          "point %d, not %u", t->name, (long long)(e / ng), (long long)(e % ng),
                          whole.zeros[e], 1u << (gi.bits - 1));
        else if (kind != QB_CODE_INT && whole.zeros[e] != 0)
            qbh_pc_result(QBH_PC_FAIL, "%s: float-coded grid, but row %lld group %lld has zero "
                          "%d, not 0", t->name, (long long)(e / ng), (long long)(e % ng),
                          whole.zeros[e]);
    for (e = 0; e < rows * cols; e++) {
        int64_t row = e / cols, col = e % cols;
        int64_t g = gi.col_group ? gi.col_group[col] : col / gi.group_size;
        float v, s = whole.scales[row * ng + g];
        if (whole.codes[e] >= (1u << gi.bits))
            qbh_pc_result(QBH_PC_FAIL, "%s: row %lld col %lld: code %u does not fit %u bits",
                          t->name, (long long)row, (long long)col, whole.codes[e], gi.bits);
        /* qb_tensor.h: the promise, computed in float32 (a second scale
         * level rounded first) */
        if (gi.tensor_scale_op == QB_TENSOR_SCALE_MUL)
            s = s * gi.tensor_scale;
        else if (gi.tensor_scale_op == QB_TENSOR_SCALE_DIV)
            s = s / gi.tensor_scale;
        v = kind == QB_CODE_INT
                ? (float)((int32_t)whole.codes[e] - whole.zeros[row * ng + g]) * s
                : float_code_value(kind, whole.codes[e]) * s;
        if (memcmp(&v, &dense[e], sizeof v) != 0)
            qbh_pc_result(QBH_PC_FAIL, "%s: row %lld col %lld: dense %.9g but code %u (kind %u, "
                          "zero %d) with scale %.9g gives %.9g", t->name, (long long)row,
                          (long long)col, (double)dense[e], whole.codes[e], kind,
                          whole.zeros[row * ng + g], (double)s, (double)v);
    }
    nr = split3(rows, r0);
    for (k = 0; k < nr; k++) {
        int64_t end = k + 1 < nr ? r0[k + 1] : rows;
        qbh_pc_ctx("read_grid of %s, rows [%lld, %lld)", t->name, (long long)r0[k],
                   (long long)end);
        read_grid(r, i, r0[k], end - r0[k], cols, ng, &part);
    }
    grid_compare(t->name, "three row ranges", &whole, &part, rows, cols, ng);
    /* and row by row: a one-row range is where an off-by-one shows */
    for (k = 0; k < rows; k++) {
        qbh_pc_ctx("read_grid of %s, row %lld", t->name, (long long)k);
        read_grid(r, i, k, 1, cols, ng, &part);
    }
    grid_compare(t->name, "single rows", &whole, &part, rows, cols, ng);
    grid_free(&whole);
    grid_free(&part);
    free(dense);
}

static void part_grid(pcr *r)
{
    size_t i, n = 0, nf = 0;
    uint32_t kind;
    for (i = 0; i < r->src.info.n_tensors; i++) {
        const qb_tensor_info *t = &r->src.tensors[i];
        if (t->has_grid) {
            check_grid(r, i, QB_CODE_INT);
            n++;
        }
        for (kind = QB_CODE_F8_E4M3; kind <= QB_CODE_F4_E2M1; kind++)
            if (QB_HAS_FIELD(t, qb_tensor_info, grid_codes) &&
                (t->grid_codes & QB_CODES_BIT(kind))) {
                check_grid(r, i, kind);
                nf++;
            }
    }
    if (n + nf == 0)
        qbh_pc_result(QBH_PC_SKIP, "no tensor of the sample has an integer or float-coded grid");
    qbh_pc_result(QBH_PC_PASS, "%zu integer and %zu float-coded grids well formed; dense rows "
                  "equal the code's value times its scale in float32 bit for bit; range reads "
                  "equal whole reads", n, nf);
}

/* SHA-256 of tensor i's rows, then of its grid (when it has one), read in
 * chunks of `step` rows: the same whatever the step. */
static int digest(pcr *r, size_t i, int64_t step, uint8_t d[32], char *err, size_t cap)
{
    const qb_tensor_info *t = &r->src.tensors[i];
    const qb_model_src *m = &r->src.src;
    int64_t rows = rows_checked(t), cols = qb_tensor_cols(t), row0, ng = 0;
    float *buf;
    grid_buf g = {NULL, NULL, NULL};
    qbk_sha256 h, hg[3]; /* rows; codes, scales, zeros */
    uint8_t dg[32];
    int j;
    int ok;
    err[0] = '\0';
    if (step > rows)
        step = rows;
    buf = malloc((size_t)(step * cols) * sizeof(float));
    ok = buf != NULL;
    qbk_sha256_init(&h);
    for (j = 0; j < 3; j++)
        qbk_sha256_init(&hg[j]);
    if (ok && t->has_grid) {
        qb_grid_info gi;
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
        ok = m->get_grid_info(m->handle, i, &gi) == QB_OK;
        ng = gi.n_groups;
        if (ok) {
            g.codes = malloc((size_t)(step * cols));
            g.scales = malloc((size_t)(step * ng) * sizeof(float));
            g.zeros = malloc((size_t)(step * ng) * sizeof(int32_t));
            ok = g.codes && g.scales && g.zeros;
        }
    }
    for (row0 = 0; ok && row0 < rows; row0 += step) {
        int64_t n = rows - row0 < step ? rows - row0 : step;
        ok = rows_guarded(r, i, row0, n, buf, err, cap);
        if (ok)
            qbk_sha256_update(&h, buf, (size_t)(n * cols) * sizeof(float));
        if (ok && t->has_grid) {
            ok = grid_guarded(r, i, row0, n, cols, ng, g.codes, g.scales, g.zeros, err, cap);
            if (ok) {
                qbk_sha256_update(&hg[0], g.codes, (size_t)(n * cols));
                qbk_sha256_update(&hg[1], g.scales, (size_t)(n * ng) * sizeof(float));
                qbk_sha256_update(&hg[2], g.zeros, (size_t)(n * ng) * sizeof(int32_t));
            }
        }
    }
    if (!ok && (!buf || (t->has_grid && !(g.codes && g.scales && g.zeros))))
        snprintf(err, cap, "%s: plugin-check: out of memory", t->name);
    else if (!ok && !err[0])
        snprintf(err, cap, "%s: %s", t->name, qbh_error_message());
    for (j = 0; j < 3; j++) {
        qbk_sha256_final(&hg[j], dg);
        qbk_sha256_update(&h, dg, sizeof dg);
    }
    qbk_sha256_final(&h, d);
    free(buf);
    grid_free(&g);
    return ok;
}

typedef struct pcr_thread {
    pcr *r;
    int id;
    uint8_t (*serial)[32];
    pthread_t th;
    int failed;
    char err[1024];
} pcr_thread;

static void *reader_thread(void *arg)
{
    pcr_thread *t = arg;
    size_t n = t->r->src.info.n_tensors, k;
    /* each thread its own tensor order and chunk size */
    for (k = 0; k < n && !t->failed; k++) {
        size_t i = (k * 7 + (size_t)t->id * 3) % n;
        uint8_t d[32];
        if (!digest(t->r, i, 1 + t->id * 5, d, t->err, sizeof t->err))
            t->failed = 1;
        else if (memcmp(d, t->serial[i], 32) != 0) {
            snprintf(t->err, sizeof t->err, "%s: read from %d threads at once, differs from the "
                     "serial read", t->r->src.tensors[i].name, PCR_THREADS);
            t->failed = 1;
        }
    }
    return NULL;
}

static void part_concurrent(pcr *r)
{
    size_t n = r->src.info.n_tensors, i;
    uint8_t (*serial)[32];
    pcr_thread th[PCR_THREADS];
    char err[1024];
    int k, started = 0;

    if (!(r->p.desc->flags & QB_PLUGIN_CONCURRENT_READS))
        qbh_pc_result(QBH_PC_SKIP, "QB_PLUGIN_CONCURRENT_READS not declared (the host serialises "
                      "the reads)");
    serial = xmalloc(n * sizeof *serial);
    for (i = 0; i < n; i++) {
        qbh_pc_ctx("serial read of %s", r->src.tensors[i].name);
        if (!digest(r, i, 1 << 30, serial[i], err, sizeof err))
            qbh_pc_result(QBH_PC_FAIL, "%s", err);
    }
    qbh_pc_ctx("reading every tensor from %d threads at once", PCR_THREADS);
    memset(th, 0, sizeof th);
    for (k = 0; k < PCR_THREADS; k++) {
        th[k].r = r;
        th[k].id = k;
        th[k].serial = serial;
        if (pthread_create(&th[k].th, NULL, reader_thread, &th[k]) != 0)
            break;
        started++;
    }
    for (k = 0; k < started; k++)
        pthread_join(th[k].th, NULL);
    if (started < PCR_THREADS)
        qbh_pc_result(QBH_PC_FAIL, "plugin-check: cannot start %d threads", PCR_THREADS);
    for (k = 0; k < PCR_THREADS; k++)
        if (th[k].failed)
            qbh_pc_result(QBH_PC_FAIL, "%s", th[k].err);
    free(serial);
    qbh_pc_result(QBH_PC_PASS, "%d threads reading every tensor (rows and grids) at once, in "
                  "different orders and row ranges, read what serial reads read", PCR_THREADS);
}

static void part_close(pcr *r)
{
    size_t i, n = r->src.info.n_tensors;
    uint8_t d[32];
    char err[1024];
    long left;
    int round;
    /* read everything once, so whatever a reader builds lazily exists */
    for (round = 0; round < 2; round++) {
        for (i = 0; i < n; i++) {
            qbh_pc_ctx("reading %s before close", r->src.tensors[i].name);
            if (!digest(r, i, 1 << 30, d, err, sizeof err))
                qbh_pc_result(QBH_PC_FAIL, "%s", err);
        }
        qbh_pc_ctx("close");
        qbh_objects_set_call("close");
        qbh_source_close(&r->src);
        left = qbh_alloc_live() - r->live0;
        if (left)
            qbh_pc_result(QBH_PC_FAIL, "close left %ld host allocation(s) live%s", left,
                          round ? " (second open)" : "");
        if (qbh_objects_live()) {
            char what[1024];
            size_t k = qbh_objects_describe(what, sizeof what);
            qbh_pc_result(QBH_PC_FAIL, "close left %zu host-service object(s) live (never "
                          "freed)%s: %s", k, round ? " (second open)" : "", what);
        }
        if (round == 0) {
            qbh_objects_set_call("open (again)");
            qbh_pc_ctx("open %s again", r->s->sample);
            if (qbh_source_open(&r->p, r->s->sample, r->pp.items, &r->src) != QB_OK)
                qbh_pc_result(QBH_PC_FAIL, "a second open failed: %s", qbh_error_message());
        }
    }
    qbh_pc_result(QBH_PC_PASS, "open, read everything, close, twice: every host allocation "
                  "and host-service object released");
}

void qbh_pc_check_reader(const qbh_pc_session *s, void *arg)
{
    const char *what = arg;
    pcr r;
    if (!s->sample)
        qbh_pc_result(QBH_PC_SKIP, "no --sample");
    memset(&r, 0, sizeof r);
    r.s = s;
    open_sample(&r);
    if (strcmp(what, "open") == 0)
        part_open(&r);
    else if (strcmp(what, "rows") == 0)
        part_rows(&r);
    else if (strcmp(what, "grid") == 0)
        part_grid(&r);
    else if (strcmp(what, "concurrent") == 0)
        part_concurrent(&r);
    else
        part_close(&r);
}
