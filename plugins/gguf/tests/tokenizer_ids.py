"""Compare a rebuilt tokenizer.json with the original on a corpus.

usage: tokenizer_ids.py NAME ORIGINAL.json REBUILT.json CORPUS

The corpus holds records separated by a line with a lone form feed
(tests/data/tokenizers/README.md); each record, and the whole corpus as one
text, is encoded with add_special_tokens True and False by both tokenizers
(the `tokenizers` library), and the ids, offsets and decode() of the ids
(skip_special_tokens False and True) must be identical. Prints one summary
line; exits 1 on the first difference, naming the record.
"""
import sys

from tokenizers import Tokenizer


def main():
    name, orig_path, rb_path, corpus_path = sys.argv[1:5]
    orig = Tokenizer.from_file(orig_path)
    rb = Tokenizer.from_file(rb_path)
    with open(corpus_path, encoding="utf-8") as f:
        text = f.read()
    records = text.split("\n\x0c\n") + [text]
    if orig.get_vocab_size(with_added_tokens=True) != rb.get_vocab_size(with_added_tokens=True):
        print(f"{name}: vocabulary size {orig.get_vocab_size(True)} != {rb.get_vocab_size(True)}")
        return 1
    n_tok = 0
    n_specials = 0
    for i, rec in enumerate(records):
        for add in (True, False):
            a = orig.encode(rec, add_special_tokens=add)
            b = rb.encode(rec, add_special_tokens=add)
            where = f"{name}: record {i} {rec[:40]!r} add_special_tokens={add}"
            if a.ids != b.ids:
                print(f"{where}: ids differ\n  original {a.ids}\n  rebuilt  {b.ids}")
                return 1
            if a.offsets != b.offsets:
                print(f"{where}: offsets differ\n  original {a.offsets}\n  rebuilt  {b.offsets}")
                return 1
            if a.special_tokens_mask != b.special_tokens_mask:
                print(f"{where}: special token masks differ")
                return 1
            for skip in (False, True):
                da, db = orig.decode(a.ids, skip_special_tokens=skip), rb.decode(b.ids, skip_special_tokens=skip)
                if da != db:
                    print(f"{where} skip_special_tokens={skip}: decode differs\n  original {da!r}\n  rebuilt  {db!r}")
                    return 1
            n_tok += len(a.ids)
            n_specials += sum(a.special_tokens_mask)
    print(f"{name}: identical: {len(records) - 1} records + whole corpus, {n_tok} tokens "
          f"({n_specials} special) compared with and without special tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
