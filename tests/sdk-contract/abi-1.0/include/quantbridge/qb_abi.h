/*
 * quantbridge SDK — ABI basics: version numbers, export macro, struct growth
 * rule and status codes.
 *
 * STABILITY: stable. Everything in sdk/include/quantbridge is a binary
 * contract with plugins that ship as binaries. Rules that keep it:
 *   - every struct crossing the boundary starts with `uint32_t struct_size`,
 *     set by whoever fills the struct to sizeof() as *it* was compiled;
 *   - structs grow only by appending fields; a reader of a struct checks
 *     QB_HAS_FIELD() before touching a field added after ABI 1.0;
 *   - versioned structs are never embedded by value in arrays or other
 *     public structs (pointers only), so each can grow on its own;
 *   - enum and status values are never renumbered or reused; an unknown
 *     value is rejected with QB_E_UNSUPPORTED, never guessed at.
 *
 * Self-contained C99; needs only <stdint.h> and <stddef.h>.
 */
#ifndef QUANTBRIDGE_QB_ABI_H
#define QUANTBRIDGE_QB_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version implemented by these headers. A major bump renames the entry
 * symbol (qb_plugin_entry_v<MAJOR>); a minor bump only appends. */
#define QB_ABI_MAJOR 1
#define QB_ABI_MINOR 0
#define QB_MAKE_ABI(maj, min) ((((uint32_t)(maj)) << 16) | (uint32_t)(min))
#define QB_ABI_GET_MAJOR(v) (((uint32_t)(v)) >> 16)
#define QB_ABI_GET_MINOR(v) (((uint32_t)(v)) & 0xffffu)
#define QB_ABI_CURRENT QB_MAKE_ABI(QB_ABI_MAJOR, QB_ABI_MINOR)

#if defined(_WIN32)
#define QB_EXPORT __declspec(dllexport)
#else
#define QB_EXPORT __attribute__((visibility("default")))
#endif

/* True when field F of struct type T lies inside the struct_size that the
 * filler of *p declared. Use before reading any field added after 1.0. */
#define QB_HAS_FIELD(p, T, F) \
    ((p)->struct_size >= offsetof(T, F) + sizeof(((const T *)0)->F))

/* Status codes. 0 is success; failures are negative and never reused.
 * A host maps a negative code it does not know to QB_E_INTERNAL. */
typedef int32_t qb_status;
#define QB_OK 0
#define QB_E_NOMEM (-1)        /* allocation failed */
#define QB_E_INVALID (-2)      /* bad argument or option value */
#define QB_E_UNSUPPORTED (-3)  /* well-formed request this plugin cannot do */
#define QB_E_IO (-4)           /* read/write/mmap failure of the OS */
#define QB_E_FORMAT (-5)       /* input corrupt or not what it claims to be */
#define QB_E_ABI (-6)          /* version negotiation failed */
#define QB_E_CANCELLED (-7)    /* host asked to stop (signal, user) */
#define QB_E_INTERNAL (-8)     /* bug; also the host's mapping of unknown codes */
#define QB_E_NOT_FOUND (-9)    /* named file/tensor/option does not exist */
#define QB_E_MISMATCH (-10)    /* parts of an input disagree (shards, shapes) */
#define QB_E_RANGE (-11)       /* index/row range outside the object */
#define QB_E_NOSPACE (-12)     /* output device full or file size limit hit */

/* File-scope forward declarations so headers can be included in any order. */
struct qb_host;
struct qb_plugin;
struct qb_param;
struct qb_sink;
struct qb_model_info;
struct qb_tensor_info;
struct qb_grid_info;
struct qb_grid_rows;
struct qb_model_src;
struct qb_reader_vtable;
struct qb_writer_vtable;
struct qb_st_api;

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_ABI_H */
