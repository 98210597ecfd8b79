"""torchvision's MobileNetV2, MobileNetV3-large and ResNet-18 quantized with per-channel
weights (``torch_nnapi.executorch.quantize``) at feature levels 3 (uint8) and 4 (int8),
lowered to .pte files with NnapiBackend, saved, and run in a fresh process through
ExecuTorch's runtime on torch-nnapi's libneuralnetworks.so: within MAX_QUANTA output quanta of
the PT2E model and, at level 4, at most one quantum farther from it than XNNPACK's integer
kernels running the same PT2E model (XnnpackPartitioner, ``xnnpack.py``). Slow (``-m slow``,
run by .ci/run).

Why not one quantum: layer by layer (``convert.tools.compare``, each layer computed from the
PT2E model's values of its inputs, per-channel weights as this back-end lowers them), every
layer of ResNet-18 and MobileNetV3-large at level 4 is within one quantum of the PT2E model:
convolutions, adds, muls and hard swish differ by one on at most 1.4% of their elements (the
PT2E model rounds float32 sums near a half), the global average pools on up to 11% (NNAPI's
AVERAGE_POOL_2D rounds the sum of the raw values half away from zero: with the negative zero
points int8 takes after a ReLU, ties round down, a mean of -0.03 to -0.09 quanta). Chained
through the network the single quanta add up. Measured at level 4 (largest distance in
quanta, share of outputs beyond one): ResNet-18 NNAPI 3 (9.5%), XNNPACK 2 (3.6%);
MobileNetV3-large NNAPI 2 (1.3%), XNNPACK 2 (1.1%); MobileNetV2 NNAPI 1, XNNPACK 1. XNNPACK's
integer kernels land about as far from the PT2E model's float arithmetic (ResNet-18's extra
quantum is most likely its average pool's biased ties; not isolated further), so the residual
is the integer/float difference, not the conversion's.
"""

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
from ..convert.executorch.xnnpack import xnnpack_pte  # noqa: E402
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
    if target_level == 4:  # XNNPACK's per-channel integer kernels are signed
        from executorch.runtime import Runtime

        program = Runtime.get().load_program(xnnpack_pte(quantized, x))
        method = program.load_method("forward")
        (xnnpack,) = method.execute([x])
        baseline = float((xnnpack.double() - expected.double()).abs().max()) \
            / output_quantum(quantized)
        assert quanta <= baseline + 1.001, \
            f"{name}: NNAPI {quanta:.2f} quanta from the PT2E model, XNNPACK {baseline:.2f}"
