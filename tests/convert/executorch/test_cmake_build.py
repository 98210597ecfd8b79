"""native/CMakeLists.txt (the build for Android's NDK) builds the same backend on Linux
against the ExecuTorch wheel, and the blob reader's fuzz target with it. Marked slow (a
full C++ build); .ci/run runs it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from torch_nnapi.capi import include_path
from torch_nnapi.convert.executorch.native_build import NATIVE_DIR, executorch_install

pytestmark = pytest.mark.slow


def test_cmake_builds_the_backend_and_the_fuzz_target(tmp_path: Path) -> None:
    pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                        " '.[executorch]' -c constraints.txt)")
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    install = executorch_install()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(NATIVE_DIR), "-B", str(build), *generator,
                    f"-DCMAKE_PREFIX_PATH={install.root}",
                    f"-DTORCH_NNAPI_INCLUDE_DIR={include_path()}", "-DTORCH_NNAPI_FUZZ=ON"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    assert (build / "libtorch_nnapi_executorch.so").is_file()
    assert (build / "fuzz_blob").is_file()
