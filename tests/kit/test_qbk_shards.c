/*
 * The kit's shard cutting, names and index (sdk/kit/qbk_shards.h) against
 * the loaders' own rules written out here anew: mlx-lm's make_shards
 * (`if not shards or size + nbytes > cap: new shard`) for
 * QBK_SHARD_CUT_IF_TENSORS, and huggingface_hub's
 * split_state_dict_into_shards_factory (`if current_size + size > cap: new
 * shard`, tensors no larger than the cap) for QBK_SHARD_CUT_IF_BYTES, on
 * random sizes; the index laid out as Python's json.dump lays it out.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_shards.h"
#include "qbt_check_main.h"
#include "qbt_host.h"
#include "qbt_mem_sink.h"

#define N 64

/* make_shards: shard index of each item */
static uint32_t ref_mlx(const uint64_t *b, size_t n, uint64_t cap, uint32_t *of)
{
    uint32_t shards = 0;
    uint64_t size = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        if (shards == 0 || size + b[i] > cap) {
            shards++;
            size = 0;
        }
        of[i] = shards - 1;
        size += b[i];
    }
    return shards;
}

/* split_state_dict_into_shards_factory for tensors of at most cap bytes */
static uint32_t ref_hub(const uint64_t *b, size_t n, uint64_t cap, uint32_t *of)
{
    uint32_t done = 0;
    uint64_t size = 0;
    size_t i, in_cur = 0;
    for (i = 0; i < n; i++) {
        if (size + b[i] > cap) {
            done++;
            size = 0;
            in_cur = 0;
        }
        of[i] = done;
        size += b[i];
        in_cur++;
    }
    return done + (in_cur > 0);
}

static void same(const qbk_shards *s, const uint32_t *of, uint32_t n_ref, size_t n,
                 const uint64_t *b)
{
    size_t i;
    uint64_t t = 0;
    ck_assert_uint_eq(s->n, n_ref);
    ck_assert_uint_eq(s->first[0], 0);
    ck_assert_uint_eq(s->first[s->n], n);
    for (i = 0; i < n; i++) {
        uint32_t k = qbk_shards_of(s, i);
        ck_assert_uint_eq(k, of[i]);
        ck_assert(s->first[k] <= i && i < s->first[k + 1]);
        t += b[i];
    }
    ck_assert_uint_eq(s->total, t);
}

START_TEST(random_sizes_follow_both_rules)
{
    const qb_host *h = qbt_host();
    uint64_t b[N];
    uint32_t of[N];
    unsigned seed = 7;
    int round;
    for (round = 0; round < 2000; round++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % N), i;
        uint64_t cap = 1 + (uint64_t)(rand_r(&seed) % 100);
        qbk_shards s;
        uint32_t nr;
        /* mlx-lm: any size, zero-byte tensors included */
        for (i = 0; i < n; i++)
            b[i] = rand_r(&seed) % 4 == 0 ? 0 : (uint64_t)(rand_r(&seed) % (3 * cap + 1));
        nr = ref_mlx(b, n, cap, of);
        ck_assert_int_eq(qbk_shards_cut(h, "t", b, n, cap, QBK_SHARD_CUT_IF_TENSORS, &s), QB_OK);
        same(&s, of, nr, n, b);
        qbk_shards_free(&s);
        /* huggingface_hub: tensors within the cap */
        for (i = 0; i < n; i++)
            b[i] = rand_r(&seed) % 4 == 0 ? 0 : (uint64_t)(rand_r(&seed) % (cap + 1));
        nr = ref_hub(b, n, cap, of);
        ck_assert_int_eq(qbk_shards_cut(h, "t", b, n, cap, QBK_SHARD_CUT_IF_BYTES, &s), QB_OK);
        same(&s, of, nr, n, b);
        qbk_shards_free(&s);
    }
}
END_TEST

/* Where the rules part: a zero-byte first tensor, then one past the cap.
 * make_shards starts a new shard (its first holds a tensor); the bytes
 * rule keeps the open shard, which holds no byte yet. */
START_TEST(empty_leading_tensor)
{
    const qb_host *h = qbt_host();
    uint64_t b[3] = {0, 20, 1};
    uint32_t of[3];
    qbk_shards s;
    ck_assert_int_eq(qbk_shards_cut(h, "t", b, 3, 10, QBK_SHARD_CUT_IF_TENSORS, &s), QB_OK);
    same(&s, of, ref_mlx(b, 3, 10, of), 3, b);
    ck_assert_uint_eq(s.n, 3);
    qbk_shards_free(&s);
    ck_assert_int_eq(qbk_shards_cut(h, "t", b, 3, 10, QBK_SHARD_CUT_IF_BYTES, &s), QB_OK);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_uint_eq(s.first[1], 2);
    qbk_shards_free(&s);
    ck_assert_int_eq(qbk_shards_cut(h, "t", b, 0, 10, QBK_SHARD_CUT_IF_BYTES, &s), QB_OK);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_uint_eq(s.first[1], 0);
    qbk_shards_free(&s);
    ck_assert_int_eq(qbk_shards_cut(h, "t", b, 3, 0, QBK_SHARD_CUT_IF_BYTES, &s), QB_E_INVALID);
}
END_TEST

START_TEST(names_and_index_text)
{
    const qb_host *h = qbt_host();
    uint64_t b[3] = {8, 8, 4};
    const char *names[3] = {"b.weight", "a.scales", "a\"q"};
    const char *keys[2] = {"total_size", "total_parameters"};
    uint64_t vals[2] = {20, 99};
    uint32_t of[3] = {0, 1, 1};
    qbk_shard_index ix = {keys, vals, 2, 4, 0};
    qbt_mem_sink ms;
    qbt_mem_file *f;
    qbk_shards s;
    char nm[64];
    /* json.dump(..., indent=4): sorted map, no final newline */
    const char *want =
        "{\n    \"metadata\": {\n        \"total_size\": 20,\n        \"total_parameters\": 99\n"
        "    },\n    \"weight_map\": {\n"
        "        \"a\\\"q\": \"model-00002-of-00002.safetensors\",\n"
        "        \"a.scales\": \"model-00002-of-00002.safetensors\",\n"
        "        \"b.weight\": \"model-00001-of-00002.safetensors\"\n    }\n}";
    ck_assert_int_eq(qbk_shards_cut(h, "t", b, 3, 12, QBK_SHARD_CUT_IF_TENSORS, &s), QB_OK);
    ck_assert_uint_eq(s.n, 2);
    qbk_shards_name(&s, 0, nm, sizeof nm);
    ck_assert_str_eq(nm, "model-00001-of-00002.safetensors");
    qbt_mem_sink_init(&ms);
    ck_assert_int_eq(qbk_shards_write_index(h, &ms.sink, &s, names, of, 3, &ix), QB_OK);
    f = qbt_mem_sink_find(&ms, "model.safetensors.index.json");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(f->len, strlen(want));
    ck_assert(memcmp(f->data, want, f->len) == 0);
    qbt_mem_sink_free(&ms);
    qbk_shards_free(&s);
    /* one shard: model.safetensors; indent 2 with a final newline */
    ck_assert_int_eq(qbk_shards_cut(h, "t", b, 3, 100, QBK_SHARD_CUT_IF_BYTES, &s), QB_OK);
    qbk_shards_name(&s, 0, nm, sizeof nm);
    ck_assert_str_eq(nm, "model.safetensors");
    ix.n_meta = 1;
    ix.indent = 2;
    ix.final_newline = 1;
    of[1] = of[2] = 0;
    qbt_mem_sink_init(&ms);
    ck_assert_int_eq(qbk_shards_write_index(h, &ms.sink, &s, names, of, 1, &ix), QB_OK);
    f = qbt_mem_sink_find(&ms, "model.safetensors.index.json");
    ck_assert_ptr_nonnull(f);
    want = "{\n  \"metadata\": {\n    \"total_size\": 20\n  },\n  \"weight_map\": {\n"
           "    \"b.weight\": \"model.safetensors\"\n  }\n}\n";
    ck_assert_uint_eq(f->len, strlen(want));
    ck_assert(memcmp(f->data, want, f->len) == 0);
    qbt_mem_sink_free(&ms);
    qbk_shards_free(&s);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("qbk_shards");
    TCase *tc = tcase_create("shards");
    tcase_add_test(tc, random_sizes_follow_both_rules);
    tcase_add_test(tc, empty_leading_tensor);
    tcase_add_test(tc, names_and_index_text);
    suite_add_tcase(s, tc);
    return s;
}
