/*
 * `forward --text` and verify's model check from text (docs/verify.md,
 * "Model check"): the token ids the host's encoder gives and records, and
 * the perplexities verify reports, recomputed here from the logits
 * `forward` writes (next-token NLL over positions 0..T-2, natural log, in
 * double, exp of the mean).
 *
 * Fixture: a tiny llama (bf16, heavy-tailed weights, vocab 260) with the
 * byte-level tokenizer.json of tests/gen/gen_tokenizer.h: the 256 byte
 * characters (ids 0..255), three merges ("Ġ t", "h e", "Ġt he" ->
 * 256..258) and the added token <|bos|> (259) that a TemplateProcessing
 * puts first. That the
 * encoder matches the tokenizers library is tests/host/test_tokenize.c's
 * and the interop tier's job; here, hand-worked ids pin it.
 *
 * Conversions: hf-dense at bf16 (the same values: perplexity ratio exactly
 * 1), W4A16 (lossy: the perplexities must be those of the two models'
 * logits), and that copy with its head replaced by noise of standard
 * deviation 0.5 (logit noise ~4: whatever the source predicts, a head that
 * adds independent noise of that size raises the expected NLL by several
 * nats per position, far beyond the spread of the noise at the targets,
 * so the ratio is > 1).
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gen_hf_dense.h"
#include "gen_tokenizer.h"
#include "qbt_fs.h"
#include "qbt_run.h"

#define VOCAB QBT_TOK_VOCAB
#define BOS QBT_TOK_BOS

/* The F32 `logits` [T, V] of a forward output and its metadata ids. */
static float *read_logits(const char *file, int64_t *T, int64_t *V, char **ids)
{
    size_t len;
    char *data = qbt_read_file(file, &len);
    uint64_t hl = 0;
    int i;
    cJSON *h, *t, *shape, *md;
    float *out;
    ck_assert_ptr_nonnull(data);
    for (i = 0; i < 8; i++)
        hl |= (uint64_t)(unsigned char)data[i] << (8 * i);
    h = cJSON_ParseWithLength(data + 8, (size_t)hl);
    ck_assert_ptr_nonnull(h);
    t = cJSON_GetObjectItem(h, "logits");
    shape = cJSON_GetObjectItem(t, "shape");
    *T = (int64_t)cJSON_GetArrayItem(shape, 0)->valuedouble;
    *V = (int64_t)cJSON_GetArrayItem(shape, 1)->valuedouble;
    ck_assert_uint_eq(len, 8 + hl + (size_t)(*T * *V) * 4);
    md = cJSON_GetObjectItem(h, "__metadata__");
    *ids = strdup(cJSON_GetObjectItem(md, "token_ids")->valuestring);
    ck_assert_str_eq(cJSON_GetObjectItem(md, "token_source")->valuestring, "text");
    out = malloc((size_t)(*T * *V) * sizeof *out);
    memcpy(out, data + 8 + hl, (size_t)(*T * *V) * sizeof *out);
    cJSON_Delete(h);
    free(data);
    return out;
}

/* exp(mean over t < T-1 of -log softmax(logits[t])[ids[t+1]]), in double. */
static double ref_perplexity(const float *lg, int64_t T, int64_t V, const int64_t *ids)
{
    double nll = 0;
    int64_t t, v;
    for (t = 0; t + 1 < T; t++) {
        double m = -INFINITY, s = 0;
        for (v = 0; v < V; v++)
            m = fmax(m, lg[t * V + v]);
        for (v = 0; v < V; v++)
            s += exp(lg[t * V + v] - m);
        nll += log(s) + m - lg[t * V + ids[t + 1]];
    }
    return exp(nll / (double)(T - 1));
}

static size_t parse_ids(const char *s, int64_t *ids, size_t cap)
{
    size_t n = 0;
    char *end;
    while (*s && n < cap) {
        ids[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* verify --json ... as cJSON (status checked against want). */
static cJSON *verify_json(const char *src, const char *conv, const char *text, int want)
{
    qbt_result r;
    cJSON *j;
    const char *argv[] = {"verify", "--source", src, "--converted", conv, "--json",
                          text ? "--text" : NULL, text, NULL};
    qbt_run(&r, argv);
    ck_assert_msg(r.status == want, "verify %s %s -> %d\n%s", src, conv, r.status, r.err);
    j = cJSON_Parse(r.out);
    ck_assert_msg(j != NULL, "%s", r.out);
    qbt_result_free(&r);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    ck_assert_msg(cJSON_IsNumber(v), "no number %s", k);
    return v->valuedouble;
}

/* Replaces lm_head.weight (bf16) of the hf-dense model.safetensors in dir
 * by deterministic noise of standard deviation 0.5. */
static void noisy_head(const char *dir)
{
    char *p = qbt_path(dir, "model.safetensors");
    size_t len, i, off, end;
    char *data = qbt_read_file(p, &len);
    uint64_t hl = 0, z = 12345;
    cJSON *h, *t;
    for (i = 0; i < 8; i++)
        hl |= (uint64_t)(unsigned char)data[i] << (8 * i);
    h = cJSON_ParseWithLength(data + 8, (size_t)hl);
    t = cJSON_GetObjectItem(h, "lm_head.weight");
    ck_assert_ptr_nonnull(t);
    ck_assert_str_eq(cJSON_GetObjectItem(t, "dtype")->valuestring, "BF16");
    off = 8 + hl + (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(t, "data_offsets"), 0)->valuedouble;
    end = 8 + hl + (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(t, "data_offsets"), 1)->valuedouble;
    for (i = off; i < end; i += 2) {
        /* uniform on [-0.866, 0.866): standard deviation 0.5 */
        float f, u;
        uint32_t bits;
        z = z * 6364136223846793005ULL + 1442695040888963407ULL;
        u = (float)((z >> 40) / 16777216.0);
        f = (u * 2.0f - 1.0f) * 0.8660254f;
        memcpy(&bits, &f, 4);
        data[i] = (char)(bits >> 16);
        data[i + 1] = (char)(bits >> 24);
    }
    qbt_write_bytes(p, data, len);
    cJSON_Delete(h);
    free(data);
    free(p);
}

START_TEST(text_tokens_and_perplexity)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = VOCAB, .heads = 4, .kv_heads = 2,
                      .head_dim = 16, .tied = 0, .shards = 1, .seed = 21 | QBT_HFD_HEAVY};
    const char *tmp = qbt_scratch("fwd-text");
    char *src = qbt_path(tmp, "src"), *same = qbt_path(tmp, "same"), *w4 = qbt_path(tmp, "w4");
    char *noisy = qbt_path(tmp, "noisy"), *bare = qbt_path(tmp, "bare"), args[4096], *out = NULL;
    const char *text = "the theme then: Größe, 中文 and the end";
    cJSON *j, *mc;
    int64_t ids[256], T, V, T2, V2;
    size_t n, k;
    float *la, *lb;
    char *ida, *idb;
    double ps, pc;

    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    ck_assert_int_eq(qbt_tok_write_bytelevel(src), 0);

    /* forward --print-tokens: hand-worked ids. "the" -> t, he (no space
     * before it); " theme" -> Ġthe, m, e; BOS first. */
    snprintf(args, sizeof args, "forward --model '%s' --text 'the theme' --print-tokens", src);
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_str_eq(out, "259,116,257,258,109,101\n");
    free(out);
    /* --tokens and --text exclude each other (usage, 2). */
    snprintf(args, sizeof args, "forward --model '%s' --text x --tokens 1 --print-tokens", src);
    ck_assert_int_eq(qbt_run_line(args, &out), 2);
    free(out);

    /* The same values (hf-dense at bf16): ratio exactly 1. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=bf16", src, same);
    ck_assert_msg(qbt_run_line(args, &out) == 0, "%s", out);
    free(out);
    j = verify_json(src, same, NULL, 0);
    mc = cJSON_GetObjectItem(j, "model_check");
    ck_assert_str_eq(cJSON_GetObjectItem(mc, "token_source")->valuestring, "text");
    ck_assert_int_eq((int64_t)cJSON_GetArrayItem(cJSON_GetObjectItem(mc, "token_ids"), 0)->valuedouble,
                     BOS);
    ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(mc, "token_ids")), 8);
    ck_assert(num(mc, "perplexity_source") > 1);
    ck_assert(num(mc, "perplexity_source") == num(mc, "perplexity_converted"));
    ck_assert(num(mc, "perplexity_ratio") == 1.0);
    fprintf(stderr, "exact: %d tokens from the built-in text, perplexity %.6g, ratio %.17g\n",
            cJSON_GetArraySize(cJSON_GetObjectItem(mc, "token_ids")), num(mc, "perplexity_source"),
            num(mc, "perplexity_ratio"));
    cJSON_Delete(j);

    /* W4A16 with --text: the perplexities of the two models' logits. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s'", src, w4);
    ck_assert_msg(qbt_run_line(args, &out) == 0, "%s", out);
    free(out);
    j = verify_json(src, w4, text, 0);
    mc = cJSON_GetObjectItem(j, "model_check");
    ck_assert_str_eq(cJSON_GetObjectItem(mc, "token_source")->valuestring, "text");
    {
        char *a = qbt_path(tmp, "a.safetensors"), *b = qbt_path(tmp, "b.safetensors");
        const char *fa[] = {"forward", "--model", src, "--text", text, "--output", a, NULL};
        const char *fb[] = {"forward", "--model", w4, "--text", text, "--output", b, NULL};
        qbt_result r;
        qbt_run(&r, fa);
        ck_assert_msg(r.status == 0, "%s", r.err);
        qbt_result_free(&r);
        qbt_run(&r, fb);
        ck_assert_msg(r.status == 0, "%s", r.err);
        qbt_result_free(&r);
        la = read_logits(a, &T, &V, &ida);
        lb = read_logits(b, &T2, &V2, &idb);
        {
            /* --text-file holding the same text: the same ids and logits;
             * several NUL-separated texts: refused (exit 1). */
            char *tf = qbt_path(tmp, "text.txt"), *c = qbt_path(tmp, "c.safetensors"), *idc;
            const char *fc[] = {"forward", "--model", src, "--text-file", tf, "--output", c, NULL};
            int64_t T3, V3;
            float *lc;
            qbt_write_bytes(tf, text, strlen(text));
            qbt_run(&r, fc);
            ck_assert_msg(r.status == 0, "%s", r.err);
            qbt_result_free(&r);
            lc = read_logits(c, &T3, &V3, &idc);
            ck_assert_str_eq(idc, ida);
            ck_assert_int_eq(T3, T);
            ck_assert_int_eq(V3, V);
            ck_assert_int_eq(memcmp(lc, la, (size_t)(T * V) * sizeof *la), 0);
            qbt_write_bytes(tf, "a\0b", 3);
            qbt_run(&r, fc);
            ck_assert_int_eq(r.status, 1);
            ck_assert_msg(strstr(r.err, tf) && strstr(r.err, "NUL"), "%s", r.err);
            qbt_result_free(&r);
            free(lc);
            free(idc);
            free(tf);
            free(c);
        }
        free(a);
        free(b);
    }
    ck_assert_int_eq(T, T2);
    ck_assert_int_eq(V, VOCAB);
    ck_assert_str_eq(ida, idb);
    n = parse_ids(ida, ids, 256);
    ck_assert_int_eq((int64_t)n, T);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(mc, "token_ids")), (int)n);
    for (k = 0; k < n; k++)
        ck_assert_int_eq((int64_t)cJSON_GetArrayItem(cJSON_GetObjectItem(mc, "token_ids"),
                                                     (int)k)->valuedouble, ids[k]);
    ps = ref_perplexity(la, T, V, ids);
    pc = ref_perplexity(lb, T, V, ids);
    fprintf(stderr, "W4A16: %lld tokens, perplexity %.6g -> %.6g (ours %.6g -> %.6g), ratio %.6f\n",
            (long long)T, ps, pc, num(mc, "perplexity_source"), num(mc, "perplexity_converted"),
            num(mc, "perplexity_ratio"));
    ck_assert_double_eq_tol(num(mc, "perplexity_source"), ps, 1e-9 * ps);
    ck_assert_double_eq_tol(num(mc, "perplexity_converted"), pc, 1e-9 * pc);
    ck_assert_double_eq_tol(num(mc, "perplexity_ratio"), pc / ps, 1e-9);
    ck_assert(num(mc, "perplexity_ratio") != 1.0);
    cJSON_Delete(j);
    free(la);
    free(lb);
    free(ida);
    free(idb);

    /* The HTML report and the text output show the perplexities. */
    {
        char *rep = qbt_path(tmp, "r.html"), *html;
        snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --report '%s'", src, w4,
                 rep);
        ck_assert_int_eq(qbt_run_line(args, &out), 0);
        ck_assert_msg(strstr(out, "model check: perplexity "), "%s", out);
        ck_assert_msg(strstr(out, "tokens from text)"), "%s", out);
        free(out);
        html = qbt_read_file(rep, NULL);
        ck_assert_ptr_nonnull(html);
        ck_assert(strstr(html, "Tokens from text: perplexity "));
        free(html);
        free(rep);
    }

    /* A head of noise: the tensor check fails (3), the ratio is > 1. */
    qbt_copy_dir(same, noisy);
    noisy_head(noisy);
    j = verify_json(src, noisy, text, 3);
    mc = cJSON_GetObjectItem(j, "model_check");
    fprintf(stderr, "noisy head: perplexity %.6g -> %.6g, ratio %.6g\n",
            num(mc, "perplexity_source"), num(mc, "perplexity_converted"),
            num(mc, "perplexity_ratio"));
    ck_assert(num(mc, "perplexity_ratio") > 1.0);
    cJSON_Delete(j);

    /* --tokens: ids, no perplexity; --text without any tokenizer: error. */
    {
        qbt_result r;
        const char *argv[] = {"verify", "--source", src, "--converted", w4, "--json",
                              "--tokens", "259,1,2", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        j = cJSON_Parse(r.out);
        mc = cJSON_GetObjectItem(j, "model_check");
        ck_assert_str_eq(cJSON_GetObjectItem(mc, "token_source")->valuestring, "ids");
        ck_assert_ptr_null(cJSON_GetObjectItem(mc, "perplexity_ratio"));
        cJSON_Delete(j);
        qbt_result_free(&r);
    }
    s.seed = 22;
    ck_assert_int_eq(qbt_hfd_write(&s, bare), 0);
    {
        qbt_result r;
        const char *argv[] = {"verify", "--source", bare, "--converted", bare, "--text", "hi",
                              NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "tokenizer"), "%s", r.err);
        qbt_result_free(&r);
    }
    {
        /* without a tokenizer, the default stays the fixed ids */
        j = verify_json(bare, bare, NULL, 0);
        mc = cJSON_GetObjectItem(j, "model_check");
        ck_assert_str_eq(cJSON_GetObjectItem(mc, "token_source")->valuestring, "ids");
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(mc, "token_ids")), 32);
        cJSON_Delete(j);
    }
    free(src);
    free(same);
    free(w4);
    free(noisy);
    free(bare);
}
END_TEST

/* forward --text-file FILE --print-tokens (the interop tier's one process
 * per vocabulary): NUL bytes separate the texts, each gets its own line of
 * ids, newlines are part of a text. Hand-worked ids as above: BOS first;
 * "\n" is byte 10 (a piece of its own by GPT-2's regex); "the" -> t, he;
 * " theme" -> Ġthe, m, e. */
START_TEST(text_file_print_tokens)
{
    const char *tmp = qbt_scratch("fwd-text-file");
    char *tok = qbt_path(tmp, "tok"), *f = qbt_path(tmp, "texts"), *g = qbt_path(tmp, "one");
    char *bad = qbt_path(tmp, "bad"), *missing = qbt_path(tmp, "missing");
    /* "the theme", "" (only BOS), "a\nthe", and a trailing empty text */
    static const char texts[] = "the theme\0\0a\nthe\0";
    static const char bad_texts[] = "the\0\xff\xfe";
    qbt_result r;

    qbt_mkdir_p(tok);
    ck_assert_int_eq(qbt_tok_write_bytelevel(tok), 0);
    qbt_write_bytes(f, texts, sizeof texts - 1);
    {
        const char *argv[] = {"forward", "--tokenizer", tok, "--text-file", f, "--print-tokens",
                              NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "259,116,257,258,109,101\n259\n259,97,10,116,257\n259\n");
        qbt_result_free(&r);
    }
    /* No NUL: one text, its trailing newline included (byte 10 last). */
    qbt_write_bytes(g, "the theme\n", 10);
    {
        const char *argv[] = {"forward", "--tokenizer", tok, "--text-file", g, "--print-tokens",
                              NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "259,116,257,258,109,101,10\n");
        qbt_result_free(&r);
    }
    /* Text 2 is not UTF-8: exit 1 naming the file and the text. */
    qbt_write_bytes(bad, bad_texts, sizeof bad_texts - 1);
    {
        const char *argv[] = {"forward", "--tokenizer", tok, "--text-file", bad, "--print-tokens",
                              NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, bad) && strstr(r.err, "text 2"), "%s", r.err);
        qbt_result_free(&r);
    }
    /* A missing file: exit 1 naming it. */
    {
        const char *argv[] = {"forward", "--tokenizer", tok, "--text-file", missing,
                              "--print-tokens", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, missing), "%s", r.err);
        qbt_result_free(&r);
    }
    /* --text-file excludes --text and --tokens (usage, 2). */
    {
        const char *argv[] = {"forward", "--tokenizer", tok, "--text-file", f, "--text", "x",
                              "--print-tokens", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 2);
        qbt_result_free(&r);
    }
    free(tok);
    free(f);
    free(g);
    free(bad);
    free(missing);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("forward-text");
    TCase *tc = tcase_create("forward-text");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, text_tokens_and_perplexity);
    tcase_add_test(tc, text_file_print_tokens);
    suite_add_tcase(s, tc);
    return s;
}
