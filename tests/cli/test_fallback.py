"""The CPU fallback on the command line: convert --fallback, inspect, run, check, bench."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from torch_nnapi.cli import main

from ..conftest import package_env
from ..convert import fallback_models as fm


@pytest.fixture()
def residual(tmp_path):
    model = fm.randomize(fm.Residual(blocks=2))
    path = tmp_path / "residual.pt"
    torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, 12, 12)), str(path))
    return str(path)


@pytest.fixture()
def converted(residual, tmp_path, capsys):
    out = str(tmp_path / "residual_nnapi.pt")
    assert main(["convert", residual, "-o", out, "--input", "1x3x12x12", "--fallback",
                 "--bundle", "--check"]) == 0
    text = capsys.readouterr().out
    assert "into 3 NNAPI regions (5 operations), 2 nodes on the CPU" in text
    assert "result: OK, the saved module matches the model" in text
    return out


def test_without_fallback_the_error_hints_at_it(residual, tmp_path, capsys):
    assert main(["convert", residual, "-o", str(tmp_path / "x.pt"), "--input",
                 "1x3x12x12"]) == 1
    err = capsys.readouterr().err
    assert "torch_nnapi_tests::wiggle x2" in err
    assert err.rstrip().endswith("would convert the model into 3 NNAPI regions (5 operations)"
                                 " with 2 nodes on the CPU")


def test_knobs_need_fallback(residual, tmp_path, capsys):
    """A usage error (exit code 4), one line."""
    assert main(["convert", residual, "-o", str(tmp_path / "x.pt"), "--input", "1x3x12x12",
                 "--max-regions", "1"]) == 4
    assert capsys.readouterr().err.strip() == ("torch-nnapi convert: error: --fallback-op,"
                                               " --min-region-size and --max-regions need"
                                               " --fallback")
    assert main(["check", residual, "--input", "1x3x12x12", "--fallback",
                 "--fallback-op", "softmax"]) == 4
    assert "give a TorchScript op kind" in capsys.readouterr().err


def test_inspect_shows_regions_boundaries_and_cpu_nodes(converted, capsys):
    assert main(["inspect", converted, "--summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("NNAPI feature level 1 (Android 8.1, API 27), 3 NNAPI regions (5"
                        " operations), 2 nodes on the CPU, 33.2 KB crossing")
    assert lines[1] == "  region 0: 2 PyTorch nodes, feature level 1: CONV_2D 1"
    assert any(line.startswith("    in  %x") and "float32[1x3x12x12] (1.7 KB) from model input"
               " 0" in line for line in lines)
    assert "  CPU: 1 node (torch_nnapi_tests::wiggle x1)" in lines
    assert "  torch_nnapi_tests::wiggle x2: no lowering for this op" in lines
    assert lines.count("  operations: 1 CONV_2D, 1 ADD") == 2
    assert main(["inspect", converted, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["partitioned"] and len(info["regions"]) == 3
    assert info["partition"]["schedule"] == ["region 0", "cpu 0", "region 1", "cpu 1",
                                             "region 2"]


def test_run_through_nnapi_and_on_the_host(converted, capsys):
    assert main(["run", converted, "--repeat", "2"]) == 0
    assert "output 0: [1, 8, 12, 12] float32" in capsys.readouterr().out
    assert main(["run", converted, "--host", "--profile", "--repeat", "1"]) == 0
    text = capsys.readouterr().out
    assert "latency (host runtime" in text and "CONV_2D" in text


def test_check_reports_the_partition(residual, capsys):
    assert main(["check", residual, "--input", "1x3x12x12", "--fallback"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "partitioned: 3 NNAPI regions (5 operations), 2 nodes on the CPU, 33.2 KB" \
           " crossing" in lines
    assert lines[-1] == ("result: OK, converts into 3 NNAPI regions (5 operations), 2 nodes on"
                         " the CPU, 33.2 KB crossing and matches PyTorch; needs NNAPI feature"
                         " level 1")
    assert main(["check", residual, "--input", "1x3x12x12", "--fallback", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exit_code"] == 0 and len(data["partition"]["regions"]) == 3


def test_check_fallback_with_a_target_level(tmp_path, capsys):
    class Exp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = fm.conv(3, 4), fm.conv(4, 4)

        def forward(self, x):
            return self.b(torch.exp(self.a(x) * 0.1))

    path = tmp_path / "exp.pt"
    torch.jit.save(torch.jit.trace(fm.randomize(Exp()), torch.randn(1, 3, 8, 8)), str(path))
    assert main(["check", str(path), "--input", "1x3x8x8:nhwc", "--target-level", "1"]) == 3
    capsys.readouterr()
    assert main(["check", str(path), "--input", "1x3x8x8:nhwc", "--target-level", "1",
                 "--fallback"]) == 0
    text = capsys.readouterr().out
    assert "  aten::exp x1: EXP needs NNAPI feature level 3, above the target 1" in text
    assert "target level 1 (Android 8.1): every operation is supported" in text


def test_bench_times_regions_and_cpu_nodes_apart(converted, residual, capsys):
    assert main(["bench", converted, "--original", residual, "--runs", "2", "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("  NNAPI regions alone: median ") and line.endswith(
        " in 3 regions") for line in lines)
    assert any(line.startswith("    region 2: median ") and line.endswith("(2 operations)")
               for line in lines)
    assert any(line.startswith("  CPU nodes alone: median ") for line in lines)
    slowest = lines[lines.index("  slowest operations:") + 2:]
    assert len(slowest) == 2 and all(row.split()[0].startswith("r") for row in slowest)
    assert main(["bench", converted, "--runs", "2", "--json", "--profile-runs", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["region"] for r in data["regions"]] == [0, 1, 2]
    assert data["cpu"]["runs"] == 2


class _ReluThenCumsum(torch.nn.Module):
    """One PyTorch node in one NNAPI region, one node (cumsum) on the CPU."""

    def forward(self, x):
        return torch.cumsum(torch.relu(x), -1)


@pytest.mark.slow
def test_counts_of_one_are_singular(tmp_path, capsys):
    """"1 PyTorch node", "1 operation", "expected 1 input": in a real process."""
    model = tmp_path / "relu_cumsum.pt"
    torch.jit.save(torch.jit.trace(_ReluThenCumsum(), torch.randn(2, 3)), str(model))
    converted = tmp_path / "relu_cumsum_nnapi.pt"

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", *argv],
                              capture_output=True, text=True, env=package_env(), timeout=600)

    assert main(["convert", str(model), "-o", str(converted), "--input", "2x3",
                 "--fallback"]) == 0
    summary = cli("inspect", str(converted), "--summary").stdout.splitlines()
    assert "1 NNAPI region (1 operation), 1 node on the CPU" in summary[0], summary
    assert summary[1] == "  region 0: 1 PyTorch node, feature level 1: RELU 1", summary
    run = cli("run", str(converted), "--input", "2x3", "--input", "2x3")
    assert run.returncode == 4 and "expected 1 input, got 2" in run.stderr, run.stderr
    capsys.readouterr()
    assert main(["convert", str(model), "-o", str(tmp_path / "x.pt"), "--input", "2x3"]) == 1
    cannot = capsys.readouterr().err
    assert "1 unsupported operation (1 use)" in cannot, cannot
    assert "into 1 NNAPI region (1 operation) with 1 node on the CPU" in cannot
