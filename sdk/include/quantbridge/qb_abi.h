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
 * symbol (qb_plugin_entry_v<MAJOR>); a minor bump only appends.
 *
 * History (each minor only appends; docs/plugin-design.md, "ABI history"):
 *   1.0  the first stable ABI.
 *   1.1  per-role options (qb_option_decl.roles); writer capabilities
 *        (qb_plugin.writer_caps, qb_writer_caps); structured model facts
 *        (qb_model_info.facts, qb_model_facts); the JSON service
 *        (qb_host.json, qb_json.h); the failed-finish rule (qb_writer.h).
 *   1.2  the writer's plan (qb_writer_vtable.plan, qb_plan_sink,
 *        qb_plan_entry, qb_plan_action); reader views of the source
 *        as stored (qb_reader_vtable get_raw_tensor_info, get_metadata;
 *        qb_raw_tensor_info, qb_meta_entry).
 *   1.3  the tokenizer a reader does not give, stated instead of failing
 *        open (qb_model_info.tokenizer_state, tokenizer_note,
 *        qb_tokenizer_state).
 *   1.4  stored rows: a canonical tensor's bytes in a named encoding,
 *        so a writer can copy them (qb_reader_vtable get_stored_rows,
 *        read_stored_rows; qb_stored_rows_info, qb_stored_layout;
 *        qb_model_src stored_rows_info, read_stored_rows); float-coded
 *        grids (qb_grid_info accept_codes, code_kind, scale_rows;
 *        qb_tensor_info grid_codes; QB_CODE_*); the Hessian of a
 *        linear's input (qb_stats_api.hessian).
 *   1.5  e2m1 grids with a second scale level (QB_CODE_F4_E2M1;
 *        qb_grid_info tensor_scale_op, tensor_scale; QB_TENSOR_SCALE_*):
 *        NVFP4 codes and both scales carried to writers. */
#define QB_ABI_MAJOR 1
#define QB_ABI_MINOR 5
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

/* ABI 1.0 sizes. Each versioned struct has QB_<STRUCT>_SIZE_1_0: the
 * struct_size that a 1.0 filler writes, i.e. the end of its last 1.0 field
 * rounded up to the struct's alignment (= sizeof of the 1.0 struct, tail
 * padding included, as in the Vulkan loader's "struct_size of the version
 * that added it" rule). A reader of a struct refuses a struct_size below
 * it and uses QB_HAS_FIELD for anything later. It is a constant, not
 * sizeof(T), so that appending a field leaves it unchanged; the header of
 * each struct checks at compile time that it still equals sizeof(T) of
 * the 1.0 layout (edit that check to the 1.0 constant when appending).
 * Appending: the first field after 1.0 must start at or after
 * QB_<STRUCT>_SIZE_1_0; a field that would fit in 1.0's tail padding
 * would otherwise appear "present" in a 1.0 struct (QB_HAS_FIELD true,
 * bytes never written). Precede it with explicit padding then. */
#define QB_ABI_END_OF(T, F) (offsetof(T, F) + sizeof(((const T *)0)->F))
#define QB_ABI_ROUND_UP(n, a) ((((n) + (a) - 1) / (a)) * (a))
/* Alignment of T in C99 (no _Alignof): offset of T after a char in
 * QB_ABI_ALIGN_HELPER(T), a named struct declared once per T. */
#define QB_ABI_ALIGN_HELPER(T) \
    struct qb_abi_align_##T##_ {   \
        char c;                  \
        T t;                     \
    }
#define QB_ABI_ALIGNOF(T) offsetof(struct qb_abi_align_##T##_, t)
/* struct_size of T when its last field is F: the end of F rounded up to
 * T's alignment. QB_ABI_SIZE_1_0(T, F) names it with F the last 1.0 field;
 * a struct grown in minor m also gets QB_<STRUCT>_SIZE_1_m. */
#define QB_ABI_SIZE_THROUGH(T, F) QB_ABI_ROUND_UP(QB_ABI_END_OF(T, F), QB_ABI_ALIGNOF(T))
#define QB_ABI_SIZE_1_0(T, F) QB_ABI_SIZE_THROUGH(T, F)

/* Compile-time check usable in C99 and C++98 at file scope: a negative
 * array size when `cond` is false. `name` must be unique per header. */
#define QB_ABI_STATIC_ASSERT(cond, name) typedef char qb_abi_check_##name[(cond) ? 1 : -1]

/* Enums that cross the boundary end with QB_<ENUM>_MAX_ENUM = 0x7FFFFFFF so
 * every compiler gives them the size of int32_t (Vulkan's VK_*_MAX_ENUM
 * idiom); each header checks sizeof == 4. Never a valid value. */
#define QB_ABI_ENUM_MAX 0x7FFFFFFF

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
struct qb_json_api;
struct qb_model_facts;
struct qb_writer_caps;
struct qb_plan_sink;
struct qb_plan_entry;
struct qb_raw_tensor_info;
struct qb_meta_entry;
struct qb_stored_rows_info;

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_ABI_H */
