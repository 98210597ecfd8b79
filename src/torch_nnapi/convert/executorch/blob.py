"""The NNAPI delegate blob: one NNAPI model, its referenced models and how ExecuTorch feeds it.

The format is ours (docs/executorch_blob.md describes it byte by byte): little-endian, a
64-byte header (magic, version, sizes, a CRC-32 and the compilation cache token), then
tagged sections: the compile options, one section per model (the main model first, then
the models IF and WHILE operations refer to), the input and output mapping, the constant
data and (version 2) the bounded dynamic sizes (``blob_shapes.py``). The C++ runtime
(``native/blob_reader.cpp``) reads it strictly; ``read_blob`` here is the same reader in
Python, for tests and tools. Nothing here imports torch or
ExecuTorch: the blob is plain data.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass, field
from enum import IntEnum

from .blob_shapes import DimBound, PatchTarget, ShapePrograms, SizePatch, program_problem

MAGIC = b"TNNAPIET"
VERSION = 2  # 2 added the SHAP section; version 1 blobs (no SHAP: static sizes) still read
READABLE_VERSIONS = (1, 2)
HEADER_SIZE = 64
TOKEN_SIZE = 32  # ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN
DATA_ALIGNMENT = 16  # each inline constant starts at a multiple of this in the data section
MAX_RANK = 8  # more dimensions than any NNAPI operation takes: refused as corruption
MAX_STRING = 4096


class Section(IntEnum):
    """Section tags, in the order they appear (four ASCII bytes read as a little-endian u32)."""

    OPTIONS = int.from_bytes(b"OPTS", "little")
    MODEL = int.from_bytes(b"MODL", "little")
    INPUTS = int.from_bytes(b"INPT", "little")
    OUTPUTS = int.from_bytes(b"OUTP", "little")
    DATA = int.from_bytes(b"DATA", "little")
    SHAPES = int.from_bytes(b"SHAP", "little")


class ValueKind(IntEnum):
    """Where an operand's value comes from."""

    NONE = 0  # a variable: model input, output or temporary
    INLINE = 1  # constant bytes in the blob's data section
    NAMED = 2  # constant bytes in ExecuTorch's named data map (large constants)
    OMITTED = 3  # an optional operand given no value
    MODEL = 4  # a MODEL operand: refers to another model of the blob


class Conversion(IntEnum):
    """How an ExecuTorch tensor becomes the NNAPI operand (inputs) and back (outputs); the
    direction of a cast or (de)quantization follows from the NNAPI operand's type."""

    COPY = 0  # same bytes (only the layout may change)
    INT64_INT32 = 1  # int64 <-> TENSOR_INT32 (NNAPI has no 64-bit integers)
    BOOL_INT32 = 2  # bool <-> TENSOR_INT32 (the lowerer takes bool inputs as int32)
    QUANTIZE = 3  # float32 <-> TENSOR_QUANT8_ASYMM(_SIGNED) with the operand's scale and zp


class Flag(IntEnum):
    """Bits of the options' flags."""

    RELAX_FP32_TO_FP16 = 1
    CACHING = 2
    BURST = 4


# ExecuTorch's ScalarType codes (runtime/core/portable_type/scalar_type.h) the mapping uses.
class ScalarType(IntEnum):
    BYTE = 0  # uint8
    CHAR = 1  # int8
    SHORT = 2
    INT = 3
    LONG = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    BOOL = 11


@dataclass(frozen=True, kw_only=True)
class OperandQuant:
    """An operand's quantization: one scale and zero point, or per-channel scales
    (TENSOR_QUANT8_SYMM_PER_CHANNEL: ``channel_dim`` set)."""

    scale: float = 0.0
    zero_point: int = 0
    channel_dim: int | None = None
    channel_scales: tuple[float, ...] = ()


@dataclass(frozen=True, kw_only=True)
class OperandValue:
    """Where an operand's value comes from; only the fields of its ``kind`` are read."""

    kind: ValueKind = ValueKind.NONE
    data: bytes = b""  # INLINE: the bytes (their place in the data section is the writer's)
    key: str = ""  # NAMED: the named data map's key
    length: int = 0  # NAMED: the value's size in bytes
    model: int = 0  # MODEL: index of the referenced model in the blob (> this model's)


@dataclass(frozen=True)
class BlobOperand:
    type: int  # OperandType code
    dimensions: tuple[int, ...] = ()
    quant: OperandQuant = OperandQuant()
    value: OperandValue = OperandValue()


@dataclass(frozen=True)
class BlobOperation:
    type: int  # OperationType code
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class BlobModel:
    operands: tuple[BlobOperand, ...]
    operations: tuple[BlobOperation, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    relax_float32_to_float16: bool = False


@dataclass(frozen=True)
class BlobTensor:
    """One ExecuTorch input or output and the NNAPI model input or output it is."""

    nnapi_index: int  # position among the main model's inputs (or outputs)
    dtype: ScalarType  # the ExecuTorch tensor's dtype
    shape: tuple[int, ...]  # the ExecuTorch tensor's shape (PyTorch's order)
    layout: tuple[int, ...]  # NNAPI dimension i holds PyTorch dimension layout[i]
    conversion: Conversion = Conversion.COPY


@dataclass(frozen=True, kw_only=True)
class Timeouts:
    """NNAPI's timeouts, in nanoseconds (0: none, or NNAPI's default for loops)."""

    compile_ns: int = 0
    execute_ns: int = 0
    loop_ns: int = 0  # how long a WHILE may run


@dataclass(frozen=True)
class CompileSettings:
    """How the runtime compiles and runs the model (0 or empty: NNAPI's default)."""

    preference: int = 2  # PREFER_SUSTAINED_SPEED
    priority: int = 0  # ANEURALNETWORKS_PRIORITY_* (90, 100, 110)
    timeouts: Timeouts = Timeouts()
    flags: int = Flag.CACHING | Flag.BURST
    feature_level: int = 1  # the lowest NNAPI feature level that runs the model
    cache_dir: str = ""  # where compilations are cached (a runtime spec may name another)
    devices: tuple[str, ...] = ()  # device names to compile for (empty: NNAPI chooses)


@dataclass(frozen=True)
class Blob:
    settings: CompileSettings
    models: tuple[BlobModel, ...]  # the main model first
    inputs: tuple[BlobTensor, ...]
    outputs: tuple[BlobTensor, ...]
    named_data: dict[str, bytes] = field(default_factory=dict, compare=False)  # NAMED values,
    # which go to ExecuTorch's named data store, not into the blob
    shapes: ShapePrograms = ShapePrograms()  # the open input dimensions (none: static)


class BlobError(ValueError):
    """A blob that is truncated, corrupted or of another version."""


# --------------------------------------------------------------------------------- writing


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def u8(self, v: int) -> None:
        self.parts.append(struct.pack("<B", v))

    def u32(self, v: int) -> None:
        self.parts.append(struct.pack("<I", v))

    def i32(self, v: int) -> None:
        self.parts.append(struct.pack("<i", v))

    def u64(self, v: int) -> None:
        self.parts.append(struct.pack("<Q", v))

    def f32(self, v: float) -> None:
        self.parts.append(struct.pack("<f", v))

    def u32s(self, values: tuple[int, ...]) -> None:
        self.u32(len(values))
        self.parts.append(struct.pack(f"<{len(values)}I", *values))

    def string(self, text: str) -> None:
        data = text.encode()
        if len(data) > MAX_STRING:
            raise ValueError(f"string of {len(data)} bytes is longer than {MAX_STRING}")
        self.u32(len(data))
        self.parts.append(data)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def write_blob(blob: Blob) -> bytes:
    """The blob's bytes (header, sections, data)."""
    data = bytearray()
    sections = [(Section.OPTIONS, _options(blob.settings))]
    for model in blob.models:
        sections.append((Section.MODEL, _model(model, data)))
    sections.append((Section.INPUTS, _tensors(blob.inputs)))
    sections.append((Section.OUTPUTS, _tensors(blob.outputs)))
    sections.append((Section.DATA, bytes(data)))
    sections.append((Section.SHAPES, _shapes(blob.shapes)))
    out = _Writer()
    out.u32(len(blob.models))
    for tag, payload in sections:
        out.u32(int(tag))
        out.u64(len(payload))
        out.parts.append(payload)
    body = out.bytes()
    token = hashlib.sha256(body).digest()
    total = HEADER_SIZE + len(body)
    crc = zlib.crc32(token + body)
    header = MAGIC + struct.pack("<IIQII", VERSION, HEADER_SIZE, total, crc, 0) + token
    assert len(header) == HEADER_SIZE
    return header + body


def _options(s: CompileSettings) -> bytes:
    w = _Writer()
    w.i32(s.preference)
    w.i32(s.priority)
    w.u64(s.timeouts.compile_ns)
    w.u64(s.timeouts.execute_ns)
    w.u64(s.timeouts.loop_ns)
    w.u32(s.flags)
    w.u32(s.feature_level)
    w.string(s.cache_dir)
    w.u32(len(s.devices))
    for name in s.devices:
        w.string(name)
    return w.bytes()


def _model(model: BlobModel, data: bytearray) -> bytes:
    w = _Writer()
    w.u32(len(model.operands))
    for o in model.operands:
        q, v = o.quant, o.value
        w.i32(o.type)
        w.u32s(o.dimensions)
        w.f32(q.scale)
        w.i32(q.zero_point)
        w.u8(int(v.kind))
        if v.kind == ValueKind.INLINE:
            data.extend(b"\0" * (-len(data) % DATA_ALIGNMENT))
            w.u64(len(data))
            w.u64(len(v.data))
            data.extend(v.data)
        elif v.kind == ValueKind.NAMED:
            w.string(v.key)
            w.u64(v.length)
        elif v.kind == ValueKind.MODEL:
            w.u32(v.model)
        w.u8(q.channel_dim is not None)
        if q.channel_dim is not None:
            w.u32(q.channel_dim)
            w.u32(len(q.channel_scales))
            for s in q.channel_scales:
                w.f32(s)
    w.u32(len(model.operations))
    for op in model.operations:
        w.i32(op.type)
        w.u32s(op.inputs)
        w.u32s(op.outputs)
    w.u32s(model.inputs)
    w.u32s(model.outputs)
    w.u8(model.relax_float32_to_float16)
    return w.bytes()


def _shapes(shapes: ShapePrograms) -> bytes:
    w = _Writer()
    w.u32(len(shapes.bounds))
    for b in shapes.bounds:
        for v in (b.input, b.dim, b.minimum, b.maximum):
            w.u32(v)
    w.u32(len(shapes.patches))
    for p in shapes.patches:
        w.u8(int(p.target))
        w.u32(p.operand)
        w.u32(p.element)
        w.u32(len(p.program))
        w.parts.append(struct.pack(f"<{len(p.program)}i", *p.program))
    return w.bytes()


def _tensors(tensors: tuple[BlobTensor, ...]) -> bytes:
    w = _Writer()
    w.u32(len(tensors))
    for t in tensors:
        w.u32(t.nnapi_index)
        w.i32(int(t.dtype))
        w.u32(len(t.shape))
        for d in t.shape:
            w.parts.append(struct.pack("<q", d))
        for d in t.layout:
            w.u32(d)
        w.u8(int(t.conversion))
    return w.bytes()


# --------------------------------------------------------------------------------- reading


class _Reader:
    """A bounded cursor: every read names what it reads, and running out is a BlobError."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.pos, self.where = data, 0, where

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise BlobError(f"{self.where}: truncated reading {what} ({n} bytes at offset"
                            f" {self.pos}, {len(self.data) - self.pos} left)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str, what: str) -> int:
        value: int = struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]
        return value

    def u8(self, what: str) -> int:
        return self.unpack("<B", what)

    def u32(self, what: str) -> int:
        return self.unpack("<I", what)

    def i32(self, what: str) -> int:
        return self.unpack("<i", what)

    def u64(self, what: str) -> int:
        return self.unpack("<Q", what)

    def f32(self, what: str) -> float:
        value: float = struct.unpack("<f", self.take(4, what))[0]
        return value

    def count(self, what: str, item_size: int, limit: int | None = None) -> int:
        """A count whose items must fit in what is left (no allocation from a bad count)."""
        n = self.u32(f"{what} count")
        if n * item_size > len(self.data) - self.pos or (limit is not None and n > limit):
            raise BlobError(f"{self.where}: {what} count {n} does not fit the"
                            f" {len(self.data) - self.pos} bytes left")
        return n

    def u32s(self, what: str, limit: int | None = None) -> tuple[int, ...]:
        n = self.count(what, 4, limit)
        return struct.unpack(f"<{n}I", self.take(4 * n, what))

    def string(self, what: str) -> str:
        n = self.count(what, 1, MAX_STRING)
        try:
            return self.take(n, what).decode()
        except UnicodeDecodeError:
            raise BlobError(f"{self.where}: {what} is not UTF-8") from None

    def done(self) -> None:
        if self.pos != len(self.data):
            raise BlobError(f"{self.where}: {len(self.data) - self.pos} bytes left over")


def read_blob(blob: bytes) -> Blob:
    """The blob back from its bytes, checked as the C++ reader checks it (structure only:
    NNAPI validates the model itself)."""
    if len(blob) < HEADER_SIZE:
        raise BlobError(f"header: truncated: {len(blob)} bytes, the header alone is"
                        f" {HEADER_SIZE}")
    if blob[:8] != MAGIC:
        raise BlobError(f"header: magic {blob[:8]!r} is not {MAGIC!r}: not an NNAPI blob")
    version, header_size, total, crc, reserved = struct.unpack("<IIQII", blob[8:32])
    if version not in READABLE_VERSIONS:
        raise BlobError(f"header: version {version}; this reader reads versions"
                        f" {READABLE_VERSIONS}")
    if header_size != HEADER_SIZE or reserved != 0:
        raise BlobError(f"header: header size {header_size} or reserved {reserved} is wrong")
    if total != len(blob):
        raise BlobError(f"header: the blob says it has {total} bytes, it has {len(blob)}")
    if zlib.crc32(blob[32:]) != crc:
        raise BlobError("header: CRC-32 mismatch: the blob is corrupted")
    body = _Reader(blob[HEADER_SIZE:], "body")
    model_count = body.count("model", 12, 4096)
    sections: list[tuple[Section, _Reader]] = []
    for expected in [Section.OPTIONS, *[Section.MODEL] * model_count, Section.INPUTS,
                     Section.OUTPUTS, Section.DATA, *[Section.SHAPES] * (version >= 2)]:
        tag = body.u32("section tag")
        if tag != expected:
            raise BlobError(f"body: section {len(sections)} has tag {tag:#x}, expected"
                            f" {expected.name}")
        length = body.u64(f"{expected.name} length")
        sections.append((expected, _Reader(body.take(length, expected.name), expected.name)))
    body.done()
    after = 1 + model_count  # INPUTS, OUTPUTS, DATA, then SHAPES from version 2
    data = sections[after + 2][1].data
    settings = _read_options(sections[0][1])
    models = tuple(_read_model(r, i, model_count, data)
                   for i, (_, r) in enumerate(sections[1:after]))
    inputs = _read_tensors(sections[after][1], "input", len(models[0].inputs))
    outputs = _read_tensors(sections[after + 1][1], "output", len(models[0].outputs))
    shapes = _read_shapes(sections[after + 3][1], models, inputs, outputs) if version >= 2 \
        else ShapePrograms()
    return Blob(settings, models, inputs, outputs, shapes=shapes)


def _read_options(r: _Reader) -> CompileSettings:
    settings = CompileSettings(
        preference=r.i32("preference"), priority=r.i32("priority"),
        timeouts=Timeouts(compile_ns=r.u64("compile timeout"), execute_ns=r.u64("timeout"),
                          loop_ns=r.u64("loop timeout")),
        flags=r.u32("flags"),
        feature_level=r.u32("feature level"), cache_dir=r.string("cache directory"),
        devices=tuple(r.string("device name") for _ in range(r.count("device", 4, 64))))
    r.done()
    return settings


def _read_model(r: _Reader, index: int, model_count: int, data: bytes) -> BlobModel:
    r.where = f"model {index}"
    operands = tuple(_read_operand(r, i, index, model_count, data)
                     for i in range(r.count("operand", 18)))
    operations = []
    for k in range(r.count("operation", 12)):
        op_type = r.i32(f"operation {k} type")
        ins, outs = r.u32s(f"operation {k} input"), r.u32s(f"operation {k} output")
        for i in ins + outs:
            if i >= len(operands):
                raise BlobError(f"model {index}: operation {k} refers to operand {i} of"
                                f" {len(operands)}")
        operations.append(BlobOperation(op_type, ins, outs))
    inputs, outputs = r.u32s("model input"), r.u32s("model output")
    for i in inputs + outputs:
        if i >= len(operands):
            raise BlobError(f"model {index}: model input or output {i} is not an operand")
    relax = r.u8("relax flag")
    if relax > 1:
        raise BlobError(f"model {index}: relax flag {relax} is not 0 or 1")
    r.done()
    return BlobModel(operands, tuple(operations), inputs, outputs, bool(relax))


def _read_operand(r: _Reader, i: int, model: int, model_count: int,
                  data: bytes) -> BlobOperand:
    what = f"operand {i}"
    op_type = r.i32(f"{what} type")
    if not 0 <= op_type <= 15:
        raise BlobError(f"model {model}: {what} has unknown type {op_type}")
    dims = r.u32s(f"{what} dimension", MAX_RANK)
    scale, zero_point = r.f32(f"{what} scale"), r.i32(f"{what} zero point")
    kind_code = r.u8(f"{what} value kind")
    if kind_code > max(ValueKind):
        raise BlobError(f"model {model}: {what} has unknown value kind {kind_code}")
    kind = ValueKind(kind_code)
    value, key, length, ref = b"", "", 0, 0
    if kind == ValueKind.INLINE:
        offset, length = r.u64(f"{what} offset"), r.u64(f"{what} length")
        if offset > len(data) or length > len(data) - offset:
            raise BlobError(f"model {model}: {what} value [{offset}, +{length}) lies outside"
                            f" the {len(data)}-byte data section")
        value, length = data[offset:offset + length], 0
    elif kind == ValueKind.NAMED:
        key, length = r.string(f"{what} key"), r.u64(f"{what} length")
    elif kind == ValueKind.MODEL:
        ref = r.u32(f"{what} model")
        if not model < ref < model_count or op_type != 15:
            raise BlobError(f"model {model}: {what} refers to model {ref} (models refer to"
                            f" later models, of {model_count})")
    channel_dim: int | None = None
    scales: tuple[float, ...] = ()
    has_channels = r.u8(f"{what} per-channel flag")
    if has_channels > 1:
        raise BlobError(f"model {model}: {what} per-channel flag {has_channels}")
    if has_channels:
        channel_dim = r.u32(f"{what} channel dimension")
        n = r.count(f"{what} channel scale", 4)
        scales = tuple(r.f32(f"{what} channel scale") for _ in range(n))
        if channel_dim >= len(dims) or n != dims[channel_dim]:
            raise BlobError(f"model {model}: {what} has {n} channel scales along dimension"
                            f" {channel_dim} of {list(dims)}")
    return BlobOperand(op_type, dims,
                       OperandQuant(scale=scale, zero_point=zero_point,
                                    channel_dim=channel_dim, channel_scales=scales),
                       OperandValue(kind=kind, data=value, key=key, length=length, model=ref))


def _read_tensors(r: _Reader, what: str, nnapi_count: int) -> tuple[BlobTensor, ...]:
    result = []
    for k in range(r.count(what, 13)):
        index, dtype = r.u32(f"{what} {k} index"), r.i32(f"{what} {k} dtype")
        rank = r.count(f"{what} {k} dimension", 12, MAX_RANK)
        shape = tuple(struct.unpack("<q", r.take(8, f"{what} {k} shape"))[0]
                      for _ in range(rank))
        layout = tuple(r.u32(f"{what} {k} layout") for _ in range(rank))
        conversion = r.u8(f"{what} {k} conversion")
        if index >= nnapi_count or dtype not in set(ScalarType) \
                or sorted(layout) != list(range(rank)) or any(d < 0 for d in shape) \
                or conversion > max(Conversion):
            raise BlobError(f"{what} {k}: index {index}, dtype {dtype}, shape {shape}, layout"
                            f" {layout} or conversion {conversion} is invalid")
        result.append(BlobTensor(index, ScalarType(dtype), shape, layout,
                                 Conversion(conversion)))
    fed = [sum(t.nnapi_index == i for t in result) for i in range(nnapi_count)]
    if 0 in fed or (what == "input" and any(n > 1 for n in fed)):
        raise BlobError(f"{what}s: the model's {what}s are fed {fed} times")
    r.done()
    return tuple(result)


def _read_shapes(r: _Reader, models: tuple[BlobModel, ...], inputs: tuple[BlobTensor, ...],
                 outputs: tuple[BlobTensor, ...]) -> ShapePrograms:
    bounds: list[DimBound] = []
    for k in range(r.count("bound", 16, 64)):
        b = DimBound(*(r.u32(f"bound {k}") for _ in range(4)))
        shape = inputs[b.input].shape if b.input < len(inputs) else ()
        if b.dim >= len(shape) or not 1 <= b.minimum <= shape[b.dim] <= b.maximum \
                or b.maximum > 2**31 - 1 or any((o.input, o.dim) == (b.input, b.dim)
                                                 for o in bounds):
            raise BlobError(f"SHAP: bound {k} ({b}) does not fit input shapes"
                            f" {[list(t.shape) for t in inputs]}")
        bounds.append(b)
    if bounds and len(models) > 1:
        raise BlobError("SHAP: open input dimensions with models IF or WHILE call")
    patches = []
    for k in range(r.count("patch", 13, 1 << 16)):
        target, operand, element = r.u8(f"patch {k} target"), r.u32(f"patch {k} operand"), \
            r.u32(f"patch {k} element")
        n = r.count(f"patch {k} program", 4, 1024)
        program = struct.unpack(f"<{n}i", r.take(4 * n, f"patch {k} program"))
        problem = program_problem(program, bounds) \
            if _patch_fits(target, operand, element, models[0], outputs) \
            else "targets no such element"
        if problem is not None or not bounds:
            raise BlobError(f"SHAP: patch {k} (target {target}, operand {operand}, element"
                            f" {element}): its program {problem or 'reads no open dimension'}")
        patches.append(SizePatch(PatchTarget(target), operand, element, program))
    r.done()
    return ShapePrograms(tuple(bounds), tuple(patches))


def _patch_fits(target: int, index: int, element: int, main: BlobModel,
                outputs: tuple[BlobTensor, ...]) -> bool:
    """Whether a patch's target exists: an operand dimension, an element of an inline INT32
    constant, an ExecuTorch output dimension."""
    if target == PatchTarget.OUTPUT:
        return index < len(outputs) and element < len(outputs[index].shape)
    if index >= len(main.operands):
        return False
    o = main.operands[index]
    if target == PatchTarget.DIMENSION:
        return element < len(o.dimensions)
    return (target == PatchTarget.VALUE and o.type in (1, 4)  # INT32, TENSOR_INT32
            and o.value.kind == ValueKind.INLINE and element < len(o.value.data) // 4)
