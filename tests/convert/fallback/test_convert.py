"""convert(..., fallback=True) end to end: models with operations NNAPI cannot run convert,
run through PyTorch's NNAPI runtime on the project's library (NNAPI regions) and
TorchScript (CPU nodes), and match eager PyTorch, also saved and reloaded in a fresh
process and in the lite interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.errors import ConversionError, FeatureLevelError
from torch_nnapi.convert.fallback.convert import PartitionedConversion

from .. import fallback_models as fm
from ..harness import assert_close, check, run

IMAGE = (1, 3, 12, 12)


def image(seed: int = 0, shape=IMAGE) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def partitioned(model, inputs, **options) -> PartitionedConversion:
    """Converts with the fallback, runs (twice: the second run reuses the compilations)
    and compares with eager."""
    conversion, _ = check(model, inputs, fallback=True, run_inputs=[inputs, inputs],
                          **options)
    assert isinstance(conversion, PartitionedConversion)
    return conversion


def cpu_kinds(conversion: PartitionedConversion) -> list[str]:
    return [c.kind for c in conversion.report.cpu]


@pytest.mark.parametrize("factory, regions", [
    pytest.param(fm.AtStart, 1, id="start"),
    pytest.param(fm.InTheMiddle, 2, id="middle"),
    pytest.param(fm.AtTheEnd, 1, id="end"),
])
def test_unsupported_op_anywhere(factory, regions):
    conversion = partitioned(fm.randomize(factory()), image())
    assert len(conversion.regions) == regions
    assert cpu_kinds(conversion) == ["torch_nnapi_tests::wiggle"]
    assert conversion.report.cpu[0].reason == "no lowering for this op"


def test_parallel_branches_share_regions():
    """The NNAPI branch runs in the first region, beside the CPU branch's first conv; the
    join and the last conv form the second."""
    conversion = partitioned(fm.randomize(fm.ParallelBranches()), image())
    first, second = conversion.regions
    assert first.operation_counts["CONV_2D"] == 3
    assert second.operation_counts["CONV_2D"] == 1 and "ADD" in second.operation_counts


def test_residual_blocks():
    conversion = partitioned(fm.randomize(fm.Residual(blocks=3)), image())
    assert len(conversion.regions) == 4
    assert cpu_kinds(conversion) == ["torch_nnapi_tests::wiggle"] * 3


def test_nhwc_regions_stay_channels_last():
    """NHWC on both sides of the CPU op: the permutes are at the region boundaries only."""
    conversion = partitioned(fm.randomize(fm.InTheMiddle()), image(), nhwc=True)
    for region in conversion.regions:
        assert "TRANSPOSE" not in region.operation_counts
        assert region.lowered is not None
        model = region.lowered.cx.model
        assert model.operands[model.inputs[0]].dimensions[-1] in (3, 8)  # channels last


@pytest.mark.usefixtures("qnnpack")
def test_quantized_regions_exchange_quint8():
    x = image()
    model = fm.quantized_blocks(x)
    conversion = convert_with_details(model, x, fallback=True)
    assert isinstance(conversion, PartitionedConversion)
    with torch.no_grad():
        expected = model(x)
    got = run(conversion.module, (x,))
    out_conv = model.b
    assert isinstance(out_conv, torch.ao.nn.quantized.Conv2d)
    assert (got - expected).abs().max().item() <= out_conv.scale * 1.0001  # one quantum
    assert len(conversion.regions) == 2
    first, second = conversion.regions
    assert first.lowered is not None and second.lowered is not None
    assert first.lowered.outputs[0].dtype == "quint8"
    assert second.lowered.inputs[0].dtype == "quint8"
    crossing = conversion.report.regions[0].outputs[0]
    assert crossing.dtype == "quint8" and crossing.bytes == 8 * 12 * 12


def test_quantized_within_one_quantum_by_fallback_ops(qnnpack):
    """fallback_ops moves quantized ops NNAPI could run to the CPU, between quantized
    regions: still within one quantum of PyTorch."""
    class Block(torch.nn.Module):
        def forward(self, x):
            q = torch.quantize_per_tensor(x, 0.05, 120, torch.quint8)
            y = torch.ops.quantized.add(q, q, 0.1, 128)
            return torch.ops.quantized.mul(y, y, 0.2, 100)

    conversion = partitioned(Block(), image(), fallback_ops=["quantized::add"])
    # the quantization alone would be a region without operations: the CPU does it
    assert cpu_kinds(conversion) == ["aten::quantize_per_tensor", "quantized::add"]
    assert conversion.regions[0].operation_counts == {"MUL": 1}


def test_flexible_sizes_cross_boundaries():
    x = image(shape=(1, 3, 16, 16))
    others = [image(1, (1, 3, 20, 12)), image(2, (2, 3, 8, 24)), x]
    conversion, _ = check(fm.randomize(fm.Classifier()), x, fallback=True,
                          flexible={0: [0, 2, 3]}, run_inputs=others)
    assert isinstance(conversion, PartitionedConversion)
    second = conversion.report.regions[1]
    assert second.inputs[0].flexible == [0, 2, 3]


def test_bool_and_int64_cross_boundaries():
    conversion = partitioned(fm.Masked(), image())
    dtypes = {t.dtype for r in conversion.report.regions for t in r.inputs + r.outputs}
    assert {"bool", "int64"} <= dtypes


def test_data_dependent_sizes_stay_on_the_cpu():
    conversion = partitioned(fm.randomize(fm.NonZero()), image())
    reasons = dict((c.kind, c.reason) for c in conversion.report.cpu)
    assert "aten::nonzero" in reasons
    assert "depend on the data" in reasons["aten::nonzero"]
    assert "only the CPU holds" in reasons["aten::mul"]


def test_loop_on_data_runs_on_the_cpu():
    class Loop(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = fm.conv(3, 4), fm.conv(4, 4)

        def forward(self, x):
            y = self.a(x)
            steps = int((y > 0).sum()) % 3 + 1
            for _ in range(steps):
                y = y * 0.5 + 1.0
            return self.b(y)

    model = torch.jit.script(fm.randomize(Loop()))
    conversion = partitioned(model, image())
    assert "prim::Loop" in cpu_kinds(conversion)
    assert len(conversion.regions) == 2


def test_model_that_converts_whole_is_one_nnapi_model():
    model = fm.randomize(torch.nn.Sequential(fm.conv(3, 4), torch.nn.ReLU()))
    conversion, _ = check(model, image(), fallback=True)
    assert isinstance(conversion, Conversion)


def test_fallback_ops_keep_softmax_on_the_cpu():
    model = torch.nn.Sequential(fm.conv(3, 4), torch.nn.Softmax(1), fm.conv(4, 4))
    conversion = partitioned(fm.randomize(model), image(), fallback_ops=["aten::softmax"])
    assert cpu_kinds(conversion) == ["aten::softmax"]
    assert conversion.report.cpu[0].reason == "aten::softmax is in fallback_ops"


def test_min_region_size_keeps_small_regions_on_the_cpu():
    class Small(torch.nn.Module):
        def forward(self, x):
            y = torch.ops.torch_nnapi_tests.wiggle(x).flatten(1)
            return torch.ops.torch_nnapi_tests.wiggle(y * 2.0 + 1.0)

    conversion = partitioned(Small(), image(), min_region_size=2)
    assert [r.size for r in conversion.regions] == [2]  # MUL and ADD; the flatten alone: no
    with pytest.raises(ConversionError, match="no part of the model is left for NNAPI"):
        convert_with_details(Small(), image(), fallback=True, min_region_size=3)


def test_max_regions_keeps_the_largest():
    conversion = partitioned(fm.randomize(fm.Residual(blocks=3)), image(), max_regions=2)
    assert len(conversion.regions) == 2
    reasons = {c.reason for c in conversion.report.cpu}
    assert "only the 2 largest regions run on NNAPI (max_regions)" in reasons


def test_target_level_moves_rejected_operations_to_the_cpu():
    class Exp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = fm.conv(3, 4), fm.conv(4, 4)

        def forward(self, x):
            return self.b(torch.exp(self.a(x) * 0.1))

    model = fm.randomize(Exp())
    with pytest.raises(FeatureLevelError) as error:
        convert_with_details(model, image(), target_level=1, nhwc=True)
    assert "fallback=True" in str(error.value).splitlines()[-1]
    conversion = partitioned(model, image(), target_level=1, nhwc=True)
    assert conversion.feature_level == 1
    assert cpu_kinds(conversion) == ["aten::exp"]
    assert "EXP needs NNAPI feature level 3" in conversion.report.cpu[0].reason


def test_without_fallback_the_error_hints_at_it():
    with pytest.raises(ConversionError) as error:
        convert_with_details(fm.randomize(fm.Residual(blocks=2)), image())
    last = str(error.value).splitlines()[-1]
    assert last == ("hint: convert(..., fallback=True) (torch-nnapi convert --fallback) would"
                    " convert the model into 3 NNAPI regions (5 operations) with 2 nodes on"
                    " the CPU")


def test_knobs_need_fallback():
    with pytest.raises(ValueError, match="need fallback=True"):
        convert_with_details(fm.AtStart(), image(), fallback_ops=["aten::relu"])
    with pytest.raises(ValueError, match="fallback_ops holds TorchScript op kinds"):
        convert_with_details(fm.AtStart(), image(), fallback=True, fallback_ops=["relu"])
    with pytest.raises(ValueError, match="max_regions must be >= 1"):
        convert_with_details(fm.AtStart(), image(), fallback=True, max_regions=0)


# ------------------------------------------------------------------------------ artifacts


# name -> (model factory, convert_with_details options)
SAVED: dict[str, tuple[Callable[[], nn.Module], dict[str, Any]]] = {
    "middle": (lambda: fm.randomize(fm.InTheMiddle()), {}),
    "residual_nhwc": (lambda: fm.randomize(fm.Residual()), {"nhwc": True}),
    "masked": (fm.Masked, {}),
    "flexible": (lambda: fm.randomize(fm.Classifier()), {"flexible": {0: [2, 3]}}),
    "quantized": (lambda: QuantizedAdd(), {"fallback_ops": ["quantized::add"]}),
}


class QuantizedAdd(torch.nn.Module):
    """Quantized regions around a quantized op kept on the CPU: quint8 crosses both ways."""

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 120, torch.quint8)
        y = torch.ops.quantized.add(torch.ops.quantized.mul(q, q, 0.1, 128), q, 0.1, 128)
        return torch.ops.quantized.mul(y, y, 0.2, 100)


def _save_all(tmp_path: Path) -> list[str]:
    names = []
    for name, (factory, options) in SAVED.items():
        model, x = factory().eval(), image()
        module = convert_with_details(model, x, fallback=True, **options).module
        module(x)  # saved after a run: the compilations are left out
        inputs = [x, image(5, (1, 3, 20, 16))] if "flexible" in options else [x]
        with torch.no_grad():
            expected = [model(i) for i in inputs]
        torch.jit.save(module, str(tmp_path / f"{name}.pt"))
        module._save_for_lite_interpreter(str(tmp_path / f"{name}.ptl"))
        torch.save({"inputs": inputs, "expected": expected}, tmp_path / f"{name}.data")
        names.append(name)
    return names


@pytest.mark.usefixtures("qnnpack")
def test_saved_modules_run_in_a_fresh_process_and_the_lite_interpreter(tmp_path):
    names = _save_all(tmp_path)
    root = Path(__file__).resolve().parents[2]
    script = textwrap.dedent(f"""
        import sys, warnings
        warnings.simplefilter("ignore")
        sys.path.insert(0, {str(root)!r})
        import torch, torch_nnapi
        import tests.convert.fallback_models  # registers the custom ops, as an app would
        torch.backends.quantized.engine = "qnnpack"  # PyTorch Mobile's, the reference's
        from tests.convert.harness import assert_close
        from torch.jit.mobile import _load_for_lite_interpreter
        for name in {names!r}:
            data = torch.load({str(tmp_path)!r} + "/" + name + ".data")
            full = torch.jit.load({str(tmp_path)!r} + "/" + name + ".pt")
            lite = _load_for_lite_interpreter({str(tmp_path)!r} + "/" + name + ".ptl")
            for x, expected in zip(data["inputs"], data["expected"]):
                assert_close(full(x), expected, name + " full")
                assert_close(lite(x), expected, name + " lite")
            print(name, "ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [w for n in names for w in (n, "ok")]


def test_bundled_inputs(tmp_path):
    import torch.utils.bundled_inputs as bundled
    from torch.jit.mobile import _load_for_lite_interpreter

    model, x = fm.randomize(fm.InTheMiddle()), image()
    module = convert_with_details(model, x, fallback=True).module
    bundled.augment_model_with_bundled_inputs(module, [(bundled.bundle_large_tensor(x),)])
    torch.jit.save(module, str(tmp_path / "bundled.pt"))
    module._save_for_lite_interpreter(str(tmp_path / "bundled.ptl"))
    loaded = torch.jit.load(str(tmp_path / "bundled.pt"))
    (inputs,) = loaded.get_all_bundled_inputs()
    lite = _load_for_lite_interpreter(str(tmp_path / "bundled.ptl"))
    (lite_inputs,) = lite.run_method("get_all_bundled_inputs")
    with torch.no_grad():
        assert_close(loaded(*inputs), model(x))
        assert_close(lite(*lite_inputs), model(x))


def test_inputs_of_other_dtypes_stay_on_the_cpu():
    """A float64 input PyTorch's NNAPI runtime cannot pass: what reads it runs on the CPU."""
    class Double(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = fm.conv(3, 4)

        def forward(self, x):
            return torch.relu(self.a(x.float()))

    x = image().double()
    with pytest.raises(ConversionError, match="dtype float64 cannot be an input"):
        convert_with_details(fm.randomize(Double()), x)
    conversion = partitioned(fm.randomize(Double()), x)
    assert "a float64 tensor" in conversion.report.cpu[0].reason
