"""Tensors of rank above 4: NNAPI operands merge dimensions that move together (layout.py),
so attention reshapes, window partitions and 5-D inputs convert with operands of rank 4."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from torch_nnapi.convert.builder import layout as lay
from torch_nnapi.convert.errors import ConversionError

from ..harness import Fn, check, convert, nnapi_ops, run

CASES = {
    "relu": (lambda x: torch.relu(x), (2, 2, 3, 4, 5)),
    "flatten": (lambda x: torch.flatten(x), (4, 2, 1, 3, 7)),
    "flatten_2_3": (lambda x: torch.flatten(x, 2, 3), (4, 2, 1, 3, 7)),
    "flatten_2_4": (lambda x: torch.flatten(x, 2, 4), (4, 2, 1, 3, 7)),
    "flatten_0_-2": (lambda x: torch.flatten(x, 0, -2), (4, 2, 1, 3, 7)),
    "unsqueeze": (lambda x: x.unsqueeze(0) * 2, (2, 3, 4, 5)),
    "qkv_select": (lambda x: x.reshape(2, 5, 3, 4, 6).permute(2, 0, 3, 1, 4)[1] + 1, (2, 5, 72)),
    "qkv_unbind": (lambda x: sum((i + 1) * t for i, t in enumerate(
        x.reshape(2, 5, 3, 4, 6).permute(2, 0, 3, 1, 4).unbind(0))), (2, 5, 72)),
    "window_partition": (lambda x: x.view(2, 2, 4, 3, 4, 5).permute(0, 1, 3, 2, 4, 5)
                         .reshape(12, 16, 5), (2, 8, 12, 5)),
    "grid_partition": (lambda x: x.reshape(2, 5, 2, 4, 3, 4).permute(0, 2, 4, 3, 5, 1)
                       .reshape(2, 6, 16, 5), (2, 5, 8, 12)),
    "permute_all": (lambda x: x.permute(4, 2, 0, 3, 1).contiguous().view(-1) * 1, (2, 3, 4, 5, 6)),
    "broadcast_alternating": (lambda x: x.view(2, 3, 4, 5, 6) + x.view(2, 3, 4, 5, 6)[:1, :, :1,
                                                                                    :, :1], (720,)),
    "softmax": (lambda x: x.view(2, 3, 4, 5, 6).softmax(2).reshape(2, -1), (720,)),
    "sum_alternating": (lambda x: x.view(2, 3, 4, 5, 6).sum((1, 3)), (720,)),
    "mean_last": (lambda x: x.view(2, 3, 4, 5, 6).mean(-1, keepdim=True), (720,)),
    "cat": (lambda x: torch.cat([x.view(2, 3, 4, 5, 6), x.view(2, 3, 4, 5, 6) * 2], 2), (720,)),
    "stack": (lambda x: torch.stack([x, x * 2], 2), (2, 3, 4, 5)),
    "expand": (lambda x: x.view(2, 1, 4, 1, 6).expand(2, 3, 4, 5, 6).reshape(6, -1), (48,)),
    "vit_in_projection": (lambda x: x.unflatten(-1, (3, 8)).unsqueeze(0).transpose(0, -2)
                          .squeeze(-2).contiguous()[1], (7, 1, 24)),
    "slices": (lambda x: x.view(2, 3, 4, 5, 6)[:, 1:, ::2, 2:4] * 3, (720,)),
    "chunk": (lambda x: x.view(2, 3, 4, 5, 6).chunk(2, 2)[1] * 3, (720,)),
    "output_of_rank_5": (lambda x: x.view(2, 3, 4, 5, 6).transpose(1, 3) * 3, (720,)),
    "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, (6,)), (2, 3, 4, 5, 6)),
}


@pytest.mark.parametrize("name", CASES)
def test_rank_5_sequences_match_eager(name):
    fn, shape = CASES[name]
    torch.manual_seed(0)
    conversion, _ = check(Fn(fn), torch.randn(*shape))
    for operand in conversion.model.operands:
        assert len(operand.dimensions) <= 4


def test_window_partition_is_one_transpose():
    fn, shape = CASES["window_partition"]
    conversion, _ = check(Fn(fn), torch.randn(*shape))
    assert nnapi_ops(conversion).count("TRANSPOSE") == 1


def test_attention_head_split_selects_without_copies():
    fn, shape = CASES["qkv_select"]
    conversion, _ = check(Fn(fn), torch.randn(*shape))
    assert "TRANSPOSE" not in nnapi_ops(conversion)


def test_rank_5_input_flexible_batch():
    torch.manual_seed(0)
    check(Fn(lambda x: torch.flatten(x, 1) * 2), torch.randn(4, 2, 1, 3, 7),
          flexible={0: [0]}, run_inputs=[torch.randn(4, 2, 1, 3, 7), torch.randn(6, 2, 1, 3, 7)])


def test_operations_that_need_separate_dimensions_report_rank_5():
    with pytest.raises(ConversionError, match="at most 4 dimensions"):
        convert(Fn(lambda x: x.view(2, 3, 4, 5, 6).flip(2)), torch.randn(720))


# ------------------------------------------------------------------------------ layout.py


def _apply_plan(array: np.ndarray, src, plan) -> tuple[np.ndarray, list]:
    order = list(src)
    for runs, perm in plan:
        assert len(runs) <= 4
        merged = array.reshape([int(np.prod(array.shape[sum(runs[:i]):sum(runs[:i + 1])]))
                                for i in range(len(runs))])
        pieces, start = [], 0
        for n in runs:
            pieces.append(order[start:start + n])
            start += n
        sizes = [array.shape[sum(runs[:i]):sum(runs[:i + 1])] for i in range(len(runs))]
        moved = np.transpose(merged, perm)
        array = moved.reshape([d for j in perm for d in sizes[j]])
        order = [d for j in perm for d in pieces[j]]
    return array, order


@pytest.mark.parametrize("rank", [4, 5, 6])
def test_transpose_plans_reach_every_permutation(rank):
    x = np.arange(np.prod(range(2, 2 + rank))).reshape(range(2, 2 + rank))
    for dst in itertools.permutations(range(rank)):
        plan = lay.transpose_plan(tuple(range(rank)), dst)
        assert plan is not None, dst
        got, order = _apply_plan(x, range(rank), plan)
        assert order == list(dst)
        np.testing.assert_array_equal(got, np.transpose(x, dst))


def test_coarsest_groups_joins_size_one_dimensions():
    assert lay.coarsest_groups(["a", "a", None, "b", "b"]) == (3, 2)
    assert lay.coarsest_groups([None, "a", "b", None]) == (2, 2)
    assert lay.coarsest_groups([None, None]) == (2,)


def test_rank_5_inputs_and_outputs_survive_save_and_load(tmp_path):
    torch.manual_seed(0)
    model = Fn(lambda x: x.transpose(1, 3) * 2)
    x = torch.randn(2, 3, 4, 5, 6)
    module = convert(model, (x,)).module
    module.save(str(tmp_path / "rank5.pt"))
    loaded = torch.jit.load(str(tmp_path / "rank5.pt"))
    torch.testing.assert_close(run(loaded, (x,)), model(x))
