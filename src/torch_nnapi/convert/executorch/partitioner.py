"""``NnapiPartitioner``: the maximal NNAPI-runnable regions of a program, for ExecuTorch.

``to_edge_transform_and_lower(program, partitioner=[NnapiPartitioner(**options)])`` asks it
twice (after :meth:`transform_for_pre_decomposition`, which readies attention to be kept
whole). First, before decomposing, which ops to keep whole (:meth:`ops_to_not_decompose`):
those NNAPI runs better whole than as their core-ATen parts (linear, layer and group norms,
softmax, matmul, attention, padding and pooling...), each kept only where the regions of that
program take it (a node NNAPI leaves on the CPU is decomposed as usual, so ExecuTorch's
kernels run it).
Then :meth:`partition` tags the regions of the edge program (``fx_regions.py``: the CPU
fallback's trial lowering and partition, one code path with ``convert``); ExecuTorch hands
each tagged subgraph to ``NnapiBackend.preprocess`` and leaves the rest to its kernels or to
a partitioner that follows (``[NnapiPartitioner(), XnnpackPartitioner()]``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from executorch.exir.backend.partitioner import (
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from executorch.exir.backend.utils import tag_constant_data
from executorch.exir.program._program import _default_decomposition_table
from torch._subclasses.fake_tensor import FakeTensor

from ..capture.export import aten_overload, source_location
from ..errors import ConversionError, UnsupportedUse
from ..lowerings import lowering_for
from .backend import BACKEND_ID, compile_specs
from .fx_regions import FxPartition, find_regions
from .specs import PartitionerOptions

TAG_PREFIX = "nnapi_"

# Ops the lowerings take whole, better than their core-ATen decompositions: one NNAPI
# operation (FULLY_CONNECTED, CONV_2D, the LSTM operations...) where the parts would be
# several, or layouts and broadcasts kept simple. Only those with a lowering are kept.
WHOLE_OPS = (
    "aten::linear", "aten::layer_norm", "aten::group_norm", "aten::instance_norm",
    "aten::matmul", "aten::einsum",
    "aten::softmax", "aten::log_softmax", "aten::hardswish", "aten::hardsigmoid",
    "aten::relu6", "aten::prelu", "aten::pad", "aten::max_pool2d",
    "aten::adaptive_avg_pool2d", "aten::upsample_nearest2d", "aten::upsample_bilinear2d",
    "aten::linalg_vector_norm", "aten::scaled_dot_product_attention",
)
# (Convolutions need no keeping: their core-ATen form, aten::convolution, lowers as well.
# ExecuTorch keeps no op returning several tensors, such as aten::lstm: recurrent layers
# arrive as their cells' matrix products and activations, which lower one by one.)

# What a view of attention's output may pass through on its way from it.
_VIEW_CHAIN = {"aten::view", "aten::reshape", "aten::permute", "aten::transpose",
               "aten::contiguous", "aten::clone", "aten::alias"}


def _op_name(node: torch.fx.Node) -> str | None:
    op = aten_overload(node.target) if node.op == "call_function" else None
    return op._schema.name if isinstance(op, torch._ops.OpOverload) else None


def views_of_attention(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """The ``view`` and ``reshape`` nodes of an attention output (through permutes and
    transposes). Captured, ``y.transpose(1, 2).contiguous().view(...)`` keeps no copy (eager
    attention returned the heads' memory already in that order), but attention kept whole is
    re-traced with the strides of its reference form, where such a view has no valid strides
    and the decomposition fails (a reshape is made such a view first)."""
    views = []
    pending = [n for n in graph.nodes if _op_name(n) == "aten::scaled_dot_product_attention"]
    seen: set[torch.fx.Node] = set()
    while pending:
        node = pending.pop()
        for user in list(node.users):
            if user in seen or _op_name(user) not in _VIEW_CHAIN:
                continue
            seen.add(user)
            if user.target in (torch.ops.aten.view.default, torch.ops.aten.reshape.default):
                views.append(user)
            pending.append(user)
    return views


def copy_before_views_of_attention(graph: torch.fx.Graph) -> int:
    """Puts a contiguous copy before each of :func:`views_of_attention`; returns how many.
    The copy is the one ``contiguous()`` asked for; NNAPI needs none."""
    views = views_of_attention(graph)
    for view in views:
        source = view.args[0]
        assert isinstance(source, torch.fx.Node)  # a view chain's node, found above
        with graph.inserting_before(view):
            copy = graph.call_function(torch.ops.aten.clone.default, (source,),
                                       {"memory_format": torch.contiguous_format})
        view.replace_input_with(source, copy)
    return len(views)


# Control flow ExecuTorch's own kernels cannot run (its emitter takes cond, map and scan):
# left to them, the program would fail to serialize with an internal error.
NOT_ON_EXECUTORCH = {"higher_order::while_loop": "torch.while_loop"}


def _check_executorch_runs(found: FxPartition) -> None:
    """Refuses, in one line, a program whose part left to ExecuTorch it cannot run."""
    for kept in found.kept:
        what = NOT_ON_EXECUTORCH.get(kept.kind)
        if what is not None:
            raise ConversionError([UnsupportedUse(
                kept.kind, f"{what} stays off NNAPI ({kept.reason}), and ExecuTorch's kernels"
                " cannot run it: lower it at target_level 4 or above (NNAPI WHILE), with a"
                " condition and body NNAPI converts", kept.location)])


def _check_kept_whole_are_taken(program: torch.export.ExportedProgram,
                                found: FxPartition) -> None:
    """Refuses, in one line, an op kept whole for a region that did not form once the
    program was decomposed (the regions asked about first are found on the program before
    ExecuTorch decomposes it): ExecuTorch has no kernel for it whole."""
    kept = set(whole_ops())
    taken = {n for region in found.regions for n in region.nodes}
    top = program.graph_module.graph
    for node in top.nodes:
        if node.op == "call_function" and aten_overload(node.target) in kept \
                and node not in taken:
            kind = _op_name(node) or str(node.target)
            why = next((k.reason for k in found.kept if k.kind == kind), "")
            raise ConversionError([UnsupportedUse(
                kind, "it was kept whole for an NNAPI region that did not form"
                " after ExecuTorch decomposed the program, and ExecuTorch has no kernel for it"
                f" whole{': ' + why if why else ''}", source_location(node))]).with_hint(
                "export with static sizes, or name the op in fallback_ops")


def whole_ops() -> list[torch._ops.OpOverload]:
    """The overloads of :data:`WHOLE_OPS` that ExecuTorch would decompose and a lowering
    takes (functional ones only: ``.out`` and in-place forms are decomposed as usual)."""
    return list(_whole_ops())


@functools.cache
def _whole_ops() -> tuple[torch._ops.OpOverload, ...]:
    """:func:`whole_ops`, found once per process: building ExecuTorch's decomposition table
    walks every registered operator (about 1.5 s), and a conversion asks ten times."""
    found = []
    for op in _default_decomposition_table():
        if not isinstance(op, torch._ops.OpOverload):
            continue
        name = op._schema.name
        if name in WHOLE_OPS and lowering_for(name) is not None \
                and op._overloadname != "out" and not name.endswith("_"):
            found.append(op)
    return tuple(sorted(found, key=str))


class NnapiPartitioner(Partitioner):  # type: ignore[misc]  # ExecuTorch ships no types
    """Tags the regions NNAPI runs (see the module docstring). ``options``: the compile
    specs' (``nnapi_compile_specs``: ``compilation_preference``, ``relax_fp32_to_fp16``,
    ``nhwc``, ``target_level``, ``devices``...) and the regions' (``fallback_ops``,
    ``min_region_size``, ``max_regions``), checked here."""

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = PartitionerOptions.of(**options)
        self.delegation_spec = DelegationSpec(BACKEND_ID, compile_specs(self.options.specs))
        self.found: FxPartition | None = None  # the last partition, for reports
        # the real parameters by name, from the program ExecuTorch asks about first: it
        # partitions a copy whose parameters are fake tensors
        self.weights: dict[str, torch.Tensor] = {}

    def partition(self, exported_program: torch.export.ExportedProgram) -> PartitionResult:
        self.found = find_regions(exported_program, self.options, self.weights)
        _check_executorch_runs(self.found)
        _check_kept_whole_are_taken(exported_program, self.found)
        tags = {}
        for region in self.found.regions:
            tag = f"{TAG_PREFIX}{region.number}"
            for node in region.nodes:
                node.meta["delegation_tag"] = tag
            tags[tag] = self.delegation_spec
        tag_constant_data(exported_program)
        return PartitionResult(tagged_exported_program=exported_program,
                               partition_tags=tags)

    def transform_for_pre_decomposition(self, exported_program: torch.export.ExportedProgram
                                        ) -> torch.export.ExportedProgram:
        """The program with a copy before attention's views (so attention can be kept
        whole: :func:`copy_before_views_of_attention`); ExecuTorch calls it first. The
        program the user passed is left as it was: the copies go into a new one (the
        functionalized program ExecuTorch makes next anyway), only when there are any."""
        if not views_of_attention(exported_program.graph_module.graph):
            return exported_program
        program: torch.export.ExportedProgram = exported_program.run_decompositions({})
        copy_before_views_of_attention(program.graph_module.graph)
        program.graph_module.recompile()
        return program

    def ops_to_not_decompose(self, ep: torch.export.ExportedProgram
                             ) -> tuple[list[torch._ops.OpOverload],
                                        Callable[[torch.fx.Node], bool]]:
        self.weights.update((k, t) for k, t in ep.state_dict.items()
                            if not isinstance(t, FakeTensor))
        return whole_ops(), self._taken_in(ep)

    def _taken_in(self, ep: torch.export.ExportedProgram) -> Callable[[torch.fx.Node], bool]:
        """Whether a node of ``ep`` falls in one of its regions; the regions are found on
        the first question about an op kept whole (ExecuTorch asks about every node)."""
        kept = set(whole_ops())
        taken: set[str] | None = None

        def in_a_region(node: torch.fx.Node) -> bool:
            nonlocal taken
            if node.op != "call_function" or aten_overload(node.target) not in kept:
                return False
            if taken is None:
                # (sizes may be shared here: they are copied per reader after decomposing)
                found = find_regions(ep, self.options, self.weights, shared_sizes=True)
                top = ep.graph_module.graph  # (branches' nodes may share top-level names)
                taken = {n.name for region in found.regions for n in region.nodes
                         if n.graph is top}
            return node.name in taken

        return in_a_region
