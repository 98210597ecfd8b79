"""Layer-by-layer comparison of a conversion with eager PyTorch, on the host runtime.

Every tensor the graph computes is compared with the NNAPI operand that holds it (read back
in PyTorch's layout): float tensors by their error relative to the tensor's magnitude,
quantized ones, and float ones dequantized from them, in quanta. A value NNAPI never holds
(the input of an activation fused into the operation before it) is skipped. The first layer
that drifts is where to look when a converted model disagrees with PyTorch
(``torch-nnapi convert --compare``, ``torch-nnapi check``).

Two options separate the converter's errors from others:

* ``alternate`` (a PyTorch quantized engine): the two references are compared with each
  other, and each layer is computed again from that engine's values of its inputs and
  compared with that engine's result (starting every layer from the same input: each
  engine's own drift along the network does not count). A layer far from one reference,
  whose references disagree, but which computes what the other engine computes, is
  PyTorch's problem, not the conversion's (qnnpack's quantized hardtanh on channels-last
  tensors, for one).
* ``isolated``: each layer computes from PyTorch's own values of its inputs instead of
  NNAPI's, so the error of a layer is its own, not what the layers before it accumulated
  (deep quantized networks drift by a quantum per layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from ..runtime import Compilation
from . import layout as lay
from .api import lower_graph
from .capture import as_example_tuple, capture
from .values import TensorValue


@dataclass
class LayerDiff:
    kind: str
    location: str
    name: str
    shape: tuple
    error: float
    unit: str  # "relative" (float tensors) or "quanta" (quantized tensors)
    alternate_error: Optional[float] = None  # against the alternate engine's reference
    reference_gap: Optional[float] = None  # between the two references, in the same unit

    def __str__(self) -> str:
        value = f"{self.error:.3g}" if self.unit == "relative" else f"{self.error:g} quanta"
        return (f"{self.kind:32} %{self.name:16} {list(self.shape)!s:20} {value:>14}"
                f"  {self.location}")


def compare_layers(model, example_inputs, *, alternate: Optional[str] = None,
                   isolated: bool = False, **options) -> list[LayerDiff]:
    """Converts ``model`` and compares every intermediate tensor with eager PyTorch; see the
    module docstring for ``alternate`` and ``isolated``."""
    examples = as_example_tuple(example_inputs)
    graph = capture(model, examples, keep_values=True, alternate=alternate)
    lowered = lower_graph(graph, examples, options.get("nhwc"), options.get("flexible"),
                          bool(options.get("relax_fp32_to_fp16", False)),
                          options.get("target_level"))
    model_ = lowered.cx.model
    inputs = []
    for x, held in zip(examples, lowered.inputs):
        if held.is_quantized and not x.is_quantized:  # quantized on the host by the wrapper
            x = torch.quantize_per_tensor(x, held.scale, held.zero_point, torch.quint8)
        inputs.append(_nnapi_array(x, held))
    # operands whose fused activation comes later: until then PyTorch holds the value
    # before the activation, which the NNAPI model never materializes
    before_activation = dict(lowered.cx.fused_activations)
    compared = []
    for node in graph.walk():
        for v in node.outputs:
            t = lowered.values.get(v)
            if not isinstance(t, TensorValue) or v.tensor is None or t.operand < 0:
                continue
            if before_activation.get(t.operand, node) is not node:
                continue
            compared.append((node, v, t))
        for operand in [o for o, activation in before_activation.items() if activation is node]:
            del before_activation[operand]
    compilation = Compilation(model_)
    result = compilation.run(inputs, keep_intermediates=True,
                             substitutes=_references(compared, model_) if isolated else None)
    other = None
    if alternate is not None:
        other = compilation.run(inputs, keep_intermediates=True,
                                substitutes=_references(compared, model_, "alternate"))
    diffs = []
    for node, v, t in compared:
        try:
            got = result.value(t.operand)
        except KeyError:
            continue
        diff = _diff(node, v, t, got)
        if other is not None:
            _compare_alternate(diff, node, v, t, other.value(t.operand))
        diffs.append(diff)
    return diffs


def _nnapi_array(x: torch.Tensor, t: TensorValue) -> np.ndarray:
    """A PyTorch tensor as the NNAPI operand ``t`` holds it (layout and element type)."""
    a = x.int_repr().numpy() if x.is_quantized else x.detach().numpy()
    if t.dtype == "int64":
        a = a.astype(np.int32)
    return np.ascontiguousarray(np.transpose(a, t.layout)) if a.ndim else a


def _references(compared, model, source: str = "tensor") -> dict[int, np.ndarray]:
    """PyTorch's value of each compared layer (``source``: the value's attribute holding
    it), as the NNAPI operand holding it."""
    substitutes = {}
    for _, v, t in compared:
        operand = model.operands[t.operand]
        x = getattr(v, source)
        if not isinstance(x, torch.Tensor):
            continue
        if x.is_quantized and (abs(float(x.q_scale()) - operand.scale) > 1e-6 * operand.scale
                               or int(x.q_zero_point()) != operand.zero_point):
            continue  # quantized differently: not a substitute for NNAPI's value
        array = _nnapi_array(x, t)
        if array.dtype != operand.info.dtype:
            if array.dtype.kind != operand.info.dtype.kind and array.dtype != np.bool_ \
                    and not x.is_quantized:
                continue  # e.g. a float PyTorch value NNAPI holds as integers
            array = array.astype(operand.info.dtype)
        substitutes[t.operand] = array
    return substitutes


def _as_pytorch(got: np.ndarray, t: TensorValue) -> np.ndarray:
    return np.transpose(got, lay.inverse(t.layout)) if t.rank else got.reshape(())


def _reference_array(x: torch.Tensor) -> np.ndarray:
    return x.int_repr().numpy() if x.is_quantized else x.float().numpy()


def _error(node, expected: torch.Tensor, array: np.ndarray) -> tuple[float, str]:
    """(error, unit) of ``array`` (PyTorch's layout; integers for quantized tensors)
    against PyTorch's ``expected``."""
    if expected.is_quantized:
        error = float(np.abs(array.astype(np.int64) - expected.int_repr().numpy().astype(
            np.int64)).max()) if array.size else 0.0
        return error, "quanta"
    e = expected.float().numpy()
    if node.kind == "aten::dequantize" and getattr(node.inputs[0].example, "scale", 0.0):
        # exactly (q - zero point) * scale on both sides: the difference is in quanta
        quantum = node.inputs[0].example.scale
        error = round(float(np.abs(array.astype(np.float64) - e).max()) / quantum, 3) \
            if e.size else 0.0
        return error, "quanta"
    scale = max(float(np.abs(e).max()) if e.size else 0.0, 1e-30)
    error = float(np.abs(array.astype(np.float64) - e).max()) / scale if e.size else 0.0
    return error, "relative"


def _diff(node, value, t: TensorValue, got: np.ndarray) -> LayerDiff:
    expected = value.tensor
    error, unit = _error(node, expected, _as_pytorch(got, t))
    return LayerDiff(node.kind, node.location, value.name, tuple(expected.shape), error, unit)


def _compare_alternate(diff: LayerDiff, node, value, t: TensorValue, got: np.ndarray) -> None:
    """The layer computed from the alternate engine's inputs against that engine's result,
    and the two references against each other."""
    expected, alternate = value.tensor, value.alternate
    if isinstance(alternate, torch.Tensor) and alternate.shape == expected.shape \
            and alternate.is_quantized == expected.is_quantized:
        diff.alternate_error = _error(node, alternate, _as_pytorch(got, t))[0]
        diff.reference_gap = _error(node, expected, _reference_array(alternate))[0]
