"""CPU fallback: ``convert(model, x, fallback=True)`` for a model NNAPI cannot run whole.

The captured graph is split into NNAPI regions and CPU nodes (``partition.py``); each region
becomes its own serialized NNAPI model behind an :class:`~..torchscript.module.NnapiProgram`,
and one TorchScript module runs the regions and the CPU nodes in order (``stitch.py``).
Tensors are converted only where they cross a region boundary, by the region's program:
NHWC <-> NCHW, int64 and bool <-> int32, quantization to the input's scale and zero point,
and flexible sizes resolved at load. ``report.py`` describes the result.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ...nnapi.errors import counted
from ..capture.graph import Graph
from ..capture.script import Captured, capture_body
from ..errors import ConversionError, UnsupportedUse
from ..options import CompileOptions, FallbackPolicy
from ..pipeline.lowerer import dequantized_scale
from ..regions.partition import Partition, Region, partition
from ..torchscript.program import nnapi_program, serialize_lowered
from .bodies import Body, convert_bodies
from .report import PartitionReport, describe_partition, returned_values
from .stitch import build_partitioned_module


@dataclass
class PartitionedConversion:
    """What ``convert_with_details(..., fallback=True)`` returns for a model that does not
    convert whole: the module, the partition and each region's NNAPI model."""

    module: torch.jit.ScriptModule
    partition: Partition
    report: PartitionReport
    seconds: float
    bodies: list[Body] = field(default_factory=list)  # CPU loops' and branches' blocks

    @property
    def regions(self) -> list[Region]:
        return self.partition.regions

    @property
    def feature_level(self) -> int:
        return self.report.feature_level


def kept_on_cpu(graph: Graph, policy: FallbackPolicy) -> set[str]:
    """The op kinds of ``graph`` that ``fallback_ops`` keeps on the CPU."""
    kinds = {n.kind for n in graph.walk()} | {s.kind for n in graph.walk() for s in n.steps}
    return kinds & set(policy.fallback_ops)


def convert_partitioned(captured: Captured, examples: tuple[torch.Tensor, ...],
                        policy: FallbackPolicy, *, nhwc: Sequence[bool | None],
                        flexible: Sequence[Sequence[int]], compile: CompileOptions,
                        start: float) -> PartitionedConversion:
    """Partitions ``captured`` and builds the module running it (see the module
    docstring); raises ConversionError when no part of the model runs on NNAPI."""
    captured = captured.without_mutation()
    part = partition(captured, examples, policy=policy, nhwc=nhwc, flexible=flexible,
                     relax=compile.relax_fp32_to_fp16)

    def convert_body(body: Captured, inputs: tuple[Any, ...]
                     ) -> tuple[torch.jit.ScriptModule, PartitionReport] | None:
        try:
            done = convert_partitioned(body, inputs, policy, nhwc=[None] * len(inputs),
                                       flexible=[()] * len(inputs), compile=compile,
                                       start=time.perf_counter())
        except ConversionError:
            return None  # nothing in it for NNAPI: the block stays as it is
        return done.module, done.report

    bodies = convert_bodies(captured, part, convert_body, capture_body)
    if not part.regions and not bodies:
        uses = [UnsupportedUse(c.node.kind, c.reason, c.node.location) for c in part.cpu]
        raise ConversionError(uses).with_hint(
            "hint: with fallback=True no part of the model is left for NNAPI"
            f" (min_region_size {policy.min_region_size})")
    programs = [nnapi_program(region.result, serialize_lowered(region.result), compile)
                for region in part.regions]
    report = describe_partition(part, captured, policy, flexible, bodies)
    module = build_partitioned_module(captured, part, programs, json.dumps(report.to_json()),
                                      bodies)
    return PartitionedConversion(module, part, report, time.perf_counter() - start, bodies)


def fallback_hint(captured: Captured, examples: tuple[torch.Tensor, ...],
                  policy: FallbackPolicy, *,
                  nhwc: Sequence[bool | None], flexible: Sequence[Sequence[int]],
                  relax: bool) -> str:
    """The last line of a ConversionError: what ``fallback=True`` would make of the model
    ("" when the fallback could not convert it either)."""
    try:
        part = partition(captured.without_mutation(), examples, policy=policy, nhwc=nhwc,
                         flexible=flexible, relax=relax)
    except Exception:  # noqa: BLE001 - a hint only; the error itself stands
        return ""
    if not part.regions:
        return ""
    count = len(part.regions)
    operations = sum(len(r.result.cx.model.operations) for r in part.regions)
    return (f"hint: convert(..., fallback=True) (torch-nnapi convert --fallback) would convert"
            f" the model into {counted(count, 'NNAPI region')} ({counted(operations, 'operation')})"
            f" with {counted(len(part.cpu), 'node')} on the CPU")


def output_quantum(conversion: PartitionedConversion, output: int) -> float:
    """The quantum of returned tensor ``output`` when a region returns it dequantized from
    a quantized tensor, else 0.0 (see :func:`~..pipeline.lowerer.dequantized_scale`)."""
    returned = returned_values(conversion.partition)
    if output >= len(returned):
        return 0.0
    for region in conversion.regions:
        if returned[output] in region.outputs:
            return dequantized_scale(region.result, region.outputs.index(returned[output]))
    return 0.0


__all__ = ["PartitionedConversion", "convert_partitioned", "fallback_hint", "kept_on_cpu",
           "output_quantum"]
