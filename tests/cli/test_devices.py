"""``--device`` on check, inspect and bench: Android's steps on a phone's drivers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from torch_nnapi.cli import main
from torch_nnapi.cli._errors import ExitCode

from ._models import QuantizedRelu, save

MINIMAL = "nnapi-sample_minimal"


def _model(tmp_path) -> str:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sigmoid(),
                                torch.nn.Conv2d(4, 4, 3)).eval()
    return save(model, torch.randn(1, 3, 10, 10), tmp_path / "model.pt")


def test_check_shows_the_steps_and_why_operations_fall_to_the_cpu(tmp_path, capsys):
    model = _model(tmp_path)
    report = tmp_path / "report.html"
    code = main(["check", model, "--input", "1x3x10x10", "--no-layers", "--device", MINIMAL,
                 "--report", str(report)])
    assert code == 0
    out = capsys.readouterr().out
    assert f"devices {MINIMAL} + nnapi-reference (sustained_speed): 3 step(s)" in out
    assert "step 1: nnapi-reference, 1 operation(s) [1]" in out
    assert f"on nnapi-reference: operation(s) [1] (LOGISTIC x1), because {MINIMAL}: " in out
    page = report.read_text()
    assert "On the devices" in page and 'style="display:flex' in page
    assert page.count("step 1: nnapi-reference") == 1


def test_check_fallback_shows_the_steps_before_and_after_converting_for_the_device(
        tmp_path, capsys):
    model = _model(tmp_path)
    assert main(["check", model, "--input", "1x3x10x10:nchw", "--no-layers", "--json",
                 "--fallback", "--device", MINIMAL]) == 0
    data = json.loads(capsys.readouterr().out)
    before, = data["device_plans"]
    assert [s["device"] for s in before["steps"]] == [MINIMAL, "nnapi-reference", MINIMAL]
    after = data["device_plans_converted_for_device"]
    assert [[s["device"] for s in region["steps"]] for region in after] == [[MINIMAL]] * 2
    assert all(region["reference_share"] == 0 for region in after)


def test_inspect_and_bench_plan_a_converted_module(tmp_path, capsys):
    model = _model(tmp_path)
    out = str(tmp_path / "nnapi.pt")
    assert main(["convert", model, "-o", out, "--input", "1x3x10x10"]) == 0
    capsys.readouterr()
    assert main(["inspect", out, "--device", MINIMAL, "--preference", "low_power"]) == 0
    text = capsys.readouterr().out
    assert f"devices {MINIMAL} + nnapi-reference (low_power)" in text
    assert main(["bench", out, "--runs", "1", "--profile-runs", "1", "--device", MINIMAL]) == 0
    text = capsys.readouterr().out
    assert text.count(", host runtime ") == 3


@pytest.mark.parametrize("change, message", [
    (lambda p: "{", "npu.json: not valid JSON"),
    (lambda p: dict(p, featureLevel=31), "npu.json: featureLevel: 31 is not a feature level"),
    (lambda p: dict(p, capabilities=dict(p["capabilities"], ifPerformance={
        "execTime": -1, "powerUsage": 1})),
     "npu.json: capabilities.ifPerformance.execTime: -1 is not a positive finite number"),
])
def test_a_bad_profile_is_one_line_naming_the_field(tmp_path, capsys, change, message):
    changed = change(_shipped(MINIMAL))
    path = tmp_path / "npu.json"
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    code = main(["inspect", str(tmp_path / "missing.pt"), "--device", str(path)])
    assert code == ExitCode.BAD_FILE
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_names_and_operations_are_named(tmp_path, capsys):
    assert main(["inspect", "x.pt", "--device", "nnapi-sample_fast"]) == ExitCode.USAGE
    assert "nnapi-sample_fast: no shipped profile has this name" in capsys.readouterr().err
    shipped = _shipped(MINIMAL)
    shipped["supportedOperations"][0]["operations"] = ["CONV2D"]
    path = tmp_path / "npu.json"
    path.write_text(json.dumps(shipped))
    assert main(["inspect", "x.pt", "--device", str(path)]) == ExitCode.BAD_FILE
    assert "supportedOperations[0].operations[0]: unknown operation 'CONV2D'" in \
        capsys.readouterr().err
    assert main(["inspect", "x.pt", "--device", MINIMAL, "--device", MINIMAL]) == ExitCode.USAGE
    assert f"--device names {MINIMAL} twice" in capsys.readouterr().err


def _shipped(name: str) -> dict:
    from importlib import resources

    folder = resources.files("torch_nnapi.nnapi.devices").joinpath("profiles")
    path = folder.joinpath(f"{name}.json")
    return json.loads(path.read_text())


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", *argv], capture_output=True,
                          text=True, timeout=600)


def test_convert_for_a_device_says_how_the_steps_change(tmp_path):
    model, out = _model(tmp_path), str(tmp_path / "for_minimal.pt")
    result = _cli("convert", model, "-o", out, "--input", "1x3x10x10", "--device", MINIMAL,
                  "--preference", "low_power")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"devices {MINIMAL} + nnapi-reference (low_power): converted without --device, 3" \
        " step(s) in 1 NNAPI model(s), 1 operation(s) on nnapi-reference" in result.stdout
    assert any(line.startswith(f"converted for {MINIMAL}: 2 step(s) in 2 NNAPI model(s), 0"
                               " operation(s) on nnapi-reference") and
               line.endswith(" 0% on nnapi-reference") for line in lines)
    assert "aten::sigmoid x1: nnapi-sample_minimal does not run its LOGISTIC" in result.stdout
    # the saved module is the partitioned one: it runs and matches the model
    loaded = torch.jit.load(out)
    x = torch.randn(1, 3, 10, 10)
    expected = torch.jit.load(model)(x)
    torch.testing.assert_close(loaded(x), expected, rtol=1e-4, atol=1e-5)


def test_convert_with_a_bad_device_is_one_line(tmp_path, capsys):
    model, profile = _model(tmp_path), tmp_path / "npu.json"
    profile.write_text("{'name': 1}")
    out = str(tmp_path / "x.pt")
    assert main(["convert", model, "-o", out, "--input", "1x3x10x10", "--device",
                 str(profile)]) == int(ExitCode.BAD_FILE)
    err = capsys.readouterr().err
    assert f"{profile}: not valid JSON" in err and "Traceback" not in err
    assert main(["convert", model, "-o", out, "--input", "1x3x10x10", "--device",
                 "nnapi-sample_fast"]) == int(ExitCode.USAGE)
    assert "nnapi-sample_fast: no shipped profile has this name" in capsys.readouterr().err


def test_convert_to_a_pte_for_a_device_leaves_what_it_cannot_run_to_executorch(tmp_path,
                                                                               capsys):
    pytest.importorskip("executorch", reason="ExecuTorch is not installed")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sigmoid(),
                                torch.nn.Conv2d(4, 4, 3)).eval()
    path, out = str(tmp_path / "model.pt"), str(tmp_path / "for_minimal.pte")
    torch.save(model, path)  # pickled: a .pte is exported from the nn.Module
    assert main(["convert", path, "-o", out, "--input", "1x3x10x10", "--device", MINIMAL]) == 0
    text = capsys.readouterr().out
    assert "2 NNAPI region(s) with 2 NNAPI operations, 1 node(s) on ExecuTorch's kernels" in text
    assert "on ExecuTorch: aten::sigmoid at" in text and MINIMAL in text


def test_check_on_the_sample_quant_driver_shows_androids_plan_and_its_page(tmp_path, capsys):
    """The issue's command: a quantized model checked against nnapi-sample_quant, which
    supports its 8-bit operations but is 50 times slower than the CPU."""
    path = save(QuantizedRelu(), torch.randn(1, 8), tmp_path / "q.pt")
    report = tmp_path / "q.html"
    assert main(["check", "--device", "nnapi-sample_quant", path, "--input", "1x8",
                 "--no-layers", "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "devices nnapi-sample_quant + nnapi-reference (sustained_speed): 1 step(s)" in out
    assert "because nnapi-sample_quant: supported, but its execTime 50 is not below the" \
        " CPU's 1" in out
    page = report.read_text()
    assert "On the devices" in page and "step 0: nnapi-reference" in page
