"""Device profiles: the shipped ones are AOSP's sample drivers; bad ones fail on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torch_nnapi.nnapi import DeviceType, OperandType
from torch_nnapi.nnapi.devices import (
    FLT_MAX,
    NO_PERFORMANCE_INFO,
    PerformanceInfo,
    ProfileError,
    load_profile,
    parse_profile,
    profiles_from_list,
    shipped_profile,
    shipped_profile_names,
)

from ...runtime.android_oracle import CPU, DRIVERS

SAMPLES = sorted(name for name in DRIVERS if name != CPU)


def test_the_shipped_profiles_are_the_sample_drivers():
    assert list(shipped_profile_names()) == SAMPLES


@pytest.mark.parametrize("name", SAMPLES)
def test_a_shipped_profile_has_its_driver_capabilities(name):
    profile = shipped_profile(name)
    _, table, relaxed, control = DRIVERS[name]
    assert (profile.name, profile.type, profile.feature_level, profile.version) == \
        (name, DeviceType.CPU, 30, "JUST_AN_EXAMPLE")
    assert "nn/driver/sample/" in profile.source
    caps = profile.capabilities
    for t in OperandType:
        if t is not OperandType.MODEL:
            assert caps.performance(t) == PerformanceInfo(*table.get(t.name, table[None]))
    assert caps.relaxed_scalar == caps.relaxed_tensor == PerformanceInfo(*relaxed)
    assert caps.if_performance == caps.while_performance == PerformanceInfo(*control)


def test_performance_is_float32_as_the_hal_gives_it():
    fast = shipped_profile("nnapi-sample_float_fast").capabilities
    assert fast.performance(OperandType.TENSOR_FLOAT32).exec_time == 0.800000011920929


def _profile(**changes: object) -> dict[str, object]:
    data = json.loads(json.dumps({
        "format": "torch-nnapi-device-profile/1", "name": "acme-npu", "type": "ACCELERATOR",
        "featureLevel": 29, "version": "1.0",
        "capabilities": {
            "operandPerformance": {"default": {"execTime": 0.5, "powerUsage": 0.5}},
            "relaxedFloat32toFloat16PerformanceScalar": {"execTime": 0.5, "powerUsage": 0.5},
            "relaxedFloat32toFloat16PerformanceTensor": {"execTime": 0.5, "powerUsage": 0.5},
            "ifPerformance": {"execTime": 1, "powerUsage": 1},
            "whilePerformance": {"execTime": 1, "powerUsage": 1}},
        "supportedOperations": [{"operations": ["CONV_2D"]}]}))
    data.update(changes)
    return data


def test_a_user_profile_reads_from_a_file(tmp_path: Path):
    path = tmp_path / "npu.json"
    data = _profile()
    data["capabilities"]["operandPerformance"] = {  # type: ignore[index]
        "TENSOR_QUANT8_ASYMM": {"execTime": 0.1, "powerUsage": 0.2}}
    path.write_text(json.dumps(data))
    profile = load_profile(str(path))
    assert (profile.name, profile.type, profile.feature_level) == \
        ("acme-npu", DeviceType.ACCELERATOR, 29)
    caps = profile.capabilities
    assert caps.performance(OperandType.TENSOR_QUANT8_ASYMM) == PerformanceInfo(0.1, 0.2)
    # No default: the types left out are as slow as Android's "no PerformanceInfo".
    assert caps.performance(OperandType.TENSOR_FLOAT32) == NO_PERFORMANCE_INFO
    assert NO_PERFORMANCE_INFO.exec_time == FLT_MAX


def _error(data: object) -> str:
    with pytest.raises(ProfileError) as caught:
        parse_profile(json.dumps(data) if not isinstance(data, str) else data, "npu.json")
    message = str(caught.value)
    assert "\n" not in message
    return message


def _rule(**rule: object) -> dict[str, object]:
    return _profile(supportedOperations=[{"operations": ["CONV_2D"], **rule}])


@pytest.mark.parametrize("data, message", [
    ("{", "npu.json: not valid JSON: Expecting property name enclosed in double quotes at"
          " line 1 column 2"),
    (_profile(format="v2"), "npu.json: format: expected 'torch-nnapi-device-profile/1', got"
                            " 'v2'"),
    (_profile(type="NPU"), "npu.json: type: expected ACCELERATOR, GPU, CPU or OTHER, got 'NPU'"),
    (_profile(featureLevel=31), "npu.json: featureLevel: 31 is not a feature level of NNAPI 1.0"
                                " to 1.3 (one of 27, 28, 29, 30)"),
    (_profile(name="nnapi-reference"), "npu.json: name: nnapi-reference is Android's CPU device,"
                                       " always present; a profile describes a driver"),
    (_profile(speed=3), "npu.json: speed: unknown field (expected one of format, name, type,"
                        " featureLevel, version, source, capabilities, supportedOperations,"
                        " comment)"),
    ({k: v for k, v in _profile().items() if k != "version"}, "npu.json: missing field"
                                                              " 'version'"),
    (_profile(supportedOperations=[{"operations": ["CONV2D"]}]),
     "npu.json: supportedOperations[0].operations[0]: unknown operation 'CONV2D'"),
    (_rule(inputs={"input": {"type": "TENSOR_QUANT8"}}),
     "npu.json: supportedOperations[0].inputs.input.type: unknown operand type"
     " 'TENSOR_QUANT8'"),
    (_rule(inputs={"dilation": {"value": 1}}),
     "npu.json: supportedOperations[0].inputs.dilation: CONV_2D has no input named 'dilation'"
     " (its inputs: bias, dilation_h, dilation_w, filter, fuse_code, input, nchw, pad_bottom,"
     " pad_left, pad_right, pad_top, padding, stride_h, stride_w)"),
    (_profile(supportedOperations=[{"operations": ["ADD"], "layout": "NHWC"}]),
     "npu.json: supportedOperations[0].layout: ADD has no input named 'nchw' (its inputs:"
     " fuse_code, input0, input1)"),
    (_rule(inputs={"input": {"scale": {"min": 2, "max": 1}}}),
     "npu.json: supportedOperations[0].inputs.input.scale: min 2 is above max 1"),
    (_rule(inputs={"input": {"rank": 9}}),
     "npu.json: supportedOperations[0].inputs.input.rank: 9 is outside [0, 6]"),
    (_rule(supported="yes"),
     "npu.json: supportedOperations[0].supported: expected true or false, got the string"
     " 'yes'"),
])
def test_a_bad_profile_names_its_field(data, message):
    assert _error(data) == message


@pytest.mark.parametrize("where, value, problem", [
    ("execTime", -1, "-1 is not a positive finite number"),
    ("execTime", 0, "0 is not a positive finite number"),
    ("powerUsage", "fast", "expected a number, got the string 'fast'"),
])
def test_impossible_performance_is_refused(where, value, problem):
    data = _profile()
    data["capabilities"]["ifPerformance"][where] = value  # type: ignore[index]
    assert _error(data) == f"npu.json: capabilities.ifPerformance.{where}: {problem}"


def test_an_unknown_operand_type_in_the_performance_table():
    data = _profile()
    data["capabilities"]["operandPerformance"]["MODEL"] = {  # type: ignore[index]
        "execTime": 1, "powerUsage": 1}
    assert _error(data) == ("npu.json: capabilities.operandPerformance.MODEL: unknown operand"
                            " type 'MODEL' (expected an operand type other than MODEL, or"
                            " 'default')")


def test_device_lists(tmp_path: Path):
    path = tmp_path / "npu.json"
    path.write_text(json.dumps(_profile()))
    listed = profiles_from_list(f"nnapi-sample_quant, {path},nnapi-reference")
    assert [p.name for p in listed] == ["nnapi-sample_quant", "acme-npu"]
    assert profiles_from_list("") == ()
    with pytest.raises(ProfileError, match="^nnapi-sample_fast: no shipped profile has this"
                                           " name"):
        profiles_from_list("nnapi-sample_fast")
    with pytest.raises(ProfileError, match="^TORCH_NNAPI_DEVICES: entry 1: a second device"
                                           " named 'nnapi-sample_quant'$"):
        profiles_from_list("nnapi-sample_quant,nnapi-sample_quant")
    with pytest.raises(ProfileError, match="^TORCH_NNAPI_DEVICES: entry 1: is empty$"):
        profiles_from_list("nnapi-sample_quant,,nnapi-sample_all")
    with pytest.raises(ProfileError, match="cannot read it"):
        profiles_from_list(str(tmp_path / "missing.json"))
