"""torch.cond, torch.while_loop and scan as NNAPI IF and WHILE: exported programs lowered
through the pipeline (their graph modules into referenced models) and run on the host
runtime against eager, on inputs that take each branch and loop several times."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
import torch
from torch import nn

from torch_nnapi.convert.capture.frontend import capture_model
from torch_nnapi.convert.errors import ConversionError
from torch_nnapi.convert.pipeline.layout_choice import lower_graph
from torch_nnapi.convert.pipeline.lowerer import Lowered
from torch_nnapi.nnapi import OperandType
from torch_nnapi.runtime import Compilation

from ..exported_control import (
    BranchOnSum,
    CountedLoop,
    CumsumBranch,
    GrowUntil,
    NestedBranches,
    RunningState,
)


def lowered(model: nn.Module, examples: tuple[torch.Tensor, ...],
            target_level: int | None = 4) -> Lowered:
    program = torch.export.export(model.eval(), examples)
    captured = capture_model(program, examples, capture_mode="export")
    return lower_graph(captured.graph, examples, nhwc=False, flexible=None,
                       target_level=target_level)


def check_runs(model: nn.Module, examples: tuple[torch.Tensor, ...],
               inputs: Sequence[tuple[torch.Tensor, ...]]) -> Lowered:
    """Lowers on ``examples``, then runs each of ``inputs`` against eager."""
    low = lowered(model, examples)
    compilation = Compilation(low.cx.model)
    for args in inputs:
        got = compilation.run([np.asarray(a.numpy(), dtype=np.int32 if a.dtype == torch.int64
                                          else None) for a in args]).outputs
        with torch.no_grad():
            want = model(*args)
        want = want if isinstance(want, tuple) else (want,)
        for k, expected in zip(low.output_map, want, strict=True):
            result = torch.from_numpy(np.asarray(got[k])).reshape(expected.shape)
            torch.testing.assert_close(result, expected, rtol=1e-5, atol=1e-5)
    return low


def operations(low: Lowered) -> list[str]:
    models = [low.cx.model, *low.cx.model.referenced_models()]
    return [op.type.name for m in models for op in m.operations]


def test_cond_takes_either_branch() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 6)
    low = check_runs(BranchOnSum(), (x,), [(x.abs(),), (-x.abs(),), (x,)])
    ops = operations(low)
    assert ops.count("IF") == 1 and "FULLY_CONNECTED" in ops and "LOGISTIC" in ops
    assert sum(o.type is OperandType.MODEL for o in low.cx.model.operands) == 2
    assert int(low.cx.model.feature_level) == 4


def test_nested_cond_with_two_results() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(2, 3).abs(), torch.rand(2, 3)
    inputs = [(x, y * 0.1 + 0.8), (x, y * 0.1), (-x, y)]  # inner true, inner false, outer false
    low = check_runs(NestedBranches(), (x, y), inputs)
    assert operations(low).count("IF") == 2
    assert len(low.cx.model.referenced_models()) == 4


def test_while_loop_runs_as_often_as_the_data_says() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    inputs = [(x, torch.tensor([limit])) for limit in (0.0, 10.0, 200.0)]
    low = check_runs(GrowUntil(), (x, torch.tensor([10.0])), inputs)
    assert operations(low).count("WHILE") == 1
    assert [int(GrowUntil()(*args)[1]) for args in inputs[1:]] != [0, 0]  # it loops


def test_while_loop_with_an_integer_counter() -> None:
    x = torch.randn(4)
    check_runs(CountedLoop(), (x, torch.tensor([3])),
               [(x, torch.tensor([n])) for n in (0, 1, 5)])


def test_scan_is_a_while_over_the_leading_dimension() -> None:
    """The counter, the carried state and the stacked outputs are the WHILE's carried
    tensors; each step gathers its slice and writes its row (SELECT)."""
    torch.manual_seed(0)
    runs = [(torch.randn(5, 2, 4), torch.randn(2, 4)) for _ in range(3)]
    low = check_runs(RunningState(), runs[0], runs)
    ops = operations(low)
    assert ops.count("WHILE") == 1 and {"GATHER", "FULLY_CONNECTED", "SELECT"} <= set(ops)
    assert len(low.cx.model.referenced_models()) == 2  # the condition, the body


@pytest.mark.parametrize("model,examples,what", [
    (BranchOnSum(), (torch.randn(2, 6),), "torch.cond becomes NNAPI IF"),
    (RunningState(), (torch.randn(3, 2, 4), torch.randn(2, 4)),
     "torch.ops.higher_order.scan becomes NNAPI WHILE"),
    (CountedLoop(), (torch.randn(4), torch.tensor([3])), "torch.while_loop becomes NNAPI WHILE"),
])
def test_below_level_4_control_flow_is_refused_in_one_line(
        model: nn.Module, examples: tuple[torch.Tensor, ...], what: str) -> None:
    with pytest.raises(ConversionError, match=f"{what}, feature level 4, above the target"
                                              " level 3"):
        lowered(model, examples, target_level=3)


def test_a_branch_that_does_not_convert_is_named() -> None:
    with pytest.raises(ConversionError, match="the true branch does not convert: .*cumsum"):
        lowered(CumsumBranch(), (torch.randn(3),))
