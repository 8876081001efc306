/*
 * mlx plugin — internals shared by mlx_plugin.c (descriptor, probe),
 * mlx_read.c (the reader class on the reader base), mlx_write.c (the
 * writer) and mlx_config.c (config.json's `quantization`). Every symbol
 * here is hidden (the plugin exports only its entry).
 *
 * The format (docs/formats/mlx.md): a quantized linear <m> is
 *   <m>.weight  U32 [N, K * bits / 32]  codes q in [0, 2^bits), value k of a
 *               row at bits [bits * (k % pf), ...) of word k / pf, pf = 32 / bits
 *   <m>.scales  F16/BF16/F32 [N, K / group_size]
 *   <m>.biases  same dtype and shape
 * and decodes as w = scale * q + bias, two float32 roundings. config.json's
 * `quantization` holds the default group_size and bits and per-module
 * overrides keyed by the module path.
 */
#ifndef MLX_H
#define MLX_H

#include <stdint.h>

#include <quantbridge/quantbridge.h>
#include <quantbridge/base/qb_streader.h>

extern const qb_host *mlx_host;
extern const qb_streader_class mlx_class;
extern const qb_writer_vtable mlx_writer_vtable;
extern const qb_option_decl *const mlx_option_decls[];

/* 80 when config.json has a `quantization` object with integer bits and
 * group_size and no quantization_config naming another quant_method, else
 * 0. Pure. */
int mlx_config_probe(const char *config_json);

/* One module's quantization as config.json states it. */
typedef struct mlx_qparams {
    int bits;          /* 2, 3, 4, 5, 6 or 8 */
    int64_t group_size;/* 32, 64 or 128 */
} mlx_qparams;

#endif /* MLX_H */
