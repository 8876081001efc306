/*
 * quantbridge host — the text verify's model check tokenizes when the
 * user gives neither --tokens nor --text (docs/verify.md): a few short
 * sentences in English, German, Chinese and Russian and a line of code,
 * so that the perplexity it reports covers several scripts and stays a
 * few dozen tokens (the forward pass is quadratic in them).
 */
#include "tokenize.h"

const char *qbh_tok_sample_text(void)
{
    return "The quick brown fox jumps over the lazy dog. "
           "Die Straße ist schön. "
           "我们今天去公园。 "
           "Москва — столица России.\n"
           "def add(a, b):\n    return a + b\n";
}
