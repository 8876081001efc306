"""Fixtures every Python test tier shares (tests/interop, tests/real): each tier's conftest.py
imports them with `from qbtier import *`. The tier's run.sh exports QB_BUILD_DIR (the CMake build
tree holding bin/quantbridge and the test generators)."""
import os
import pathlib
import subprocess

import pytest

__all__ = ["REPO_ROOT", "BUILD_DIR", "repo_root", "build_dir", "qb_bin", "run_qb"]

REPO_ROOT = pathlib.Path(__file__).resolve().parents[3]
BUILD_DIR = pathlib.Path(os.environ.get("QB_BUILD_DIR", REPO_ROOT / "build")).resolve()


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD_DIR


@pytest.fixture(scope="session")
def qb_bin(build_dir) -> pathlib.Path:
    exe = build_dir / "bin" / "quantbridge"
    if not exe.is_file():
        pytest.fail(f"{exe} is missing: build the project first (run.sh does)")
    return exe


@pytest.fixture(scope="session")
def run_qb(qb_bin):
    """run_qb(*args, ok=True) runs quantbridge; with ok, a non-zero exit fails
    the test showing stderr. Returns the CompletedProcess (text mode)."""

    def _run(*args, ok=True, env=None):
        e = dict(os.environ)
        if env:
            e.update(env)
        proc = subprocess.run([str(qb_bin), *map(str, args)], capture_output=True,
                              text=True, env=e)
        if ok and proc.returncode != 0:
            pytest.fail(f"quantbridge {' '.join(map(str, args))} exited "
                        f"{proc.returncode}:\n{proc.stderr}")
        return proc

    return _run
