"""The files users have, read by every command in a real process as a user runs them:
pickled and scripted torchvision models (whose compiled operators cannot load beside this
torch), PT2E-quantized ``.pt2`` files and the example inputs a ``.pt2`` carries, and an
``--original`` that is not the converted module's model."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn

from torch_nnapi.cli import main
from torch_nnapi.cli._errors import ExitCode

from ..conftest import package_env
from ..realmodels.torchvision_support import load_torchvision
from ._models import ConvLinear


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = package_env()
    env.pop("TORCH_CPP_LOG_LEVEL", None)
    return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", *argv], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=600)


def _one_line_error(result: subprocess.CompletedProcess, code: ExitCode, *words: str) -> None:
    assert result.returncode == code, result.stderr
    lines = result.stderr.splitlines()
    assert 1 <= len(lines) <= 2 and "error:" in lines[0], result.stderr
    for word in words:
        assert word in lines[0], result.stderr


class _Detections(nn.Module):
    """Scores the boxes it is given and keeps torchvision's NMS survivors (scripted: the
    archive calls torchvision::nms)."""

    def forward(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        keep = torch.ops.torchvision.nms(boxes, torch.sigmoid(scores), 0.5)
        return boxes[keep]


@pytest.fixture(scope="module")
def torchvision_files(tmp_path_factory) -> Path:
    """A pickled torchvision model and a scripted NMS."""
    load_torchvision()
    d = tmp_path_factory.mktemp("torchvision_files")
    from torchvision.ops.misc import Conv2dNormActivation, SqueezeExcitation

    model = nn.Sequential(Conv2dNormActivation(3, 8), SqueezeExcitation(8, 4)).eval()
    torch.save(model, d / "pickled.pt")
    torch.jit.save(torch.jit.script(_Detections()), d / "scripted_nms.pt")
    return d


@pytest.mark.slow
def test_a_pickled_torchvision_model_loads_in_every_command(torchvision_files):
    """check, convert and bench --original read the pickle (run and inspect read what
    convert wrote, which names no torchvision class or operator)."""
    d = torchvision_files
    result = _cli("check", "pickled.pt", "--input", "1x3x8x8", "--no-layers", cwd=d)
    assert result.returncode == ExitCode.OK, result.stderr
    assert "result: OK" in result.stdout and result.stderr == ""
    converted = _cli("convert", "pickled.pt", "-o", "converted.pt", "--input", "1x3x8x8",
                     cwd=d)
    assert converted.returncode == ExitCode.OK, converted.stderr
    result = _cli("bench", "converted.pt", "--original", "pickled.pt", "--runs", "2",
                  "--profile-runs", "0", cwd=d)
    assert result.returncode == ExitCode.OK, result.stderr
    assert "output 0 against eager: max error" in result.stdout


@pytest.mark.slow
def test_a_scripted_model_calling_torchvision_nms_loads(torchvision_files):
    """torchvision::nms has a Python definition: the archive loads, and check says what
    NNAPI cannot run instead of calling the file corrupted."""
    result = _cli("check", "scripted_nms.pt", "--input", "5x4", "--input", "5",
                  cwd=torchvision_files)
    assert result.returncode not in (ExitCode.BAD_FILE, ExitCode.INTERNAL), result.stderr
    assert "does not exist" not in result.stderr + result.stdout


def test_a_torchvision_operator_without_a_definition_is_named(torchvision_files, tmp_path):
    """A scripted model calling torchvision::roi_pool (the NMS archive, its call renamed):
    one line naming the operator, not a corrupted file."""
    with zipfile.ZipFile(torchvision_files / "scripted_nms.pt") as source, \
            zipfile.ZipFile(tmp_path / "roi_pool.pt", "w") as renamed:
        for info in source.infolist():
            if not info.filename.endswith(".debug_pkl"):  # source positions of the old code
                renamed.writestr(info, source.read(info).replace(b"torchvision.nms",
                                                                 b"torchvision.roi_pool"))
    result = _cli("check", "roi_pool.pt", "--input", "5x4", "--input", "5", cwd=tmp_path)
    _one_line_error(result, ExitCode.BAD_FILE, "roi_pool.pt", "uses torchvision::roi_pool",
                    "does not load beside this torch")


def test_an_operator_nobody_registered_is_named(tmp_path):
    """A .pt2 calling a custom operator this process does not define: one line naming it,
    none of PyTorch's deserialization warnings."""
    torch.library.define("users_test::twice", "(Tensor x) -> Tensor")
    torch.library.impl("users_test::twice", "CompositeExplicitAutograd", lambda x: x * 2)

    class Twice(nn.Module):
        def forward(self, x):
            return torch.ops.users_test.twice(x) + 1

    torch.export.save(torch.export.export(Twice(), (torch.rand(2, 3),)), tmp_path / "op.pt2")
    result = _cli("check", "op.pt2", cwd=tmp_path)
    _one_line_error(result, ExitCode.BAD_FILE, "op.pt2", "users_test.twice",
                    "not registered here")


@pytest.fixture(scope="module")
def quantized_pt2(tmp_path_factory) -> Path:
    """A PT2E-quantized .pt2 (torch_nnapi.quantize, then torch.export.save) and a float one."""
    import torch_nnapi

    d = tmp_path_factory.mktemp("pt2")
    x = torch.rand(1, 3, 12, 12)
    model = ConvLinear().eval()
    calibration = [(torch.rand(1, 3, 12, 12),) for _ in range(4)]
    quantized = torch_nnapi.quantize(model, (x,), calibration, target_level=3)
    torch.export.save(torch.export.export(quantized, (x,)), d / "quantized.pt2")
    torch.export.save(torch.export.export(model, (x,)), d / "float.pt2")
    return d


@pytest.mark.slow
def test_a_quantized_pt2_is_read_without_log_lines_or_inputs(quantized_pt2):
    d = quantized_pt2
    checked = _cli("check", "quantized.pt2", "--no-layers", cwd=d)
    assert checked.returncode == ExitCode.OK, checked.stderr
    assert checked.stderr == "" and "result: OK" in checked.stdout
    converted = _cli("convert", "quantized.pt2", "-o", "quantized_nnapi.pt", cwd=d)
    assert converted.returncode == ExitCode.OK, converted.stderr
    assert "W1" not in converted.stderr
    bench = _cli("bench", "quantized_nnapi.pt", "--original", "quantized.pt2", "--runs", "2",
                 "--profile-runs", "0", cwd=d)
    assert bench.returncode == ExitCode.OK, bench.stderr
    assert "output 0 against eager: max error" in bench.stdout


def test_convert_without_input_needs_a_pt2(tmp_path, capsys):
    small = str(tmp_path / "small.pt")
    torch.jit.save(torch.jit.trace(ConvLinear().eval(), torch.rand(1, 3, 12, 12)), small)
    for argv in (["convert", small, "-o", str(tmp_path / "small_nnapi.pt")], ["check", small]):
        assert main(argv) == ExitCode.USAGE
        error = capsys.readouterr().err.splitlines()[0]
        assert "give the model's inputs with --input" in error and ".pt2" in error


@pytest.mark.slow
def test_bench_names_the_original_when_it_is_the_one_failing(quantized_pt2, tmp_path):
    d = quantized_pt2
    assert main(["convert", str(d / "float.pt2"), "-o", str(d / "float_nnapi.pt")]) == 0
    # a model of other outputs: its outputs are not the converted module's
    other = nn.Sequential(nn.Conv2d(3, 5, 3), nn.Flatten()).eval()
    torch.jit.save(torch.jit.trace(other, torch.rand(1, 3, 12, 12)), tmp_path / "other.pt")
    # a model that cannot run on the converted module's inputs
    wrong = nn.Sequential(nn.Flatten(), nn.Linear(10, 2)).eval()
    torch.jit.save(torch.jit.trace(wrong, torch.rand(1, 10)), tmp_path / "wrong.pt")
    module = str(d / "float_nnapi.pt")
    result = _cli("bench", module, "--original", "other.pt", "--runs", "2", cwd=tmp_path)
    _one_line_error(result, ExitCode.BAD_FILE, "original other.pt", "[1, 500]",
                    "not the model")
    result = _cli("bench", module, "--original", "wrong.pt", "--runs", "2", cwd=tmp_path)
    _one_line_error(result, ExitCode.RUN_FAILED, "original wrong.pt", "eager PyTorch")
    assert "NNAPI runtime" not in result.stderr
