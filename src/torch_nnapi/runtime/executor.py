"""Compiles a finished Model into a plan of kernel calls and executes it on NumPy arrays.

Shapes are inferred once at compilation from what is known (declared dimensions and
constants) and again at execution from the actual inputs, so models with unknown dimensions
(dynamic output shapes) run. Any operand's value can be kept for inspection.

Steps with a native kernel keep the runner it planned for their input shapes: while those
shapes stay the same, an execution calls the runners directly -- no context, no shape
inference, no output checks (made when the runner was planned) -- so that a model of many
small operations is dominated by its arithmetic, not by the Python between kernels.

Every execution goes through one loop (``_run_calls``) over a list of step calls planned once
per kind of execution (``_calls``): with the compile-time shapes, the planned runners
unchecked and fused steps skipped (the list is rebuilt when a run plans something, so the
first run plans and the later ones replay); with other shapes, runners checked against the
shapes they were planned for; keeping intermediates or substituting values, every step the
full way (``_run_step``). Profiling and deadlines only add a check around each call. The
executions of the compile-time shapes that are neither profiled nor under a deadline, the
common case, run a leaner loop (``_replay``) over the same calls unpacked into tuples, the
fused-away steps left out.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from ..nnapi.codes import MAXIMUM_LOOP_TIMEOUT_NS, OperandType, PreferenceCode
from ..nnapi.errors import (
    BadDataError,
    BadStateError,
    NnapiError,
    OpFailedError,
)
from ..nnapi.model import Lifetime, Model, Operation
from ..nnapi.signatures import MatchFailure, SignatureMatch, match_signature, signature_of
from . import fusing, native, ops  # noqa: F401 - native and ops register every kernel
from .context import OMITTED, Binding, KernelContext, Shape, ValueNotKnown
from .inputs import input_array
from .limits import check_tensor_sizes
from .registry import fusion_for, kernel_for, native_kernel_for
from .steps import (
    NativeRunners,
    Replayed,
    SettledShapes,
    Step,
    StepCall,
    conflicts,
    fully_known,
    has_shape,
    prefixed,
    replayed,
)
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

    # How errors name each model input, and _replayed unpacked for _replay with the list it
    # was made from: made when first needed (by subclasses that compile otherwise too).
    _input_wheres: list[str] | None = None
    _replayed_flat: tuple[list[StepCall], list[Replayed]] | None = None

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
        if all(step.settled is not None for step in self.steps):
            self._static_inputs = tuple(self.shapes[i] for i in model.inputs)
        # The step calls of each kind of execution: of the compile-time shapes (rebuilt when
        # an execution plans a runner or a fusion), of other shapes (rebuilt when one plans
        # again), and the full way (by whether intermediates are kept); see _static_calls,
        # _checked_calls and _full_calls.
        self._replayed: list[StepCall] | None = None
        self._checked: list[StepCall] | None = None
        self._full: dict[bool, list[StepCall]] = {}

    # ---------------------------------------------------------------- compile time

    def _step(self, position: int, operation: Operation, match: SignatureMatch) -> Step:
        kernel = kernel_for(operation.type)
        if kernel is None:
            raise BadDataError(f"operation {position} ({operation.type.name}): the host runtime"
                               " has no kernel for this operation type")
        operands = self.model.operands
        planner = native_kernel_for(operation.type) if native.uses_native(self.kernels) else None
        runners = None if planner is None else NativeRunners(planner, tuple(
            i for i in operation.inputs if operands[i].lifetime is not Lifetime.CONSTANT))
        rounded = tuple(self.emulate_float16 and operands[o].type == OperandType.TENSOR_FLOAT32
                        for o in operation.outputs)
        return Step(position, operation, kernel, Binding(operands, operation, match), rounded,
                    runners)

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
            step.settled = SettledShapes(tuple(shapes[i] for i in op.inputs), outs)
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
        """The pairs and groups native runners compute together (runtime/fusing.py); groups
        are planned now, from the compile-time shapes."""
        model_outputs = set(self.model.outputs)
        fusing.find_groups(self.steps, model_outputs, lambda step: KernelContext(
            step.binding, self._constants, self.shapes, step.memo))
        fusing.find_pairs(self.steps, model_outputs)

    def _plan_frees(self) -> None:
        """Drops each temporary after its last reader, so big models run in little memory.
        A step fused with an earlier one reads that one's inputs."""
        last_use: dict[int, int] = {}
        for step in self.steps:
            fused_inputs = step.fusion.inputs if step.fusion is not None else ()
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

    def input_where(self, index: int) -> str:
        """How errors name model input ``index``: described once per compilation, not on
        every execution's set_input."""
        if self._input_wheres is None:
            model = self.model
            self._input_wheres = [f"model input {i} ({model.describe_operand(o)})"
                                  for i, o in enumerate(model.inputs)]
        return self._input_wheres[index]

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
        values = list(self._constants)
        for index, value in zip(self.model.inputs, inputs, strict=False):
            values[index] = _contiguous(value)
        static = self._static_inputs is not None and self._static_inputs == tuple(
            getattr(value, "shape", None) for value in inputs)
        run = _Run(static, limits, profile, substitutes)
        full = keep_intermediates or bool(substitutes)
        replay = static and not full and not run.observed
        calls = self._full_calls(keep_intermediates) if full else \
            self._static_calls() if static else self._checked_calls()
        if not native.uses_native(self.kernels):
            self._run_calls(calls, values, run)
        else:
            # Native runners compute IEEE results (infinities, NaN) without NumPy's warnings,
            # as the reference kernels do.
            with native.execution_scope(), np.errstate(all="ignore"):
                if replay:
                    self._replay(values, run)
                else:
                    self._run_calls(calls, values, run)
        if static and not full:
            self._static_calls()  # with what this execution planned, for the next to replay
        outputs = [_owned(values[o]) for o in self.model.outputs]
        kept: dict[int, np.ndarray] = {}
        if keep_intermediates:
            kept = {i: v for i, v in enumerate(values) if isinstance(v, np.ndarray)}
            kept.update(zip(self.model.outputs, outputs, strict=False))
            kept.update(run.computed)
        else:
            kept = dict(zip(self.model.outputs, outputs, strict=False))
        return ExecutionResult(outputs, kept, run.timings)

    # The step calls of each kind of execution, planned once (and again when an execution
    # plans something they do not have, see _forget_calls).

    def _full_calls(self, keep_intermediates: bool) -> list[StepCall]:
        """Intermediates to keep, or values substituted: every step the full way (fused
        ones too), each temporary dropped after its last reader unless intermediates are
        kept."""
        calls = self._full.get(keep_intermediates)
        if calls is None:
            calls = self._full[keep_intermediates] = [
                StepCall.of(step, keep=keep_intermediates) for step in self.steps]
        return calls

    def _static_calls(self) -> list[StepCall]:
        """The compile-time shapes: each step's runner for them unchecked (none before it is
        planned: the full way plans it), fusions in place of the steps they replace."""
        if self._replayed is None:
            self._replayed = [StepCall.static(step) for step in self.steps]
        return self._replayed

    def _replayed_calls(self) -> list[Replayed]:
        """The static calls as ``_replay`` reads them (``steps.replayed``)."""
        calls = self._static_calls()
        if self._replayed_flat is None or self._replayed_flat[0] is not calls:
            self._replayed_flat = (calls, replayed(calls))
        return self._replayed_flat[1]

    def _replay(self, values: list[Any], run: _Run) -> None:
        """The execution loop of the compile-time shapes, neither timed nor under a deadline:
        ``_run_calls`` without its per-call checks; a step without a runner (or whose runner
        declines) runs the full way, which plans it for the next execution."""
        for runner, arguments, single, frees, call in self._replayed_calls():
            if runner is not None:
                try:
                    results = runner(*arguments(values))
                except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
                    assert call is not None
                    raise prefixed(e, call.step.where) from e
                if single >= 0 and type(results) is np.ndarray:
                    values[single] = results
                elif results is not None:
                    assert call is not None
                    call.step.store(results, values)
                elif call is not None:  # this execution is the reference kernel's
                    self._run_step(call.step, values, run)
            elif call is not None:
                self._run_step(call.step, values, run)
            for dead in frees:
                values[dead] = None

    def _checked_calls(self) -> list[StepCall]:
        """Other shapes: each step's last runner, when the shapes it was planned for are the
        execution's."""
        if self._checked is None:
            self._checked = [StepCall.checked(step) for step in self.steps]
        return self._checked

    def _run_calls(self, calls: list[StepCall], values: list[Any], run: _Run) -> None:
        """The execution loop: each step's runner called directly where it has one, the step
        the full way where not (or where the runner declines this execution, or the shapes
        are not those it was planned for)."""
        observed = run.observed
        for call in calls:
            if observed:
                run.start()
            if call.skip:  # its reader computes from its inputs
                pass
            elif call.runner is not None and (call.shapes is None or call.planned_for(values)):
                try:
                    results = call.runner(*call.arguments(values))
                except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
                    raise prefixed(e, call.step.where) from e
                if results is None:  # this execution is the reference kernel's
                    self._run_step(call.step, values, run)
                elif call.single >= 0 and type(results) is np.ndarray:
                    values[call.single] = results
                else:
                    call.step.store(results, values)
            else:
                self._run_step(call.step, values, run)
            if observed:
                run.stop(call)
            for dead in call.frees:
                values[dead] = None

    def _run_step(self, step: Step, values: list[Any], run: _Run) -> None:
        """One step the full way: shapes settled and checked, the native kernel planned (when
        there is one) or the reference kernel run, and every output checked; with the
        compile-time shapes, its fusion with an earlier step planned too."""
        ctx = KernelContext(step.binding, values, None, step.memo, run.limits)
        try:
            results, shapes = self._compute(step, ctx, values, run)
        except Exception as e:  # noqa: BLE001 - a kernel bug must not escape as a crash
            raise prefixed(e, step.where) from e
        outputs = step.operation.outputs
        if len(results) != len(outputs):
            raise OpFailedError(f"{step.where}: kernel returned {len(results)} outputs,"
                                f" expected {len(outputs)}")
        operands = self.model.operands
        for pos, (o, array, shape) in enumerate(zip(outputs, results, shapes, strict=False)):
            if array.dtype != operands[o].info.dtype or array.shape != shape:
                self._reject(step, pos, array, shape)
            if step.rounded[pos]:
                array = array.astype(np.float16).astype(np.float32)
            if run.substitutes is not None and o in run.substitutes:
                run.computed[o], array = array, run.substitutes[o]
            # Reference kernels may return strided views (a slice, a transpose); the native
            # runners reading them next take C-contiguous arrays.
            values[o] = _contiguous(array)
        if run.static and step.fusion is not None and step.fused_runner is None and \
                not any(step.rounded) and not any(step.fusion.steps[0].rounded):
            self._plan_fusion(step, ctx, values)

    def _compute(self, step: Step, ctx: KernelContext, values: list[Any],
                 run: _Run) -> tuple[Sequence[np.ndarray], Sequence[Shape]]:
        """The step's outputs, by its native runner (planned when the shapes are new) or its
        reference kernel, and the shapes they must have: settled at compile time when the
        input shapes are those, prepared otherwise (IF and WHILE: those they come out with)."""
        op = step.operation
        shapes: Sequence[Shape] | None = None
        settled = step.settled
        if settled is not None and all(has_shape(values[i], s)
                                       for i, s in zip(op.inputs, settled.inputs, strict=False)):
            shapes = settled.outputs
        elif not step.kernel.shaped_by_execution:
            shapes = [tuple(int(d) for d in s) for s in step.kernel.prepare(ctx)]
            self._check_outputs(step, shapes, OpFailedError)
        results = None
        if step.native is not None:
            runner, planned = step.native.runner_for(ctx, values, run.static)
            if planned:
                self._forget_calls(run.static)
            if runner is not None:
                results = runner(*[values[i] for i in op.inputs])
        if results is None:
            results = step.kernel.execute(ctx)
        if isinstance(results, (np.ndarray, np.generic)):  # NumPy makes 0-d results scalars
            results = (np.asarray(results),)
        if shapes is None:  # the kernel's results decide (IF, WHILE)
            shapes = [tuple(r.shape) for r in results]
            self._check_outputs(step, shapes, OpFailedError)
        return results, shapes

    def _reject(self, step: Step, pos: int, array: np.ndarray, shape: Shape) -> NoReturn:
        """OP_FAILED for output ``pos`` coming out unlike what it must be (a kernel bug); a
        native runner giving it is not used again unchecked."""
        if step.native is not None:
            step.native.forget()
        self._forget_calls(True)
        self._forget_calls(False)
        dtype = self.model.operands[step.operation.outputs[pos]].info.dtype
        raise OpFailedError(f"{step.where}: output {pos} came out as {array.dtype}"
                            f"{list(array.shape)}, expected {dtype}{list(shape)} (a kernel bug)")

    def _forget_calls(self, static: bool) -> None:
        """Drops the step calls of executions of the compile-time shapes (``static``) or of
        other shapes, once a step has planned a runner they do not have."""
        if static:
            self._replayed = None
        else:
            self._checked = None

    def _plan_fusion(self, step: Step, ctx: KernelContext, values: list[Any]) -> None:
        assert step.fusion is not None
        producer = step.fusion.steps[0]
        op = producer.operation
        producer_ctx = KernelContext(producer.binding, values, None, producer.memo)
        planner = fusion_for(op.type, step.operation.type)
        try:
            runner = planner(producer_ctx, ctx) if planner is not None else None
        except Exception as e:  # noqa: BLE001 - a planner bug must not escape as a crash
            raise prefixed(e, step.where) from e
        if runner is not None:
            step.fused_runner = runner
            producer.fused_away = True
            self._forget_calls(True)


@dataclass
class _Run:
    """One execution's settings, and what it gathers besides the values: the substituted
    operands' own values and the timings."""

    static: bool  # the inputs have the compile-time shapes
    limits: RunLimits
    profile: bool
    substitutes: Mapping[int, np.ndarray] | None
    computed: dict[int, np.ndarray] = field(default_factory=dict)
    timings: list[OperationTiming] = field(default_factory=list)
    started: float = 0.0

    @property
    def observed(self) -> bool:
        """Whether each call is timed or checked against the deadline."""
        return self.profile or self.limits.deadline_ns is not None

    def start(self) -> None:
        self.limits.check_deadline()
        if self.profile:
            self.started = time.perf_counter()

    def stop(self, call: StepCall) -> None:
        if self.profile and not call.skip:
            self.timings.append(OperationTiming(call.step.position,
                                                call.step.operation.type.name,
                                                time.perf_counter() - self.started))


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
        self._set[index] = True
        if value is None:
            self._inputs[index] = OMITTED
            return
        self._inputs[index] = input_array(value, operand, dimensions,
                                          self.compilation.input_where(index))

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
