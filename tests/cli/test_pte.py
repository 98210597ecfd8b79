"""ExecuTorch programs in the commands: ``convert --format pte`` (or a .pte output name),
then ``inspect``, ``run``, ``check`` and ``bench`` of the .pte, its outputs named by their
place in what the model returns; bad files, inputs and options as one line and an exit
code."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

from torch_nnapi.cli import main  # noqa: E402
from torch_nnapi.cli._errors import ExitCode  # noqa: E402

from ._models import AroundCumsum, Plain  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("pte")
    paths = {"model": str(d / "around.pt"), "other": str(d / "other.pt"),
             "pte": str(d / "around.pte"), "named": str(d / "around.program")}
    torch.save(AroundCumsum().eval(), paths["model"])
    torch.save(Plain().eval(), paths["other"])
    assert main(["convert", paths["model"], "--input", "2x5", "-o", paths["pte"]]) == 0
    assert main(["convert", paths["model"], "--input", "2x5", "-o", paths["named"],
                 "--format", "pte", "--fallback-op", "aten::sigmoid"]) == 0
    return paths


def test_convert_names_the_regions_and_what_stays_on_executorch(
        files: dict[str, str], tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "checked.pte")
    assert main(["convert", files["model"], "--input", "2x5", "-o", out, "--check"]) == 0
    text = capsys.readouterr().out
    assert "2 NNAPI region(s)" in text and "1 node(s) on ExecuTorch's kernels" in text
    assert "on ExecuTorch: aten::cumsum at" in text and "no lowering for this op" in text
    assert "['scores']: ok" in text and "['total']: ok" in text


def test_inspect_lists_the_delegates_in_running_order(
        files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["inspect", files["pte"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    steps = [line.strip() for line in lines if line.startswith("  ")]
    assert steps[0].startswith("delegate 0: NnapiBackend, feature level 1: ")
    assert steps[1] == "ExecuTorch kernel aten::cumsum.out"
    assert steps[2].startswith("delegate 1: NnapiBackend")
    assert lines[-1] == "2 NNAPI region(s); on ExecuTorch's kernels: aten::cumsum.out"
    assert main(["inspect", files["named"], "--json"]) == 0  # found by its header
    found = json.loads(capsys.readouterr().out)
    kernels = [s["kernel"] for s in found["steps"] if "kernel" in s]
    assert "aten::sigmoid.out" in kernels and "aten::cumsum.out" in kernels


def test_run_prints_the_outputs_by_name(files: dict[str, str], tmp_path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "out.npz"
    capsys.readouterr()
    assert main(["run", files["pte"], "--repeat", "3", "--save-outputs", str(saved)]) == 0
    text = capsys.readouterr().out
    assert "['scores']: [2, 5] float32" in text and "['total']: [2] float32" in text
    assert "latency (ExecuTorch with NnapiBackend, 3 runs)" in text
    assert saved.exists()


def test_check_against_the_original_and_another_model(
        files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", files["pte"], "--original", files["model"]]) == 0
    assert "['total']: ok" in capsys.readouterr().out
    assert main(["check", files["pte"], "--original", files["other"]]) == ExitCode.MISMATCH
    assert "mismatch: the .pte returned 2 tensors, the model 1" in capsys.readouterr().out


def test_bench_times_the_program_and_eager(files: dict[str, str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["bench", files["pte"], "--original", files["model"], "--runs", "3",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["pte"]["runs"] == 3 and report["eager"]["runs"] == 3
    # a ratio, or (on a busy machine) why there is none: tests/convert/tools/test_timing.py
    assert (report["ratio"] or 0) > 0 or report["ratio_refused"]
    assert [o["output"] for o in report["outputs"]] == ["['scores']", "['total']"]


def test_bench_of_a_pte_refuses_a_contended_ratio(files: dict[str, str]) -> None:
    import os
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "bench", files["pte"],
                             "--original", files["model"], "--runs", "3"], capture_output=True,
                            text=True, timeout=300,
                            env={**os.environ, "TORCH_NNAPI_BENCH_CONTEND": "nnapi"})
    assert result.returncode == 0, result.stderr
    [line] = [x for x in result.stdout.splitlines() if x.startswith("eager PyTorch median ")]
    assert "; .pte / eager no ratio: the .pte runs were contended (its median run took " \
        in line, line


@pytest.mark.parametrize(("command", "code", "says"), [
    (["run", "{bad}"], ExitCode.BAD_FILE, "not a readable ExecuTorch program"),
    (["inspect", "{bad}"], ExitCode.BAD_FILE, "not a readable ExecuTorch program"),
    (["run", "{pte}", "--input", "3x5"], ExitCode.USAGE,
     "input 0 is float32 [3, 5], the program takes float32 [2, 5]"),
    (["run", "{pte}", "--host"], ExitCode.USAGE, "--host applies to converted TorchScript"),
    (["convert", "{model}", "--input", "2x5", "-o", "{tmp}/x.pte", "--lite"], ExitCode.USAGE,
     "--lite applies to converted TorchScript modules, not to a .pte"),
    (["check", "{model}", "--original", "{model}", "--input", "2x5"], ExitCode.USAGE,
     "--original goes with a .pte"),
])
def test_bad_use_is_one_line_and_an_exit_code(files: dict[str, str], tmp_path,
                                              capsys: pytest.CaptureFixture[str],
                                              command: list[str], code: ExitCode,
                                              says: str) -> None:
    bad = tmp_path / "bad.pte"
    bad.write_text("not a program")
    args = [a.format(bad=bad, tmp=tmp_path, **files) for a in command]
    capsys.readouterr()
    assert main(args) == code
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert err.splitlines()[0].startswith(f"torch-nnapi {command[0]}: error: ")


def test_an_exported_cond_converts_runs_and_shows_its_called_models(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A .pt2 with torch.cond at --target-level 4: one NnapiBackend delegate running IF,
    checked against the program, inspected with its branches' operations, and run."""
    from ..convert.exported_control import BranchOnSum

    program, pte = str(tmp_path / "branch.pt2"), str(tmp_path / "branch.pte")
    torch.manual_seed(0)
    torch.export.save(torch.export.export(BranchOnSum().eval(), (torch.randn(2, 6),)), program)
    assert main(["convert", program, "--input", "2x6", "-o", pte, "--format", "pte",
                 "--target-level", "4", "--check"]) == 0
    text = capsys.readouterr().out
    assert "1 NNAPI region(s)" in text and "0 node(s) on ExecuTorch's kernels" in text
    assert "output 0: ok" in text
    assert main(["inspect", pte]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("  delegate 0: NnapiBackend, feature level 4: ")
    assert lines[2].endswith("IF")
    assert lines[3] == "    called model 0 (of IF or WHILE): FULLY_CONNECTED, MUL"
    assert lines[4] == "    called model 1 (of IF or WHILE): LOGISTIC, ABS, SUB"
    assert main(["run", pte, "--repeat", "2"]) == 0
    assert "output 0: [2, 6] float32" in capsys.readouterr().out


def test_a_pt2_with_a_bounded_batch_converts_and_runs_at_other_sizes(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--input`` cannot give a dimension's maximum, but a .pt2 exported with
    ``torch.export.Dim(..., max=8)`` carries it: the .pte runs any batch up to 8."""
    program = torch.export.export(Plain().eval(), (torch.randn(4, 5),),
                                  dynamic_shapes=({0: torch.export.Dim("batch", max=8)},))
    pt2, pte = str(tmp_path / "plain.pt2"), str(tmp_path / "plain.pte")
    torch.export.save(program, pt2)
    assert main(["convert", pt2, "-o", pte]) == 0
    capsys.readouterr()
    for batch in (3, 8):
        assert main(["run", pte, "--input", f"{batch}x5"]) == 0
        assert f"output 0: [{batch}, 5] float32" in capsys.readouterr().out
    assert main(["run", pte, "--input", "9x5"]) == ExitCode.USAGE
    assert "the program takes float32 [8, 5] at most" in capsys.readouterr().err
