"""A device profile: what one NNAPI driver tells Android about itself, read from JSON.

Android's runtime asks each driver for its name, type, feature level, version string,
``Capabilities`` (how fast and how frugal it is per operand type, relative to the CPU) and,
per model, which operations it supports; its partitioner decides from those answers alone.
A profile records them, so the partitioner can be replayed before the model reaches a phone.
docs/device_profiles.md describes the format.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..codes import DeviceType, OperandType
from ..model import Model
from ._fields import Field
from .errors import ProfileError
from .rules import SupportRule, read_rules, supported_operations, why_unsupported

FORMAT = "torch-nnapi-device-profile/1"
# ANeuralNetworksDevice_getFeatureLevel's answers for drivers of NNAPI 1.0 to 1.3.
FEATURE_LEVELS = (27, 28, 29, 30)
# Android's answer for an operand type a driver gives no performance for (FLT_MAX).
FLT_MAX = float(np.finfo(np.float32).max)
# Performance is per operand type; MODEL (Android's SUBGRAPH) has IF and WHILE's instead.
PERFORMANCE_TYPES = tuple(t for t in OperandType if t is not OperandType.MODEL)


@dataclass(frozen=True)
class PerformanceInfo:
    """Android's PerformanceInfo: time and power relative to the CPU (1.0), lower is better.
    Values are float32, as the HAL's are, so comparisons tie exactly as on a phone."""

    exec_time: float
    power_usage: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "exec_time", float(np.float32(self.exec_time)))
        object.__setattr__(self, "power_usage", float(np.float32(self.power_usage)))


NO_PERFORMANCE_INFO = PerformanceInfo(FLT_MAX, FLT_MAX)
CPU_PERFORMANCE = PerformanceInfo(1.0, 1.0)


@dataclass(frozen=True)
class Capabilities:
    """Android's V1_3::Capabilities: performance per operand type, for float32 computed as
    float16 (relaxed), and for IF and WHILE."""

    operand_performance: Mapping[OperandType, PerformanceInfo]
    relaxed_scalar: PerformanceInfo
    relaxed_tensor: PerformanceInfo
    if_performance: PerformanceInfo
    while_performance: PerformanceInfo

    def performance(self, operand_type: OperandType) -> PerformanceInfo:
        """The performance for ``operand_type``; FLT_MAX for a type the profile leaves out."""
        return self.operand_performance.get(operand_type, NO_PERFORMANCE_INFO)

    @classmethod
    def uniform(cls, perf: PerformanceInfo) -> Capabilities:
        return cls({t: perf for t in PERFORMANCE_TYPES}, perf, perf, perf, perf)


@dataclass(frozen=True)
class DeviceProfile:
    """One NNAPI device as Android sees it. ``source`` says where the profile's facts come
    from (a shipped profile cites the AOSP file it reproduces)."""

    name: str
    type: DeviceType
    feature_level: int
    version: str
    capabilities: Capabilities
    rules: tuple[SupportRule, ...] = field(repr=False)
    source: str = ""

    def supported_operations(self, model: Model) -> list[bool]:
        """Per operation of the finished ``model`` (in ``model.operations`` order), whether
        the driver supports it: its getSupportedOperations answer."""
        return supported_operations(self.rules, model)

    def why_unsupported(self, model: Model, index: int) -> str:
        """The rule that turns operation ``index`` of ``model`` down, in one line ("" when
        the driver supports it)."""
        return why_unsupported(self.rules, model, index)


REFERENCE_NAME = "nnapi-reference"


def reference_profile(version: str = "") -> DeviceProfile:
    """Android's CPU fallback device (nn/runtime/Manager.cpp, CpuDevice): every operation,
    performance 1.0 for everything by definition; here the host runtime. It is always
    present, the last device. ``version``: what getVersion answers (Android: the build)."""
    every = SupportRule(None, (), None, True)
    return DeviceProfile(REFERENCE_NAME, DeviceType.CPU, 30, version,
                         Capabilities.uniform(CPU_PERFORMANCE), (every,),
                         "nn/runtime/Manager.cpp (CpuDevice)")


# ------------------------------------------------------------------------------------------
# Reading

_TOP_FIELDS = ("format", "name", "type", "featureLevel", "version", "source", "capabilities",
               "supportedOperations", "comment")
_CAPABILITY_FIELDS = ("operandPerformance", "relaxedFloat32toFloat16PerformanceScalar",
                      "relaxedFloat32toFloat16PerformanceTensor", "ifPerformance",
                      "whilePerformance")
_DEFAULT = "default"


def parse_profile(text: str, where: str) -> DeviceProfile:
    """A profile from its JSON text; ``where`` names it in errors (a path, a shipped name)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProfileError(where, "", f"not valid JSON: {e.msg} at line {e.lineno} column"
                                      f" {e.colno}") from None
    return read_profile(Field(where, "", data))


def read_profile(root: Field) -> DeviceProfile:
    members = root.members(_TOP_FIELDS, required=("format", "name", "type", "featureLevel",
                                                  "version", "capabilities",
                                                  "supportedOperations"))
    if members["format"].value != FORMAT:
        raise members["format"].error(f"expected {FORMAT!r}, got {members['format'].value!r}")
    name = members["name"].string()
    if name == REFERENCE_NAME:
        raise members["name"].error(f"{REFERENCE_NAME} is Android's CPU device, always present;"
                                    " a profile describes a driver")
    type_name = members["type"].string()
    if type_name not in ("ACCELERATOR", "GPU", "CPU", "OTHER"):
        raise members["type"].error(f"expected ACCELERATOR, GPU, CPU or OTHER, got"
                                    f" {type_name!r}")
    level = members["featureLevel"].integer()
    if level not in FEATURE_LEVELS:
        raise members["featureLevel"].error(f"{level} is not a feature level of NNAPI 1.0 to"
                                            f" 1.3 (one of {', '.join(map(str, FEATURE_LEVELS))})")
    return DeviceProfile(
        name=name, type=DeviceType[type_name], feature_level=level,
        version=members["version"].string(),
        capabilities=_read_capabilities(members["capabilities"]),
        rules=read_rules(members["supportedOperations"]),
        source=members["source"].string() if "source" in members else "")


def _read_capabilities(field: Field) -> Capabilities:
    members = field.members(_CAPABILITY_FIELDS, required=_CAPABILITY_FIELDS)
    per_type = members["operandPerformance"]
    listed: dict[str, PerformanceInfo] = {}
    for key, value in per_type.entries():
        if key != _DEFAULT and (key not in OperandType.__members__ or key == "MODEL"):
            raise value.error(f"unknown operand type {key!r} (expected an operand type other"
                              f" than MODEL, or {_DEFAULT!r})")
        listed[key] = _read_performance(value)
    default = listed.pop(_DEFAULT, None)
    table = {t: listed.get(t.name, default) for t in PERFORMANCE_TYPES}
    return Capabilities(
        {t: perf for t, perf in table.items() if perf is not None},
        _read_performance(members["relaxedFloat32toFloat16PerformanceScalar"]),
        _read_performance(members["relaxedFloat32toFloat16PerformanceTensor"]),
        _read_performance(members["ifPerformance"]),
        _read_performance(members["whilePerformance"]))


def _read_performance(field: Field) -> PerformanceInfo:
    members = field.members(("execTime", "powerUsage"), required=("execTime", "powerUsage"))
    return PerformanceInfo(members["execTime"].number(positive=True),
                           members["powerUsage"].number(positive=True))


def load_profile_file(path: str | Path) -> DeviceProfile:
    """A profile from a JSON file; an unreadable file is a ProfileError too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProfileError(str(path), "", f"cannot read it ({e})") from None
    return parse_profile(text, str(path))
