/*
 * qb-gen-quant: writes one named GPTQ/AWQ fixture checkpoint into a
 * directory (for demos and manual runs; the tests call the library).
 *   qb-gen-quant DIR VARIANT      e.g. gptq-4-g128-sym-v1, awq-gemm-g64-zp
 *   qb-gen-quant --list
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_gptq.h"

typedef struct variant {
    const char *name;
    int awq;
    qbt_gptq_spec g;
    qbt_awq_spec a;
} variant;

#define G(...) 0, {__VA_ARGS__, 0, 0}, {0}
#define A(...) 1, {0}, {__VA_ARGS__, NULL}

/* gptq fields: bits, gs, sym, v2, act_order, label, wrong_label, n_shards,
 * dynamic, side_file, broken, seed; awq: gemv, zero_point, omit_qzeros, gs,
 * version, n_shards, seed */
static const variant variants[] = {
    {"gptq-4-g128-sym-v1", G(4, 128, 1, 0, 0, 1, 0, 1, 0, 1, 0, 11)},
    {"gptq-4-g128-sym-v2", G(4, 128, 1, 1, 0, 1, 0, 1, 0, 0, 0, 12)},
    {"gptq-4-g32-sym-v1-sharded", G(4, 32, 1, 0, 0, 1, 0, 2, 0, 0, 0, 13)},
    {"gptq-4-g128-asym-v1", G(4, 128, 0, 0, 0, 1, 0, 1, 0, 0, 0, 14)},
    {"gptq-4-g128-sym-v1-actorder", G(4, 128, 1, 0, 1, 1, 0, 1, 0, 0, 0, 15)},
    {"gptq-4-g32-sym-v1-actorder", G(4, 32, 1, 0, 1, 1, 0, 1, 0, 0, 0, 24)},
    {"gptq-2-g32-sym-v1", G(2, 32, 1, 0, 0, 1, 0, 1, 0, 0, 0, 16)},
    {"gptq-3-g128-sym-v1", G(3, 128, 1, 0, 0, 1, 0, 1, 0, 0, 0, 17)},
    {"gptq-8-chan-asym-v2", G(8, -1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 18)},
    {"gptq-4-g128-sym-v1-dynamic", G(4, 128, 1, 0, 0, 1, 0, 1, 1, 0, 0, 19)},
    {"gptq-broken-descact-nogidx", G(4, 128, 1, 0, 1, 1, 0, 1, 0, 0, QBT_BROKEN_DESC_ACT_NO_GIDX, 20)},
    {"gptq-broken-qweight-bits", G(4, 128, 1, 0, 0, 1, 0, 1, 0, 0, QBT_BROKEN_QWEIGHT_BITS, 21)},
    {"gptq-broken-scale-missing-shard", G(4, 128, 1, 0, 0, 1, 0, 2, 0, 0, QBT_BROKEN_SCALE_MISSING_SHARD, 22)},
    {"gptq-broken-mismatched-shards", G(4, 128, 1, 0, 0, 1, 0, 2, 0, 0, QBT_BROKEN_MISMATCHED_SHARDS, 23)},
    {"awq-gemm-g128-zp", A(0, 1, 0, 128, NULL, 1, 31)},
    {"awq-gemm-g64-sym", A(0, 0, 0, 64, NULL, 1, 32)},
    {"awq-gemv-g64-zp", A(1, 1, 0, 64, NULL, 2, 33)},
    {"awq-broken-exllama", A(0, 1, 0, 128, "exllama", 1, 34)},
};

int main(int argc, char **argv)
{
    size_t i;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
            printf("%s\n", variants[i].name);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: qb-gen-quant DIR VARIANT | --list\n");
        return 2;
    }
    for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        if (strcmp(variants[i].name, argv[2]) != 0)
            continue;
        mkdir(argv[1], 0755);
        if ((variants[i].awq ? qbt_awq_write(argv[1], &variants[i].a, NULL)
                             : qbt_gptq_write(argv[1], &variants[i].g, NULL)) != 0) {
            fprintf(stderr, "qb-gen-quant: writing %s failed\n", argv[2]);
            return 1;
        }
        return 0;
    }
    fprintf(stderr, "qb-gen-quant: unknown variant %s (--list)\n", argv[2]);
    return 2;
}
