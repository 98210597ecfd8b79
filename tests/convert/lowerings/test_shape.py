"""Reshapes, permutations, expand/repeat, cat/stack, with layouts tracked."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ..harness import LAYOUTS, Fn, check, nnapi_ops, run

SHAPE_OPS = {
    "view": lambda x: x.view(2, -1),
    "reshape": lambda x: x.reshape(-1, 5),
    "flatten": lambda x: torch.flatten(x, 1),
    "flatten_mid": lambda x: x.flatten(1, 2),
    "unflatten": lambda x: x[:, 0].unflatten(2, (5, 1)),
    "squeeze_all": lambda x: x[:, :1].squeeze(),
    "squeeze_dim": lambda x: x[:, :, :1].squeeze(2),
    "unsqueeze": lambda x: x[:, 0].unsqueeze(1) * 2,
    "unsqueeze_last": lambda x: x[:, :, 0].unsqueeze(-1) * 2,
    "permute": lambda x: x.permute(0, 2, 3, 1) + 1,
    "transpose": lambda x: x.transpose(1, 3).contiguous() * 2,
    "permute_then_view": lambda x: x.permute(0, 2, 3, 1).reshape(2, -1),
    "expand": lambda x: x[:, :1].expand(2, 3, 4, 5) * 1,
    "repeat": lambda x: x.repeat(1, 2, 1, 1) * 1,
    "cat": lambda x: torch.cat([x, x * 2], 1),
    "cat_last": lambda x: torch.cat([x, x * 2, x * 3], -1),
    "stack": lambda x: torch.stack([x[0], x[1] * 2], 2),
    "flip": lambda x: torch.flip(x, [2, 3]),
}


@pytest.mark.parametrize("nhwc", LAYOUTS)
@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op(name, nhwc):
    torch.manual_seed(0)
    check(Fn(SHAPE_OPS[name]), torch.randn(2, 3, 4, 5), nhwc=nhwc)


def test_size_arithmetic_feeds_view():
    class M(nn.Module):
        def forward(self, x):
            b, c, h, w = x.size()
            return x.view(b, c * h, w // 1)[:, :, : w // 2]

    check(M(), torch.randn(2, 3, 4, 6))


def test_permutes_are_free_until_needed():
    conversion, _ = check(Fn(lambda x: x.permute(0, 2, 3, 1).permute(0, 3, 1, 2) * 2),
                          torch.randn(1, 3, 4, 5))
    assert nnapi_ops(conversion) == ["MUL"]


def test_nhwc_view_transposes_back_first():
    conversion, _ = check(Fn(lambda x: x.reshape(1, -1)), torch.randn(1, 3, 4, 5), nhwc=True)
    assert nnapi_ops(conversion) == ["TRANSPOSE", "RESHAPE"]


def test_nhwc_flatten_of_1x1_needs_no_transpose():
    conversion, _ = check(Fn(lambda x: torch.flatten(x.mean((2, 3), keepdim=True), 1)),
                          torch.randn(2, 8, 4, 4), nhwc=True)
    assert "TRANSPOSE" not in nnapi_ops(conversion)


def test_cat_of_mixed_layouts_and_constants():
    class M(nn.Module):
        c: torch.Tensor  # a buffer

        def __init__(self):
            super().__init__()
            self.register_buffer("c", torch.randn(1, 2, 4, 5))

        def forward(self, x, y):
            return torch.cat([x, y, self.c], 1)

    check(M(), (torch.randn(1, 3, 4, 5), torch.randn(1, 1, 4, 5)), nhwc=[True, False])


def test_five_dimensional_tensors_an_operation_cannot_take_are_reported():
    from torch_nnapi.convert.api import convert_with_details
    from torch_nnapi.convert.errors import ConversionError

    with pytest.raises(ConversionError, match="at most 4 dimensions"):
        convert_with_details(Fn(lambda x: x.unsqueeze(0).flip(1)), torch.randn(2, 3, 4, 5))


def test_stack_of_traced_sizes_is_a_constant():
    """torchvision's detection transform stacks image sizes, 0-dim tensors while tracing."""
    def scale_by_largest_size(x):
        if torch.jit.is_tracing():
            sizes = torch.stack([x.shape[0], x.shape[1]])
        else:
            sizes = torch.tensor(x.shape[:2])
        return x * sizes.to(torch.float32).max()

    conversion, _ = check(Fn(scale_by_largest_size), torch.randn(2, 3))
    assert nnapi_ops(conversion) == ["MUL"]


def test_roll():
    torch.manual_seed(0)
    check(Fn(lambda x: torch.roll(x, shifts=(-2, 3), dims=(1, 2))), torch.randn(1, 8, 8, 5))
    check(Fn(lambda x: torch.roll(x, 3)), torch.randn(4, 5))
    check(Fn(lambda x: torch.roll(x, 1, 1)), torch.randn(1, 3, 4, 5), nhwc=True)


def test_roll_of_flexible_dimensions_cuts_at_load_time():
    roll = Fn(lambda x: torch.roll(x, shifts=(-2, 3), dims=(1, 2)))
    conversion, _ = check(roll, torch.randn(1, 8, 8, 5), flexible={0: [1, 2]},
                          run_inputs=[torch.randn(1, 8, 8, 5), torch.randn(1, 3, 11, 5)])
    with pytest.raises(Exception, match="roll by 3 needs the rolled dimension larger than 3"):
        run(conversion.module, (torch.randn(1, 8, 3, 5),))


@pytest.mark.parametrize("nhwc", LAYOUTS)
def test_expanding_a_bool_tensor(nhwc):
    """TILE takes no bool tensors (it was emitted, an invalid model): a LOGICAL_AND with true
    repeats them, as when an attention mask [B, 1, 1, K] is expanded over the queries."""
    conversion, _ = check(Fn(lambda x: (x > 0).expand(2, 3, 4, 5)), torch.randn(2, 1, 4, 5),
                          nhwc=nhwc)
    assert "TILE" not in nnapi_ops(conversion)
