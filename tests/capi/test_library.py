"""The shared library as a file: name, exports, header, and how it is found."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import torch_nnapi
from torch_nnapi.capi import bridge, include_path, library_path
from torch_nnapi.capi.api import FUNCTIONS
from torch_nnapi.capi.header import render
from torch_nnapi.cli import main

SOURCE = Path(torch_nnapi.capi.__file__).with_name("neuralnetworks.c")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def test_the_api_has_62_functions():
    """43 of API level 29 and the 19 API level 30 added."""
    assert len(FUNCTIONS) == len({f.name for f in FUNCTIONS}) == 62
    assert sum(f.api_level == 30 for f in FUNCTIONS) == 19


def test_soname_and_no_link_to_python():
    dynamic = subprocess.run([_tool("readelf"), "-d", library_path()], capture_output=True,
                             text=True, check=True).stdout
    assert "Library soname: [libneuralnetworks.so]" in dynamic
    assert "libpython" not in dynamic


def test_exports_exactly_the_api_and_needs_nothing_from_python():
    nm = _tool("nm")
    defined = subprocess.run([nm, "-D", "--defined-only", library_path()], capture_output=True,
                             text=True, check=True).stdout.split()
    undefined = subprocess.run([nm, "-D", "--undefined-only", library_path()],
                               capture_output=True, text=True, check=True).stdout.split()
    exported = {s for s in defined if s.startswith("ANeuralNetworks")}
    assert exported == {f.name for f in FUNCTIONS}
    assert not [s for s in undefined if s.startswith(("Py", "_Py"))]


def test_every_function_has_its_bridge_function():
    source = SOURCE.read_text()
    for f in FUNCTIONS:
        function = getattr(bridge, f.bridge_name)
        parameters = inspect.signature(function.__wrapped__).parameters
        assert len(parameters) == f.bridge_arity, f.name
        assert f'call("{f.bridge_name}"' in source, f.name


def test_the_header_is_generated_from_the_vocabulary():
    header = Path(include_path(), "NeuralNetworks.h").read_text()
    assert header == render(), "run: python -m torch_nnapi.capi.header > .../NeuralNetworks.h"


def test_the_header_compiles_as_cpp(tmp_path):
    source = tmp_path / "uses_header.cpp"
    source.write_text('#include "NeuralNetworks.h"\n'
                      'int main() { ANeuralNetworksModel* m = nullptr;'
                      ' return ANeuralNetworksModel_create(&m) == ANEURALNETWORKS_NO_ERROR'
                      ' ? 0 : 1; }\n')
    subprocess.run([_tool("c++"), "-fsyntax-only", "-Wall", "-Werror", f"-I{include_path()}",
                    str(source)], check=True)


def test_library_path_and_the_libpath_command(capsys):
    path = torch_nnapi.library_path()
    assert os.path.isabs(path) and path.endswith("/libneuralnetworks.so")
    assert main(["libpath"]) == 0
    assert capsys.readouterr().out.strip() == path
    assert main(["libpath", "--dir"]) == 0
    assert capsys.readouterr().out.strip() == os.path.dirname(path)
    assert main(["libpath", "--include"]) == 0
    assert Path(capsys.readouterr().out.strip(), "NeuralNetworks.h").is_file()


def _python(code: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter that has no hint of where the library is."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LIBNEURALNETWORKS_PATH")}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)


def test_importing_torch_nnapi_is_cheap_and_loads_the_library():
    result = _python(
        "import sys, ctypes, torch_nnapi\n"
        "assert 'torch' not in sys.modules, 'imported torch'\n"
        "assert 'torch_nnapi.capi.bridge' not in sys.modules, 'started the bridge'\n"
        "maps = open('/proc/self/maps').read()\n"
        "assert torch_nnapi.library_path() in maps, 'not loaded'\n"
        # glibc now answers dlopen("libneuralnetworks.so") with it, by its SONAME
        "ctypes.CDLL('libneuralnetworks.so')\n"
        "print('ok')\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
