"""The NNAPI regions of an exported program, as the fx nodes ExecuTorch's partitioner tags.

The regions are the CPU fallback's (``regions/``): the program is captured as the
converter's graph (``capture/export.py``; edge ops read as the ATen ops they stand for), the
trial lowering finds what NNAPI runs and ``partition`` forms the regions under the policy's
knobs, with the dtypes ExecuTorch passes across a delegate's boundary. A region is then the
fx nodes between its inputs and its results: walking back from the nodes holding its
results to those holding its inputs takes in what the capture folded into one node (batch
norms into convolutions, PT2E's quantize/dequantize pairs, reshape-permute-reshape chains)
and the getitems of its multi-output nodes. Parameters are left to ExecuTorch's
``tag_constant_data``; everything else stays on ExecuTorch's kernels, or goes to a
partitioner that follows. A ``torch.cond`` no region takes (below feature level 4, or with a
branch NNAPI cannot run) has each branch partitioned as a graph of its own
(:func:`find_called_regions`): ExecuTorch lowers tagged nodes inside control-flow submodules.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ..capture import qdq
from ..capture.export import (
    ExportedCapture,
    exported_capture,
    flexible_dims,
    source_location,
)
from ..errors import ConversionError, ConverterBug, UnsupportedUse
from ..pipeline.layout_choice import nhwc_choices
from ..regions.partition import Partition, Region, partition
from .lower import BOUNDARY_DTYPES, example_inputs
from .size_copies import is_size
from .specs import PartitionerOptions


@dataclass
class FxRegion:
    """One NNAPI region: the fx nodes tagged for one delegate."""

    number: int
    nodes: list[torch.fx.Node]  # in graph order
    operations: dict[str, int]  # NNAPI operation counts, most frequent first
    feature_level: int


@dataclass
class KeptNode:
    """A node left to ExecuTorch's kernels, and why NNAPI does not run it."""

    kind: str
    location: str
    reason: str


@dataclass
class FxPartition:
    regions: list[FxRegion]
    kept: list[KeptNode]  # in program order


def find_regions(program: torch.export.ExportedProgram, options: PartitionerOptions,
                 weights: Mapping[str, torch.Tensor] | None = None, *,
                 shared_sizes: bool = False) -> FxPartition:
    """The regions of ``program`` (see the module docstring), tried on its own example
    inputs or tensors of its recorded shapes. ExecuTorch partitions a copy whose parameters
    are fake tensors: ``weights`` are the real ones by name (see :func:`real_state`).
    A size node two regions read is refused (``size_copies.py`` gives each its own), or
    with ``shared_sizes`` allowed (to ask which nodes the regions take)."""
    examples = program_examples(program)
    capture = exported_capture(program, examples, state=real_state(program, weights or {}))
    part = _partition(capture, examples, program, options)
    regions = [_fx_region(i, region, capture) for i, region in enumerate(part.regions)]
    taken = {n for region in regions for n in region.nodes}
    regions += find_called_regions(program.graph_module, options, taken, len(regions))
    _check_disjoint(regions, shared_sizes)
    return FxPartition(regions, _kept(part))


# The graphs a higher-order op ExecuTorch's kernels run calls: cond's branches, scan's
# combine_fn (ExecuTorch's emitter runs both; a while_loop it cannot run is refused).
_CALLED_GRAPHS = {torch.ops.higher_order.cond: lambda args: args[1:3],
                  torch.ops.higher_order.scan: lambda args: args[:1]}


def find_called_regions(module: torch.fx.GraphModule, options: PartitionerOptions,
                        taken: set[torch.fx.Node], first: int) -> list[FxRegion]:
    """The regions inside the branches of each ``torch.cond`` (and the combine_fn of each
    ``scan``) of ``module`` that no region in ``taken`` holds (below feature level 4, or with
    a graph NNAPI cannot run): each graph partitioned as one of its own, nested conds too,
    numbered from ``first``.
    ExecuTorch's ``to_backend`` lowers tagged nodes inside control-flow submodules.
    (A ``torch.while_loop`` left to ExecuTorch is refused: its kernels cannot run it.)"""
    found: list[FxRegion] = []
    for node in module.graph.nodes:
        if node in taken or node.op != "call_function" \
                or node.target not in _CALLED_GRAPHS:
            continue
        for branch in _CALLED_GRAPHS[node.target](node.args):
            assert isinstance(branch, torch.fx.Node) and isinstance(branch.target, str)
            graph_module = module.get_submodule(branch.target)
            assert isinstance(graph_module, torch.fx.GraphModule)
            examples = tuple(_placeholder_example(n) for n in graph_module.graph.nodes
                             if n.op == "placeholder")
            regions = [_fx_region(first + len(found) + i, region, capture)
                       for capture in [exported_capture(graph_module, examples)]
                       for i, region in enumerate(_partition(capture, examples,
                                                             graph_module, options).regions)]
            found.extend(regions)
            inner = {n for region in regions for n in region.nodes}
            found.extend(find_called_regions(graph_module, options, inner,
                                             first + len(found)))
    return found


def _placeholder_example(node: torch.fx.Node) -> torch.Tensor:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise ConverterBug(f"the branch input {node.name} records no tensor")
    shape = [int(d) for d in val.shape]
    return torch.rand(shape, dtype=val.dtype) if val.dtype.is_floating_point else \
        torch.zeros(shape, dtype=val.dtype)


def _partition(capture: ExportedCapture, examples: tuple[torch.Tensor, ...],
               program: torch.export.ExportedProgram | torch.fx.GraphModule,
               options: PartitionerOptions) -> Partition:
    qdq.fold(capture.graph)
    return partition(capture, examples, policy=options.policy,
                     nhwc=nhwc_choices(examples, options.compile.nhwc),
                     flexible=flexible_dims(program), relax=options.compile.relax,
                     boundary=BOUNDARY_DTYPES)


def program_examples(program: torch.export.ExportedProgram) -> tuple[torch.Tensor, ...]:
    """The program's example inputs when it kept them (torch.export does), else tensors of
    its recorded shapes and dtypes."""
    users = program.graph_signature.user_inputs
    recorded = program.example_inputs
    if recorded is not None:
        args, kwargs = recorded
        if not kwargs and len(args) == len(users) \
                and all(isinstance(x, torch.Tensor) for x in args):
            return tuple(args)
    return example_inputs(program)


def real_state(program: torch.export.ExportedProgram, weights: Mapping[str, torch.Tensor]
               ) -> dict[str, object]:
    """The program's parameters, buffers and constants by name, with real values for fake
    ones: those of ``weights`` where the name, shape and dtype match, else ones (floats) or
    zeros, which decide the same regions for all but value-dependent lowerings."""
    state: dict[str, object] = {**program.state_dict, **program.constants}
    for key, fake in program.state_dict.items():
        if not isinstance(fake, FakeTensor):
            continue
        real = weights.get(key)
        if real is not None and real.shape == fake.shape and real.dtype == fake.dtype:
            state[key] = real
        elif fake.dtype.is_floating_point:
            state[key] = torch.ones(fake.shape, dtype=fake.dtype)
        else:
            state[key] = torch.zeros(fake.shape, dtype=fake.dtype)
    return state


def _fx_region(number: int, region: Region, capture: ExportedCapture) -> FxRegion:
    stop = {n for v in region.inputs for n in capture.fx_nodes.get(v, [])}
    todo = [n for node in region.nodes for v in node.outputs
            for n in capture.fx_nodes.get(v, [])]
    found: set[torch.fx.Node] = set()
    while todo:
        n = todo.pop()
        if n in found or n in stop or n.op in ("placeholder", "output"):
            continue
        found.add(n)
        todo.extend(n.all_input_nodes)
    for n in list(found):  # a multi-output node's results leave through its getitems
        found.update(u for u in n.users if u.target is operator.getitem)
    order = {n: i for i, n in enumerate(next(iter(found)).graph.nodes)} if found else {}
    return FxRegion(number, sorted(found, key=order.__getitem__), region.operation_counts,
                    region.feature_level)


def _check_disjoint(regions: list[FxRegion], shared_sizes: bool) -> None:
    """Refuses an fx node two regions take: a size (the user's graph was not passed
    through :func:`~.size_copies.copy_sizes_per_reader`) in one line, else a converter
    bug."""
    owner: dict[torch.fx.Node, int] = {}
    for region in regions:
        for n in region.nodes:
            if n in owner and is_size(n) and not shared_sizes:
                raise ConversionError([UnsupportedUse(
                    str(n.target), f"the size {n.name} is read by NNAPI regions {owner[n]}"
                    f" and {region.number}, which cannot share it: lower with to_pte, or"
                    " pass transform_passes=[copy_sizes_per_reader] (torch_nnapi.convert."
                    "executorch.size_copies) to to_edge_transform_and_lower, or export"
                    " with static sizes", source_location(_reader(n, region)))])
            if n in owner and not is_size(n):
                raise ConverterBug(f"fx node {n.name} falls in NNAPI regions {owner[n]} and"
                                   f" {region.number}")
            owner[n] = region.number


def _reader(size: torch.fx.Node, region: FxRegion) -> torch.fx.Node:
    """The first node of ``region`` that reads ``size`` (through arithmetic on sizes) and is
    not a size itself: where the user's code reads it (a size node's own trace points into
    torch.export)."""
    todo, taken = [size], set(region.nodes)
    while todo:
        n = todo.pop(0)
        if n is not size and not is_size(n):
            return n
        todo.extend(u for u in n.users if u in taken)
    return size


def _kept(part: Partition) -> list[KeptNode]:
    return [KeptNode(c.node.kind, c.node.location, c.reason) for c in part.cpu]


__all__ = ["FxPartition", "FxRegion", "KeptNode", "find_called_regions", "find_regions",
           "program_examples"]
