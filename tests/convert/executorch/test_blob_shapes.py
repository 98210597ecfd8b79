"""The blob's bounded dynamic sizes (section SHAP): they round-trip, version 1 blobs (no
SHAP) still read, malformed size programs and bounds are refused when read, and the
converter's expressions make well-formed programs."""

from __future__ import annotations

import struct
import zlib

import pytest

from torch_nnapi.convert.builder.symbolic import ADD, CONST, DIM, evaluate, input_dim
from torch_nnapi.convert.builder.symbolic import program as sym_program
from torch_nnapi.convert.executorch.blob import (
    HEADER_SIZE,
    VERSION,
    Blob,
    BlobError,
    read_blob,
    write_blob,
)
from torch_nnapi.convert.executorch.blob_shapes import (
    DimBound,
    PatchTarget,
    ShapePrograms,
    SizePatch,
    program_problem,
)

from .models import dynamic_reshape_blob

BOUNDS = (DimBound(0, 0, 1, 16),)


def test_dynamic_blob_round_trips() -> None:
    blob = dynamic_reshape_blob()
    again = read_blob(write_blob(blob))
    assert again == blob and again.shapes.bounds == BOUNDS
    assert {p.target for p in again.shapes.patches} == set(PatchTarget)


def as_version_1(data: bytes) -> bytes:
    """``data`` without its SHAP section, marked version 1 (what the previous writer made)."""
    at = data.rfind(struct.pack("<I", int.from_bytes(b"SHAP", "little")))
    body = data[HEADER_SIZE:at]
    total = HEADER_SIZE + len(body)
    head = bytearray(data[:HEADER_SIZE])
    head[8:12] = struct.pack("<I", 1)
    head[16:24] = struct.pack("<Q", total)
    head[24:28] = struct.pack("<I", zlib.crc32(bytes(head[32:]) + body))
    return bytes(head) + body


def test_version_1_blobs_still_read_as_static() -> None:
    static = dynamic_reshape_blob()
    static = Blob(static.settings, static.models, static.inputs, static.outputs)
    old = as_version_1(write_blob(static))
    assert struct.unpack("<I", old[8:12])[0] == 1 < VERSION
    assert read_blob(old) == static and read_blob(old).shapes == ShapePrograms()


@pytest.mark.parametrize(("program", "problem"), [
    ((), "0 words"),
    ((CONST,), "CONST without"),
    ((DIM, 0), "DIM without"),
    ((DIM, 0, 1), "no open dimension"),
    ((CONST, 1, ADD), "1 values on the stack"),
    ((CONST, 1, CONST, 2), "ends with 2 values"),
    ((42,), "unknown opcode 42"),
    ((CONST, 1) * 65 + (ADD,) * 64, "stack grows past 64"),
])
def test_malformed_programs_are_named(program: tuple[int, ...], problem: str) -> None:
    assert problem in (program_problem(program, BOUNDS) or "")


def test_reader_refuses_a_bad_program_or_bound() -> None:
    blob = dynamic_reshape_blob()
    bad_patch = SizePatch(PatchTarget.DIMENSION, 0, 0, (DIM, 0, 1))
    for shapes, message in (
            (ShapePrograms(BOUNDS, (bad_patch,)), "no open dimension"),
            (ShapePrograms((DimBound(0, 0, 4, 16),), ()), "does not fit"),  # batch 3 < 4
            (ShapePrograms((DimBound(0, 2, 1, 16),), ()), "does not fit"),  # no dimension 2
            (ShapePrograms(BOUNDS, (SizePatch(PatchTarget.VALUE, 0, 0, (DIM, 0, 0)),)),
             "no such element"),  # operand 0 is no INT32 constant
            (ShapePrograms((), blob.shapes.patches), "no open dimension"),
            (ShapePrograms((), (SizePatch(PatchTarget.DIMENSION, 0, 0, (CONST, 2)),)),
             "reads no open dimension")):
        bad = Blob(blob.settings, blob.models, blob.inputs, blob.outputs, shapes=shapes)
        with pytest.raises(BlobError, match=message):
            read_blob(write_blob(bad))


def test_programs_evaluate_as_the_expressions() -> None:
    n, m = input_dim(0, 0, 5), input_dim(1, 2, 7)
    for expr in ((n + 3) // 2, (n * m) % 4, -(-n // 3), n - m * 2):
        prog = sym_program(expr)
        assert program_problem(prog, (DimBound(0, 0, 1, 99), DimBound(1, 2, 1, 99))) is None
        for sizes in (((5,), (0, 0, 7)), ((11,), (0, 0, 2)), ((1,), (0, 0, 99))):
            values = {"n": sizes[0][0], "m": sizes[1][2]}
            assert evaluate(prog, sizes) == eval(repr(expr).replace(  # noqa: S307
                "in0.shape[0]", "n").replace("in1.shape[2]", "m"), {}, values)
