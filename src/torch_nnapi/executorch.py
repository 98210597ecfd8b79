"""NNAPI as an ExecuTorch backend: ``to_pte(model, x)`` lowers a model to a .pte whose NNAPI
regions run on NnapiBackend (the rest on ExecuTorch's kernels), ``load_backend()`` makes
ExecuTorch's runtime able to run it (on Linux on torch-nnapi's libneuralnetworks.so),
``NnapiPartitioner(**options)`` and ``NnapiBackend`` plug into ExecuTorch's own
``to_edge_transform_and_lower``, ``nnapi_compile_specs(**options)`` carries the options;
``quantize(model, x, calibration)`` is ``torch_nnapi.quantize`` with per-channel weights,
which only this back-end carries.

    import torch_nnapi.executorch as tnn_et
    pte = tnn_et.to_pte(model, (x,))
    tnn_et.load_backend()
    from executorch.runtime import Runtime
    method = Runtime.get().load_program(pte).load_method("forward")
    method.execute([x])

``load_backend`` needs no ExecuTorch import of its own (it builds the C++ backend once into
``~/.cache/torch_nnapi/``); the rest needs the ``executorch`` extra (README: "ExecuTorch").
"""

from __future__ import annotations

import importlib
from typing import Any

from .convert.executorch.native_build import BuildError, build_backend, load_backend

_EXPORTS = {"NnapiBackend": "backend", "NnapiPartitioner": "partitioner", "to_pte": "pte",
            "to_pte_with_details": "pte", "nnapi_compile_specs": "backend",
            "read_blob": "blob", "write_blob": "blob"}

__all__ = ["BuildError", "build_backend", "generate", "load_backend", "quantize",
           *sorted(_EXPORTS)]


def quantize(model: Any, example_inputs: object = None, calibration: Any = None, *,
             target_level: int = 3, per_channel: bool = True, **options: Any) -> Any:
    """``torch_nnapi.quantize`` with per-channel weights by default: ExecuTorch's blob carries
    them (TENSOR_QUANT8_SYMM_PER_CHANNEL), which PyTorch Mobile's format cannot. ``options``
    are ``torch_nnapi.quantize``'s (``flexible``, ``observer``)."""
    from .quantization.api import quantize as pt2e_quantize

    return pt2e_quantize(model, example_inputs, calibration, target_level=target_level,
                         per_channel=per_channel, **options)


def generate(program: Any, prompt_ids: Any, max_new_tokens: int, eos_id: int, *, keys: Any,
             values: Any) -> Any:
    """Greedy decoding with a decoder step lowered by ``to_pte`` (``program``: the .pte's
    bytes): the step takes ``(token [1], position [1], keys, values)`` and returns
    ``(logits, keys, values)``, ``keys``/``values`` the empty fixed-size caches; each token is
    one execution of the program. Returns the generated token ids (``eos_id`` included when
    reached)."""
    from .convert.tools.generation import generate_pte

    return generate_pte(program, prompt_ids, max_new_tokens, eos_id, keys=keys, values=values)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".convert.executorch.{module}", __package__), name)
