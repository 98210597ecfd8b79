"""The model's return flattened into its tensors, for everything after the capture.

Lowerings, the CPU fallback and the tools see a graph returning one tensor or a flat tuple
of them; the :class:`~..outputs.OutputStructure` the graph carries (``Graph.structure``)
says how the back-ends nest them again. A traced ``nn.Module`` runs inside
:class:`FlatOutputs`, whose ``forward`` returns the model's tensors flat and records how they
nested (``torch.jit.trace`` itself refuses dicts of mixed values, ``None`` and named
tuples). A TorchScript module (scripted, or traced by its author) already returns a
structure TorchScript can hold: it runs once on the examples for the structure, and its
graph's return is rewritten to the flat tensors, following the graph's own tuple, list and
dict constructions, else unpacking the returned container.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from ..errors import CaptureError, one_line
from ..outputs import (
    DICT,
    LIST,
    NAMED,
    NONE,
    TENSOR,
    TUPLE,
    OutputStructure,
    leaves_of,
    structure_of,
)

# The attribute FlatOutputs holds the model in: traced scopes start with it
WRAPPED = "flat_outputs_model"


class FlatOutputs(torch.nn.Module):
    """``model`` returning its output tensors flat: one tensor, or a tuple of them;
    ``structure`` is how they nested on the last run."""

    def __init__(self, model: Callable[..., Any]) -> None:
        super().__init__()
        setattr(self, WRAPPED, model)
        self.structure: OutputStructure | None = None
        # the model's mode, set without train(): an exported program's module refuses it
        self.training = bool(getattr(model, "training", False))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        returned = getattr(self, WRAPPED)(*inputs)
        self.structure = checked(structure_of(returned))
        leaves = leaves_of(returned)
        return leaves[0] if self.structure.kind == TENSOR else tuple(leaves)


def checked(structure: OutputStructure) -> OutputStructure:
    """``structure``, if it holds a tensor."""
    if not structure.leaf_count:
        raise CaptureError(f"the model returns no tensor ({structure.describe()})")
    return structure


def argument_names(model: object) -> list[str]:
    """The names of ``model.forward``'s positional parameters (the traced graph's inputs
    are named after them, as tracing the model itself names them)."""
    try:
        parameters = inspect.signature(model.forward).parameters  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return []
    return [name for name, p in parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def script_structure(script: torch.jit.ScriptModule, graph: torch._C.Graph,
                     examples: tuple[torch.Tensor, ...]) -> OutputStructure:
    """How a TorchScript module's return nests: read from its type when that is a tensor
    or a plain tuple of tensors, else from one run on the examples."""
    returned = next(iter(graph.outputs())).type()
    if isinstance(returned, torch._C.TensorType):
        return OutputStructure(TENSOR)
    if isinstance(returned, torch._C.TupleType) and str(returned).startswith("(") and all(
            isinstance(t, torch._C.TensorType) for t in returned.elements()):
        return OutputStructure.flat(len(returned.elements()))
    try:
        with torch.no_grad():
            value = script(*[x.clone() for x in examples])
    except Exception as e:  # noqa: BLE001 - whatever the model raises on the examples
        raise CaptureError(f"the model fails on the example inputs: {one_line(e)}") from None
    return checked(structure_of(value))


def is_flat_return(graph: torch._C.Graph, structure: OutputStructure) -> bool:
    """Whether ``graph`` returns its tensors as the rest of the converter takes them."""
    out = next(iter(graph.outputs()))
    if structure.kind == TENSOR:
        return True
    return structure.kind == TUPLE and not structure.nested and \
        out.node().kind() == "prim::TupleConstruct"


def flatten_return(graph: torch._C.Graph, structure: OutputStructure) -> None:
    """Rewrites ``graph`` (in place) to return the tensors of ``structure`` flat."""
    if is_flat_return(graph, structure):
        return
    out = next(iter(graph.outputs()))
    leaves: list[torch._C.Value] = []
    _collect(graph, out, structure, leaves)
    pack = graph.create("prim::TupleConstruct", leaves, 1)
    pack.output().setType(torch._C.TupleType([v.type() for v in leaves]))
    pack.insertBefore(graph.return_node())
    graph.eraseOutput(0)
    graph.registerOutput(pack.output())


def _collect(graph: torch._C.Graph, v: torch._C.Value, s: OutputStructure,
             leaves: list[torch._C.Value]) -> None:
    if s.kind == TENSOR:
        leaves.append(v)
        return
    if s.kind == NONE:
        return
    node = v.node()
    t: Any = v.type()  # a TupleType, ListType or DictType (torch's stubs say JitType)
    items: list[torch._C.Value]
    if s.kind in (TUPLE, NAMED):
        items = list(node.inputs()) if node.kind() == "prim::TupleConstruct" else \
            _unpacked(graph, v, "prim::TupleUnpack", list(t.elements()))
    elif s.kind == LIST:
        items = list(node.inputs()) if node.kind() == "prim::ListConstruct" else \
            _unpacked(graph, v, "prim::ListUnpack", [t.getElementType()] * len(s.items))
    else:
        assert s.kind == DICT
        items = [_dict_item(graph, v, key) for key in s.keys]
    if len(items) != len(s.items):
        raise CaptureError(f"the model's graph returns {len(items)} items where it returned"
                           f" {len(s.items)} on the examples ({s.describe()})")
    for item, child in zip(items, s.items, strict=True):
        _collect(graph, item, child, leaves)


def _unpacked(graph: torch._C.Graph, v: torch._C.Value, kind: str,
              types: list[Any]) -> list[torch._C.Value]:
    unpack = graph.create(kind, [v], len(types))
    for out, t in zip(unpack.outputs(), types, strict=True):
        out.setType(t)
    unpack.insertBefore(graph.return_node())
    return list(unpack.outputs())


def _dict_item(graph: torch._C.Graph, v: torch._C.Value, key: str) -> torch._C.Value:
    node = v.node()
    if node.kind() == "prim::DictConstruct":
        pairs = list(node.inputs())
        for k, item in zip(pairs[::2], pairs[1::2], strict=True):
            if k.node().kind() == "prim::Constant" and str(k.toIValue()) == key:
                return item
    with graph.insert_point_guard(graph.return_node()):
        # insertConstant is not in torch's stubs
        name: torch._C.Value = graph.insertConstant(key)  # type: ignore[attr-defined]
    get = graph.create("aten::__getitem__", [v, name], 1)
    dict_type: Any = v.type()  # a DictType (torch's stubs say JitType)
    get.output().setType(dict_type.getValueType())
    get.insertBefore(graph.return_node())
    return get.output()


__all__ = ["WRAPPED", "FlatOutputs", "argument_names", "checked", "flatten_return",
           "is_flat_return", "script_structure"]
