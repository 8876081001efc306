/* A minimal qb_host for unit tests of the gguf reader internals. */
#ifndef GGUF_TEST_FAKE_HOST_H
#define GGUF_TEST_FAKE_HOST_H

#include <quantbridge/qb_host.h>

/* The host table (set_error keeps the last message and code). */
const qb_host *fake_host(void);
const char *fake_last_error(void);
qb_status fake_last_code(void);
/* A fresh directory under QB_TEST_TMPDIR (or /tmp) for this test. */
const char *fake_tmpdir(const char *tag);

#endif
