"""Shared fixtures for the interop tier (tests/interop/run.sh runs pytest here).

Every test module may rely on these names (tests/support/py/qbtier.py); run.sh exports
QB_BUILD_DIR (the CMake build tree holding bin/quantbridge and the test generators).
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support" / "py"))

from qbtier import *  # noqa: E402,F401,F403  (the fixtures)
