"""A .pte whose NNAPI model needs a newer feature level than the device it is compiled for
fails to load with one line naming both levels (Error::DelegateInvalidCompatibility), while
the same model on a device of its level runs: ExecuTorch then reports the failure and an app
can load its CPU-only .pte instead."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from tests.conftest import package_env  # noqa: E402
from torch_nnapi.convert.executorch.pte import to_pte  # noqa: E402

RUNNER = Path(__file__).with_name("run_pte.py")


def _profile(directory: Path, name: str, feature_level: int) -> Path:
    """The shipped all-operations sample driver, renamed and set to `feature_level`."""
    shipped = resources.files("torch_nnapi.nnapi.devices") / "profiles/nnapi-sample_all.json"
    data = json.loads(shipped.read_text(encoding="utf-8"))
    data.update(name=name, featureLevel=feature_level)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_a_device_below_the_models_feature_level_refuses_it(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Hardswish()).eval()  # HARD_SWISH: level 4
    inputs = (torch.randn(2, 8),)
    profiles = [_profile(tmp_path, "older-npu", 29), _profile(tmp_path, "current-npu", 30)]
    for device in ("older-npu", "current-npu"):
        (tmp_path / f"{device}.pte").write_bytes(
            to_pte(model, inputs, target_level=4, devices=(device,)))
        torch.save(inputs, tmp_path / f"{device}.inputs.pt")
    run = subprocess.run(
        [sys.executable, str(RUNNER), str(tmp_path), "older-npu", "current-npu"],
        capture_output=True, text=True, timeout=600, check=False,
        env=package_env(TORCH_NNAPI_DEVICES=",".join(map(str, profiles))))
    assert run.returncode == 0 and "done" in run.stdout, run.stderr[-4000:]
    error = (tmp_path / "older-npu.error.txt").read_text()
    assert error.endswith("0x:30") or error.endswith("0x30"), error  # InvalidCompatibility
    assert ("NnapiBackend: NNAPI device older-npu has NNAPI feature level 29; the model needs"
            " 30") in run.stderr
    assert not (tmp_path / "current-npu.error.txt").exists()
    got = torch.load(tmp_path / "current-npu.outputs.pt")
    want = model(*inputs)
    assert (got[0] - want).abs().max().item() <= 1e-4 * max(1.0, want.abs().max().item())
