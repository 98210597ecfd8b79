"""A .pte file for the tools: what it holds, and running it as the model ran.

:func:`read_pte` reads the program without running it: the forward method's inputs and
outputs, the steps it runs in order (each NNAPI delegate with its blob and the NNAPI model
rebuilt from it, each operator left to ExecuTorch's kernels), and the outputs' structure
``to_pte`` recorded. :class:`PteModule` runs it through ``executorch.runtime`` with
NnapiBackend (on Linux on torch-nnapi's libneuralnetworks.so) and nests the outputs as the
model returned them. What goes wrong is one line: a file that is no .pte, a blob that does
not read, inputs the program does not take, an ExecuTorch error by name with the backend's
own message.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from executorch.exir._serialize._program import deserialize_pte_binary

from ...nnapi.errors import counted
from ...nnapi.model import Model
from .backend import BACKEND_ID
from .blob import Blob, BlobError, Conversion, read_blob
from .encode import model_from_blob
from .native_build import load_backend
from .outputs import OUTPUTS_METHOD, Structure, read_structure, rebuild

METHOD = "forward"

# ExecuTorch's Error codes (runtime/core/error.h), as its Python runtime reports them.
ERRORS = {0x01: "Internal", 0x02: "InvalidState", 0x04: "AlreadyLoaded",
          0x10: "NotSupported", 0x11: "NotImplemented", 0x12: "InvalidArgument",
          0x13: "InvalidType", 0x14: "OperatorMissing", 0x20: "NotFound",
          0x21: "MemoryAllocationFailed", 0x22: "AccessFailed", 0x23: "InvalidProgram",
          0x24: "InvalidExternalData", 0x25: "OutOfResources",
          0x30: "DelegateInvalidCompatibility", 0x31: "DelegateMemoryAllocationFailed",
          0x32: "DelegateInvalidHandle"}
_DTYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16",
           6: "float32", 7: "float64", 11: "bool"}


class PteError(ValueError):
    """A .pte that cannot be read or run, in one line."""


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]  # a bounded tensor's largest
    dtype: str  # torch's name: "float32", "int64"...
    bounded: bool = False  # dynamic sizes up to ``shape`` (torch.export.Dim with a max)


@dataclass
class Delegate:
    """One delegated region: NNAPI's blob and model, or another backend's bytes."""

    index: int
    backend: str
    size: int  # bytes of its processed data
    blob: Blob | None = None  # NnapiBackend's
    model: Model | None = None  # the blob's main NNAPI model, rebuilt


@dataclass
class PteInfo:
    size: int
    methods: list[str]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    delegates: list[Delegate]
    steps: list[int | str]  # in running order: a delegate's index, or an operator's name
    structure: Structure | None  # the outputs' nesting (None: flat, not made by to_pte)
    quanta: list[float] = field(default_factory=list)  # per output: the scale of the
    # quantized NNAPI tensor it is dequantized from, 0.0 when it is not

    @property
    def kernels(self) -> list[str]:
        return [s for s in self.steps if isinstance(s, str)]


def read_pte(data: bytes) -> PteInfo:
    """What the .pte holds (see the module docstring); PteError when it does not read."""
    try:
        pte = deserialize_pte_binary(data)
    except Exception as e:  # noqa: BLE001 - the flatbuffer reader raises many kinds
        raise PteError(f"not a readable ExecuTorch program ({_first_line(e)})") from None
    program = pte.program
    plans = {plan.name: plan for plan in program.execution_plan}
    if METHOD not in plans:
        raise PteError(f"the program has no {METHOD} method (it has {', '.join(plans)})")
    plan = plans[METHOD]
    named = _named_data(pte)
    delegates = [_delegate(i, d, program.backend_delegate_data, named)
                 for i, d in enumerate(plan.delegates)]
    steps: list[int | str] = []
    for chain in plan.chains:
        for instruction in chain.instructions:
            args = instruction.instr_args
            if type(args).__name__ == "DelegateCall":
                steps.append(int(args.delegate_index))
            elif type(args).__name__ == "KernelCall":
                op = plan.operators[args.op_index]
                steps.append(f"{op.name}.{op.overload}" if op.overload else op.name)
    info = PteInfo(len(data), sorted(plans), [_spec(plan.values[i]) for i in plan.inputs],
                   [_spec(plan.values[i]) for i in plan.outputs], delegates, steps,
                   _structure(plans.get(OUTPUTS_METHOD)))
    info.quanta = _output_quanta(plan, delegates)
    return info


def _named_data(pte: Any) -> dict[str, bytes]:
    store = pte.named_data
    if store is None:
        return {}
    return {key: bytes(store.buffers[entry.buffer_index])
            for key, entry in store.pte_data.items()}


def _delegate(index: int, delegate: Any, data: Sequence[Any], named: dict[str, bytes]
              ) -> Delegate:
    raw = bytes(data[delegate.processed.index].data)
    found = Delegate(index, delegate.id, len(raw))
    if delegate.id == BACKEND_ID:
        try:
            found.blob = read_blob(raw)
            found.model = model_from_blob(found.blob, named)
        except (BlobError, KeyError, ValueError) as e:
            raise PteError(f"delegate {index}: its NNAPI blob does not read: {e}") from None
    return found


def _spec(value: Any) -> TensorSpec:
    tensor = value.val
    if type(tensor).__name__ != "Tensor":
        raise PteError(f"the {METHOD} method takes or returns a {type(tensor).__name__}, not"
                       " a tensor")
    dtype = _DTYPES.get(int(tensor.scalar_type), f"dtype {int(tensor.scalar_type)}")
    bounded = int(getattr(tensor, "shape_dynamism", 0)) == 1  # DYNAMIC_BOUND
    return TensorSpec(tuple(int(d) for d in tensor.sizes), dtype, bounded)


def _structure(plan: Any) -> Structure | None:
    """The structure the constant method holds (a plan returning one string)."""
    if plan is None:
        return None
    for value in plan.values:
        text = getattr(value.val, "string_val", None)
        if isinstance(text, str):
            try:
                return read_structure(text)
            except ValueError as e:
                raise PteError(f"{OUTPUTS_METHOD}: {e}") from None
    return None


def _output_quanta(plan: Any, delegates: list[Delegate]) -> list[float]:
    """Per output, the quantum of the quantized NNAPI tensor a delegate dequantizes it
    from (the output of a delegate call whose blob converts it with QUANTIZE)."""
    scale_of: dict[int, float] = {}
    for chain in plan.chains:
        for instruction in chain.instructions:
            args = instruction.instr_args
            if type(args).__name__ != "DelegateCall":
                continue
            blob = delegates[args.delegate_index].blob
            if blob is None:
                continue
            results = list(args.args)[len(blob.inputs):]
            main = blob.models[0]
            for value, t in zip(results, blob.outputs, strict=False):
                if t.conversion == Conversion.QUANTIZE:
                    scale_of[value] = main.operands[main.outputs[t.nnapi_index]].quant.scale
    return [scale_of.get(i, 0.0) for i in plan.outputs]


class PteModule:
    """A .pte, called like the model (see the module docstring)."""

    def __init__(self, data: bytes) -> None:
        self.info = read_pte(data)
        load_backend()
        # ExecuTorch's program reads the bytes in place and its method uses the program:
        # both live as long as the module (freed, the next run reads freed memory)
        self.data = data
        with executorch_errors("load"):
            from executorch.runtime import Runtime

            self.program = Runtime.get().load_program(data)
            self.method = self.program.load_method(METHOD)

    def check_inputs(self, inputs: Sequence[torch.Tensor]) -> None:
        """PteError naming the first input the program does not take."""
        taken = self.info.inputs
        if len(inputs) != len(taken):
            raise PteError(f"the program takes {counted(len(taken), 'input')}, got {len(inputs)}")
        for i, (x, spec) in enumerate(zip(inputs, taken, strict=True)):
            dtype = str(x.dtype).replace("torch.", "")
            fits = x.dim() == len(spec.shape) and all(
                n <= m if spec.bounded else n == m for n, m in zip(x.shape, spec.shape,
                                                                   strict=False))
            if not fits or dtype != spec.dtype:
                raise PteError(f"input {i} is {dtype} {list(x.shape)}, the program takes"
                               f" {spec.dtype} {list(spec.shape)}"
                               + (" at most" if spec.bounded else ""))

    def __call__(self, *inputs: torch.Tensor) -> Any:
        self.check_inputs(inputs)
        with executorch_errors("run"):
            flat = list(self.method.execute([x.contiguous() for x in inputs]))
        if self.info.structure is None:
            return flat[0] if len(flat) == 1 else tuple(flat)
        return rebuild(self.info.structure, flat)


_CODE = re.compile(r"0x:?([0-9a-fA-F]+)")


@contextmanager
def executorch_errors(doing: str) -> Iterator[None]:
    """ExecuTorch's runtime logs on the process's stderr and raises a RuntimeError with an
    error code: its log is kept aside, and a failure becomes one PteError with the error's
    name and NnapiBackend's last message (what it logged on the way to failing)."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            yield
        except RuntimeError as e:
            failure: RuntimeError | None = e
        else:
            failure = None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if failure is None:
            return
        log.seek(0)
        ours = [line.split("NnapiBackend: ", 1)[1].strip() for line in
                log.read().decode(errors="replace").splitlines() if "NnapiBackend: " in line]
    code = _CODE.search(str(failure))
    name = ERRORS.get(int(code.group(1), 16), "an error") if code else "an error"
    why = f": NnapiBackend: {ours[-1]}" if ours else ""
    raise PteError(f"ExecuTorch could not {doing} the program ({name}){why}") from None


def _first_line(e: BaseException) -> str:
    lines = [line for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
