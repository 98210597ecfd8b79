"""A C program, compiled here with the system compiler and linked with -lneuralnetworks, runs
models through the library as a plain (non-Python) process: the library starts Python itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from torch_nnapi.capi import include_path, library_path
from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime import kernel_for

SOURCE = Path(__file__).with_name("nnapi_client.c")


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Path:
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (cc) on this machine")
    program = tmp_path_factory.mktemp("c_client") / "nnapi_client"
    library_dir = os.path.dirname(library_path())
    subprocess.run([compiler, "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{include_path()}",
                    str(SOURCE), f"-L{library_dir}", "-lneuralnetworks", "-lpthread", "-lm",
                    "-o", str(program)], check=True, capture_output=True, text=True)
    return program


def _run(program: Path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["LD_LIBRARY_PATH"] = os.path.dirname(library_path())
    env.update(variables)
    return subprocess.run([str(program), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_program_is_not_linked_with_python(client):
    needed = subprocess.run(["ldd", str(client)], capture_output=True, text=True,
                            env={**os.environ,
                                 "LD_LIBRARY_PATH": os.path.dirname(library_path())}).stdout
    assert "libneuralnetworks.so" in needed
    assert "libpython" not in needed


def test_add_on_eight_threads(client):
    result = _run(client, "add")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok add: 81 runs on 8 threads")
    assert result.stderr == ""


def test_convolution_on_eight_threads(client):
    if kernel_for(OperationType.CONV_2D) is None:
        pytest.skip("no host kernel yet for CONV_2D")
    result = _run(client, "conv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok conv: 81 runs on 8 threads")
    assert result.stderr == ""


def test_without_python_the_calls_fail_cleanly(client):
    result = _run(client, "add", TORCH_NNAPI_LIBPYTHON="/nonexistent/libpython3.so")
    assert result.returncode == 1
    assert "cannot load the Python library" in result.stderr
    assert "ANeuralNetworksModel_create(&model) returned 5" in result.stderr  # OP_FAILED
