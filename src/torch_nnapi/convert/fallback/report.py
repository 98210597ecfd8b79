"""What a partitioned conversion made: regions, CPU nodes and what crosses between them.

:class:`PartitionReport` describes the result of the CPU fallback (regions with their
operation counts and boundary tensors, every CPU node with its source location and why it
stays there); the module keeps it, as JSON, in its ``partition`` attribute, which
``torch-nnapi inspect``, ``check`` and ``bench`` read (:func:`report_of`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ...nnapi.errors import counted
from ..builder.values import QUANT_DTYPES
from ..capture.graph import ExampleTensor, Value, free_values
from ..capture.script import Captured
from ..options import FallbackPolicy
from ..pipeline.lowerer import Lowered
from ..regions.partition import Partition, Region
from .bodies import Body

REPORT_VERSION = 1
_ITEM_BYTES = {"float32": 4, "int32": 4, "int64": 8, "bool": 1, "quint8": 1, "float16": 2}


@dataclass
class BoundaryTensor:
    """A tensor that enters or leaves a region."""

    name: str  # the TorchScript value, e.g. "%input.3"
    shape: list[int]  # at the example inputs; flexible dimensions are listed apart
    dtype: str
    bytes: int  # at the example inputs
    peer: str  # where it comes from (inputs) or goes to (outputs)
    flexible: list[int] = field(default_factory=list)


@dataclass(kw_only=True)
class RegionReport:
    """One NNAPI region (a partitioned module keeps these as JSON: the fields are its keys)."""

    index: int
    nodes: int  # PyTorch nodes it runs
    operations: dict[str, int]  # NNAPI operation counts
    size: int  # computing operations (what min_region_size compares)
    feature_level: int
    inputs: list[BoundaryTensor]
    outputs: list[BoundaryTensor]
    first: str  # source location of its first and last node
    last: str


@dataclass
class CpuNodeReport:
    kind: str
    location: str
    reason: str


@dataclass
class BodyReport:
    """A block of a CPU loop or branch whose own regions run on NNAPI (``bodies.py``)."""

    cpu: int  # the loop or branch: its index in the report's ``cpu``
    block: int  # which of its blocks (a branch's then or else)
    report: PartitionReport  # the block's own partition

    def to_json(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "block": self.block, "report": self.report.to_json()}


@dataclass
class PartitionReport:
    """Where a partitioned model runs what, and what crosses between NNAPI and the CPU."""

    regions: list[RegionReport]
    cpu: list[CpuNodeReport]
    schedule: list[str]  # "region 0", "cpu 3" (index into cpu), in running order
    recomputed: int  # folded nodes (sizes, lists) the CPU program rebuilds
    policy: dict[str, Any]
    # the model's inputs: shape (-1 flexible), dtype, and scale and zero point if quantized
    inputs: list[dict[str, Any]] = field(default_factory=list)
    version: int = REPORT_VERSION
    bodies: list[BodyReport] = field(default_factory=list)  # loops' and branches' blocks

    @property
    def operation_count(self) -> int:
        return sum(sum(r.operations.values()) for r in self.regions) + \
            sum(b.report.operation_count for b in self.bodies)

    @property
    def region_count(self) -> int:
        """The regions, those inside loops and branches included."""
        return len(self.regions) + sum(b.report.region_count for b in self.bodies)

    @property
    def boundary_bytes(self) -> int:
        return sum(t.bytes for r in self.regions for t in r.inputs + r.outputs)

    @property
    def feature_level(self) -> int:
        return max([r.feature_level for r in self.regions] +
                   [b.report.feature_level for b in self.bodies], default=0)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["bodies"] = [b.to_json() for b in self.bodies]
        if not self.bodies:  # as a report of a model without loops always was
            del data["bodies"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionReport:
        if data.get("version") != REPORT_VERSION:
            raise ValueError(f"partition report version {data.get('version')!r}, this"
                             f" torch-nnapi reads version {REPORT_VERSION}")
        regions = [RegionReport(**dict(r, inputs=[BoundaryTensor(**t) for t in r["inputs"]],
                                       outputs=[BoundaryTensor(**t) for t in r["outputs"]]))
                   for r in data["regions"]]
        bodies = [BodyReport(int(b["cpu"]), int(b["block"]), cls.from_json(b["report"]))
                  for b in data.get("bodies", [])]
        return cls(regions, [CpuNodeReport(**c) for c in data["cpu"]], list(data["schedule"]),
                   int(data["recomputed"]), dict(data["policy"]), list(data["inputs"]),
                   int(data["version"]), bodies)

    def summary(self) -> str:
        regions, cpu = len(self.regions), len(self.cpu)
        inner = self.region_count - regions
        inside = f" (+{inner} inside loops and branches)" if self.bodies else ""
        return (f"{counted(regions, 'NNAPI region')}{inside}"
                f" ({counted(self.operation_count, 'operation')}), {counted(cpu, 'node')}"
                f" on the CPU, {_size(self.boundary_bytes)} crossing")

    def render(self, max_locations: int = 3) -> list[str]:
        """The report as text: the running order with each region's boundary tensors, then
        the CPU nodes grouped by op kind and reason."""
        lines = [f"partitioned: {self.summary()}"]
        pending: list[CpuNodeReport] = []

        def flush() -> None:
            if pending:
                kinds = Counter(c.kind for c in pending)
                lines.append(f"  CPU: {counted(len(pending), 'node')}"
                             f" ({', '.join(f'{k} x{n}' for k, n in kinds.most_common(4))}"
                             f"{', ...' if len(kinds) > 4 else ''})")
                pending.clear()

        for step in self.schedule:
            what, _, number = step.partition(" ")
            if what == "cpu":
                pending.append(self.cpu[int(number)])
                continue
            flush()
            r = self.regions[int(number)]
            ops = ", ".join(f"{name} {n}" for name, n in r.operations.items())
            lines.append(f"  region {r.index}: {counted(r.nodes, 'PyTorch node')}, feature level"
                         f" {r.feature_level}: {ops}")
            lines.append(f"      from {r.first}")
            lines.append(f"      to {r.last}")
            for t in r.inputs:
                lines.append(f"    in  {_tensor(t)} from {t.peer}")
            for t in r.outputs:
                lines.append(f"    out {_tensor(t)} to {t.peer}")
        flush()
        if self.cpu:
            lines.append("on the CPU, and why:")
            groups: dict[tuple[str, str], list[str]] = {}
            for c in self.cpu:
                groups.setdefault((c.kind, c.reason), []).append(c.location)
            for (kind, reason), locations in sorted(groups.items(),
                                                    key=lambda kv: (-len(kv[1]), kv[0])):
                lines.append(f"  {kind} x{len(locations)}: {reason}")
                for location in locations[:max_locations]:
                    lines.append(f"      at {location}")
                if len(locations) > max_locations:
                    lines.append(f"      ... and {len(locations) - max_locations} more")
        for body in self.bodies:
            owner = self.cpu[body.cpu]
            which = ("body" if owner.kind == "prim::Loop" else
                     ("then", "else")[body.block] if body.block < 2 else f"block {body.block}")
            lines.append(f"inside {owner.kind} ({which}) at {owner.location}:")
            lines.extend("    " + line for line in body.report.render(max_locations))
        return lines


def _tensor(t: BoundaryTensor) -> str:
    dims = "x".join("?" if d in t.flexible else str(n) for d, n in enumerate(t.shape))
    return f"%{t.name} {t.dtype}[{dims}] ({_size(t.bytes)})"


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KB"
    return f"{n} B"


def describe_partition(part: Partition, captured: Captured, policy: FallbackPolicy,
                       flexible: Sequence[Sequence[int]] = (),
                       bodies: Sequence[Body] = ()) -> PartitionReport:
    model_inputs = {v: i for i, v in enumerate(part.graph.inputs)}
    cpu_index = {c.node: i for i, c in enumerate(part.cpu)}
    producer_of: dict[Value, str] = {}
    for i, region in enumerate(part.regions):
        for v in region.outputs:
            producer_of[v] = f"region {i}"
    for c in part.cpu:
        for v in c.node.outputs:
            producer_of[v] = f"the CPU ({c.node.kind} at {c.node.location})"
    readers: dict[Value, list[str]] = {}
    for i, region in enumerate(part.regions):
        for v in region.inputs:
            readers.setdefault(v, []).append(f"region {i}")
    returning = [n for n in part.recomputed if part.graph.output in n.outputs]
    cpu_reads = {v for n in [c.node for c in part.cpu] + part.recomputed
                 if n not in returning for v in free_values(n)}
    returned = set(returned_values(part))

    def peer_in(v: Value) -> str:
        if v in model_inputs:
            return f"model input {model_inputs[v]}"
        return producer_of.get(v, "the CPU")

    def peer_out(v: Value, region: str) -> str:
        found = [r for r in readers.get(v, []) if r != region]
        if v in cpu_reads:
            found.insert(0, "the CPU")
        if v in returned:
            found.append("the model's outputs")
        return ", ".join(found) or "nowhere"

    regions = []
    for i, region in enumerate(part.regions):
        name = f"region {i}"
        lowered = region.result
        flexible_in = [_flexible_dims(lowered, k) for k in range(len(region.inputs))]
        regions.append(RegionReport(
            index=i, nodes=len(region.nodes), operations=region.operation_counts,
            size=region.size, feature_level=region.feature_level,
            inputs=[_boundary(v, peer_in(v), dims)
                    for v, dims in zip(region.inputs, flexible_in, strict=False)],
            outputs=[_boundary(v, peer_out(v, name), []) for v in region.outputs],
            first=region.nodes[0].location, last=region.nodes[-1].location))
    schedule = []
    for item in part.schedule:
        if isinstance(item, Region):
            schedule.append(f"region {part.regions.index(item)}")
        elif item in cpu_index:
            schedule.append(f"cpu {cpu_index[item]}")
    cpu = [CpuNodeReport(c.node.kind, c.node.location, c.reason) for c in part.cpu]
    inputs: list[dict[str, Any]] = []
    for k, v in enumerate(part.graph.inputs):
        dims = set(flexible[k]) if k < len(flexible) else set()
        ex = v.example
        if not isinstance(ex, ExampleTensor):
            inputs.append({})
            continue
        entry: dict[str, Any] = {"shape": [-1 if d in dims else n
                                           for d, n in enumerate(ex.shape)], "dtype": ex.dtype}
        if ex.dtype in QUANT_DTYPES:
            entry.update(scale=ex.scale, zero_point=ex.zero_point)
        inputs.append(entry)
    return PartitionReport(regions, cpu, schedule, len(part.recomputed), {
        "fallback_ops": sorted(policy.fallback_ops), "min_region_size": policy.min_region_size,
        "max_regions": policy.max_regions, "target_level": policy.target_level}, inputs,
        bodies=[BodyReport(cpu_index[b.node], b.block, b.report) for b in bodies])


def returned_values(part: Partition) -> list[Value]:
    """The values the model returns (directly or in the tuple or list it returns)."""
    out = part.graph.output
    for n in part.graph.nodes:
        if out in n.outputs and n.kind in ("prim::TupleConstruct", "prim::ListConstruct"):
            return list(n.inputs)
    return [out]


def _flexible_dims(lowered: Lowered, k: int) -> list[int]:
    spec = lowered.specs[k] if k < len(lowered.specs) else None
    return sorted(spec.flexible) if spec is not None else []


def _boundary(v: Value, peer: str, flexible: list[int]) -> BoundaryTensor:
    ex = v.example
    if not isinstance(ex, ExampleTensor):
        return BoundaryTensor(v.name, [], "?", 0, peer, flexible)
    count = 1
    for n in ex.shape:
        count *= n
    return BoundaryTensor(v.name, list(ex.shape), ex.dtype,
                          count * _ITEM_BYTES.get(ex.dtype, 4), peer, flexible)


def report_of(module: object) -> PartitionReport | None:
    """The partition report a converted module carries (None: it is one NNAPI model)."""
    text = getattr(module, "partition", None)
    if not isinstance(text, str):
        return None
    return PartitionReport.from_json(json.loads(text))


__all__ = ["BodyReport", "BoundaryTensor", "CpuNodeReport", "PartitionReport", "RegionReport",
           "describe_partition", "report_of", "returned_values"]
