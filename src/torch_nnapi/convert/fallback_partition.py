"""CPU fallback, step 1: which nodes of a captured graph run on NNAPI, in which regions.

A *trial lowering* walks the whole graph as the converter does, but a node it cannot lower
(no lowering, a lowering that rejects it, a converter error, an op in ``fallback_ops``, an
in-place op) is placed on the CPU instead of failing the conversion. Its outputs become
fresh NNAPI operands, as a region input would be, when a region can take them: a tensor of
a dtype PyTorch's NNAPI runtime passes (float32, quint8, int32, int64, bool), of rank 1 to
4, whose sizes do not depend on the data. Anything else (numbers computed at run time,
lists, float64 or complex tensors, outputs of ``nonzero`` or NMS) is *CPU-only*, and every
node that reads it runs on the CPU too. Whether sizes depend on the data is known for the
ops that are documented so (:data:`DATA_DEPENDENT`) and checked for every other op by
running the graph a second time on other data of the example inputs' sizes: a tensor
whose sizes change there, or that a CPU node computes from a number computed at run time
which did not change there (no evidence either way), stays on the CPU. Sizes that follow
flexible input dimensions are found by a run on inputs grown along them.

Nodes that emit no NNAPI operation and produce no tensor (sizes, int lists, lists of
tensors) are *shared*: every region that reads their results lowers them again, and the
CPU program keeps them (or the constant they fold to) where it reads them, so lists and
numbers never cross a boundary.

Regions follow from the CPU nodes: an NNAPI node's *level* is the number of CPU nodes on
the longest path to it, and all NNAPI nodes of one level form one region. No path leaves a
region through the CPU and comes back, so every region runs as one NNAPI call: for level
0, 1, ... the region of the level runs, then the CPU nodes of that level in program order.

The policy then runs until nothing changes: each region is lowered on its own (a node it
rejects, or one a device of ``target_level`` would reject, moves to the CPU), regions
smaller than ``min_region_size`` computing operations move to the CPU, and beyond
``max_regions`` only the largest regions stay. Every move repeats the trial, so regions
merge again where they can.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

import torch

from ..nnapi.errors import BadDataError
from ..nnapi.model import Lifetime
from . import patterns
from .capture import Captured, ExampleTensor, Graph, Node, Value
from .errors import ConversionError, ConverterBug, UnsupportedUse
from .levels import model_requirements, operation_levels
from .lower import POISON, InputSpec, Lowered, Lowerer, _readers, example_spec
from .symbolic import input_dim
from .values import TensorValue

# NNAPI operations that only move or relabel data: a region of nothing else is not worth a
# call (min_region_size counts the other operations).
DATA_MOVES = frozenset({"RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS"})

# dtypes a region can take from the CPU (PyTorch's NNAPI runtime passes float32, quint8 and
# int32; the region's wrapper casts int64 and bool to int32)
BOUNDARY_DTYPES = ("float32", "quint8", "int32", "int64", "bool")

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


@dataclass(frozen=True)
class FallbackPolicy:
    """The knobs of the CPU fallback (see ``convert(..., fallback=True)``)."""

    fallback_ops: frozenset[str] = frozenset()  # op kinds kept on the CPU
    min_region_size: int = 1  # computing NNAPI operations a region needs
    max_regions: Optional[int] = None  # at most this many regions (the largest)
    target_level: Optional[int] = None  # operations above it run on the CPU

    def __post_init__(self) -> None:
        for kind in self.fallback_ops:
            if not isinstance(kind, str) or "::" not in kind:
                raise ValueError(f"fallback_ops holds TorchScript op kinds such as"
                                 f" 'aten::softmax', got {kind!r}")
        if int(self.min_region_size) < 0:
            raise ValueError(f"min_region_size must be >= 0, got {self.min_region_size}")
        if self.max_regions is not None and int(self.max_regions) < 1:
            raise ValueError(f"max_regions must be >= 1, got {self.max_regions}")


@dataclass(eq=False)
class Region:
    """NNAPI nodes that run as one NNAPI model."""

    level: int
    nodes: list[Node]  # in program order
    shared: list[Node]  # shared nodes lowered again inside, in program order
    inputs: list[Value]
    outputs: list[Value]
    lowered: Optional[Lowered] = None

    @property
    def operation_counts(self) -> dict[str, int]:
        if self.lowered is None:
            return {}
        return dict(Counter(op.type.name for op in self.lowered.cx.model.operations)
                    .most_common())

    @property
    def size(self) -> int:
        """Computing NNAPI operations (data moves such as RESHAPE not counted)."""
        return sum(n for name, n in self.operation_counts.items() if name not in DATA_MOVES)

    @property
    def feature_level(self) -> int:
        return int(self.lowered.cx.model.feature_level) if self.lowered is not None else 0


@dataclass(eq=False)
class CpuNode:
    node: Node
    reason: str


@dataclass(eq=False)
class Partition:
    """Where every node runs, and in which order."""

    graph: Graph
    regions: list[Region]
    cpu: list[CpuNode]  # the nodes NNAPI does not run, in program order
    recomputed: list[Node]  # shared nodes the CPU program keeps
    constants: dict[Value, Any]  # shared results the CPU program reads, as constants
    schedule: list[Union[Region, Node]]  # regions and CPU-side nodes, in running order

    @property
    def cpu_reasons(self) -> dict[Node, str]:
        return {c.node: c.reason for c in self.cpu}


# ------------------------------------------------------------------------------ sizes


@dataclass
class ShapeFacts:
    """What the probes found about the sizes of top-level tensors."""

    dynamic: dict[Value, str]  # sizes that depend on the data, and why
    flexible: dict[Value, tuple[int, ...]]  # dimensions that follow flexible input dims
    flexible_unknown: bool = False  # the grown probe failed: any dimension may change
    changed_numbers: frozenset[Value] = frozenset()  # numbers other data changed


def shape_facts(captured: Captured, examples: tuple, flexible: Sequence[Sequence[int]]
                ) -> ShapeFacts:
    """Runs the graph on other data, and on inputs grown along their flexible dimensions,
    and compares every tensor's sizes (and every number) with the example run."""
    dynamic: dict[Value, str] = {}
    producer = {v: n for n in captured.graph.walk() for v in n.outputs}
    for node in captured.graph.walk():
        if _data_dependent(node, producer):
            for v in node.outputs:
                dynamic[v] = f"{node.kind} returns sizes that depend on the data"
    other = captured.probe(tuple(_other_data(x, seed=i) for i, x in enumerate(examples)))
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
        grown = captured.probe(tuple(_grown(x, dims) for x, dims in zip(examples, flexible)))
        unknown = grown is None
        for v, ex in (grown or {}).items():
            base = v.example
            if isinstance(base, ExampleTensor) and isinstance(ex, ExampleTensor) \
                    and len(base.shape) == len(ex.shape):
                dims = tuple(d for d, (a, b) in enumerate(zip(base.shape, ex.shape)) if a != b)
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


def _other_data(x: torch.Tensor, seed: int) -> torch.Tensor:
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
    error included), instead of stopping at it. :meth:`classify` is the trial lowering;
    ``run`` lowers one region's graph."""

    def __init__(self, graph: Graph, specs: Sequence[InputSpec],
                 known: dict[Value, Any] | None = None):
        super().__init__(graph, specs, known)
        self.owner = {n: top for top in graph.nodes for n in _walk([top])}
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


class _TrialLowerer(Placer):
    def __init__(self, graph: Graph, specs: Sequence[InputSpec], forced: dict[Node, str],
                 facts: ShapeFacts):
        super().__init__(graph, specs)
        self.forced = forced
        self.facts = facts
        self.verdict = Trial({}, set(), set(), self.env, {})
        self.dynamic: set[Value] = set(facts.dynamic)  # sizes depend on the data
        self.numbers: set[Value] = set()  # numbers (or lists of them) computed at run time

    def classify(self) -> Trial:
        self.cx.users = _readers(self.graph)
        for i, (v, spec) in enumerate(zip(self.graph.inputs, self.specs)):
            why = _untransferable(spec.example)
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
            elif any(self._is_constant_operand(self.env.get(v)) for v in node.outputs):
                reason = "it computes a constant"
            else:
                results = [self.env.get(v) for v in node.outputs]
                emitted = len(self.cx.model.operations) > operations
                if emitted or any(isinstance(r, TensorValue) for r in results):
                    self.verdict.nnapi.add(node)
                else:
                    self.verdict.shared.add(node)
                return
        self.verdict.cpu[node] = reason
        self._bind_cpu_outputs(node)

    def _reads_cpu_only(self, node: Node) -> Optional[str]:
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
                why = "a number computed at run time" if v in self.numbers \
                    else f"a {v.type} is not a tensor"
                if reads_dynamic:
                    self.dynamic.add(v)
                self._cpu_only(v, why)
                continue
            why = None
            if reads_dynamic or v in self.facts.dynamic:
                self.dynamic.add(v)
                why = self.facts.dynamic.get(v, "its sizes depend on values computed at run"
                                                " time")
            elif unproven:
                self.dynamic.add(v)
                why = (f"its sizes may depend on %{unproven[0].name}, a number computed at"
                       " run time")
            else:
                why = _untransferable(ex) or self._bind_operand(v, ex)
            if why is not None:
                self._cpu_only(v, why)

    def _bind_operand(self, v: Value, ex: ExampleTensor) -> Optional[str]:
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


def _untransferable(ex: ExampleTensor) -> Optional[str]:
    """Why a tensor cannot cross into a region (None when it can)."""
    if ex.dtype not in BOUNDARY_DTYPES:
        return f"a {ex.dtype} tensor, which PyTorch's NNAPI runtime cannot pass"
    if ex.dtype == "quint8" and not ex.scale:
        return "a quantized tensor without one scale and zero point"
    if not ex.shape:
        return "a 0-D tensor"
    return None


def _contains_poison(r: Any) -> bool:
    if r is POISON:
        return True
    return isinstance(r, (list, tuple)) and any(_contains_poison(x) for x in r)


def _walk(nodes: Iterable[Node]):
    for n in nodes:
        yield n
        for b in n.blocks:
            yield from _walk(b.nodes)


def free_values(node: Node) -> list[Value]:
    """The values a top-level node reads, its blocks' reads from outside included."""
    defined: set[Value] = set()
    reads: list[Value] = []
    for n in _walk([node]):
        if n is not node:
            defined.update(n.outputs)
        reads.extend(n.inputs)
        for b in n.blocks:
            reads.extend(b.outputs)
    return [v for v in dict.fromkeys(reads) if v not in defined]


# ------------------------------------------------------------------------------ mutation


def mutation_moves(graph: Graph) -> dict[Node, str]:
    """In-place ops TorchScript could not make functional run on the CPU, with every reader
    of the tensor they change and of its aliases (the tensor it views, views of it, lists
    holding it): in a region, those would read a copy made before or after the change."""
    moves: dict[Node, str] = {}
    readers: dict[Value, list[Node]] = {}
    producer = {v: n for n in graph.nodes for v in n.outputs}
    for node in graph.nodes:
        for v in free_values(node):
            readers.setdefault(v, []).append(node)
    for node in graph.nodes:
        written = [v for n in _walk([node]) for v in _written(n)]
        if not written:
            continue
        moves[node] = "it changes a tensor in place"
        for v in _alias_closure(written, readers, producer):
            for reader in readers.get(v, []):
                moves.setdefault(reader, f"it reads %{v.name}, which {node.kind} changes in"
                                         " place")
    return moves


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
    return [v for a, v in zip(arguments, node.inputs)
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


def mutation_edges(graph: Graph, moves: dict[Node, str]) -> dict[Node, set[Node]]:
    """Extra ordering: an in-place op runs after the earlier readers of what it changes,
    and the later readers after it."""
    edges: dict[Node, set[Node]] = {}
    order = {n: i for i, n in enumerate(graph.nodes)}
    mutators = [n for n in graph.nodes if n in moves and any(_written(m) for m in _walk([n]))]
    for m in mutators:
        for reader in moves:
            if reader is m:
                continue
            if order[reader] < order[m]:
                edges.setdefault(m, set()).add(reader)
            else:
                edges.setdefault(reader, set()).add(m)
    return edges


# ------------------------------------------------------------------------------ regions


@dataclass
class Plan:
    """Regions and running order for one trial verdict, and what must move to the CPU."""

    regions: list[Region]
    schedule: list[Union[Region, Node]]
    recomputed: list[Node]
    constants: dict[Value, Any]
    moves: dict[Node, str] = field(default_factory=dict)


class _Planner:
    def __init__(self, graph: Graph, trial: Trial, edges: dict[Node, set[Node]],
                 script_values: dict[Value, torch._C.Value]):
        self.graph = graph
        self.trial = trial
        self.edges = edges
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.producer = {v: n for n in graph.nodes for v in n.outputs}
        self.constants = {v: trial.values[v] for n in graph.nodes if n in trial.shared
                          for v in n.outputs if v in trial.values
                          and fits_constant(script_values.get(v), trial.values[v])}
        self._sources: dict[Value, frozenset[Node]] = {}

    def sources(self, v: Value) -> frozenset[Node]:
        """The nodes other than shared ones that computing ``v`` needs."""
        if v not in self._sources:
            p = self.producer.get(v)
            if p is None or v in self.constants:
                found: frozenset[Node] = frozenset()
            elif p in self.trial.shared:
                found = frozenset().union(*[self.sources(u) for u in free_values(p)])
            else:
                found = frozenset({p})
            self._sources[v] = found
        return self._sources[v]

    def shared_closure(self, values: Iterable[Value]) -> list[Node]:
        """The shared nodes computing ``values`` needs (constants excepted), in order."""
        found: set[Node] = set()
        todo = list(values)
        while todo:
            v = todo.pop()
            p = self.producer.get(v)
            if p in self.trial.shared and p not in found and v not in self.constants:
                found.add(p)
                todo.extend(free_values(p))
        return sorted(found, key=self.order.__getitem__)

    def plan(self) -> Plan:
        trial = self.trial
        level: dict[Node, int] = {}
        for node in self.graph.nodes:
            if node in trial.shared:
                continue
            sources = set(self.edges.get(node, ()))
            for v in free_values(node):
                sources |= self.sources(v)
            step = 1 if node in trial.nnapi else 0
            level[node] = max((level[p] + (step if p in trial.cpu else 0)
                               for p in sources if p in level), default=0)
        cpu_reads = [v for n in self.graph.nodes if n in trial.cpu for v in free_values(n)]
        recomputed = self.shared_closure(cpu_reads + [self.graph.output])
        for node in recomputed:
            level[node] = max((level[p] for v in free_values(node) for p in self.sources(v)
                               if p in level), default=0)
        by_level: dict[int, list[Node]] = {}
        for node in self.graph.nodes:
            if node in trial.nnapi:
                by_level.setdefault(level[node], []).append(node)
        regions = [self._region(lvl, members) for lvl, members in sorted(by_level.items())]
        plan = Plan(regions, [], recomputed, self.constants)
        self._boundaries(plan)
        on_cpu = [n for n in self.graph.nodes if n in trial.cpu or n in set(recomputed)]
        region_at = {r.level: r for r in regions}
        for lvl in sorted(set(region_at) | {level[n] for n in on_cpu}):
            if lvl in region_at:
                plan.schedule.append(region_at[lvl])
            plan.schedule.extend(n for n in on_cpu if level[n] == lvl)
        return plan

    def _region(self, lvl: int, members: list[Node]) -> Region:
        shared = self.shared_closure(v for n in members for v in free_values(n))
        nodes = sorted(members + shared, key=self.order.__getitem__)
        defined = {v for n in nodes for v in n.outputs}
        inputs = [v for n in nodes for v in free_values(n)
                  if v not in defined and not v.is_constant and v not in self.constants]
        return Region(lvl, members, shared, list(dict.fromkeys(inputs)), [])

    def _boundaries(self, plan: Plan) -> None:
        """Fills each region's outputs (what another region, a CPU node or the return
        reads); a non-tensor that would cross a boundary moves its producer, or reader, to
        the CPU."""
        trial = self.trial
        home = {n: r for r in plan.regions for n in r.nodes}
        readers: list[tuple[Any, list[Value]]] = [(r, r.inputs) for r in plan.regions]
        readers += [(n, free_values(n)) for n in plan.recomputed]
        readers += [(n, free_values(n)) for n in self.graph.nodes if n in trial.cpu]
        readers.append((None, [self.graph.output]))
        for reader, values in readers:
            for v in values:
                p = self.producer.get(v)
                region = home.get(p)
                if region is None or region is reader:
                    continue
                t = trial.values.get(v)
                if not isinstance(t, TensorValue):
                    plan.moves.setdefault(p, f"its result %{v.name} is not a tensor, yet is"
                                             " read outside its region")
                elif t.rank == 0 and not (t.is_float or t.is_quantized):
                    # PyTorch's NNAPI runtime returns no 0-D tensors: the region would
                    # RESHAPE it to [1], which NNAPI does not do for integers and bools
                    plan.moves.setdefault(p, f"its result %{v.name}, a 0-D {t.dtype} tensor,"
                                             " is read outside its region")
                elif v not in region.outputs:
                    region.outputs.append(v)
        for region in plan.regions:
            for v in region.inputs:
                if isinstance(trial.values.get(v), TensorValue):
                    continue
                for n in region.nodes:
                    if v in free_values(n):
                        plan.moves.setdefault(n, f"it reads %{v.name}, which is not a tensor,"
                                                 " from outside its region")


def fits_constant(script_value: Optional[torch._C.Value], result: Any) -> bool:
    """Whether ``result``, computed at conversion time, can stand for ``script_value`` in
    TorchScript as a constant of its type."""
    if script_value is None or not _is_constant(result):
        return False
    scratch = torch._C.Graph()  # kept alive while its constant is read
    try:
        constant = scratch.insertConstant(result)
    except (RuntimeError, TypeError):
        return False
    return constant.type().isSubtypeOf(script_value.type())


def _is_constant(r: Any) -> bool:
    if isinstance(r, (list, tuple)):
        return all(_is_constant(x) for x in r)
    return r is None or isinstance(r, (bool, int, float, str, torch.Tensor))


# ------------------------------------------------------------------------------ the policy


def partition(captured: Captured, examples: tuple, *, policy: FallbackPolicy,
              nhwc: Sequence[Optional[bool]], flexible: Sequence[Sequence[int]],
              relax: bool = False) -> Partition:
    """Places every node of ``captured`` (see the module docstring); each region comes
    back lowered. ``nhwc`` and ``flexible`` are per model input, as the converter takes
    them."""
    graph = captured.graph
    patterns.fuse(graph)
    facts = shape_facts(captured, examples, flexible)
    specs = [example_spec(x, False, f) for x, f in zip(examples, flexible)]
    forced = mutation_moves(graph)
    edges = mutation_edges(graph, forced)
    producer = {v: n for n in graph.nodes for v in n.outputs}
    for v, why in facts.dynamic.items():  # where sizes start to depend on the data
        root = producer.get(v)
        if root is not None and not any(u in facts.dynamic for u in free_values(root)):
            forced.setdefault(root, why)
    for node in graph.nodes:
        denied = [k for k in _kinds(node) if k in policy.fallback_ops]
        if denied:
            forced.setdefault(node, f"{denied[0]} is in fallback_ops")
    lowerer = _RegionLowering(graph, examples, nhwc, flexible, facts, relax)
    for _ in range(len(graph.nodes) + 1):
        trial = _TrialLowerer(graph, specs, forced, facts).classify()
        plan = _Planner(graph, trial, edges, captured.values).plan()
        moves = dict(plan.moves)
        if not moves:
            for region in plan.regions:
                moves.update(lowerer.lower(region, trial))
        if not moves and policy.target_level is not None:
            for region in plan.regions:
                moves.update(_above_target(region, policy.target_level))
        if not moves:
            moves = _size_moves(plan.regions, policy)
        if not moves:
            cpu = [CpuNode(n, trial.cpu[n]) for n in graph.nodes if n in trial.cpu]
            return Partition(graph, plan.regions, cpu, plan.recomputed, plan.constants,
                             plan.schedule)
        for node, reason in moves.items():
            forced.setdefault(node, reason)
    raise ConverterBug("the CPU fallback did not settle on a partition")


def _kinds(node: Node) -> list[str]:
    kinds = []
    for n in _walk([node]):
        kinds.append(n.kind)
        kinds.extend(step.kind for step in n.steps)
    return kinds


class _RegionLowering:
    """Lowers regions as models of their own, remembering each region's outcome."""

    def __init__(self, graph: Graph, examples: tuple, nhwc, flexible, facts: ShapeFacts,
                 relax: bool):
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.model_inputs = {v: i for i, v in enumerate(graph.inputs)}
        self.nhwc = list(nhwc)
        self.flexible = [tuple(f) for f in flexible]
        self.facts = facts
        self.relax = relax
        self.done: dict[tuple, Union[Lowered, dict[Node, str]]] = {}

    def lower(self, region: Region, trial: Trial) -> dict[Node, str]:
        """Lowers ``region`` (setting ``region.lowered``); the nodes it rejects, and why."""
        from .api import lower_graph

        key = tuple(tuple(map(id, part)) for part in
                    (region.nodes, region.shared, region.inputs, region.outputs))
        if key not in self.done:
            self.done[key] = self._lower(region, trial, lower_graph)
        found = self.done[key]
        if isinstance(found, dict):
            return found
        region.lowered = found
        return {}

    def _lower(self, region: Region, trial: Trial, lower_graph):
        out = Value("region_outputs", "Tuple", "TupleType")
        nodes = sorted(region.nodes + region.shared, key=self.order.__getitem__)
        sub = Graph(list(region.inputs), nodes, out)
        sub.nodes.append(Node("prim::TupleConstruct", list(region.outputs), [out],
                              "the region's outputs"))
        examples, choices, flexible = [], [], []
        for v in region.inputs:
            k = self.model_inputs.get(v)
            examples.append(_example_tensor(v.example))
            choices.append(self.nhwc[k] if k is not None else None)
            if k is not None:
                flexible.append(self.flexible[k])
            elif self.facts.flexible_unknown:
                flexible.append(tuple(range(len(v.example.shape))))
            else:
                flexible.append(self.facts.flexible.get(v, ()))
        known = {v: r for v, r in trial.values.items()
                 if _is_constant(r) and not v.is_constant and v not in region.inputs}
        placers: list[Placer] = []

        def make(graph: Graph, specs: Sequence[InputSpec]) -> Placer:
            placers.append(Placer(graph, specs, known))
            return placers[-1]

        try:
            return lower_graph(sub, tuple(examples), choices, flexible, self.relax,
                               make_lowerer=make)
        except (ConversionError, ConverterBug, BadDataError) as e:
            failed = {n: "; ".join(dict.fromkeys(reasons))
                      for n, reasons in (placers[-1].failed.items() if placers else ())
                      if n in region.nodes}
            if not failed:  # not one node's fault: the region as a whole stays on the CPU
                failed = {n: f"its region could not be converted: {_first_line(e)}"
                          for n in region.nodes}
            return failed


def _example_tensor(ex: ExampleTensor) -> torch.Tensor:
    """A tensor with the example's shape, dtype and quantization (values unused)."""
    if ex.dtype == "quint8":
        return torch._empty_affine_quantized(list(ex.shape), scale=ex.scale,
                                             zero_point=ex.zero_point, dtype=torch.quint8)
    return torch.zeros(ex.shape, dtype=getattr(torch, ex.dtype))


def _above_target(region: Region, target: int) -> dict[Node, str]:
    """The nodes behind the region's operations a device of ``target`` would reject."""
    if region.lowered is None or region.feature_level <= target:
        return {}
    cx = region.lowered.cx
    owner = {n: top for top in region.nodes + region.shared for n in _walk([top])}
    moves: dict[Node, str] = {}
    for op in operation_levels(cx.model, cx.origins):
        if op.level <= target:
            continue
        operation = cx.model.operations[op.index]
        origin = cx.origins.get(operation.outputs[0]) if operation.outputs else None
        why = (f"{op.type} needs NNAPI feature level {op.level}, above the target {target}:"
               f" {'; '.join(op.reasons_above(target))}")
        node = owner.get(origin)
        if node is None or node not in region.nodes:
            for n in region.nodes:
                moves.setdefault(n, why)
        else:
            moves.setdefault(node, why)
    if not moves:  # a model-wide requirement, e.g. relaxed float16 computation
        raise ConversionError([UnsupportedUse("the model", r.reason, "every region")
                               for r in model_requirements(cx.model) if r.level > target])
    return moves


def _size_moves(regions: list[Region], policy: FallbackPolicy) -> dict[Node, str]:
    moves: dict[Node, str] = {}
    for region in regions:
        if region.size < policy.min_region_size:
            why = (f"its region has {region.size} computing NNAPI operation"
                   f"{'s' if region.size != 1 else ''}, below min_region_size"
                   f" {policy.min_region_size}")
            moves.update({n: why for n in region.nodes})
    if moves or policy.max_regions is None or len(regions) <= policy.max_regions:
        return moves
    ranked = sorted(regions, key=lambda r: -r.size)
    for region in ranked[policy.max_regions:]:
        why = f"only the {policy.max_regions} largest regions run on NNAPI (max_regions)"
        moves.update({n: why for n in region.nodes})
    return moves


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
