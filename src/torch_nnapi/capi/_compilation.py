"""ANeuralNetworksCompilation and ANeuralNetworksBurst over ``runtime.Compilation``.

Finishing partitions the model across the devices as Android 11 does
(``runtime.partitioning``): Compilation_create over every device with the CPU fallback,
createForDevices over the devices given without it; the plan is kept (``plan``). The priority
is recorded and has no effect (the host runs one application's executions as they come); a
compilation timeout is honoured by failing a finish that took longer.
"""

from __future__ import annotations

import threading
import time

from ..nnapi.codes import BYTE_SIZE_OF_CACHE_TOKEN, PreferenceCode, PriorityCode, ResultCode
from ..nnapi.errors import BadDataError, BadStateError, NnapiError
from ..nnapi.model import Model
from ..runtime import Compilation
from ..runtime.partitioned import compile_for_devices
from ..runtime.partitioning import Plan
from ._abi import read_bytes, read_string, require
from ._calls import HANDLES, Handled, entry, give
from ._device import Device, all_devices, read_device_list
from ._model import model_of


class CompilationState(Handled):
    KIND = "ANeuralNetworksCompilation"

    def __init__(self, model: Model, devices: tuple[Device, ...] | None):
        self.model = model
        self.devices = devices  # None: every device, with the CPU fallback (Compilation_create)
        self.preference = PreferenceCode.FAST_SINGLE_ANSWER
        self.priority = PriorityCode.DEFAULT
        self.timeout_ns = 0  # 0: no limit on finishing
        # Recorded but unused: compiling for the host is shape inference, nothing to cache.
        self.cache_dir: str | None = None
        self.cache_token: bytes | None = None
        self.finished = False
        self.compiled: Compilation | None = None
        self.plan: Plan | None = None  # Android's plan, once finished

    @property
    def for_one_device(self) -> bool:
        """Created by createForDevices with one device: executions may measure timing."""
        return self.devices is not None and len(self.devices) == 1

    def modifiable(self) -> None:
        if self.finished:
            raise BadStateError("the compilation is finished and can no longer change")

    def require_one_device(self, call: str) -> None:
        """Timeouts, like timing, need a compilation for exactly one device."""
        if not self.for_one_device:
            raise BadDataError(f"{call} needs a compilation created by"
                               " ANeuralNetworksCompilation_createForDevices with one device")

    def finish(self) -> None:
        self.modifiable()
        self.finished = True
        start = time.monotonic_ns()
        devices = all_devices() if self.devices is None else self.devices
        compiled, plan = compile_for_devices(self.model, [d.profile for d in devices],
                                             self.preference, fallback=self.devices is None)
        elapsed = time.monotonic_ns() - start
        if self.timeout_ns and elapsed > self.timeout_ns:
            raise NnapiError(f"compiling took {elapsed} ns, longer than the compilation's"
                             f" timeout of {self.timeout_ns} ns",
                             ResultCode.MISSED_DEADLINE_PERSISTENT)
        self.compiled, self.plan = compiled, plan

    def ready(self) -> Compilation:
        if not self.finished:
            raise BadStateError("the compilation is not finished")
        if self.compiled is None:
            raise BadStateError("the compilation is invalid: finishing it failed")
        return self.compiled


class Burst(Handled):
    KIND = "ANeuralNetworksBurst"

    def __init__(self, compilation: CompilationState):
        self.compilation = compilation
        self.busy = threading.Lock()  # one execution at a time per burst


def compilation_of(handle: int, argument: str = "compilation") -> CompilationState:
    return HANDLES.get(handle, CompilationState, argument)


@entry
def compilation_create(model: int, out: int) -> None:
    require(model=model, compilation=out)
    state = CompilationState(model_of(model).finished(), None)
    all_devices()
    give(out, "compilation", state)


@entry
def compilation_create_for_devices(model: int, devices: int, count: int, out: int) -> None:
    require(model=model, devices=devices, compilation=out)
    chosen = read_device_list(devices, count)
    give(out, "compilation", CompilationState(model_of(model).finished(), chosen))


@entry
def compilation_free(handle: int) -> None:
    HANDLES.remove(handle, CompilationState)


@entry
def compilation_set_preference(handle: int, preference: int) -> None:
    compilation = compilation_of(handle)
    compilation.modifiable()
    try:
        compilation.preference = PreferenceCode(preference)
    except ValueError:
        raise BadDataError(f"{preference} is not a PreferenceCode") from None


@entry
def compilation_set_caching(handle: int, cache_dir: int, token: int) -> None:
    require(compilation=handle, cacheDir=cache_dir, token=token)
    compilation = compilation_of(handle)
    compilation.modifiable()
    compilation.cache_dir = read_string(cache_dir)
    compilation.cache_token = read_bytes(token, BYTE_SIZE_OF_CACHE_TOKEN)


@entry
def compilation_set_priority(handle: int, priority: int) -> None:
    compilation = compilation_of(handle)
    compilation.modifiable()
    try:
        compilation.priority = PriorityCode(priority)
    except ValueError:
        raise BadDataError(f"{priority} is not a PriorityCode") from None


@entry
def compilation_set_timeout(handle: int, duration: int) -> None:
    compilation = compilation_of(handle)
    compilation.require_one_device("ANeuralNetworksCompilation_setTimeout")
    compilation.modifiable()
    compilation.timeout_ns = duration


@entry
def compilation_finish(handle: int) -> None:
    compilation_of(handle).finish()


@entry
def burst_create(compilation: int, out: int) -> None:
    require(compilation=compilation, burst=out)
    state = compilation_of(compilation)
    state.ready()
    give(out, "burst", Burst(state))


@entry
def burst_free(handle: int) -> None:
    HANDLES.remove(handle, Burst)

