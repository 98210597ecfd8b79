"""What kernels see: inputs and outputs by the names the signatures declare, with the
declared defaults for inputs left out, the matched form, variadic inputs, and errors that
name the input."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import (
    BadDataError,
    Model,
    OperandType,
    OperationType,
    OpFailedError,
)
from torch_nnapi.runtime import (
    OMITTED,
    Compilation,
    KernelContext,
    ValueNotKnown,
    executor,
)
from torch_nnapi.runtime.context import Binding

F32 = OperandType.TENSOR_FLOAT32
I32 = OperandType.INT32
Op = OperationType


def _model(op: OperationType, inputs: list, outputs: list) -> Model:
    """One operation. Each input is a constant ``(type, value)``, a model input
    ``(type, Fed(dims))`` or an operand without a value ``(type, OMITTED)``; each output is
    ``(type, dims)``."""
    m = Model()
    ids, fed = [], []
    for operand_type, value in inputs:
        if isinstance(value, Fed):
            index = m.add_operand(operand_type, value.dims)
            fed.append(index)
        elif value is OMITTED:
            index = m.add_operand(operand_type, (2,))
            m.set_operand_value(index, None)
        else:
            index = m.add_operand(operand_type, np.shape(value))
            m.set_operand_value(index, value)
        ids.append(index)
    out_ids = [m.add_operand(t, dims) for t, dims in outputs]
    m.add_operation(op, ids, out_ids)
    m.identify_inputs_and_outputs(fed, out_ids)
    return m.finish()


class Fed:
    """A model input of ``dims``, given at execution."""

    def __init__(self, dims: tuple[int, ...] = ()):
        self.dims = dims


def _context(model: Model, values: list | None = None) -> KernelContext:
    """The context of the model's one operation over the constants, or over ``values``."""
    binding = Binding(model.operands, model.operations[0], model.matches[0])
    if values is None:
        values = [o.value for o in model.operands]
    return KernelContext(binding, values)


def _conv(padding: list, tail: list) -> Model:
    x = np.zeros((1, 3, 3, 1), np.float32)
    w = np.ones((1, 2, 2, 1), np.float32)
    b = np.zeros(1, np.float32)
    return _model(Op.CONV_2D, [(F32, x), (F32, w), (F32, b),
                               *[(I32, np.int32(p)) for p in padding], (I32, np.int32(1)),
                               (I32, np.int32(2)), (I32, np.int32(0)), *tail],
                  [(F32, (0, 0, 0, 0))])


def test_the_matched_form_and_inputs_by_name():
    explicit = _context(_conv([0, 1, 0, 1], []))
    assert explicit.form == "explicit"
    assert explicit.scalar("pad_right") == 1
    assert explicit.scalar("stride_h") == 2
    assert explicit.input_shape("filter") == (1, 2, 2, 1)
    assert explicit.input_type("bias") == F32
    assert explicit.describe_input("stride_w") == "input 7 (stride_w)"
    implicit = _context(_conv([2], []))
    assert implicit.form == "implicit"
    assert implicit.scalar("padding") == 2
    assert implicit.describe_input("stride_w") == "input 4 (stride_w)"
    assert not implicit.declares("pad_left")


def test_inputs_left_out_read_as_the_declared_defaults():
    ctx = _context(_conv([2], []))
    assert ctx.scalar("nchw") is False
    assert (ctx.scalar("dilation_w"), ctx.scalar("dilation_h")) == (1, 1)
    assert not ctx.has_input("nchw")
    # Where they would be, and what type they would have.
    assert ctx.describe_input("nchw") == "input 7 (nchw)"
    assert ctx.input_type("dilation_w") == I32
    softmax = _context(_model(Op.SOFTMAX, [(F32, np.zeros((2, 3), np.float32)),
                                           (OperandType.FLOAT32, np.float32(1))],
                              [(F32, (2, 3))]))
    assert softmax.scalar("axis") == -1  # "last"


def test_an_input_omitted_at_execution_reads_as_its_default_or_is_named():
    """A model input given no buffer (None) is omitted: an optional scalar reads as its
    declared default, a required one is an error naming it."""
    model = _conv([2], [(OperandType.BOOL, Fed())])
    values: list[object] = [o.value for o in model.operands]
    values[model.inputs[0]] = OMITTED
    ctx = _context(model, values)
    assert ctx.scalar("nchw") is False
    assert not ctx.has_input("nchw")
    required = _model(Op.ADD, [(F32, np.ones(2, np.float32)), (F32, np.ones(2, np.float32)),
                               (I32, Fed())], [(F32, (2,))])
    values = [o.value for o in required.operands]
    values[required.inputs[0]] = OMITTED
    with pytest.raises(BadDataError, match=r"input 2 \(fuse_code\) is omitted but needed"):
        _context(required, values).scalar("fuse_code")


def test_an_omitted_operand_is_absent_and_named_when_needed():
    ctx = _context(_model(Op.TRANSPOSE, [(F32, np.zeros((2, 3), np.float32)),
                                         (OperandType.TENSOR_INT32, OMITTED)],
                          [(F32, (3, 2))]))
    assert not ctx.has_input("perm")
    assert ctx.input_count("perm") == 0
    assert ctx.input_type("perm") == OperandType.TENSOR_INT32
    with pytest.raises(BadDataError, match=r"input 1 \(perm\) is omitted but needed"):
        ctx.input("perm")
    with pytest.raises(BadDataError, match=r"input 1 \(perm\) is omitted but needed"):
        ctx.input_shape("perm")


def test_variadic_inputs_as_lists():
    parts = [np.full((1, 2), k, np.float32) for k in range(3)]
    ctx = _context(_model(Op.CONCATENATION, [*[(F32, p) for p in parts], (I32, np.int32(0))],
                          [(F32, (3, 2))]))
    assert ctx.input_count("inputs") == 3
    assert [x[0, 0] for x in ctx.inputs("inputs")] == [0, 1, 2]
    assert ctx.input_shape("inputs", 2) == (1, 2)
    assert ctx.describe_input("inputs", 2) == "input 2 (inputs)"
    assert ctx.describe_input("axis") == "input 3 (axis)"
    assert ctx.scalar("axis") == 0
    with pytest.raises(OpFailedError, match="has no operand 3"):
        ctx.input("inputs", 3)


def test_outputs_by_name():
    model = _model(Op.TOPK_V2, [(F32, np.zeros((2, 5), np.float32)), (I32, np.int32(2))],
                   [(F32, (2, 2)), (OperandType.TENSOR_INT32, (2, 2))])
    ctx = _context(model)
    assert ctx.output_dtype("values") == np.float32
    assert ctx.output_type("indices") == OperandType.TENSOR_INT32
    assert ctx.output_count("indices") == 1
    assert ctx.describe_output("indices") == "output 1 (indices)"
    with pytest.raises(OpFailedError, match="asked for output 'output'"):
        ctx.output_dtype()


def test_values_known_only_at_execution_defer_preparation():
    model = _model(Op.ADD, [(F32, Fed((2,))), (F32, np.ones(2, np.float32)), (I32, Fed())],
                   [(F32, (2,))])
    constants = [o.value for o in model.operands]
    ctx = KernelContext(Binding(model.operands, model.operations[0], model.matches[0]),
                        constants, [o.dimensions for o in model.operands])
    assert ctx.at_compile_time
    assert ctx.input_shape("input0") == (2,)
    with pytest.raises(ValueNotKnown):
        ctx.input("input0")
    with pytest.raises(ValueNotKnown):
        ctx.scalar("fuse_code")
    assert ctx.variable_inputs == {"input0", "fuse_code"}


def test_a_name_the_signature_does_not_declare_is_a_kernel_bug():
    ctx = _context(_conv([2], []))
    for read in (ctx.input, ctx.scalar, ctx.input_shape, ctx.input_type, ctx.has_input,
                 ctx.describe_input):
        with pytest.raises(OpFailedError, match=r"'strides'.* CONV_2D \(implicit form\) does"
                                                " not declare"):
            read("strides")
    with pytest.raises(OpFailedError, match="asked for input 3, which"):
        ctx.input(3)  # type: ignore[arg-type]  # positions are not names


def test_bindings_are_made_once_per_compiled_step(monkeypatch):
    made = []

    class Counting(Binding):
        __slots__ = ()

        def __init__(self, *args):
            made.append(args[1].type)
            super().__init__(*args)

    monkeypatch.setattr(executor, "Binding", Counting)
    m = Model()
    a = m.add_operand(F32, (2,))
    fuse = m.add_scalar(I32, 0)
    t = m.add_operand(F32, (2,))
    out = m.add_operand(F32, (2,))
    m.add_operation(Op.ADD, [a, a, fuse], [t])
    m.add_operation(Op.MUL, [t, a, fuse], [out])
    m.identify_inputs_and_outputs([a], [out])
    compilation = Compilation(m.finish())
    for _ in range(3):
        got = compilation.run([np.array([1, 2], np.float32)]).outputs[0]
    np.testing.assert_array_equal(got, [2, 8])
    assert made == [Op.ADD, Op.MUL]
