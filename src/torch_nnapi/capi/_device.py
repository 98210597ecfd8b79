"""The one device: the host CPU running torch-nnapi's runtime, at feature level 30."""

from __future__ import annotations

import ctypes

from .. import __version__
from ..nnapi.codes import DeviceType, FeatureLevel
from ..nnapi.errors import BadDataError
from ._abi import read_array, require, store
from ._calls import HANDLES, Handled, entry


class Device(Handled):
    KIND = "ANeuralNetworksDevice"

    def __init__(self, name: str, device_type: DeviceType, feature_level: FeatureLevel,
                 version: str):
        self.type = device_type
        self.feature_level = feature_level
        # C strings handed out by pointer must stay valid for the life of the process.
        self.name = ctypes.create_string_buffer(name.encode())
        self.version = ctypes.create_string_buffer(version.encode())


HOST_CPU = Device("torch-nnapi-cpu", DeviceType.CPU, FeatureLevel.ANDROID_11, __version__)
DEVICES = (HOST_CPU,)
_DEVICE_HANDLES = tuple(HANDLES.add(d) for d in DEVICES)


def read_device_list(address: int, count: int) -> tuple[Device, ...]:
    """The devices of a ``const ANeuralNetworksDevice* const*`` list, checked as NNAPI does."""
    require(devices=address)
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
    store(ctypes.c_uint32, count_address, len(DEVICES))


@entry
def get_device(index: int, device_address: int) -> None:
    require(device=device_address)
    if index >= len(DEVICES):
        raise BadDataError(f"device index {index} is out of range (there are {len(DEVICES)})")
    store(ctypes.c_void_p, device_address, _DEVICE_HANDLES[index])


def _store_property(handle: int, address: int, argument: str, ctype, value_of) -> None:
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
                    lambda device: device.feature_level.api_level)


@entry
def device_wait(handle: int) -> None:
    """The host's device never dies, so it is live as soon as it is known."""
    HANDLES.get(handle, Device, "device")
