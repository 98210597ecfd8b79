"""Models returning what users write (an LSTM's ``out, (h, c)``, a dict holding a named
tuple, a list and None), as a user runs the command line: convert (trace and export, whole
and with --fallback, --check), run (torch's runtime and --host), inspect, check and bench
name each tensor by its place; a model returning something else is one line. Each command
is a process of its own (several seconds): the export variants and check/bench are slow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ..conftest import package_env
from ..convert import structured_models as sm

REPOSITORY = Path(__file__).resolve().parents[2]

DICT_PLACES = ["['logits']", "['extra'].out", "['extra'].state[0]", "['again'][0]",
               "['again'][1]"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """Pickled nn.Modules, whose classes the commands import from the tests package as a
    user's commands import them from the model's own code."""
    d = tmp_path_factory.mktemp("structured")
    torch.manual_seed(0)
    for model in (sm.Recurrent(), sm.Nested(), sm.WithCount()):
        torch.save(model, d / f"{type(model).__name__}.pt")
    return d


def _cli(d: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, in ``d``, with the tests package importable."""
    env = package_env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(REPOSITORY)])
    return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", *argv], cwd=d,
                          capture_output=True, text=True, env=env, timeout=300)


def _ok(d: Path, *argv: str) -> str:
    result = _cli(d, *argv)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_an_lstm_returning_out_h_c(models):
    out = _ok(models, "convert", "Recurrent.pt", "-o", "rec_nnapi.pt", "--input", "2x3x4",
              "--fallback", "--check")
    assert "result: OK, the saved module matches the model" in out
    for place, shape in (("output 0 [0]", "[2, 3, 5]"), ("output 1 [1][0]", "[1, 2, 5]"),
                         ("output 2 [1][1]", "[1, 2, 5]")):
        assert f"{place} {shape}:" in out, out
    run = _ok(models, "run", "rec_nnapi.pt", "--input", "2x3x4", "--host", "--save-outputs",
              "rec.npz")
    assert "output 2 [1][1]: [1, 2, 5] float32" in run, run
    with np.load(models / "rec.npz") as saved_outputs:  # named by their place: out, (h, c)
        assert saved_outputs.files == ["output_0", "output_1.0", "output_1.1"]
    inspect = _ok(models, "inspect", "rec_nnapi.pt", "--summary")
    assert "returns (output 0, (output 1, output 2))" in inspect.splitlines(), inspect


@pytest.mark.slow
@pytest.mark.parametrize("capture", ["trace", "export"])
def test_a_dict_with_a_named_tuple_a_list_and_none_through_the_fallback(models, capture):
    saved = f"dict_{capture}.pt"
    out = _ok(models, "convert", "Nested.pt", "-o", saved, "--input", "2x4", "--fallback",
              "--check", "--capture", capture)
    assert "result: OK, the saved module matches the model" in out
    for i, place in enumerate(DICT_PLACES):
        assert f"output {i} {place} [2, 3]:" in out, out
    run = _ok(models, "run", saved, "--input", "2x4", "--save-outputs", f"{capture}.npz")
    assert "output 4 ['again'][1]: [2, 3] float32" in run, run
    with np.load(models / f"{capture}.npz") as saved_outputs:
        assert saved_outputs.files == ["logits", "extra.out", "extra.state.0", "again.0",
                                       "again.1"]
    inspect = _ok(models, "inspect", saved).splitlines()
    assert inspect[1] == ("returns {'logits': output 0, 'extra': Pair(out=output 1,"
                          " state=(output 2, None)), 'again': [output 3, output 4]}"), inspect


@pytest.mark.slow
def test_check_and_bench_take_the_dict_apart(models):
    check = _ok(models, "check", "Nested.pt", "--input", "2x4", "--fallback")
    assert "output 2 ['extra'].state[0] [2, 3]:" in check
    assert "result: OK, converts into 1 NNAPI region" in check
    _ok(models, "convert", "Nested.pt", "-o", "bench.pt", "--input", "2x4", "--fallback")
    bench = _ok(models, "bench", "bench.pt", "--input", "2x4", "--runs", "3")
    assert "FULLY_CONNECTED" in bench


@pytest.mark.parametrize("capture", ["trace", pytest.param("export", marks=pytest.mark.slow)])
def test_a_model_returning_a_number_is_one_line(models, capture):
    result = _cli(models, "convert", "WithCount.pt", "-o", "count.pt", "--input", "2x4",
                  "--capture", capture)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "torch-nnapi convert: error: output[1]['count'] is an int; a converted model returns"
        " tensors (in tuples, lists, dicts and named tuples, with None)"], result.stderr
    assert not (models / "count.pt").exists()
