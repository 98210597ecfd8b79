"""``torch-nnapi codegen``, and ``convert``/``check`` with the torch.export front-end."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
import torch

from torch_nnapi.cli import main

from ..conftest import package_env
from ..convert import zoo
from ._models import ConvLinear, Plain, ReturnsPair, save


def _pickled(tmp_path, model, name="model.pt") -> str:
    path = tmp_path / name
    torch.save(model.eval(), str(path))
    return str(path)


def _import_written(path, monkeypatch):
    """The written file as a module named after it (its classes pickle by that name)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, path.stem, module)
    spec.loader.exec_module(module)
    return module


def test_codegen_writes_a_matching_file(tmp_path, capsys):
    source = _pickled(tmp_path, Plain())
    out = tmp_path / "plain_code.py"
    assert main(["codegen", source, "-o", str(out), "--input", "1x3x4x4"]) == 0
    text = capsys.readouterr().out
    assert f"wrote {out} (class Plain) and {tmp_path / 'plain_code.pth'}" in text
    assert "matches the model within" in text
    assert "torch.sigmoid(relu)" in out.read_text()


@pytest.mark.slow
def test_codegen_of_the_quantized_stage(tmp_path, capsys):
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(zoo.MobileNetV2(num_classes=10, width=0.35))
    source = _pickled(tmp_path, model)
    out = tmp_path / "q.py"
    assert main(["codegen", source, "-o", str(out), "--input", "1x3x32x32", "--stage",
                 "quantized", "--calibration", "2"]) == 0
    assert "(class MobileNetV2)" in capsys.readouterr().out
    assert "quantize_per_tensor(" in out.read_text()


@pytest.mark.slow
def test_the_written_quantized_model_converts_as_its_source(tmp_path, monkeypatch, capsys):
    """The written file calls PT2E's quantize ops (not their arithmetic), so converting it
    gives the NNAPI operations torch_nnapi.quantize's model gives, from the command line."""
    import torch_nnapi
    from torch_nnapi.convert import convert_with_details

    torch.manual_seed(0)
    model = ConvLinear().eval()
    out = tmp_path / "quantized_code.py"
    assert main(["codegen", _pickled(tmp_path, model), "-o", str(out), "--input",
                 "1x3x12x12", "--stage", "quantized", "--calibration", "2"]) == 0
    written = _import_written(out, monkeypatch).load()
    x = torch.rand(1, 3, 12, 12)
    quantized = torch_nnapi.quantize(model, (x,), [(x,)], target_level=3)
    kinds = [[op.type for op in convert_with_details(m, (x,)).lowered.cx.model.operations]
             for m in (written, quantized)]
    assert kinds[0] == kinds[1]
    torch.save(written, tmp_path / "written.pt")
    result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "convert", "written.pt",
                             "-o", "written_nnapi.pt", "--input", "1x3x12x12"], cwd=tmp_path,
                            capture_output=True, text=True, env=package_env(), timeout=600)
    assert result.returncode == 0, result.stderr
    assert f"{len(kinds[0])} NNAPI operations" in result.stdout


def test_codegen_returns_the_models_named_tuple(tmp_path, monkeypatch, capsys):
    out = tmp_path / "pair_code.py"
    assert main(["codegen", _pickled(tmp_path, ReturnsPair()), "-o", str(out), "--input",
                 "2x3"]) == 0
    assert "Pair = collections.namedtuple('Pair', ('out', 'state'))" in out.read_text()
    x = torch.randn(2, 3)
    result = _import_written(out, monkeypatch).load()(x)
    assert type(result).__name__ == "Pair" and result._fields == ("out", "state")
    torch.testing.assert_close(result.state["doubled"], x * 2.0)


def test_codegen_of_a_model_quantized_to_int8(tmp_path, capsys):
    source = _pickled(tmp_path, Plain())
    out = tmp_path / "signed.py"
    assert main(["codegen", source, "-o", str(out), "--input", "1x3x4x4", "--stage",
                 "quantized", "--target-level", "4", "--calibration", "1"]) == 0
    assert "matches the model within" in capsys.readouterr().out
    assert "torch.int8" in out.read_text()


def test_codegen_refuses_torchscript(tmp_path, capsys):
    source = save(Plain(), torch.randn(1, 3, 4, 4), tmp_path / "plain.pt")
    assert main(["codegen", source, "-o", str(tmp_path / "x.py"), "--input", "1x3x4x4"]) == 5
    assert "a TorchScript module, which torch.export cannot capture" in capsys.readouterr().err


def test_codegen_names_what_export_cannot_capture(tmp_path, capsys):
    from ..convert.capture.test_export import Specialized

    source = _pickled(tmp_path, Specialized())
    assert main(["codegen", source, "-o", str(tmp_path / "x.py"),
                 "--input", "1x3x?8x8"]) == 1
    assert "input 0 dimension 2 cannot be flexible: the model fixes it" \
        in capsys.readouterr().err


def test_convert_and_check_an_exported_program_file(tmp_path, capsys):
    x = torch.randn(1, 3, 4, 4)
    program = tmp_path / "plain.pt2"
    torch.export.save(torch.export.export(Plain().eval(), (x,)), str(program))
    out = tmp_path / "plain_nnapi.pt"
    assert main(["convert", str(program), "-o", str(out), "--input", "1x3x4x4",
                 "--check"]) == 0
    assert "result: OK, the saved module matches the model" in capsys.readouterr().out
    assert main(["check", str(program), "--input", "1x3x4x4"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("result: OK")
    pickled = _pickled(tmp_path, Plain())
    assert main(["check", pickled, "--input", "1x3x4x4", "--capture", "export"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("result: OK")


def test_convert_and_check_an_exported_program_with_the_fallback(tmp_path, capsys):
    from ..convert.capture.test_export import ConvCumsum

    x = torch.randn(1, 3, 8, 8)
    program = tmp_path / "cumsum.pt2"
    torch.export.save(torch.export.export(ConvCumsum().eval(), (x,)), str(program))
    out = tmp_path / "cumsum_nnapi.pt"
    assert main(["convert", str(program), "-o", str(out), "--input", "1x3x8x8"]) == 1
    assert "would convert the model into 2 NNAPI regions" in capsys.readouterr().err
    assert main(["convert", str(program), "-o", str(out), "--input", "1x3x8x8",
                 "--fallback"]) == 0
    assert "into 2 NNAPI regions (3 operations), 1 node on the CPU" in capsys.readouterr().out
    assert main(["check", str(program), "--input", "1x3x8x8", "--fallback"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("result: OK, converts into 2")


def test_check_lists_float_islands(tmp_path, capsys):
    from torch_nnapi.quantization import quantize

    from ..convert.capture.test_qdq import HardSwish

    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    program = tmp_path / "q.pt2"
    quantized = quantize(HardSwish().eval(), (x,), observer="minmax")
    torch.export.save(torch.export.export(quantized, (x,)), str(program))
    assert main(["check", str(program), "--input", "1x3x8x8"]) == 0
    text = capsys.readouterr().out
    assert "quantized operations run in uint8\n" in text
    assert "float islands: 1 (computed in float between DEQUANTIZE and QUANTIZE)" in text
    assert "    aten::hardswish: NNAPI has no quantized HARD_SWISH before feature level 4" \
        in text
