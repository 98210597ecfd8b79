"""NnapiPartitioner and to_pte on models NNAPI runs in part: the regions it tags on each side
of what NNAPI lacks, the ops it keeps whole, a partitioner that follows it (XNNPACK), the
options it refuses, and the outputs' structure (dicts, named tuples, nesting) rebuilt from
the .pte. These run the .pte in this process (PteModule); test_runtime.py runs the same
kind of models in a fresh one."""

from __future__ import annotations

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402
from executorch.exir import to_edge_transform_and_lower  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402

from torch_nnapi.convert.executorch.outputs import leaf_paths, structure_of  # noqa: E402
from torch_nnapi.convert.executorch.partitioner import NnapiPartitioner, whole_ops  # noqa: E402
from torch_nnapi.convert.executorch.pte import PteConversion, to_pte_with_details  # noqa: E402
from torch_nnapi.convert.executorch.pte_file import PteError, PteModule, read_pte  # noqa: E402

from .cases import Pair, RegionsBothSides, Structured, magnitude_tolerance  # noqa: E402


def assert_close(got: object, want: object) -> None:
    """Leaf by leaf within 1e-4 of the magnitude, nested alike (a named tuple comes back as
    one of the same name and fields, not the model's class: the .pte cannot hold it)."""
    got_leaves, got_spec = tree_flatten(got)
    want_leaves, want_spec = tree_flatten(want)
    assert structure_of(got_spec) == structure_of(want_spec)
    tolerance = magnitude_tolerance(want_leaves)
    for a, e in zip(got_leaves, want_leaves, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        assert (a - e).abs().max().item() <= tolerance


def test_regions_on_both_sides_of_an_op_nnapi_lacks() -> None:
    model, x = RegionsBothSides().eval(), torch.randn(2, 8)
    made = to_pte_with_details(model, (x,))
    assert [r.operations for r in made.partition.regions] == [
        {"FULLY_CONNECTED": 1}, {"FULLY_CONNECTED": 1, "LOGISTIC": 1}]  # RELU: fused
    assert [k.kind for k in made.partition.kept] == ["aten::cumsum"]
    assert "no lowering" in made.partition.kept[0].reason
    info = read_pte(made.pte)
    assert info.steps == [0, "aten::cumsum.out", 1]
    assert [d.backend for d in info.delegates] == ["NnapiBackend"] * 2
    with torch.no_grad():
        assert_close(PteModule(made.pte)(x), model(x))


def test_the_outputs_come_back_as_the_model_returns_them() -> None:
    model, x = Structured().eval(), torch.randn(3, 6)
    made = to_pte_with_details(model, (x,))
    got = PteModule(made.pte)(x)
    assert type(got["pair"]).__name__ == "Pair" and got["pair"]._fields == Pair._fields
    with torch.no_grad():
        assert_close(got, model(x))
    assert leaf_paths(made.structure, 5) == ["['pair'].scores", "['pair'].state",
                                             "['nested'][0]", "['nested'][1][0]",
                                             "['nested'][1][1]"]


class PreActivation(nn.Module):
    """DenseNet's order: a batch norm on a concatenation (no convolution to fold it into),
    then ReLU and a convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(6)
        self.conv = nn.Conv2d(6, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.relu(self.norm(torch.cat([x, x * 2.0], 1))))


def test_a_batch_norm_not_after_a_convolution_is_delegated() -> None:
    model, x = PreActivation().eval(), torch.randn(1, 3, 8, 8)
    mean, var = model.norm.running_mean, model.norm.running_var
    assert mean is not None and var is not None
    with torch.no_grad():
        mean.normal_()
        var.uniform_(0.5, 1.5)
    made = to_pte_with_details(model, (x,))
    assert made.partition.kept == [] and len(made.partition.regions) == 1
    assert read_pte(made.pte).kernels == []
    with torch.no_grad():
        assert_close(PteModule(made.pte)(x), model(x))


def test_linear_and_layer_norm_are_kept_whole() -> None:
    names = {op._schema.name for op in whole_ops()}
    assert {"aten::linear", "aten::layer_norm"} <= names

    class Norm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.norm = nn.Linear(8, 8), nn.LayerNorm(8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.norm(self.fc(x))

    made = to_pte_with_details(Norm().eval(), (torch.randn(2, 8),))
    (region,) = made.partition.regions
    assert "FULLY_CONNECTED" in region.operations, region.operations
    assert not made.partition.kept


def _attention_nodes(made: PteConversion) -> list[str]:
    return [n.name for region in made.partition.regions for n in region.nodes
            if "scaled_dot_product_attention" in str(n.target)]


def test_attention_is_kept_whole_where_nnapi_takes_it() -> None:
    """Its output's transpose and view (kept as views: no copy when captured) take a copy
    first, or ExecuTorch's decomposition of the program fails on them."""
    from ..transformers import Decoder

    torch.manual_seed(0)
    model, ids = Decoder(layers=1).eval(), torch.randint(0, 100, (2, 8))
    made = to_pte_with_details(model, (ids,))
    assert len(made.partition.regions) == 1 and len(_attention_nodes(made)) == 1
    assert not made.partition.kept
    with torch.no_grad():
        assert_close(PteModule(made.pte)(ids), model(ids))


def test_the_users_program_is_left_as_it_was() -> None:
    """The copies before attention's views go into a new program, not the one passed."""
    from ..transformers import Decoder

    torch.manual_seed(0)
    model, ids = Decoder(layers=1).eval(), torch.randint(0, 100, (2, 8))
    program = torch.export.export(model, (ids,))
    before = str(program.graph_module.graph)
    to_edge_transform_and_lower(program, partitioner=[NnapiPartitioner()])
    assert str(program.graph_module.graph) == before
    assert "aten.clone" not in before


def test_attention_not_kept_whole_is_decomposed() -> None:
    from ..transformers import AudioBlock

    torch.manual_seed(0)
    model, x = AudioBlock(16, 2).eval(), torch.randn(1, 6, 16)
    made = to_pte_with_details(model, (x,), fallback_ops=["aten::scaled_dot_product_attention"])
    # decomposed by ExecuTorch (its parts, matrix products and softmax, then lower one by
    # one: fallback_ops names the whole op only)
    assert not _attention_nodes(made) and len(made.partition.regions) == 1
    with torch.no_grad():
        assert_close(PteModule(made.pte)(x), model(x))


@pytest.mark.slow
def test_fallback_ops_go_to_the_partitioner_that_follows() -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    model, x = RegionsBothSides(middle="sigmoid").eval(), torch.randn(2, 8)
    made = to_pte_with_details(model, (x,), fallback_ops=["aten::sigmoid"],
                               then=[XnnpackPartitioner()])
    assert len(made.partition.regions) == 2
    info = read_pte(made.pte)
    backends = [info.delegates[s].backend for s in info.steps if isinstance(s, int)]
    # both sigmoids (the middle one and the last) fall back, to XNNPACK
    assert backends == ["NnapiBackend", "XnnpackBackend"] * 2, info.steps
    assert not info.kernels
    with torch.no_grad():
        assert_close(PteModule(made.pte)(x), model(x))


def test_max_regions_leaves_the_smaller_regions_to_executorch() -> None:
    model, x = RegionsBothSides().eval(), torch.randn(2, 8)
    made = to_pte_with_details(model, (x,), max_regions=1)
    assert len(made.partition.regions) == 1
    assert len(read_pte(made.pte).kernels) > 1
    with torch.no_grad():
        assert_close(PteModule(made.pte)(x), model(x))


def test_an_exported_program_in_executorch_s_own_api() -> None:
    model, x = RegionsBothSides().eval(), torch.randn(2, 8)
    program = torch.export.export(model, (x,))
    edge = to_edge_transform_and_lower(program, partitioner=[NnapiPartitioner(nhwc=False)])
    pte = edge.to_executorch().buffer
    assert [d.backend for d in read_pte(pte).delegates] == ["NnapiBackend"] * 2
    with torch.no_grad():
        assert_close(PteModule(pte)(x), model(x))


@pytest.mark.parametrize(("options", "named"), [
    ({"max_regions": "many"}, "many"),
    ({"fallback_ops": "aten::relu"}, "fallback_ops"),
    ({"compilation_preference": "fastest"}, "fastest"),
    ({"no_such_option": 1}, "no_such_option"),
])
def test_bad_options_are_one_line_naming_them(options: dict[str, object], named: str) -> None:
    with pytest.raises((ValueError, TypeError)) as caught:
        NnapiPartitioner(**options)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_inputs_the_program_does_not_take_are_one_line() -> None:
    model, x = RegionsBothSides().eval(), torch.randn(2, 8)
    module = PteModule(to_pte_with_details(model, (x,)).pte)
    with pytest.raises(PteError, match=r"input 0 is float32 \[3, 8\], the program takes"
                                       r" float32 \[2, 8\]"):
        module(torch.randn(3, 8))
    with pytest.raises(PteError, match="takes 1 input, got 2"):
        module(x, x)
