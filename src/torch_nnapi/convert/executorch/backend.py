"""ExecuTorch's side of the NNAPI backend: ``NnapiBackend.preprocess`` and its compile specs.

``preprocess`` gets one tagged subgraph (``partitioner.py`` tags them) as an ExportedProgram
and returns the blob (``lower.py``), putting the large constants in ExecuTorch's named data
store, which the runtime reads back through the ``NamedDataMap`` of its init context. The
class name is the backend id in the .pte: the C++ runtime registers under the same name
("NnapiBackend").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, final

import torch
from executorch.exir._serialize._named_data_store import NamedDataStore
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.compile_spec_schema import CompileSpec

from .blob import DATA_ALIGNMENT, write_blob
from .lower import lower_program
from .specs import EtOptions, spec_pairs

BACKEND_ID = "NnapiBackend"


def nnapi_compile_specs(**options: Any) -> list[CompileSpec]:
    """The compile specs of the options ``EtOptions.of`` takes (checked here, so a bad
    option fails before export): ``compilation_preference``, ``priority``, the timeouts,
    ``relax_fp32_to_fp16``, ``caching``, ``burst``, ``cache_dir``, ``devices``, ``nhwc``,
    ``target_level``, ``named_threshold``."""
    return compile_specs(spec_pairs(**options))


def compile_specs(pairs: Iterable[tuple[str, bytes]]) -> list[CompileSpec]:
    """ExecuTorch's CompileSpecs of checked ``(key, value)`` pairs (``spec_pairs``)."""
    return [CompileSpec(key, value) for key, value in pairs]


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
