"""Layer-by-layer comparison of a conversion with eager PyTorch, on the host runtime.

Every tensor the graph computes is compared with the NNAPI operand that holds it (read back
in PyTorch's layout): float tensors by their error relative to the tensor's magnitude,
quantized ones, and float ones dequantized from them, in quanta. A value NNAPI never holds
(the input of an activation fused into the operation before it) is skipped. The first layer that drifts is where to look when a converted
model disagrees with PyTorch (``torch-nnapi convert --compare``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..runtime import Compilation
from . import layout as lay
from .api import lower_graph
from .frontend import capture_model
from .values import TensorValue


@dataclass
class LayerDiff:
    kind: str
    location: str
    name: str
    shape: tuple
    error: float
    unit: str  # "relative" (float tensors) or "quanta" (quantized tensors)

    def __str__(self) -> str:
        value = f"{self.error:.3g}" if self.unit == "relative" else f"{self.error:g} quanta"
        return (f"{self.kind:32} %{self.name:16} {list(self.shape)!s:20} {value:>14}"
                f"  {self.location}")


def compare_layers(model, example_inputs, **options) -> list[LayerDiff]:
    """Converts ``model`` and compares every intermediate tensor with eager PyTorch."""
    captured = capture_model(model, example_inputs, capture_mode=options.get("capture"),
                             flexible=options.get("flexible"), keep_values=True)
    graph, examples = captured.graph, captured.examples
    lowered = lower_graph(graph, examples, options.get("nhwc"), captured.flexible,
                          bool(options.get("relax_fp32_to_fp16", False)))
    inputs = []
    for x, t in zip(examples, lowered.inputs):
        if t.is_quantized and not x.is_quantized:  # quantized on the host by the wrapper
            x = torch.quantize_per_tensor(x, t.scale, t.zero_point, torch.quint8)
        a = x.int_repr().numpy() if x.is_quantized else x.numpy()
        if t.dtype == "int64":
            a = a.astype(np.int32)
        inputs.append(np.ascontiguousarray(np.transpose(a, t.layout)) if a.ndim else a)
    result = Compilation(lowered.cx.model).run(inputs, keep_intermediates=True)
    diffs = []
    # operands whose fused activation comes later: until then PyTorch holds the value
    # before the activation, which the NNAPI model never materializes
    before_activation = dict(lowered.cx.fused_activations)
    quanta = island_quanta(graph)
    for node in graph.walk():
        for v in node.outputs:
            t = lowered.values.get(v)
            if not isinstance(t, TensorValue) or v.tensor is None or t.operand < 0:
                continue
            if before_activation.get(t.operand, node) is not node:
                continue
            try:
                got = result.value(t.operand)
            except KeyError:
                continue
            diffs.append(_diff(node, v, t, got, quanta.get(v, 0.0)))
        for operand in [o for o, activation in before_activation.items() if activation is node]:
            del before_activation[operand]
    return diffs


def island_quanta(graph) -> dict:
    """Float values computed from dequantized ones (a float island of a quantized model),
    with the quantum they are measured in: the dequantized tensor's scale, the largest when
    several meet. NNAPI and PyTorch may round a quantized value one quantum apart, and the
    island's float arithmetic carries that difference on."""
    quanta: dict = {}
    for node in graph.walk():
        if node.kind == "aten::dequantize":
            scale = getattr(node.inputs[0].example, "scale", 0.0)
        else:
            scale = max((quanta[v] for v in node.inputs if v in quanta), default=0.0)
        if scale:
            for v in node.outputs:
                if getattr(v.example, "dtype", "") in ("float32", "float16"):
                    quanta[v] = scale
    return quanta


def _diff(node, value, t: TensorValue, got: np.ndarray, quantum: float) -> LayerDiff:
    expected = value.tensor
    array = np.transpose(got, lay.inverse(t.layout)) if t.rank else got.reshape(())
    if expected.is_quantized or t.is_quantized:  # PT2E keeps quantized values as integers
        stored = expected.int_repr() if expected.is_quantized else expected
        error = float(np.abs(array.astype(np.int64) - stored.numpy().astype(
            np.int64)).max()) if array.size else 0.0
        unit = "quanta"
    elif quantum:  # dequantized, or computed in float from dequantized values
        e = expected.float().numpy()
        error = round(float(np.abs(array.astype(np.float64) - e).max()) / quantum, 3) \
            if e.size else 0.0
        unit = "quanta"
    else:
        e = expected.float().numpy()
        scale = max(float(np.abs(e).max()) if e.size else 0.0, 1e-30)
        error = float(np.abs(array.astype(np.float64) - e).max()) / scale if e.size else 0.0
        unit = "relative"
    return LayerDiff(node.kind, node.location, value.name, tuple(expected.shape), error, unit)

