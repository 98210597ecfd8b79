"""The executor: shapes settled at execution, intermediates, omitted inputs, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import (
    BadDataError,
    BadStateError,
    Model,
    OperandType,
    OperationType,
    OpFailedError,
)
from torch_nnapi.runtime import Compilation, native
from torch_nnapi.runtime.steps import replayed

F32 = OperandType.TENSOR_FLOAT32


def _chain(dims=(2, 3), out_dims=(2, 3)) -> Model:
    """out = (a + b) * b, with a temporary in between."""
    m = Model()
    a = m.add_operand(F32, dims, name="a")
    b = m.add_operand(F32, dims, name="b")
    fuse = m.add_scalar(OperandType.INT32, 0)
    t = m.add_operand(F32, (0, 0), name="sum")
    out = m.add_operand(F32, out_dims, name="out")
    m.add_operation(OperationType.ADD, [a, b, fuse], [t])
    m.add_operation(OperationType.MUL, [t, b, fuse], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    return m.finish()


def test_runs_and_keeps_intermediates():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2, np.float32)
    result = Compilation(_chain()).run([a, b], keep_intermediates=True, profile=True)
    np.testing.assert_array_equal(result.outputs[0], (a + b) * b)
    np.testing.assert_array_equal(result.value(3), a + b)
    assert [t.operation for t in result.timings] == ["ADD", "MUL"]


def test_intermediates_are_dropped_by_default():
    a = np.ones((2, 3), np.float32)
    result = Compilation(_chain()).run([a, a])
    with pytest.raises(KeyError, match="keep_intermediates"):
        result.value(3)


def test_static_shapes_are_inferred_at_compilation():
    compilation = Compilation(_chain())
    assert compilation.shapes[3] == (2, 3)


def test_dynamic_shapes_are_resolved_at_execution():
    compilation = Compilation(_chain(dims=(0, 3), out_dims=(0, 0)))
    for rows in (1, 4):
        a = np.ones((rows, 3), np.float32)
        assert compilation.run([a, a]).outputs[0].shape == (rows, 3)


def test_input_shape_must_match_declared_dimensions():
    with pytest.raises(BadDataError, match=r"model input 0 .*shape \[3, 3\] does not match"):
        Compilation(_chain()).run([np.ones((3, 3), np.float32), np.ones((2, 3), np.float32)])


def test_declared_output_shape_conflict_is_reported_at_compilation():
    with pytest.raises(BadDataError, match=r"operation 1 \(MUL\): output 0 .*declared \[2, 4\]"):
        Compilation(_chain(out_dims=(2, 4)))


def test_broadcast_error_names_the_operation():
    compilation = Compilation(_chain(dims=(0, 0), out_dims=(0, 0)))
    with pytest.raises(BadDataError, match=r"operation 0 \(ADD\): shapes \[2, 3\] and \[2, 4\]"):
        compilation.run([np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)])


def test_wrong_dtype_and_buffer_size():
    compilation = Compilation(_chain())
    with pytest.raises(BadDataError, match="got a complex64 array, expected float32"):
        compilation.run([np.ones((2, 3), np.complex64), np.ones((2, 3), np.float32)])
    execution = compilation.create_execution()
    with pytest.raises(BadDataError, match="buffer has 4 bytes"):
        execution.set_input(0, b"\0\0\0\0")


def test_execution_runs_once():
    compilation = Compilation(_chain())
    execution = compilation.create_execution()
    execution.set_input(0, np.ones((2, 3), np.float32))
    execution.set_input(1, np.ones((2, 3), np.float32))
    execution.compute()
    with pytest.raises(BadStateError, match="only once"):
        execution.compute()


def test_unset_input_is_reported():
    execution = Compilation(_chain()).create_execution()
    execution.set_input(0, np.ones((2, 3), np.float32))
    with pytest.raises(BadDataError, match=r"inputs \[1\] were not set"):
        execution.compute()


def test_model_must_be_finished():
    with pytest.raises(BadStateError):
        Compilation(Model())


# ------------------------------------------------------------------------------ planned runners


def _gather_reshape() -> Model:
    """out = reshape(gather(table, 0, indices)); the table's reshape is a second output."""
    m = Model()
    table = m.add_constant(F32, np.arange(12, dtype=np.float32).reshape(4, 3))
    indices = m.add_operand(OperandType.TENSOR_INT32, (0,), name="indices")
    rows = m.add_operand(F32, (0, 3))
    m.add_operation(OperationType.GATHER, [table, m.add_scalar(OperandType.INT32, 0), indices],
                    [rows])
    flat = m.add_operand(F32, (0,))
    m.add_operation(OperationType.RESHAPE, [rows, m.add_constant(OperandType.TENSOR_INT32,
                                                                  np.array([-1], np.int32))],
                    [flat])
    view = m.add_operand(F32, (12,))
    m.add_operation(OperationType.RESHAPE, [table, m.add_constant(
        OperandType.TENSOR_INT32, np.array([12], np.int32))], [view])
    m.identify_inputs_and_outputs([indices], [flat, view])
    return m.finish()


@pytest.mark.parametrize("kernels", ["native", "reference"])
def test_runners_are_replanned_when_shapes_change(kernels):
    compilation = Compilation(_gather_reshape(), kernels=kernels)
    for indices in ([1, 3], [1, 3], [0, 2, 3], [2]):
        flat, _ = compilation.run([np.array(indices, np.int32)]).outputs
        np.testing.assert_array_equal(
            flat, np.arange(12, dtype=np.float32).reshape(4, 3)[indices].reshape(-1))


@pytest.mark.parametrize("kernels", ["native", "reference"])
def test_outputs_never_share_memory_with_constants(kernels):
    """A RESHAPE of a constant is a view of it on the native kernels; the output the caller
    gets is its own."""
    compilation = Compilation(_gather_reshape(), kernels=kernels)
    for _ in range(2):
        _, view = compilation.run([np.array([0], np.int32)]).outputs
        np.testing.assert_array_equal(view, np.arange(12, dtype=np.float32))
        view[:] = -1  # must not reach the model's constant


@pytest.mark.parametrize("kernels", ["native", "reference"])
def test_a_runner_failure_names_the_operation(kernels):
    compilation = Compilation(_gather_reshape(), kernels=kernels)
    compilation.run([np.array([1], np.int32)])  # plans the runners
    with pytest.raises(OpFailedError, match=r"operation 0 \(GATHER\): input 2 \(indices\) value 7"):
        compilation.run([np.array([7], np.int32)])


def _static_gather_log_softmax() -> Model:
    """log_softmax(gather(table, 0, indices)) with every shape known at compilation: GATHER
    has a native runner, LOG_SOFTMAX only the reference kernel."""
    m = Model()
    table = m.add_constant(F32, np.arange(12, dtype=np.float32).reshape(4, 3) / 4)
    indices = m.add_operand(OperandType.TENSOR_INT32, (2,), name="indices")
    rows = m.add_operand(F32, (2, 3))
    m.add_operation(OperationType.GATHER, [table, m.add_scalar(OperandType.INT32, 0), indices],
                    [rows])
    out = m.add_operand(F32, (2, 3))
    m.add_operation(OperationType.LOG_SOFTMAX, [rows, m.add_scalar(OperandType.FLOAT32, 1.0),
                                                m.add_scalar(OperandType.INT32, -1)], [out])
    m.identify_inputs_and_outputs([indices], [out])
    return m.finish()


def _log_softmax_rows(indices):
    rows = (np.arange(12, dtype=np.float64).reshape(4, 3) / 4)[indices]
    return rows - np.log(np.exp(rows).sum(-1, keepdims=True))


def test_executions_of_the_compile_time_shapes_replay_the_planned_runners():
    """Once an execution planned every runner, later ones replay them (a step without a
    runner the full way) and give what the first did."""
    compilation = Compilation(_static_gather_log_softmax(), kernels="native")
    for indices in ([1, 3], [0, 2], [3, 3]):
        out = compilation.run([np.array(indices, np.int32)]).outputs[0]
        np.testing.assert_allclose(out, _log_softmax_rows(indices), rtol=1e-6)
        assert compilation._replayed is not None  # planned by the first execution


def test_a_runner_declining_a_replayed_execution_runs_the_step_the_full_way():
    compilation = Compilation(_static_gather_log_softmax(), kernels="native")
    for _ in range(2):
        compilation.run([np.array([0, 1], np.int32)])
    with pytest.raises(OpFailedError, match=r"operation 0 \(GATHER\): input 2 \(indices\)"):
        compilation.run([np.array([7, 0], np.int32)])  # the reference reports the index
    out = compilation.run([np.array([2, 1], np.int32)]).outputs[0]
    np.testing.assert_allclose(out, _log_softmax_rows([2, 1]), rtol=1e-6)


def test_keep_intermediates_after_planned_runs():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2, np.float32)
    compilation = Compilation(_chain(), kernels="native")
    for _ in range(2):
        compilation.run([a, b])
    result = compilation.run([a, b], keep_intermediates=True)
    np.testing.assert_array_equal(result.value(3), a + b)
    np.testing.assert_array_equal(result.outputs[0], (a + b) * b)


def test_unknown_kernel_set():
    with pytest.raises(BadDataError, match="kernels must be one of native, reference"):
        Compilation(_chain(), kernels="fast")


def test_substitutes_feed_later_operations_and_keep_computed_values():
    """(a + b) * b with the sum replaced: MUL reads the substitute, the result keeps what ADD
    computed (how convert.compare checks each layer on PyTorch's own input)."""
    model = _chain()
    a = np.ones((2, 3), np.float32)
    b = np.full((2, 3), 2.0, np.float32)
    total = 3  # the temporary "sum"
    substitute = np.full((2, 3), 10.0, np.float32)
    result = Compilation(model).run([a, b], keep_intermediates=True,
                                    substitutes={total: substitute})
    np.testing.assert_array_equal(result.outputs[0], substitute * b)
    np.testing.assert_array_equal(result.value(total), a + b)


def test_an_omitted_model_input_an_operation_needs_is_bad_data_before_running():
    """Fuzzing regression: ROI_POOLING with its rois model input omitted at execution failed
    inside the kernel (IndexError, OP_FAILED)."""
    m = Model()
    feature = m.add_operand(F32, (1, 4, 4, 1))
    rois = m.add_operand(F32, (1, 4))
    batch = m.add_constant(OperandType.TENSOR_INT32, np.zeros(1, np.int32))
    scalars = [m.add_scalar(OperandType.INT32, 2), m.add_scalar(OperandType.INT32, 2),
               m.add_scalar(OperandType.FLOAT32, 1.0), m.add_scalar(OperandType.FLOAT32, 1.0),
               m.add_scalar(OperandType.BOOL, False)]
    out = m.add_operand(F32, (1, 2, 2, 1))
    m.add_operation(OperationType.ROI_POOLING, [feature, rois, batch, *scalars], [out])
    m.identify_inputs_and_outputs([feature, rois], [out])
    compilation = Compilation(m.finish())
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    box = np.array([[0, 0, 3, 3]], np.float32)
    assert compilation.run([x, box]).outputs[0].shape == (1, 2, 2, 1)
    with pytest.raises(BadDataError, match=r"operation 0 \(ROI_POOLING\): input 1 \(rois\)"
                                           r" has no value but is required \(model input 1"
                                           r" is omitted\)"):
        compilation.run([x, None])


def test_an_omitted_model_input_of_an_optional_position_runs():
    m = Model()
    x = m.add_operand(F32, (1, 3, 1))
    axes = m.add_operand(OperandType.TENSOR_INT32, (1,))
    out = m.add_operand(F32, (0,))
    m.add_operation(OperationType.SQUEEZE, [x, axes], [out])
    m.identify_inputs_and_outputs([x, axes], [out])
    result = Compilation(m.finish()).run([np.ones((1, 3, 1), np.float32), None])
    assert result.outputs[0].shape == (3,)


def _resize_then_conv() -> Model:
    """out = conv1x1(resize_bilinear(x)): the reference RESIZE_BILINEAR gives a strided view
    (it computes along one axis, then the other), which the native convolution after it
    reads."""
    m = Model()
    x = m.add_operand(F32, (1, 2, 2, 2), name="x")
    size = [m.add_scalar(OperandType.INT32, v) for v in (4, 4)]
    resized = m.add_operand(F32, (1, 4, 4, 2))
    m.add_operation(OperationType.RESIZE_BILINEAR, [x, *size], [resized])
    filter_ = m.add_constant(F32, np.arange(6, dtype=np.float32).reshape(3, 1, 1, 2))
    bias = m.add_constant(F32, np.zeros(3, np.float32))
    i32 = [m.add_scalar(OperandType.INT32, v) for v in (0, 0, 0, 0, 1, 1, 0)]
    out = m.add_operand(F32, (1, 4, 4, 3), name="out")
    m.add_operation(OperationType.CONV_2D, [resized, filter_, bias, *i32], [out])
    m.identify_inputs_and_outputs([x], [out])
    return m.finish()


@pytest.mark.parametrize("kernels", ["native", "reference"])
def test_strided_views_reach_native_kernels_in_c_order(kernels):
    """Reference kernels may return views, and callers strided arrays; a native kernel reading
    one computes as from a C-ordered copy."""
    x = np.random.default_rng(0).standard_normal((1, 2, 2, 2)).astype(np.float32)
    expected = Compilation(_resize_then_conv(), kernels="reference").run([x]).outputs[0]
    for given in (x, np.asfortranarray(x)):
        out = Compilation(_resize_then_conv(), kernels=kernels).run([given]).outputs[0]
        np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_replayed_executions_leave_fused_away_steps_out_and_drop_their_temporaries():
    """The lean loop of the compile-time shapes computes what the checked loop (a profiled
    run) does, without the steps fused into later ones, whose frees the next call makes."""
    if not native.available():
        pytest.skip(native.unavailable_reason())
    compilation = Compilation(_chain(), kernels="native")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2, np.float32)
    outputs = [compilation.run([a, b]).outputs[0] for _ in range(3)]
    assert any(step.fused_away for step in compilation.steps)  # ADD joins MUL's group
    calls = compilation._static_calls()
    flat = replayed(calls)
    assert [call.step.position for *_, call in flat if call is not None] == \
        [step.position for step in compilation.steps if not step.fused_away]
    dropped = {o for *_, frees, _ in flat for o in frees}
    assert {o for call in calls for o in call.frees} <= dropped
    profiled = compilation.run([a, b], profile=True).outputs[0]
    for out in [*outputs, profiled]:
        np.testing.assert_array_equal(out, (a + b) * b)
