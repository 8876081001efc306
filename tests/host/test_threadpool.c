/* threadpool.c: every item runs exactly once, the first failure stops new
 * items and its message reaches the caller, nested calls run serially,
 * several rounds reuse the pool. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "qbh.h"
#include "qbt_check_main.h"

#define N 10000

typedef struct counts {
    atomic_int hit[N];
    atomic_int nested_outer;
    atomic_size_t started;
    size_t fail_at;
} counts;

static qb_status count_item(void *arg, size_t i)
{
    counts *c = arg;
    atomic_fetch_add(&c->hit[i], 1);
    return QB_OK;
}

START_TEST(each_item_once)
{
    counts *c = calloc(1, sizeof *c);
    int round;
    size_t i;
    ck_assert_int_eq(qbh_pool_start(4), QB_OK);
    ck_assert_uint_eq(qbh_pool_threads(), 4);
    for (round = 1; round <= 20; round++) {
        ck_assert_int_eq(qbh_parallel_for(N, count_item, c), QB_OK);
        for (i = 0; i < N; i++)
            ck_assert_int_eq(atomic_load(&c->hit[i]), round);
    }
    ck_assert_int_eq(qbh_parallel_for(0, count_item, c), QB_OK);
    qbh_pool_stop();
    free(c);
}
END_TEST

static qb_status fail_item(void *arg, size_t i)
{
    counts *c = arg;
    atomic_fetch_add(&c->started, 1);
    if (i == c->fail_at)
        return qbh_error_set(QB_E_FORMAT, "item %zu is broken", i);
    return QB_OK;
}

START_TEST(first_failure_wins)
{
    counts *c = calloc(1, sizeof *c);
    ck_assert_int_eq(qbh_pool_start(4), QB_OK);
    c->fail_at = 10;
    qbh_error_clear();
    ck_assert_int_eq(qbh_parallel_for(N, fail_item, c), QB_E_FORMAT);
    ck_assert_str_eq(qbh_error_message(), "item 10 is broken");
    /* No new item starts after the failure: far fewer than N ran. */
    ck_assert_uint_lt(atomic_load(&c->started), N);
    qbh_pool_stop();
    free(c);
}
END_TEST

static qb_status inner_item(void *arg, size_t i)
{
    (void)i;
    atomic_fetch_add((atomic_int *)arg, 1);
    return QB_OK;
}

static qb_status outer_item(void *arg, size_t i)
{
    counts *c = arg;
    atomic_int inner = 0;
    qb_status rc = qbh_parallel_for(100, inner_item, &inner);
    (void)i;
    if (rc || atomic_load(&inner) != 100)
        return qbh_error_set(QB_E_INTERNAL, "nested run incomplete");
    atomic_fetch_add(&c->nested_outer, 1);
    return QB_OK;
}

START_TEST(nested_runs_serially)
{
    counts *c = calloc(1, sizeof *c);
    ck_assert_int_eq(qbh_pool_start(3), QB_OK);
    ck_assert_int_eq(qbh_parallel_for(50, outer_item, c), QB_OK);
    ck_assert_int_eq(atomic_load(&c->nested_outer), 50);
    qbh_pool_stop();
    free(c);
}
END_TEST

START_TEST(single_thread_serial)
{
    counts *c = calloc(1, sizeof *c);
    size_t i;
    ck_assert_int_eq(qbh_pool_start(1), QB_OK);
    ck_assert_uint_eq(qbh_pool_threads(), 1);
    ck_assert_int_eq(qbh_parallel_for(N, count_item, c), QB_OK);
    for (i = 0; i < N; i++)
        ck_assert_int_eq(atomic_load(&c->hit[i]), 1);
    c->fail_at = 3;
    ck_assert_int_eq(qbh_parallel_for(N, fail_item, c), QB_E_FORMAT);
    ck_assert_uint_eq(atomic_load(&c->started), 4);
    qbh_pool_stop();
    free(c);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("threadpool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, each_item_once);
    tcase_add_test(tc, first_failure_wins);
    tcase_add_test(tc, nested_runs_serially);
    tcase_add_test(tc, single_thread_serial);
    suite_add_tcase(s, tc);
    return s;
}
