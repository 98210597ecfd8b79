"""Element-wise binary ops with broadcasting, constants, comparisons, where."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import torch_nnapi
from torch_nnapi.convert.errors import ConversionError

from ..harness import LAYOUTS, check, nnapi_ops


class Fn(nn.Module):
    def __init__(self, fn, *consts):
        super().__init__()
        self.fn = fn
        for i, c in enumerate(consts):
            self.register_buffer(f"c{i}", c)

    def forward(self, *xs):
        return self.fn(*xs, *[getattr(self, f"c{i}") for i in range(len(self._buffers))])


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "add_": lambda a, b: (a * 1).add_(b), "mul_": lambda a, b: (a * 1).mul_(b),
    "sub_": lambda a, b: (a * 1).sub_(b), "div_": lambda a, b: (a * 1).div_(b),
    "minimum": torch.minimum, "maximum": torch.maximum, "max": torch.max, "min": torch.min,
    "pow": lambda a, b: torch.pow(a.abs() + 0.5, b),
    "floor_div": lambda a, b: torch.div(a, b, rounding_mode="floor"),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name, nhwc):
    torch.manual_seed(0)
    a = torch.randn(2, 3, 4, 5)
    b = torch.randn(1, 3, 1, 5).abs() + 0.5
    check(Fn(BINARY[name]), (a, b), nhwc=[nhwc, False])


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_lower_rank_operands_and_constants(nhwc):
    torch.manual_seed(0)
    bias = torch.randn(3, 1, 1)
    row = torch.randn(5)
    check(Fn(lambda x, v, b, r: (x + v) * b - r / 2, bias, row),
          (torch.randn(2, 3, 4, 5), torch.randn(4, 5)), nhwc=[nhwc, False])


def test_division_by_a_power_of_two_is_a_multiplication():
    conversion, _ = check(Fn(lambda x: x / 4), torch.randn(3, 4))
    assert nnapi_ops(conversion) == ["MUL"]


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(op):
    torch.manual_seed(0)
    a = torch.randint(0, 3, (2, 3, 4)).float()
    check(Fn(lambda x, y: getattr(torch, op)(x, y)), (a, torch.randint(0, 3, (3, 4)).float()))


def test_where_and_logical_ops():
    torch.manual_seed(0)
    check(Fn(lambda x, y: torch.where(torch.logical_and(x > 0, y < 0.5), x, y * 2)),
          (torch.randn(3, 4), torch.randn(3, 4)))
    check(Fn(lambda x: torch.logical_not(x > 0)), torch.randn(3, 4))
    check(Fn(lambda x: torch.where(~(x > 0), x, x * 3)), torch.randn(3, 4))  # bitwise_not


def test_remainder():
    check(Fn(lambda x: torch.remainder(x, 1.5)), torch.randn(3, 4) * 4)


def test_dtype_conversions():
    check(Fn(lambda x: (x * 3).to(torch.int32).float() + x.to(torch.float32)), torch.randn(3, 4))
    check(Fn(lambda x, y: x.type_as(y) * y), (torch.randint(0, 5, (3, 4)), torch.randn(3, 4)))


def test_bool_conversions_and_bitwise_logic_on_bools():
    torch.manual_seed(0)
    check(Fn(lambda x: (x * 3).long().bool().float() + 1), torch.randn(3, 4))
    check(Fn(lambda t: ((t.bool() & (t > 1)) | (t == 0)).float()), torch.randint(0, 3, (3, 4)))


def test_where_broadcasts_its_operands():
    torch.manual_seed(0)
    check(Fn(lambda x, y: torch.where(y > 0, x, -1.0)), (torch.randn(3, 4), torch.randn(4)))


def test_division_by_a_computed_power_of_two_scale():
    # x / (d // h) ** 0.5 with d taken from the shape: a 0-dim divisor (it used to crash)
    conversion, _ = check(Fn(lambda x: x / (x.size(-1) // 4) ** 0.5), torch.randn(2, 64))
    assert nnapi_ops(conversion) == ["MUL"]
    check(Fn(lambda x: x / (x.size(-1) // 4) ** 0.5), torch.randn(2, 36))


class _RepeatedSize(nn.Module):
    def forward(self, x):
        sizes = [x.size(0)] * 2  # aten::mul of a list holding a flexible size: not folded
        return x.reshape(sizes[1], -1) + 1.0


def test_a_list_operand_of_arithmetic_is_reported_unsupported():
    # result_type() of a list raised a TypeError out of convert()
    with pytest.raises(ConversionError, match="aten::mul"):
        torch_nnapi.convert(torch.jit.script(_RepeatedSize()), torch.randn(2, 3),
                            flexible={0: [0]})


class _SquaredSize(nn.Module):
    def forward(self, x):
        return x * x.size(0) ** 2  # aten::pow of two numbers


def test_a_power_of_a_flexible_size_is_reported_unsupported():
    # Sym ** int raised a TypeError out of convert()
    with pytest.raises(ConversionError, match="aten::pow"):
        torch_nnapi.convert(torch.jit.script(_SquaredSize()), torch.randn(2, 3),
                            flexible={0: [0]})


INTEGER_ARITHMETIC = {
    "add_sub_mul": lambda a, b: a * 3 + b - 1,
    "floor_divide": lambda a, b: a // (b.abs() + 1),
    "negative_floor_divide": lambda a, b: (a - 10) // (b.abs() + 1),
    "broadcast": lambda a, b: a[:, None] * b[None, :],
}


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("name", sorted(INTEGER_ARITHMETIC))
def test_integer_arithmetic_at_feature_level_4(name, dtype):
    """NNAPI 1.3's int32 ADD, SUB, MUL and DIV (which rounds down, as // does)."""
    a = torch.tensor([0, 2, 7, -3, 5], dtype=dtype)
    b = torch.tensor([1, -4, 2, 6, 3], dtype=dtype)
    conversion, _ = check(Fn(INTEGER_ARITHMETIC[name]), (a, b), target_level=4)
    assert set(nnapi_ops(conversion)) & {"ADD", "SUB", "MUL", "DIV"}


def test_integer_arithmetic_below_feature_level_4_names_the_level():
    a = torch.tensor([0, 2, 7], dtype=torch.int32)
    with pytest.raises(ConversionError, match="feature level 4"):
        torch_nnapi.convert(Fn(lambda a: a + a), a, target_level=3)


def test_true_division_of_integers_is_unsupported():
    a = torch.tensor([1, 2, 7], dtype=torch.int32)
    with pytest.raises(ConversionError, match="aten::div"):
        torch_nnapi.convert(Fn(lambda a: a / (a + 1)), a, target_level=4)


class _MovesItsConstants(nn.Module):
    """Constants moved to the input's device, as Hugging Face models move their buffers and
    aranges: torch.export keeps those moves."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor([1.0, 2.0, 3.0, 4.0]))

    def forward(self, x):
        positions = torch.arange(4, device=x.device).to(x.device)
        return x * self.scale.to(x.device) + positions.to(torch.float32)


@pytest.mark.parametrize("capture", ["trace", "export"])
def test_device_moves_and_casts_of_constants_fold(capture):
    check(_MovesItsConstants(), torch.randn(2, 4), capture=capture)
