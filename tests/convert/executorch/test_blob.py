"""The delegate blob: written, read back equal (the Python reader), the models it carries
rebuilt and run on the host runtime as the originals, and what the writer refuses."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from torch_nnapi.convert.executorch.blob import (
    HEADER_SIZE,
    VERSION,
    Blob,
    BlobError,
    BlobTensor,
    CompileSettings,
    Conversion,
    ScalarType,
    Timeouts,
    ValueKind,
    read_blob,
    write_blob,
)
from torch_nnapi.convert.executorch.encode import blob_models, blob_tensor, model_from_blob
from torch_nnapi.nnapi import OperandType
from torch_nnapi.runtime import Compilation

from .models import if_model, per_channel_conv, plain_blob, while_model


def conv_blob(named_threshold: int = 4096) -> tuple[Blob, np.ndarray]:
    rng = np.random.default_rng(0)
    weight = rng.integers(-127, 128, (4, 3, 3, 2)).astype(np.int8)
    scales = np.array([0.01, 0.02, 0.005, 0.03], np.float32)
    bias = rng.integers(-50, 50, 4).astype(np.int32)
    model = per_channel_conv(weight, scales, bias, 0.05, 128, 0.1, 10)
    models, named = blob_models(model, named_threshold)
    settings = CompileSettings(priority=110, timeouts=Timeouts(execute_ns=10**9),
                               devices=("a", "b"), cache_dir="/tmp/x",
                               feature_level=int(model.feature_level))
    inputs = (blob_tensor(model, 0, True, ScalarType.FLOAT, (1, 2, 5, 5), (0, 2, 3, 1)),)
    outputs = (blob_tensor(model, 0, False, ScalarType.FLOAT, (1, 4, 3, 3), (0, 2, 3, 1)),)
    return Blob(settings, models, inputs, outputs, named), weight


def test_round_trip_is_equal() -> None:
    blob, _ = conv_blob()
    data = write_blob(blob)
    assert read_blob(data) == blob
    assert write_blob(read_blob(data)) == data  # and byte-stable


def test_per_channel_operand_keeps_its_scales_and_axis() -> None:
    blob, weight = conv_blob()
    (operand,) = [o for o in blob.models[0].operands
                  if o.type == OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL]
    back = read_blob(write_blob(blob)).models[0].operands[blob.models[0].operands.index(operand)]
    quant = back.quant
    assert quant.channel_dim == 0
    assert quant.channel_scales == pytest.approx([0.01, 0.02, 0.005, 0.03])
    assert np.frombuffer(back.value.data, np.int8).tolist() == weight.ravel().tolist()


def test_large_constants_go_to_the_named_data() -> None:
    blob, weight = conv_blob(named_threshold=16)
    kinds = {o.value.kind for o in blob.models[0].operands}
    assert ValueKind.NAMED in kinds and len(blob.named_data) == 1
    (value,) = blob.named_data.values()
    assert value == weight.tobytes()
    back = read_blob(write_blob(blob))
    assert back == blob and back.named_data == {}  # named values are not in the blob


@pytest.mark.parametrize("build", [lambda: if_model(3), lambda: while_model(10, 3)])
def test_referenced_models_round_trip_and_run_the_same(build) -> None:
    model = build()
    blob = plain_blob(model)
    assert len(blob.models) == 1 + len(model.referenced_models())
    for i, m in enumerate(blob.models):  # a model refers to later models only
        assert all(o.value.model > i for o in m.operands if o.value.kind == ValueKind.MODEL)
    rebuilt = model_from_blob(read_blob(write_blob(blob)), blob.named_data)
    if len(model.inputs) == 2:
        inputs = [np.array([True]), np.array([1.0, 2.0, 3.0], np.float32)]
    else:
        inputs = [np.array([0], np.int32)]
    expected = Compilation(model).run(inputs).outputs[0]
    np.testing.assert_array_equal(Compilation(rebuilt).run(inputs).outputs[0], expected)


def test_per_channel_model_rebuilt_runs_the_same() -> None:
    blob, _ = conv_blob(named_threshold=16)
    x = np.random.default_rng(1).random((1, 5, 5, 2), np.float32)
    rebuilt = model_from_blob(read_blob(write_blob(blob)), blob.named_data)
    original = model_from_blob(blob)
    np.testing.assert_array_equal(Compilation(rebuilt).run([x]).outputs[0],
                                  Compilation(original).run([x]).outputs[0])


def test_mapping_refuses_what_cannot_pair() -> None:
    model = if_model(3)
    with pytest.raises(ValueError, match="int64 tensor cannot be the NNAPI TENSOR_FLOAT32"):
        blob_tensor(model, 1, True, ScalarType.LONG, (3,), (0,))
    with pytest.raises(ValueError, match="does not fit the NNAPI operand"):
        blob_tensor(model, 1, True, ScalarType.FLOAT, (4,), (0,))
    assert blob_tensor(model, 0, True, ScalarType.BOOL, (1,), (0,)).conversion \
        == Conversion.COPY


def test_reader_refuses_truncated_corrupted_and_future_blobs() -> None:
    data = write_blob(conv_blob()[0])
    for cut in (0, 10, HEADER_SIZE - 1, HEADER_SIZE, len(data) // 2, len(data) - 1):
        with pytest.raises(BlobError):
            read_blob(data[:cut])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    with pytest.raises(BlobError, match="CRC-32"):
        read_blob(bytes(flipped))
    future = bytearray(data)
    future[8:12] = struct.pack("<I", VERSION + 1)
    with pytest.raises(BlobError, match=f"version {VERSION + 1}"):
        read_blob(bytes(future))


def test_blob_tensor_fields_survive() -> None:
    blob, _ = conv_blob()
    tensor = read_blob(write_blob(blob)).inputs[0]
    assert tensor == BlobTensor(0, ScalarType.FLOAT, (1, 2, 5, 5), (0, 2, 3, 1),
                                Conversion.COPY)
