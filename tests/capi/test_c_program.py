"""A C program, compiled here with the system compiler and linked with -lneuralnetworks, runs
models through the library as a plain (non-Python) process: the library starts Python itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import torch_nnapi
from torch_nnapi.capi import include_path, library_path
from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime import kernel_for

from ..conftest import build_c_program

SOURCE = Path(__file__).with_name("nnapi_client.c")


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Path:
    library_dir = os.path.dirname(library_path())
    return build_c_program(tmp_path_factory.mktemp("c_client"), SOURCE, f"-I{include_path()}",
                           f"-L{library_dir}", "-lneuralnetworks", "-lpthread", "-lm")


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


SAMPLES = ("nnapi-sample_float_fast,nnapi-sample_float_slow,nnapi-sample_quant,"
           "nnapi-sample_minimal,nnapi-sample_all")


def test_the_devices_are_those_torch_nnapi_devices_lists(client):
    result = _run(client, "devices")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"nnapi-reference 2 30 {torch_nnapi.__version__}"]
    result = _run(client, "devices", TORCH_NNAPI_DEVICES=SAMPLES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        *(f"{name} 2 30 JUST_AN_EXAMPLE" for name in SAMPLES.split(",")),
        f"nnapi-reference 2 30 {torch_nnapi.__version__}"]


@pytest.mark.parametrize("case", ["add", "conv"])
def test_models_run_on_the_sample_drivers(client, case):
    result = _run(client, case, TORCH_NNAPI_DEVICES=SAMPLES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok {case}: 81 runs on 8 threads")


def test_a_bad_device_list_fails_the_device_calls_with_one_line(client):
    result = _run(client, "devices", TORCH_NNAPI_DEVICES="nnapi-sample_quant,nnapi-sample_qaunt")
    assert result.returncode == 1
    logged, failed = result.stderr.splitlines()
    assert logged == (
        "ANeuralNetworks_getDeviceCount: BAD_STATE: no devices: TORCH_NNAPI_DEVICES is bad:"
        " nnapi-sample_qaunt: no shipped profile has this name (shipped: nnapi-sample_all,"
        " nnapi-sample_float_fast, nnapi-sample_float_slow, nnapi-sample_minimal,"
        " nnapi-sample_quant)")
    assert failed.endswith("ANeuralNetworks_getDeviceCount(&count) returned 6")  # BAD_STATE


def test_without_python_the_calls_fail_cleanly(client):
    result = _run(client, "add", TORCH_NNAPI_LIBPYTHON="/nonexistent/libpython3.so")
    assert result.returncode == 1
    assert "cannot load the Python library" in result.stderr
    assert "ANeuralNetworksModel_create(&model) returned 5" in result.stderr  # OP_FAILED


PROJECT = Path(__file__).resolve().parents[2]


def _venv(path: Path) -> Path:
    """A bare venv (no pip) of the Python running the tests; its site-packages."""
    import sys
    import sysconfig

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   capture_output=True, timeout=300)
    version = sysconfig.get_config_var("py_version_short")
    return path / "lib" / f"python{version}" / "site-packages"


def test_an_installed_wheel_finds_its_own_environment(client, tmp_path):
    """A wheel built in one venv and installed in another keeps working for C programs once
    the first venv is deleted: the library starts the Python of the environment it is
    installed in, not the one that built it."""
    import sys
    import sysconfig

    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        pytest.skip("this Python has no shared libpython for a C program to load")
    tools = sysconfig.get_paths()["purelib"]  # setuptools, wheel, pip and numpy live here
    source = tmp_path / "source"
    for name in ("src", "setup.py", "pyproject.toml", "README.md"):
        if name == "src":
            shutil.copytree(PROJECT / name, source / name,
                            ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        elif (PROJECT / name).is_dir():
            shutil.copytree(PROJECT / name, source / name)
        else:
            shutil.copy(PROJECT / name, source / name)
    builder = tmp_path / "builder"
    _venv(builder)
    build = subprocess.run(
        [str(builder / "bin" / "python"), "-m", "pip", "wheel", "--no-deps",
         "--no-build-isolation", "--no-index", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": tools, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("torch_nnapi-*.whl")
    user = tmp_path / "user"
    site = _venv(user)
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                              "--no-index", "--target", str(site), str(wheel)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-3000:]
    (site / "numpy_from_tests.pth").write_text(str(Path(np_location()).parent) + "\n")
    shutil.rmtree(builder)  # the Python that built the library is gone
    library_dir = site / "torch_nnapi" / "capi"
    assert (library_dir / "libneuralnetworks.so").is_file()
    result = _run(client, "add", LD_LIBRARY_PATH=str(library_dir),
                  PATH="/usr/bin:/bin")  # no Python of the tests on the path either
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok add: 81 runs on 8 threads")


def np_location() -> str:
    import numpy

    return os.path.dirname(numpy.__file__)
