"""ANeuralNetworksDevice: the drivers TORCH_NNAPI_DEVICES names, then ``nnapi-reference``.

The list is read once, when the library starts (this module is imported by the bridge), and
ordered as Android's DeviceManager orders devices: the drivers, as listed, then the CPU. Every
device computes on the host runtime; the profiles decide what each says about itself and
supports, and so how compilations are partitioned (``runtime.partitioning``).

A list that cannot be read (an unknown name, a bad profile) leaves the library without
devices: every call that needs them (getDeviceCount, getDevice, getSupportedOperations-
ForDevices, Compilation_create, Compilation_createForDevices) fails with
ANEURALNETWORKS_BAD_STATE and logs the ProfileError's one line; everything else works.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import TypeVar

from .. import __version__
from ..nnapi.codes import DeviceType
from ..nnapi.devices import (
    DEVICES_VARIABLE,
    DeviceProfile,
    ProfileError,
    profiles_from_list,
    reference_profile,
)
from ..nnapi.errors import BadDataError, BadStateError
from ._abi import read_array, require, store
from ._calls import HANDLES, Handled, entry


class Device(Handled):
    KIND = "ANeuralNetworksDevice"

    def __init__(self, profile: DeviceProfile):
        self.profile = profile
        self.type: DeviceType = profile.type
        # C strings handed out by pointer must stay valid for the life of the process.
        self.name = ctypes.create_string_buffer(profile.name.encode())
        self.version = ctypes.create_string_buffer(profile.version.encode())


def _read_device_list() -> tuple[tuple[Device, ...], ProfileError | None]:
    try:
        drivers = profiles_from_list(os.environ.get(DEVICES_VARIABLE, ""))
    except ProfileError as e:
        return (), e
    return tuple(Device(p) for p in (*drivers, reference_profile(__version__))), None


_DEVICES, _DEVICE_LIST_ERROR = _read_device_list()
_DEVICE_HANDLES = tuple(HANDLES.add(d) for d in _DEVICES)


def all_devices() -> tuple[Device, ...]:
    """Every device, in Android's order; BAD_STATE when TORCH_NNAPI_DEVICES is bad."""
    if _DEVICE_LIST_ERROR is not None:
        raise BadStateError(f"no devices: {DEVICES_VARIABLE} is bad: {_DEVICE_LIST_ERROR}")
    return _DEVICES


def read_device_list(address: int, count: int) -> tuple[Device, ...]:
    """The devices of a ``const ANeuralNetworksDevice* const*`` list, checked as NNAPI does."""
    require(devices=address)
    all_devices()
    if count == 0:
        raise BadDataError("the device list is empty")
    handles = read_array(ctypes.c_void_p, address, count)
    devices = []
    for i, handle in enumerate(handles):
        device = HANDLES.get(handle or 0, Device, f"devices[{i}]")
        if device in devices:
            raise BadDataError(f"devices[{i}] is listed twice")
        devices.append(device)
    return tuple(devices)


@entry
def get_device_count(count_address: int) -> None:
    require(numDevices=count_address)
    store(ctypes.c_uint32, count_address, len(all_devices()))


@entry
def get_device(index: int, device_address: int) -> None:
    require(device=device_address)
    devices = all_devices()
    if index >= len(devices):
        raise BadDataError(f"device index {index} is out of range (there are {len(devices)})")
    store(ctypes.c_void_p, device_address, _DEVICE_HANDLES[index])


_Value = TypeVar("_Value")


def _store_property(handle: int, address: int, argument: str,
                    ctype: type[ctypes._SimpleCData[_Value]],
                    value_of: Callable[[Device], _Value]) -> None:
    """Writes ``value_of(device)`` as ``ctype`` to the caller's out-argument ``argument``."""
    require(device=handle, **{argument: address})
    store(ctype, address, value_of(HANDLES.get(handle, Device, "device")))


@entry
def device_get_name(handle: int, name_address: int) -> None:
    _store_property(handle, name_address, "name", ctypes.c_void_p,
                    lambda device: ctypes.addressof(device.name))


@entry
def device_get_type(handle: int, type_address: int) -> None:
    _store_property(handle, type_address, "type", ctypes.c_int32, lambda device: int(device.type))


@entry
def device_get_version(handle: int, version_address: int) -> None:
    _store_property(handle, version_address, "version", ctypes.c_void_p,
                    lambda device: ctypes.addressof(device.version))


@entry
def device_get_feature_level(handle: int, level_address: int) -> None:
    _store_property(handle, level_address, "featureLevel", ctypes.c_int64,
                    lambda device: device.profile.feature_level)


@entry
def device_wait(handle: int) -> None:
    """Every device is the host's, which never dies: live as soon as it is known."""
    HANDLES.get(handle, Device, "device")
