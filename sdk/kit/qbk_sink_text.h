/*
 * One text file written whole through a writer's sink, ending with a
 * newline as save_pretrained ends its JSON files (config.json, the
 * safetensors index, tokenizer side files), or as it is (mlx-lm's
 * json.dump ends its index without one).
 */
#ifndef QBK_SINK_TEXT_H
#define QBK_SINK_TEXT_H

#include <quantbridge/quantbridge.h>

/* Creates `name` through sink, writes text and "\n", closes it. Returns
 * the sink's first failure (its message set by the sink); the file is
 * closed on every path. */
qb_status qbk_sink_write_text(const qb_sink *sink, const char *name, const char *text);

/* The same without the final "\n": the file holds text exactly. */
qb_status qbk_sink_write_text_raw(const qb_sink *sink, const char *name, const char *text);

#endif /* QBK_SINK_TEXT_H */
