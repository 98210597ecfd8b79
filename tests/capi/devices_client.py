"""What libneuralnetworks.so answers about models on the devices TORCH_NNAPI_DEVICES lists.

Run as ``python -m tests.capi.devices_client SPECS.json`` in a process of its own (the
library reads the list when it starts). SPECS.json holds ``specs`` (spec dicts by name,
operations in the order they are added) and ``run`` (the names to execute on random inputs).
For each model, built through the C API, it prints JSON: the device names in the library's
order; each device's getSupportedOperationsForDevices answer; for each preference, the plan
Compilation_create and createForDevices (each device alone) make, with operation indices in
added order, or the result code finishing gave; and for the models run, whether each
compilation's outputs equal those of nnapi-reference alone, byte for byte.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from torch_nnapi.capi import compilation_plan
from torch_nnapi.capi._model import model_of
from torch_nnapi.capi.cts_backend import CApiBackend, PreparedModel
from torch_nnapi.conformance.spec import referenced_model_order
from torch_nnapi.nnapi import PreferenceCode, ResultCode
from torch_nnapi.runtime.partitioning import Step

from ..runtime.partition_support import inputs_for


def _devices(lib: ctypes.CDLL) -> dict[str, int]:
    count = ctypes.c_uint32()
    lib.ANeuralNetworks_getDeviceCount(ctypes.byref(count))
    handles = {}
    for i in range(count.value):
        device, name = ctypes.c_void_p(), ctypes.c_char_p()
        lib.ANeuralNetworks_getDevice(i, ctypes.byref(device))
        lib.ANeuralNetworksDevice_getName(device, ctypes.byref(name))
        handles[(name.value or b"").decode()] = device.value or 0
    return handles


def _steps(steps: tuple[Step, ...], added_positions: list[int]) -> list[Any]:
    return [[s.device, sorted(added_positions[i] for i in s.operations),
             [[c.role, _steps(c.plan.steps, c.model.added_positions)] for c in s.called]]
            for s in steps]


def _model_report(backend: CApiBackend, devices: dict[str, int], spec: dict[str, Any],
                  run: bool) -> dict[str, Any]:
    lib = backend.lib
    prepared = PreparedModel(spec["operands"], spec["inputs"], spec["outputs"])
    for k in referenced_model_order(spec):  # type: ignore[arg-type]  # a spec dict
        prepared.referenced[k] = backend._build(prepared, spec["referenced"][k])
    model = backend._build(prepared, spec)  # type: ignore[arg-type]  # a spec dict
    finished = model_of(model.value or 0).model
    count = len(spec["operations"])
    supported = {}
    for name, handle in devices.items():
        answer = (ctypes.c_bool * count)()
        lib.ANeuralNetworksModel_getSupportedOperationsForDevices(
            model, (ctypes.c_void_p * 1)(handle), 1, answer)
        supported[name] = list(answer)
    inputs: list[np.ndarray | None] = list(inputs_for(finished))
    plans: dict[str, Any] = {}
    reference: list[np.ndarray] | None = None
    equal = True
    for label in ("nnapi-reference", "all", *devices):
        for preference in PreferenceCode:
            compilation = ctypes.c_void_p()
            if label == "all":
                lib.ANeuralNetworksCompilation_create(model, ctypes.byref(compilation))
            else:
                lib.ANeuralNetworksCompilation_createForDevices(
                    model, (ctypes.c_void_p * 1)(devices[label]), 1, ctypes.byref(compilation))
            lib.ANeuralNetworksCompilation_setPreference(compilation, int(preference))
            code = lib.ANeuralNetworksCompilation_finish(compilation)
            key = f"{label}/{preference.name}"
            if code != ResultCode.NO_ERROR:
                plans[key] = ResultCode(code).name
            else:
                plans[key] = _steps(compilation_plan(compilation).steps,
                                    finished.added_positions)
            if code == ResultCode.NO_ERROR and run:
                prepared.compilation = compilation
                outputs = backend.execute(prepared, inputs)
                reference = outputs if reference is None else reference
                equal &= all(a.tobytes() == b.tobytes() for a, b in zip(outputs, reference,
                                                                         strict=True))
            lib.ANeuralNetworksCompilation_free(compilation)
    prepared.compilation = ctypes.c_void_p()
    return {"supported": supported, "plans": plans, "equal": equal}


def main(path: str) -> None:
    given = json.loads(Path(path).read_text())
    backend = CApiBackend()
    devices = _devices(backend.lib)
    report = {"devices": list(devices),
              "models": {name: _model_report(backend, devices, spec, name in given["run"])
                         for name, spec in given["specs"].items()}}
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
