"""NnapiPartitioner(device=...) end to end: a model with an operation the device's profile
does not support (LOGISTIC on AOSP's nnapi-sample_minimal) is exported and lowered through
``to_edge_transform_and_lower``; the sigmoid is left to ExecuTorch's kernels, and the .pte,
compiled for that device alone (createForDevices, no CPU fallback), runs in a fresh process
through ExecuTorch's runtime on our libneuralnetworks.so, matching eager PyTorch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402
from executorch.exir._serialize._program import deserialize_pte_binary  # noqa: E402

from tests.conftest import package_env  # noqa: E402
from torch_nnapi.convert.executorch.pte import to_pte_with_details  # noqa: E402

from .cases import magnitude_tolerance  # noqa: E402

RUNNER = Path(__file__).with_name("run_pte.py")
MINIMAL = "nnapi-sample_minimal"  # ADD, CONCATENATION, float32 CONV_2D


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Sigmoid(),
                               torch.nn.Conv2d(8, 4, 3)).eval()


def _operators(pte: bytes) -> list[str]:
    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    return [op.name for op in plan.operators]


@pytest.mark.slow
def test_what_the_device_cannot_run_stays_on_executorch_and_the_rest_runs_on_it(tmp_path):
    model, image = _model(), torch.randn(1, 3, 12, 12)
    with torch.no_grad():
        expected = model(image)
    # compiled for nnapi-sample_minimal alone: a region with the sigmoid could not compile
    for_device = to_pte_with_details(model, (image,), device=MINIMAL, devices=(MINIMAL,))
    regions, kept = for_device.partition.regions, for_device.partition.kept
    assert len(regions) == 2
    assert [node.kind for node in kept] == ["aten::sigmoid"]
    assert MINIMAL in kept[0].reason and "LOGISTIC" in kept[0].reason
    assert any("sigmoid" in name for name in _operators(for_device.pte))
    assert len(deserialize_pte_binary(for_device.pte).program.execution_plan[0].delegates) == 2
    # without device=, the sigmoid is in the one region, which the driver cannot compile
    whole = to_pte_with_details(model, (image,), devices=(MINIMAL,))
    assert len(whole.partition.regions) == 1 and not whole.partition.kept
    for name, made in (("for_device", for_device), ("whole", whole)):
        (tmp_path / f"{name}.pte").write_bytes(made.pte)
        torch.save((image,), tmp_path / f"{name}.inputs.pt")
    run = subprocess.run([sys.executable, str(RUNNER), str(tmp_path), "for_device", "whole"],
                         capture_output=True, text=True, timeout=900, check=False,
                         env=package_env(TORCH_NNAPI_DEVICES=MINIMAL))
    assert run.returncode == 0 and "done" in run.stdout, run.stderr[-4000:]
    error = tmp_path / "for_device.error.txt"
    assert not error.exists(), error.read_text()
    (got,) = torch.load(tmp_path / "for_device.outputs.pt")
    tolerance = magnitude_tolerance([expected])
    assert (got - expected).abs().max().item() <= tolerance
    # the control: the driver cannot compile LOGISTIC, and createForDevices has no fallback
    refused = (tmp_path / "whole.error.txt").read_text()
    assert refused.endswith(("0x:30", "0x30")), refused  # the method does not load
