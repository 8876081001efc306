/*
 * The kit's multimodal wrapper reading (sdk/kit/qbk_mm.h): text_config's
 * text taken byte for byte from the wrapper's config (strings holding
 * braces, quotes and commas, nested objects, numbers as written), the
 * wrapper's tie_word_embeddings over the text model's, and the tensor
 * names of the three published layouts.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_json.h"
#include "qbk_mm.h"
#include "qbt_check_main.h"
#include "qbt_host.h"

static const char *text_config_of(const char *cfg_text, char **out)
{
    cJSON *cfg = NULL;
    qbk_json_fail f;
    ck_assert_int_eq(qbk_json_parse_text(cfg_text, strlen(cfg_text), NULL, &cfg, &f), QB_OK);
    ck_assert_int_eq(qbk_mm_is_wrapper(cfg), 1);
    ck_assert_int_eq(qbk_mm_text_config(qbt_host(), "config.json", cfg_text, cfg, out), QB_OK);
    cJSON_Delete(cfg);
    return *out;
}

START_TEST(text_config_byte_for_byte)
{
    /* members before it hold "text_config" inside strings and objects */
    const char *cfg = "{\"a\": \"text_config\\\"}{,\", \"b\": {\"text_config\": [1, {\"x\": 2}]},\n"
                      " \"text_config\" :  {\"model_type\": \"gemma4_text\", \"rope\": 1.0,"
                      " \"s\": \"}\\\\\", \"n\": {\"k\": [0.0, \"]\"]}},"
                      " \"vision_config\": {\"model_type\": \"v\"}}";
    char *out = NULL;
    text_config_of(cfg, &out);
    ck_assert_str_eq(out, "{\"model_type\": \"gemma4_text\", \"rope\": 1.0, \"s\": \"}\\\\\", "
                          "\"n\": {\"k\": [0.0, \"]\"]}}");
    qbk_free(out);
}
END_TEST

START_TEST(wrapper_ties)
{
    const char *cfg = "{\"text_config\": {\"model_type\": \"llama4_text\", "
                      "\"tie_word_embeddings\": true, \"rms_norm_eps\": 1e-05}, "
                      "\"tie_word_embeddings\": false, \"model_type\": \"llama4\"}";
    char *out = NULL;
    cJSON *t = NULL;
    qbk_json_fail f;
    text_config_of(cfg, &out);
    ck_assert_int_eq(qbk_json_parse_text(out, strlen(out), NULL, &t, &f), QB_OK);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(t, "tie_word_embeddings")));
    ck_assert_ptr_nonnull(strstr(out, "1e-05")); /* every other member as written */
    cJSON_Delete(t);
    qbk_free(out);
}
END_TEST

START_TEST(not_a_wrapper)
{
    cJSON *c = cJSON_Parse("{\"model_type\": \"llama\", \"text_config\": {\"x\": 1}}");
    ck_assert_int_eq(qbk_mm_is_wrapper(c), 0); /* no model_type in text_config */
    cJSON_Delete(c);
    c = cJSON_Parse("{\"model_type\": \"llama\"}");
    ck_assert_int_eq(qbk_mm_is_wrapper(c), 0);
    cJSON_Delete(c);
}
END_TEST

START_TEST(names)
{
    static const char *const c[][2] = {
        {"model.language_model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight"},
        {"language_model.model.embed_tokens.weight", "model.embed_tokens.weight"},
        {"language_model.lm_head.weight", "lm_head.weight"},
        {"lm_head.weight", "lm_head.weight"},
        {"mtp.fc.weight", "mtp.fc.weight"},
        {"model.vision_tower.encoder.layers.0.mlp.up_proj.weight", NULL},
        {"model.visual.blocks.0.attn.qkv.weight", NULL},
        {"vision_model.class_embedding", NULL},
        {"multi_modal_projector.linear_1.weight", NULL},
        {"model.embed_vision.embedding_projection.weight", NULL},
    };
    char buf[128];
    size_t i;
    for (i = 0; i < sizeof c / sizeof c[0]; i++) {
        int k = qbk_mm_text_name(c[i][0], buf, sizeof buf);
        ck_assert_int_eq(k, c[i][1] != NULL);
        if (k)
            ck_assert_str_eq(buf, c[i][1]);
    }
    ck_assert_int_eq(qbk_mm_text_name("model.language_model.norm.weight", buf, 8), -1);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("qbk_mm");
    TCase *tc = tcase_create("mm");
    tcase_add_test(tc, text_config_byte_for_byte);
    tcase_add_test(tc, wrapper_ties);
    tcase_add_test(tc, not_a_wrapper);
    tcase_add_test(tc, names);
    suite_add_tcase(s, tc);
    return s;
}
