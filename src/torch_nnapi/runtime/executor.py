"""Compiles a finished Model into a plan of kernel calls and executes it on NumPy arrays.

Shapes are inferred once at compilation from what is known (declared dimensions and
constants) and again at execution from the actual inputs, so models with unknown dimensions
(dynamic output shapes) run. Any operand's value can be kept for inspection.

Steps with a native kernel keep the runner it planned for their input shapes: while those
shapes stay the same, an execution calls the runners directly -- no context, no shape
inference, no output checks (made when the runner was planned) -- so that a model of many
small operations is dominated by its arithmetic, not by the Python between kernels. Once an
execution of the compile-time shapes has planned every runner, later ones replay them from
one flat list (``_replay``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..nnapi.codes import MAXIMUM_LOOP_TIMEOUT_NS, OperandType, PreferenceCode
from ..nnapi.errors import (
    BadDataError,
    BadStateError,
    NnapiError,
    OpFailedError,
)
from ..nnapi.model import Lifetime, Model, Operand, Operation, element_count
from ..nnapi.signatures import MatchFailure, SignatureMatch, match_signature, signature_of
from . import native
from .context import OMITTED, Binding, KernelContext, Shape, ValueNotKnown
from .limits import check_tensor_sizes
from .registry import fusion_for, kernel_for, native_kernel_for
from .steps import Replayed, Step, conflicts, fully_known, has_shape, prefixed
from .timeouts import NO_LIMITS, RunLimits

RELAXED_PRECISIONS = ("float32", "float16")


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
    """A finished Model prepared for execution on the host, with the models its IF and WHILE
    operations call compiled too.

    ``kernels``: ``"native"`` or ``"reference"`` (see runtime.native); None reads
    TORCH_NNAPI_KERNELS. ``relax`` overrides the model's relaxComputationFloat32toFloat16 (a
    called model computes as its caller says); ``called`` shares the compilations of called
    models between a model and those it calls, so that a model called from several places
    compiles once.
    """

    def __init__(self, model: Model, *, preference: PreferenceCode | int =
                 PreferenceCode.FAST_SINGLE_ANSWER, relaxed_precision: str = "float32",
                 kernels: str | None = None, relax: bool | None = None,
                 called: dict[int, Compilation] | None = None):
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
        self.relax = model.relax_float32_to_float16 if relax is None else relax
        self.emulate_float16 = self.relax and relaxed_precision == "float16"
        called = {} if called is None else called
        for inner in model.referenced_models():  # each after the models it calls
            if id(inner) not in called:
                called[id(inner)] = Compilation(inner, preference=self.preference,
                                                relaxed_precision=relaxed_precision,
                                                kernels=self.kernels, relax=self.relax,
                                                called=called)
        # Constant values, and for MODEL operands the compilation of the model they name.
        self._constants: list[Any] = [
            o.value if o.lifetime is Lifetime.CONSTANT
            else called[id(o.model)] if o.lifetime is Lifetime.REFERENCED_MODEL else None
            for o in model.operands
        ]
        pairs = zip(model.operations, model.matches, strict=True)
        self.steps = [self._step(i, op, match) for i, (op, match) in enumerate(pairs)]
        self.shapes = self._infer_static_shapes()
        if native.uses_native(self.kernels):
            self._find_fusions()
        self._plan_frees()
        # When every shape is settled at compile time, inputs of those shapes make every
        # step's input shapes the compile-time ones: runners are then used without checking.
        self._static_inputs: tuple[Shape, ...] | None = None
        if all(step.static_outputs is not None for step in self.steps):
            self._static_inputs = tuple(self.shapes[i] for i in model.inputs)
        # The steps' planned runners in one list, once an execution of those shapes has
        # planned them all (see _replay).
        self._replayed: list[Replayed] | None = None

    # ---------------------------------------------------------------- compile time

    def _step(self, position: int, operation: Operation, match: SignatureMatch) -> Step:
        kernel = kernel_for(operation.type)
        if kernel is None:
            raise BadDataError(f"operation {position} ({operation.type.name}): the host runtime"
                               " has no kernel for this operation type")
        operands = self.model.operands
        planner = native_kernel_for(operation.type) if native.uses_native(self.kernels) else None
        variable = tuple(i for i in operation.inputs
                         if operands[i].lifetime is not Lifetime.CONSTANT)
        rounded = tuple(self.emulate_float16 and operands[o].type == OperandType.TENSOR_FLOAT32
                        for o in operation.outputs)
        single = operation.outputs[0] if len(operation.outputs) == 1 and not rounded[0] else -1
        return Step(position, operation, kernel, Binding(operands, operation, match),
                    planner=planner, variable=variable, rounded=rounded,
                    inputs=tuple(operation.inputs), single_output=single)

    def _infer_static_shapes(self) -> list[Shape]:
        operands = self.model.operands
        shapes: list[Shape] = [
            tuple(o.value.shape) if o.value is not None else o.dimensions for o in operands
        ]
        for step in self.steps:
            op = step.operation
            present = [i for i in op.inputs if operands[i].lifetime is not Lifetime.NO_VALUE]
            if not all(fully_known(shapes[i], operands[i].is_scalar) for i in present):
                continue
            ctx = KernelContext(step.binding, self._constants, shapes, step.memo)
            try:
                outs = [tuple(int(d) for d in s) for s in step.kernel.prepare(ctx)]
            except ValueNotKnown:
                continue
            except Exception as e:  # noqa: BLE001 - every kernel error is reported, not raised raw
                raise prefixed(e, step.where) from e
            self._check_outputs(step, outs, BadDataError)
            for o, shape in zip(op.outputs, outs, strict=True):
                shapes[o] = shape
            step.static_outputs = outs
            step.input_shapes = tuple(shapes[i] for i in op.inputs)
        return shapes

    def _check_outputs(self, step: Step, shapes: Sequence[Shape], error: type) -> None:
        outputs = step.operation.outputs
        if len(shapes) != len(outputs):
            raise OpFailedError(f"{step.where}: kernel produced {len(shapes)} outputs,"
                                f" the operation has {len(outputs)}")
        for pos, (o, shape) in enumerate(zip(outputs, shapes, strict=True)):
            declared = self.model.operands[o].dimensions
            if conflicts(declared, shape):
                raise error(f"{step.where}: output {pos} ({self.model.describe_operand(o)}) is"
                            f" declared {list(declared)} but the inputs give {list(shape)}")
        try:
            check_tensor_sizes(shapes, [self.model.operands[o].info.dtype for o in outputs],
                               "output")
        except NnapiError as e:
            raise prefixed(e, step.where) from None

    def _find_fusions(self) -> None:
        """Pairs each step of one output with the step it can be fused with: one whose only
        output is read by this step alone and is no model output."""
        producers: dict[int, Step] = {}
        readers: dict[int, set[int]] = {}
        for step in self.steps:
            for i in step.operation.inputs:
                readers.setdefault(i, set()).add(step.position)
            for o in step.operation.outputs:
                producers[o] = step
        model_outputs = set(self.model.outputs)
        for step in self.steps:
            if len(step.operation.outputs) != 1:
                continue
            for i in step.operation.inputs:
                producer = producers.get(i)
                if producer is not None and len(producer.operation.outputs) == 1 and \
                        i not in model_outputs and readers[i] == {step.position} and \
                        fusion_for(producer.operation.type, step.operation.type) is not None:
                    step.fusion = producer
                    break

    def _plan_frees(self) -> None:
        """Drops each temporary after its last reader, so big models run in little memory.
        A step fused with an earlier one reads that one's inputs."""
        last_use: dict[int, int] = {}
        for step in self.steps:
            fused_inputs = step.fusion.operation.inputs if step.fusion is not None else []
            for i in [*step.operation.inputs, *fused_inputs]:
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

    def create_execution(self) -> Execution:
        return Execution(self)

    def run(self, inputs: Sequence[Any], *, keep_intermediates: bool = False,
            profile: bool = False, limits: RunLimits = NO_LIMITS,
            substitutes: Mapping[int, np.ndarray] | None = None) -> ExecutionResult:
        """Executes once: ``inputs`` in model-input order (None for an omitted input).
        ``limits`` bounds the run (the models IF and WHILE call run within their caller's).

        ``substitutes`` replaces what operations compute for some operands: the operations
        reading them get the substitute, the result keeps the computed value (to check each
        layer on its reference input, ``convert.compare``)."""
        if len(inputs) != len(self.model.inputs):
            raise BadDataError(f"the model has {len(self.model.inputs)} inputs, got"
                               f" {len(inputs)}")
        execution = Execution(self)
        for i, value in enumerate(inputs):
            execution.set_input(i, value)
        return execution.compute(keep_intermediates=keep_intermediates, profile=profile,
                                 limits=limits, substitutes=substitutes)

    def check_omitted(self, omitted: set[int]) -> None:
        """Model inputs omitted at execution (``omitted``: their operands) may only feed
        inputs their operations' signatures let be omitted: BAD_DATA before anything runs
        (a kernel would otherwise fail on the missing value)."""
        operands = self.model.operands
        for step in self.steps:
            op = step.operation
            if not omitted.intersection(op.inputs):
                continue
            flags = [i in omitted or operands[i].lifetime is Lifetime.NO_VALUE
                     for i in op.inputs]
            match = match_signature(signature_of(op.type), [operands[i].type for i in op.inputs],
                                    [operands[o].type for o in op.outputs], flags)
            if isinstance(match, MatchFailure):
                operand = op.inputs[match.position] \
                    if match.direction == "input" and 0 <= match.position < len(op.inputs) \
                    else None
                which = f" (model input {self.model.inputs.index(operand)} is omitted)" \
                    if operand in omitted else ""
                raise BadDataError(f"{step.where}: {match.message}{which}")

    def _execute(self, inputs: Sequence[Any], keep_intermediates: bool, profile: bool,
                 limits: RunLimits = NO_LIMITS,
                 substitutes: Mapping[int, np.ndarray] | None = None) -> ExecutionResult:
        if not native.uses_native(self.kernels):
            return self._run_steps(inputs, keep_intermediates, profile, limits, substitutes)
        # Native runners compute IEEE results (infinities, NaN) without NumPy's warnings, as
        # the reference kernels do.
        with native.execution_scope(), np.errstate(all="ignore"):
            return self._run_steps(inputs, keep_intermediates, profile, limits, substitutes)

    def _run_steps(self, inputs: Sequence[Any], keep_intermediates: bool, profile: bool,
                   limits: RunLimits,
                   substitutes: Mapping[int, np.ndarray] | None) -> ExecutionResult:
        values = list(self._constants)
        for index, value in zip(self.model.inputs, inputs, strict=False):
            values[index] = _contiguous(value)
        static = self._static_inputs is not None and self._static_inputs == tuple(
            getattr(value, "shape", None) for value in inputs)
        # Intermediates to keep, or substituted: every step the full way, none fused away.
        fast = not keep_intermediates and not substitutes
        computed: dict[int, np.ndarray] = {}  # substituted operands' own values
        fused = fast and static
        timings: list[OperationTiming] = []
        timed = limits.deadline_ns is not None
        replayed = self._replayed
        if fused and replayed is not None and not timed and not profile:
            self._replay(replayed, values, limits)
            outputs = [_owned(values[o]) for o in self.model.outputs]
            return ExecutionResult(outputs, dict(zip(self.model.outputs, outputs, strict=False)))
        for step in self.steps:
            if timed:
                limits.check_deadline()
            if fused and step.fused_away:  # its reader computes from its inputs
                for dead in step.frees:
                    values[dead] = None
                continue
            start = time.perf_counter() if profile else 0.0
            plan = step.plan
            if fused and step.fused_runner is not None:
                try:
                    results = step.fused_runner(*[values[i] for i in step.fused_inputs])
                except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
                    raise prefixed(e, step.where) from e
                values[step.operation.outputs[0]] = results
            elif fast and plan is not None and plan[1] is not None and (static or plan[0] == tuple(
                    [getattr(values[i], "shape", None) for i in step.variable])):
                try:
                    results = plan[1](*[values[i] for i in step.inputs])
                except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
                    raise prefixed(e, step.where) from e
                if results is None:  # this execution is the reference kernel's
                    self._run_step(step, values, static, limits)
                elif step.single_output >= 0 and type(results) is np.ndarray:
                    values[step.single_output] = results
                else:
                    if type(results) is np.ndarray:
                        results = (results,)
                    for o, array, rounded in zip(step.operation.outputs, results, step.rounded,
                                                 strict=False):
                        values[o] = array.astype(np.float16).astype(np.float32) if rounded \
                            else array
            else:
                self._run_step(step, values, static, limits, substitutes, computed)
            if profile:
                timings.append(OperationTiming(step.position, step.operation.type.name,
                                               time.perf_counter() - start))
            if not keep_intermediates:
                for dead in step.frees:
                    values[dead] = None
        if fused and replayed is None:
            self._replayed = self._replay_list()
        outputs = [_owned(values[o]) for o in self.model.outputs]
        kept: dict[int, np.ndarray] = {}
        if keep_intermediates:
            kept = {i: v for i, v in enumerate(values) if isinstance(v, np.ndarray)}
            kept.update(zip(self.model.outputs, outputs, strict=False))
            kept.update(computed)
        else:
            kept = dict(zip(self.model.outputs, outputs, strict=False))
        return ExecutionResult(outputs, kept, timings)

    def _replay_list(self) -> list[Replayed] | None:
        """Every step's runner as the last execution of the compile-time shapes planned it
        (None when outputs are rounded to float16, which only the full loop does)."""
        if any(any(step.rounded) for step in self.steps):
            return None
        replayed = []
        for step in self.steps:
            if step.fused_away:
                replayed.append(Replayed.of(step, None, step.inputs, skip=True))
            elif step.fused_runner is not None:
                replayed.append(Replayed.of(step, step.fused_runner, step.fused_inputs))
            elif step.plan is not None and step.plan[1] is not None:
                replayed.append(Replayed.of(step, step.plan[1], step.inputs))
            else:
                replayed.append(Replayed.of(step, None, step.inputs))
        return replayed

    def _replay(self, replayed: list[Replayed], values: list[Any], limits: RunLimits) -> None:
        """An execution of the compile-time shapes once every step's runner is planned: the
        runners called one after the other, without the full loop's per-step decisions (in
        a model of many small operations, an unrolled recurrent layer, they cost as much as
        the arithmetic). A step without a runner, or whose runner declines this execution,
        runs the full way."""
        for entry in replayed:
            if entry.skip:
                pass
            elif entry.runner is None:
                self._run_step(entry.step, values, True, limits)
            else:
                try:
                    results = entry.runner(*entry.arguments(values))
                except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
                    raise prefixed(e, entry.step.where) from e
                if results is None:
                    self._run_step(entry.step, values, True, limits)
                elif type(results) is np.ndarray:
                    values[entry.outputs[0]] = results
                else:
                    for o, array in zip(entry.outputs, results, strict=False):
                        values[o] = array
            for dead in entry.frees:
                values[dead] = None

    def _run_step(self, step: Step, values: list[Any], static: bool, limits: RunLimits,
                  substitutes: Mapping[int, np.ndarray] | None = None,
                  computed: dict[int, np.ndarray] | None = None) -> None:
        """One step the full way: shapes settled and checked, the native kernel planned (when
        there is one) or the reference kernel run, and every output checked; with the
        compile-time shapes (``static``), its fusion with an earlier step planned too."""
        op = step.operation
        operands = self.model.operands
        ctx = KernelContext(step.binding, values, None, step.memo, limits)
        try:
            shapes: Sequence[Shape] | None = None
            if step.static_outputs is not None and all(
                    has_shape(values[i], s)
                    for i, s in zip(op.inputs, step.input_shapes, strict=False)):
                shapes = step.static_outputs
            elif not step.kernel.shaped_by_execution:
                shapes = [tuple(int(d) for d in s) for s in step.kernel.prepare(ctx)]
                self._check_outputs(step, shapes, OpFailedError)
            results = None
            if step.planner is not None:
                key = tuple([getattr(values[i], "shape", None) for i in step.variable])
                plan = step.plan
                if plan is None or plan[0] != key:
                    plan = step.plan = (key, step.planner(ctx))
                if plan[1] is not None:
                    results = plan[1](*[values[i] for i in op.inputs])
            if results is None:
                results = step.kernel.execute(ctx)
            if isinstance(results, (np.ndarray, np.generic)):  # NumPy makes 0-d results scalars
                results = (np.asarray(results),)
            if shapes is None:  # the kernel's results decide (IF, WHILE)
                shapes = [tuple(r.shape) for r in results]
                self._check_outputs(step, shapes, OpFailedError)
        except NnapiError as e:
            raise prefixed(e, step.where) from e
        except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
            raise prefixed(e, step.where) from e
        if len(results) != len(op.outputs):
            raise OpFailedError(f"{step.where}: kernel returned {len(results)} outputs,"
                                f" expected {len(op.outputs)}")
        for pos, (o, array, shape) in enumerate(zip(op.outputs, results, shapes, strict=False)):
            operand = operands[o]
            if array.dtype != operand.info.dtype or array.shape != shape:
                step.plan = None  # a runner that gives this is not used again unchecked
                self._replayed = None
                raise OpFailedError(
                    f"{step.where}: output {pos} came out as {array.dtype}{list(array.shape)},"
                    f" expected {operand.info.dtype}{list(shape)} (a kernel bug)")
            if step.rounded[pos]:
                array = array.astype(np.float16).astype(np.float32)
            if substitutes is not None and o in substitutes and computed is not None:
                computed[o], array = array, substitutes[o]
            # Reference kernels may return strided views (a slice, a transpose); the native
            # runners reading them next take C-contiguous arrays.
            values[o] = _contiguous(array)
        if static and step.fusion is not None and step.fused_runner is None and \
                not any(step.rounded) and not any(step.fusion.rounded):
            self._plan_fusion(step, ctx, values)

    def _plan_fusion(self, step: Step, ctx: KernelContext, values: list[Any]) -> None:
        producer = step.fusion
        assert producer is not None
        op = producer.operation
        producer_ctx = KernelContext(producer.binding, values, None, producer.memo)
        planner = fusion_for(op.type, step.operation.type)
        try:
            runner = planner(producer_ctx, ctx) if planner is not None else None
        except Exception as e:  # noqa: BLE001 - a planner bug must not escape as a crash
            raise prefixed(e, step.where) from e
        if runner is not None:
            step.fused_inputs = tuple(op.inputs)
            step.fused_runner = runner
            producer.fused_away = True


def _contiguous(value: Any) -> Any:
    """``value`` in C order (a copy only when it is a strided view; 0-d arrays stay 0-d)."""
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        return value.copy(order="C")
    return value


def _owned(value: Any) -> Any:
    """A model output as the caller may keep and change: kernels may return views of other
    values (a RESHAPE of a constant, say), which must not be shared."""
    if isinstance(value, np.ndarray) and not value.flags.owndata:
        return np.array(value)
    return value


class Execution:
    """One run of a Compilation: set the inputs, then compute (once), as NNAPI executions do."""

    def __init__(self, compilation: Compilation):
        self.compilation = compilation
        self._inputs: list[Any] = [None] * len(compilation.model.inputs)
        self._set = [False] * len(compilation.model.inputs)
        self.result: ExecutionResult | None = None
        self.timeout_ns = 0  # 0: no limit
        self.loop_timeout_ns = NO_LIMITS.loop_timeout_ns

    def set_timeout(self, duration_ns: int) -> None:
        """Stops the compute with MissedDeadlineError once it has run ``duration_ns``
        nanoseconds (0: never)."""
        self._check_not_run()
        self.timeout_ns = int(duration_ns)

    def set_loop_timeout(self, duration_ns: int) -> None:
        """Stops the compute with MissedDeadlineError when a WHILE loop runs longer than
        ``duration_ns`` (default 2 s, at most 15 s: longer values mean 15 s)."""
        self._check_not_run()
        self.loop_timeout_ns = min(int(duration_ns), MAXIMUM_LOOP_TIMEOUT_NS)

    def _check_not_run(self) -> None:
        if self.result is not None:
            raise BadStateError("the execution has already run")

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

    def compute(self, *, keep_intermediates: bool = False, profile: bool = False,
                limits: RunLimits | None = None,
                substitutes: Mapping[int, np.ndarray] | None = None) -> ExecutionResult:
        """Runs the model. Its limits are the execution's timeouts, or ``limits`` when given
        (a model called by IF or WHILE runs within its caller's)."""
        if self.result is not None:
            raise BadStateError("an execution computes only once; create a new one")
        unset = [i for i, s in enumerate(self._set) if not s]
        if unset:
            raise BadDataError(f"model inputs {unset} were not set")
        model = self.compilation.model
        omitted = {model.inputs[i] for i, v in enumerate(self._inputs) if v is OMITTED}
        if omitted:
            self.compilation.check_omitted(omitted)
        if limits is None:
            limits = RunLimits.starting_now(self.loop_timeout_ns, self.timeout_ns)
        self.result = self.compilation._execute(self._inputs, keep_intermediates, profile,
                                                limits, substitutes)
        return self.result


def _as_input_array(value: Any, operand: Operand, dimensions: Iterable[int] | None,
                    where: str) -> np.ndarray:
    info = operand.info
    if isinstance(value, (bytes, bytearray, memoryview)):
        dims = tuple(dimensions) if dimensions is not None else operand.dimensions
        shape = () if info.is_scalar else dims
        if not fully_known(shape, info.is_scalar):
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
    if conflicts(operand.dimensions, array.shape):
        raise BadDataError(f"{where}: shape {list(array.shape)} does not match the declared"
                           f" {list(operand.dimensions)}")
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array


def _fits(array: np.ndarray, dtype: np.dtype) -> bool:
    limits = np.iinfo(dtype)
    return array.size == 0 or (array.min() >= limits.min and array.max() <= limits.max)
