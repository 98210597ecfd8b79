"""``--threads`` on every command that runs a model: one count for the runtime's kernels,
NumPy's BLAS and (for the commands using it) PyTorch."""

from __future__ import annotations

import argparse

import pytest
import torch

from torch_nnapi.cli import build_parser, main
from torch_nnapi.cli._commands import COMMANDS
from torch_nnapi.cli._errors import ExitCode
from torch_nnapi.runtime import get_num_threads, set_num_threads
from torch_nnapi.runtime.native import blas

from ..conftest import cts_root

MODEL_RUNNERS = {"bench", "check", "convert", "cts", "demo", "run"}


@pytest.fixture()
def restore_threads():
    saved = torch.get_num_threads(), get_num_threads(), blas.thread_counts()
    yield
    torch.set_num_threads(saved[0])
    set_num_threads(saved[1])
    blas.restore_thread_counts(saved[2])


def test_every_command_that_runs_a_model_takes_threads():
    parser = build_parser()  # loads every command
    # bench applies --threads to its measurement only; the others for the whole command
    assert {name for name, cmd in COMMANDS.items() if cmd.runs_models} == \
        MODEL_RUNNERS - {"bench"}
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in MODEL_RUNNERS:
        sub = subparsers.choices[name]
        assert any("--threads" in action.option_strings for action in sub._actions), name


def test_threads_must_be_positive(capsys):
    assert main(["cts", ".", "--threads", "0"]) == ExitCode.USAGE
    assert "--threads: must be a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.skipif(cts_root() is None, reason="the NNAPI conformance vectors are not available")
def test_cts_threads_set_the_runtime_and_blas(restore_threads, capsys):
    assert main(["cts", str(cts_root()), "--only", "add_broadcast_quant8", "--threads", "1"]) == 0
    assert get_num_threads() == 1
    assert set(blas.thread_counts()) <= {1}
    assert "passed" in capsys.readouterr().out


def test_torch_commands_also_set_pytorch(restore_threads, tmp_path, capsys):
    from ._models import Scaled, save

    original = save(Scaled(), torch.randn(1, 3, 4, 4), tmp_path / "scaled.pt")
    out = str(tmp_path / "scaled_nnapi.pt")
    assert main(["convert", original, "-o", out, "--input", "1x3x4x4", "--check",
                 "--threads", "1"]) == 0
    assert torch.get_num_threads() == 1 and get_num_threads() == 1
