/*
 * A small byte-level BPE tokenizer.json for fixtures (the tests' own,
 * hand-built): GPT-2's 256 byte characters as ids 0..255, three merges
 * ("Ġ t", "h e", "Ġt he" -> 256..258) and the added token <|bos|> (259)
 * that a TemplateProcessing puts first. So "the theme" encodes to
 * 259,116,257,258,109,101 (hand-worked: "the" -> t, he; " theme" -> Ġthe,
 * m, e). A model using it needs vocab_size >= QBT_TOK_VOCAB.
 */
#ifndef QBT_GEN_TOKENIZER_H
#define QBT_GEN_TOKENIZER_H

#define QBT_TOK_VOCAB 260
#define QBT_TOK_BOS 259

/* Writes dir/tokenizer.json (dir must exist). Returns 0, or -1 with a
 * message on stderr when the file cannot be written. */
int qbt_tok_write_bytelevel(const char *dir);

#endif
