"""Converter internals: symbolic sizes, layouts, the lowering registry."""

from __future__ import annotations

import itertools

import pytest

from torch_nnapi.convert.builder import layout as lay
from torch_nnapi.convert.builder.symbolic import (
    Sym,
    ceil_div,
    evaluate,
    hint,
    input_dim,
    program,
    sym_max,
    sym_min,
)
from torch_nnapi.convert.lowerings import is_in_place, load_all, supported_ops
from torch_nnapi.nnapi.codes import OperationType


def test_programs_compute_what_python_computes():
    h, w = input_dim(0, 2, 10), input_dim(0, 3, 7)
    expressions = [(h + 2 * 1 - 3) // 2 + 1, ceil_div(h - 3, 2) + 1, sym_min(h, w) * 3,
                   sym_max(h - 12, 0), (h * w) % 5, -h + w]
    for e in expressions:
        assert isinstance(e, Sym)
        for hh, ww in itertools.product((1, 4, 10, 33), (2, 7, 9)):
            env = {"h": hh, "w": ww}
            py = {
                0: (hh + 2 - 3) // 2 + 1, 1: -((-(hh - 3)) // 2) + 1, 2: min(hh, ww) * 3,
                3: max(hh - 12, 0), 4: (hh * ww) % 5, 5: -hh + ww,
            }[expressions.index(e)]
            assert evaluate(program(e), [[1, 3, env["h"], env["w"]]]) == py
        assert hint(e) == evaluate(program(e), [[1, 3, 10, 7]])


def test_simplification_of_common_shape_arithmetic():
    b, h = input_dim(0, 0, 2), input_dim(0, 2, 8)
    assert (b * 8 * 1) // b == 8
    assert sym_max(ceil_div(h - 0, 1), 0) is h
    assert sym_min(0, h) == 0
    assert (h + 2) - 3 == h + (-1)
    assert h - h == 0 and h * 1 is h
    assert (h + 5) - (h + 2) == 3 and (h + 2) - h == 2
    assert (h * b * 4 * 4) // 16 == h * b  # static factors divide as their product
    with pytest.raises(TypeError):
        bool(h)


def test_sizes_rounded_up_to_a_multiple_divide_by_their_window_count():
    h = input_dim(0, 2, 10)
    padded = h + (4 - h % 4) % 4  # Swin pads its feature map up to a multiple of the window
    assert isinstance(padded, Sym)
    assert padded.multiple == 4 and padded.nonneg
    assert padded // (padded // 4) == 4  # what export writes for the window size
    assert isinstance(h // (h // 4), Sym)  # h itself need not be a multiple of 4
    for n in range(1, 30):
        assert evaluate(program(padded), [[1, 3, n, 1]]) % 4 == 0


def test_layout_helpers():
    shape = ("n", "c", "h", "w")
    assert lay.apply(lay.NHWC, shape) == ("n", "h", "w", "c")
    assert lay.inverse(lay.NHWC) == (0, 3, 1, 2)
    assert lay.axis(lay.NHWC, 1) == 3
    # NHWC data read as x.permute(0, 2, 3, 1) is contiguous
    assert lay.compose(lay.NHWC, (0, 2, 3, 1)) == (0, 1, 2, 3)
    assert lay.transpose_perm((0, 1, 2, 3), lay.NHWC) == (0, 2, 3, 1)
    assert lay.without_dims(lay.NHWC, [2, 3]) == (0, 1)
    assert lay.data_order_matches(lay.NHWC, (2, 8, 1, 1))
    assert not lay.data_order_matches(lay.NHWC, (2, 8, 3, 3))


def test_registry_is_introspectable():
    rows = supported_ops()
    by_op = {r["op"]: r for r in rows}
    assert by_op["aten::relu_"]["in_place"] and not by_op["aten::relu"]["in_place"]
    assert "CONV_2D" in by_op["aten::_convolution"]["nnapi"]
    assert by_op["quantized::conv2d_relu"]["family"] == "quantized"
    for row in rows:
        for name in row["nnapi"]:
            # level-4 operations only where a target level 4 asks for them (control flow,
            # IF and WHILE, exists at level 4 only)
            assert OperationType[name].feature_level <= 3 or name in ("HARD_SWISH", "ELU",
                                                                       "IF", "WHILE")
    assert is_in_place("aten::add_") and not is_in_place("aten::__and__")
    assert len(load_all()) == len(rows)
