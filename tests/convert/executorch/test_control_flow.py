"""torch.cond, torch.while_loop and scan through ExecuTorch: at target level 4 the whole
control flow is one NNAPI delegate (IF and WHILE with their referenced models in the blob; a
scan a WHILE over its leading dimension); at level 3, or with a branch NNAPI cannot run, a
cond stays on ExecuTorch's kernels with its branches' regions delegated (a while_loop is
refused: they have none). Each .pte is saved and run in a fresh process through
``executorch.runtime`` on torch-nnapi's libneuralnetworks.so, against eager, on inputs that
take each branch and loop several times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402
from executorch.exir._serialize._program import deserialize_pte_binary  # noqa: E402
from torch import nn  # noqa: E402

from tests.conftest import package_env  # noqa: E402
from torch_nnapi.convert.errors import ConversionError  # noqa: E402
from torch_nnapi.convert.executorch.blob import read_blob  # noqa: E402
from torch_nnapi.convert.executorch.pte import PteConversion, to_pte_with_details  # noqa: E402
from torch_nnapi.nnapi import OperandType, OperationType  # noqa: E402

from ..exported_control import (  # noqa: E402
    BranchOnSum,
    CountedLoop,
    CumsumBranch,
    GrowUntil,
    NestedBranches,
    RunningState,
)

RUNNER = Path(__file__).with_name("run_pte.py")


Runs = tuple[Path, dict[str, PteConversion], dict[str, list[torch.Tensor]]]
# in the default suite; the others (nesting, an integer counter) in the slow one
DEFAULT = ("cond", "while", "cond_level3", "cond_cumsum", "scan", "scan_level3")


def _inputs() -> dict[str, tuple[nn.Module, int, list[tuple[torch.Tensor, ...]]]]:
    """Per .pte: the model, the target level, and the inputs it runs on (the first is the
    example it is lowered with)."""
    torch.manual_seed(0)
    x = torch.randn(2, 6)
    pair = (torch.randn(2, 3).abs(), torch.rand(2, 3))
    grow = torch.randn(2, 3)
    count = torch.randn(4)
    return {
        "cond": (BranchOnSum(), 4, [(x.abs(),), (-x.abs(),)]),
        "nested": (NestedBranches(), 4, [(pair[0], pair[1] * 0.1 + 0.8),
                                         (pair[0], pair[1] * 0.1), (-pair[0], pair[1])]),
        "while": (GrowUntil(), 4, [(grow, torch.tensor([limit])) for limit in (10.0, 0.0, 300.0)]),
        "counted": (CountedLoop(), 4, [(count, torch.tensor([n])) for n in (3, 0, 7)]),
        "cond_level3": (BranchOnSum(), 3, [(x.abs(),), (-x.abs(),)]),
        "cond_cumsum": (CumsumBranch(), 4, [(x.abs(),), (-x.abs(),)]),
        "scan": (RunningState(), 4, [(torch.randn(5, 2, 4), torch.randn(2, 4))
                                     for _ in range(2)]),
        "scan_level3": (RunningState(), 3, [(torch.randn(5, 2, 4), torch.randn(2, 4))
                                            for _ in range(2)]),
    }


def _run(directory: Path, chosen: list[str]) -> Runs:
    """Each chosen model lowered once, saved with each of its inputs, all run by one fresh
    process; the conversions and eager's outputs by run name."""
    conversions, expected, names = {}, {}, []
    for name, (model, level, inputs) in _inputs().items():
        if name not in chosen:
            continue
        model.eval()
        conversions[name] = to_pte_with_details(model, inputs[0], target_level=level)
        for k, args in enumerate(inputs):
            run = f"{name}_{k}"
            (directory / f"{run}.pte").write_bytes(conversions[name].pte)
            torch.save(args, directory / f"{run}.inputs.pt")
            with torch.no_grad():
                out = model(*args)
            expected[run] = list(out) if isinstance(out, tuple) else [out]
            names.append(run)
    done = subprocess.run([sys.executable, str(RUNNER), str(directory), *names],
                          capture_output=True, text=True, env=package_env(), timeout=900,
                          check=False)
    assert done.returncode == 0 and "done" in done.stdout, done.stderr[-4000:]
    return directory, conversions, expected


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return _run(tmp_path_factory.mktemp("control_pte"), list(DEFAULT))


@pytest.fixture(scope="module")
def ran_slow(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return _run(tmp_path_factory.mktemp("control_pte_slow"),
                [name for name in _inputs() if name not in DEFAULT])


def _cases(names: list[str]) -> list[object]:
    return [name if name in DEFAULT else pytest.param(name, marks=pytest.mark.slow)
            for name in names]


def _results(request: pytest.FixtureRequest, name: str) -> Runs:
    runs: Runs = request.getfixturevalue("ran" if name in DEFAULT else "ran_slow")
    return runs


@pytest.mark.parametrize("name", _cases(list(_inputs())))
def test_control_flow_matches_eager_in_a_fresh_process(request: pytest.FixtureRequest,
                                                       name: str) -> None:
    directory, _, expected = _results(request, name)
    runs = [run for run in expected if run.rsplit("_", 1)[0] == name]
    assert len(runs) >= 2
    for run in runs:
        error = directory / f"{run}.error.txt"
        assert not error.exists(), error.read_text()
        outputs = torch.load(directory / f"{run}.outputs.pt")
        assert len(outputs) == len(expected[run])
        for got, want in zip(outputs, expected[run], strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", _cases(["cond", "nested", "while", "counted", "scan"]))
def test_level_4_delegates_the_whole_control_flow(request: pytest.FixtureRequest,
                                                  name: str) -> None:
    """Nothing is left to ExecuTorch's kernels: one delegate call, no operator; the blob
    holds the models IF and WHILE refer to."""
    _, conversions, _ = _results(request, name)
    operation = "WHILE" if name in ("while", "counted", "scan") else "IF"
    conversion = conversions[name]
    assert conversion.partition.kept == []
    plan = deserialize_pte_binary(conversion.pte).program
    chain = plan.execution_plan[0].chains[0].instructions
    assert plan.execution_plan[0].operators == []
    assert [type(i.instr_args).__name__ for i in chain] == ["DelegateCall"]
    (delegate,) = plan.backend_delegate_data
    blob = read_blob(delegate.data)
    assert len(blob.models) >= 3
    main = blob.models[0]
    assert int(OperationType[operation]) in [op.type for op in main.operations]
    assert sum(o.type == OperandType.MODEL for o in main.operands) == 2
    assert blob.settings.feature_level == 4


@pytest.mark.parametrize("name,kernels,why", [
    ("cond_level3", ["aten::gt"], "IF needs NNAPI feature level 4, above the target 3"),
    ("cond_cumsum", ["aten::gt", "aten::cumsum"], None),  # (its reason: the predicate
])                                                        # stays with it on the CPU)
def test_a_cond_left_to_executorch_has_its_branches_regions_delegated(
        ran: Runs, name: str, kernels: list[str], why: str | None) -> None:
    """The cond runs on ExecuTorch's kernels (JumpFalseCall), the sum before it and what
    NNAPI runs of each branch in delegates of their own; it still matches eager (above)."""
    _, conversions, _ = ran
    conversion = conversions[name]
    kept = {k.kind: k.reason for k in conversion.partition.kept}
    assert why is None or why in kept["higher_order::cond"]
    assert "higher_order::cond" in kept
    assert len(conversion.partition.regions) == 3  # the sum, one in each branch
    plan = deserialize_pte_binary(conversion.pte).program
    chain = [type(i.instr_args).__name__ for i in plan.execution_plan[0].chains[0].instructions]
    assert chain.count("JumpFalseCall") == 2 and chain.count("DelegateCall") == 3
    assert len(plan.backend_delegate_data) == 3
    operators = [o.name for o in plan.execution_plan[0].operators]
    assert sorted(operators) == sorted(kernels)


def test_a_scan_below_level_4_runs_on_executorch_with_its_step_delegated(ran: Runs) -> None:
    """ExecuTorch's kernels run the scan's loop (JumpFalseCall); what NNAPI runs of its
    combine_fn (linear, add, tanh, mul) is one delegate called at each step."""
    conversion = ran[1]["scan_level3"]
    assert [k.kind for k in conversion.partition.kept] == ["higher_order::scan"]
    assert len(conversion.partition.regions) == 1
    plan = deserialize_pte_binary(conversion.pte).program
    chain = [type(i.instr_args).__name__ for i in plan.execution_plan[0].chains[0].instructions]
    assert chain.count("JumpFalseCall") == 1 and chain.count("DelegateCall") == 1
    operators = {o.name for o in plan.execution_plan[0].operators}
    assert not operators & {"aten::addmm", "aten::tanh", "aten::mul"}


def test_a_while_loop_below_level_4_is_refused_in_one_line() -> None:
    with pytest.raises(ConversionError, match="torch.while_loop stays off NNAPI .*WHILE needs"
                       " NNAPI feature level 4.*ExecuTorch's kernels cannot run it"):
        to_pte_with_details(CountedLoop().eval(), (torch.randn(4), torch.tensor([3])),
                            target_level=3)
