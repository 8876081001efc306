/*
 * The gguf reader plugin: probe, open (container + split set + name
 * mapping + config), and row/grid reads over the canonical Hugging Face
 * view. Exports only qb_plugin_entry_v1.
 *
 * Reads are stateless over the read-only maps, so read_rows/read_grid run
 * concurrently on one handle (QB_PLUGIN_CONCURRENT_READS).
 */
#include "gguf_hfconfig.h"
#include "gguf_kv.h"
#include "gguf_reader.h"
#include "gguf_tokenizer.h"
#include "gguf_views.h"
#include "gguf_split.h"
#include "gguf_stored.h"

#include "ggml_types.h"
#include "qbk_alloc.h"
#include "qbk_plugin_entry.h"

#include <cjson/cJSON.h>
#include <math.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_plugin.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const qb_host *g_host;
static qb_plugin plugin; /* defined below; vt_open reads the negotiated ABI */

struct gguf_reader {
    const qb_host *h;
    gguf_model *m;
    gguf_hparams hp;
    gguf_special sp;
    gguf_ctensor *t;
    size_t n;
    char *config_json, *gen_json, *chat_template;
    gguf_tokenizer tok;
    char *tok_dir; /* private temporary directory of tok's files, or NULL */
    char summary[768];
    int tok_skip;
    qb_tokenizer_state tok_state; /* SKIPPED / REFUSED stated to a 1.3 host */
    char *tok_note;               /* its one line (qbk_malloc), or NULL */
    size_t last_read; /* 1 + index of the tensor read last, 0 none (note_read) */
};

static int has_gguf_suffix(const char *name)
{
    size_t len = strlen(name);
    return len >= 5 && strcmp(name + len - 5, ".gguf") == 0;
}

/* A directory: LIKELY when its .gguf names make exactly one model (one
 * plain file, or split shards with their first, as gguf_model_open picks
 * them), POSSIBLE when safetensors files lie beside them (a Hugging Face
 * repository that also ships a GGUF: its safetensors reader, when sure,
 * should win); WEAK when .gguf files are there but do not make one model,
 * so that open() names what is wrong (docs/formats/gguf.md "Split files"). */
static int probe_dir(const qb_probe_input *in)
{
    size_t i, n_plain = 0, n_first = 0, n_shards = 0, n_st = 0;
    for (i = 0; in->siblings && in->siblings[i]; i++) {
        size_t pl, len = strlen(in->siblings[i]);
        int no, count;
        if (len >= 12 && strcmp(in->siblings[i] + len - 12, ".safetensors") == 0)
            n_st++;
        if (!has_gguf_suffix(in->siblings[i]))
            continue;
        if (gguf_split_parse_name(in->siblings[i], &pl, &no, &count)) {
            n_shards++;
            n_first += no == 1;
        } else {
            n_plain++;
        }
    }
    if (n_plain + n_shards == 0)
        return QB_PROBE_NONE;
    if (n_plain + n_first == 1 && (n_plain == 0 || n_shards == 0))
        return n_st ? QB_PROBE_POSSIBLE : QB_PROBE_LIKELY;
    return QB_PROBE_WEAK;
}

static int reader_probe(void *ctx, const qb_probe_input *in)
{
    (void)ctx;
    if (!in)
        return QB_PROBE_NONE;
    if (in->is_dir)
        return probe_dir(in);
    if (!in->head)
        return QB_PROBE_NONE;
    /* QB_PROBE_PADDING guarantees 8 readable bytes. */
    if (memcmp(in->head, "GGUF", 4) != 0)
        /* Named .gguf but without the magic: most likely a damaged GGUF;
         * WEAK lets the host show open()'s own diagnosis. */
        return in->path && has_gguf_suffix(in->path) ? QB_PROBE_WEAK : QB_PROBE_NONE;
    return in->head_len >= 8 ? QB_PROBE_CERTAIN : QB_PROBE_LIKELY;
}

void gguf_reader_close(gguf_reader *r)
{
    if (!r)
        return;
    gguf_names_free(r->t, r->n);
    gguf_model_close(r->m);
    cJSON_free(r->config_json); /* from cJSON_Print (hfconfig.c) */
    cJSON_free(r->gen_json);
    qbk_free(r->chat_template);
    gguf_tokenizer_remove_dir(r->tok_dir);
    gguf_tokenizer_free(&r->tok);
    qbk_free(r->tok_note);
    qbk_free(r);
}

static const char *tok_text(int32_t id, const char *text, char *buf, size_t n)
{
    if (id < 0)
        return "none";
    snprintf(buf, n, "%d %s", id, text);
    return buf;
}

/* "; tokenizer gpt2 (pre llama-bpe), 128256 tokens, bos 128000 <|begin_of_text|>, ..." */
static void summarize_tokenizer(const gguf_reader *r, char *out, size_t n)
{
    const gguf_tokenizer *t = &r->tok;
    char b[4][96];
    if (r->tok_skip) {
        snprintf(out, n, "; tokenizer: skipped (option tokenizer=skip)");
        return;
    }
    if (r->tok_state == QB_TOKENIZER_REFUSED) {
        snprintf(out, n, "; tokenizer: %s%s%s%s, not rebuilt (refused)", t->kind[0] ? t->kind : "tokenizer.ggml.*",
                 t->pre[0] ? " (pre " : "", t->pre, t->pre[0] ? ")" : "");
        return;
    }
    if (!t->kind[0]) {
        snprintf(out, n, "; tokenizer: none in the metadata%s", t->n_templates ? ", chat template" : "");
        return;
    }
    snprintf(out, n, "; tokenizer: %s%s%s%s, %lld tokens, bos %s, eos %s, unk %s, pad %s, add_bos %s, add_eos %s, "
                     "chat templates %d",
             t->kind, t->pre[0] ? " (pre " : "", t->pre, t->pre[0] ? ")" : "", (long long)t->n_vocab,
             tok_text(t->bos_id, t->text[0], b[0], sizeof(b[0])), tok_text(t->eos_id, t->text[1], b[1], sizeof(b[1])),
             tok_text(t->unk_id, t->text[2], b[2], sizeof(b[2])), tok_text(t->pad_id, t->text[3], b[3], sizeof(b[3])),
             t->add_bos ? "yes" : "no", t->add_eos ? "yes" : "no", t->n_templates);
}

/* "GGUF v3 llama 2 shard(s): Q4_0 x 7, F32 x 5; tokenizer: ..." */
static void make_summary(gguf_reader *r)
{
    size_t counts[GGUF_GGML_TYPE_ID_END] = {0};
    size_t fi, len;
    uint64_t ti;
    unsigned t;
    for (fi = 0; fi < r->m->n_files; fi++)
        for (ti = 0; ti < r->m->files[fi]->n_tensors; ti++)
            counts[r->m->files[fi]->t[ti].type]++;
    len = (size_t)snprintf(r->summary, sizeof(r->summary), "GGUF v%u %s, %zu file(s):",
                           gguf_model_meta(r->m)->version, r->hp.arch->gguf_name, r->m->n_files);
    for (t = 0; t < GGUF_GGML_TYPE_ID_END && len < sizeof(r->summary); t++)
        if (counts[t])
            len += (size_t)snprintf(r->summary + len, sizeof(r->summary) - len, " %s x%zu", gguf_ggml_type_name(t),
                                    counts[t]);
    if (len < sizeof(r->summary))
        summarize_tokenizer(r, r->summary + len, sizeof(r->summary) - len);
}

qb_status gguf_reader_open(const qb_host *h, const char *path, gguf_reader **out)
{
    return gguf_reader_open_opts(h, path, 0, out);
}

/* How a refusal reads, in the reader's words: its reason and the reader
 * option that skips the tokenizer (the host adds its own ways out). */
#define SKIP_HINT "; option tokenizer=skip converts without a tokenizer"
/* The note of a skip stated to the host, which adds the consequence. */
#define SKIP_NOTE "option tokenizer=skip: the tokenizer.ggml.* vocabulary is not rebuilt"

/* One warning at open with the rebuild's notes (docs/formats/gguf.md
 * "Tokenizer"): never silent about what the GGUF cannot tell. */
static void warn_notes(const qb_host *h, const char *path, const gguf_tokenizer *t)
{
    char msg[4096];
    size_t len;
    int i;
    if (!t->n_notes)
        return;
    len = (size_t)snprintf(msg, sizeof(msg), "%s: the rebuilt tokenizer carries %d note(s) (also in its "
                           "tokenizer_config.json, quantbridge_rebuild_notes):", path, t->n_notes);
    for (i = 0; i < t->n_notes && len < sizeof(msg); i++)
        len += (size_t)snprintf(msg + len, sizeof(msg) - len, " (%d) %s%s", i + 1, t->notes[i],
                                i + 1 < t->n_notes ? ";" : "");
    h->log(h, QB_LOG_WARN, "%s", msg);
}

/* The tokenizer files, or (state) a refusal stated for the host. */
static qb_status open_tokenizer(gguf_reader *r, const char *path, unsigned flags)
{
    const qb_host *h = r->h;
    const gguf_file *meta = gguf_model_meta(r->m);
    char *why = NULL;
    qb_status st, refusal;
    if (flags & GGUF_OPEN_SKIP_TOKENIZER) {
        if (!gguf_kv_find(meta, "tokenizer.ggml.model"))
            return QB_OK;
        if (!(flags & GGUF_OPEN_TOKENIZER_STATE)) {
            /* a 1.2 host says nothing itself */
            h->log(h, QB_LOG_WARN, "%s: option tokenizer=skip: the output gets no tokenizer.json", path);
            return QB_OK;
        }
        r->tok_state = QB_TOKENIZER_SKIPPED;
        if (!(r->tok_note = qbk_malloc(sizeof(SKIP_NOTE))))
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        memcpy(r->tok_note, SKIP_NOTE, sizeof(SKIP_NOTE));
        return QB_OK;
    }
    if ((st = gguf_tokenizer_try(h, meta, r->hp.n_ctx, &r->tok, &why, &refusal)))
        return st;
    if (why) {
        size_t n = strlen(why) + sizeof(SKIP_HINT);
        char *note = qbk_malloc(n);
        if (note)
            snprintf(note, n, "%s%s", why, SKIP_HINT);
        qbk_free(why);
        if (!note)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
        if (!(flags & GGUF_OPEN_TOKENIZER_STATE)) {
            st = h->set_error(h, refusal, "%s", note);
            qbk_free(note);
            return st;
        }
        r->tok_state = QB_TOKENIZER_REFUSED;
        r->tok_note = note;
        return QB_OK;
    }
    if (r->tok.tokenizer_json && (st = gguf_tokenizer_write_dir(h, &r->tok, &r->tok_dir)))
        return st;
    warn_notes(h, path, &r->tok);
    return QB_OK;
}

qb_status gguf_reader_open_opts(const qb_host *h, const char *path, unsigned flags, gguf_reader **out)
{
    gguf_reader *r;
    qb_status st;

    *out = NULL;
    r = qbk_calloc(1, sizeof(*r));
    if (!r)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    r->h = h;
    r->tok_skip = (flags & GGUF_OPEN_SKIP_TOKENIZER) != 0;
    if ((st = gguf_model_open(h, path, &r->m)) || (st = gguf_arch_hparams(h, r->m, &r->hp)) ||
        (st = gguf_names_map(h, r->m, &r->hp, &r->t, &r->n, &r->sp)) ||
        (st = gguf_hfconfig_build(h, r->m, &r->hp, &r->sp, &r->config_json, &r->gen_json)))
        goto out;
    st = gguf_kv_string(h, gguf_model_meta(r->m), "tokenizer.chat_template", &r->chat_template);
    if (st == QB_E_NOT_FOUND)
        st = QB_OK;
    if (st || (st = open_tokenizer(r, path, flags)))
        goto out;
    make_summary(r);
out:
    if (st) {
        gguf_reader_close(r);
        return st;
    }
    *out = r;
    return QB_OK;
}

qb_tokenizer_state gguf_reader_tokenizer_state(const gguf_reader *r, const char **note)
{
    *note = r->tok_note;
    return r->tok_state;
}

size_t gguf_reader_count(const gguf_reader *r)
{
    return r->n;
}

const gguf_ctensor *gguf_reader_tensor(const gguf_reader *r, size_t i)
{
    return i < r->n ? &r->t[i] : NULL;
}

const char *gguf_reader_config_json(const gguf_reader *r)
{
    return r->config_json;
}

static qb_status check_range(const gguf_reader *r, size_t index, int64_t row0, int64_t n_rows)
{
    const gguf_ctensor *c;
    if (index >= r->n)
        return r->h->set_error(r->h, QB_E_RANGE, "%s: tensor index %zu out of range (%zu tensors)",
                               gguf_model_meta(r->m)->path, index, r->n);
    c = &r->t[index];
    if (row0 < 0 || n_rows < 0 || row0 > c->n_rows || n_rows > c->n_rows - row0)
        return r->h->set_error(r->h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside the %lld rows",
                               c->src->file->path, c->name, (long long)row0, (long long)n_rows, (long long)c->n_rows);
    return QB_OK;
}

/* GGUF row of HF row r of canonical tensor c (2-D), and its tensor's
 * ggml type in *type when type is not NULL. */
static const uint8_t *src_row_t(const gguf_ctensor *c, int64_t r, uint32_t *type)
{
    const gguf_tinfo *t;
    int64_t g = gguf_names_stored_row(c, r, &t);
    if (type)
        *type = t->type;
    return t->data + (uint64_t)g * t->row_bytes;
}

static const uint8_t *src_row(const gguf_ctensor *c, int64_t r)
{
    return src_row_t(c, r, NULL);
}

/* Drops canonical tensor c's rows from this process when its file is
 * mapped (read-only, MAP_PRIVATE: MADV_DONTNEED only unmaps them; the page
 * cache keeps them and a later read maps them again). Without this every
 * source byte touched stays in the peak RSS. The range is widened to 2 MiB
 * boundaries (clamped to the file's own mapping): the page cache maps large
 * folios whole, and dropping only the pages inside each tensor left a 2 MiB
 * folio mapped at each tensor boundary, ~60 MB more at 32 layers than at 2
 * (/proc/PID/pagemap of a 7B Q4_0 conversion). A neighbour losing its
 * mapping only faults it back in. */
static void drop_pages(const gguf_ctensor *c)
{
    const uintptr_t big = (uintptr_t)2 << 20;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a, e, lo, hi, p;
    if (!c->src || !c->src->file || !c->src->file->mapped || pg <= 0 || c->kv_v || c->oss || c->qkvz_z)
        return;
    lo = (uintptr_t)c->src->file->map;
    hi = (lo + (uintptr_t)c->src->file->size + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    p = (uintptr_t)(c->src->data + (uint64_t)c->row0 * c->src->row_bytes);
    a = p & ~(big - 1);
    e = (p + (uintptr_t)((uint64_t)c->n_rows * c->src->row_bytes) + big - 1) & ~(big - 1);
    a = a < lo ? lo : a;
    e = e > hi ? hi : e;
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Drops the pages holding rows [row0, row0 + n) of c once read (whole
 * pages inside the range only: other threads read the neighbouring rows).
 * Bounds a big tensor (a 152k-vocabulary embedding in F16 is > 1 GiB) to
 * the rows in flight instead of the whole tensor. Rows of a permuted
 * (Q/K) tensor are not contiguous in the file: left to note_read. */
static void drop_rows(const gguf_ctensor *c, int64_t row0, int64_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a, e, p;
    if (!c->src || !c->src->file || !c->src->file->mapped || pg <= 0 || c->perm_heads || c->kv_v || c->oss ||
        c->qkvz_z || c->vt_rhd || n <= 0)
        return;
    p = (uintptr_t)(c->src->data + (uint64_t)(c->row0 + row0) * c->src->row_bytes);
    a = (p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    e = (p + (uintptr_t)((uint64_t)n * c->src->row_bytes)) & ~((uintptr_t)pg - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Notes a read of tensor index; when the previous read was of another
 * tensor, drops that one's pages. A writer streams tensor after tensor,
 * so the mapped RSS stays about one tensor; other access orders only
 * cost page faults. Thread-safe (atomic exchange on a field of the
 * reader, which is not itself const). */
static void note_read(const gguf_reader *r, size_t index)
{
    size_t prev = __atomic_exchange_n(&((gguf_reader *)r)->last_read, index + 1, __ATOMIC_RELAXED);
    if (prev != 0 && prev != index + 1 && prev - 1 < r->n)
        drop_pages(&r->t[prev - 1]);
}

/* Rows of a deepseek2 kv_b_proj rebuilt from attn_k_b/attn_v_b (see
 * map_kv_b in names.c): HF row h*(nope+v) + j is, for j < nope, column j
 * of head h's k_b block (k_b rows h*rank .. h*rank+rank-1), else v_b row
 * h*v + (j - nope). A head's k_b block is decoded once per call. */
static qb_status read_kv_b(const gguf_reader *r, const gguf_ctensor *c, int64_t row0, int64_t n_rows, float *dst)
{
    const int64_t nope = c->kv_nope, per = nope + c->kv_vdim, rank = c->cols;
    const gguf_tinfo *k = c->src, *v = c->kv_v;
    float *blk = NULL;
    int64_t i, col, head = -1;
    for (i = 0; i < n_rows; i++) {
        const int64_t hr = row0 + i, h = hr / per, j = hr % per;
        float *d = dst + i * rank;
        if (j >= nope) {
            gguf_ggml_dequantize_row(v->type, v->data + (uint64_t)(h * c->kv_vdim + j - nope) * v->row_bytes, d, rank);
            continue;
        }
        if (!blk && !(blk = qbk_malloc((size_t)(rank * nope) * sizeof(float))))
            return r->h->set_error(r->h, QB_E_NOMEM, "%s: %s: out of memory", k->file->path, c->name);
        if (h != head) {
            for (col = 0; col < rank; col++)
                gguf_ggml_dequantize_row(k->type, k->data + (uint64_t)(h * rank + col) * k->row_bytes,
                                         blk + col * nope, nope);
            head = h;
        }
        for (col = 0; col < rank; col++)
            d[col] = blk[col * nope + j];
    }
    qbk_free(blk);
    return QB_OK;
}

/* Drops the whole pages inside stored rows [row0, row0 + n) of t, as
 * drop_rows does for a canonical tensor's own rows. */
static void drop_span(const gguf_tinfo *t, int64_t row0, int64_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a, e, p;
    if (!t || !t->file || !t->file->mapped || pg <= 0 || n <= 0)
        return;
    p = (uintptr_t)(t->data + (uint64_t)row0 * t->row_bytes);
    a = (p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    e = (p + (uintptr_t)((uint64_t)n * t->row_bytes)) & ~((uintptr_t)pg - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Rows of a gpt-oss fused expert tensor (gguf_ctensor.oss; names.c
 * map_oss_experts). GGUF_OSS_COLUMNS: HF row e*K + k holds column k of
 * expert e's stored rows, so each stored row of an expert the range
 * touches has the blocks covering the requested columns decoded once and
 * scattered into the requested HF rows. */
static qb_status read_oss(const gguf_reader *r, const gguf_ctensor *c, int64_t row0, int64_t n_rows, float *dst)
{
    const int m = c->oss_up ? 2 : 1;
    const int64_t N = c->oss_n, K = c->src->ne[0];
    const gguf_tinfo *part[2] = {c->src, c->oss_up};
    float *tmp;
    int64_t i, e, row, k;
    int p;
    if (!(tmp = qbk_malloc((size_t)(c->oss == GGUF_OSS_ROWS ? N : K) * sizeof(float))))
        return r->h->set_error(r->h, QB_E_NOMEM, "%s: %s: out of memory", c->src->file->path, c->name);
    if (c->oss == GGUF_OSS_ROWS) {
        for (i = 0; i < n_rows; i++)
            for (p = 0; p < m; p++) {
                gguf_ggml_dequantize_row(part[p]->type, part[p]->data + (uint64_t)(row0 + i) * part[p]->row_bytes,
                                         tmp, N);
                for (k = 0; k < N; k++)
                    dst[i * c->cols + (c->oss_concat ? p * N + k : k * m + p)] = tmp[k];
            }
        qbk_free(tmp);
        return QB_OK;
    }
    for (e = row0 / K; e * K < row0 + n_rows; e++) {
        const int64_t k0 = e * K < row0 ? row0 - e * K : 0;
        const int64_t k1 = (e + 1) * K > row0 + n_rows ? row0 + n_rows - e * K : K;
        for (p = 0; p < m; p++) {
            /* Only the ggml blocks holding columns [k0, k1) of each stored
             * row: a writer reads an expert in many row chunks, and decoding
             * whole rows each time would decode the expert once per chunk.
             * K is a whole number of blocks (a valid stored row), so the
             * rounded-out span stays inside the row. */
            const gguf_ggml_type_info *ti = gguf_ggml_type_get(part[p]->type);
            const int64_t bl = ti->blck, b0 = k0 / bl * bl, b1 = (k1 + bl - 1) / bl * bl;
            const uint64_t off = (uint64_t)(b0 / bl) * ti->bytes;
            for (row = 0; row < N; row++) {
                gguf_ggml_dequantize_row(part[p]->type,
                                         part[p]->data + (uint64_t)(e * N + row) * part[p]->row_bytes + off,
                                         tmp, b1 - b0);
                for (k = k0; k < k1; k++)
                    dst[(e * K + k - row0) * c->cols + (c->oss_concat ? p * N + row : row * m + p)] =
                        tmp[k - b0];
            }
        }
        /* Each read touches every stored row of the expert; once its last
         * HF row is read (writers read an expert's rows in order), release
         * them so the mapped resident set stays about one expert. */
        if (k1 == K)
            for (p = 0; p < m; p++)
                drop_span(part[p], e * N, N);
    }
    qbk_free(tmp);
    return QB_OK;
}

/* issue 31: Qwen3.5's columns (out_proj) or vector elements (A_log,
 * dt_bias) in tiled value-head order (gguf_ctensor.vt_chd), and A_log
 * stored as -exp(A_log) (neg_log): HF element c is log(-stored[vtile(c)]).
 * log in double, rounded once to float: the f32 nearest the exact
 * logarithm of the stored value (docs/formats/gguf.md, "Qwen3-Next and
 * Qwen3.5", says how close that is to the checkpoint's A_log). */
static qb_status read_linear(const gguf_reader *r, const gguf_ctensor *c, int64_t row0, int64_t n_rows, float *dst)
{
    float *tmp = qbk_malloc((size_t)c->cols * sizeof(float));
    int64_t i, j;
    if (!tmp)
        return r->h->set_error(r->h, QB_E_NOMEM, "%s: %s: out of memory", c->src->file->path, c->name);
    for (i = 0; i < n_rows; i++) {
        float *d = dst + i * c->cols;
        uint32_t type;
        const uint8_t *p = src_row_t(c, row0 + i, &type);
        gguf_ggml_dequantize_row(type, p, tmp, c->cols);
        for (j = 0; j < c->cols; j++)
            d[j] = tmp[c->vt_chd ? gguf_names_vtile(j, c->vt_nk, c->vt_r, c->vt_chd) : j];
        if (c->neg_log)
            for (j = 0; j < c->cols; j++)
                d[j] = (float)log(-(double)d[j]);
    }
    qbk_free(tmp);
    return QB_OK;
}

qb_status gguf_reader_read_rows(const gguf_reader *r, size_t index, int64_t row0, int64_t n_rows, float *dst)
{
    const gguf_ctensor *c;
    int64_t i, j;
    qb_status st = check_range(r, index, row0, n_rows);
    if (st)
        return st;
    note_read(r, index);
    c = &r->t[index];
    if (c->kv_v)
        return read_kv_b(r, c, row0, n_rows, dst);
    if (c->oss)
        return read_oss(r, c, row0, n_rows, dst);
    if (c->n_dims == 1 && c->perm_heads && n_rows == 1) {
        /* A permuted bias: its elements are what LlamaModel.permute moved. */
        float *tmp = qbk_malloc((size_t)c->cols * sizeof(float));
        if (!tmp)
            return r->h->set_error(r->h, QB_E_NOMEM, "%s: %s: out of memory", c->src->file->path, c->name);
        gguf_ggml_dequantize_row(c->src->type, c->src->data, tmp, c->cols);
        for (j = 0; j < c->cols; j++)
            dst[j] = tmp[gguf_unpermute_row(j, c->cols, c->perm_heads)];
        qbk_free(tmp);
        return QB_OK;
    }
    if (c->vt_chd || c->neg_log)
        return read_linear(r, c, row0, n_rows, dst);
    for (i = 0; i < n_rows; i++) {
        float *d = dst + i * c->cols;
        uint32_t type;
        const uint8_t *p = src_row_t(c, row0 + i, &type);
        gguf_ggml_dequantize_row(type, p, d, c->cols);
        if (c->minus_one)
            for (j = 0; j < c->cols; j++)
                d[j] -= 1.0f;
    }
    /* an exact repack reads the same rows again through read_grid: those
     * are minor faults on the page cache (fault-around maps 16 pages each) */
    drop_rows(c, row0, n_rows);
    return QB_OK;
}

qb_status gguf_reader_get_grid_info(const gguf_reader *r, size_t index, qb_grid_info *out)
{
    const gguf_ctensor *c;
    qb_status st = check_range(r, index, 0, 0);
    if (st)
        return st;
    c = &r->t[index];
    if (!c->has_grid)
        return r->h->set_error(r->h, QB_E_UNSUPPORTED, "%s: %s: %s has no integer grid", c->src->file->path, c->name,
                               c->encoding);
    /* Q4_0 (ggml-common.h block_q4_0, dequantize_row_q4_0): 32 elements per
     * block, fp16 d, y = (nibble - 8) * d — symmetric, zero point 8.
     * Q8_0 (block_q8_0, dequantize_row_q8_0): 32 int8 qs per block, fp16 d,
     * y = qs * d — as codes qs + 128 with zero point 128. */
    out->bits = c->src->type == GGUF_GGML_TYPE_Q8_0 ? 8 : 4;
    out->n_groups = (uint32_t)(c->cols / 32);
    out->group_size = 32;
    out->col_group = NULL;
    out->symmetric = 1;
    out->scale_dtype = QB_DT_F16;
    return QB_OK;
}

qb_status gguf_reader_read_grid(const gguf_reader *r, size_t index, int64_t row0, int64_t n_rows, qb_grid_rows *out)
{
    const gguf_ctensor *c;
    int64_t i, b, nb;
    qb_status st = check_range(r, index, row0, n_rows);
    if (st)
        return st;
    note_read(r, index);
    c = &r->t[index];
    if (!c->has_grid)
        return r->h->set_error(r->h, QB_E_UNSUPPORTED, "%s: %s: %s has no integer grid", c->src->file->path, c->name,
                               c->encoding);
    nb = c->cols / 32;
    if (c->src->type == GGUF_GGML_TYPE_Q8_0) {
        for (i = 0; i < n_rows; i++) {
            const uint8_t *blk = src_row(c, row0 + i);
            uint8_t *codes = out->codes + i * c->cols;
            for (b = 0; b < nb; b++, blk += 34) {
                uint16_t d;
                int j;
                memcpy(&d, blk, 2);
                out->scales[i * nb + b] = qb_f16_to_f32(d);
                out->zeros[i * nb + b] = 128;
                for (j = 0; j < 32; j++)
                    codes[b * 32 + j] = (uint8_t)((int8_t)blk[2 + j] + 128);
            }
        }
        drop_rows(c, row0, n_rows);
        return QB_OK;
    }
    for (i = 0; i < n_rows; i++) {
        const uint8_t *blk = src_row(c, row0 + i);
        uint8_t *codes = out->codes + i * c->cols;
        for (b = 0; b < nb; b++, blk += 18) {
            uint16_t d;
            int j;
            memcpy(&d, blk, 2);
            out->scales[i * nb + b] = qb_f16_to_f32(d);
            out->zeros[i * nb + b] = 8;
            /* Split halves: byte j holds element j (low nibble) and j + 16
             * (high nibble) (docs/formats/gguf.md, "Legacy blocks"). */
            for (j = 0; j < 16; j++) {
                codes[b * 32 + j] = blk[2 + j] & 0x0f;
                codes[b * 32 + j + 16] = blk[2 + j] >> 4;
            }
        }
    }
    drop_rows(c, row0, n_rows);
    return QB_OK;
}

/* ---- vtable glue ---- */

static qb_status vt_open(void *ctx, const char *path, const qb_param *params, qb_reader_handle *out)
{
    gguf_reader *r = NULL;
    qb_status st;
    const qb_param *tp = qb_param_find(params, "tokenizer");
    unsigned flags = 0;
    (void)ctx;
    if (tp && tp->is_set && tp->v.s && strcmp(tp->v.s, "skip") == 0)
        flags |= GGUF_OPEN_SKIP_TOKENIZER;
    /* plugin.abi is what the entry negotiated: a 1.3 host reads the state */
    if (plugin.abi >= QB_MAKE_ABI(1, 3))
        flags |= GGUF_OPEN_TOKENIZER_STATE;
    st = gguf_reader_open_opts(g_host, path, flags, &r);
    *out = r;
    return st;
}

static void vt_close(qb_reader_handle h)
{
    gguf_reader_close(h);
}

static qb_status vt_model_info(qb_reader_handle h, qb_model_info *out)
{
    gguf_reader *r = h;
    const uint32_t sz = out->struct_size;
    memset(out, 0, sizeof(*out) < sz ? sizeof(*out) : sz);
    out->struct_size = sz;
    out->architecture = r->hp.model_type;
    out->config_json = r->config_json;
    out->generation_config_json = r->gen_json;
    out->n_tensors = r->n;
    out->source_format = "gguf";
    out->source_summary = r->summary;
    out->tokenizer_dir = r->tok_dir;
    if (QB_HAS_FIELD(out, qb_model_info, chat_template))
        out->chat_template = r->chat_template;
    if (QB_HAS_FIELD(out, qb_model_info, tokenizer_note)) {
        out->tokenizer_state = r->tok_state;
        out->tokenizer_note = r->tok_note;
    } else if (r->tok_state == QB_TOKENIZER_REFUSED) {
        /* a host that negotiated 1.3 but hands a shorter struct would read
         * "no tokenizer": say the refusal as open() to a 1.2 host does */
        return r->h->set_error(r->h, QB_E_UNSUPPORTED, "%s", r->tok_note);
    }
    return QB_OK;
}

static qb_status vt_tensor_info(qb_reader_handle h, size_t index, qb_tensor_info *out)
{
    gguf_reader *r = h;
    const gguf_ctensor *c;
    uint32_t i;
    qb_status st = check_range(r, index, 0, 0);
    if (st)
        return st;
    c = &r->t[index];
    out->name = c->name;
    out->n_dims = c->n_dims;
    for (i = 0; i < QB_MAX_DIMS; i++)
        out->dims[i] = i < c->n_dims ? c->dims[i] : 0;
    switch (c->src->type) {
    case GGUF_GGML_TYPE_F32:
        out->source_dtype = QB_DT_F32;
        break;
    case GGUF_GGML_TYPE_F16:
        out->source_dtype = QB_DT_F16;
        break;
    case GGUF_GGML_TYPE_BF16:
        out->source_dtype = QB_DT_BF16;
        break;
    default:
        out->source_dtype = QB_DT_QUANTIZED;
        break;
    }
    out->source_encoding = c->encoding;
    out->has_grid = c->has_grid;
    return QB_OK;
}

static qb_status vt_read_rows(qb_reader_handle h, size_t index, int64_t row0, int64_t n_rows, float *dst)
{
    return gguf_reader_read_rows(h, index, row0, n_rows, dst);
}

static qb_status vt_grid_info(qb_reader_handle h, size_t index, qb_grid_info *out)
{
    return gguf_reader_get_grid_info(h, index, out);
}

static qb_status vt_read_grid(qb_reader_handle h, size_t index, int64_t row0, int64_t n_rows, qb_grid_rows *out)
{
    return gguf_reader_read_grid(h, index, row0, n_rows, out);
}

static qb_status vt_raw_tensor(qb_reader_handle h, size_t index, qb_raw_tensor_info *out)
{
    const gguf_reader *r = h;
    return gguf_view_raw(r->m, r->t, r->n, index, out);
}

static qb_status vt_metadata(qb_reader_handle h, size_t index, qb_meta_entry *out)
{
    const gguf_reader *r = h;
    return gguf_view_meta(r->m, r->t, r->n, index, out);
}

static qb_status vt_stored_info(qb_reader_handle h, size_t index, qb_stored_rows_info *out)
{
    const gguf_reader *r = h;
    if (index >= r->n)
        return r->h->set_error(r->h, QB_E_RANGE, "tensor index %zu out of range (%zu tensors)", index, r->n);
    return gguf_stored_info(&r->t[index], out);
}

static qb_status vt_read_stored(qb_reader_handle h, size_t index, int64_t row0, int64_t n_rows, void *dst)
{
    const gguf_reader *r = h;
    qb_stored_rows_info si;
    int64_t i;
    memset(&si, 0, sizeof(si));
    si.struct_size = sizeof(si);
    if (index >= r->n || gguf_stored_info(&r->t[index], &si) != QB_OK)
        return r->h->set_error(r->h, QB_E_UNSUPPORTED, "tensor %zu has no stored rows", index);
    if (row0 < 0 || n_rows < 0 || row0 > si.rows || n_rows > si.rows - row0)
        return r->h->set_error(r->h, QB_E_RANGE, "%s: stored rows [%lld, +%lld) outside the %lld rows",
                               r->t[index].name, (long long)row0, (long long)n_rows, (long long)si.rows);
    for (i = 0; i < n_rows; i++)
        memcpy((uint8_t *)dst + (size_t)i * si.row_bytes, gguf_stored_row(&r->t[index], row0 + i), si.row_bytes);
    return QB_OK;
}

static const qb_reader_vtable reader_vtable = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = reader_probe,
    .open = vt_open,
    .close = vt_close,
    .get_model_info = vt_model_info,
    .get_tensor_info = vt_tensor_info,
    .read_rows = vt_read_rows,
    .get_grid_info = vt_grid_info,
    .read_grid = vt_read_grid,
    .get_raw_tensor_info = vt_raw_tensor,
    .get_metadata = vt_metadata,
    .get_stored_rows = vt_stored_info,
    .read_stored_rows = vt_read_stored,
};

static const qb_option_decl opt_tokenizer = {
    .struct_size = sizeof(qb_option_decl),
    .name = "tokenizer",
    .type = QB_PARAM_STRING,
    .default_value = "rebuild",
    .help = "rebuild tokenizer.json from tokenizer.ggml.* (refused when not exact), or skip it with a warning",
    .choices = "rebuild|skip",
    .min_int = 1,
    .max_int = 0,
    .roles = QB_OPTION_ROLE_READER,
};
extern const qb_option_decl gguf_writer_opt_type, gguf_writer_opt_tensor_type;
extern const qb_option_decl gguf_writer_opt_split_max_size, gguf_writer_opt_split_max_tensors; /* issue 28 */
extern const qb_writer_vtable gguf_writer_vtable;
const qb_host *gguf_writer_host;

static const qb_option_decl *const option_decls[] = {&opt_tokenizer, &gguf_writer_opt_type, &gguf_writer_opt_tensor_type,
                                                      &gguf_writer_opt_split_max_size,
                                                      &gguf_writer_opt_split_max_tensors, NULL};

/* The writer puts the tokenizer into the GGUF itself (tokenizer.ggml.*),
 * from the source's tokenizer files; its output is read back by this
 * plugin's reader. */
static const qb_writer_caps writer_caps = {
    .struct_size = sizeof(qb_writer_caps),
    .flags = QB_WRITER_SIDE_FILES_SELF,
    .architectures = NULL,
    .required_facts = 0,
    .verify_reader = "gguf",
};

/* Not const: the entry writes the negotiated ABI into .abi. */
static qb_plugin plugin = {
    .struct_size = sizeof(qb_plugin),
    .abi = QB_ABI_CURRENT,
    .name = "gguf",
    .version = "0.1.0",
    .description = "GGUF (llama.cpp): read (every ggml type, split files, llama.cpp names to Hugging Face) and "
                   "written (GGUF v3: the source's ggml and MXFP4 blocks copied, exact Q4_0/Q8_0 from "
                   "symmetric grids, legacy and K quantizers)",
    .vendor = "quantbridge",
    .license = "MIT",
    .flags = QB_PLUGIN_CONCURRENT_READS,
    .reader = &reader_vtable,
    .writer = &gguf_writer_vtable,
    .options = option_decls,
    .writer_caps = &writer_caps,
};

const qb_reader_vtable *gguf_reader_vtable(void)
{
    return &reader_vtable;
}

QB_EXPORT qb_status qb_plugin_entry_v1(qb_negotiation *neg, const qb_host *host, const qb_plugin **out)
{
    qb_status rc = qbk_plugin_enter(neg, host, QB_MAKE_ABI(1, 0), &plugin, out);
    if (rc == QB_OK)
        g_host = gguf_writer_host = host;
    return rc;
}
