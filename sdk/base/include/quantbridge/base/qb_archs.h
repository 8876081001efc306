/*
 * quantbridge reader base library — the model families quantbridge knows,
 * in one table (base library 1.1).
 *
 * One row per Hugging Face `model_type` of a decoder family: the class
 * transformers names it by, and which of quantbridge's components take it.
 * The host's model library (its CPU forward pass and verify's model check)
 * accepts exactly the rows flagged QB_ARCH_FORWARD; the sm86-w4a16 writer's
 * layout table holds exactly the rows flagged QB_ARCH_W4A16 (its unit test
 * checks so); `quantbridge plugins` prints the table with the writers that
 * declare each family; docs/architecture.md, "Model families", lists the
 * same rows (tests/docs/check_families.py compares them). Adding a family
 * is adding a row here, then its layout and forward code. A format's own
 * name tables (the GGUF reader's llama.cpp architecture names, the mlx
 * writer's) map onto these rows and stay with the format.
 *
 * THREADING: pure functions over static data; any thread.
 */
#ifndef QUANTBRIDGE_BASE_QB_ARCHS_H
#define QUANTBRIDGE_BASE_QB_ARCHS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The host's CPU forward pass (quantbridge forward, verify's model check)
 * runs the family. */
#define QB_ARCH_FORWARD 1u
/* The native W4A16 format (docs/w4a16-format.md) has a layout for it. */
#define QB_ARCH_W4A16 2u

/* One family. */
typedef struct qb_arch_entry {
    const char *model_type; /* config.json "model_type" */
    const char *hf_class;   /* transformers' causal-LM class of it */
    uint32_t flags;         /* QB_ARCH_* */
} qb_arch_entry;

/* The table, in a fixed order; *n receives its length. Never NULL. Pure. */
const qb_arch_entry *qb_arch_table(size_t *n);

/* The row of `model_type` (exact), or NULL (also for NULL). Pure. */
const qb_arch_entry *qb_arch_find(const char *model_type);

/* Writes the model_types of the rows with every flag of `flags` (0: all)
 * into buf as "a, b, c", cut to len - 1 bytes and NUL-terminated (len
 * >= 1). Returns the length the whole list needs, without the NUL. Pure. */
size_t qb_arch_list(uint32_t flags, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_BASE_QB_ARCHS_H */
