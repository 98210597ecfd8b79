"""``to_pte``: any model -> a .pte whose NNAPI regions run on NnapiBackend.

The model is exported (an ExportedProgram is taken as is; a PT2E GraphModule exported as
it is), lowered with ExecuTorch's ``to_edge_transform_and_lower`` and
:class:`~.partitioner.NnapiPartitioner` (what NNAPI does not run stays on ExecuTorch's
kernels, or goes to the partitioners given as ``then``), and serialized. The outputs'
structure travels in the .pte (``outputs.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
from executorch.exir.backend.partitioner import Partitioner

from ..capture.export import export_module, is_exported, unaliased
from ..capture.frontend import example_inputs_of
from ..errors import CaptureError
from .fx_regions import FxPartition
from .outputs import OUTPUTS_METHOD, Structure, to_json, with_flat_outputs
from .partitioner import NnapiPartitioner
from .size_copies import copy_sizes_per_reader, is_size


@dataclass
class PteConversion:
    """What :func:`to_pte_with_details` produced: the .pte, its regions and what stays on
    ExecuTorch's kernels (the edge program's partition), and the outputs' structure."""

    pte: bytes
    partition: FxPartition
    structure: Structure
    seconds: float


def to_pte(model: torch.nn.Module | torch.export.ExportedProgram,
           example_inputs: object = None, **options: Any) -> bytes:
    """The .pte of ``model``: NNAPI runs its regions, ExecuTorch's kernels the rest. The
    ``options`` are :class:`NnapiPartitioner`'s; ``then`` partitioners run after it (e.g.
    ``then=[XnnpackPartitioner()]``)."""
    return to_pte_with_details(model, example_inputs, **options).pte


def to_pte_with_details(model: torch.nn.Module | torch.export.ExportedProgram,
                        example_inputs: object = None, *,
                        then: Sequence[Partitioner] = (), **options: Any) -> PteConversion:
    """:func:`to_pte`, with the partition and the outputs' structure."""
    start = time.perf_counter()
    partitioner = NnapiPartitioner(**options)  # a bad option fails before the export
    examples = example_inputs_of(model, example_inputs)
    program, structure = with_flat_outputs(exported_program(model, examples))
    edge = to_edge_transform_and_lower(
        program, partitioner=[partitioner, *then],
        # (a static program has no sizes: its lowering is left as it was)
        transform_passes=[copy_sizes_per_reader] if any(
            is_size(n) for n in program.graph.nodes) else None,
        compile_config=EdgeCompileConfig(_check_ir_validity=False, _skip_dim_order=True),
        constant_methods={OUTPUTS_METHOD: to_json(structure)})
    pte: bytes = edge.to_executorch().buffer
    assert partitioner.found is not None, "to_edge_transform_and_lower partitions"
    return PteConversion(pte, partitioner.found, structure, time.perf_counter() - start)


def exported_program(model: object, examples: tuple[torch.Tensor, ...]
                     ) -> torch.export.ExportedProgram:
    """``model`` exported (non-strict, eval mode; a PT2E GraphModule as it is)."""
    if isinstance(model, torch.export.ExportedProgram):
        return model
    if is_exported(model) and isinstance(model, torch.fx.GraphModule):
        # a GraphModule from export or PT2E: no eval() of its own
        try:
            return torch.export.export(model, unaliased(examples), strict=False)
        except Exception as e:  # torch.export's own errors are long and varied: one line
            first = next((line for line in str(e).splitlines() if line.strip()),
                         type(e).__name__)
            raise CaptureError(f"torch.export could not capture the model: {first}") from e
    return export_module(model, examples)
