"""The options of a conversion, validated once, as one object the pipeline passes down.

``convert(model, x, **options)`` takes them as keywords (documented on
:func:`~torch_nnapi.convert.api.convert_with_details`); :meth:`ConversionOptions.of` checks
them and gives the front-end, the pipeline, the back-end and the CPU fallback each the part
they read, so no layer re-parses a keyword or passes a dozen of them by position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..nnapi.codes import FeatureLevel, PreferenceCode
from ..nnapi.devices import DeviceProfile, load_profile

PREFERENCES = {
    "low_power": PreferenceCode.LOW_POWER,
    "fast_single_answer": PreferenceCode.FAST_SINGLE_ANSWER,
    "sustained_speed": PreferenceCode.SUSTAINED_SPEED,
}

# Per model input (by index, or in order), the dimensions resolved at load time.
Flexible = Mapping[int, Sequence[int]] | Sequence[Sequence[int]] | None
# Per model input: True (channels-last), False (PyTorch's order) or None (to choose); or one
# value for every 4-D input.
NhwcRequest = None | bool | Sequence[bool | None]
# Per returned tensor, the shape of its buffer (None, or None and -1 entries: as computed).
ReturnShapes = Sequence[Sequence[int | None] | None] | None


def preference_code(value: str | int) -> int:
    """The NNAPI compilation preference a name (or code) stands for."""
    if isinstance(value, str):
        try:
            return int(PREFERENCES[value.lower().replace("-", "_")])
        except KeyError:
            raise ValueError(f"compilation_preference must be one of {sorted(PREFERENCES)},"
                             f" got {value!r}") from None
    return int(PreferenceCode(int(value)))


@dataclass(frozen=True, kw_only=True)
class FallbackPolicy:
    """The knobs of the CPU fallback (see ``convert(..., fallback=True)``)."""

    fallback_ops: frozenset[str] = frozenset()  # op kinds kept on the CPU
    min_region_size: int = 1  # computing NNAPI operations a region needs
    max_regions: int | None = None  # at most this many regions (the largest)
    target_level: int | None = None  # operations above it run on the CPU
    device: DeviceProfile | None = None  # operations this driver cannot run stay on the CPU

    def __post_init__(self) -> None:
        given: frozenset[object] = self.fallback_ops  # what the caller passed, unchecked
        for kind in given:
            if not isinstance(kind, str) or "::" not in kind:
                raise ValueError(f"fallback_ops holds TorchScript op kinds such as"
                                 f" 'aten::softmax', got {kind!r}")
        if int(self.min_region_size) < 0:
            raise ValueError(f"min_region_size must be >= 0, got {self.min_region_size}")
        if self.max_regions is not None and int(self.max_regions) < 1:
            raise ValueError(f"max_regions must be >= 1, got {self.max_regions}")


@dataclass(frozen=True, kw_only=True)
class CompileOptions:
    """How the NNAPI model is compiled on the device (the back-end records them)."""

    preference: int = int(PreferenceCode.SUSTAINED_SPEED)
    relax_fp32_to_fp16: bool = False


@dataclass(frozen=True, kw_only=True)
class ConversionOptions:
    """Every option of one conversion; see ``convert_with_details`` for each."""

    capture: str | None = None
    nhwc: NhwcRequest = None
    flexible: Flexible = None
    compile: CompileOptions = CompileOptions()
    return_shapes: ReturnShapes = None
    target_level: int | None = None
    fallback: bool = False
    policy: FallbackPolicy = FallbackPolicy()

    @classmethod
    def of(cls, *, capture: str | None = None, nhwc: NhwcRequest = None,
           flexible: Flexible = None, compilation_preference: str | int = "sustained_speed",
           relax_fp32_to_fp16: bool = False,
           return_shapes: ReturnShapes = None,
           target_level: int | None = None, fallback: bool = False,
           fallback_ops: Sequence[str] = (), min_region_size: int = 1,
           max_regions: int | None = None,
           device: DeviceProfile | str | None = None) -> ConversionOptions:
        """The options from ``convert``'s keywords, checked (``device``: a profile, or a
        shipped profile's name or a JSON path, loaded here)."""
        if target_level is not None:
            target_level = int(FeatureLevel(int(target_level)))
        compile_options = CompileOptions(preference=preference_code(compilation_preference),
                                         relax_fp32_to_fp16=bool(relax_fp32_to_fp16))
        if not fallback and (fallback_ops or min_region_size != 1 or max_regions is not None):
            raise ValueError("fallback_ops, min_region_size and max_regions need fallback=True")
        if device is not None and not fallback:
            raise ValueError("device needs fallback=True (what the device cannot run stays on"
                             " the CPU)")
        if device is not None and not isinstance(device, DeviceProfile):
            device = load_profile(device)
        policy = FallbackPolicy(fallback_ops=frozenset(fallback_ops),
                                min_region_size=int(min_region_size),
                                max_regions=None if max_regions is None else int(max_regions),
                                target_level=target_level, device=device)
        return cls(capture=capture, nhwc=nhwc, flexible=flexible, compile=compile_options,
                   return_shapes=return_shapes, target_level=target_level,
                   fallback=bool(fallback), policy=policy)
