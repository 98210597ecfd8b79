"""NNAPI models built directly (what the converter does not make yet): a convolution with a
per-channel quantized weight, and IF and WHILE with referenced models (those of the host
runtime's control-flow tests, with static sizes), and their plain mapping; a RESHAPE whose
sizes and target shape follow a bounded dynamic batch (the SHAP section's every target)."""

from __future__ import annotations

import numpy as np

from torch_nnapi.convert.builder.symbolic import CONST, DIM, MUL
from torch_nnapi.convert.executorch.blob import Blob, BlobTensor, CompileSettings, ScalarType
from torch_nnapi.convert.executorch.blob_shapes import (
    DimBound,
    PatchTarget,
    ShapePrograms,
    SizePatch,
)
from torch_nnapi.convert.executorch.encode import blob_models, blob_tensor
from torch_nnapi.nnapi import FuseCode, Model, OperandType, OperationType

# the host runtime's tests build the same control flow: the models come from there
from ...runtime.ops.test_control_flow import _binary, _counting_loop, _if_model

F32 = OperandType.TENSOR_FLOAT32
I32 = OperandType.TENSOR_INT32
BOOL8 = OperandType.TENSOR_BOOL8
QU8 = OperandType.TENSOR_QUANT8_ASYMM
Op = OperationType


def per_channel_conv(weight: np.ndarray, scales: np.ndarray, bias: np.ndarray,
                     in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> Model:
    """float input [1,H,W,C] NHWC -> QUANTIZE -> CONV_2D with a TENSOR_QUANT8_SYMM_PER_CHANNEL
    weight [O,kh,kw,C] -> DEQUANTIZE -> float output."""
    m = Model()
    n, h, w, c = 1, 5, 5, weight.shape[3]
    o, kh, kw = weight.shape[:3]
    x = m.add_operand(F32, (n, h, w, c))
    xq = m.add_operand(QU8, (n, h, w, c), in_scale, in_zp)
    m.add_operation(Op.QUANTIZE, [x], [xq])
    wq = m.add_operand(OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL, weight.shape)
    m.set_operand_symm_per_channel_quant_params(wq, scales.tolist(), 0)
    m.set_operand_value(wq, weight)
    b = m.add_constant(I32, bias)  # per-channel bias: scale in_scale * scales[i], zp 0
    scalars = [m.add_scalar(OperandType.INT32, v) for v in (0, 0, 0, 0, 1, 1)]
    fuse = m.add_scalar(OperandType.INT32, FuseCode.RELU)
    yq = m.add_operand(QU8, (n, h - kh + 1, w - kw + 1, o), out_scale, out_zp)
    m.add_operation(Op.CONV_2D, [xq, wq, b, *scalars, fuse], [yq])
    y = m.add_operand(F32, (n, h - kh + 1, w - kw + 1, o))
    m.add_operation(Op.DEQUANTIZE, [yq], [y])
    m.identify_inputs_and_outputs([x], [y])
    return m.finish()


def if_model(length: int) -> Model:
    """IF(condition, x + 10, x - 10) on float32 [length]; inputs (condition bool8 [1], x)."""
    dims = (length,)
    return _if_model(_binary(Op.ADD, 10, dims), _binary(Op.SUB, 10, dims), dims)


def while_model(limit: int, step: int) -> Model:
    """while i < limit: i = i + step, on int32 [1]: the condition and body are referenced
    models, the body's constant one of its own."""
    return _counting_loop(limit, step)


_SCALAR_TYPES = {F32: ScalarType.FLOAT, I32: ScalarType.INT, BOOL8: ScalarType.BOOL}


def plain_io(model: Model) -> tuple[tuple[BlobTensor, ...], tuple[BlobTensor, ...]]:
    """Each model input and output as an ExecuTorch tensor of its own shape and the dtype
    that holds it unconverted."""
    def tensors(indices: list[int], is_input: bool) -> tuple[BlobTensor, ...]:
        result = []
        for k, i in enumerate(indices):
            o = model.operands[i]
            result.append(blob_tensor(model, k, is_input, _SCALAR_TYPES[o.type], o.dimensions,
                                      tuple(range(len(o.dimensions)))))
        return tuple(result)

    return tensors(model.inputs, True), tensors(model.outputs, False)


def plain_blob(model: Model, settings: CompileSettings | None = None) -> Blob:
    """``model`` as a blob with :func:`plain_io`."""
    models, named = blob_models(model)
    inputs, outputs = plain_io(model)
    return Blob(settings or CompileSettings(), models, inputs, outputs, named)


def dynamic_reshape_blob(batch: int = 3, maximum: int = 16) -> Blob:
    """float32 [batch, 4] -> RESHAPE to [2 batch, 2], the batch bounded by [1, maximum]: the
    input, output and target shape patched from it."""
    m = Model()
    x = m.add_operand(F32, (batch, 4))
    shape = m.add_constant(I32, np.array([2 * batch, 2], np.int32))
    y = m.add_operand(F32, (2 * batch, 2))
    m.add_operation(Op.RESHAPE, [x, shape], [y])
    m.identify_inputs_and_outputs([x], [y])
    blob = plain_blob(m.finish())
    twice = (DIM, 0, 0, CONST, 2, MUL)
    patches = (SizePatch(PatchTarget.DIMENSION, x, 0, (DIM, 0, 0)),
               SizePatch(PatchTarget.DIMENSION, y, 0, twice),
               SizePatch(PatchTarget.VALUE, shape, 0, twice),
               SizePatch(PatchTarget.OUTPUT, 0, 0, twice))
    return Blob(blob.settings, blob.models, blob.inputs, blob.outputs, blob.named_data,
                ShapePrograms((DimBound(0, 0, 1, maximum),), patches))
