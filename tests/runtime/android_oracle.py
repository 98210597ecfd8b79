"""The oracle: AOSP's Android 11 sample drivers and partitioner, written once more, small.

Independent of torch_nnapi.nnapi.devices and torch_nnapi.runtime.partitioning: it reads
models as the conformance spec files describe them (operations in the order they were
added), transcribes the drivers' getSupportedOperationsImpl and capabilities
(nn/driver/sample/SampleDriver*.cpp) and ExecutionPlan.cpp's findBestDeviceForEachOperation
and partitionTheWorkInternal, including ModelBuilder::sortIntoRunOrder (a stack, not a heap).
A plan is a list of steps ``(device, frozenset of added operation indices, called)``, where
``called`` holds the plans of an interpreted IF's or WHILE's models, by role.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from torch_nnapi.nnapi import Lifetime, Model

CPU = "nnapi-reference"
F32 = np.float32
QUANT8 = ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED")
TENSOR_TYPES = {"TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_SYMM",
                "TENSOR_FLOAT16", "TENSOR_BOOL8", "TENSOR_QUANT8_SYMM_PER_CHANNEL",
                "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_SYMM", "TENSOR_QUANT8_ASYMM_SIGNED"}
LOW_POWER = 0


def _first_type(model: dict[str, Any], op: dict[str, Any], k: int = 0) -> str:
    return _type(model["operands"][op["inputs"][k]])


def _type(operand: dict[str, Any]) -> str:
    return "MODEL" if operand["type"] == "SUBGRAPH" else str(operand["type"])


# getSupportedOperationsImpl of each driver, for one operation; the CPU does everything.
def _float(model: dict[str, Any], op: dict[str, Any]) -> bool:
    return _first_type(model, op) == "TENSOR_FLOAT32"


def _quant(model: dict[str, Any], op: dict[str, Any]) -> bool:
    if op["type"] == "SELECT":
        return _first_type(model, op, 1) in QUANT8
    return _first_type(model, op) in QUANT8


def _minimal(model: dict[str, Any], op: dict[str, Any]) -> bool:
    return op["type"] in ("ADD", "CONCATENATION", "CONV_2D") and _float(model, op)


# name: (supports, operand performance by type with None as the default, relaxed, IF/WHILE)
DRIVERS: dict[str, tuple[Any, dict[str | None, tuple[float, float]], tuple[float, float],
                         tuple[float, float]]] = {
    "nnapi-sample_float_fast": (_float, {None: (1.0, 1.0), "TENSOR_FLOAT32": (0.8, 1.2),
                                         "FLOAT32": (0.8, 1.2)}, (0.7, 1.1), (1.0, 1.0)),
    "nnapi-sample_float_slow": (_float, {None: (1.0, 1.0), "TENSOR_FLOAT32": (1.3, 0.7),
                                         "FLOAT32": (1.3, 0.7)}, (1.2, 0.6), (1.0, 1.0)),
    "nnapi-sample_quant": (_quant, {None: (50.0, 1.0)}, (50.0, 1.0), (50.0, 1.0)),
    "nnapi-sample_minimal": (_minimal, {None: (1.0, 1.0), "TENSOR_FLOAT32": (0.4, 0.5),
                                        "FLOAT32": (0.4, 0.5)}, (0.4, 0.5), (1.0, 1.0)),
    "nnapi-sample_all": (lambda model, op: True, {None: (1.1, 1.1)}, (1.1, 1.1), (1.1, 1.1)),
    CPU: (lambda model, op: True, {None: (1.0, 1.0)}, (1.0, 1.0), (1.0, 1.0)),
}


def supported(device: str, model: dict[str, Any]) -> list[bool]:
    """getSupportedOperations, per operation in added order."""
    return [bool(DRIVERS[device][0](model, op)) for op in model["operations"]]


def device_per_operation(plan: list[Any]) -> dict[int, str]:
    return {i: device for device, ops, _ in plan for i in ops}


# ------------------------------------------------------------------------------------------


def _lifetime(model: dict[str, Any], index: int) -> str:
    operand = model["operands"][index]
    if index in model["inputs"]:
        return "input"
    if index in model["outputs"]:
        return "output"
    if "value" in operand:
        return "model" if _type(operand) == "MODEL" else \
            "none" if not operand["value"] else "constant"
    return "temporary"


def _run_order(model: dict[str, Any]) -> list[int]:
    """sortIntoRunOrder: ready operations on a stack."""
    ops = model["operations"]
    waiting: list[int] = []
    readers: dict[int, list[int]] = {}
    for k, op in enumerate(ops):
        computed = [i for i in op["inputs"] if _lifetime(model, i) in ("temporary", "output")]
        for i in computed:
            readers.setdefault(i, []).append(k)
        waiting.append(len(computed))
    stack = [k for k in range(len(ops)) if waiting[k] == 0]
    order = []
    while stack:
        k = stack.pop()
        order.append(k)
        for o in ops[k]["outputs"]:
            for r in readers.get(o, []):
                waiting[r] -= 1
                if waiting[r] == 0:
                    stack.append(r)
    return order


def _unknown(operand: dict[str, Any]) -> bool:
    dims = operand["dimensions"]
    return _type(operand) in TENSOR_TYPES if not dims else 0 in dims


def _called(model: dict[str, Any], op: dict[str, Any],
            referenced: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The models an IF or WHILE calls; spec files list every referenced model once, at the
    top, and MODEL operands hold positions in that list."""
    roles = (("then", 1), ("else", 2)) if op["type"] == "IF" else (("condition", 0), ("body", 1))
    return [(role, referenced[int(model["operands"][op["inputs"][p]]["value"][0])])
            for role, p in roles]


class Partition:
    def __init__(self, devices: list[str], preference: int, referenced: list[dict[str, Any]]):
        self.devices, self.preference, self.referenced = devices, preference, referenced
        self.failed = False

    def apply(self, perf: tuple[float, float]) -> np.float32:
        return F32(perf[1] if self.preference == LOW_POWER else perf[0])

    def op_perf(self, model: dict[str, Any], op: dict[str, Any], device: str) -> np.float32:
        _, table, relaxed, control = DRIVERS[device]
        if op["type"] == "IF":
            (_, a), (_, b) = _called(model, op, self.referenced)
            return F32(float(self.apply(control)) + 0.5 * float(F32(
                self.model_perf(a, device) + self.model_perf(b, device))))
        if op["type"] == "WHILE":
            (_, a), (_, b) = _called(model, op, self.referenced)
            return F32(F32(self.apply(control) + self.model_perf(a, device))
                       + self.model_perf(b, device))
        t = _first_type(model, op)
        if model.get("relaxComputationFloat32toFloat16") and t in ("FLOAT32", "TENSOR_FLOAT32"):
            return self.apply(relaxed)
        return self.apply(table.get(t, table[None]))

    def model_perf(self, model: dict[str, Any], device: str) -> np.float32:
        total = F32(0)
        for op in model["operations"]:
            total = F32(total + self.op_perf(model, op, device))
        return total

    def cf_unknown(self, model: dict[str, Any], op: dict[str, Any]) -> bool:
        if op["type"] not in ("IF", "WHILE"):
            return False
        if any(_unknown(model["operands"][i]) for i in op["inputs"] + op["outputs"]):
            return True
        return any(_unknown(m["operands"][i]) for _, m in _called(model, op, self.referenced)
                   for i in m["inputs"] + m["outputs"])

    def best(self, model: dict[str, Any], order: list[int]) -> dict[int, int]:
        can = {d: supported(d, model) for d in self.devices}
        best_for = {}
        for k in order:
            op = model["operations"][k]
            choice, value = -1, F32(0)
            if self.cf_unknown(model, op):
                if CPU in self.devices and can[CPU][k]:
                    choice = self.devices.index(CPU)
            else:
                for d, name in enumerate(self.devices):
                    if can[name][k]:
                        perf = self.op_perf(model, op, name)
                        if choice < 0 or perf < value or (perf == value and name == CPU):
                            choice, value = d, perf
            if choice < 0:
                raise LookupError(f"no device for {op['type']}")
            if self.devices[choice] == CPU and op["type"] in ("IF", "WHILE") \
                    and not self.cf_unknown(model, op):
                choice = len(self.devices)
            best_for[k] = choice
        return best_for

    def run(self, model: dict[str, Any], main: bool) -> list[Any]:
        order = _run_order(model)
        best_for = self.best(model, order)
        if main and len(set(best_for.values())) == 1 and best_for[order[0]] < len(self.devices):
            return [(self.devices[best_for[order[0]]], frozenset(order), ())]
        queues: list[deque[int]] = [deque() for _ in range(len(self.devices) + 1)]
        waiting: dict[int, int] = {}
        readers: dict[int, list[int]] = {}
        for k in order:
            op = model["operations"][k]
            computed = [i for i in op["inputs"] if _lifetime(model, i) in ("temporary", "output")]
            for i in computed:
                readers.setdefault(i, []).append(k)
            waiting[k] = len(computed)
            if not computed:
                queues[best_for[k]].append(k)
        producer: dict[int, int] = {}
        plan: list[Any] = []

        def done(k: int) -> None:
            for o in model["operations"][k]["outputs"]:
                producer[o] = len(plan) - 1
                for r in readers.get(o, []):
                    waiting[r] -= 1
                    if waiting[r] == 0:
                        queues[best_for[r]].append(r)

        while any(queues):
            d = max(i for i, q in enumerate(queues) if q)
            if d < len(self.devices):
                plan.append((self.devices[d], set(), ()))
                while queues[d]:
                    k = queues[d].popleft()
                    plan[-1][1].add(k)
                    done(k)
            else:
                while queues[d]:
                    k = queues[d].popleft()
                    called = tuple((role, self.run(m, False))
                                   for role, m in _called(model, model["operations"][k],
                                                           self.referenced))
                    plan.append((CPU, {k}, called))
                    done(k)
        # A temporary an execution step computes and another step reads, of unknown size.
        for s, (_, ops, _) in enumerate(plan):
            for k in ops:
                for i in model["operations"][k]["inputs"]:
                    if producer.get(i, s) != s and not plan[producer[i]][2] and \
                            _lifetime(model, i) == "temporary" and \
                            _unknown(model["operands"][i]):
                        self.failed = True
        return [(device, frozenset(ops), called) for device, ops, called in plan]


def plan(model: dict[str, Any], devices: list[str], preference: int,
         fallback: bool = True) -> list[Any] | str:
    """Android's plan, or how the compilation fails: "BadDataError" when no device can run an
    operation, "OpFailedError" when partitioning fails without the CPU fallback."""
    partition = Partition(devices, preference, model.get("referenced", []))
    try:
        steps = partition.run(model, main=True)
    except LookupError:
        return "BadDataError"
    if partition.failed:
        return [(CPU, frozenset(range(len(model["operations"]))), ())] if fallback \
            else "OpFailedError"
    return steps


def as_spec(model: Model) -> dict[str, Any]:
    """A finished Model as a spec dict (its operations in ``model.operations`` order), with
    every model it calls in its top-level ``referenced`` list: complete, so that the C API
    tests can build it through the library (``CApiBackend``)."""
    called = model.referenced_models()

    def convert(m: Model) -> dict[str, Any]:
        operands = []
        for operand in m.operands:
            entry: dict[str, Any] = {"type": operand.type.name,
                                     "dimensions": list(operand.dimensions),
                                     "scale": operand.scale, "zeroPoint": operand.zero_point}
            if operand.channel_quant is not None:
                entry["channelQuant"] = {"channelDim": operand.channel_quant.channel_dim,
                                         "scales": list(operand.channel_quant.scales)}
            if operand.lifetime is Lifetime.CONSTANT and operand.value is not None:
                entry["value"] = operand.value.ravel().tolist()
            elif operand.lifetime is Lifetime.NO_VALUE:
                entry["value"] = []
            elif operand.lifetime is Lifetime.REFERENCED_MODEL:
                entry["value"] = [next(k for k, c in enumerate(called) if c is operand.model)]
            operands.append(entry)
        return {"operands": operands, "inputs": list(m.inputs), "outputs": list(m.outputs),
                "relaxComputationFloat32toFloat16": m.relax_float32_to_float16,
                "operations": [{"type": op.type.name, "code": int(op.type),
                                "inputs": list(op.inputs),
                                "outputs": list(op.outputs)} for op in m.operations]}

    return {**convert(model), "referenced": [convert(m) for m in called]}
