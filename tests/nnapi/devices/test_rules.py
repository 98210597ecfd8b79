"""Support rules: operations and their operands, by signature name or position."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.nnapi.devices import DeviceProfile, parse_profile

Q8 = OperandType.TENSOR_QUANT8_ASYMM


def _supports(rules: Any, model: Model) -> list[bool]:
    return _profile_of(rules).supported_operations(model)


def _conv(input_type: OperandType = Q8, *, nchw: bool | None = None, dilation: int | None = None,
          scale: float = 0.5, constant_filter: bool = True) -> Model:
    """One CONV_2D with implicit padding; the layout and dilation given only when asked."""
    m = Model()
    quant = input_type == Q8
    bias_type = OperandType.TENSOR_INT32 if quant else input_type
    x = m.add_operand(input_type, (1, 4, 4, 2), scale if quant else 0.0, 0)
    w = m.add_operand(input_type, (3, 1, 1, 2), 0.25 if quant else 0.0, 0)
    if constant_filter:
        m.set_operand_value(w, np.ones((3, 1, 1, 2)))
    b = m.add_constant(bias_type, np.zeros(3), scale * 0.25 if quant else 0.0)
    args = [x, w, b, m.add_scalar(OperandType.INT32, 1), m.add_scalar(OperandType.INT32, 1),
            m.add_scalar(OperandType.INT32, 1), m.add_scalar(OperandType.INT32, 0)]
    if nchw is not None or dilation is not None:
        args.append(m.add_scalar(OperandType.BOOL, bool(nchw)))
    if dilation is not None:
        args += [m.add_scalar(OperandType.INT32, dilation)] * 2
    shape = (1, 3, 4, 2) if nchw else (1, 4, 4, 3)
    y = m.add_operand(input_type, shape, 1.0 if quant else 0.0, 0)
    m.add_operation(OperationType.CONV_2D, args, [y])
    m.identify_inputs_and_outputs([x] + ([] if constant_filter else [w]), [y])
    return m.finish()


NHWC_QUANT_DILATION_1 = [{"operations": ["CONV_2D"], "layout": "NHWC",
                          "inputs": {"input": {"type": "TENSOR_QUANT8_ASYMM"},
                                     "dilation_w": {"value": 1},
                                     "dilation_h": {"value": 1}}}]


def test_conv_quant8_nhwc_dilation_1():
    assert _supports(NHWC_QUANT_DILATION_1, _conv()) == [True]  # layout, dilation defaulted
    assert _supports(NHWC_QUANT_DILATION_1, _conv(nchw=False, dilation=1)) == [True]
    assert _supports(NHWC_QUANT_DILATION_1, _conv(nchw=True)) == [False]
    assert _supports(NHWC_QUANT_DILATION_1, _conv(dilation=2)) == [False]
    assert _supports(NHWC_QUANT_DILATION_1, _conv(OperandType.TENSOR_FLOAT32)) == [False]


def test_quantization_parameters_rank_and_constants():
    scaled = [{"operations": ["CONV_2D"], "inputs": {"input": {"scale": {"max": 0.5},
                                                               "zeroPoint": 0, "rank": 4}}}]
    assert _supports(scaled, _conv(scale=0.5)) == [True]
    assert _supports(scaled, _conv(scale=0.75)) == [False]
    constant = [{"operations": ["CONV_2D"], "inputs": {"filter": {"constant": True},
                                                       "input": {"maxRank": 3}}}]
    assert _supports(constant, _conv()) == [False]  # rank 4
    constant[0]["inputs"]["input"] = {"fullySpecified": True}  # type: ignore[index]
    assert _supports(constant, _conv()) == [True]
    assert _supports(constant, _conv(constant_filter=False)) == [False]


def test_the_first_matching_rule_decides():
    rules: list[dict[str, Any]] = [
        {"operations": ["CONV_2D"], "layout": "NCHW", "supported": False},
             {"operations": "*", "inputs": {"0": {"type": "TENSOR_QUANT8_ASYMM"}}}]
    assert _supports(rules, _conv()) == [True]
    assert _supports(rules, _conv(nchw=True)) == [False]
    assert _supports(rules[1:], _conv(OperandType.TENSOR_FLOAT32)) == [False]


def _concatenation(types: list[OperandType]) -> Model:
    m = Model()
    parts = [m.add_operand(t, (1, 2), 0.5 if t == Q8 else 0.0, 0) for t in types]
    out = m.add_operand(types[0], (len(types), 2), 0.5 if types[0] == Q8 else 0.0, 0)
    m.add_operation(OperationType.CONCATENATION, [*parts, m.add_scalar(OperandType.INT32, 0)],
                    [out])
    m.identify_inputs_and_outputs(parts, [out])
    return m.finish()


def test_a_variadic_name_holds_for_every_operand():
    rules = [{"operations": ["CONCATENATION"], "inputs": {"inputs": {"rank": 2},
                                                          "axis": {"value": [0, -2]}}}]
    assert _supports(rules, _concatenation([OperandType.TENSOR_FLOAT32] * 3)) == [True]
    rules[0]["inputs"]["inputs"] = {"scale": 0.5}  # type: ignore[index]
    assert _supports(rules, _concatenation([Q8, Q8])) == [True]
    assert _supports(rules, _concatenation([OperandType.TENSOR_FLOAT32] * 2)) == [False]


def test_a_value_the_driver_cannot_see_does_not_match():
    m = Model()
    x = m.add_operand(OperandType.TENSOR_FLOAT32, (2, 2))
    fuse = m.add_operand(OperandType.INT32)
    y = m.add_operand(OperandType.TENSOR_FLOAT32, (2, 2))
    m.add_operation(OperationType.ADD, [x, x, fuse], [y])
    m.identify_inputs_and_outputs([x, fuse], [y])
    m.finish()
    assert _supports([{"operations": ["ADD"], "inputs": {"fuse_code": {"value": 0}}}], m) \
        == [False]
    assert _supports([{"operations": ["ADD"], "inputs": {"fuse_code": {"constant": False}}}],
                     m) == [True]


def test_a_name_some_operations_lack_fails_the_rule_for_them():
    rules = [{"operations": "*", "inputs": {"filter": {"constant": True}}}]
    assert _supports(rules, _conv()) == [True]
    assert _supports(rules, _concatenation([Q8])) == [False]


def _profile_of(rules: Any) -> DeviceProfile:
    one = {"execTime": 1, "powerUsage": 1}
    return parse_profile(json.dumps({
        "format": "torch-nnapi-device-profile/1", "name": "npu", "type": "ACCELERATOR",
        "featureLevel": 30, "version": "1",
        "capabilities": {"operandPerformance": {"default": one},
                         "relaxedFloat32toFloat16PerformanceScalar": one,
                         "relaxedFloat32toFloat16PerformanceTensor": one,
                         "ifPerformance": one, "whilePerformance": one},
        "supportedOperations": rules}), "test")


def test_an_unsupported_operation_names_the_rule_and_the_condition_it_failed():
    quant_only = [{"operations": "*", "inputs": {"0": {"type": ["TENSOR_QUANT8_ASYMM"]}},
                   "comment": "8-bit only"}]
    why = _profile_of(quant_only).why_unsupported(_conv(OperandType.TENSOR_FLOAT32), 0)
    assert why == ("supportedOperations[0] (8-bit only): input '0' is TENSOR_FLOAT32, not"
                   " TENSOR_QUANT8_ASYMM")
    assert _profile_of(quant_only).why_unsupported(_conv(), 0) == ""
    no_dilation = [{"operations": ["CONV_2D"], "inputs": {"dilation_w": {"value": [2]}},
                    "supported": False},
                   {"operations": ["CONV_2D"], "layout": "NHWC"}]
    profile = _profile_of(no_dilation)
    assert profile.why_unsupported(_conv(dilation=2), 0) == \
        "supportedOperations[0] says it is not supported"
    assert profile.why_unsupported(_conv(nchw=True), 0) == \
        "supportedOperations[1]: the layout is NCHW, not NHWC"
    assert _profile_of([{"operations": ["ADD"]}]).why_unsupported(_conv(), 0) == \
        "no rule supports CONV_2D"
