"""NNAPI ``Model`` <-> the blob's models, and the ExecuTorch dtype each NNAPI type pairs with.

``blob_models`` flattens a finished model and every model it refers to into the blob's list
(the main model first; a model only ever refers to models after it, so the runtime builds
them back to front). Constants larger than ``named_threshold`` bytes go to ExecuTorch's
named data map under a key made from their content (equal constants are stored once).
``model_from_blob`` is the inverse, for tests and tools: a blob read back becomes a Model
the host runtime runs.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ...nnapi.codes import OperandType
from ...nnapi.model import Lifetime, Model, Operand
from .blob import (
    Blob,
    BlobModel,
    BlobOperand,
    BlobOperation,
    BlobTensor,
    Conversion,
    OperandQuant,
    OperandValue,
    ScalarType,
    ValueKind,
)

NAMED_KEY_PREFIX = "torch_nnapi."
DEFAULT_NAMED_THRESHOLD = 4096  # bytes; smaller constants stay in the blob

# (ExecuTorch dtype, NNAPI operand type) -> how the runtime converts between them. The C++
# runtime (nnapi_backend.cpp, conversion_for) holds the same table.
CONVERSIONS: dict[tuple[ScalarType, OperandType], Conversion] = {
    (ScalarType.FLOAT, OperandType.TENSOR_FLOAT32): Conversion.COPY,
    (ScalarType.HALF, OperandType.TENSOR_FLOAT16): Conversion.COPY,
    (ScalarType.INT, OperandType.TENSOR_INT32): Conversion.COPY,
    (ScalarType.BOOL, OperandType.TENSOR_BOOL8): Conversion.COPY,
    (ScalarType.BYTE, OperandType.TENSOR_QUANT8_ASYMM): Conversion.COPY,
    (ScalarType.CHAR, OperandType.TENSOR_QUANT8_ASYMM_SIGNED): Conversion.COPY,
    (ScalarType.LONG, OperandType.TENSOR_INT32): Conversion.INT64_INT32,
    (ScalarType.BOOL, OperandType.TENSOR_INT32): Conversion.BOOL_INT32,
    (ScalarType.FLOAT, OperandType.TENSOR_QUANT8_ASYMM): Conversion.QUANTIZE,
    (ScalarType.FLOAT, OperandType.TENSOR_QUANT8_ASYMM_SIGNED): Conversion.QUANTIZE,
}

SCALAR_TYPE_OF_DTYPE = {"float32": ScalarType.FLOAT, "float16": ScalarType.HALF,
                        "int32": ScalarType.INT, "int64": ScalarType.LONG,
                        "bool": ScalarType.BOOL, "uint8": ScalarType.BYTE,
                        "int8": ScalarType.CHAR}
DTYPE_OF_SCALAR_TYPE = {v: k for k, v in SCALAR_TYPE_OF_DTYPE.items()}


def conversion_for(dtype: ScalarType, operand_type: OperandType, where: str) -> Conversion:
    """How an ExecuTorch tensor of ``dtype`` feeds (or is fed by) an operand of the type."""
    found = CONVERSIONS.get((dtype, operand_type))
    if found is None:
        name = DTYPE_OF_SCALAR_TYPE.get(dtype, dtype.name.lower())
        raise ValueError(f"{where}: an ExecuTorch {name} tensor cannot be the NNAPI"
                         f" {operand_type.name} operand")
    return found


def blob_tensor(model: Model, position: int, is_input: bool, dtype: ScalarType,
                shape: tuple[int, ...], layout: tuple[int, ...]) -> BlobTensor:
    """The mapping of one ExecuTorch tensor to the main model's input or output
    ``position``, checked: its element count must be the operand's."""
    kind = "input" if is_input else "output"
    operand = model.operands[(model.inputs if is_input else model.outputs)[position]]
    where = f"{kind} {position}"
    if sorted(layout) != list(range(len(shape))):
        raise ValueError(f"{where}: layout {layout} is no permutation of rank {len(shape)}")
    if int(np.prod(shape)) != int(np.prod(operand.dimensions)) or 0 in operand.dimensions:
        raise ValueError(f"{where}: shape {list(shape)} does not fit the NNAPI operand"
                         f" {operand.describe()} (a flexible size goes in at its example"
                         " value)")
    conversion = conversion_for(dtype, operand.type, where)
    return BlobTensor(position, dtype, tuple(int(d) for d in shape),
                      tuple(int(d) for d in layout), conversion)


def blob_models(model: Model, named_threshold: int = DEFAULT_NAMED_THRESHOLD
                ) -> tuple[tuple[BlobModel, ...], dict[str, bytes]]:
    """The blob's models (``model`` first, then the models it refers to, each once) and the
    constants that go to the named data map."""
    if not model.finished:
        raise ValueError("the NNAPI model must be finished before it is written")
    ordered = [model, *reversed(model.referenced_models())]
    index = {id(m): i for i, m in enumerate(ordered)}
    named: dict[str, bytes] = {}
    result = []
    for m in ordered:
        operands = tuple(_blob_operand(o, index, named, named_threshold) for o in m.operands)
        operations = tuple(BlobOperation(int(op.type), op.inputs, op.outputs)
                           for op in m.operations)
        result.append(BlobModel(operands, operations, tuple(m.inputs), tuple(m.outputs),
                                m.relax_float32_to_float16))
    return tuple(result), named


def _blob_operand(o: Operand, index: dict[int, int], named: dict[str, bytes],
                  threshold: int) -> BlobOperand:
    kind, value, key, length, ref = ValueKind.NONE, b"", "", 0, 0
    if o.lifetime is Lifetime.CONSTANT:
        assert o.value is not None
        value = np.ascontiguousarray(o.value, dtype=o.info.dtype.newbyteorder("<")).tobytes()
        kind = ValueKind.INLINE
        if len(value) > threshold:
            key = NAMED_KEY_PREFIX + hashlib.sha256(value).hexdigest()[:32]
            named[key] = value
            kind, length, value = ValueKind.NAMED, len(value), b""
    elif o.lifetime is Lifetime.NO_VALUE:
        kind = ValueKind.OMITTED
    elif o.lifetime is Lifetime.REFERENCED_MODEL:
        assert o.model is not None
        kind, ref = ValueKind.MODEL, index[id(o.model)]
    channels = o.channel_quant
    quant = OperandQuant(scale=float(o.scale), zero_point=int(o.zero_point),
                         channel_dim=None if channels is None else channels.channel_dim,
                         channel_scales=() if channels is None else channels.scales)
    return BlobOperand(int(o.type), o.dimensions, quant,
                       OperandValue(kind=kind, data=value, key=key, length=length, model=ref))


def model_from_blob(blob: Blob, named: dict[str, bytes] | None = None) -> Model:
    """The blob's main model as a finished ``Model`` (its referenced models built first)."""
    built: dict[int, Model] = {}
    for i in reversed(range(len(blob.models))):
        built[i] = _build(blob.models[i], built, named or blob.named_data)
    return built[0]


def _build(spec: BlobModel, built: dict[int, Model], named: dict[str, bytes]) -> Model:
    model = Model()
    for i, o in enumerate(spec.operands):
        q, v = o.quant, o.value
        model.add_operand(o.type, o.dimensions, q.scale, q.zero_point)
        if q.channel_dim is not None:
            model.set_operand_symm_per_channel_quant_params(i, q.channel_scales, q.channel_dim)
        if v.kind == ValueKind.INLINE:
            model.set_operand_value(i, v.data)
        elif v.kind == ValueKind.NAMED:
            model.set_operand_value(i, named[v.key])
        elif v.kind == ValueKind.OMITTED:
            model.set_operand_value(i, None)
        elif v.kind == ValueKind.MODEL:
            model.set_operand_value_from_model(i, built[v.model])
    for op in spec.operations:
        model.add_operation(op.type, op.inputs, op.outputs)
    model.identify_inputs_and_outputs(spec.inputs, spec.outputs)
    model.relax_computation_float32_to_float16(spec.relax_float32_to_float16)
    return model.finish()
