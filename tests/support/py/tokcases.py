"""The texts the tokenizer tests of both Python tiers encode (tests/interop/test_tokenizers.py,
tests/real/test_real_tokenizer.py), each with a test id: the records of
tests/data/tokenizers/corpus.txt and the whole file, then what a Gemma-shaped vocabulary adds
(docs/formats/gguf.md, "User-defined tokens and the merges left out"): runs of spaces, tabs and
newlines longer than its longest run token (31) and around it, alone and beside words; leading and
trailing spaces; chat markup; HTML tags; <unusedN>; and the places where matching added tokens
leftmost-longest (tokenizers) and longest first (llama.cpp) could part: a tag inside a longer tag,
<unused1> before <unused10>, runs of different characters side by side."""
import pathlib

RUNS = (1, 2, 3, 31, 32, 33, 64, 100)
CHARS = (("spaces", " "), ("tabs", "\t"), ("newlines", "\n"))


def corpus_cases(repo_root: pathlib.Path) -> list:
    """[(id, text)]: every record of corpus.txt (split on a line holding a lone form feed,
    tests/data/tokenizers/README.md), then the whole file."""
    text = (repo_root / "tests" / "data" / "tokenizers" / "corpus.txt").read_text(encoding="utf-8")
    recs = text.split("\n\x0c\n")
    return [(f"corpus-{i:02d}", r) for i, r in enumerate(recs)] + [("corpus-whole", text)]


def whitespace_cases() -> list:
    out = []
    for name, ch in CHARS:
        for n in RUNS:
            out += [(f"{name}-{n}", ch * n),
                    (f"{name}-{n}-between-words", "hello" + ch * n + "world"),
                    (f"{name}-{n}-leading", ch * n + "hello"),
                    (f"{name}-{n}-trailing", "hello" + ch * n)]
    out += [("mixed-runs", "  \n  \t \n\n\t\t  x"),
            ("mixed-runs-adjacent", " \t\n \t\n" * 7),
            ("code-indent", "def f(x):\n    if x:\n\t\treturn  x  +  1\n" + " " * 40 + "pass\n\n\n\n"),
            ("leading-space", " leading"),
            ("leading-spaces", "   leading"),
            ("trailing-space", "trailing "),
            ("both-sides", "  both sides  ")]
    return out


def markup_cases() -> list:
    return [
        ("chat-turns", "<start_of_turn>user\nWrite a poem about the sea.<end_of_turn>\n"
                       "<start_of_turn>model\n"),
        ("chat-whitespace", "<start_of_turn>user\n  indented\n\n\n\ttabbed  <end_of_turn>\n<start_of_turn>model\n"
                            "Sure:\n\n    code\n<end_of_turn>\n"),
        ("chat-no-newline", "<start_of_turn>user hi<end_of_turn><start_of_turn>model"),
        ("html-table", "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr>"
                       "</tbody></table>"),
        ("html-inline", "<b>bold</b> <i>it</i> <u>u</u> <s>strike</s><sub>2</sub><sup>3</sup><code>x</code>"),
        ("html-nested-like", "<<table>>  </td></td>  <h1> Title </h1>\n<div><span>x</span></div>"),
        ("tag-inside-tag", "<s><sub></s></sub><strong><span><sup>"),
        ("unused", "<unused0><unused10><unused1><unused99>x<unused1>0"),
        ("specials", "<bos><eos><pad><unk><mask>[multimodal]<start_of_image><end_of_image>"),
        ("run-then-tag", "   <table>\n\n\n</table>\t\t<td>  </td>"),
    ]


def gemma_cases(repo_root: pathlib.Path) -> list:
    """Everything above: corpus, whitespace, markup."""
    return corpus_cases(repo_root) + whitespace_cases() + markup_cases()
