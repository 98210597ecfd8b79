"""torchvision's MobileNetV2, MobileNetV3-large and ResNet-18 quantized with per-channel
weights (``torch_nnapi.executorch.quantize``) at feature levels 3 (uint8) and 4 (int8),
lowered to .pte files with NnapiBackend, saved, and run in a fresh process through
ExecuTorch's runtime on torch-nnapi's libneuralnetworks.so: within 3 output quanta of the PT2E
model, the bound of the per-tensor models in tests/realmodels (measured: MobileNetV2 1,
MobileNetV3-large 2, ResNet-18 3 quanta at either level: the PT2E model computes in float
between its quantize and dequantize nodes, NNAPI in integers, and the rounding differences add
up over the layers; the small per-channel cases of tests/convert/executorch, which run in the
default suite, are within one). Slow (``-m slow``, run by .ci/run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

import torch_nnapi.executorch as nnapi_executorch  # noqa: E402
from tests.conftest import package_env  # noqa: E402

from ..convert.executorch.cases import output_quantum  # noqa: E402
from .classification import build  # noqa: E402

pytestmark = pytest.mark.slow

RUNNER = Path(__file__).parents[1] / "convert" / "executorch" / "run_pte.py"
MODELS = ("mobilenet_v2", "mobilenet_v3_large", "resnet18")
CALIBRATION = 4
MAX_QUANTA = 3


@pytest.mark.parametrize("target_level", [3, 4])
@pytest.mark.parametrize("name", MODELS)
def test_per_channel_model_runs_through_executorch(tmp_path: Path, name: str,
                                                   target_level: int) -> None:
    model, x = build(name)
    generator = torch.Generator().manual_seed(1)
    calibration = [x, *(torch.randn(x.shape, generator=generator)
                        for _ in range(CALIBRATION - 1))]
    quantized = nnapi_executorch.quantize(model, (x,), calibration, target_level=target_level)
    assert any("dequantize_per_channel" in str(n.target) for n in quantized.graph.nodes)
    with torch.no_grad():
        expected = quantized(x)
    (tmp_path / "model.pte").write_bytes(
        nnapi_executorch.to_pte(quantized, (x,), target_level=target_level))
    torch.save((x,), tmp_path / "model.inputs.pt")
    run = subprocess.run([sys.executable, str(RUNNER), str(tmp_path), "model"],
                         capture_output=True, text=True, env=package_env(), timeout=900,
                         check=False)
    assert run.returncode == 0 and "done" in run.stdout, run.stderr[-4000:]
    error = tmp_path / "model.error.txt"
    assert not error.exists(), error.read_text()
    (got,) = torch.load(tmp_path / "model.outputs.pt")
    quanta = float((got.double() - expected.double()).abs().max()) / output_quantum(quantized)
    assert quanta <= MAX_QUANTA * 1.001, f"{name} at level {target_level}: {quanta:.2f} quanta"
