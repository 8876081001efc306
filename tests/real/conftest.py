"""Fixtures of the real-model tier (tests/real/run.sh runs pytest here): the shared tier fixtures
(tests/support/py/qbtier.py) and the published checkpoints that fetch_models.py put in
$QB_REAL_CACHE (default $QB_BUILD_DIR/real-cache)."""
import os
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support" / "py"))

from qbtier import *  # noqa: E402,F401,F403  (the fixtures)
from qbtier import BUILD_DIR  # noqa: E402

REAL_CACHE = pathlib.Path(os.environ.get("QB_REAL_CACHE", BUILD_DIR / "real-cache")).resolve()


@pytest.fixture(scope="session")
def real_cache() -> pathlib.Path:
    return REAL_CACHE


@pytest.fixture(scope="session")
def gemma_gguf(real_cache) -> pathlib.Path:
    """The published Gemma 3 270M GGUF Q4_K_M (tests/real/models.txt), as its publisher made it."""
    p = real_cache / "gemma-3-270m-q4_k_m.gguf"
    if not p.is_file():
        pytest.fail(f"{p} is missing: tests/real/run.sh fetches it (fetch_models.py)")
    return p
