"""ExecuTorch's side of the NNAPI backend: ``NnapiBackend.preprocess``, a whole-graph
partitioner and ``to_pte``.

``preprocess`` gets one tagged subgraph as an ExportedProgram and returns the blob
(``lower.py``), putting the large constants in ExecuTorch's named data store, which the
runtime reads back through the ``NamedDataMap`` of its init context. The class name is the
backend id in the .pte: the C++ runtime registers under the same name ("NnapiBackend").
``NnapiPartitioner`` tags the whole graph when every node lowers (the maximal-region
partitioner with CPU fallback builds on the same preprocess); ``to_pte`` exports, lowers
and serializes a model that NNAPI runs whole.
"""

from __future__ import annotations

from typing import Any, final

import torch
from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
from executorch.exir._serialize._named_data_store import NamedDataStore
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec
from executorch.exir.backend.partitioner import (
    DelegationSpec,
    Partitioner,
    PartitionResult,
)

from ..capture.export import is_exported
from ..capture.frontend import example_inputs_of
from .blob import DATA_ALIGNMENT, write_blob
from .lower import lower_program
from .specs import EtOptions, spec_pairs

BACKEND_ID = "NnapiBackend"
_TAG = "nnapi_0"


def nnapi_compile_specs(**options: Any) -> list[CompileSpec]:
    """The compile specs of the options ``EtOptions.of`` takes (checked here, so a bad
    option fails before export): ``compilation_preference``, ``priority``, the timeouts,
    ``relax_fp32_to_fp16``, ``caching``, ``burst``, ``cache_dir``, ``devices``, ``nhwc``,
    ``target_level``, ``named_threshold``."""
    return [CompileSpec(key, value) for key, value in spec_pairs(**options)]


@final
class NnapiBackend(BackendDetails):  # type: ignore[misc]  # ExecuTorch ships no types
    """Lowers a delegated subgraph to the NNAPI blob the C++ ``NnapiBackend`` runs."""

    @staticmethod
    def preprocess(edge_program: torch.export.ExportedProgram,
                   compile_specs: list[CompileSpec]) -> PreprocessResult:
        options = EtOptions.of_specs(compile_specs)
        blob = lower_program(edge_program, options)
        store = NamedDataStore()
        for key, value in blob.named_data.items():
            store.add_named_data(key, value, alignment=DATA_ALIGNMENT)
        return PreprocessResult(processed_bytes=write_blob(blob),
                                data_store_output=store.get_named_data_store_output())


class NnapiPartitioner(Partitioner):  # type: ignore[misc]  # ExecuTorch ships no types
    """Tags every computing node of the program for NNAPI: for a model NNAPI runs whole (a
    node that does not lower makes preprocess fail, naming it)."""

    def __init__(self, compile_specs: list[CompileSpec] | None = None) -> None:
        super().__init__()
        self.delegation_spec = DelegationSpec(BACKEND_ID, list(compile_specs or []))

    def partition(self, exported_program: torch.export.ExportedProgram) -> PartitionResult:
        for node in exported_program.graph_module.graph.nodes:
            if node.op == "call_function":
                node.meta["delegation_tag"] = _TAG
            elif node.op == "placeholder" and node.name not in \
                    exported_program.graph_signature.user_inputs:
                node.meta["delegation_tag"] = _TAG  # parameters and buffers go along
        return PartitionResult(tagged_exported_program=exported_program,
                               partition_tags={_TAG: self.delegation_spec})


def to_pte(model: torch.nn.Module | torch.export.ExportedProgram,
           example_inputs: tuple[torch.Tensor, ...] | None = None,
           **options: Any) -> bytes:
    """The .pte of ``model`` with NNAPI running all of it: ``torch.export`` (an
    ExportedProgram as is), ``to_edge_transform_and_lower`` with :class:`NnapiPartitioner`,
    ``to_executorch``. ``options`` are :func:`nnapi_compile_specs`'s."""
    specs = nnapi_compile_specs(**options)
    examples = example_inputs_of(model, example_inputs)
    if isinstance(model, torch.export.ExportedProgram):
        program = model
    else:  # a GraphModule from export or PT2E has no eval() of its own
        exported = is_exported(model)  # a TypeGuard, kept from narrowing ``model`` here
        module = model if exported else model.eval()
        program = torch.export.export(module, examples, strict=False)
    edge = to_edge_transform_and_lower(
        program, partitioner=[NnapiPartitioner(specs)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False, _skip_dim_order=True))
    _require_whole(edge.exported_program().graph_module)
    buffer: bytes = edge.to_executorch().buffer
    return buffer


def _require_whole(module: torch.fx.GraphModule) -> None:
    """Every computation delegated (the program's own nodes only pick the delegate's
    outputs)."""
    left = [n for n in module.graph.nodes if n.op == "call_function"
            and n.target is not torch.ops.higher_order.executorch_call_delegate
            and getattr(n.target, "__name__", "") != "getitem"]
    if left:
        names = ", ".join(str(n.target) for n in left[:5])
        raise RuntimeError(f"NNAPI did not take the whole model: {names} stayed on the CPU")

