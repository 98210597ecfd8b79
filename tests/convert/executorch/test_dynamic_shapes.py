"""Bounded dynamic sizes end to end: programs exported with ``torch.export.Dim(..., max=N)``
lowered to .pte files, saved and run in a fresh process through ExecuTorch's runtime on
torch-nnapi's libneuralnetworks.so (run_dynamic.py) at several sizes, the maximum among them,
against eager PyTorch (within 1e-4 of the outputs' magnitude). A size outside the bounds is
an ExecuTorch error naming the input and dimension; each new set of sizes compiles once (a
log line), a size seen before reuses its compilation."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.export import Dim, export  # noqa: E402

from tests.conftest import package_env  # noqa: E402
from torch_nnapi.convert.errors import ConversionError  # noqa: E402
from torch_nnapi.convert.executorch.blob import Blob, read_blob  # noqa: E402
from torch_nnapi.convert.executorch.blob_shapes import DimBound, PatchTarget  # noqa: E402
from torch_nnapi.convert.executorch.pte import to_pte  # noqa: E402

from .cases import CausalEncoderLayer, Mlp, SmallCnn, magnitude_tolerance  # noqa: E402

RUNNER = Path(__file__).with_name("run_dynamic.py")
COMPILED = re.compile(r"NnapiBackend: compilation (\d+), for input sizes ((?:\[[^\]]*\])+)")


@dataclass
class DynamicCase:
    model: nn.Module
    pte: bytes
    sizes: list[tuple[int, ...]]  # the input's shape, run after run
    refused: dict[int, str]  # run index -> what its error says


def transformer() -> nn.Module:
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)


def make(model: nn.Module, example: tuple[int, ...], dim: int, maximum: int,
         sizes: list[tuple[int, ...]], refused: dict[int, str]) -> DynamicCase:
    torch.manual_seed(0)
    model = model.eval()
    program = export(model, (torch.randn(example),),
                     dynamic_shapes=({dim: Dim(f"d{dim}", max=maximum)},))
    return DynamicCase(model, to_pte(program), sizes, refused)


def cases() -> dict[str, DynamicCase]:
    return {
        # the batch: example 4; 2 (its minimum: torch.export starts sizes at 2), 9, the
        # maximum 16, 9 again (cached); 17 (ExecuTorch's own capacity check), 1 (under the
        # bounds: NnapiBackend's), then 9 again
        "mlp": make(Mlp(), (4, 32), 0, 16, [(4, 32), (2, 32), (9, 32), (16, 32), (9, 32),
                                            (17, 32), (1, 32), (9, 32)],
                    {5: "set_inputs", 6: "0x12"}),
        "cnn": make(SmallCnn(), (2, 3, 16, 16), 0, 8,
                    [(2, 3, 16, 16), (5, 3, 16, 16), (8, 3, 16, 16), (3, 3, 16, 16)], {}),
        # the sequence length, up to 64
        "transformer": make(transformer(), (2, 8, 32), 1, 64,
                            [(2, 8, 32), (2, 3, 32), (2, 64, 32), (2, 17, 32), (2, 3, 32)],
                            {}),
        # a causal mask built from the sequence length, which several regions read
        # (size_copies.py gives each its own copy of the size)
        "causal": make(CausalEncoderLayer(), (2, 8, 32), 1, 64,
                       [(2, 8, 32), (2, 3, 32), (2, 64, 32), (2, 17, 32), (2, 3, 32)], {}),
    }


# the cases; per case, each run's (result or error, eager result); each case's part of the
# stderr; the whole stderr
Results = tuple[dict[str, DynamicCase], dict[str, list[tuple[Any, Any]]], dict[str, str], str]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Every case lowered, saved and run by one fresh process: the cases, their results,
    each case's part of the stderr, and the whole stderr."""
    directory = tmp_path_factory.mktemp("dynamic")
    made = cases()
    inputs: dict[str, list[tuple[torch.Tensor, ...]]] = {}
    for name, case in made.items():
        (directory / f"{name}.pte").write_bytes(case.pte)
        torch.manual_seed(1)
        inputs[name] = [(torch.randn(size),) for size in case.sizes]
        torch.save(inputs[name], directory / f"{name}.inputs.pt")
    run = subprocess.run([sys.executable, str(RUNNER), str(directory), *made],
                         capture_output=True, text=True, env=package_env(), timeout=900,
                         check=False)
    assert run.returncode == 0 and "done" in run.stdout, run.stderr[-4000:]
    parts = {name: run.stderr[run.stderr.find(f"run {name} "):] for name in made}
    for name, part in parts.items():
        later = [part.find(f"run {other} ", 1) for other in made if other != name]
        end = min([at for at in later if at > 0], default=len(part))
        parts[name] = part[:end]
    outcomes = {}
    for name, case in made.items():  # with the eager results, to compare with
        got = torch.load(directory / f"{name}.results.pt")
        with torch.no_grad():
            outcomes[name] = [(g, [case.model(*x)] if not isinstance(g, str) else None)
                              for g, x in zip(got, inputs[name], strict=True)]
    return made, outcomes, parts, run.stderr


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "causal"])
def test_every_size_matches_eager(results: Results, name: str) -> None:
    made, outcomes, _, stderr = results
    case = made[name]
    good = [k for k in range(len(case.sizes)) if k not in case.refused]
    dim, maximum = {"mlp": (0, 16), "cnn": (0, 8)}.get(name, (1, 64))
    assert max(case.sizes[k][dim] for k in good) == maximum  # the maximum ran
    for k in good:
        got, expected = outcomes[name][k]
        assert not isinstance(got, str), f"{case.sizes[k]}: {got}\n{stderr[-3000:]}"
        tolerance = magnitude_tolerance(expected)
        for g, e in zip(got, expected, strict=True):
            assert g.shape == e.shape, case.sizes[k]
            assert (g - e).abs().max().item() <= tolerance, case.sizes[k]


def test_sizes_outside_the_bounds_are_refused_cleanly(results: Results) -> None:
    made, outcomes, parts, _ = results
    for k, says in made["mlp"].refused.items():
        got, _ = outcomes["mlp"][k]
        assert isinstance(got, str) and says in got, got
    # under the bounds: one line from NnapiBackend naming the input and the dimension
    assert "NnapiBackend: input 0 dimension 0 is 1, outside its bounds [2, 16]" \
        in parts["mlp"]
    assert not isinstance(outcomes["mlp"][-1][0], str)  # and the method still runs


def test_each_new_size_compiles_once(results: Results) -> None:
    made, _, parts, _ = results
    for name, case in made.items():
        # each delegate (the causal case has several) logs its compilations: one entry per
        # compilation and first input
        compiled = list(dict.fromkeys((int(n), sizes[:sizes.index("]") + 1])
                                      for n, sizes in COMPILED.findall(parts[name])))
        good = [case.sizes[k] for k in range(len(case.sizes)) if k not in case.refused]
        new = list(dict.fromkeys(good[1:]))  # the first, the example's, compiled at load
        new = [s for s in new if s != good[0]]
        assert [n for n, _ in compiled] == list(range(2, 2 + len(new))), parts[name]
        assert len(COMPILED.findall(parts[name])) == len(new) * delegates(case.pte)
        assert [s for _, s in compiled] == [str(list(s)) for s in new]


def delegates(pte: bytes) -> int:
    return pte.count(b"TNNAPIET")


def _blob_of(pte: bytes) -> Blob:
    at = pte.find(b"TNNAPIET")
    return read_blob(pte[at:at + struct.unpack("<Q", pte[at + 16:at + 24])[0]])


def test_the_blob_carries_the_bounds_and_size_programs(results: Results) -> None:
    made = results[0]
    blob = _blob_of(made["transformer"].pte)
    assert blob.shapes.bounds == (DimBound(0, 1, 2, 64),)
    assert blob.inputs[0].shape == (2, 8, 32)  # the model at the example's sizes
    # operand dimensions, the attention's reshape targets (INT32 values), the output's size
    assert {p.target for p in blob.shapes.patches} == set(PatchTarget)


def test_an_unbounded_dimension_is_refused_with_its_name() -> None:
    program = export(Mlp().eval(), (torch.randn(4, 32),),
                     dynamic_shapes=({0: Dim("batch")},))
    with pytest.raises(ConversionError, match="input 0 dimension 0 .* has no maximum"):
        to_pte(program)


def test_a_size_several_regions_read_is_refused_cleanly_without_the_copies() -> None:
    """Lowered without ``copy_sizes_per_reader`` (to_pte passes it), the causal mask's
    length falls in two regions: a ConversionError naming the size node, both regions and
    where the size is read, not a converter bug's traceback."""
    from executorch.exir import to_edge_transform_and_lower

    from torch_nnapi.convert.executorch.partitioner import NnapiPartitioner

    program = export(CausalEncoderLayer().eval(), (torch.randn(2, 8, 32),),
                     dynamic_shapes=({1: Dim("seq", max=64)},))
    with pytest.raises(ConversionError, match=r"the size sym_size\w* is read by NNAPI"
                       r" regions 0 and 1, .*copy_sizes_per_reader") as caught:
        to_edge_transform_and_lower(program, partitioner=[NnapiPartitioner()])
    assert "cases.py" in str(caught.value)  # where: the line reading the size


def test_a_decoder_whose_mask_leaves_a_region_as_bool_is_refused_in_one_error() -> None:
    """The GPT-style decoder at a dynamic length: its mask would leave a region as a bool
    tensor of flexible size, which NNAPI cannot move; that region does not form, and the
    layer norm kept whole for it is refused by name (not ExecuTorch's "missing out
    variants" traceback)."""
    from ..transformers import Decoder

    torch.manual_seed(0)
    program = export(Decoder(layers=1).eval(), (torch.randint(0, 100, (2, 8)),),
                     dynamic_shapes=({1: Dim("seq", max=64)},))
    with pytest.raises(ConversionError, match=r"(?s)aten::layer_norm.*kept whole.*bool tensor"
                       r" of flexible size.*transformers\.py"):
        to_pte(program)


def test_the_causal_layer_runs_in_several_delegates(results: Results) -> None:
    assert delegates(results[0]["causal"].pte) > 1  # (else the copies went untested)
