"""Reading conformance vectors in the shared/cts JSON format (see its README), and its Android 11
extensions (shared/cts11): referenced models for IF and WHILE, and tests that expect failure."""

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

VERSIONS = ("V1_0", "V1_1", "V1_2", "V1_3", "V1_3_cts_only")
# The spec files' name for operands of type MODEL (Android's HAL calls them subgraphs).
_TYPE_ALIASES = {"SUBGRAPH": OperandType.MODEL}


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
    # The model must be rejected (at finish, compilation or execution), never run to an answer.
    expect_failure: bool = False

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
                              test["kind"], test["model"], test["examples"],
                              bool(test.get("expectFailure", False)))


def operand_type(spec_operand: dict) -> OperandType:
    """The operand type of a spec operand ("SUBGRAPH" is MODEL)."""
    name = spec_operand["type"]
    return _TYPE_ALIASES[name] if name in _TYPE_ALIASES else OperandType[name]


def referenced_model_order(spec_model: dict) -> list[int]:
    """The positions of ``spec_model["referenced"]`` in an order that builds every model after
    the models it refers to (each must be finished before it is referred to)."""
    referenced = spec_model.get("referenced", [])
    order: list[int] = []
    visiting: set[int] = set()

    def visit(k: int) -> None:
        if k in order:
            return
        if k in visiting or not 0 <= k < len(referenced):
            raise ValueError(f"referenced model {k} is missing or refers to itself")
        visiting.add(k)
        for inner in model_references(referenced[k]):
            visit(inner)
        order.append(k)

    for k in model_references(spec_model):
        visit(k)
    return order


def model_references(spec_model: dict) -> list[int]:
    """The ``referenced`` positions a model's MODEL operands refer to."""
    return [int(o["value"][0]) for o in spec_model["operands"]
            if operand_type(o) == OperandType.MODEL]


def build_model(spec_model: dict) -> Model:
    """Builds and finishes a Model, and the models its IF and WHILE operations call, from a
    spec's model description."""
    referenced: dict[int, Model] = {}
    for k in referenced_model_order(spec_model):
        referenced[k] = _build_one(spec_model["referenced"][k], referenced)
    return _build_one(spec_model, referenced)


def _build_one(spec_model: dict, referenced: dict[int, Model]) -> Model:
    model = Model()
    for operand in spec_model["operands"]:
        op_type = operand_type(operand)
        index = model.add_operand(op_type, operand["dimensions"], operand["scale"],
                                  operand["zeroPoint"], name=operand.get("name"))
        quant = operand.get("channelQuant")
        if quant:
            model.set_operand_symm_per_channel_quant_params(index, quant["scales"],
                                                            quant["channelDim"])
        if "value" not in operand:
            continue
        value = operand["value"]
        if op_type == OperandType.MODEL:
            model.set_operand_value_from_model(index, referenced[int(value[0])])
        else:
            model.set_operand_value(index, None if len(value) == 0 else _typed(value, op_type))
    for operation in spec_model["operations"]:
        model.add_operation(operation["code"], operation["inputs"], operation["outputs"])
    model.identify_inputs_and_outputs(spec_model["inputs"], spec_model["outputs"])
    model.relax_computation_float32_to_float16(
        spec_model.get("relaxComputationFloat32toFloat16", False))
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
        array = _typed(vals, operand_type(operand))
        if 0 in shape:
            array = array[:0]  # Android's specs give zero-sized operands a dummy value
        arrays.append(array.reshape(shape))
    return arrays


def relaxed_or_float16(spec_model: dict, example: dict) -> bool:
    """Whether the harness uses the relaxed float tolerance for this example."""
    if spec_model.get("relaxComputationFloat32toFloat16"):
        return True
    return bool(example["inputs"].get("float16Operands"))

