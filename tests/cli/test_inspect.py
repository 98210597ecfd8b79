"""``torch-nnapi inspect``: operations with named scalar inputs and their PyTorch origin."""

from __future__ import annotations

import json

import torch

from torch_nnapi.cli import main

from ._models import save


class Pooled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)) * 2.0


def test_inspect_names_scalars_and_shows_origins(tmp_path, capsys):
    model = save(Pooled(), torch.randn(1, 3, 8, 8), tmp_path / "pooled.pt")
    fixed, flexible = str(tmp_path / "fixed.pt"), str(tmp_path / "flexible.pt")
    assert main(["convert", model, "-o", fixed, "--input", "1x3x8x8:nhwc"]) == 0
    assert main(["convert", model, "-o", flexible, "--input", "1x3x?8x?8:nhwc"]) == 0
    capsys.readouterr()
    assert main(["inspect", fixed]) == 0
    text = capsys.readouterr().out
    conv = next(line for line in text.splitlines() if " CONV_2D " in line)
    assert "stride_w=2" in conv and "stride_h=2" in conv and "fuse_code=1" in conv
    assert "[aten::_convolution at " in conv and "test_inspect.py:" in conv
    assert "input 0: FLOAT32[1x8x8x3] NHWC (PyTorch shape [1, 3, 8, 8])" in text
    assert main(["inspect", flexible]) == 0
    assert "(PyTorch shape [1, 3, -1, -1], -1: flexible)" in capsys.readouterr().out
    assert main(["inspect", fixed, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    operation = next(op for op in info["operations"] if op["type"] == "CONV_2D")
    assert "aten::_convolution at" in operation["origin"]
    assert {e.get("name") for e in operation["inputs"]} >= {"input", "filter", "stride_w"}


def test_inspect_shows_the_regions_inside_a_loop(tmp_path, capsys):
    """A greedy decoder whose every region is inside its loop: the loop's body is shown
    under the loop, with its region."""
    from torch_nnapi.convert.api import convert_with_details

    from ..convert import control_models as cm

    model = cm.scripted(cm.GreedyGru())
    module = convert_with_details(model, (torch.randn(1, 16), torch.tensor([1])),
                                  fallback=True).module
    path, text = _inspected_loop(tmp_path / "gru_nnapi.pt", module, capsys)
    assert "    partitioned: 1 NNAPI region (" in text
    assert main(["inspect", path, "--probe-model", str(tmp_path / "gru.probe")]) == 4
    assert "has no NNAPI region outside its loops and branches" in capsys.readouterr().err


def test_inspect_shows_the_regions_inside_an_exported_scan(tmp_path, capsys):
    """An exported scan, converted for PyTorch Mobile with the fallback: a TorchScript loop
    whose step is one region, shown under the loop."""
    from torch_nnapi.convert.api import convert_with_details

    from ..convert.exported_control import RunningState

    module = convert_with_details(RunningState().eval(), (torch.randn(5, 2, 4),
                                                          torch.randn(2, 4)),
                                  capture="export", fallback=True).module
    _, text = _inspected_loop(tmp_path / "scan_nnapi.pt", module, capsys)
    assert "GATHER 1" in text and "FULLY_CONNECTED 1" in text


def _inspected_loop(file, module, capsys) -> tuple[str, str]:
    """``module`` saved to ``file`` and inspected: (its path, the text), checked to show
    one region, inside a loop's body."""
    path = str(file)
    torch.jit.save(module, path)
    assert main(["inspect", path]) == 0
    text = capsys.readouterr().out
    assert "0 NNAPI regions (+1 inside loops and branches)" in text.splitlines()[0]
    assert "inside prim::Loop (body) at " in text
    return path, text


def test_probe_model_writes_each_region_of_a_partitioned_module(tmp_path, capsys):
    from torch_nnapi.nnapi.probe_model import read_probe_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sigmoid(),
                                torch.nn.Conv2d(4, 4, 3)).eval()
    source = save(model, torch.randn(1, 3, 10, 10), tmp_path / "model.pt")
    converted = str(tmp_path / "parts.pt")
    assert main(["convert", source, "-o", converted, "--input", "1x3x10x10", "--fallback",
                 "--fallback-op", "aten::sigmoid"]) == 0
    capsys.readouterr()
    assert main(["inspect", converted, "--summary", "--probe-model",
                 str(tmp_path / "parts.probe")]) == 0
    text = capsys.readouterr().out
    for k in (0, 1):
        path = tmp_path / f"parts.region{k}.probe"
        assert f"probe model: {path}" in text
        assert [op.type.name for op in read_probe_model(path).operations] == ["CONV_2D"]
    assert main(["inspect", converted, "--probe-model", str(tmp_path / "no" / "x.probe")]) == 6
    assert "directory" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "model.pte"), "--probe-model", "x.probe"]) == 4
    assert "--probe-model reads a module saved by torch-nnapi convert, not a .pte" in \
        capsys.readouterr().err
