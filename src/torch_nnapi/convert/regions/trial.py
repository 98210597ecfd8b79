"""Regions, step 1: which nodes of a captured graph NNAPI can run.

A *trial lowering* walks the whole graph as the converter does, but a node it cannot lower
(no lowering, a lowering that rejects it, a converter error, an op in ``fallback_ops``, an
in-place op TorchScript could not make functional) is placed on the CPU instead of failing
the conversion. Its outputs become fresh NNAPI operands, as a region input would be, when a
region can take them: a tensor of a dtype the back-end's runtime passes (PyTorch's NNAPI
runtime: float32, quint8, int32, int64, bool; ExecuTorch's also float16 and qint8), of rank 1
to 4, whose sizes do not depend on the data. Anything else
(numbers computed at run time, lists, float64 or complex tensors, outputs of ``nonzero`` or
NMS) is *CPU-only*, and every node that reads it runs on the CPU too.

Whether sizes depend on the data is known for the ops that are documented so
(:data:`DATA_DEPENDENT`) and checked for every other op by running the graph a second time
on other data of the example inputs' sizes: a tensor whose sizes change there, or that a
CPU node computes from a number computed at run time which did not change there (no
evidence either way), stays on the CPU. Sizes that follow flexible input dimensions are
found by a run on inputs grown along them.

Nodes that emit no NNAPI operation and produce no tensor (sizes, int lists, lists of
tensors) are *shared*: every region that reads their results lowers them again, and the
CPU program keeps them (or the constant they fold to) where it reads them, so lists and
numbers never cross a boundary (``partition.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ...nnapi.model import Lifetime
from ..builder.symbolic import input_dim
from ..builder.values import QUANT_DTYPES, RUNTIME_DTYPES, TensorValue
from ..capture.graph import ExampleTensor, Graph, Node, Value, free_values, walk
from ..errors import ConverterBug, UnsupportedUse
from ..pipeline.lowerer import POISON, InputSpec, Lowerer, value_readers

# dtypes a region can take from the CPU by default (PyTorch's NNAPI runtime passes float32,
# quint8 and int32, not qint8; the region's wrapper casts int64 and bool to int32); a
# back-end whose runtime passes more gives its own (``partition(..., boundary=...)``)
BOUNDARY_DTYPES = RUNTIME_DTYPES

# Ops whose output sizes depend on the values of their inputs, not only on their sizes.
DATA_DEPENDENT = frozenset({
    "aten::nonzero", "aten::nonzero_numpy", "aten::argwhere", "aten::masked_select",
    "aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_dim",
    "aten::unique_consecutive", "aten::unique_dim_consecutive", "aten::bincount",
    "aten::repeat_interleave", "torchvision::nms", "torchvision::qnms",
})

# pseudo input numbers of the sizes of CPU-computed tensors in the trial model (region
# inputs number their own flexible dimensions when each region is lowered)
_TRIAL_INPUT_BASE = 1 << 20



class Probed(Protocol):
    """A captured graph that runs again on other inputs: TorchScript's ``Captured``, or an
    exported program's ``ExportedCapture``."""

    @property
    def graph(self) -> Graph: ...

    @property
    def values(self) -> Mapping[Value, torch._C.Value]:
        """Each top-level value's TorchScript value (what a result computed at conversion
        time may stand for as a constant); none for an exported program."""

    def probe(self, inputs: tuple[torch.Tensor, ...]
              ) -> dict[Value, ExampleTensor | bool | int | float | None] | None:
        """What every top-level value is on ``inputs``, or None if the graph fails on
        them."""


# ------------------------------------------------------------------------------ sizes


@dataclass
class ShapeFacts:
    """What the probes found about the sizes of top-level tensors."""

    dynamic: dict[Value, str]  # sizes that depend on the data, and why
    flexible: dict[Value, tuple[int, ...]]  # dimensions that follow flexible input dims
    flexible_unknown: bool = False  # the grown probe failed: any dimension may change
    changed_numbers: frozenset[Value] = frozenset()  # numbers other data changed


def shape_facts(captured: Probed, examples: tuple[Any, ...],
                flexible: Sequence[Sequence[int]]) -> ShapeFacts:
    """Runs the graph on other data, and on inputs grown along their flexible dimensions,
    and compares every tensor's sizes (and every number) with the example run. A loop
    body's ``examples`` hold numbers and lists too: those stay as they are."""
    dynamic: dict[Value, str] = {}
    producer = {v: n for n in captured.graph.walk() for v in n.outputs}
    for node in captured.graph.walk():
        if _data_dependent(node, producer):
            for v in node.outputs:
                dynamic[v] = f"{node.kind} returns sizes that depend on the data"
    other = captured.probe(tuple(other_data(x, seed=i) if isinstance(x, torch.Tensor) else x
                                 for i, x in enumerate(examples)))
    changed = set()
    for v, ex in (other or {}).items():
        base = v.example
        if isinstance(base, ExampleTensor) and isinstance(ex, ExampleTensor):
            if base.shape != ex.shape:
                dynamic.setdefault(v, "its sizes changed when the model ran on other data")
        elif base != ex:
            changed.add(v)
    grown_dims: dict[Value, tuple[int, ...]] = {}
    unknown = False
    if any(flexible):
        grown = captured.probe(tuple(_grown(x, dims) if isinstance(x, torch.Tensor) else x
                                     for x, dims in zip(examples, flexible, strict=False)))
        unknown = grown is None
        for v, ex in (grown or {}).items():
            base = v.example
            if isinstance(base, ExampleTensor) and isinstance(ex, ExampleTensor) \
                    and len(base.shape) == len(ex.shape):
                dims = tuple(d for d, (a, b) in enumerate(zip(base.shape, ex.shape, strict=True))
                             if a != b)
                if dims:
                    grown_dims[v] = dims
    return ShapeFacts(dynamic, grown_dims, unknown, frozenset(changed))


def _data_dependent(node: Node, producer: dict[Value, Node]) -> bool:
    if node.kind in DATA_DEPENDENT:
        return True
    if node.kind == "aten::where" and len(node.inputs) == 1:
        return True  # where(condition): the indices of the true elements
    if node.kind == "aten::index" and len(node.inputs) > 1:
        indices = producer.get(node.inputs[1])
        return indices is not None and any(
            isinstance(v.example, ExampleTensor) and v.example.dtype in ("bool", "uint8")
            for v in indices.inputs)
    return False


def other_data(x: torch.Tensor, seed: int) -> torch.Tensor:
    """Data of ``x``'s size and kind: float tensors random with ``x``'s mean and spread;
    integer and bool tensors (indices, token ids, masks) ``x``'s elements shuffled, so
    they stay valid; quantized tensors random within ``x``'s range."""
    g = torch.Generator().manual_seed(1234 + seed)
    if x.is_quantized:
        q = x.int_repr()
        low, high = int(q.min()), int(q.max()) + 1
        data = torch.randint(low, high, x.shape, generator=g, dtype=torch.int64).to(q.dtype)
        return torch._make_per_tensor_quantized_tensor(data, x.q_scale(), x.q_zero_point())
    if x.is_floating_point() and x.numel() > 1:
        noise = torch.randn(x.shape, generator=g, dtype=x.dtype)
        return noise * x.std().clamp_min(1e-3) + x.mean()
    order = torch.randperm(x.numel(), generator=g)
    return x.reshape(-1)[order].reshape(x.shape).clone()


def _grown(x: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    """``x`` twice as large along each of ``dims`` (sizes stay divisible as they were)."""
    if not dims:
        return x
    repeats = [2 if d in {k % x.dim() for k in dims} else 1 for d in range(x.dim())]
    if x.is_quantized:
        data = x.int_repr().repeat(repeats)
        return torch._make_per_tensor_quantized_tensor(data, x.q_scale(), x.q_zero_point())
    return x.repeat(repeats)


# ------------------------------------------------------------------------------ the trial


class Placer(Lowerer):
    """A Lowerer that records which top-level node each failure comes from (a converter
    error included), instead of stopping at it: the trial lowering's base, and what lowers
    each region's graph."""

    def __init__(self, graph: Graph, specs: Sequence[InputSpec],
                 known: dict[Value, Any] | None = None,
                 boundary: tuple[str, ...] = BOUNDARY_DTYPES):
        super().__init__(graph, specs, known)
        self.runtime_dtypes = boundary  # what the back-end's runtime passes in and out
        self.owner = {n: top for top in graph.nodes for n in walk([top])}
        self.failed: dict[Node, list[str]] = {}

    def _lower_node(self, node: Node) -> None:
        before = len(self.unsupported)
        try:
            super()._lower_node(node)
        except ConverterBug as e:
            self.unsupported.append(UnsupportedUse(node.kind, f"the converter failed: {e}",
                                                   node.location))
            self._poison(node)
        for use in self.unsupported[before:]:
            self.failed.setdefault(self.owner.get(node, node), []).append(use.reason)


@dataclass
class Trial:
    """The trial's verdict on every top-level node."""

    cpu: dict[Node, str]  # node -> why it runs on the CPU
    nnapi: set[Node]  # nodes with NNAPI operations or tensor results
    shared: set[Node]  # nodes with neither (sizes, lists...)
    values: dict[Value, Any]  # what the trial bound each value to
    cpu_only: dict[Value, str]  # values no region can take, and why
    constants: set[Value] = field(default_factory=set)  # bound to constant operands


class TrialLowerer(Placer):
    """The trial lowering (see the module docstring); :meth:`classify` gives its verdict."""

    def __init__(self, graph: Graph, specs: Sequence[InputSpec | None], forced: dict[Node, str],
                 facts: ShapeFacts, boundary: tuple[str, ...] = BOUNDARY_DTYPES):
        """``specs``: per graph input, None for a number or a list (a loop body's inputs:
        ``fallback/bodies.py``)."""
        super().__init__(graph, [s for s in specs if s is not None], boundary=boundary)
        self.input_specs = list(specs)
        self.forced = forced
        self.facts = facts
        self.verdict = Trial({}, set(), set(), self.env, {})
        self.dynamic: set[Value] = set(facts.dynamic)  # sizes depend on the data
        self.numbers: set[Value] = set()  # numbers (or lists of them) computed at run time

    def classify(self) -> Trial:
        self.cx.users = value_readers(self.graph)
        for i, (v, spec) in enumerate(zip(self.graph.inputs, self.input_specs, strict=False)):
            if spec is None:  # numbers the CPU computes at run time (a loop's counter)
                if v.kind in ("IntType", "FloatType", "BoolType"):
                    self.numbers.add(v)
                self._cpu_only(v, "a number computed at run time" if v in self.numbers
                               else f"a {v.type} is not a tensor")
                continue
            why = _untransferable(spec.example, self.runtime_dtypes)
            if why:
                self._cpu_only(v, why)
            else:
                self._add_input(i, v, spec)
        self._find_missing_lowerings()
        for node in self.graph.nodes:
            self._place(node)
        return self.verdict

    def _place(self, node: Node) -> None:
        reason = self.forced.get(node) or self._reads_cpu_only(node)
        if reason is None:
            operations = len(self.cx.model.operations)
            self._lower_node(node)
            reasons = self.failed.pop(node, None)
            if reasons:
                reason = "; ".join(dict.fromkeys(reasons))
            elif any(_contains_poison(self.env.get(v)) for v in node.outputs):
                reason = "its blocks read values only the CPU holds"
            else:
                results = [self.env.get(v) for v in node.outputs]
                emitted = len(self.cx.model.operations) > operations
                if emitted or any(isinstance(r, TensorValue) for r in results):
                    self.verdict.nnapi.add(node)
                else:
                    self.verdict.shared.add(node)
                self.verdict.constants.update(v for v in node.outputs
                                              if self._is_constant_operand(self.env.get(v)))
                return
        self.verdict.cpu[node] = reason
        self._bind_cpu_outputs(node)

    def _reads_cpu_only(self, node: Node) -> str | None:
        for v in free_values(node):
            if v in self.verdict.cpu_only:
                return f"it reads %{v.name}, which only the CPU holds ({self.verdict.cpu_only[v]})"
        return None

    def _bind_cpu_outputs(self, node: Node) -> None:
        """Binds a CPU node's outputs: region-input operands where a region can take them,
        else CPU-only. A tensor is CPU-only when its sizes may depend on the data: the op
        says so, it reads such a tensor, its sizes changed on other data, or it reads a
        number computed at run time that other data did not change."""
        reads = free_values(node)
        reads_dynamic = any(v in self.dynamic for v in reads)
        unproven = [v for v in reads if v in self.numbers
                    and v not in self.facts.changed_numbers]
        for v in node.outputs:
            ex = v.example
            if not isinstance(ex, ExampleTensor):
                if v.kind == "TensorType":
                    self.dynamic.add(v)
                    self._cpu_only(v, "its sizes are unknown (the model did not run on the"
                                      " example inputs)")
                    continue
                if v.kind != "ListType" or reads_dynamic or unproven or \
                        any(u in self.numbers for u in reads):
                    self.numbers.add(v)
                if reads_dynamic:
                    self.dynamic.add(v)
                self._cpu_only(v, "a number computed at run time" if v in self.numbers
                               else f"a {v.type} is not a tensor")
                continue
            why: str | None = None
            if reads_dynamic or v in self.facts.dynamic:
                self.dynamic.add(v)
                why = self.facts.dynamic.get(v, "its sizes depend on values computed at run"
                                                " time")
            elif unproven:
                self.dynamic.add(v)
                why = (f"its sizes may depend on %{unproven[0].name}, a number computed at"
                       " run time")
            else:
                why = _untransferable(ex, self.runtime_dtypes) or self._bind_operand(v, ex)
            if why is not None:
                self._cpu_only(v, why)

    def _bind_operand(self, v: Value, ex: ExampleTensor) -> str | None:
        """Binds ``v`` to a fresh operand, as a region input; the reason when it cannot."""
        dims = range(len(ex.shape)) if self.facts.flexible_unknown \
            else self.facts.flexible.get(v, ())
        number = _TRIAL_INPUT_BASE + len(self.env)
        shape = tuple(input_dim(number, d, n) if d in dims else n
                      for d, n in enumerate(ex.shape))
        try:
            self.env[v] = self.cx.new_tensor(shape, ex.dtype, None, ex.scale, ex.zero_point)
        except Exception as e:  # noqa: BLE001 - e.g. Unsupported: rank 5, a size 0
            return str(e)
        return None

    def _cpu_only(self, v: Value, why: str) -> None:
        self.env[v] = POISON
        self.verdict.cpu_only[v] = why

    def _is_constant_operand(self, r: Any) -> bool:
        return isinstance(r, TensorValue) and \
            self.cx.model.operands[r.operand].lifetime is Lifetime.CONSTANT


def _untransferable(ex: ExampleTensor, boundary: tuple[str, ...]) -> str | None:
    """Why a tensor cannot cross into a region (None when it can)."""
    if ex.dtype not in boundary:
        runtime = "PyTorch's NNAPI runtime" if boundary == BOUNDARY_DTYPES \
            else "the back-end's runtime"
        return f"a {ex.dtype} tensor, which {runtime} cannot pass"
    if ex.dtype in QUANT_DTYPES and not ex.scale:
        return "a quantized tensor without one scale and zero point"
    if not ex.shape:
        return "a 0-D tensor"
    return None


def _contains_poison(r: Any) -> bool:
    if r is POISON:
        return True
    return isinstance(r, (list, tuple)) and any(_contains_poison(x) for x in r)


# ------------------------------------------------------------------------------ mutation


def mutation_moves(graph: Graph) -> tuple[dict[Node, str], dict[Node, set[Node]]]:
    """In-place ops TorchScript could not make functional run on the CPU, with every reader
    of the tensor they change and of its aliases (the tensor it views, views of it, lists
    holding it): in a region, those would read a copy made before or after the change.
    Returns those nodes with the reason, and the order they must keep: an in-place op after
    the earlier readers of what it changes, the later readers after it."""
    moves: dict[Node, str] = {}
    edges: dict[Node, set[Node]] = {}
    readers: dict[Value, list[Node]] = {}
    producer = {v: n for n in graph.nodes for v in n.outputs}
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in graph.nodes:
        for v in free_values(node):
            readers.setdefault(v, []).append(node)
    for node in graph.nodes:
        written = [v for n in walk([node]) for v in _written(n)]
        if not written:
            continue
        moves[node] = "it changes a tensor in place"
        for v in _alias_closure(written, readers, producer):
            for reader in readers.get(v, []):
                if reader is node:
                    continue
                moves.setdefault(reader, f"it reads %{v.name}, which {node.kind} changes in"
                                         " place")
                later, earlier = (reader, node) if order[reader] > order[node] \
                    else (node, reader)
                edges.setdefault(later, set()).add(earlier)
    return moves, edges


_TENSORISH = ("TensorType", "ListType", "TupleType", "OptionalType")


def _written(node: Node) -> list[Value]:
    """The inputs a node writes in place (its schema marks them ``(a!)``)."""
    head = node.schema.split("->", 1)[0]
    if "!" not in head:
        return []
    try:
        arguments = torch._C.parse_schema(node.schema).arguments
    except RuntimeError:
        return [v for v in node.inputs if v.kind in _TENSORISH]
    return [v for a, v in zip(arguments, node.inputs, strict=False)
            if a.alias_info is not None and a.alias_info.is_write]


def _aliasing(node: Node) -> bool:
    """Whether the node's results may share memory with its inputs (views, lists)."""
    return node.kind.startswith("prim::") or "Tensor(" in node.schema.split("->", 1)[-1]


def _alias_closure(values: list[Value], readers: dict[Value, list[Node]],
                   producer: dict[Value, Node]) -> set[Value]:
    found: set[Value] = set()
    todo = list(values)
    while todo:
        v = todo.pop()
        if v in found or v.kind not in _TENSORISH:
            continue
        found.add(v)
        base = producer.get(v)
        if base is not None and _aliasing(base):
            todo.extend(base.inputs)
        for reader in readers.get(v, []):
            if _aliasing(reader):
                todo.extend(reader.outputs)
    return found


def op_kinds(node: Node) -> list[str]:
    kinds = []
    for n in walk([node]):
        kinds.append(n.kind)
        kinds.extend(step.kind for step in n.steps)
    return kinds
