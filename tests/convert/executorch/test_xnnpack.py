"""The PT2E model of ``torch_nnapi.quantize`` through ExecuTorch's XnnpackPartitioner
(``xnnpack.py``, which bench/executorch.py and the per-channel real-model test use to compare
NNAPI's integer kernels with XNNPACK's): with its int32 biases made float it computes what
the PT2E model computes, and XNNPACK loads and runs it within one output quantum."""

from __future__ import annotations

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

import torch_nnapi  # noqa: E402

from .cases import SmallCnn, output_quantum  # noqa: E402
from .xnnpack import float_biases, xnnpack_pte  # noqa: E402


@pytest.mark.parametrize("per_channel", [False, True])
def test_xnnpack_runs_the_pt2e_model(per_channel: bool) -> None:
    from executorch.runtime import Runtime

    torch.manual_seed(1)
    calibration = [torch.rand(1, 3, 16, 16) for _ in range(4)]
    x = calibration[0]
    model = torch_nnapi.quantize(SmallCnn().eval(), (x,), calibration, target_level=4,
                                 per_channel=per_channel)
    floated = float_biases(model)
    assert not [n for n in floated.graph.nodes
                if "dequantize" in str(n.target) and n.args[-1] == torch.int32]
    assert any(n.args[-1] == torch.int32 for n in model.graph.nodes
               if "dequantize" in str(n.target)), "the original keeps its int32 biases"
    with torch.no_grad():
        expected = model(x)
        assert torch.equal(floated(x), expected)
    program = Runtime.get().load_program(xnnpack_pte(model, x))
    method = program.load_method("forward")
    (got,) = method.execute([x])
    assert float((got - expected).abs().max()) <= output_quantum(model) * 1.001
