"""A finished Model as a line-based text file that ``tools/nnapi_probe.c`` reads with plain C.

The probe rebuilds the model through a phone's NNAPI C API to ask each driver which of its
operations it supports; a JSON or binary format would need a parser on the phone, these
lines need only ``fscanf``. Each line is a keyword and numbers; codes come with their names
so that C needs no table of names (docs/device_profiles.md, "The probe"):

    torch-nnapi-probe-model 1
    relax 0|1
    operand CODE NAME SCALE ZERO_POINT RANK D0 D1 ...      (one per operand, in index order)
    channels INDEX CHANNEL_DIM COUNT S0 S1 ...             (per-channel scales)
    value INDEX BYTE_COUNT HEX                             (a constant, little-endian bytes)
    zeros INDEX BYTE_COUNT                                 (a constant written as zeros)
    omitted INDEX                                          (an optional input left out)
    operation CODE NAME INPUT_COUNT I... OUTPUT_COUNT O... (in run order)
    inputs COUNT I...
    outputs COUNT O...
    end

Constants above ``VALUE_LIMIT`` bytes (weights) are written as ``zeros``: a driver decides
support from operand types, shapes, quantization and scalar arguments, not from weights, and
a MobileNet's file stays a few kilobytes. IF and WHILE bodies (MODEL operands) are not
written: the probe asks about one graph.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from .codes import OperandType, OperationType
from .errors import BadDataError
from .model import Lifetime, Model, element_count
from .operand_types import type_info

MAGIC = "torch-nnapi-probe-model 1"
VALUE_LIMIT = 1024  # bytes: larger constants are written as zeros


class ProbeModelError(ValueError):
    """A probe model file that cannot be read or a model that cannot be written: one line,
    ``<path>:<line>: <problem>``."""


def probe_model_text(model: Model) -> str:
    """The probe file's text for the finished ``model``."""
    if not model.finished:
        raise ProbeModelError("the model must be finished before it is written for the probe")
    lines = [MAGIC, f"relax {int(model.relax_float32_to_float16)}"]
    for index, operand in enumerate(model.operands):
        if operand.info.is_model:
            raise ProbeModelError(f"operand {index} is a MODEL operand (an IF or WHILE body):"
                                  " the probe model format holds one graph")
        dims = " ".join(str(d) for d in operand.dimensions)
        lines.append(f"operand {int(operand.type)} {operand.type.name} {operand.scale:.9g}"
                     f" {operand.zero_point} {len(operand.dimensions)} {dims}".rstrip())
    for index, operand in enumerate(model.operands):
        if operand.channel_quant is not None:
            scales = " ".join(f"{s:.9g}" for s in operand.channel_quant.scales)
            lines.append(f"channels {index} {operand.channel_quant.channel_dim}"
                         f" {len(operand.channel_quant.scales)} {scales}")
        if operand.lifetime is Lifetime.NO_VALUE:
            lines.append(f"omitted {index}")
        elif operand.lifetime is Lifetime.CONSTANT and operand.value is not None:
            data = np.ascontiguousarray(operand.value,
                                        operand.info.dtype.newbyteorder("<")).tobytes()
            if len(data) <= VALUE_LIMIT:
                lines.append(f"value {index} {len(data)} {data.hex()}")
            else:
                lines.append(f"zeros {index} {len(data)}")
    for operation in model.operations:
        lines.append(f"operation {int(operation.type)} {operation.type.name}"
                     f" {len(operation.inputs)} {' '.join(map(str, operation.inputs))}"
                     f" {len(operation.outputs)} {' '.join(map(str, operation.outputs))}")
    lines.append(f"inputs {len(model.inputs)} {' '.join(map(str, model.inputs))}".rstrip())
    lines.append(f"outputs {len(model.outputs)} {' '.join(map(str, model.outputs))}".rstrip())
    lines.append("end")
    return "\n".join(lines) + "\n"


def write_probe_model(model: Model, path: str | os.PathLike[str]) -> None:
    """Writes the finished ``model`` to ``path`` for ``tools/nnapi_probe.c``."""
    text = probe_model_text(model)
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def read_probe_model(path: str | os.PathLike[str]) -> Model:
    """The finished Model a probe file describes (zeros where it wrote none)."""
    try:
        with open(path, encoding="ascii") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ProbeModelError(f"{path}: cannot be read ({e})") from None
    reader = _Reader(str(path), text)
    try:
        return reader.model()
    except BadDataError as e:
        raise ProbeModelError(f"{path}:{reader.line_number}: {e}") from None


class _Reader:
    """Reads the lines in order, keeping the line number for errors."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.lines = text.splitlines()
        self.line_number = 0
        self.model_inputs: list[int] = []

    def error(self, problem: str) -> ProbeModelError:
        return ProbeModelError(f"{self.path}:{self.line_number}: {problem}")

    def records(self) -> Iterator[tuple[str, list[str]]]:
        for number, line in enumerate(self.lines, 1):
            self.line_number = number
            words = line.split()
            if words:
                yield words[0], words[1:]

    def model(self) -> Model:
        records = self.records()
        first = next(records, None)
        if first is None or " ".join([first[0], *first[1]]) != MAGIC:
            raise self.error(f"not a probe model file (its first line is not {MAGIC!r})")
        model, ended = Model(), False
        for keyword, words in records:
            if ended:
                raise self.error(f"{keyword!r} after 'end'")
            handler = getattr(self, "_" + keyword, None)
            if handler is None:
                raise self.error(f"unknown line {keyword!r}")
            ended = handler(model, words) is True
        if not ended:
            raise self.error("the file ends before its 'end' line (truncated?)")
        model.finish()
        return model

    def _integers(self, words: list[str], what: str) -> list[int]:
        try:
            return [int(w) for w in words]
        except ValueError:
            raise self.error(f"{what}: expected integers, got {' '.join(words)!r}") from None

    def _counted(self, words: list[str], what: str) -> tuple[list[int], list[str]]:
        """A count followed by that many integers; the rest of the words."""
        if not words:
            raise self.error(f"{what}: missing count")
        count = self._integers(words[:1], what)[0]
        if count < 0 or len(words) < 1 + count:
            raise self.error(f"{what}: {count} listed, {len(words) - 1} given")
        return self._integers(words[1:1 + count], what), words[1 + count:]

    def _named_code(self, words: list[str], names: type[OperandType] | type[OperationType],
                    what: str) -> int:
        if len(words) < 2:
            raise self.error(f"{what}: expected a code and a name")
        code = self._integers(words[:1], what)[0]
        if words[1] not in names.__members__ or int(names[words[1]]) != code:
            raise self.error(f"{what}: code {code} is not {words[1]}")
        return code

    def _relax(self, model: Model, words: list[str]) -> None:
        model.relax_computation_float32_to_float16(self._integers(words, "relax") == [1])

    def _operand(self, model: Model, words: list[str]) -> None:
        what = f"operand {len(model.operands)}"
        code = self._named_code(words, OperandType, what)
        if len(words) < 5:
            raise self.error(f"{what}: expected CODE NAME SCALE ZERO_POINT RANK DIMS...")
        try:
            scale = float(words[2])
        except ValueError:
            raise self.error(f"{what}: scale {words[2]!r} is not a number") from None
        zero_point = self._integers(words[3:4], what)[0]
        dims, rest = self._counted(words[4:], what + " dimensions")
        if rest:
            raise self.error(f"{what}: {len(rest)} words after its dimensions")
        model.add_operand(code, dims, scale, zero_point)

    def _channels(self, model: Model, words: list[str]) -> None:
        if len(words) < 3:
            raise self.error("channels: expected INDEX CHANNEL_DIM COUNT SCALES...")
        index, channel_dim = self._integers(words[:2], "channels")
        try:
            scales = [float(w) for w in self._counted_words(words[2:], "channels")]
        except ValueError:
            raise self.error("channels: scales are not numbers") from None
        model.set_operand_symm_per_channel_quant_params(index, scales, channel_dim)

    def _counted_words(self, words: list[str], what: str) -> list[str]:
        count = self._integers(words[:1], what)[0] if words else -1
        if count < 0 or len(words) != 1 + count:
            raise self.error(f"{what}: expected a count and that many values")
        return words[1:]

    def _value(self, model: Model, words: list[str]) -> None:
        if len(words) != 3:
            raise self.error("value: expected INDEX BYTE_COUNT HEX")
        index, count = self._integers(words[:2], "value")
        try:
            data = bytes.fromhex(words[2])
        except ValueError:
            raise self.error("value: the bytes are not hexadecimal") from None
        if len(data) != count:
            raise self.error(f"value: {count} bytes announced, {len(data)} given")
        model.set_operand_value(index, data)

    def _zeros(self, model: Model, words: list[str]) -> None:
        index, count = self._integers(words, "zeros") if len(words) == 2 else (-1, -1)
        if not 0 <= index < len(model.operands):
            raise self.error("zeros: expected the INDEX of an operand and its BYTE_COUNT")
        operand = model.operands[index]
        expected = element_count(operand.dimensions) * type_info(operand.type).element_size
        if count != expected:
            raise self.error(f"zeros: {count} bytes for operand {index}, which has {expected}")
        model.set_operand_value(index, bytes(count))

    def _omitted(self, model: Model, words: list[str]) -> None:
        model.set_operand_value(self._integers(words, "omitted")[0] if len(words) == 1 else -1,
                                None)

    def _operation(self, model: Model, words: list[str]) -> None:
        what = f"operation {len(model.operations)}"
        code = self._named_code(words, OperationType, what)
        inputs, rest = self._counted(words[2:], what + " inputs")
        outputs, rest = self._counted(rest, what + " outputs")
        if rest:
            raise self.error(f"{what}: {len(rest)} words after its outputs")
        model.add_operation(code, inputs, outputs)

    def _inputs(self, model: Model, words: list[str]) -> None:
        self.model_inputs = self._integers(self._counted_words(words, "inputs"), "inputs")

    def _outputs(self, model: Model, words: list[str]) -> None:
        outputs = self._integers(self._counted_words(words, "outputs"), "outputs")
        model.identify_inputs_and_outputs(self.model_inputs, outputs)

    def _end(self, model: Model, words: list[str]) -> bool:
        return True
