"""Converter.operation/emit: inputs and outputs given by the names the signatures declare."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from torch_nnapi.convert.builder import layout as lay
from torch_nnapi.convert.builder.context import Converter
from torch_nnapi.convert.builder.values import TensorValue
from torch_nnapi.convert.errors import ConverterBug
from torch_nnapi.nnapi.codes import OperationType as Op

from ..harness import Fn, check


def _conv_operands(cx: Converter):
    x = cx.new_tensor((1, 3, 8, 8), "float32", lay.NHWC)
    w = cx.constant(np.ones((4, 3, 3, 3), np.float32), "float32")
    b = cx.constant(np.zeros(4, np.float32), "float32")
    return x, w, b


def _explicit(cx: Converter, x, w, b, **extra):
    """CONV_2D explicit-padding inputs, deliberately not in the signature's order."""
    return {**dict(fuse_code=cx.i32(0), stride_h=cx.i32(1), stride_w=cx.i32(1),
                   pad_bottom=cx.i32(1), pad_top=cx.i32(1), pad_right=cx.i32(1),
                   pad_left=cx.i32(1), bias=b, filter=w, input=x), **extra}


def _implicit(cx: Converter, x, w, b, **extra):
    return {**dict(input=x, filter=w, bias=b, padding=cx.i32(1), stride_w=cx.i32(1),
                   stride_h=cx.i32(1), fuse_code=cx.i32(0)), **extra}


def _last(cx: Converter):
    return cx.model.operations[-1]


def _scalar_values(cx: Converter, operation) -> list:
    """The constant value of each input of ``operation`` (None for tensors)."""
    values = []
    for i in operation.inputs:
        operand = cx.model.operands[i]
        values.append(np.asarray(operand.value).item() if operand.is_scalar else None)
    return values


def test_inputs_are_ordered_as_the_form_declares():
    cx = Converter()
    x, w, b = _conv_operands(cx)
    cx.emit(Op.CONV_2D, _explicit(cx, x, w, b, pad_top=cx.i32(2)), (1, 4, 9, 8), "float32",
            lay.NHWC)
    operation = _last(cx)
    assert operation.inputs[:3] == (x.operand, w.operand, b.operand)
    # pad_left, pad_right, pad_top, pad_bottom, stride_w, stride_h, fuse_code
    assert _scalar_values(cx, operation)[3:] == [1, 1, 2, 1, 1, 1, 0]


def test_the_names_choose_the_form():
    cx = Converter()
    x, w, b = _conv_operands(cx)
    cx.emit(Op.CONV_2D, _explicit(cx, x, w, b), (1, 4, 8, 8), "float32", lay.NHWC)
    assert len(_last(cx).inputs) == 10
    cx.emit(Op.CONV_2D, _implicit(cx, x, w, b), (1, 4, 8, 8), "float32", lay.NHWC)
    assert len(_last(cx).inputs) == 7
    assert _scalar_values(cx, _last(cx))[3] == 1  # the padding code, where pad_left was


def test_optional_inputs_at_their_declared_defaults_are_dropped():
    cx = Converter()
    x, w, b = _conv_operands(cx)
    shape = (1, 4, 8, 8)
    defaults = dict(nchw=cx.boolean(False), dilation_w=cx.i32(1), dilation_h=cx.i32(1))
    cx.emit(Op.CONV_2D, _implicit(cx, x, w, b, **defaults), shape, "float32", lay.NHWC)
    assert len(_last(cx).inputs) == 7
    # a dilation other than 1 keeps the whole group, the layout flag at its default included
    dilated = dict(defaults, dilation_h=cx.i32(2))
    cx.emit(Op.CONV_2D, _implicit(cx, x, w, b, **dilated), (1, 4, 6, 8), "float32", lay.NHWC)
    assert _scalar_values(cx, _last(cx))[7:] == [False, 1, 2]
    # optional inputs not given are left out
    nchw = cx.new_tensor((1, 3, 8, 8), "float32")
    cx.emit(Op.CONV_2D, _implicit(cx, nchw, w, b, nchw=cx.boolean(True)), shape, "float32")
    assert _scalar_values(cx, _last(cx))[7:] == [True]


@pytest.mark.parametrize("axis, kept", [(-1, False), (1, False), (0, True)])
def test_an_axis_default_counts_from_the_end(axis, kept):
    cx = Converter()
    x = cx.new_tensor((2, 5), "float32")
    cx.emit_like(Op.SOFTMAX, dict(input=x, beta=cx.f32(1.0), axis=cx.i32(axis)), x)
    assert len(_last(cx).inputs) == (3 if kept else 2)


def test_variadic_inputs_and_named_outputs():
    cx = Converter()
    x = cx.new_tensor((2, 6), "float32")
    parts = [cx.new_tensor((2, 2), "float32") for _ in range(3)]
    cx.operation(Op.SPLIT, dict(num_splits=cx.i32(3), axis=cx.i32(1), input=x),
                 dict(outputs=parts))
    assert _last(cx).outputs == tuple(p.operand for p in parts)
    joined = cx.emit(Op.CONCATENATION, dict(axis=cx.i32(1), inputs=parts[::-1]), (2, 6),
                     "float32")
    operation = _last(cx)
    assert operation.inputs[:3] == tuple(p.operand for p in parts[::-1])
    assert _scalar_values(cx, operation)[3] == 1 and operation.outputs == (joined.operand,)
    values = cx.new_tensor((2, 2), "float32")
    indices = cx.new_tensor((2, 2), "int32")
    cx.operation(Op.TOPK_V2, dict(input=x, k=cx.i32(2)), dict(indices=indices, values=values))
    assert _last(cx).outputs == (values.operand, indices.operand)


def _bug(call) -> str:
    with pytest.raises(ConverterBug) as info:
        call()
    return str(info.value)


def test_unknown_and_missing_names_are_converter_bugs():
    cx = Converter()
    x, w, b = _conv_operands(cx)
    y = cx.new_tensor((1, 3, 8, 8), "float32", lay.NHWC)
    shape = (1, 4, 8, 8)
    message = _bug(lambda: cx.emit(Op.CONV_2D, _implicit(cx, x, w, b, strides=cx.i32(1)),
                                   shape, "float32"))
    assert message.startswith("CONV_2D has no input named 'strides' (its inputs: explicit:")
    assert _bug(lambda: cx.emit(Op.ADD, dict(input0=x, input1=y), x.shape, "float32")) \
        == "ADD: input 'fuse_code' is missing"
    # an optional input after one left out
    message = _bug(lambda: cx.emit(Op.CONV_2D, _implicit(cx, x, w, b, dilation_w=cx.i32(2),
                                                         dilation_h=cx.i32(2)), shape, "float32"))
    assert "implicit form: input 'nchw' is missing (an optional input, needed with" \
           " 'dilation_h')" in message
    # names of two forms
    message = _bug(lambda: cx.emit(Op.CONV_2D, _implicit(cx, x, w, b, pad_left=cx.i32(1)),
                                   shape, "float32"))
    assert message.startswith("CONV_2D: explicit form: no input named 'padding' (its inputs:"
                              " input, filter, bias, pad_left, ")
    assert "; implicit form: no input named 'pad_left' (its inputs: input, filter, bias," \
           " padding, " in message
    assert _bug(lambda: cx.emit(Op.TOPK_V2, dict(input=x, k=cx.i32(1)), x.shape, "float32")) \
        == "TOPK_V2: no output named 'output' (its outputs: values, indices)"
    assert not cx.model.operations  # nothing was added


def test_lists_are_only_for_variadic_inputs_and_positions_are_gone():
    cx = Converter()
    x = cx.new_tensor((2, 6), "float32")
    assert _bug(lambda: cx.emit(Op.CONCATENATION, dict(inputs=x, axis=cx.i32(0)), x.shape,
                                "float32")) \
        == "CONCATENATION: input 'inputs' takes a non-empty list of operands"
    assert _bug(lambda: cx.emit(Op.RELU, dict(input=[x]), x.shape, "float32")) \
        == "RELU: input 'input' takes one operand, not a list"

    def emit_a_list():  # the misuse under test: its type is wrong on purpose
        return cx.emit(Op.RELU, [x], x.shape, "float32")  # type: ignore[arg-type]

    assert _bug(emit_a_list) \
        == "RELU: inputs and outputs are given by name (a mapping), not as a list"


def test_a_binding_error_names_the_node_being_lowered():
    cx = Converter()
    x: TensorValue = cx.new_tensor((2, 6), "float32")
    # a stand-in for the capture.Node (Converter.node has no declared type but its None)
    cx.node = SimpleNamespace(kind="aten::relu", location="model.py:12")  # type: ignore[assignment]
    assert _bug(lambda: cx.emit(Op.RELU, dict(x=x), x.shape, "float32")) \
        == "aten::relu at model.py:12: RELU has no input named 'x' (its inputs: input)"


# Data movement of int and bool tensors (Converter.through_float): RESHAPE, TRANSPOSE and
# STRIDED_SLICE take neither TENSOR_INT32 nor TENSOR_BOOL8, so select/slice/reshape/permute
# of such tensors once emitted models NNAPI's validation rejects.

_INTS = torch.arange(720).reshape(2, 3, 4, 5, 6)
_MOVES = {
    "select": lambda t: t[:, 1],
    "slice": lambda t: t[:, :, 1:3],
    "reshape": lambda t: t.reshape(6, -1),
    "permute then reshape": lambda t: t.permute(1, 0, 2).reshape(-1),
    "permute then select": lambda t: t.permute(2, 1, 0)[1],
    "unbind": lambda t: t.unbind(1)[2],
    "rank 5 permute, slice and reshape": lambda t: t.permute(4, 2, 1, 0, 3)[:, 1:3].reshape(6, -1),
}


@pytest.mark.parametrize("move", list(_MOVES))
@pytest.mark.parametrize("dtype", ["int", "bool"])
def test_int_and_bool_data_movement_is_valid_and_exact(move, dtype):
    shape = (2, 3, 4, 5, 6) if move.startswith("rank 5") else (3, 4, 5)
    if dtype == "int":
        x = _INTS.reshape(-1)[:int(np.prod(shape))].reshape(shape)
        model = Fn(lambda t: _MOVES[move](t) + 1)
    else:
        x = torch.randn(shape)
        model = Fn(lambda t: _MOVES[move](t > 0).float())
    conversion, worst = check(model, (x,), nhwc=False)  # validated on the way
    assert worst == 0.0
    types = {(op.type.name, conversion.model.operands[op.inputs[0]].type.name)
             for op in conversion.model.operations}
    moved = {"RESHAPE", "TRANSPOSE", "STRIDED_SLICE"}
    assert not {t for t in types if t[0] in moved and t[1] != "TENSOR_FLOAT32"}
