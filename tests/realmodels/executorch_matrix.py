"""Real models through the ExecuTorch back-end: lowered by ``to_pte`` and saved here, run
together in one fresh process (tests/convert/executorch/run_pte.py) and compared to eager."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
from torch.utils._pytree import tree_flatten

from torch_nnapi.convert.executorch.outputs import read_structure, rebuild, structure_of
from torch_nnapi.convert.executorch.pte import to_pte_with_details
from torch_nnapi.convert.executorch.pte_file import read_pte

from ..convert.executorch.test_runtime import run_fresh

RELATIVE_TOLERANCE = 1e-4  # of the output's magnitude (at least 1)


@dataclass
class Lowered:
    """What the parent knows of a saved .pte: eager's answer and the program's make-up."""

    expected: object
    delegates: int
    kernels: list[str]  # the operators left to ExecuTorch's kernels, in running order
    seconds: float  # to_pte's


def lower(directory: Path, name: str, model: nn.Module, inputs: tuple[torch.Tensor, ...],
          **options: Any) -> Lowered:
    """``model`` in eval mode lowered to DIR/NAME.pte, with its inputs beside it."""
    model = model.eval()
    with torch.no_grad():
        expected = model(*inputs)
    start = time.perf_counter()
    made = to_pte_with_details(model, inputs, **options)
    seconds = time.perf_counter() - start
    info = read_pte(made.pte)
    (directory / f"{name}.pte").write_bytes(made.pte)
    torch.save(inputs, directory / f"{name}.inputs.pt")
    return Lowered(expected, len(info.delegates), info.kernels, seconds)


def run_all(directory: Path, names: list[str]) -> None:
    """The saved programs ``names``, run by one fresh process."""
    run_fresh(directory, names)


def nested_outputs(directory: Path, name: str) -> Any:
    """What the fresh process returned for ``name``, nested by the structure its .pte
    records (as the model returned it)."""
    structure = read_structure((directory / f"{name}.structure.json").read_text())
    return rebuild(structure, torch.load(directory / f"{name}.outputs.pt"))


def relative_error(directory: Path, name: str, lowered: Lowered) -> float:
    """The largest difference from eager over the output's magnitude, after checking the
    nested outputs came back as the model returned them (same structure, shapes, dtypes;
    integer outputs exactly)."""
    error = directory / f"{name}.error.txt"
    assert not error.exists(), f"{name}: {error.read_text()}"
    got_leaves, got_spec = tree_flatten(nested_outputs(directory, name))
    want_leaves, want_spec = tree_flatten(lowered.expected)
    assert structure_of(got_spec) == structure_of(want_spec), f"{name}: {got_spec}"
    magnitude = max([1.0, *(float(t.abs().max()) for t in want_leaves
                            if t.is_floating_point() and t.numel())])
    worst = 0.0
    for got, want in zip(got_leaves, want_leaves, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if not want.is_floating_point():
            assert torch.equal(got, want), f"{name}: {got} != {want}"
        elif want.numel():
            worst = max(worst, float((got.double() - want.double()).abs().max()) / magnitude)
    return worst
