"""``torch-nnapi convert``, ``run`` and ``inspect`` end to end."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import torch.nn as nn

from torch_nnapi.cli import convert_cmd, main
from torch_nnapi.cli._errors import CliError, ExitCode, bad_file
from torch_nnapi.cli.convert_cmd import parse_input


class Small(nn.Module):
    def forward(self, x):
        y = torch.relu(x * 2 - 1)
        return torch.softmax(y.flatten(1), 1)


@pytest.fixture()
def model_file(tmp_path):
    path = tmp_path / "small.pt"
    torch.jit.save(torch.jit.trace(Small().eval(), torch.randn(1, 3, 4, 4)), str(path))
    return path


def test_input_specs():
    spec = parse_input("1x3x?224x?200:nhwc")
    assert spec.shape == (1, 3, 224, 200) and spec.flexible == (2, 3) and spec.nhwc
    assert parse_input("1x3x8x8").nhwc is None  # the converter chooses
    assert parse_input("1x3x8x8:nchw").nhwc is False
    assert parse_input("2x16:int64").dtype == "int64"
    q = parse_input("1x8:quint8=0.1,128")
    assert (q.dtype, q.scale, q.zero_point) == ("quint8", 0.1, 128)
    for bad in ("1x0x3", "1x3:nhwc", "1x3:nchw", "2x2:bogus", "1x8:quint8=0.1",
                "1x8:quint8=0.1,300", "1x8:quint8=nan,0", "1x8:quint8=-1,0"):
        with pytest.raises(CliError) as e:
            parse_input(bad)
        assert e.value.code == ExitCode.USAGE


def test_convert_run_inspect(model_file, tmp_path, capsys):
    out = tmp_path / "small_nnapi.pt"
    assert main(["convert", str(model_file), "-o", str(out), "--input", "1x3x?4x?4:nhwc",
                 "--bundle", "--check"]) == 0
    text = capsys.readouterr().out
    # the flatten of the NHWC input needs a TRANSPOSE (level 2); SOFTMAX gives no axis
    assert "feature level 2" in text and "result: OK, the saved module matches" in text
    assert main(["run", str(out), "--repeat", "2"]) == 0
    text = capsys.readouterr().out
    assert "inputs (bundled): [1, 3, 4, 4]" in text and "output 0: [1, 48]" in text
    assert main(["run", str(out), "--host", "--input", "1x3x6x5", "--repeat", "1",
                 "--profile"]) == 0
    assert "output 0: [1, 90]" in capsys.readouterr().out
    assert main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert "input 0: FLOAT32[1x?x?x3] NHWC" in text and "SOFTMAX" in text
    assert main(["inspect", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["feature_level"] == 2 and info["inputs"][0]["dimensions"] == [1, 0, 0, 3]


def test_unsupported_model_is_reported(tmp_path, capsys):
    class Bad(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 0) + torch.erfinv(x)

    bad = tmp_path / "bad.pt"
    torch.jit.save(torch.jit.trace(Bad(), torch.rand(2, 3)), str(bad))
    assert main(["convert", str(bad), "-o", str(tmp_path / "x.pt"), "--input", "2x3"]) == 1
    err = capsys.readouterr().err
    assert "aten::cumsum" in err and "aten::erfinv" in err


def test_lite_interpreter_output_and_layer_comparison(model_file, tmp_path, capsys):
    out = tmp_path / "small.ptl"
    assert main(["convert", str(model_file), "-o", str(out), "--input", "1x3x4x4", "--lite",
                 "--check", "--compare"]) == 0
    text = capsys.readouterr().out
    assert "relative (tolerance 0.0001) ok" in text and "aten::softmax" in text


def test_target_level(model_file, tmp_path, capsys):
    """Small: x * 2 - 1 (MUL, ADD), relu, flatten, softmax: level 1 taken NCHW."""
    out = tmp_path / "small_nnapi.pt"
    assert main(["convert", str(model_file), "-o", str(out), "--input", "1x3x4x4",
                 "--target-level", "1"]) == 0
    assert "feature level 1 (Android 8.1, API 27)" in capsys.readouterr().out
    # channels-last, the flatten needs a TRANSPOSE (level 2): refused, nothing saved
    refused = tmp_path / "refused.pt"
    assert main(["convert", str(model_file), "-o", str(refused), "--input", "1x3x4x4:nhwc",
                 "--target-level", "1"]) == ExitCode.TARGET_LEVEL
    assert not refused.exists()
    err = capsys.readouterr().err
    assert "needs NNAPI feature level 2 (Android 9, API 28), above the target level 1" in err
    assert "  TRANSPOSE x1 (level 2): TRANSPOSE was introduced at level 2" in err
    assert "      from aten::flatten at " in err
    assert main(["convert", str(model_file), "-o", str(out), "--input", "1x3x4x4:nhwc",
                 "--target-level", "2"]) == 0


def test_torch_using_commands_do_not_show_torchscript_deprecations(model_file, tmp_path,
                                                                   capsys, monkeypatch):
    """PyTorch 2.13 deprecates the TorchScript that PyTorch Mobile runs: the commands keep
    those warnings from users, and only those."""
    out = tmp_path / "small.ptl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["convert", str(model_file), "-o", str(out), "--input", "1x3x4x4", "--lite",
                     "--check"]) == 0
        assert main(["inspect", str(out)]) == 0
    shown = [str(w.message) for w in caught]
    assert not [m for m in shown if "torch.jit" in m or "Lite Interpreter" in m], shown

    def load_model(path):
        warnings.warn("`torch.jit.load` is deprecated. Please switch to `torch.export`.",
                      DeprecationWarning, stacklevel=2)
        warnings.warn("Lite Interpreter is deprecated.", DeprecationWarning, stacklevel=2)
        warnings.warn("some other API is deprecated", DeprecationWarning, stacklevel=2)
        raise bad_file("no model")

    monkeypatch.setattr(convert_cmd, "load_model", load_model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["convert", str(model_file), "-o", str(out), "--input", "1x3x4x4"]) == \
            ExitCode.BAD_FILE
    assert [str(w.message) for w in caught] == ["some other API is deprecated"]
    capsys.readouterr()
