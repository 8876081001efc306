/*
 * Helpers of the verify tests (see vt_util.h).
 */
#define _XOPEN_SOURCE 700
#include "vt_util.h"

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "qbh.h"
#include "qbt_args.h"
#include "qbt_fs.h"
#include "qbt_run.h"

char *vt_tmpdir(const char *tag)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    char *p = malloc(4096);
    ck_assert_ptr_nonnull(p);
    if (!base || !*base)
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(p, 4096, "%s/verify-%s-XXXXXX", base, tag);
    ck_assert_msg(mkdtemp(p) != NULL, "mkdtemp %s", p);
    return p;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void vt_rmtree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *vt_path(const char *dir, const char *name)
{
    static char b[8][4096];
    static int k;
    char *p = b[k++ & 7];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

void vt_copy_dir(const char *from, const char *to)
{
    qbt_copy_dir(from, to);
}

char *vt_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b;
    long n;
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

void vt_spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

int vt_run(const char *args, char **out, char **err)
{
    char **av = qbt_args_split(args);
    qbt_result r;
    int st;
    qbt_run(&r, (const char *const *)av);
    qbt_args_free(av);
    st = r.status;
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    if (err) {
        *err = r.err;
        r.err = NULL;
    }
    qbt_result_free(&r);
    return st;
}

static cJSON *st_header(const char *buf, size_t len, uint64_t *hlen)
{
    cJSON *h;
    ck_assert_uint_ge(len, 8);
    memcpy(hlen, buf, 8);
    ck_assert_uint_le(*hlen, len - 8);
    h = cJSON_ParseWithLength(buf + 8, (size_t)*hlen);
    ck_assert_ptr_nonnull(h);
    return h;
}

void vt_st_locate(const char *file, const char *name, size_t *off, size_t *len)
{
    size_t n;
    uint64_t hl;
    char *b = vt_slurp(file, &n);
    cJSON *h = st_header(b, n, &hl), *t, *o;
    t = cJSON_GetObjectItemCaseSensitive(h, name);
    ck_assert_msg(t != NULL, "%s: no tensor %s", file, name);
    o = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    ck_assert(cJSON_GetArraySize(o) == 2);
    *off = 8 + (size_t)hl + (size_t)cJSON_GetArrayItem(o, 0)->valuedouble;
    *len = (size_t)(cJSON_GetArrayItem(o, 1)->valuedouble - cJSON_GetArrayItem(o, 0)->valuedouble);
    cJSON_Delete(h);
    free(b);
}

void vt_st_drop(const char *file, const char *name)
{
    size_t n, dl = 0, hj_len, pad;
    uint64_t hl, nhl;
    char *b = vt_slurp(file, &n), *data, *hj, *outb;
    cJSON *h = st_header(b, n, &hl), *it;
    int found = 0;
    data = malloc(n);
    ck_assert_ptr_nonnull(data);
    cJSON_DeleteItemFromObjectCaseSensitive(h, name) ;
    for (it = h->child; it; it = it->next) {
        cJSON *o;
        size_t s, e;
        if (strcmp(it->string, "__metadata__") == 0)
            continue;
        o = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
        s = (size_t)cJSON_GetArrayItem(o, 0)->valuedouble;
        e = (size_t)cJSON_GetArrayItem(o, 1)->valuedouble;
        memcpy(data + dl, b + 8 + hl + s, e - s);
        cJSON_SetNumberValue(cJSON_GetArrayItem(o, 0), (double)dl);
        cJSON_SetNumberValue(cJSON_GetArrayItem(o, 1), (double)(dl + e - s));
        dl += e - s;
    }
    found = dl < n - 8 - hl;
    ck_assert_msg(found, "%s: %s was not there", file, name);
    hj = cJSON_PrintUnformatted(h);
    hj_len = strlen(hj);
    pad = (8 - hj_len % 8) % 8;
    nhl = hj_len + pad;
    outb = malloc(8 + nhl + dl);
    ck_assert_ptr_nonnull(outb);
    memcpy(outb, &nhl, 8);
    memcpy(outb + 8, hj, hj_len);
    memset(outb + 8 + hj_len, ' ', pad);
    memcpy(outb + 8 + nhl, data, dl);
    vt_spit(file, outb, 8 + nhl + dl);
    free(outb);
    cJSON_free(hj);
    cJSON_Delete(h);
    free(data);
    free(b);
}

void vt_manifest_reseal(const char *dir, const char *file_name)
{
    char *m = vt_slurp(vt_path(dir, "manifest.json"), NULL), *text, hex[65];
    size_t n;
    char *b = vt_slurp(vt_path(dir, file_name), &n);
    cJSON *j = cJSON_Parse(m), *files, *f;
    qbk_sha256 c;
    uint8_t d[32];
    int done = 0;
    ck_assert_ptr_nonnull(j);
    qbk_sha256_init(&c);
    qbk_sha256_update(&c, b, n);
    qbk_sha256_final(&c, d);
    qbk_sha256_hex(d, hex);
    files = cJSON_GetObjectItemCaseSensitive(j, "files");
    cJSON_ArrayForEach(f, files)
    {
        cJSON *nm = cJSON_GetObjectItemCaseSensitive(f, "name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, file_name) == 0) {
            cJSON_ReplaceItemInObjectCaseSensitive(f, "sha256", cJSON_CreateString(hex));
            cJSON_ReplaceItemInObjectCaseSensitive(f, "bytes", cJSON_CreateNumber((double)n));
            done = 1;
        }
    }
    ck_assert_msg(done, "manifest lists no %s", file_name);
    text = cJSON_Print(j);
    vt_spit(vt_path(dir, "manifest.json"), text, strlen(text));
    cJSON_free(text);
    cJSON_Delete(j);
    free(b);
    free(m);
}
