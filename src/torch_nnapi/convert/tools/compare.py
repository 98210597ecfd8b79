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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...nnapi.model import Model
from ...runtime import Compilation
from ..builder import layout as lay
from ..builder.symbolic import hints
from ..builder.values import TensorValue
from ..capture.frontend import capture_model
from ..capture.graph import Graph, Node, Value
from ..pipeline.layout_choice import lower_graph


@dataclass
class LayerDiff:
    kind: str
    location: str
    name: str
    shape: tuple[int, ...]
    error: float
    unit: str  # "relative" (float tensors) or "quanta" (quantized tensors)
    alternate_error: float | None = None  # against the alternate engine's reference
    reference_gap: float | None = None  # between the two references, in the same unit

    def __str__(self) -> str:
        value = f"{self.error:.3g}" if self.unit == "relative" else f"{self.error:g} quanta"
        return (f"{self.kind:32} %{self.name:16} {list(self.shape)!s:20} {value:>14}"
                f"  {self.location}")


def compare_layers(model: object, example_inputs: object, *, alternate: str | None = None,
                   isolated: bool = False, **options: Any) -> list[LayerDiff]:
    """Converts ``model`` and compares every intermediate tensor with eager PyTorch; see the
    module docstring for ``alternate`` and ``isolated``."""
    captured = capture_model(model, example_inputs, capture_mode=options.get("capture"),
                             flexible=options.get("flexible"), keep_values=True,
                             alternate=alternate)
    graph, examples = captured.graph, captured.examples
    lowered = lower_graph(graph, examples, nhwc=options.get("nhwc"),
                          flexible=captured.flexible,
                          relax=bool(options.get("relax_fp32_to_fp16", False)),
                          target_level=options.get("target_level"))
    model_ = lowered.cx.model
    inputs = []
    for x, held in zip(examples, lowered.inputs, strict=False):
        if held.is_quantized and not x.is_quantized:  # quantized on the host by the wrapper
            x = torch.quantize_per_tensor(x, held.scale, held.zero_point,
                                          getattr(torch, held.dtype))
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
    quanta = island_quanta(graph)
    for node, v, t in compared:
        try:
            got = result.value(t.operand)
        except KeyError:
            continue
        diff = _diff(node, v, t, got, quanta.get(v, 0.0))
        if other is not None:
            _compare_alternate(diff, v, t, other.value(t.operand), quanta.get(v, 0.0))
        diffs.append(diff)
    return diffs


def island_quanta(graph: Graph) -> dict[Value, float]:
    """Float values computed from dequantized ones (a float island of a quantized model),
    with the quantum they are measured in: the dequantized tensor's scale, the largest when
    several meet. NNAPI and PyTorch may round a quantized value one quantum apart, and the
    island's float arithmetic carries that difference on."""
    quanta: dict[Value, float] = {}
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


def _nnapi_array(x: torch.Tensor, t: TensorValue) -> np.ndarray:
    """A PyTorch tensor as the NNAPI operand ``t`` holds it (layout and element type)."""
    a = x.int_repr().numpy() if x.is_quantized else x.detach().numpy()
    if t.dtype == "int64":
        a = a.astype(np.int32)
    if not a.ndim:
        return a
    # merged dimensions (tensors of rank above 4) as the operand's
    return np.ascontiguousarray(np.transpose(a, t.layout)).reshape(hints(t.nnapi_shape))


def _references(compared: Sequence[tuple[Node, Value, TensorValue]], model: Model,
                source: str = "tensor") -> dict[int, np.ndarray]:
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
    if not t.rank:
        return got.reshape(())
    stored = got.reshape(hints(lay.apply(t.layout, t.shape)))  # merged dimensions split
    return np.transpose(stored, lay.inverse(t.layout))


def _reference_array(x: torch.Tensor) -> np.ndarray:
    return x.int_repr().numpy() if x.is_quantized else x.float().numpy()


def _error(expected: torch.Tensor, array: np.ndarray, quantum: float = 0.0,
           quantized: bool = False) -> tuple[float, str]:
    """(error, unit) of ``array`` (PyTorch's layout; integers for quantized tensors)
    against PyTorch's ``expected``: in quanta for quantized tensors (``quantized``: PT2E's,
    held as their integers) and for float ones measured in ``quantum`` (a float island),
    else relative to the tensor's magnitude."""
    if expected.is_quantized or quantized:
        stored = expected.int_repr() if expected.is_quantized else expected
        error = float(np.abs(array.astype(np.int64) - stored.numpy().astype(
            np.int64)).max()) if array.size else 0.0
        return error, "quanta"
    e = expected.float().numpy()
    if quantum:
        error = round(float(np.abs(array.astype(np.float64) - e).max()) / quantum, 3) \
            if e.size else 0.0
        return error, "quanta"
    scale = max(float(np.abs(e).max()) if e.size else 0.0, 1e-30)
    error = float(np.abs(array.astype(np.float64) - e).max()) / scale if e.size else 0.0
    return error, "relative"


def _diff(node: Node, value: Value, t: TensorValue, got: np.ndarray, quantum: float) -> LayerDiff:
    expected = value.tensor
    error, unit = _error(expected, _as_pytorch(got, t), quantum, t.is_quantized)
    return LayerDiff(node.kind, node.location, value.name, tuple(expected.shape), error, unit)


def _compare_alternate(diff: LayerDiff, value: Value, t: TensorValue, got: np.ndarray,
                       quantum: float) -> None:
    """The layer computed from the alternate engine's inputs against that engine's result,
    and the two references against each other."""
    expected, alternate = value.tensor, value.alternate
    if isinstance(alternate, torch.Tensor) and alternate.shape == expected.shape \
            and alternate.is_quantized == expected.is_quantized:
        diff.alternate_error = _error(alternate, _as_pytorch(got, t), quantum)[0]
        diff.reference_gap = _error(expected, _reference_array(alternate), quantum)[0]
