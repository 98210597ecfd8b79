"""ANeuralNetworksCompilation and ANeuralNetworksBurst over ``runtime.Compilation``."""

from __future__ import annotations

import threading

from ..nnapi.codes import BYTE_SIZE_OF_CACHE_TOKEN, PreferenceCode
from ..nnapi.errors import BadDataError, BadStateError
from ..nnapi.model import Model
from ..runtime import Compilation
from ._abi import read_bytes, read_string, require
from ._calls import HANDLES, Handled, entry, give
from ._device import Device, read_device_list
from ._model import model_of


class CompilationState(Handled):
    KIND = "ANeuralNetworksCompilation"

    def __init__(self, model: Model, devices: tuple[Device, ...] | None):
        self.model = model
        self.devices = devices  # None: the runtime picks (Compilation_create)
        self.preference = PreferenceCode.FAST_SINGLE_ANSWER
        # Recorded but unused: compiling for the host is shape inference, nothing to cache.
        self.cache_dir: str | None = None
        self.cache_token: bytes | None = None
        self.finished = False
        self.compiled: Compilation | None = None

    @property
    def for_one_device(self) -> bool:
        """Created by createForDevices with one device: executions may measure timing."""
        return self.devices is not None and len(self.devices) == 1

    def modifiable(self) -> None:
        if self.finished:
            raise BadStateError("the compilation is finished and can no longer change")

    def finish(self) -> None:
        self.modifiable()
        self.finished = True
        self.compiled = Compilation(self.model, preference=self.preference)

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
    give(out, "compilation", CompilationState(model_of(model).finished(), None))


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

