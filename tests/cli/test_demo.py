"""``torch-nnapi demo`` end to end through ``torch_nnapi.cli.main``."""

from __future__ import annotations

import os
import subprocess
import sys

from torch_nnapi.cli import main


def test_demo_from_another_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--runs", "2"]) == 0
    text = capsys.readouterr().out
    assert "1. torch_nnapi.convert(model, x, nhwc=True):" in text
    # no optional inputs at their defaults, AVERAGE_POOL_2D for the global pool: level 1
    assert "feature level 1 (Android 8.1, API 27)" in text
    assert "CONV_2D" in text and "DEPTHWISE_CONV_2D" in text and "FULLY_CONNECTED" in text
    assert "2. ran through torch.classes._nnapi.Compilation on " in text
    assert "libneuralnetworks.so" in text and " ok" in text
    assert "outputs identical" in text and "4. latency (2 runs on " in text
    # a ratio of both sides on the same threads, or why there is none
    assert "   NNAPI / eager: " in text
    assert text.splitlines()[-1].startswith("OK: the NNAPI model agrees with PyTorch.")
    assert list(tmp_path.iterdir()) == []  # nothing left behind


def test_demo_model_is_what_it_says():
    import torch

    from torch_nnapi.cli.demo_cmd import demo_model

    model = demo_model()
    kinds = {type(m).__name__ for m in model.modules()}
    assert {"Conv2d", "BatchNorm2d", "ReLU6", "MaxPool2d", "Linear"} <= kinds
    assert any(m.groups > 1 for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    assert not model.training
    out = model(torch.randn(1, 3, 64, 64))
    assert out.shape == (1, 10) and torch.allclose(out.sum(), torch.tensor(1.0))


def test_demo_refuses_a_ratio_from_contended_runs(tmp_path):
    """As a user runs it, with the eager side's runs recorded as a competing process makes
    them (TORCH_NNAPI_BENCH_CONTEND, documented for testing)."""
    result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "demo", "--runs", "3"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "TORCH_NNAPI_BENCH_CONTEND": "eager"})
    assert result.returncode == 0, result.stderr
    [line] = [x for x in result.stdout.splitlines() if "NNAPI / eager: " in x]
    assert line.startswith("   NNAPI / eager: no ratio: ") and "the eager runs were" \
        " contended" in line and "--threads 1" in line, line
