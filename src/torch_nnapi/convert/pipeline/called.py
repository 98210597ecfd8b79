"""The graph modules IF and WHILE call, lowered into models of their own.

``torch.cond``'s branches and ``torch.while_loop``'s condition and body reach the lowerings
as graph modules (``get_attr`` submodules of an exported program). Each is captured like any
exported graph (``capture/export.py``, probed on tensors of its placeholders' recorded
shapes) and lowered by the same lowerer and lowerings into a model the calling operation
refers to (``builder/called.py`` says what the lowerings get back). What differs from a
model of its own is the boundary: its inputs take the calling model's operands as they are
(any dtype, a 0-D tensor as [1]), constants passed in are folded into it, and it returns one
output per returned tensor, each in PyTorch's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..builder.called import CalledModel, one_element, register_called_lowering
from ..builder.context import Converter
from ..builder.values import NNAPI_TYPE_OF, TensorValue
from ..capture.export import exported_capture
from ..capture.graph import ExampleTensor, Graph, Value
from ..errors import CaptureError, ConversionError, Unsupported
from ..outputs import OutputStructure
from .lowerer import InputSpec, Lowerer


class CalledLowerer(Lowerer):
    """The lowerer of a called model (see the module docstring)."""

    runtime_dtypes = tuple(NNAPI_TYPE_OF)  # operands pass between models as they are

    def __init__(self, graph: Graph, specs: Sequence[InputSpec], known: Mapping[Value, Any],
                 passed: Sequence[TensorValue], caller: Converter) -> None:
        self.per_channel_weights = caller.per_channel_weights
        super().__init__(graph, specs, known, target_level=caller.target_level)
        self.passed = list(passed)
        self.ranks: list[int] = []  # the PyTorch rank of each output

    def _add_input(self, index: int, value: Value, spec: InputSpec) -> TensorValue:
        outer = self.passed[index]
        shape = spec.example.shape
        t = self.cx.new_tensor(shape or (1,), outer.dtype, None, outer.scale, outer.zero_point)
        self.env[value] = self.cx.reshape(t, ()) if not shape else t
        return t

    def _outputs(self, returned: Any) -> tuple[list[TensorValue], list[int], OutputStructure]:
        """One output per returned tensor, in PyTorch's order: the calling operation's
        outputs are positional."""
        outputs, output_map, structure = super()._outputs(returned)
        if len(output_map) != len(outputs) or output_map != sorted(output_map):
            seen: set[int] = set()
            positional = []
            for k in output_map:
                positional.append(self._fresh_copy(outputs[k]) if k in seen else outputs[k])
                seen.add(k)
            outputs, output_map = positional, list(range(len(positional)))
        self.ranks = [t.rank for t in outputs]
        return ([one_element(self.cx, t) if t.rank == 0 else self.cx.contiguous(t)
                 for t in outputs], output_map, structure)


@register_called_lowering
def lower_called(caller: Converter, module: object, args: Sequence[Any]) -> CalledModel:
    """``module`` lowered on ``args`` (tensors of the calling model, constant tensors and
    numbers, one per placeholder): a model whose inputs are the tensors, in their order."""
    if not isinstance(module, torch.fx.GraphModule):
        raise Unsupported(f"it calls a {type(module).__name__}, not a graph module")
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise Unsupported(f"it passes {len(args)} values to a graph of"
                          f" {len(placeholders)} inputs")
    examples = tuple(_example(n, a) for n, a in zip(placeholders, args, strict=True))
    try:
        capture = exported_capture(module, examples)
    except CaptureError as e:
        raise Unsupported(str(e)) from None
    graph = capture.graph
    known = {v: a for v, a in zip(graph.inputs, args, strict=True)
             if not isinstance(a, TensorValue)}
    passed = [a for a in args if isinstance(a, TensorValue)]
    graph.inputs = [v for v in graph.inputs if v not in known]
    specs = [InputSpec(_example_tensor(v, t)) for v, t in zip(graph.inputs, passed, strict=True)]
    try:
        lowerer = CalledLowerer(graph, specs, known, passed, caller)
        lowered = lowerer.run()
    except ConversionError as e:
        raise Unsupported("; ".join(dict.fromkeys(f"{u.kind}: {u.reason}" for u in e.uses))
                          ) from None
    return CalledModel(lowered.cx.model, tuple(lowered.outputs), tuple(lowerer.ranks))


def _example(placeholder: torch.fx.Node, arg: Any) -> Any:
    """What the graph is probed on for ``arg``: a constant as it is; for a tensor of the
    calling model, one of the placeholder's recorded shape and dtype."""
    if not isinstance(arg, TensorValue):
        return arg
    val = placeholder.meta.get("val")
    shape = [int(d) for d in val.shape] if isinstance(val, torch.Tensor) else \
        [int(d) for d in arg.shape]
    dtype = val.dtype if isinstance(val, torch.Tensor) else torch.float32
    if dtype.is_floating_point:
        return torch.rand(shape, dtype=dtype)
    return torch.zeros(shape, dtype=dtype)


def _example_tensor(value: Value, passed: TensorValue) -> ExampleTensor:
    found = value.example
    shape = found.shape if isinstance(found, ExampleTensor) else \
        tuple(int(d) for d in passed.shape)
    return ExampleTensor(tuple(shape), passed.dtype, passed.scale, passed.zero_point)


__all__ = ["CalledLowerer", "lower_called"]
