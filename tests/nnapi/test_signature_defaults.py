"""Defaults of optional inputs are declared once, in the signatures."""

from __future__ import annotations

import pytest

from torch_nnapi.nnapi.signatures import SIGNATURES, form
from torch_nnapi.nnapi.signatures._dsl import NO_DEFAULT


def test_defaults_parse_and_show():
    f = form("x", "input:T stride:i32 [@3 nchw:bool=false [dilation:i32=1 axis:i32=last]]",
             "output:T")
    args = {a.name: a for a in f.inputs}
    assert args["stride"].default is NO_DEFAULT
    assert args["nchw"].default is False
    assert args["dilation"].default == 1
    assert args["axis"].default == -1
    assert "nchw:bool=false" in f.describe() and "axis:i32=last" in f.describe()


def test_axis_default_counts_from_either_end():
    axis = {a.name: a for a in form("", "input:T [axis:i32=last]", "output:T").inputs}["axis"]
    assert axis.holds_default(-1, 4) and axis.holds_default(3, 4)
    assert not axis.holds_default(2, 4) and not axis.holds_default(0, 4)
    assert axis.holds_default(0, 1)  # the only axis of a vector is its last


def test_dilation_default_is_a_plain_value():
    dilation = {a.name: a for a in form("", "input:T [d:i32=1]", "output:T").inputs}["d"]
    assert dilation.holds_default(1, 4) and not dilation.holds_default(5, 4)


@pytest.mark.parametrize("spec", ["input:T stride:i32=1", "input:T [n:i32=maybe]"])
def test_bad_defaults_are_rejected(spec):
    with pytest.raises(ValueError):
        form("bad", spec, "output:T")


def test_every_optional_scalar_input_declares_its_default():
    """An optional scalar a kernel reads when absent must say what absence means (an absent
    variadic input, such as IF's inputs, means none)."""
    missing = []
    for op, signature in SIGNATURES.items():
        for f in signature.forms:
            required = min(c.length for c in f.input_cuts)
            for arg in f.inputs[required:]:
                is_tensor = arg.type_ref.startswith("tensor") or arg.type_ref[0].isupper()
                if not is_tensor and not arg.variadic and not arg.has_default:
                    missing.append(f"{op.name} {arg.name}")
    assert not missing
