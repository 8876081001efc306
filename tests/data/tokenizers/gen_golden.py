#!/usr/bin/env python3
"""Writes the expected token ids of corpus.txt for every vocabulary here
(tests/data/tokenizers/<name>/golden-ids.txt), computed by the Hugging Face
`tokenizers` library from the publisher's tokenizer.json:

    /work/interop-venv/bin/python tests/data/tokenizers/gen_golden.py

One line per record of corpus.txt (records are separated by a line holding a
lone form feed, README.md), then one line for the whole file: the ids of
Tokenizer.encode(record) (add_special_tokens=True, the library's default),
comma-separated. The host's encoder is checked against these files line by
line (tests/host/test_tokenize.c)."""
import lzma
import pathlib

from tokenizers import Tokenizer

HERE = pathlib.Path(__file__).resolve().parent


def records():
    text = (HERE / "corpus.txt").read_text(encoding="utf-8")
    return text.split("\n\x0c\n") + [text]


def main():
    recs = records()
    for folder in sorted(p for p in HERE.iterdir() if (p / "tokenizer.json.xz").is_file()):
        tok = Tokenizer.from_str(lzma.decompress((folder / "tokenizer.json.xz").read_bytes()).decode("utf-8"))
        lines = [",".join(str(i) for i in tok.encode(r).ids) for r in recs]
        (folder / "golden-ids.txt").write_text("\n".join(lines) + "\n", encoding="ascii")
        print(f"{folder.name}: {len(lines)} records, {sum(len(l.split(',')) for l in lines)} ids")


if __name__ == "__main__":
    main()
