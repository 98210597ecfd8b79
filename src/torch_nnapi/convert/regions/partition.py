"""Regions, step 2: NNAPI regions and the running order, under the policy's knobs.

Regions follow from the CPU nodes the trial lowering found (``trial.py``): an
NNAPI node's *level* is the number of CPU nodes on the longest path to it, and all NNAPI
nodes of one level form one region. No path leaves a region through the CPU and comes back,
so every region runs as one NNAPI call: for level 0, 1, ... the region of the level runs,
then the CPU nodes of that level in program order.

The policy then runs until nothing changes: each region is lowered on its own (a node it
rejects, or one a device of ``target_level`` would reject, moves to the CPU), regions
smaller than ``min_region_size`` computing operations move to the CPU, and beyond
``max_regions`` only the largest regions stay. Every move repeats the trial, so regions
merge again where they can.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ...nnapi.devices import DeviceProfile
from ...nnapi.errors import BadDataError
from ..builder.values import QUANT_DTYPES, TensorValue
from ..capture.graph import ExampleTensor, Graph, Node, Value, free_values, walk
from ..errors import ConversionError, ConverterBug, UnsupportedUse, one_line
from ..levels import model_requirements, operation_levels
from ..options import FallbackPolicy
from ..pipeline import patterns
from ..pipeline.layout_choice import lower_graph
from ..pipeline.lowerer import InputSpec, Lowered, example_spec
from .trial import (
    BOUNDARY_DTYPES,
    Placer,
    Probed,
    ShapeFacts,
    Trial,
    TrialLowerer,
    mutation_moves,
    op_kinds,
    shape_facts,
)

# NNAPI operations that only move or relabel data: a region of nothing else is not worth a
# call (min_region_size counts the other operations).
DATA_MOVES = frozenset({"RESHAPE", "TRANSPOSE", "SQUEEZE", "EXPAND_DIMS"})


@dataclass(eq=False)
class Region:
    """NNAPI nodes that run as one NNAPI model."""

    level: int
    nodes: list[Node]  # in program order
    shared: list[Node]  # shared nodes lowered again inside, in program order
    inputs: list[Value]
    outputs: list[Value]
    lowered: Lowered | None = None

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

    @property
    def result(self) -> Lowered:
        """The region's lowered NNAPI model (every region of a Partition has one)."""
        if self.lowered is None:
            raise ConverterBug(f"the region of level {self.level} was not lowered")
        return self.lowered


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
    schedule: list[Region | Node]  # regions and CPU-side nodes, in running order


# ------------------------------------------------------------------------------ regions


@dataclass
class Plan:
    """Regions and running order for one trial verdict, and what must move to the CPU."""

    regions: list[Region]
    schedule: list[Region | Node]
    recomputed: list[Node]
    constants: dict[Value, Any]
    moves: dict[Node, str] = field(default_factory=dict)


class _Planner:
    def __init__(self, graph: Graph, trial: Trial, edges: dict[Node, set[Node]],
                 script_values: Mapping[Value, torch._C.Value]):
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
        readers: list[tuple[Region | Node | None, list[Value]]] = [
            (r, r.inputs) for r in plan.regions]
        readers += [(n, free_values(n)) for n in plan.recomputed]
        readers += [(n, free_values(n)) for n in self.graph.nodes if n in trial.cpu]
        readers.append((None, [self.graph.output]))
        for reader, values in readers:
            for v in values:
                p = self.producer.get(v)
                region = home.get(p) if p is not None else None
                if p is None or region is None or region is reader:
                    continue
                t = trial.values.get(v)
                if not isinstance(t, TensorValue):
                    plan.moves.setdefault(p, f"its result %{v.name} is not a tensor, yet is"
                                             " read outside its region")
                elif v in trial.constants:  # an NNAPI model cannot return a constant
                    plan.moves.setdefault(p, f"its result %{v.name}, a constant, is read"
                                             " outside its region")
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


def fits_constant(script_value: torch._C.Value | None, result: Any) -> bool:
    """Whether ``result``, computed at conversion time, can stand for ``script_value`` in
    TorchScript as a constant of its type."""
    if script_value is None or not _is_constant(result):
        return False
    scratch = torch._C.Graph()  # kept alive while its constant is read
    try:
        # insertConstant is not in torch's stubs
        constant: torch._C.Value = scratch.insertConstant(result)  # type: ignore[attr-defined]
    except (RuntimeError, TypeError):
        return False
    return constant.type().isSubtypeOf(script_value.type())


def _is_constant(r: Any) -> bool:
    if isinstance(r, (list, tuple)):
        return all(_is_constant(x) for x in r)
    return r is None or isinstance(r, (bool, int, float, str, torch.Tensor))


# ------------------------------------------------------------------------------ the policy


def partition(captured: Probed, examples: tuple[Any, ...], *, policy: FallbackPolicy,
              nhwc: Sequence[bool | None], flexible: Sequence[Sequence[int]],
              relax: bool = False, boundary: tuple[str, ...] = BOUNDARY_DTYPES) -> Partition:
    """Places every node of ``captured`` (see the module docstring); each region comes
    back lowered. ``nhwc`` and ``flexible`` are per model input, as the converter takes
    them; ``boundary`` the dtypes the back-end's runtime passes into and out of a
    region."""
    graph = captured.graph
    patterns.fuse(graph)
    facts = shape_facts(captured, examples, flexible)
    specs = [example_spec(x, False, f) if isinstance(x, torch.Tensor) else None
             for x, f in zip(examples, flexible, strict=False)]
    forced, edges = mutation_moves(graph)
    producer = {v: n for n in graph.nodes for v in n.outputs}
    for v, why in facts.dynamic.items():  # where sizes start to depend on the data
        root = producer.get(v)
        if root is not None and not any(u in facts.dynamic for u in free_values(root)):
            forced.setdefault(root, why)
    for node in graph.nodes:
        denied = [k for k in op_kinds(node) if k in policy.fallback_ops]
        if denied:
            forced.setdefault(node, f"{denied[0]} is in fallback_ops")
    lowerer = _RegionLowering(graph, nhwc, flexible, facts, relax, boundary)
    for _ in range(len(graph.nodes) + 1):
        trial = TrialLowerer(graph, specs, forced, facts, boundary).classify()
        plan = _Planner(graph, trial, edges, captured.values).plan()
        moves = dict(plan.moves)
        if not moves:
            for region in plan.regions:
                moves.update(lowerer.lower(region, trial))
        if not moves and policy.target_level is not None:
            for region in plan.regions:
                moves.update(_above_target(region, policy.target_level))
        if not moves and policy.device is not None:
            for region in plan.regions:
                moves.update(_off_device(region, policy.device))
        if not moves:
            moves = _size_moves(plan.regions, policy)
        if not moves:
            cpu = [CpuNode(n, trial.cpu[n]) for n in graph.nodes if n in trial.cpu]
            return Partition(graph, plan.regions, cpu, plan.recomputed, plan.constants,
                             plan.schedule)
        for node, reason in moves.items():
            forced.setdefault(node, reason)
    raise ConverterBug("the CPU fallback did not settle on a partition")


class _RegionLowering:
    """Lowers regions as models of their own, remembering each region's outcome."""

    def __init__(self, graph: Graph, nhwc: Sequence[bool | None],
                 flexible: Sequence[Sequence[int]], facts: ShapeFacts, relax: bool,
                 boundary: tuple[str, ...]) -> None:
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.model_inputs = {v: i for i, v in enumerate(graph.inputs)}
        self.nhwc = list(nhwc)
        self.flexible = [tuple(f) for f in flexible]
        self.facts = facts
        self.relax = relax
        self.boundary = boundary
        # (the ids of a region's nodes, shared nodes, inputs, outputs) -> its outcome
        self.done: dict[tuple[tuple[int, ...], ...], Lowered | dict[Node, str]] = {}

    def lower(self, region: Region, trial: Trial) -> dict[Node, str]:
        """Lowers ``region`` (setting ``region.lowered``); the nodes it rejects, and why."""
        key = tuple(tuple(map(id, part)) for part in
                    (region.nodes, region.shared, region.inputs, region.outputs))
        if key not in self.done:
            self.done[key] = self._lower(region, trial)
        found = self.done[key]
        if isinstance(found, dict):
            return found
        region.lowered = found
        return {}

    def _lower(self, region: Region, trial: Trial) -> Lowered | dict[Node, str]:
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
            placers.append(Placer(graph, specs, known, self.boundary))
            return placers[-1]

        try:
            return lower_graph(sub, tuple(examples), nhwc=choices, flexible=flexible,
                               relax=self.relax, make_lowerer=make)
        except (ConversionError, ConverterBug, BadDataError) as e:
            failed = {n: "; ".join(dict.fromkeys(reasons))
                      for n, reasons in (placers[-1].failed.items() if placers else ())
                      if n in region.nodes}
            if not failed:  # not one node's fault: the region as a whole stays on the CPU
                failed = {n: f"its region could not be converted: {one_line(e)}"
                          for n in region.nodes}
            return failed


def _example_tensor(ex: ExampleTensor) -> torch.Tensor:
    """A tensor with the example's shape, dtype and quantization (values unused)."""
    if ex.dtype in QUANT_DTYPES:
        return torch._empty_affine_quantized(list(ex.shape), scale=ex.scale,
                                             zero_point=ex.zero_point,
                                             dtype=getattr(torch, ex.dtype))
    return torch.zeros(ex.shape, dtype=getattr(torch, ex.dtype))


def _above_target(region: Region, target: int) -> dict[Node, str]:
    """The nodes behind the region's operations a device of ``target`` would reject."""
    if region.lowered is None or region.feature_level <= target:
        return {}
    cx = region.lowered.cx
    owner = {n: top for top in region.nodes + region.shared for n in walk([top])}
    moves: dict[Node, str] = {}
    for op in operation_levels(cx.model, cx.origins):
        if op.level <= target:
            continue
        operation = cx.model.operations[op.index]
        origin = cx.origins.get(operation.outputs[0]) if operation.outputs else None
        why = (f"{op.type} needs NNAPI feature level {op.level}, above the target {target}:"
               f" {'; '.join(op.reasons_above(target))}")
        node = owner.get(origin) if isinstance(origin, Node) else None
        if node is None or node not in region.nodes:
            for n in region.nodes:
                moves.setdefault(n, why)
        else:
            moves.setdefault(node, why)
    if not moves:  # a model-wide requirement, e.g. relaxed float16 computation
        raise ConversionError([UnsupportedUse("the model", r.reason, "every region")
                               for r in model_requirements(cx.model) if r.level > target])
    return moves


def _off_device(region: Region, device: DeviceProfile) -> dict[Node, str]:
    """The nodes behind the region's operations ``device`` does not support (the profile's
    rule they fail), so that the region runs whole on it. An operation no node owns (a
    layout transpose the region adds) stays: Android then gives it to nnapi-reference."""
    if region.lowered is None:
        return {}
    cx = region.lowered.cx
    owner = {n: top for top in region.nodes + region.shared for n in walk([top])}
    moves: dict[Node, str] = {}
    for index, supported in enumerate(device.supported_operations(cx.model)):
        operation = cx.model.operations[index]
        origin = cx.origins.get(operation.outputs[0]) if operation.outputs else None
        node = owner.get(origin) if isinstance(origin, Node) else None
        if supported or node is None or node not in region.nodes:
            continue
        moves.setdefault(node, f"{device.name} does not run its {operation.type.name}:"
                               f" {device.why_unsupported(cx.model, index)}")
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
