"""Reading conformance vectors in the shared/cts JSON format (see its README)."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ..nnapi.codes import OperandType
from ..nnapi.model import Model
from ..nnapi.operand_types import type_info

VERSIONS = ("V1_0", "V1_1", "V1_2")


@dataclass(frozen=True)
class CtsTest:
    """One test of a spec file: a model variant run on a list of examples."""

    spec_name: str
    version: str
    path: Path
    name: str
    kind: str
    model_key: str
    examples_key: str

    @property
    def id(self) -> str:
        return f"{self.version}/{self.name}"

    def load(self) -> tuple[dict, list[dict]]:
        spec = load_spec(self.path)
        return spec["models"][self.model_key], spec["examples"][self.examples_key]


@lru_cache(maxsize=8)
def load_spec(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def discover(root: Path | str, versions: Sequence[str] = VERSIONS,
             only: Sequence[str] = ()) -> Iterator[CtsTest]:
    """Every test under ``root/<version>/*.json``; ``only`` keeps names matching a pattern.

    A pattern matches a test name or its spec (file) name, with shell-style wildcards.
    """
    root = Path(root)
    for version in versions:
        directory = root / version
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.json")):
            spec = load_spec(path)
            spec_name = spec.get("name", path.stem)
            for test in spec["tests"]:
                if only and not any(fnmatch.fnmatchcase(test["name"], p)
                                    or fnmatch.fnmatchcase(spec_name, p) for p in only):
                    continue
                yield CtsTest(spec_name, spec.get("version", version), path, test["name"],
                              test["kind"], test["model"], test["examples"])


def build_model(spec_model: dict) -> Model:
    """Builds and finishes a Model from a spec's model description."""
    model = Model()
    for operand in spec_model["operands"]:
        op_type = OperandType[operand["type"]]
        index = model.add_operand(op_type, operand["dimensions"], operand["scale"],
                                  operand["zeroPoint"], name=operand.get("name"))
        quant = operand.get("channelQuant")
        if quant:
            model.set_operand_symm_per_channel_quant_params(index, quant["scales"],
                                                            quant["channelDim"])
        if "value" in operand:
            value = operand["value"]
            model.set_operand_value(index, None if len(value) == 0 else
                                    _typed(value, op_type))
    for operation in spec_model["operations"]:
        model.add_operation(operation["code"], operation["inputs"], operation["outputs"])
    model.identify_inputs_and_outputs(spec_model["inputs"], spec_model["outputs"])
    model.relax_computation_float32_to_float16(spec_model["relaxComputationFloat32toFloat16"])
    return model.finish()


def _typed(values: list, op_type: OperandType) -> np.ndarray:
    return np.asarray(values, dtype=np.float64 if type_info(op_type).is_float else np.int64) \
        .astype(type_info(op_type).dtype)


def example_arrays(spec_model: dict, side: dict, direction: str) -> list[np.ndarray | None]:
    """The typed arrays of an example's inputs or outputs, in model-input/output order.

    An input given as an empty list is omitted and comes back as None.
    """
    positions = spec_model["inputs"] if direction == "inputs" else spec_model["outputs"]
    values: dict[int, list] = {}
    for field_name, by_position in side.items():
        if field_name == "operandDimensions":
            continue
        for pos, vals in by_position.items():
            values[int(pos)] = vals
    dims = {int(k): v for k, v in side.get("operandDimensions", {}).items()}
    arrays: list[np.ndarray | None] = []
    for pos, operand_index in enumerate(positions):
        operand = spec_model["operands"][operand_index]
        vals = values.get(pos)
        if vals is None or (direction == "inputs" and len(vals) == 0):
            arrays.append(None)
            continue
        shape = dims.get(pos, operand["dimensions"])
        array = _typed(vals, OperandType[operand["type"]])
        if 0 in shape:
            array = array[:0]  # Android's specs give zero-sized operands a dummy value
        arrays.append(array.reshape(shape))
    return arrays


def relaxed_or_float16(spec_model: dict, example: dict) -> bool:
    """Whether the harness uses the relaxed float tolerance for this example."""
    if spec_model.get("relaxComputationFloat32toFloat16"):
        return True
    return bool(example["inputs"].get("float16Operands"))

