"""``torch-nnapi codegen``, and ``convert``/``check`` with the torch.export front-end."""

from __future__ import annotations

import torch

from torch_nnapi.cli import main

from ..convert import zoo
from ._models import Plain, save


def _pickled(tmp_path, model, name="model.pt") -> str:
    path = tmp_path / name
    torch.save(model.eval(), str(path))
    return str(path)


def test_codegen_writes_a_matching_file(tmp_path, capsys):
    source = _pickled(tmp_path, Plain())
    out = tmp_path / "plain_code.py"
    assert main(["codegen", source, "-o", str(out), "--input", "1x3x4x4"]) == 0
    text = capsys.readouterr().out
    assert f"wrote {out} (class Plain) and {tmp_path / 'plain_code.pth'}" in text
    assert "matches the model within" in text
    assert "torch.sigmoid(relu)" in out.read_text()


def test_codegen_of_the_quantized_stage(tmp_path, capsys):
    torch.manual_seed(0)
    model = zoo.randomize_batchnorm(zoo.MobileNetV2(num_classes=10, width=0.35))
    source = _pickled(tmp_path, model)
    out = tmp_path / "q.py"
    assert main(["codegen", source, "-o", str(out), "--input", "1x3x32x32", "--stage",
                 "quantized", "--calibration", "2"]) == 0
    assert "(class MobileNetV2)" in capsys.readouterr().out
    assert "quantize_per_tensor(" in out.read_text()


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
