/*
 * GGUF through the quantbridge program: inspect shows the architecture,
 * type mix and mapped names; convert to sm86-w4a16 works for the
 * architectures the writer supports, Q4_0 at --group-size 32 is exact; a
 * split set converts from any shard; malformed files exit 1 with a message
 * naming the file. The Gemma-shaped vocabulary gemma-mini through the
 * host's encoder (ids worked out by hand), and a tokenizer the reader
 * refuses (ABI 1.3: inspect reports it, convert and forward --text refuse
 * naming the ways out, tokenizer=skip and --tokenizer DIR).
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen_gguf_tok.h"
#include "qbt_fs.h"
#include "qbt_run.h"

#include <cjson/cJSON.h>

static char tmp[1024];

/* Runs cmd (program first, no shell) through qbt_run_cmd, stdout+stderr
 * into out (up to n, may be NULL); returns the exit code. */
static int run(const char *cmd, char *out, size_t n)
{
    char *text = NULL;
    int st = qbt_run_cmd(cmd, &text);
    if (out && n)
        snprintf(out, n, "%s", text);
    free(text);
    return st;
}

static const char *bin(void)
{
    const char *b = getenv("QB_TEST_BIN");
    ck_assert_ptr_nonnull(b);
    return b;
}

static void gen(const char *arch, const char *type, const char *out, int shards)
{
    char cmd[4096];
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    if (shards)
        snprintf(cmd, sizeof(cmd), "'%s/tests/bin/qb-gen-gguf' %s %s '%s' %d", bd, arch, type, out, shards);
    else
        snprintf(cmd, sizeof(cmd), "'%s/tests/bin/qb-gen-gguf' %s %s '%s'", bd, arch, type, out);
    ck_assert_int_eq(run(cmd, NULL, 0), 0);
}

static void setup(void)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    snprintf(tmp, sizeof(tmp), "%s/gguf-cli-%d", base ? base : "/tmp", (int)getpid());
    qbt_mkdir_p(tmp);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long n;
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    return b;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (; (hay = strstr(hay, needle)); hay++)
        n++;
    return n;
}

START_TEST(inspect_shows_arch_types_names)
{
    char src[1200], cmd[4096], out[65536];
    snprintf(src, sizeof(src), "%s/m.gguf", tmp);
    gen("mistral", "q4_0", src, 0);
    snprintf(cmd, sizeof(cmd), "'%s' inspect '%s'", bin(), src);
    ck_assert_int_eq(run(cmd, out, sizeof(out)), 0);
    ck_assert_ptr_nonnull(strstr(out, "mistral"));
    ck_assert_ptr_nonnull(strstr(out, "Q4_0"));
    ck_assert_ptr_nonnull(strstr(out, "model.layers.1.self_attn.k_proj.weight"));
    ck_assert_ptr_nonnull(strstr(out, "lm_head.weight"));
}
END_TEST

/* inspect's tokenizer part (host/cli/inspect_tokenizer.c) for the llama2
 * vocabulary made into GGUF metadata (qb-gen-gguf-tok): kind, vocabulary
 * size and special tokens with ids as the original tokenizer.json and
 * tokenizer_config.json of tests/data/tokenizers/llama2 state them. */
START_TEST(inspect_shows_tokenizer)
{
    char src[1200], cmd[4096], *out = malloc(1 << 20), *orig_text, *cfg_text, *p;
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    cJSON *j, *t, *orig, *cfg, *sp;
    static const char *const names[] = {"bos", "eos", "unk"};
    int i;
    ck_assert_ptr_nonnull(bd);
    ck_assert_ptr_nonnull(out);
    snprintf(src, sizeof(src), "%s/tok.gguf", tmp);
    snprintf(cmd, sizeof(cmd), "'%s/tests/bin/qb-gen-gguf-tok' '%s/llama2' - '%s'", bd, QB_TOKENIZER_DATA, src);
    ck_assert_int_eq(run(cmd, NULL, 0), 0);
    snprintf(cmd, sizeof(cmd), "%s/llama2/tokenizer.json.xz", QB_TOKENIZER_DATA);
    orig_text = qbt_read_maybe_xz(cmd);
    ck_assert_ptr_nonnull(orig_text);
    orig = cJSON_Parse(orig_text);
    snprintf(cmd, sizeof(cmd), "%s/llama2/tokenizer_config.json", QB_TOKENIZER_DATA);
    cfg_text = slurp(cmd);
    cfg = cJSON_Parse(cfg_text);
    ck_assert(orig && cfg);
    /* --json: stdout only (warnings go to stderr through the runner too,
     * so take the object from its first brace) */
    snprintf(cmd, sizeof(cmd), "'%s' inspect --json '%s'", bin(), src);
    ck_assert_int_eq(run(cmd, out, 1 << 20), 0);
    p = strchr(out, '{');
    ck_assert_ptr_nonnull(p);
    j = cJSON_Parse(p);
    ck_assert_ptr_nonnull(j);
    t = cJSON_GetObjectItemCaseSensitive(j, "tokenizer");
    ck_assert(cJSON_IsObject(t));
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(t, "kind")->valuestring,
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(orig, "model"), "type")->valuestring);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "byte_fallback")));
    ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(t, "vocab_size")->valuedouble,
                     cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(orig, "model"), "vocab")));
    sp = cJSON_GetObjectItemCaseSensitive(t, "special_tokens");
    for (i = 0; i < 3; i++) {
        char key[16];
        const cJSON *want, *got = cJSON_GetObjectItemCaseSensitive(sp, names[i]);
        const char *text;
        snprintf(key, sizeof key, "%s_token", names[i]);
        want = cJSON_GetObjectItemCaseSensitive(cfg, key);
        text = cJSON_IsObject(want) ? cJSON_GetObjectItemCaseSensitive(want, "content")->valuestring : want->valuestring;
        ck_assert_msg(cJSON_IsObject(got), "%s missing", names[i]);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(got, "token")->valuestring, text);
        ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(got, "id")->valuedouble,
                         (int)cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(orig, "model"), "vocab"),
                             text)
                             ->valuedouble);
    }
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(sp, "pad")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "add_bos_token")) ==
              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token")));
    ck_assert(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(t, "chat_template")));
    /* text form */
    snprintf(cmd, sizeof(cmd), "'%s' inspect '%s'", bin(), src);
    ck_assert_int_eq(run(cmd, out, 1 << 20), 0);
    ck_assert_msg(strstr(out, "tokenizer kind: BPE, byte fallback") && strstr(out, "vocab 32000") &&
                      strstr(out, "tokenizer special: bos <s> (1), eos </s> (2), unk <unk> (0), pad none"),
                  "%s", out);
    cJSON_Delete(j);
    cJSON_Delete(orig);
    cJSON_Delete(cfg);
    free(orig_text);
    free(cfg_text);
    free(out);
}
END_TEST

/* Q4_0 at group 32 repacks exactly for every architecture the writer takes. */
START_TEST(convert_q4_0_exact)
{
    static const char *const archs[] = {"llama", "mistral", "qwen2", "qwen3", "gemma2"};
    size_t i;
    for (i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
        char src[1200], dst[1200], cmd[4096], out[8192], mpath[1300];
        char *man;
        snprintf(src, sizeof(src), "%s/%s.gguf", tmp, archs[i]);
        snprintf(dst, sizeof(dst), "%s/out-%s", tmp, archs[i]);
        gen(archs[i], "q4_0", src, 0);
        snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s' --group-size 32", bin(), src, dst);
        ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s: %s", archs[i], out);
        snprintf(mpath, sizeof(mpath), "%s/manifest.json", dst);
        man = slurp(mpath);
        ck_assert_msg(count(man, "\"exact\":\ttrue") == 14 && count(man, "\"exact\":\tfalse") == 0,
                      "%s: not all 14 linear layers exact", archs[i]);
        free(man);
    }
}
END_TEST

START_TEST(convert_f16_and_split)
{
    char src[1200], dst[1200], cmd[4096], out[8192];
    snprintf(src, sizeof(src), "%s/f16.gguf", tmp);
    snprintf(dst, sizeof(dst), "%s/out-f16", tmp);
    gen("qwen2", "f16", src, 0);
    snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s'", bin(), src, dst);
    ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);

    snprintf(src, sizeof(src), "%s/split", tmp);
    gen("llama", "q4_0", src, 3);
    snprintf(src, sizeof(src), "%s/split-00003-of-00003.gguf", tmp);
    snprintf(dst, sizeof(dst), "%s/out-split", tmp);
    snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s' --group-size 32", bin(), src, dst);
    ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s", out);
}
END_TEST

#ifdef QBT_GGUF_HAVE_QUANT
/* K-quants have no integer grid here: the writer requantizes from the
 * decoded floats (exact false) and still converts. */
START_TEST(convert_k_quants)
{
    static const char *const types[] = {"12" /* Q4_K */, "14" /* Q6_K */, "3" /* Q4_1 */};
    size_t i;
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        char src[1200], dst[1200], cmd[4096], out[8192], mpath[1300];
        char *man;
        snprintf(src, sizeof(src), "%s/k%s.gguf", tmp, types[i]);
        snprintf(dst, sizeof(dst), "%s/out-k%s", tmp, types[i]);
        gen("qwen2", types[i], src, 0);
        snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s'", bin(), src, dst);
        ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "type %s: %s", types[i], out);
        snprintf(mpath, sizeof(mpath), "%s/manifest.json", dst);
        man = slurp(mpath);
        ck_assert_int_eq(count(man, "\"exact\":\ttrue"), 0);
        free(man);
    }
}
END_TEST
#endif

START_TEST(malformed_exit_1)
{
    char src[1200], bad[1200], dst[1200], cmd[4096], out[8192];
    struct stat sb;
    snprintf(src, sizeof(src), "%s/ok.gguf", tmp);
    snprintf(bad, sizeof(bad), "%s/trunc.gguf", tmp);
    snprintf(dst, sizeof(dst), "%s/out-bad", tmp);
    gen("llama", "q4_0", src, 0);
    ck_assert_int_eq(stat(src, &sb), 0);
    qbt_copy_file(src, bad, (size_t)sb.st_size - 100);
    snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s'", bin(), bad, dst);
    ck_assert_int_eq(run(cmd, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "trunc.gguf") && strstr(out, "past the end"), "%s", out);
    ck_assert_int_ne(stat(dst, &sb), 0); /* nothing left behind */
    qbt_write_bytes(bad, "GGUF\143\0\0\0", 8); /* version 99 */
    snprintf(cmd, sizeof(cmd), "'%s' inspect '%s'", bin(), bad);
    ck_assert_int_eq(run(cmd, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "version 99"), "%s", out);
}
END_TEST

/* Bytes of every *.safetensors file of an hf-dense output, concatenated in
 * name order (the writer's file names are deterministic). */
static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static char *dense_bytes(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char *names[64], *all = NULL;
    size_t nn = 0, i, len = 0;
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)) && nn < 64)
        if (strstr(de->d_name, ".safetensors"))
            names[nn++] = strdup(de->d_name);
    closedir(d);
    qsort(names, nn, sizeof(names[0]), cmp_str);
    for (i = 0; i < nn; i++) {
        char path[2300];
        struct stat sb;
        FILE *f;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        ck_assert_int_eq(stat(path, &sb), 0);
        all = realloc(all, len + (size_t)sb.st_size);
        f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fread(all + len, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
        fclose(f);
        len += (size_t)sb.st_size;
        free(names[i]);
    }
    ck_assert_uint_gt(len, 0);
    *n = len;
    return all;
}

/* deepseek2: the split (attn_k_b/attn_v_b) and the attn_kv_b forms of the
 * same HF weights give byte-identical hf-dense f32 output; both convert to
 * sm86-w4a16 with every MLA linear, routed and shared expert in the
 * manifest, and verify passes. The V2-Lite shape (q_proj, softmax) too. */
START_TEST(convert_deepseek2)
{
    static const char *const forms[] = {"deepseek2", "deepseek2-kvb", "deepseek2-v2"};
    char src[1200], dst[1200], cmd[4096], out[8192], mpath[1300];
    char *dense[2], *man;
    size_t nd[2], i;
    for (i = 0; i < 3; i++) {
        snprintf(src, sizeof(src), "%s/%s.gguf", tmp, forms[i]);
        gen(forms[i], "f32", src, 0);
        if (i < 2) {
            snprintf(dst, sizeof(dst), "%s/dense-%s", tmp, forms[i]);
            snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32",
                     bin(), src, dst);
            ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s: %s", forms[i], out);
            dense[i] = dense_bytes(dst, &nd[i]);
        }
        snprintf(dst, sizeof(dst), "%s/w4-%s", tmp, forms[i]);
        snprintf(cmd, sizeof(cmd), "'%s' convert --source '%s' --output '%s'", bin(), src, dst);
        ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s: %s", forms[i], out);
        snprintf(mpath, sizeof(mpath), "%s/manifest.json", dst);
        man = slurp(mpath);
        ck_assert_msg(strstr(man, "\"layer_01.safetensors:self_attn.kv_b_proj\""), "%s: no kv_b_proj", forms[i]);
        ck_assert_msg(strstr(man, i < 2 ? "\"layer_01.safetensors:self_attn.q_b_proj\""
                                        : "\"layer_01.safetensors:self_attn.q_proj\""), "%s: no q", forms[i]);
        ck_assert(strstr(man, "\"layer_00.safetensors:mlp.down_proj\""));
        ck_assert(strstr(man, "\"layer_01.safetensors:mlp.experts.3.up_proj\""));
        ck_assert(strstr(man, "\"layer_01.safetensors:mlp.shared_experts.down_proj\""));
        free(man);
        snprintf(cmd, sizeof(cmd), "'%s' verify --source '%s' --converted '%s' --no-model-check", bin(), src, dst);
        ck_assert_msg(run(cmd, out, sizeof(out)) == 0, "%s: %s", forms[i], out);
    }
    ck_assert_uint_eq(nd[0], nd[1]);
    ck_assert(memcmp(dense[0], dense[1], nd[0]) == 0);
    free(dense[0]);
    free(dense[1]);
}
END_TEST

/* GGUF of tests/data/tokenizers/NAME (qb-gen-gguf-tok, pre `pre` or "-") at out. */
static void gen_tok(const char *name, const char *pre, const char *out)
{
    char cmd[4096];
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    ck_assert_ptr_nonnull(bd);
    snprintf(cmd, sizeof(cmd), "'%s/tests/bin/qb-gen-gguf-tok' '%s/%s' %s '%s'", bd, QB_TOKENIZER_DATA, name, pre,
             out);
    ck_assert_int_eq(run(cmd, NULL, 0), 0);
}

/* gemma-mini's rebuilt tokenizer.json through the host's encoder
 * (`forward --text-file --print-tokens`, what forward --text and verify
 * use), against ids worked out by hand from tests/data/tokenizers/
 * gemma-mini (ids: "hello" 330, "\u2581world" 336, "world" 335, "\u2581hello" 331,
 * "he" 326, "er" 340, letters a=283.., bytes <0xNN> = 26 + NN; merges by
 * their order: "h e", "l l", "he ll", "hell o", "\u2581 hello", "o r", ...; the
 * user-defined runs of spaces 14-16, newlines 11-13, tabs 17-18 matched
 * longest first from the left). llama.cpp gives the same ids (interop tier). */
START_TEST(gemma_mini_host_encoder)
{
    static const struct {
        const char *text, *ids;
    } cases[] = {
        {"hello world", "2,330,336"},
        {"hello  world", "2,330,14,335"},
        {" hello", "2,331"},
        {"the hello", "2,302,326,331"},
        {"hello   \n\n\n\nworld", "2,330,15,13,11,335"},
        {"     ", "2,16,282"},
        {"         ", "2,16,16,282"},
        {"a\tb\t\t\tc", "2,283,17,284,18,17,285"},
        {"<s>x</s><sub>", "2,21,306,22,23"},
        {"<unused10><unused1>", "2,10,9"},
        {"<start_of_turn>user\nhi<end_of_turn>\n", "2,6,303,301,340,11,290,291,7,11"},
        {"\xc3\xa9", "2,221,195"},
    };
    char src[1200], txt[1200], text[4096], want[8192];
    size_t i, len = 0, wl = 0;
    FILE *f;
    qbt_result r;
    snprintf(src, sizeof(src), "%s/mini.gguf", tmp);
    snprintf(txt, sizeof(txt), "%s/texts.nul", tmp);
    gen_tok("gemma-mini", "-", src);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = strlen(cases[i].text);
        memcpy(text + len, cases[i].text, n + 1); /* NUL-separated (forward --help) */
        len += n + (i + 1 < sizeof(cases) / sizeof(cases[0]));
        wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s\n", cases[i].ids);
    }
    f = fopen(txt, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
    {
        const char *argv[] = {"forward", "--model", src, "--text-file", txt, "--print-tokens", NULL};
        qbt_run(&r, argv);
    }
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, want);
    /* the rebuild's one warning, naming what the GGUF cannot tell */
    ck_assert_int_eq(qbt_count_lines(r.err, "quantbridge_rebuild_notes"), 1);
    qbt_result_free(&r);
}
END_TEST

/* A GGUF whose tokenizer the reader cannot rebuild (llama3's vocabulary with
 * pre type dbrx): inspect reports it and exits 0; convert refuses naming
 * both ways out, and each way out works, with the host's one warning only
 * where the output really gets no tokenizer.json; forward --text refuses,
 * forward --tokens runs; verify's model check says why it used fixed ids. */
START_TEST(tokenizer_refused_ways_out)
{
    char src[1200], out[1200], tokdir[1200], path[1400];
    cJSON *j;
    qbt_result r;
    snprintf(src, sizeof(src), "%s/bad.gguf", tmp);
    gen_tok("llama3", "dbrx", src);
    /* a tokenizer directory to hand over: gemma-mini's */
    snprintf(tokdir, sizeof(tokdir), "%s/gemma-mini", QB_TOKENIZER_DATA);
    {
        const char *argv[] = {"inspect", src, NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "inspect exit %d: %s", r.status, r.err);
        ck_assert_int_eq(qbt_count_lines(r.out, "tokenizer: refused: "), 1);
        ck_assert_msg(strstr(r.out, "\"dbrx\"") && strstr(r.out, "option tokenizer=skip") &&
                          strstr(r.out, "--tokenizer DIR") && strstr(r.out, "not rebuilt (refused)"),
                      "%s", r.out);
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"inspect", src, "--json", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        j = cJSON_Parse(r.out);
        ck_assert_ptr_nonnull(j);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "tokenizer_state")->valuestring, "refused");
        ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItemCaseSensitive(j, "tokenizer_note")->valuestring, "dbrx"));
        ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "tokenizer_dir"));
        cJSON_Delete(j);
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"inspect", src, "--option", "tokenizer=skip", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert_int_eq(qbt_count_lines(r.out, "tokenizer: skipped: option tokenizer=skip"), 1);
        qbt_result_free(&r);
    }
    snprintf(out, sizeof(out), "%s/refused", tmp);
    {
        const char *argv[] = {"convert", "--source", src, "--output", out, "--writer", "hf-dense", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "\"dbrx\"") && strstr(r.err, "option tokenizer=skip") &&
                          strstr(r.err, "or give the tokenizer files with --tokenizer DIR"),
                      "%s", r.err);
        ck_assert(!qbt_exists(out));
        qbt_result_free(&r);
    }
    snprintf(out, sizeof(out), "%s/skipped", tmp);
    {
        const char *argv[] = {"convert", "--source", src,           "--output", out,
                              "--writer", "hf-dense", "--option", "tokenizer=skip", NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_int_eq(qbt_count_lines(r.err, "the output gets no tokenizer.json"), 1);
        snprintf(path, sizeof(path), "%s/tokenizer.json", out);
        ck_assert(!qbt_exists(path));
        qbt_result_free(&r);
    }
    {
        /* verify: the model check falls back to fixed ids and says why */
        const char *argv[] = {"verify", "--source", src, "--converted", out, NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
        ck_assert_msg(strstr(r.out, "fixed token ids") && strstr(r.out, "the source's tokenizer was refused"), "%s",
                      r.out);
        qbt_result_free(&r);
    }
    for (int with_skip = 0; with_skip < 2; with_skip++) {
        const char *argv[] = {"convert", "--source", src, "--output", out, "--writer", "hf-dense", "--tokenizer",
                              tokdir, "--overwrite", with_skip ? "--option" : NULL, "tokenizer=skip", NULL};
        char *a, *b;
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        /* the files come from DIR: no refusal, no misleading warning */
        ck_assert_int_eq(qbt_count_lines(r.err, "tokenizer"), 0);
        snprintf(path, sizeof(path), "%s/tokenizer.json", out);
        a = slurp(path);
        snprintf(path, sizeof(path), "%s/tokenizer.json", tokdir);
        b = slurp(path);
        ck_assert_str_eq(a, b);
        free(a);
        free(b);
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"forward", "--model", src, "--text", "hi", "--print-tokens", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "\"dbrx\"") && strstr(r.err, "--tokenizer DIR"), "%s", r.err);
        qbt_result_free(&r);
    }
    snprintf(path, sizeof(path), "%s/logits.safetensors", tmp);
    {
        const char *argv[] = {"forward", "--model", src, "--tokens", "1,2", "--output", path, NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        qbt_result_free(&r);
    }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf_cli");
    TCase *tc = tcase_create("all");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, inspect_shows_arch_types_names);
    tcase_add_test(tc, inspect_shows_tokenizer);
    tcase_add_test(tc, gemma_mini_host_encoder);
    tcase_add_test(tc, tokenizer_refused_ways_out);
    tcase_add_test(tc, convert_q4_0_exact);
    tcase_add_test(tc, convert_f16_and_split);
    tcase_add_test(tc, malformed_exit_1);
    tcase_add_test(tc, convert_deepseek2);
#ifdef QBT_GGUF_HAVE_QUANT
    tcase_add_test(tc, convert_k_quants);
#endif
    suite_add_tcase(s, tc);
    return s;
}
