"""The C++ NnapiBackend called directly, as ExecuTorch's runtime calls it, with what the
Python runtime never passes: wrong argument counts, dtypes, shapes and kinds are errors
naming the argument (never a crash), a truncated blob is refused, and without a
libneuralnetworks.so the backend says it is unavailable."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

from torch_nnapi.capi import library_path  # noqa: E402
from torch_nnapi.convert.executorch.blob import write_blob  # noqa: E402
from torch_nnapi.convert.executorch.native_build import (  # noqa: E402
    DEFINES,
    build_backend,
    compiler,
    executorch_install,
)

from .cases import SmallCnn  # noqa: E402

OK, INVALID_ARGUMENT, NOT_SUPPORTED, INVALID_PROGRAM = "0x0", "0x12", "0x10", "0x23"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The harness binary, the backend library and a blob of a small CNN."""
    directory = tmp_path_factory.mktemp("harness")
    install = executorch_install()
    binary = directory / "backend_harness"
    subprocess.run([compiler(), "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror",
                    *(f"-D{d}" for d in DEFINES),
                    *(f"-isystem{d}" for d in install.include_dirs),
                    str(Path(__file__).with_name("backend_harness.cpp")),
                    f"-L{install.library_dir}", "-lexecutorch",
                    f"-Wl,-rpath,{install.library_dir}", "-ldl", "-o", str(binary)],
                   check=True)
    from torch_nnapi.convert.executorch.lower import lower_program
    from torch_nnapi.convert.executorch.specs import EtOptions

    program = torch.export.export(SmallCnn().eval(), (torch.randn(1, 3, 16, 16),))
    from executorch.exir import to_edge

    edge = to_edge(program).exported_program()
    blob = lower_program(edge, EtOptions.of(named_threshold=1 << 30))
    path = directory / "cnn.blob"
    path.write_bytes(write_blob(blob))
    return binary, build_backend(), path


def run(harness: tuple[Path, Path, Path], *extra: str) -> tuple[dict[str, str], str]:
    binary, library, blob = harness
    result = subprocess.run([str(binary), str(library), str(blob), *extra],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    return lines, result.stdout + result.stderr


def test_bad_arguments_are_errors_naming_them(harness: tuple[Path, Path, Path]) -> None:
    results, log = run(harness, library_path())
    assert results["available"] == "1"
    assert results["init truncated"] == INVALID_PROGRAM
    assert "NnapiBackend: invalid blob: header: the blob says it has" in log
    assert results["init"] == OK
    for case in ("execute", "execute again", "execute after errors"):
        assert results[case] == OK, case
    for case in ("too few arguments", "too many arguments", "int64 input", "smaller input",
                 "flat input", "wrong output", "integer argument"):
        assert results[case] == INVALID_ARGUMENT, case
    assert "NnapiBackend: got 1 arguments, the model takes 1 inputs and 1 outputs" in log
    assert "NnapiBackend: input 0: expected float32 [1, 3, 16, 16], got int64" in log
    assert "got float32 [1, 3, 8, 8]" in log and "got float32 [768]" in log
    assert "NnapiBackend: output 0: expected float32 [1, 5], got float32 [1, 6]" in log
    assert "NnapiBackend: input 0 is not a tensor" in log
    assert log.splitlines()[-1] == "destroyed" or "destroyed\n" in log


def test_without_libneuralnetworks_the_backend_is_unavailable(
        harness: tuple[Path, Path, Path]) -> None:
    results, log = run(harness)  # nothing loads libneuralnetworks.so for it
    assert results["available"] == "0"
    assert results["init"] == NOT_SUPPORTED
    assert "NnapiBackend: not available: cannot load libneuralnetworks.so" in log
