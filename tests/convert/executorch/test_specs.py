"""The backend's options as compile specs: made checked, read back the same, unknown keys
and bad values refused with a line naming them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from torch_nnapi.convert.executorch.blob import Flag
from torch_nnapi.convert.executorch.specs import EtOptions, PartitionerOptions, spec_pairs
from torch_nnapi.nnapi.devices import ProfileError


@dataclass
class Spec:  # ExecuTorch's CompileSpec, as preprocess receives it
    key: str
    value: bytes


def specs(**options: object) -> list[Spec]:
    return [Spec(k, v) for k, v in spec_pairs(**options)]


def test_options_survive_the_compile_specs() -> None:
    options = dict(compilation_preference="low_power", priority="high",
                   compile_timeout_ns=5, execute_timeout_ns=6, loop_timeout_ns=7,
                   relax_fp32_to_fp16=True, caching=False, burst=False, cache_dir="/c",
                   devices=("a", "b"), nhwc=True, target_level=4, named_threshold=64)
    read = EtOptions.of_specs(specs(**options))
    assert read == EtOptions.of(**options)  # type: ignore[arg-type]
    s = read.settings
    assert (s.preference, s.priority, s.devices, s.flags) == (0, 110, ("a", "b"),
                                                              Flag.RELAX_FP32_TO_FP16)
    assert (read.nhwc, read.target_level, read.named_threshold) == (True, 4, 64)


def test_defaults_cache_and_burst() -> None:
    read = EtOptions.of_specs([])
    assert read.settings.flags == Flag.CACHING | Flag.BURST and read.nhwc is None
    assert EtOptions.of_specs(specs(nhwc=None)).nhwc is None


@pytest.mark.parametrize("options, message", [
    (dict(priority="urgent"), "priority must be one of"),
    (dict(compilation_preference="fastest"), "compilation_preference must be one of"),
    (dict(execute_timeout_ns=-1), "execute_timeout_ns must be >= 0"),
    (dict(devices=("a,b",)), "device names"),
    (dict(target_level=9), "9"),
])
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spec_pairs(**options)


def test_unknown_and_malformed_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown NNAPI compile spec 'speed'"):
        EtOptions.of_specs([Spec("speed", b"1")])
    with pytest.raises(ValueError, match="burst='maybe' is not valid"):
        EtOptions.of_specs([Spec("burst", b"maybe")])


def test_a_device_goes_to_the_regions_policy() -> None:
    options = PartitionerOptions.of(device="nnapi-sample_quant", min_region_size=2)
    assert options.policy.device is not None
    assert options.policy.device.name == "nnapi-sample_quant"
    assert options.policy.min_region_size == 2
    assert PartitionerOptions.of().policy.device is None
    with pytest.raises(ProfileError, match="nnapi-sample_fast: no shipped profile"):
        PartitionerOptions.of(device="nnapi-sample_fast")
    with pytest.raises(ValueError, match="device is a device profile"):
        PartitionerOptions.of(device=3)
