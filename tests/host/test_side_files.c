/* side_files.c: the side files the host writes for a writer declaring
 * QB_WRITER_SIDE_FILES_HOST -- the tokenizer list byte for byte, the chat
 * template merged into tokenizer_config.json, generation_config.json kept
 * or derived, and a name the writer already created refused. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"

typedef struct side_fx {
    char *tok, *out;
    qbh_sink *sink;
    qb_model_info mi;
} side_fx;

static void put(const char *dir, const char *name, const char *text)
{
    char *p = qbt_path(dir, name);
    qbt_write_file(p, text);
    free(p);
}

static int has(const char *dir, const char *name)
{
    char *p = qbt_path(dir, name);
    int yes = qbt_exists(p);
    free(p);
    return yes;
}

static char *get(const char *dir, const char *name)
{
    char *p = qbt_path(dir, name), *t = qbt_read_file(p, NULL);
    free(p);
    return t;
}

static void fx_init(side_fx *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->tok = qbt_mkdtemp("side-tok");
    fx->out = qbt_mkdtemp("side-out");
    put(fx->tok, "tokenizer.json", "{\"v\": 1}\n");
    put(fx->tok, "tokenizer_config.json", "{\"bos_token\": \"<s>\", \"chat_template\": \"old\"}");
    put(fx->tok, "chat_template.jinja", "{{ old }}");
    put(fx->tok, "spiece.model", "\x01\x02");
    put(fx->tok, "config.json", "{\"not\": \"copied\"}");
    ck_assert_int_eq(qbh_sink_open(fx->out, &fx->sink), QB_OK);
    fx->mi.struct_size = sizeof fx->mi;
    fx->mi.architecture = "llama";
    fx->mi.config_json = "{\"model_type\": \"llama\", \"bos_token_id\": 1, \"eos_token_id\": [2, 3],"
                         " \"pad_token_id\": null}";
    fx->mi.tokenizer_dir = fx->tok;
}

static void fx_free(side_fx *fx)
{
    qbh_sink_free(fx->sink);
    qbt_rmtree(fx->tok);
    qbt_rmtree(fx->out);
    free(fx->tok);
    free(fx->out);
}

START_TEST(tokenizer_files_copied_and_generation_derived)
{
    side_fx fx;
    char *t;
    cJSON *g;
    fx_init(&fx);
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_OK);
    ck_assert_uint_eq(qbh_sink_open_files(fx.sink), 0);
    /* 4 tokenizer files + generation_config.json; config.json is not one */
    ck_assert_uint_eq(qbh_sink_closed_files(fx.sink), 5);
    t = get(fx.out, "tokenizer_config.json");
    ck_assert_str_eq(t, "{\"bos_token\": \"<s>\", \"chat_template\": \"old\"}");
    free(t);
    t = get(fx.out, "chat_template.jinja");
    ck_assert_str_eq(t, "{{ old }}");
    free(t);
    t = get(fx.out, "spiece.model");
    ck_assert_str_eq(t, "\x01\x02");
    free(t);
    ck_assert(!has(fx.out, "config.json"));
    t = get(fx.out, "generation_config.json");
    g = cJSON_Parse(t);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(g, "_from_model_config")));
    ck_assert_int_eq(cJSON_GetObjectItem(g, "bos_token_id")->valueint, 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(g, "eos_token_id")), 2);
    ck_assert_ptr_null(cJSON_GetObjectItem(g, "pad_token_id"));
    cJSON_Delete(g);
    free(t);
    fx_free(&fx);
}
END_TEST

START_TEST(chat_template_merged)
{
    side_fx fx;
    char *t;
    cJSON *c;
    fx_init(&fx);
    fx.mi.chat_template = "{% for m in messages %}{{ m }}{% endfor %}";
    fx.mi.generation_config_json = "{\"temperature\": 0.7}";
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_OK);
    t = get(fx.out, "tokenizer_config.json");
    c = cJSON_Parse(t);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "chat_template")->valuestring, fx.mi.chat_template);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "bos_token")->valuestring, "<s>");
    cJSON_Delete(c);
    free(t);
    /* a template file beside it would override the source's on load */
    ck_assert(!has(fx.out, "chat_template.jinja"));
    /* The source's text plus the newline save_pretrained ends its JSON
     * files with: the built-in writers always wrote it so, and all share
     * one implementation now (qbk_hf_write_tokenizer_files). */
    t = get(fx.out, "generation_config.json");
    ck_assert_str_eq(t, "{\"temperature\": 0.7}\n");
    free(t);
    fx_free(&fx);

    /* No tokenizer directory: tokenizer_config.json made for the template. */
    fx_init(&fx);
    fx.mi.tokenizer_dir = NULL;
    fx.mi.chat_template = "T";
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_OK);
    ck_assert_uint_eq(qbh_sink_closed_files(fx.sink), 2);
    t = get(fx.out, "tokenizer_config.json");
    c = cJSON_Parse(t);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "chat_template")->valuestring, "T");
    cJSON_Delete(c);
    free(t);
    fx_free(&fx);
}
END_TEST

START_TEST(name_the_writer_created_is_refused)
{
    side_fx fx;
    const qb_sink *t;
    qb_sink_file *f;
    fx_init(&fx);
    t = qbh_sink_table(fx.sink);
    ck_assert_int_eq(t->create(t->handle, "spiece.model", &f), QB_OK);
    ck_assert_int_eq(t->close(f, NULL, NULL), QB_OK);
    ck_assert(qbh_sink_has_file(fx.sink, "spiece.model"));
    ck_assert(!qbh_sink_has_file(fx.sink, "tokenizer.json"));
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "writer vw created spiece.model itself but "
                                                      "declares QB_WRITER_SIDE_FILES_HOST"));
    ck_assert_uint_eq(qbh_sink_open_files(fx.sink), 0);
    fx_free(&fx);
}
END_TEST

START_TEST(bad_sources_named)
{
    side_fx fx;
    fx_init(&fx);
    fx.mi.generation_config_json = "[1]";
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "generation_config.json of the source"));
    fx_free(&fx);

    fx_init(&fx);
    put(fx.tok, "tokenizer_config.json", "[\"not an object\"]");
    fx.mi.chat_template = "T";
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "tokenizer_config.json: not a JSON object"));
    fx_free(&fx);

    /* A directory where a tokenizer file should be. */
    fx_init(&fx);
    {
        char *p = qbt_path(fx.tok, "vocab.txt");
        qbt_mkdir_p(p);
        free(p);
    }
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_E_IO);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "vocab.txt: not a regular file"));
    fx_free(&fx);

    /* No config to derive from, no tokenizer: nothing written. */
    fx_init(&fx);
    fx.mi.tokenizer_dir = NULL;
    fx.mi.config_json = NULL;
    ck_assert_int_eq(qbh_side_files_write(fx.sink, &fx.mi, "vw"), QB_OK);
    ck_assert_uint_eq(qbh_sink_closed_files(fx.sink), 0);
    fx_free(&fx);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("side-files");
    TCase *tc = tcase_create("side-files");
    tcase_add_test(tc, tokenizer_files_copied_and_generation_derived);
    tcase_add_test(tc, chat_template_merged);
    tcase_add_test(tc, name_the_writer_created_is_refused);
    tcase_add_test(tc, bad_sources_named);
    suite_add_tcase(s, tc);
    return s;
}
