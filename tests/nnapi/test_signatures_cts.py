"""Signature validation for every operation type, from the conformance models.

Each CTS model is a valid use of its operation; a one-place corruption of it must be rejected
at build time with an error that names the operation (index and type) and, where there is
one, the offending operand. This exercises every operation's declared signature in
``nnapi.signatures`` against NeuralNetworks.h's rules without restating them here.
"""

from __future__ import annotations

import copy
import re

import pytest

from torch_nnapi.conformance.spec import SpecModel, build_model
from torch_nnapi.nnapi import BadDataError

from ..conformance.cts_cases import cts_tests
from ..conftest import CTS_MISSING_REASON, cts_root


def _isolate(model: SpecModel, k: int) -> SpecModel:
    """A model of operation ``k`` alone: the operands it reads that have no value become model
    inputs, and what it writes becomes model outputs."""
    operation = model["operations"][k]
    used = list(dict.fromkeys([*operation["inputs"], *operation["outputs"]]))
    renumber = {old: new for new, old in enumerate(used)}
    return {
        "referenced": model.get("referenced", []),  # what IF and WHILE call
        "operands": [copy.deepcopy(model["operands"][i]) for i in used],
        "operations": [{**operation, "inputs": [renumber[i] for i in operation["inputs"]],
                        "outputs": [renumber[o] for o in operation["outputs"]]}],
        "inputs": [renumber[i] for i in operation["inputs"]
                   if "value" not in model["operands"][i]],
        "outputs": [renumber[o] for o in operation["outputs"]],
        "relaxComputationFloat32toFloat16": model["relaxComputationFloat32toFloat16"],
    }


def _single_operation_models() -> list:
    """One model per (operation type, input count) that the CTS uses, each holding that one
    operation (taken out of a larger CTS model when the operation never appears alone)."""
    root = cts_root()
    if root is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=CTS_MISSING_REASON),
                             id="cts-missing")]
    chosen: dict[tuple[str, int], object] = {}
    for _, test in cts_tests():
        if test.kind != "GeneratedTests" or test.expect_failure:
            continue
        model, _ = test.load()
        for k, operation in enumerate(model["operations"]):
            key = (operation["type"], len(operation["inputs"]))
            if key not in chosen:
                chosen[key] = pytest.param(_isolate(model, k),
                                           id=f"{key[0]}-{key[1]}in-{test.name}")
    return list(chosen.values())


MODELS = _single_operation_models()


def _rejected(model: SpecModel, *, naming: str = "") -> BadDataError:
    """Builds ``model`` and returns the error, checking that it names the operation."""
    name = model["operations"][0]["type"]
    with pytest.raises(BadDataError) as caught:
        build_model(model)
    message = str(caught.value)
    assert re.search(rf"operation 0 \({name}\)", message), message
    if naming:
        assert naming in message, message
    return caught.value


@pytest.mark.parametrize("model", MODELS)
def test_the_unchanged_model_is_valid(model):
    assert build_model(copy.deepcopy(model)).finished


@pytest.mark.parametrize("model", MODELS)
def test_an_input_too_many_is_rejected(model):
    bad = copy.deepcopy(model)
    operation = bad["operations"][0]
    operation["inputs"].append(operation["inputs"][0])
    _rejected(bad)


@pytest.mark.parametrize("model", MODELS)
def test_an_operation_without_inputs_is_rejected(model):
    bad = copy.deepcopy(model)
    operation = bad["operations"][0]
    operation["inputs"] = []
    _rejected(bad)


@pytest.mark.parametrize("model", MODELS)
def test_an_output_of_a_foreign_type_is_rejected(model):
    bad = copy.deepcopy(model)
    output = bad["operations"][0]["outputs"][0]
    operand = bad["operands"][output]
    # Up to Android 10 only an operation that reads a TENSOR_QUANT16_SYMM writes one
    # (QUANTIZED_16BIT_LSTM's cell state); BOOL8 outputs get INT32 instead.
    foreign = ("TENSOR_BOOL8" if operand["type"] == "TENSOR_QUANT16_SYMM"
               else "TENSOR_QUANT16_SYMM")
    reads_foreign = any(bad["operands"][i]["type"] == foreign
                        for i in bad["operations"][0]["inputs"])
    if operand["type"] == "TENSOR_BOOL8" or reads_foreign:
        foreign = "TENSOR_INT32" if operand["type"] != "TENSOR_INT32" else "TENSOR_FLOAT16"
    operand["type"] = foreign
    operand["scale"] = (operand["scale"] or 1.0) if foreign == "TENSOR_QUANT16_SYMM" else 0.0
    operand["zeroPoint"] = 0
    _rejected(bad, naming=f"operand {output}")


@pytest.mark.parametrize("model", MODELS)
def test_an_operand_index_out_of_range_is_rejected(model):
    bad = copy.deepcopy(model)
    operation = bad["operations"][0]
    missing = len(bad["operands"]) + 5
    operation["inputs"][-1] = missing
    _rejected(bad, naming=f"operand {missing}")


def test_every_operation_type_of_the_cts_is_covered():
    if cts_root() is None:
        pytest.skip(CTS_MISSING_REASON)
    covered = {p.values[0]["operations"][0]["type"] for p in MODELS}
    in_cts: set[str] = set()
    for _, test in cts_tests():
        model, _ = test.load()
        in_cts.update(op["type"] for op in model["operations"])
    assert in_cts <= covered, sorted(in_cts - covered)
