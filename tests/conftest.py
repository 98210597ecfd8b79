"""Shared fixtures: where the conformance vectors are (``../shared/cts11``, Android 11's suite,
beside the project; ``../shared/cts``, Android 10's, for the specs Android 11's lacks),
PyTorch's quantized engine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The library in this process offers nnapi-reference alone, whatever the shell lists (it reads
# the list once, when it starts); tests of other device lists run processes of their own.
os.environ.pop("TORCH_NNAPI_DEVICES", None)


def build_c_program(directory: Path, source: Path, *flags: str) -> Path:
    """``source`` compiled as C99 with the system compiler (``cc``), warnings as errors,
    into ``directory``; the test is skipped, saying why, when there is no compiler."""
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip(f"no C compiler (cc) on this machine to build {source.name}")
    program = directory / source.stem
    subprocess.run([compiler, "-std=c99", "-Wall", "-Wextra", "-Werror", str(source), *flags,
                    "-o", str(program)], check=True, capture_output=True, text=True)
    return program


def package_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python process that must import the same torch_nnapi as the
    tests: the source tree in development, the installed package in CI (whose source tree has
    no built C library)."""
    import torch_nnapi

    package_parent = str(Path(torch_nnapi.__file__).resolve().parents[1])
    return dict(os.environ, PYTHONPATH=package_parent, **extra)


def cts_root() -> Path | None:
    """The CTS vector directory (Android 11's suite), or None when it is not available on
    this machine."""
    return _vectors("TORCH_NNAPI_CTS_DIR", "cts11")


def android10_cts_root() -> Path | None:
    """Android 10's suite, or None: the test suite runs the few of its specs that Android 11's
    lacks (the rest it supersedes)."""
    return _vectors("TORCH_NNAPI_CTS10_DIR", "cts")


def _vectors(variable: str, default: str) -> Path | None:
    configured = os.environ.get(variable)
    root = Path(configured) if configured else PROJECT_ROOT.parent / "shared" / default
    return root if (root / "index.json").is_file() else None


CTS_MISSING_REASON = ("the NNAPI conformance vectors are not available: expected ../shared/cts11"
                      " beside the project (or set TORCH_NNAPI_CTS_DIR)")


@pytest.fixture(scope="session")
def cts_dir() -> Path:
    root = cts_root()
    if root is None:
        pytest.skip(CTS_MISSING_REASON)
    return root


@pytest.fixture()
def qnnpack():
    """PyTorch's eager quantized kernels set to qnnpack (they round as NNAPI does, as on
    mobile) for the test, restored after it."""
    from torch_nnapi.convert.tools.check import quantized_engine

    with quantized_engine("qnnpack"):
        yield
