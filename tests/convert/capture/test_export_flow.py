"""torch.cond, torch.while_loop and scan of an exported program, for PyTorch Mobile with the
CPU fallback (capture/export_flow.py): the control flow becomes TorchScript ``if`` and loops
(``prim::If``, ``prim::Loop``) whose bodies' NNAPI-convertible parts are regions, compiled
once and run at each iteration, through PyTorch's NNAPI runtime on the project's library;
every path matches eager, also saved and reloaded in a fresh process and in the lite
interpreter."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import torch
from torch import nn

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.capture.export_flow import scriptable
from torch_nnapi.convert.errors import CaptureError
from torch_nnapi.convert.fallback.convert import PartitionedConversion
from torch_nnapi.convert.fallback.report import PartitionReport, report_of

from .. import exported_control as ec
from ..harness import assert_close, check_in_fresh_process, run, save_for_fresh_process

Inputs = tuple[torch.Tensor, ...]


def seeded(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def converted(model: nn.Module | torch.export.ExportedProgram, example: Inputs,
              runs: Sequence[Inputs], **options: object) -> PartitionedConversion:
    """Converted with the fallback for PyTorch Mobile (an nn.Module through torch.export),
    run on each of ``runs`` twice (the second time on the compilations of the first) and
    compared with eager."""
    conversion = convert_with_details(model, example, capture="export", fallback=True,
                                      **options)  # type: ignore[arg-type]
    assert isinstance(conversion, PartitionedConversion)
    eager = model.module() if isinstance(model, torch.export.ExportedProgram) else model
    for xs in [*runs, *runs]:
        with torch.no_grad():
            expected = eager(*xs)
        assert_close(run(conversion.module, xs), expected)
    return conversion


def body_kinds(report: PartitionReport) -> list[tuple[str, int]]:
    """Each converted body: its loop or branch kind and block."""
    return [(report.cpu[b.cpu].kind, b.block) for b in report.bodies]


def body_operations(report: PartitionReport, index: int) -> set[str]:
    return {k for r in report.bodies[index].report.regions for k in r.operations}


def branch_runs() -> list[Inputs]:
    """Inputs of BranchOnSum taking each branch (the example's mean near 0: the fallback's
    other data of its kind reaches both branches)."""
    x = seeded((2, 6), 2)
    return [(x,), (x.abs(),), (-x.abs(),)]


def test_a_cond_becomes_an_if_with_both_branches_on_nnapi():
    runs = branch_runs()
    conversion = converted(torch.export.export(ec.BranchOnSum().eval(), runs[0]), runs[0], runs)
    report = conversion.report
    assert body_kinds(report) == [("prim::If", 0), ("prim::If", 1)]
    assert "FULLY_CONNECTED" in body_operations(report, 0)  # relu(fc(x)) * 2
    assert "LOGISTIC" in body_operations(report, 1)  # sigmoid(x) - |x|
    assert "inside prim::If (then)" in "\n".join(report.render())
    assert "inside prim::If (else)" in "\n".join(report.render())


def test_nested_conds_nest_their_bodies():
    x, y = seeded((2, 3), 0).abs(), seeded((2, 3), 1).sigmoid()
    runs = [(x, y * 0.1 + 0.8), (x, y * 0.1), (-x, y)]  # then-then, then-else, else
    conversion = converted(ec.NestedBranches().eval(), runs[0], runs)
    outer = conversion.report.bodies[0]
    assert body_kinds(conversion.report)[0] == ("prim::If", 0)
    assert [conversion.report.cpu[b.cpu].kind for b in outer.report.bodies[:1]] == ["prim::If"]
    assert conversion.report.region_count > len(conversion.regions)


def test_a_while_loop_with_a_trip_count_from_the_data():
    runs = [(seeded((2, 3), 0), torch.tensor([limit])) for limit in (10.0, 0.0, 300.0)]
    trips = {int(ec.GrowUntil()(*xs)[1]) for xs in runs}
    assert len(trips) == 3 and 0 in trips  # different trip counts, one loop never entered
    conversion = converted(ec.GrowUntil().eval(), runs[0], runs)
    assert body_kinds(conversion.report) == [("prim::Loop", 0)]
    # the step and the condition's next sums run on NNAPI at each iteration (the 0-D
    # comparison and bool() on the CPU)
    assert {"MUL", "ADD", "ABS"} <= body_operations(conversion.report, 0)


def test_a_counted_while_loop():
    runs = [(seeded((4,), 0), torch.tensor([n])) for n in (3, 0, 7)]
    conversion = converted(ec.CountedLoop().eval(), runs[0], runs)
    assert body_kinds(conversion.report) == [("prim::Loop", 0)]
    assert "TANH" in body_operations(conversion.report, 0)


def test_a_scan_becomes_a_loop_whose_step_is_one_region():
    runs = [(seeded((5, 2, 4), s), seeded((2, 4), s + 10)) for s in range(3)]
    conversion = converted(ec.RunningState().eval(), runs[0], runs)
    report = conversion.report
    assert body_kinds(report) == [("prim::Loop", 0)]
    (step,) = report.bodies[0].report.regions  # the slice, linear, add, tanh, the output
    assert {"GATHER", "FULLY_CONNECTED", "TANH", "MUL"} <= set(step.operations)
    assert [c.kind for c in report.bodies[0].report.cpu] == ["aten::append"]  # the stacking
    assert "aten::stack" in [c.kind for c in report.cpu]


def test_a_branch_nnapi_cannot_run_stays_in_torchscript():
    runs = branch_runs()
    conversion = converted(ec.CumsumBranch().eval(), runs[0], runs)
    kinds = body_kinds(conversion.report)
    assert ("prim::If", 1) in kinds  # sigmoid(x) * 2 on NNAPI
    running = [b for b in conversion.report.bodies if b.block == 0]
    assert all("aten::cumsum" in [c.kind for c in b.report.cpu] for b in running)


def test_below_level_4_the_cond_stays_on_the_cpu_with_its_branches_delegated():
    runs = branch_runs()
    conversion = converted(ec.BranchOnSum().eval(), runs[0], runs, target_level=3)
    assert body_kinds(conversion.report) == [("prim::If", 0), ("prim::If", 1)]
    assert conversion.feature_level <= 3


def test_a_higher_order_op_it_cannot_express_is_named():
    class Mapped(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from torch._higher_order_ops.map import map as hop_map

            def doubled(row: torch.Tensor, *rest: object) -> torch.Tensor:
                return row * 2.0

            return hop_map(doubled, x)

    program = torch.export.export(Mapped(), (torch.randn(3, 2),))
    module = program.module()
    with pytest.raises(CaptureError, match=r"cannot hold the exported map_impl \(map_impl\)"):
        scriptable(module, (torch.randn(3, 2),))


def test_saved_modules_run_in_a_fresh_process_and_the_lite_interpreter(tmp_path: Path):
    branches = branch_runs()
    grow: list[Inputs] = [(seeded((2, 3), 0), torch.tensor([limit])) for limit in (10.0, 300.0)]
    scans: list[Inputs] = [(seeded((5, 2, 4), s), seeded((2, 4), s + 10)) for s in range(2)]
    cases: dict[str, tuple[nn.Module, list[Inputs]]] = {
        "cond": (ec.BranchOnSum().eval(), branches),
        "while": (ec.GrowUntil().eval(), grow),
        "scan": (ec.RunningState().eval(), scans),
    }
    for name, (model, runs) in cases.items():
        conversion = converted(model, runs[0], runs[:1])  # saved after a run
        with torch.no_grad():
            expected = [model(*x) for x in runs]
        save_for_fresh_process(tmp_path, name, conversion.module, runs, expected)
        saved = report_of(conversion.module)
        assert saved is not None and saved.render() == conversion.report.render()
    check_in_fresh_process(tmp_path, list(cases))
