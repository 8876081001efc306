/*
 * The byte-level BPE tokenizer.json of gen_tokenizer.h, built with cJSON.
 */
#include "gen_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

/* GPT-2's bytes_to_unicode as code points: the printable bytes stand for
 * themselves, the others for 256, 257, ... in order. */
static unsigned byte_cp(unsigned b)
{
    unsigned n = 0, c;
    for (c = 0; c < b; c++)
        n += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? b : 256 + n;
}

int qbt_tok_write_bytelevel(const char *dir)
{
    cJSON *root = cJSON_CreateObject(), *model, *vocab, *merges, *added, *a, *post, *single, *it,
          *sp, *bos, *pre;
    char *text, path[4096], key[8];
    FILE *f;
    int rc = 0;
    unsigned b;
    int ids[1] = {QBT_TOK_BOS};

    added = cJSON_AddArrayToObject(root, "added_tokens");
    a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", QBT_TOK_BOS);
    cJSON_AddStringToObject(a, "content", "<|bos|>");
    cJSON_AddBoolToObject(a, "single_word", 0);
    cJSON_AddBoolToObject(a, "lstrip", 0);
    cJSON_AddBoolToObject(a, "rstrip", 0);
    cJSON_AddBoolToObject(a, "normalized", 0);
    cJSON_AddBoolToObject(a, "special", 1);
    cJSON_AddItemToArray(added, a);
    cJSON_AddNullToObject(root, "normalizer");
    pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddBoolToObject(pre, "add_prefix_space", 0);
    cJSON_AddBoolToObject(pre, "trim_offsets", 1);
    cJSON_AddBoolToObject(pre, "use_regex", 1);
    post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "TemplateProcessing");
    single = cJSON_AddArrayToObject(post, "single");
    it = cJSON_CreateObject();
    sp = cJSON_AddObjectToObject(it, "SpecialToken");
    cJSON_AddStringToObject(sp, "id", "<|bos|>");
    cJSON_AddNumberToObject(sp, "type_id", 0);
    cJSON_AddItemToArray(single, it);
    it = cJSON_CreateObject();
    sp = cJSON_AddObjectToObject(it, "Sequence");
    cJSON_AddStringToObject(sp, "id", "A");
    cJSON_AddNumberToObject(sp, "type_id", 0);
    cJSON_AddItemToArray(single, it);
    cJSON_AddArrayToObject(post, "pair");
    bos = cJSON_AddObjectToObject(cJSON_AddObjectToObject(post, "special_tokens"), "<|bos|>");
    cJSON_AddStringToObject(bos, "id", "<|bos|>");
    cJSON_AddItemToObject(bos, "ids", cJSON_CreateIntArray(ids, 1));
    {
        const char *t[] = {"<|bos|>"};
        cJSON_AddItemToObject(bos, "tokens", cJSON_CreateStringArray(t, 1));
    }
    cJSON_AddNullToObject(root, "decoder");
    model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    vocab = cJSON_AddObjectToObject(model, "vocab");
    for (b = 0; b < 256; b++) {
        unsigned cp = byte_cp(b);
        /* UTF-8 of cp (< 0x800) */
        if (cp < 0x80) {
            key[0] = (char)cp;
            key[1] = 0;
        } else {
            key[0] = (char)(0xC0 | (cp >> 6));
            key[1] = (char)(0x80 | (cp & 0x3F));
            key[2] = 0;
        }
        cJSON_AddNumberToObject(vocab, key, b);
    }
    cJSON_AddNumberToObject(vocab, "\xc4\xa0t", 256); /* "Ġt" */
    cJSON_AddNumberToObject(vocab, "he", 257);
    cJSON_AddNumberToObject(vocab, "\xc4\xa0the", 258);
    merges = cJSON_AddArrayToObject(model, "merges");
    cJSON_AddItemToArray(merges, cJSON_CreateString("\xc4\xa0 t"));
    cJSON_AddItemToArray(merges, cJSON_CreateString("h e"));
    cJSON_AddItemToArray(merges, cJSON_CreateString("\xc4\xa0t he"));
    text = cJSON_PrintUnformatted(root);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    f = text ? fopen(path, "wb") : NULL;
    if (!f || fputs(text, f) == EOF) {
        fprintf(stderr, "qbt_tok_write_bytelevel: cannot write %s\n", path);
        rc = -1;
    }
    if (f && fclose(f) != 0)
        rc = -1;
    free(text);
    cJSON_Delete(root);
    return rc;
}
