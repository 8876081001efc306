/*
 * Tests: a small in-process qb_host for unit tests of the safetensors
 * parser and of readers whose sources are compiled into the test.
 * set_error keeps the last message (per thread) for assertions.
 */
#ifndef QBT_FAKE_HOST_H
#define QBT_FAKE_HOST_H

#include <quantbridge/qb_host.h>

/* The fake host: a static table, safetensors = qbk_safetensors_api(),
 * parallel_for runs serially. Thread-safe as the real one promises. */
const qb_host *qbt_fake_host(void);

/* Last message set through set_error on this thread ("" when none) and its code. */
const char *qbt_fake_last_error(void);
qb_status qbt_fake_last_code(void);
void qbt_fake_clear_error(void);

/* qbt_tmpdir / qbt_rmtree, which the reader tests take from here, live in
 * tests/support (qbt_support). */
#include "qbt_fs.h"

#endif
