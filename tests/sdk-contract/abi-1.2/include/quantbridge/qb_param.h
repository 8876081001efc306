/*
 * quantbridge SDK — typed plugin options: declarations (by the plugin) and
 * values (from the host).
 *
 * STABILITY: stable.
 *
 * A plugin declares its options in its descriptor. The host collects values
 * from config files (`option.KEY=VALUE` in the plugin's section) and the
 * command line (`--option KEY=VALUE`, `--group-size N`), checks each against
 * the declaration (type, range, choices) BEFORE any conversion starts, and
 * hands each role (reader open, writer begin) a typed array that always
 * contains every option declared for that role (defaults filled in).
 */
#ifndef QUANTBRIDGE_QB_PARAM_H
#define QUANTBRIDGE_QB_PARAM_H

#include "qb_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qb_param_type {
    QB_PARAM_END = 0,   /* terminates a qb_param array */
    QB_PARAM_BOOL = 1,  /* "true/false/1/0/yes/no" */
    QB_PARAM_INT = 2,   /* decimal int64, checked against [min_int, max_int] */
    QB_PARAM_DOUBLE = 3,
    QB_PARAM_STRING = 4,/* checked against `choices` when non-NULL */
    QB_PARAM_SIZE = 5,  /* byte count, "5GB", "500MiB", "4096": parsed to int64 */
    QB_PARAM_TYPE_MAX_ENUM = QB_ABI_ENUM_MAX /* pins the size; not a type */
} qb_param_type;
QB_ABI_STATIC_ASSERT(sizeof(qb_param_type) == 4, qb_param_type_is_32_bits);


/* Roles an option applies to (qb_option_decl.roles, ABI 1.1). A plugin
 * that is both a reader and a writer says which of its halves reads the
 * option; the host hands the value to that half only, and routes
 * `--option K=V` to the roles of the run that declare K (`reader.K=V`,
 * `writer.K=V` choose one). 0, or a 1.0 declaration without the field,
 * means both: the 1.0 meaning. */
#define QB_OPTION_ROLE_READER (1u << 0)
#define QB_OPTION_ROLE_WRITER (1u << 1)
#define QB_OPTION_ROLE_BOTH (QB_OPTION_ROLE_READER | QB_OPTION_ROLE_WRITER)

/* One declared option. Lives in the plugin's static data. */
typedef struct qb_option_decl {
    uint32_t struct_size;
    const char *name;          /* [a-z0-9_]+ */
    qb_param_type type;
    const char *default_value; /* text form; NULL = no default (option unset) */
    const char *help;          /* one line */
    const char *choices;       /* STRING only: "v1|v2|auto" or NULL for free text */
    int64_t min_int, max_int;  /* INT/SIZE only; ignored when min_int > max_int */
    /* ABI 1.1 */
    uint32_t roles;            /* QB_OPTION_ROLE_* bits; 0 = both. Bits other
                                  than READER and WRITER: the host refuses
                                  the descriptor. */
} qb_option_decl;

/* ABI 1.0 size (qb_abi.h): a 1.0 declaration ends at max_int; `roles` is
 * read only under QB_HAS_FIELD. */
QB_ABI_ALIGN_HELPER(qb_option_decl);
#define QB_OPTION_DECL_SIZE_1_0 QB_ABI_SIZE_1_0(qb_option_decl, max_int)
QB_ABI_STATIC_ASSERT(offsetof(qb_option_decl, roles) >= QB_OPTION_DECL_SIZE_1_0,
                     qb_option_decl_size_1_0);
#define QB_OPTION_DECL_SIZE_1_1 QB_ABI_SIZE_THROUGH(qb_option_decl, roles)
QB_ABI_STATIC_ASSERT(QB_OPTION_DECL_SIZE_1_1 == sizeof(qb_option_decl), qb_option_decl_size_1_1);

/* One option value as handed to a plugin. Arrays end with type == QB_PARAM_END.
 * Owned by the host; valid for the duration of the call that received it
 * (copy what you keep). An option declared without default and not given
 * by the user is present with is_set == 0. */
typedef struct qb_param {
    uint32_t struct_size;
    const char *key;
    qb_param_type type;
    int32_t is_set;
    union {
        int32_t b;
        int64_t i;    /* INT and SIZE */
        double d;
        const char *s;
    } v;
} qb_param;

/* ABI 1.0 size (qb_abi.h). 1.0-only check: when appending, replace it by
 * offsetof(qb_param, <first new field>) >= QB_PARAM_SIZE_1_0. */
QB_ABI_ALIGN_HELPER(qb_param);
#define QB_PARAM_SIZE_1_0 QB_ABI_SIZE_1_0(qb_param, v)
QB_ABI_STATIC_ASSERT(QB_PARAM_SIZE_1_0 == sizeof(qb_param), qb_param_size_1_0);

/* Finds `key` in a QB_PARAM_END-terminated array; NULL when absent.
 * Header-only helper: plugins need no host symbol to call it. */
static inline const qb_param *qb_param_find(const qb_param *params, const char *key)
{
    const qb_param *p;
    if (!params || !key)
        return NULL;
    for (p = params; p->type != QB_PARAM_END; p++) {
        const char *a = p->key, *b = key;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == *b)
            return p;
    }
    return NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_PARAM_H */
