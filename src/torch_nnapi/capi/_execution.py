"""ANeuralNetworksExecution and ANeuralNetworksEvent over ``runtime.Execution``.

Inputs are bound without copying: the runtime reads the caller's buffers when the execution
computes, as NNAPI specifies. Outputs are written into the caller's buffers once all are known
to be large enough; otherwise nothing is written, the execution fails with
OUTPUT_INSUFFICIENT_SIZE and the actual dimensions can be queried.

Events (API 30): an execution's event signals when it finishes; startComputeWithDependencies
first waits for other events. Linux gives the host's executions no sync fence, so their
events have none to hand out (getSyncFenceFd: -1 and BAD_DATA); an event made from a file
descriptor (createFromSyncFenceFd) signals when the descriptor becomes readable, as a Linux
sync_file does when its fence signals.
"""

from __future__ import annotations

import ctypes
import functools
import os
import select
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..nnapi.codes import DEFAULT_LOOP_TIMEOUT_NS, MAXIMUM_LOOP_TIMEOUT_NS, DurationCode
from ..nnapi.errors import (
    BadDataError,
    BadStateError,
    NnapiError,
    OpFailedError,
    OutputInsufficientSizeError,
)
from ..nnapi.model import Model, Operand, element_count
from ..nnapi.operand_types import type_info
from ._abi import (
    OperandTypeValue,
    UnexpectedNullError,
    read_array,
    read_operand_type,
    require,
    store,
    store_array,
    view,
)
from ._calls import HANDLES, Handled, entry, give
from ._compilation import Burst, CompilationState, compilation_of
from ._memory import DeviceMemory, memory_of

NO_DURATION = 2**64 - 1  # UINT64_MAX: not measured


@functools.lru_cache(maxsize=256)
def _type_problem(t: OperandTypeValue) -> str:
    """What is wrong with an operand type a setInput/setOutput call gives ("" if nothing): the
    checks of Model.addOperand, remembered per type (every execution sets its inputs and
    outputs again, with the same types)."""
    try:
        Model().add_operand(t.type, t.dimensions, t.scale, t.zero_point)
    except BadDataError as e:
        return str(e).split(": ", 1)[-1]
    return ""


@functools.lru_cache(maxsize=256)
def _given_dimensions(declared: tuple[int, ...], t: OperandTypeValue,
                      allow_unspecified: bool) -> tuple[int, ...]:
    """The dimensions of type ``t`` given for an operand declared ``declared``, once checked:
    remembered per type like ``_type_problem`` (a failed check raises again every time)."""
    problem = _type_problem(t)
    if problem:
        raise BadDataError(f"type is invalid: {problem}")
    if not allow_unspecified and not type_info(t.type).is_scalar \
            and not (t.dimensions and all(t.dimensions)):
        raise BadDataError(f"type dimensions {list(t.dimensions)} are not fully specified")
    if declared and (len(declared) != len(t.dimensions)
                     or any(d and d != n for d, n in zip(declared, t.dimensions, strict=True))):
        raise BadDataError(f"type dimensions {list(t.dimensions)} contradict the model's"
                           f" {list(declared)}")
    return t.dimensions


@dataclass(frozen=True)
class OutputBinding:
    destination: memoryview | None  # None: an omitted output
    dimensions: tuple[int, ...]  # as declared: the model's, completed by setOutput's type
    length: int


class ExecutionState(Handled):
    KIND = "ANeuralNetworksExecution"

    def __init__(self, compilation: CompilationState):
        compiled = compilation.ready()
        self.compilation = compilation
        self.model = compiled.model
        self.execution = compiled.create_execution()
        self.inputs_set = [False] * len(self.model.inputs)
        self.outputs: list[OutputBinding | None] = [None] * len(self.model.outputs)
        self.measure = False
        self.started = False
        self.done = False
        self.error: NnapiError | None = None
        self.shapes: list[tuple[int, ...]] | None = None  # actual output dimensions
        self.sufficient: list[bool] = []
        self.durations: dict[int, int] = {}
        self.timeout_ns = 0  # 0: no limit on computing
        self.loop_timeout_ns = DEFAULT_LOOP_TIMEOUT_NS
        # Inputs and outputs bound to memory made from a descriptor, by (direction, index).
        self.device_memories: dict[tuple[str, int], DeviceMemory] = {}

    # ------------------------------------------------------------ binding

    def building(self) -> None:
        if self.started:
            raise BadStateError("the execution has started and can no longer change")

    def bind_input(self, index: int, type_address: int, value: memoryview | None,
                   device_memory: DeviceMemory | None = None) -> None:
        operand = self._operand("input", index)
        if device_memory is not None:
            dims = self._memory_dimensions(operand, type_address, device_memory)
        else:
            dims = self._dimensions(operand, type_address, allow_unspecified=value is None)
        self.execution.set_input(index, value, None if value is None else dims)
        self._remember("input", index, device_memory)
        self.inputs_set[index] = True

    def bind_output(self, index: int, type_address: int, destination: memoryview | None,
                    length: int, device_memory: DeviceMemory | None = None) -> None:
        operand = self._operand("output", index)
        if device_memory is not None:
            dims = self._memory_dimensions(operand, type_address, device_memory)
        else:
            dims = self._dimensions(operand, type_address, allow_unspecified=True)
        shape = () if operand.is_scalar else dims
        if destination is not None and (operand.is_scalar or (shape and all(shape))):
            needed = element_count(shape) * operand.info.element_size
            if length != needed:
                raise BadDataError(f"output {index} needs {needed} bytes, got {length}")
        self.outputs[index] = OutputBinding(destination, dims, length)
        self._remember("output", index, device_memory)

    def _remember(self, direction: str, index: int, memory: DeviceMemory | None) -> None:
        if memory is None:
            self.device_memories.pop((direction, index), None)
        else:
            self.device_memories[(direction, index)] = memory

    def _memory_dimensions(self, operand: Operand, type_address: int,
                           memory: DeviceMemory) -> tuple[int, ...]:
        """Memory from a descriptor has its own dimensions; a type, if given, must agree."""
        if type_address:
            given = self._dimensions(operand, type_address, allow_unspecified=True)
            if given and tuple(given) != memory.dimensions:
                raise BadDataError(f"type dimensions {list(given)} differ from the memory's"
                                   f" {list(memory.dimensions)}")
        return memory.dimensions

    def _operand(self, kind: str, index: int) -> Operand:
        indices = self.model.inputs if kind == "input" else self.model.outputs
        if not 0 <= index < len(indices):
            raise BadDataError(f"{kind} index {index} is out of range (the model has"
                               f" {len(indices)} {kind}s)")
        return self.model.operands[indices[index]]

    @staticmethod
    def _dimensions(operand: Operand, type_address: int, allow_unspecified: bool) \
            -> tuple[int, ...]:
        """The dimensions a setInput/setOutput call gives: the model's, or those of ``type``
        which must be valid and may only fill in the model's unspecified dimensions."""
        if not type_address:
            if not allow_unspecified and not operand.fully_specified:
                raise BadDataError(f"{operand.describe()} is not fully specified: pass a type"
                                   " with its dimensions")
            return operand.dimensions
        return _given_dimensions(operand.dimensions, read_operand_type(type_address),
                                 allow_unspecified)

    # ------------------------------------------------------------ computing

    def start(self) -> None:
        """What compute, startCompute and burstCompute check before the execution starts."""
        if self.started:
            raise BadStateError("the execution has already started; an execution computes"
                                " once")
        for kind, bound in (("inputs", self.inputs_set),
                            ("outputs", [o is not None for o in self.outputs])):
            unset = [i for i, b in enumerate(bound) if not b]
            if unset:
                raise BadDataError(f"model {kind} {unset} are not set")
        for (direction, index), memory in self.device_memories.items():
            if direction == "input":
                memory.readable(f"the memory of input {index}")
        self.started = True

    def run(self, timeout_ns: int = 0) -> None:
        """Computes and writes the outputs; raises the failure, which stays recorded.
        ``timeout_ns`` (0: none) limits this compute beside the execution's own timeout."""
        timeouts = [t for t in (self.timeout_ns, timeout_ns) if t]
        try:
            self.execution.set_timeout(min(timeouts) if timeouts else 0)
            self.execution.set_loop_timeout(self.loop_timeout_ns)
            start = time.perf_counter_ns()
            outputs = self.execution.compute().outputs
            computed = time.perf_counter_ns()
            self._deliver(outputs)
            if self.measure:
                self.durations = _measured(computed - start, time.perf_counter_ns() - start)
        except NnapiError as e:
            self.error = e
            raise
        except Exception as e:  # noqa: BLE001 - reported as the execution's failure
            self.error = OpFailedError(f"{type(e).__name__}: {e}")
            raise self.error from e
        finally:
            self._settle_device_memories()
            self.done = True

    def _settle_device_memories(self) -> None:
        """Output memories from descriptors hold data after a successful execution, and none
        after a failed one."""
        for (direction, _), memory in self.device_memories.items():
            if direction == "output":
                memory.initialized = self.error is None

    def require_fully_specified_outputs(self) -> None:
        """startComputeWithDependencies cannot resize outputs after the fact."""
        for pos, binding in enumerate(self.outputs):
            operand = self._operand("output", pos)
            if binding is not None and not operand.is_scalar and \
                    not (binding.dimensions and all(binding.dimensions)):
                raise BadDataError(f"output {pos} has dimensions {list(binding.dimensions)}:"
                                   " startComputeWithDependencies needs every output fully"
                                   " specified")

    def _bindings(self) -> list[OutputBinding]:
        """Every output's binding: all are set once the execution has started."""
        bound = [b for b in self.outputs if b is not None]
        if len(bound) != len(self.outputs):
            raise BadStateError("the execution's outputs are not all set")
        return bound

    def _deliver(self, outputs: list[np.ndarray]) -> None:
        bindings = self._bindings()
        shapes, sufficient = [], []
        for pos, (array, binding) in enumerate(zip(outputs, bindings, strict=True)):
            declared, shape = binding.dimensions, tuple(array.shape)
            if declared and (len(declared) != len(shape)
                             or any(d and d != s for d, s in zip(declared, shape, strict=True))):
                raise OpFailedError(f"output {pos} has dimensions {list(shape)}, but setOutput"
                                    f" declared {list(declared)}")
            shapes.append(shape)
            sufficient.append(binding.destination is None or array.nbytes <= binding.length)
        self.shapes, self.sufficient = shapes, sufficient
        short = {pos: shapes[pos] for pos, ok in enumerate(sufficient) if not ok}
        if short:
            details = ", ".join(f"output {p} needs {outputs[p].nbytes} bytes for {list(s)}, has"
                                f" {bindings[p].length}" for p, s in short.items())
            raise OutputInsufficientSizeError(details, short)
        for array, binding in zip(outputs, bindings, strict=True):
            if binding.destination is not None and array.nbytes:
                flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
                binding.destination[:array.nbytes] = flat.data

    # ------------------------------------------------------------ results

    def finished_output(self, index: int) -> tuple[tuple[int, ...], bool]:
        """An output's dimensions after computing, and whether its buffer was large enough."""
        if not self.done:
            raise BadStateError("the execution has not finished")
        self._operand("output", index)
        if self.shapes is None:  # failed before the outputs were known: as declared
            return self._bindings()[index].dimensions, True
        return self.shapes[index], self.sufficient[index]


def _measured(compute_ns: int, driver_ns: int) -> dict[int, int]:
    """The durations getDuration reports; the fenced ones count from when the dependencies
    signaled, which is when the host starts computing, so they are the same."""
    return {DurationCode.ON_HARDWARE: compute_ns, DurationCode.IN_DRIVER: driver_ns,
            DurationCode.FENCED_ON_HARDWARE: compute_ns,
            DurationCode.FENCED_IN_DRIVER: driver_ns}


class Event(Handled):
    """Something to wait for: a background execution or a sync fence."""

    KIND = "ANeuralNetworksEvent"

    def wait(self) -> None:
        """Returns when the event signals; raises the NNAPI error it signaled with."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class ExecutionEvent(Event):
    """A background execution, started once ``dependencies`` have signaled; waiting returns
    its result."""

    def __init__(self, execution: ExecutionState, dependencies: tuple[Event, ...] = (),
                 timeout_ns: int = 0):
        self.execution = execution
        self.dependencies = dependencies
        self.timeout_ns = timeout_ns
        self.thread = threading.Thread(target=self._run, name="nnapi-execution", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for k, dependency in enumerate(self.dependencies):
                try:
                    dependency.wait()
                except NnapiError as e:
                    self.execution.error = OpFailedError(f"dependency {k} failed: {e}")
                    self.execution.done = True
                    return
            self.execution.run(self.timeout_ns)
        except Exception:  # noqa: BLE001 - recorded in the execution, reported by wait()
            pass

    def wait(self) -> None:
        self.thread.join()
        error = self.execution.error
        if error is not None:
            raise NnapiError(str(error), error.code)

    def close(self) -> None:
        self.thread.join()


class FenceEvent(Event):
    """A sync fence given as a file descriptor (duplicated): signaled once it is readable."""

    def __init__(self, fd: int):
        if fd < 0:
            raise BadDataError(f"sync_fence_fd {fd} is not a file descriptor")
        try:
            self.fd: int | None = os.dup(fd)
        except OSError as e:
            raise BadDataError(f"sync_fence_fd {fd}: {e.strerror}") from None

    def wait(self) -> None:
        if self.fd is None:
            raise BadStateError("the event is freed")
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        events = poller.poll()  # no timeout: as long as the fence takes, as on Android
        if not events or events[0][1] & (select.POLLERR | select.POLLNVAL):
            raise OpFailedError("the sync fence signaled an error")

    def duplicate(self) -> int:
        if self.fd is None:
            raise BadStateError("the event is freed")
        return os.dup(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def execution_of(handle: int, argument: str = "execution") -> ExecutionState:
    return HANDLES.get(handle, ExecutionState, argument)


def _bound_data(buffer: int, length: int, *, write: bool) -> memoryview | None:
    """The caller's buffer, or None for an omitted operand (NULL and length 0)."""
    if not buffer and length:
        raise UnexpectedNullError(f"buffer is NULL but length is {length}")
    if buffer and not length:
        raise BadDataError("buffer is not NULL but length is 0")
    return view(buffer, length, writable=write) if buffer else None


@entry
def execution_create(compilation: int, out: int) -> None:
    require(compilation=compilation, execution=out)
    give(out, "execution", ExecutionState(compilation_of(compilation)))


@entry
def execution_free(handle: int) -> None:
    HANDLES.remove(handle, ExecutionState)


@entry
def execution_set_input(handle: int, index: int, type_address: int, buffer: int,
                        length: int) -> None:
    require(execution=handle)
    state = execution_of(handle)
    state.building()
    state.bind_input(index, type_address, _bound_data(buffer, length, write=False))


@entry
def execution_set_input_from_memory(handle: int, index: int, type_address: int, memory: int,
                                    offset: int, length: int) -> None:
    require(execution=handle, memory=memory)
    state = execution_of(handle)
    state.building()
    source = memory_of(memory)
    if isinstance(source, DeviceMemory):
        region = source.bind(state.compilation, "input", index, offset, length)
        state.bind_input(index, type_address, region, source)
    else:
        state.bind_input(index, type_address, source.region(offset, length, write=False))


@entry
def execution_set_output(handle: int, index: int, type_address: int, buffer: int,
                         length: int) -> None:
    require(execution=handle)
    state = execution_of(handle)
    state.building()
    state.bind_output(index, type_address, _bound_data(buffer, length, write=True), length)


@entry
def execution_set_output_from_memory(handle: int, index: int, type_address: int, memory: int,
                                     offset: int, length: int) -> None:
    require(execution=handle, memory=memory)
    state = execution_of(handle)
    state.building()
    destination = memory_of(memory)
    if isinstance(destination, DeviceMemory):
        region = destination.bind(state.compilation, "output", index, offset, length)
        state.bind_output(index, type_address, region, destination.size, destination)
    else:
        state.bind_output(index, type_address,
                          destination.region(offset, length, write=True), length)


@entry
def execution_compute(handle: int) -> None:
    state = execution_of(handle)
    state.start()
    state.run()


@entry
def execution_start_compute(handle: int, event_out: int) -> None:
    require(execution=handle, event=event_out)
    state = execution_of(handle)
    state.start()
    give(event_out, "event", ExecutionEvent(state))


@entry
def execution_start_compute_with_dependencies(handle: int, dependencies: int, count: int,
                                              duration: int, event_out: int) -> None:
    require(execution=handle, event=event_out)
    if count:
        require(dependencies=dependencies)
    state = execution_of(handle)
    events = []
    for k, dependency in enumerate(read_array(ctypes.c_void_p, dependencies, count)):
        event = HANDLES.get(dependency or 0, Event, f"dependencies[{k}]")
        if isinstance(event, ExecutionEvent) and event.execution.done \
                and event.execution.error is not None:
            raise BadDataError(f"dependencies[{k}] has already failed")
        events.append(event)
    if duration:
        state.compilation.require_one_device("a duration")
    state.require_fully_specified_outputs()
    state.start()
    give(event_out, "event", ExecutionEvent(state, tuple(events), duration))


@entry
def execution_set_timeout(handle: int, duration: int) -> None:
    state = execution_of(handle)
    state.compilation.require_one_device("ANeuralNetworksExecution_setTimeout")
    state.building()
    state.timeout_ns = duration


@entry
def execution_set_loop_timeout(handle: int, duration: int) -> None:
    state = execution_of(handle)
    state.building()
    state.loop_timeout_ns = min(duration, MAXIMUM_LOOP_TIMEOUT_NS)


@entry
def get_default_loop_timeout(out: int) -> None:
    store(ctypes.c_uint64, out, DEFAULT_LOOP_TIMEOUT_NS)


@entry
def get_maximum_loop_timeout(out: int) -> None:
    store(ctypes.c_uint64, out, MAXIMUM_LOOP_TIMEOUT_NS)


@entry
def execution_burst_compute(handle: int, burst_handle: int) -> None:
    require(execution=handle, burst=burst_handle)
    state = execution_of(handle)
    burst = HANDLES.get(burst_handle, Burst, "burst")
    if burst.compilation is not state.compilation:
        raise BadDataError("the burst and the execution come from different compilations")
    if not burst.busy.acquire(blocking=False):
        raise BadStateError("the burst is running another execution")
    try:
        state.start()
        state.run()
    finally:
        burst.busy.release()


@entry
def execution_get_output_operand_rank(handle: int, index: int, rank: int) -> int | None:
    require(execution=handle, rank=rank)
    shape, sufficient = execution_of(handle).finished_output(index)
    store(ctypes.c_uint32, rank, len(shape))
    return None if sufficient else OutputInsufficientSizeError.code


@entry
def execution_get_output_operand_dimensions(handle: int, index: int,
                                            dimensions: int) -> int | None:
    require(execution=handle, dimensions=dimensions)
    shape, sufficient = execution_of(handle).finished_output(index)
    if not shape:
        raise BadDataError(f"output {index} is a scalar (or of unknown rank): it has no"
                           " dimensions")
    store_array(ctypes.c_uint32, dimensions, shape)
    return None if sufficient else OutputInsufficientSizeError.code


@entry
def execution_set_measure_timing(handle: int, measure: int) -> None:
    state = execution_of(handle)
    if not state.compilation.for_one_device:
        raise BadDataError("timing is measured only for compilations created by"
                           " ANeuralNetworksCompilation_createForDevices with one device")
    state.building()
    state.measure = bool(measure)


@entry
def execution_get_duration(handle: int, code: int, duration: int) -> None:
    require(execution=handle, duration=duration)
    if code not in {int(c) for c in DurationCode}:
        raise BadDataError(f"{code} is not a DurationCode")
    state = execution_of(handle)
    if not state.done:
        raise BadStateError("the execution has not finished")
    store(ctypes.c_uint64, duration, state.durations.get(code, NO_DURATION))


@entry
def event_wait(handle: int) -> None:
    HANDLES.get(handle, Event, "event").wait()


@entry
def event_free(handle: int) -> None:
    event = HANDLES.remove(handle, Event)
    if event is not None:
        event.close()


@entry
def event_create_from_sync_fence_fd(fd: int, out: int) -> None:
    require(event=out)
    give(out, "event", FenceEvent(fd))


@entry
def event_get_sync_fence_fd(handle: int, fd_out: int) -> None:
    require(event=handle, sync_fence_fd=fd_out)
    event = HANDLES.get(handle, Event, "event")
    if not isinstance(event, FenceEvent):
        raise BadDataError("the event is not backed by a sync fence: Linux gives the host's"
                           " executions none")
    store(ctypes.c_int, fd_out, event.duplicate())
