"""Compiles a finished Model into a plan of kernel calls and executes it on NumPy arrays.

Shapes are inferred once at compilation from what is known (declared dimensions and
constants) and again at execution from the actual inputs, so models with unknown dimensions
(dynamic output shapes) run. Any operand's value can be kept for inspection.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from ..nnapi.codes import OperandType, PreferenceCode
from ..nnapi.errors import BadDataError, BadStateError, NnapiError, OpFailedError
from ..nnapi.model import Lifetime, Model, Operation, element_count
from . import native
from .context import OMITTED, KernelContext, Shape, ValueNotKnown
from .registry import Kernel, NativeFn, kernel_for, native_kernel_for

RELAXED_PRECISIONS = ("float32", "float16")


def _fully_known(shape: Shape, is_scalar: bool) -> bool:
    return is_scalar or (len(shape) > 0 and all(d > 0 for d in shape))


def _conflicts(declared: Shape, actual: Shape) -> bool:
    """True when a declared shape (0 = unknown, () = unknown rank) contradicts an actual one."""
    if not declared:
        return False
    if len(declared) != len(actual):
        return True
    return any(d and d != a for d, a in zip(declared, actual))


def _prefixed(error: Exception, where: str) -> NnapiError:
    """Re-raises a kernel's error with the operation it happened in."""
    if isinstance(error, NnapiError):
        return type(error)(f"{where}: {error}", error.code)
    return OpFailedError(f"{where}: {type(error).__name__}: {error}")


@dataclass
class Step:
    position: int
    operation: Operation
    kernel: Kernel
    # Output shapes settled at compile time from input shapes and constants only, valid
    # whenever the actual input shapes equal ``input_shapes``.
    static_outputs: list[Shape] | None = None
    input_shapes: tuple[Shape, ...] = ()
    frees: tuple[int, ...] = ()
    # The native execute tried first (None: the reference execute only).
    native: NativeFn | None = None
    # Per-operation values kernels derive once (see runtime.ops._memo); owned by this step so
    # they live and die with the compilation.
    memo: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"operation {self.position} ({self.operation.type.name})"


@dataclass
class OperationTiming:
    position: int
    operation: str
    seconds: float


@dataclass
class ExecutionResult:
    outputs: list[np.ndarray]
    values: dict[int, np.ndarray] = field(default_factory=dict)
    timings: list[OperationTiming] = field(default_factory=list)

    def value(self, operand: int) -> np.ndarray:
        """An operand's value; intermediates are kept only with ``keep_intermediates``."""
        try:
            return self.values[operand]
        except KeyError:
            raise KeyError(f"operand {operand} was not kept; run with keep_intermediates=True")\
                from None


class Compilation:
    """A finished Model prepared for execution on the host."""

    def __init__(self, model: Model, *, preference: PreferenceCode | int =
                 PreferenceCode.FAST_SINGLE_ANSWER, relaxed_precision: str = "float32",
                 kernels: str | None = None):
        """``kernels``: ``"native"`` or ``"reference"`` (see runtime.native); None reads
        TORCH_NNAPI_KERNELS."""
        if not model.finished:
            raise BadStateError("a model must be finished before it is compiled")
        try:
            self.preference = PreferenceCode(preference)
        except ValueError:
            raise BadDataError(f"unknown compilation preference {preference}") from None
        if relaxed_precision not in RELAXED_PRECISIONS:
            raise BadDataError(f"relaxed_precision must be one of {RELAXED_PRECISIONS}")
        try:
            self.kernels = native.check_kernel_set(kernels) if kernels is not None \
                else native.default_kernel_set()
        except ValueError as e:
            raise BadDataError(str(e)) from None
        self.model = model
        self.emulate_float16 = model.relax_float32_to_float16 and relaxed_precision == "float16"
        self._constants: list[Any] = [
            o.value if o.lifetime is Lifetime.CONSTANT else None for o in model.operands
        ]
        self.steps = [self._step(i, op) for i, op in enumerate(model.operations)]
        self.shapes = self._infer_static_shapes()
        self._plan_frees()

    # ---------------------------------------------------------------- compile time

    def _step(self, position: int, operation: Operation) -> Step:
        kernel = kernel_for(operation.type)
        if kernel is None:
            raise BadDataError(f"operation {position} ({operation.type.name}): the host runtime"
                               " has no kernel for this operation type")
        use_native = native.uses_native(self.kernels)
        return Step(position, operation, kernel,
                    native=native_kernel_for(operation.type) if use_native else None)

    def _infer_static_shapes(self) -> list[Shape]:
        operands = self.model.operands
        shapes: list[Shape] = [
            tuple(o.value.shape) if o.value is not None else o.dimensions for o in operands
        ]
        for step in self.steps:
            op = step.operation
            present = [i for i in op.inputs if operands[i].lifetime is not Lifetime.NO_VALUE]
            if not all(_fully_known(shapes[i], operands[i].is_scalar) for i in present):
                continue
            ctx = KernelContext(op.type, step.position, operands, op.inputs, op.outputs,
                                self._constants, shapes, self.model.relax_float32_to_float16,
                                step.memo)
            try:
                outs = [tuple(int(d) for d in s) for s in step.kernel.prepare(ctx)]
            except ValueNotKnown:
                continue
            except Exception as e:  # noqa: BLE001 - every kernel error is reported, not raised raw
                raise _prefixed(e, step.where) from e
            self._check_outputs(step, outs, BadDataError)
            for o, shape in zip(op.outputs, outs):
                shapes[o] = shape
            step.static_outputs = outs
            step.input_shapes = tuple(shapes[i] for i in op.inputs)
        return shapes

    def _check_outputs(self, step: Step, shapes: Sequence[Shape], error: type) -> None:
        outputs = step.operation.outputs
        if len(shapes) != len(outputs):
            raise OpFailedError(f"{step.where}: kernel produced {len(shapes)} outputs,"
                                f" the operation has {len(outputs)}")
        for pos, (o, shape) in enumerate(zip(outputs, shapes)):
            declared = self.model.operands[o].dimensions
            if _conflicts(declared, shape):
                raise error(f"{step.where}: output {pos} ({self.model.describe_operand(o)}) is"
                            f" declared {list(declared)} but the inputs give {list(shape)}")

    def _plan_frees(self) -> None:
        """Drops each temporary after its last reader, so big models run in little memory."""
        last_use: dict[int, int] = {}
        for step in self.steps:
            for i in step.operation.inputs:
                last_use[i] = step.position
            for o in step.operation.outputs:
                last_use.setdefault(o, step.position)
        by_step: dict[int, list[int]] = {}
        for operand, position in last_use.items():
            if self.model.operands[operand].lifetime is Lifetime.TEMPORARY:
                by_step.setdefault(position, []).append(operand)
        for step in self.steps:
            step.frees = tuple(by_step.get(step.position, ()))

    # ---------------------------------------------------------------- execution

    def create_execution(self) -> "Execution":
        return Execution(self)

    def run(self, inputs: Sequence[Any], *, keep_intermediates: bool = False,
            profile: bool = False) -> ExecutionResult:
        """Executes once: ``inputs`` in model-input order (None for an omitted input)."""
        if len(inputs) != len(self.model.inputs):
            raise BadDataError(f"the model has {len(self.model.inputs)} inputs, got"
                               f" {len(inputs)}")
        execution = Execution(self)
        for i, value in enumerate(inputs):
            execution.set_input(i, value)
        return execution.compute(keep_intermediates=keep_intermediates, profile=profile)

    def _execute(self, inputs: Sequence[Any], keep_intermediates: bool,
                 profile: bool) -> ExecutionResult:
        if not native.uses_native(self.kernels):
            return self._run_steps(inputs, keep_intermediates, profile)
        with native.execution_scope():
            return self._run_steps(inputs, keep_intermediates, profile)

    def _run_steps(self, inputs: Sequence[Any], keep_intermediates: bool,
                   profile: bool) -> ExecutionResult:
        operands = self.model.operands
        values = list(self._constants)
        for index, value in zip(self.model.inputs, inputs):
            values[index] = value
        timings: list[OperationTiming] = []
        for step in self.steps:
            op = step.operation
            ctx = KernelContext(op.type, step.position, operands, op.inputs, op.outputs, values,
                                None, self.model.relax_float32_to_float16, step.memo)
            start = time.perf_counter() if profile else 0.0
            try:
                if step.static_outputs is not None and all(
                        values[i] is OMITTED or values[i] is None or values[i].shape == s
                        for i, s in zip(op.inputs, step.input_shapes)):
                    shapes = step.static_outputs
                else:
                    shapes = [tuple(int(d) for d in s) for s in step.kernel.prepare(ctx)]
                    self._check_outputs(step, shapes, OpFailedError)
                results = step.native(ctx) if step.native is not None else None
                if results is None:
                    results = step.kernel.execute(ctx)
            except NnapiError as e:
                raise _prefixed(e, step.where) from e
            except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
                raise _prefixed(e, step.where) from e
            if isinstance(results, (np.ndarray, np.generic)):  # NumPy makes 0-d results scalars
                results = (np.asarray(results),)
            if len(results) != len(op.outputs):
                raise OpFailedError(f"{step.where}: kernel returned {len(results)} outputs,"
                                    f" expected {len(op.outputs)}")
            for pos, (o, array, shape) in enumerate(zip(op.outputs, results, shapes)):
                operand = operands[o]
                if array.dtype != operand.info.dtype or array.shape != shape:
                    raise OpFailedError(
                        f"{step.where}: output {pos} came out as {array.dtype}{list(array.shape)},"
                        f" expected {operand.info.dtype}{list(shape)} (a kernel bug)")
                if self.emulate_float16 and operand.type == OperandType.TENSOR_FLOAT32:
                    array = array.astype(np.float16).astype(np.float32)
                values[o] = array
            if profile:
                timings.append(OperationTiming(step.position, op.type.name,
                                               time.perf_counter() - start))
            if not keep_intermediates:
                for dead in step.frees:
                    values[dead] = None
        outputs = [values[o] for o in self.model.outputs]
        kept: dict[int, np.ndarray] = {}
        if keep_intermediates:
            kept = {i: v for i, v in enumerate(values)
                    if v is not None and v is not OMITTED}
        else:
            kept = dict(zip(self.model.outputs, outputs))
        return ExecutionResult(outputs, kept, timings)


class Execution:
    """One run of a Compilation: set the inputs, then compute (once), as NNAPI executions do."""

    def __init__(self, compilation: Compilation):
        self.compilation = compilation
        self._inputs: list[Any] = [None] * len(compilation.model.inputs)
        self._set = [False] * len(compilation.model.inputs)
        self.result: ExecutionResult | None = None

    def set_input(self, index: int, value: Any, dimensions: Sequence[int] | None = None) -> None:
        """Sets model input ``index``: an array, a bytes-like buffer, or None (omitted).

        ``dimensions`` completes a declared shape with unknown dimensions; it must agree with
        every dimension the model specifies.
        """
        if self.result is not None:
            raise BadStateError("the execution has already run")
        model = self.compilation.model
        if not 0 <= index < len(model.inputs):
            raise BadDataError(f"input index {index} is out of range (the model has"
                               f" {len(model.inputs)} inputs)")
        operand = model.operands[model.inputs[index]]
        where = f"model input {index} ({model.describe_operand(model.inputs[index])})"
        self._set[index] = True
        if value is None:
            self._inputs[index] = OMITTED
            return
        self._inputs[index] = _as_input_array(value, operand, dimensions, where)

    def compute(self, *, keep_intermediates: bool = False, profile: bool = False) \
            -> ExecutionResult:
        if self.result is not None:
            raise BadStateError("an execution computes only once; create a new one")
        unset = [i for i, s in enumerate(self._set) if not s]
        if unset:
            raise BadDataError(f"model inputs {unset} were not set")
        self.result = self.compilation._execute(self._inputs, keep_intermediates, profile)
        return self.result


def _as_input_array(value: Any, operand, dimensions: Iterable[int] | None, where: str):
    info = operand.info
    if isinstance(value, (bytes, bytearray, memoryview)):
        dims = tuple(dimensions) if dimensions is not None else operand.dimensions
        shape = () if info.is_scalar else dims
        if not _fully_known(shape, info.is_scalar):
            raise BadDataError(f"{where}: dimensions {list(shape)} must be fully specified")
        nbytes = memoryview(value).nbytes
        if nbytes != element_count(shape) * info.element_size:
            raise BadDataError(f"{where}: buffer has {nbytes} bytes, dimensions {list(shape)}"
                               f" need {element_count(shape) * info.element_size}")
        array = np.frombuffer(value, dtype=info.dtype).reshape(shape)
    else:
        array = np.asarray(value)
        if array.dtype != info.dtype:
            if not (np.can_cast(array.dtype, info.dtype, "same_kind")
                    or (array.dtype.kind in "iub" and info.dtype.kind in "iu"
                        and _fits(array, info.dtype))):
                raise BadDataError(f"{where}: got a {array.dtype} array, expected {info.dtype}")
            if info.dtype.kind in "iu" and not _fits(array, info.dtype):
                raise BadDataError(f"{where}: values do not fit {info.dtype}")
            array = array.astype(info.dtype)
        if dimensions is not None and tuple(dimensions) != array.shape:
            raise BadDataError(f"{where}: dimensions {list(dimensions)} do not match the"
                               f" array's shape {list(array.shape)}")
    if info.is_scalar:
        if array.size != 1:
            raise BadDataError(f"{where}: a scalar needs one value, got {array.size}")
        return array.reshape(())
    if _conflicts(operand.dimensions, array.shape):
        raise BadDataError(f"{where}: shape {list(array.shape)} does not match the declared"
                           f" {list(operand.dimensions)}")
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array


def _fits(array: np.ndarray, dtype: np.dtype) -> bool:
    limits = np.iinfo(dtype)
    return array.size == 0 or (array.min() >= limits.min and array.max() <= limits.max)
