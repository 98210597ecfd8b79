"""``torch-nnapi check`` end to end through ``torch_nnapi.cli.main``."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from torch_nnapi.cli import main
from torch_nnapi.cli._errors import ExitCode
from torch_nnapi.convert.lowerings import LOWERINGS, lowering_for

from ._models import Plain, QuantizedRelu, Scaled, Unsupported, save


def _check(capsys, *argv) -> tuple[int, str]:
    code = main(["check", *map(str, argv)])
    return code, capsys.readouterr().out


@pytest.fixture()
def scaled_file(tmp_path):
    return save(Scaled(), torch.randn(1, 3, 4, 4), tmp_path / "scaled.pt")


def test_model_that_converts_and_matches(scaled_file, capsys):
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4:nhwc")
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0] == "inputs: [1, 3, 4, 4] float32 (NHWC)"
    assert "feature level 3 (Android 10, API 29), forced by:" in text
    assert "  EXP x1 (level 3): EXP was introduced at level 3" in text
    assert "from aten::exp at " in text and "_models.py" in text
    assert "layout transposes inserted: 1" in text
    assert "TRANSPOSE [1x4x4x3] by [0, 3, 1, 2], for aten::flatten at" in text
    assert "output 0 [1, 48]:" in text and " ok" in text
    assert "all within tolerance" in text and "worst layers:" in text
    assert lines[-1] == "result: OK, converts and matches PyTorch; needs NNAPI feature level 3"
    # the report's sections come in the documented order
    order = ["converts:", "feature level", "operations:", "layout transposes", "outputs",
             "layer by layer", "result:"]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)


def test_target_level_names_rejected_operations(scaled_file, capsys):
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4:nhwc", "--target-level", "1")
    assert code == 3, text
    section = text[text.index("target level 1 (Android 8.1): a device would reject"):
                   text.index("outputs against eager")]
    assert "  EXP x1 (level 3): EXP was introduced at level 3" in section
    assert "from aten::exp at" in section
    assert "  TRANSPOSE x1 (level 2): TRANSPOSE was introduced at level 2" in section
    assert "from aten::flatten at" in section
    rejected = [line for line in section.splitlines() if line.startswith("  ") and " x" in line
                and "(level " in line]
    count = sum(int(line.split(" x")[1].split()[0]) for line in rejected)
    assert f"would reject {count} operations" in section
    assert "result: FAIL, converts and matches PyTorch, but needs feature level 3 (target 1)" \
        in text
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4:nhwc", "--target-level", "3")
    assert code == 0 and "every operation is supported" in text


def test_target_level_json(scaled_file, capsys):
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4", "--target-level", "2",
                        "--json")
    report = json.loads(text)
    assert code == 3 and report["exit_code"] == 3 and not report["ok"]
    rejected = {op["type"]: op for op in report["rejected"]}
    assert "EXP" in rejected and all(op["level"] == 3 for op in report["rejected"])
    assert rejected["EXP"]["requirements"][0] == {"level": 3,
                                                  "reason": "EXP was introduced at level 3"}
    assert "aten::exp at" in rejected["EXP"]["origin"]
    assert report["feature_level"] == 3 and report["api_level"] == 29
    assert report["operation_counts"]["EXP"] == 1
    assert report["transposes"] == []  # NCHW input: flatten needs no transpose


def test_level_one_model_fits_every_device(tmp_path, capsys):
    path = save(Plain(), torch.randn(2, 5), tmp_path / "plain.pt")
    code, text = _check(capsys, path, "--input", "2x5", "--target-level", "1")
    assert code == 0, text
    assert "feature level 1 (Android 8.1, API 27)\n" in text
    assert "every operation is supported" in text


def test_unsupported_operations_are_all_listed(tmp_path, capsys):
    path = save(Unsupported(), torch.rand(2, 3), tmp_path / "unsupported.pt")
    code, text = _check(capsys, path, "--input", "2x3")
    assert code == 1, text
    assert "2 unsupported operations (3 uses)" in text
    assert "  aten::erfinv x2" in text and "  aten::cumsum x1" in text
    locations = [line for line in text.splitlines() if line.strip().startswith("at ")]
    assert len(locations) == 3 and all("_models.py:" in line for line in locations)
    assert text.splitlines()[-1] == "result: FAIL, cannot convert (2 unsupported operations)"
    code, text = _check(capsys, path, "--input", "2x3", "--json")
    report = json.loads(text)
    assert code == 1 and not report["converted"]
    assert sorted(u["kind"] for u in report["unsupported"]) == \
        ["aten::cumsum", "aten::erfinv", "aten::erfinv"]


def test_wrong_lowering_is_caught_layer_by_layer(scaled_file, capsys, monkeypatch):
    """A MUL lowering that scales its constant by 1.01: the check must name that layer."""
    honest = lowering_for("aten::mul")
    assert honest is not None

    def wrong(cx, a, b):
        # traced scalars arrive as constant tensors
        return honest.fn(cx, a, b * 1.01 if isinstance(b, torch.Tensor) else b)

    monkeypatch.setitem(LOWERINGS, "aten::mul", dataclasses.replace(honest, fn=wrong))
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4")
    assert code == 2, text
    assert "MISMATCH" in text
    lines = text.splitlines()
    k = next(i for i, line in enumerate(lines) if "first layer over tolerance" in line)
    assert lines[k].startswith("  first layer over tolerance: aten::mul %")
    assert lines[k].endswith("[1, 3, 4, 4]: 0.01 relative (tolerance 0.0001)")
    assert lines[k + 1].strip().startswith("at ") and "_models.py:" in lines[k + 1]
    assert text.splitlines()[-1] == "result: FAIL, the converted model does not match PyTorch"
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4", "--json")
    report = json.loads(text)
    assert report["first_bad_layer"]["kind"] == "aten::mul"
    assert report["first_bad_layer"]["error"] == pytest.approx(0.01, rel=0.05)
    assert report["worst_layers"][0]["error"] > report["float_tolerance"]


def test_tolerance_option(scaled_file, capsys, monkeypatch):
    honest = lowering_for("aten::mul")
    assert honest is not None

    def slightly_wrong(cx, a, b):
        return honest.fn(cx, a, b * (1 + 1e-5) if isinstance(b, torch.Tensor) else b)

    monkeypatch.setitem(LOWERINGS, "aten::mul", dataclasses.replace(honest, fn=slightly_wrong))
    code, _ = _check(capsys, scaled_file, "--input", "1x3x4x4", "--no-layers")
    assert code == 0
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4", "--rtol", "1e-6")
    assert code == 2 and "aten::mul" in text


def test_quantized_tensors_compared_in_quanta(tmp_path, capsys):
    path = save(QuantizedRelu(), torch.randn(1, 8), tmp_path / "q.pt")
    code, text = _check(capsys, path, "--input", "1x8", "--json")
    report = json.loads(text)
    assert code == 0, text
    assert report["outputs"][0]["unit"] == "quanta" and report["outputs"][0]["error"] <= 1
    units = {layer["kind"]: layer["unit"] for layer in report["layers"]}
    assert units["aten::quantize_per_tensor"] == "quanta"
    assert units["aten::dequantize"] == "quanta"
    assert report["quanta_tolerance"] == 8
    # the eager reference of quantized models uses qnnpack, as on mobile; restored after
    assert report["quantized"] and report["quantized_engine"] == "qnnpack"
    engine = torch.backends.quantized.engine
    code, text = _check(capsys, path, "--input", "1x8", "--quantized-engine", "default")
    assert code == 0 and f"(quantized engine {engine})" in text
    assert torch.backends.quantized.engine == engine
    assert main(["check", path, "--input", "1x8", "--quantized-engine", "bogus"]) == \
        ExitCode.USAGE
    assert "quantized engine 'bogus' is not available" in capsys.readouterr().err


def test_flexible_input(scaled_file, capsys):
    code, text = _check(capsys, scaled_file, "--input", "1x3x?4x?4:nhwc")
    assert code == 0, text
    assert text.splitlines()[0] == "inputs: [1, 3, 4, 4] float32 (NHWC, flexible dims 2,3)"


def test_host_runtime_option(scaled_file, capsys):
    code, text = _check(capsys, scaled_file, "--input", "1x3x4x4", "--host")
    assert code == 0, text
    assert "outputs against eager PyTorch, on host runtime:" in text


def test_inputs_that_do_not_fit_the_model(tmp_path, capsys):
    path = save(torch.nn.Linear(5, 3), torch.randn(2, 5), tmp_path / "linear.pt")
    assert main(["check", path, "--input", "2x4"]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert not captured.out
    assert "error: the model fails on inputs [2, 4] float32:" in captured.err
    assert "(2x4 and 5x3)" in captured.err


def test_bad_arguments(scaled_file, tmp_path, capsys):
    assert main(["check", str(tmp_path / "missing.pt"), "--input", "1x3x4x4"]) == \
        ExitCode.BAD_FILE
    assert main(["check", scaled_file, "--input", "1x0x4"]) == ExitCode.USAGE
    assert "dimension 1" in capsys.readouterr().err
    assert main(["check", scaled_file, "--input", "1x3x4x4", "--target-level", "9"]) == \
        ExitCode.USAGE
    assert "invalid choice: 9" in capsys.readouterr().err


def test_mobilenet_v2_fits_level_1(tmp_path, capsys):
    """A CNN taken NCHW, as usual: nothing a level-1 (Android 8.1) device would reject."""
    from ..convert import zoo

    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(zoo.MobileNetV2(num_classes=10))
    path = save(model, torch.randn(1, 3, 64, 64), tmp_path / "mobilenet_v2.pt")
    code, text = _check(capsys, path, "--input", "1x3x64x64", "--target-level", "1",
                        "--no-layers")
    assert code == 0, text
    assert text.splitlines()[0] == "inputs: [1, 3, 64, 64] float32 (NHWC)"
    assert "feature level 1 (Android 8.1, API 27)\n" in text
    assert "target level 1 (Android 8.1): every operation is supported" in text
    assert "would reject" not in text
    assert "layout transposes inserted: 0" in text
    # asked to keep NCHW, every convolution needs NNAPI's layout flag (level 3)
    code, text = _check(capsys, path, "--input", "1x3x64x64:nchw", "--target-level", "1",
                        "--no-layers")
    assert code == 3, text
    assert "CONV_2D x35 (level 3): CONV_2D's optional input nchw needs level 3" in text
    assert "DEPTHWISE_CONV_2D x17 (level 3)" in text


def _fx_quantized(model: torch.nn.Module, x: torch.Tensor, path) -> str:
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    from torch_nnapi.convert.tools.check import quantized_engine

    torch.manual_seed(0)
    with quantized_engine("qnnpack"):
        prepared = prepare_fx(model.eval(), get_default_qconfig_mapping("qnnpack"), (x,))
        for _ in range(4):
            prepared(torch.randn_like(x) * 2)
        return save(convert_fx(prepared), x, path)


class ConvReLU6Conv(torch.nn.Module):
    """MobileNetV2's pattern: a convolution, ReLU6 (aten::hardtanh once quantized), another."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.act = torch.nn.ReLU6()
        self.project = torch.nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return self.project(self.act(self.conv(x)))


@pytest.mark.skipif(not {"qnnpack", "x86"} <= set(torch.backends.quantized.supported_engines)
                    and not {"qnnpack", "fbgemm"} <= set(
                        torch.backends.quantized.supported_engines),
                    reason="needs PyTorch's qnnpack and x86 (or fbgemm) quantized engines")
def test_a_reference_the_engines_disagree_on_is_not_blamed_on_the_conversion(tmp_path,
                                                                             capsys):
    """qnnpack's quantized hardtanh returns a channels-last tensor's values in the wrong
    order (FX-quantized MobileNetV2 was reported as a 125-quanta MISMATCH): the x86 engine
    agrees with NNAPI, so check says the reference disagrees and exits 0."""
    x = torch.randn(1, 3, 8, 8)
    path = _fx_quantized(ConvReLU6Conv(), x, tmp_path / "fx.pt")
    code, text = _check(capsys, path, "--input", "1x3x8x8")
    assert code == 0, text
    output = next(line for line in text.splitlines() if line.startswith("  output 0"))
    assert "reference disagrees: " in output and "from PyTorch's" in output
    assert "reference disagrees on" in text and "first: aten::hardtanh" in text
    assert "PyTorch's qnnpack and" in text.splitlines()[-1]
    assert "MISMATCH" not in text
    code, text = _check(capsys, path, "--input", "1x3x8x8", "--json")
    report = json.loads(text)
    assert report["alternate_engine"] in ("x86", "fbgemm")
    verdicts = {layer["kind"]: layer["verdict"] for layer in report["layers"]}
    assert verdicts["aten::hardtanh"] == "reference disagrees"
    assert report["outputs"][0]["verdict"] == "reference disagrees"


def test_isolated_layers_each_start_from_pytorchs_input(tmp_path, capsys):
    """A chain of quantized convolutions: NNAPI and PyTorch round differently by a quantum
    now and then, and the differences are carried down the chain; fed PyTorch's own input,
    each layer shows only its own."""
    layers: list[torch.nn.Module] = [torch.nn.Conv2d(3, 8, 1)]
    for _ in range(8):
        layers += [torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.ReLU()]
    path = _fx_quantized(torch.nn.Sequential(*layers), torch.randn(1, 3, 8, 8),
                         tmp_path / "deep.pt")
    chained = json.loads(_check(capsys, path, "--input", "1x3x8x8", "--json")[1])
    code, text = _check(capsys, path, "--input", "1x3x8x8", "--json", "--isolated")
    isolated = json.loads(text)
    assert code == 0 and isolated["isolated"]
    assert len(isolated["layers"]) == len(chained["layers"])
    errors = [(a["error"], b["error"])
              for a, b in zip(isolated["layers"], chained["layers"], strict=True)]
    assert all(alone <= carried for alone, carried in errors), errors
    assert sum(alone for alone, _ in errors) < sum(carried for _, carried in errors), errors
    code, text = _check(capsys, path, "--input", "1x3x8x8", "--isolated")
    assert "layer by layer (host runtime, each from PyTorch's own input," in text


def test_convert_check_gives_a_verdict_and_fails_over_the_tolerance(scaled_file, tmp_path,
                                                                    capsys, monkeypatch):
    honest = lowering_for("aten::mul")
    assert honest is not None

    def slightly_wrong(cx, a, b):
        return honest.fn(cx, a, b * (1 + 1e-5) if isinstance(b, torch.Tensor) else b)

    out = str(tmp_path / "converted.pt")
    assert main(["convert", scaled_file, "-o", out, "--input", "1x3x4x4", "--check"]) == 0
    assert "result: OK, the saved module matches the model" in capsys.readouterr().out
    monkeypatch.setitem(LOWERINGS, "aten::mul", dataclasses.replace(honest, fn=slightly_wrong))
    assert main(["convert", scaled_file, "-o", out, "--input", "1x3x4x4", "--check",
                 "--rtol", "1e-7"]) == ExitCode.MISMATCH
    text = capsys.readouterr().out
    assert "(tolerance 1e-07) MISMATCH" in text
    assert text.splitlines()[-1] == "result: MISMATCH, the saved module does not match the model"


def test_check_shows_the_regions_inside_a_branch():
    """check --fallback's report of a cascade: the branch's own region under the branch,
    the outputs compared with eager."""
    from torch_nnapi.cli.check_cmd import render
    from torch_nnapi.convert.tools.check import check_model

    from ..convert import control_models as cm

    model = cm.scripted(cm.Cascade())
    image = torch.randn(1, 3, 12, 12, generator=torch.Generator().manual_seed(1))
    text = "\n".join(render(check_model(model, (image,), fallback=True)))
    assert "inside prim::If (then) at " in text
    assert "\n    partitioned: 1 NNAPI region (6 operations)" in text
    assert "1 NNAPI region (+1 inside loops and branches)" in text.splitlines()[-1]
    assert "output 0 [1, 5]: " in text and "result: OK" in text


@pytest.mark.slow
def test_quantized_drift_with_matching_outputs_is_not_a_failure(tmp_path):
    """Eager-quantized layers drift by a quantum each, carried down the network, while the
    output matches (torchvision's quantized MobileNetV2 drifted 11 quanta against a tolerance
    of 8 and check said FAIL, exit 2): the verdict is the outputs', the drift is named and
    --isolated is pointed to. A tolerance of half a quantum shows it on a small network."""
    import subprocess
    import sys

    from ._models import save_deep_quantized

    path = save_deep_quantized(tmp_path / "deep_q.pt")

    def check(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "check", path,
                               "--input", "1x3x16x16", "--quanta", "0.5", *argv],
                              capture_output=True, text=True, timeout=300)

    result = check("--json")
    report = json.loads(result.stdout)
    assert result.returncode == 0, result.stdout[-2000:]
    assert all(o["verdict"] == "ok" for o in report["outputs"])
    drifting = [layer for layer in report["layers"] if layer["verdict"] == "drift"]
    assert drifting and all(layer["drift"] for layer in drifting)
    assert report["first_bad_layer"] is None
    result = check()
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout
    assert any(line.startswith(f"  drift, not a mismatch: {len(drifting)} quantized layers"
                               " drift up to ") and "--isolated computes each layer" in line
               for line in lines), result.stdout
    assert lines[-1].startswith("result: OK, converts and matches PyTorch;")
    assert "carried down the layers while the outputs match" in lines[-1]
    result = check("--isolated")  # each layer alone: no drift to excuse
    assert "each from PyTorch's own input" in result.stdout and "drift" not in result.stdout
