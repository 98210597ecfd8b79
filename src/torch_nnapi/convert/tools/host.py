"""Run a converted module's NNAPI model on torch-nnapi's host runtime (NumPy), without
libneuralnetworks.so: the same serialized model, patched for the input shapes by the
module's own TorchScript code, deserialized into our Model and executed by
``torch_nnapi.runtime.Compilation``. Used by ``torch-nnapi run --host`` and the tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ...nnapi.codes import OperandType
from ...nnapi.model import Model
from ...runtime import Compilation, OperationTiming
from ..outputs import STRUCTURE_METHOD
from ..torchscript.deserialize import deserialize


def program_of(module: object) -> torch.jit.ScriptModule:
    """The NnapiProgram inside a converted module (fresh or loaded from a file)."""
    prog: torch.jit.ScriptModule | None = getattr(module, "nnapi", None)
    if prog is None or not hasattr(prog, "ser_model"):
        raise ValueError("this module was not produced by torch_nnapi.convert (it has no"
                         " 'nnapi' program)")
    return prog


def model_for(module: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor]) -> Model:
    """The finished NNAPI model the module (or one NnapiProgram) would compile for these
    inputs."""
    prog = module if hasattr(module, "ser_model") else program_of(module)
    shapes = prog.check_inputs(list(inputs))
    words = prog.patched_model(shapes).numpy()
    weights = [w.contiguous().numpy() for w in prog.weights]
    return deserialize(words, weights).model


def host_inputs(prog: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor]) \
        -> list[np.ndarray]:
    """The arrays the NNAPI model of one NnapiProgram takes for the module's ``inputs``
    (permuted and quantized as the program hands them to NNAPI)."""
    return [_to_numpy(x) for x in prog.prepare_inputs(list(inputs))]


def run_on_host(module: torch.jit.ScriptModule, *inputs: torch.Tensor,
                relaxed_precision: str = "float32", profile: bool = False) -> Any:
    """Runs the converted module on the host runtime; returns what ``module(*inputs)``
    returns (a tensor, a tuple or a list: Any, as for calling the module), and with
    ``profile`` a pair of it and the per-operation timings. In a
    partitioned module (``fallback=True``) each region runs on the host runtime and the
    CPU nodes in TorchScript, the loops and branches holding regions too (each execution
    of a region inside them on the host runtime; the timings of every execution)."""
    from ..fallback.run import (
        has_bodies,
        inlined_program,
        is_partitioned,
        run_apart,
        run_inlined,
    )

    given = list(inputs)
    if is_partitioned(module):
        timings: list[OperationTiming] = []

        def run_region(prog: torch.jit.ScriptModule, tensors: list[torch.Tensor]
                       ) -> list[torch.Tensor]:
            outs, region_timings = run_program_on_host(prog, tensors, relaxed_precision,
                                                       profile)
            timings.extend(region_timings or [])
            return outs

        if has_bodies(module):  # regions inside loops and branches: each execution
            returned = run_inlined(inlined_program(module), given,
                                   lambda region, tensors: run_region(region.program, tensors))
        else:
            returned = run_apart(module, given, run_region).outputs
        return (returned, timings) if profile else returned
    outs, program_timings = run_program_on_host(program_of(module), given,
                                                relaxed_precision, profile)
    shaped = _shape_like_forward(module, outs)
    return (shaped, program_timings) if profile else shaped


def run_program_on_host(prog: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor],
                        relaxed_precision: str = "float32", profile: bool = False
                        ) -> tuple[list[torch.Tensor], list[OperationTiming] | None]:
    """(outputs as the program returns them, per-operation timings or None): one
    NnapiProgram run on the host runtime."""
    inputs = list(inputs)
    shapes = prog.check_inputs(inputs)
    words = prog.patched_model(shapes).numpy()
    weights = [w.contiguous().numpy() for w in prog.weights]
    model = deserialize(words, weights).model
    compilation = Compilation(model, preference=int(prog.compilation_preference),
                              relaxed_precision=relaxed_precision)
    ready = host_inputs(prog, inputs)
    result = compilation.run(ready, profile=profile)
    raw = [_to_torch(a, model.operands[o].type, model.operands[o].scale,
                     model.operands[o].zero_point)
           for a, o in zip(result.outputs, model.outputs, strict=False)]
    dims = prog.output_dimensions(shapes)  # outputs merging dimensions are split with them
    return list(prog.finish_outputs(raw, dims)), (result.timings if profile else None)


def _to_numpy(x: torch.Tensor) -> np.ndarray:
    if x.is_quantized:
        return x.int_repr().numpy()
    return x.numpy()


def _to_torch(a: np.ndarray, op_type: OperandType, scale: float, zero_point: int
              ) -> torch.Tensor:
    if op_type in (OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED):
        return torch._make_per_tensor_quantized_tensor(torch.from_numpy(a.copy()), scale,
                                                       zero_point)
    if op_type == OperandType.TENSOR_BOOL8:
        return torch.from_numpy(a.astype(np.bool_))
    return torch.from_numpy(np.array(a, copy=True))


def _shape_like_forward(module: torch.jit.ScriptModule, outs: list[torch.Tensor]) -> Any:
    """The outputs nested as the module's forward returns them (its ``structure_outputs``;
    a module converted before it had one returns a tensor, a tuple or a list)."""
    if hasattr(module, STRUCTURE_METHOD):
        return getattr(module, STRUCTURE_METHOD)(outs)
    schema = str(module.forward.schema) if hasattr(module.forward, "schema") else ""
    ret = schema.rsplit("->", 1)[-1].strip()
    if ret.startswith("Tensor[]") or ret.startswith("List"):
        return outs
    if ret.startswith("("):
        return tuple(outs)
    return outs[0]
