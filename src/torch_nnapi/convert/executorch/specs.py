"""The NNAPI backend's options as ExecuTorch compile specs (key -> UTF-8 text), and back.

ExecuTorch hands ``preprocess`` the compile specs of the partition (``CompileSpec(key,
value: bytes)``); here every option is one spec whose value is its text, so a spec list
reads in a debugger and survives a .pte round trip. ``nnapi_compile_specs(**options)`` makes
them, checked; ``EtOptions.of_specs`` reads them back, refusing unknown keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ...nnapi.codes import FeatureLevel, PriorityCode
from ...nnapi.devices import DeviceProfile, load_profile
from ..options import FallbackPolicy, preference_code
from .blob import CompileSettings, Flag, Timeouts
from .encode import DEFAULT_NAMED_THRESHOLD

PRIORITIES = {"low": int(PriorityCode.LOW), "medium": int(PriorityCode.MEDIUM),
              "high": int(PriorityCode.HIGH)}


class SpecLike(Protocol):
    """ExecuTorch's CompileSpec (a key and bytes), without importing ExecuTorch here."""

    key: str
    value: bytes


@dataclass(frozen=True, kw_only=True)
class EtOptions:
    """Everything the NNAPI backend's preprocess reads: how to convert and how to compile."""

    settings: CompileSettings = CompileSettings()
    nhwc: bool | None = None  # the 4-D inputs channels-last (None: the converter chooses)
    target_level: int | None = None  # refuse a model that needs a higher feature level
    named_threshold: int = DEFAULT_NAMED_THRESHOLD  # larger constants go to the data map

    @property
    def relax(self) -> bool:
        """Whether NNAPI may compute float32 in float16."""
        return bool(self.settings.flags & Flag.RELAX_FP32_TO_FP16)

    @classmethod
    def of(cls, *, compilation_preference: str | int = "sustained_speed",
           priority: str | int | None = None, compile_timeout_ns: int = 0,
           execute_timeout_ns: int = 0, loop_timeout_ns: int = 0,
           relax_fp32_to_fp16: bool = False, caching: bool = True, burst: bool = True,
           cache_dir: str = "", devices: Sequence[str] = (), nhwc: bool | None = None,
           target_level: int | None = None,
           named_threshold: int = DEFAULT_NAMED_THRESHOLD) -> EtOptions:
        """The options from keywords, checked (each bad value is a ValueError naming it)."""
        for name, value in (("compile_timeout_ns", compile_timeout_ns),
                            ("execute_timeout_ns", execute_timeout_ns),
                            ("loop_timeout_ns", loop_timeout_ns),
                            ("named_threshold", named_threshold)):
            if int(value) < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        for name in devices:
            if not name or "," in name:
                raise ValueError(f"device names are non-empty and hold no comma, got {name!r}")
        flags = (Flag.RELAX_FP32_TO_FP16 * bool(relax_fp32_to_fp16)
                 | Flag.CACHING * bool(caching) | Flag.BURST * bool(burst))
        level = None if target_level is None else int(FeatureLevel(int(target_level)))
        settings = CompileSettings(
            preference=preference_code(compilation_preference), priority=_priority(priority),
            timeouts=Timeouts(compile_ns=int(compile_timeout_ns),
                              execute_ns=int(execute_timeout_ns), loop_ns=int(loop_timeout_ns)),
            flags=int(flags), cache_dir=str(cache_dir), devices=tuple(devices))
        return cls(settings=settings, nhwc=nhwc, target_level=level,
                   named_threshold=int(named_threshold))

    @classmethod
    def of_specs(cls, specs: Iterable[SpecLike]) -> EtOptions:
        """The options a list of compile specs carries (see :func:`spec_pairs`)."""
        keywords: dict[str, object] = {}
        for spec in specs:
            if spec.key not in _PARSERS:
                raise ValueError(f"unknown NNAPI compile spec {spec.key!r} (known:"
                                 f" {', '.join(sorted(_PARSERS))})")
            text = bytes(spec.value).decode()
            try:
                keywords[spec.key] = _PARSERS[spec.key](text)
            except ValueError:
                raise ValueError(f"NNAPI compile spec {spec.key}={text!r} is not valid")\
                    from None
        return cls.of(**keywords)  # type: ignore[arg-type]


# NnapiPartitioner's keywords that choose the regions (the CPU fallback's knobs); the others
# are compile specs.
POLICY_OPTIONS = ("fallback_ops", "min_region_size", "max_regions", "device")


@dataclass(frozen=True, kw_only=True)
class PartitionerOptions:
    """``NnapiPartitioner``'s options: how each delegate converts and compiles (its compile
    specs) and which nodes NNAPI takes (the CPU fallback's policy: ``fallback_ops``,
    ``min_region_size``, ``max_regions``, ``target_level``). A new keyword is routed in
    :meth:`of`: to the compile specs when the runtime reads it, to the policy when it
    decides which nodes the regions take, or to both."""

    specs: tuple[tuple[str, bytes], ...] = ()  # the compile specs, as (key, value) pairs
    compile: EtOptions = EtOptions()
    policy: FallbackPolicy = FallbackPolicy()

    @classmethod
    def of(cls, **options: object) -> PartitionerOptions:
        """The options from keywords, checked (each bad value is a ValueError naming it)."""
        chosen = {k: options.pop(k) for k in POLICY_OPTIONS if k in options}
        pairs = spec_pairs(**options)
        compile_options = EtOptions.of(**options)  # type: ignore[arg-type]  # checked there
        ops = chosen.get("fallback_ops", ())
        if isinstance(ops, str) or not isinstance(ops, Iterable):
            raise ValueError(f"fallback_ops is a list of op kinds such as 'aten::softmax',"
                             f" got {ops!r}")
        maximum = chosen.get("max_regions")
        policy = FallbackPolicy(fallback_ops=frozenset(ops),
                                min_region_size=_int(chosen.get("min_region_size", 1)),
                                max_regions=None if maximum is None else _int(maximum),
                                target_level=compile_options.target_level,
                                device=_device(chosen.get("device")))
        return cls(specs=tuple(pairs), compile=compile_options, policy=policy)


def _device(device: object) -> DeviceProfile | None:
    """``device``: a phone's driver the regions must run whole on (a profile, a shipped
    profile's name or a JSON path; docs/device_profiles.md), or None."""
    if device is None or isinstance(device, DeviceProfile):
        return device
    if not isinstance(device, str | Path):
        raise ValueError(f"device is a device profile, its name or a JSON path, got {device!r}")
    return load_profile(device)


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(value)


def spec_pairs(**options: object) -> list[tuple[str, bytes]]:
    """``(key, value)`` pairs of the given options, checked by :meth:`EtOptions.of` first;
    ``nnapi_compile_specs`` wraps them as ExecuTorch CompileSpecs."""
    EtOptions.of(**options)  # type: ignore[arg-type]
    pairs = []
    for key, value in options.items():
        if isinstance(value, (list, tuple)):
            text = ",".join(str(v) for v in value)
        elif value is None:
            text = ""
        else:
            text = str(value)
        pairs.append((key, text.encode()))
    return pairs


def _priority(value: str | int | None) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, str) and not value.isdigit():
        try:
            return PRIORITIES[value.lower()]
        except KeyError:
            raise ValueError(f"priority must be one of {sorted(PRIORITIES)}, got"
                             f" {value!r}") from None
    return int(PriorityCode(int(value)))


def _bool(text: str) -> bool:
    if text not in ("True", "False", "true", "false", "1", "0"):
        raise ValueError(text)
    return text in ("True", "true", "1")


def _optional_bool(text: str) -> bool | None:
    return None if text in ("", "None") else _bool(text)


def _optional_int(text: str) -> int | None:
    return None if text in ("", "None") else int(text)


def _preference(text: str) -> str | int:
    return int(text) if text.isdigit() else text


_PARSERS: dict[str, Callable[[str], object]] = {
    "compilation_preference": _preference, "priority": lambda t: t or None,
    "compile_timeout_ns": int, "execute_timeout_ns": int, "loop_timeout_ns": int,
    "relax_fp32_to_fp16": _bool, "caching": _bool, "burst": _bool, "cache_dir": str,
    "devices": lambda t: tuple(t.split(",")) if t else (), "nhwc": _optional_bool,
    "target_level": _optional_int, "named_threshold": int,
}
