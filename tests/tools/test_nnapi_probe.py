"""tools/nnapi_probe.c, built with the system compiler, probes our libneuralnetworks.so: the
profiles it writes give back the emulated profiles' answers for the operations probed."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import torch

from torch_nnapi.capi import library_path
from torch_nnapi.cli import main
from torch_nnapi.nnapi.codes import PreferenceCode
from torch_nnapi.nnapi.devices import (
    DeviceProfile,
    load_profile_file,
    reference_profile,
    shipped_profile,
    shipped_profile_names,
)
from torch_nnapi.nnapi.probe_model import read_probe_model, write_probe_model
from torch_nnapi.runtime.partitioning import plan

from ..cli._models import save
from ..conftest import build_c_program
from ..nnapi._probe_models import mixed_model

SOURCE = Path(__file__).parents[2] / "tools" / "nnapi_probe.c"
SAMPLES = shipped_profile_names()


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    companions = [str(SOURCE.with_name(f"nnapi_probe_{part}.c")) for part in ("model", "profile")]
    return build_c_program(tmp_path_factory.mktemp("probe"), SOURCE, *companions, "-O1",
                           "-pedantic", "-ldl", "-lm")


def _run(probe: Path, *args: str, devices: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["TORCH_NNAPI_DEVICES"] = devices
    return subprocess.run([str(probe), "--library", library_path(), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_probing_the_emulated_sample_drivers_gives_their_answers_back(probe, tmp_path):
    model_file = tmp_path / "mixed.txt"
    write_probe_model(mixed_model(), model_file)
    result = _run(probe, "--out", str(tmp_path), str(model_file), devices=",".join(SAMPLES))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[len(SAMPLES)].startswith(f"device {len(SAMPLES)}: nnapi-reference type CPU")
    model = read_probe_model(model_file)  # what the probe built through the C API
    answers = {}
    for name in SAMPLES:
        probed, shipped = load_profile_file(tmp_path / f"{name}.json"), shipped_profile(name)
        assert (probed.name, probed.type, probed.feature_level, probed.version) == \
            (shipped.name, shipped.type, shipped.feature_level, shipped.version)
        answers[name] = probed.supported_operations(model)
        assert answers[name] == shipped.supported_operations(model), name
        assert f"{name} supports {sum(answers[name])} of the 9 operations probed" in \
            result.stdout
    assert not (tmp_path / "nnapi-reference.json").exists()  # Android's CPU is no profile
    # the probe tells the drivers apart: minimal lacks LOGISTIC and QUANTIZE, quant is 8-bit
    assert answers["nnapi-sample_minimal"] != answers["nnapi-sample_float_fast"]
    assert answers["nnapi-sample_quant"] == [False] * 5 + [True] * 3 + [False]
    assert "the NDK API does not tell a device's Capabilities" in result.stderr


def _performance_options(profile: DeviceProfile) -> list[str]:
    """The --performance options that give a profile's Capabilities back: the most common
    figure as the default, the others by operand type."""
    caps = profile.capabilities
    figures = Counter(caps.operand_performance.values())
    default = figures.most_common(1)[0][0]
    options = [f"{default.exec_time:.9g},{default.power_usage:.9g}"]
    options += [f"{t.name}={p.exec_time:.9g},{p.power_usage:.9g}"
                for t, p in caps.operand_performance.items() if p != default]
    assert caps.relaxed_scalar == caps.relaxed_tensor  # one option sets both
    options += [f"{what}={p.exec_time:.9g},{p.power_usage:.9g}"
                for what, p in (("relaxed", caps.relaxed_scalar), ("if", caps.if_performance),
                                ("while", caps.while_performance))]
    return [arg for option in options for arg in ("--performance", option)]


@pytest.mark.parametrize("name", SAMPLES)
def test_a_probed_profile_with_its_capabilities_plans_as_the_emulated_one(probe, tmp_path,
                                                                            name):
    model_file = tmp_path / "mixed.txt"
    write_probe_model(mixed_model(), model_file)
    shipped = shipped_profile(name)
    result = _run(probe, "--out", str(tmp_path), *_performance_options(shipped),
                  str(model_file), devices=name)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    model = read_probe_model(model_file)
    probed = load_profile_file(tmp_path / f"{name}.json")
    assert probed.capabilities == shipped.capabilities
    for relaxed in (False, True):
        model.relax_float32_to_float16 = relaxed
        for preference in PreferenceCode:
            ours = plan(model, [probed, reference_profile()], preference)
            theirs = plan(model, [shipped, reference_profile()], preference)
            assert [(s.device, s.operations) for s in ours.steps] == \
                [(s.device, s.operations) for s in theirs.steps], (name, relaxed, preference)


def test_bad_performance_options_are_named(probe):
    result = _run(probe, "--performance", "TENSOR_QUANT8=0.5,0.5")
    assert result.returncode == 4
    assert result.stderr.startswith("nnapi_probe: --performance: WHAT is an operand type name")


def test_a_converted_module_probed_through_inspect_feeds_device(probe, tmp_path, capsys):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sigmoid(),
                                torch.nn.Conv2d(4, 4, 3)).eval()
    source = save(model, torch.randn(1, 3, 10, 10), tmp_path / "model.pt")
    converted = str(tmp_path / "nnapi.pt")
    assert main(["convert", source, "-o", converted, "--input", "1x3x10x10"]) == 0
    probe_model = tmp_path / "model.probe"
    assert main(["inspect", converted, "--summary", "--probe-model", str(probe_model)]) == 0
    assert f"probe model: {probe_model}" in capsys.readouterr().out
    result = _run(probe, "--out", str(tmp_path), "--performance", "0.4,0.5", str(probe_model),
                  devices="nnapi-sample_minimal")
    assert result.returncode == 0, result.stderr
    profile = str(tmp_path / "nnapi-sample_minimal.json")
    assert main(["inspect", converted, "--summary", "--device", profile]) == 0
    probed_plan = capsys.readouterr().out.splitlines()
    assert main(["inspect", converted, "--summary", "--device", "nnapi-sample_minimal"]) == 0
    emulated_plan = capsys.readouterr().out.splitlines()
    steps = [line for line in probed_plan if "step " in line]
    assert steps == [line for line in emulated_plan if "step " in line]
    assert "step 1: nnapi-reference, 1 operation(s) [1]" in steps[1]  # LOGISTIC
    # the probed profile's rule for LOGISTIC says the driver turned it down
    assert any("says it is not supported" in line for line in probed_plan)


def test_without_models_the_probe_lists_the_devices(probe):
    result = _run(probe, devices="nnapi-sample_quant")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == \
        "device 0: nnapi-sample_quant type CPU version JUST_AN_EXAMPLE feature level 30"


@pytest.mark.parametrize(("content", "args", "code", "message"), [
    (None, [], 5, "missing.txt: cannot be read (No such file or directory)"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\n", [], 5,
     "model.txt:2: the file ends before its 'end' line (truncated?)"),
    ('{"operands": []}\n', [], 5, "model.txt:1: not a probe model file"),
    ("torch-nnapi-probe-model 1\noperation 0 ADD 3 0 1 2 1 3\nend\n", [], 5,
     "model.txt:2: operation input: '0' is not an integer in [0, -1]"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\nvalue 0 16 zz\nend\n", [],
     5, "model.txt:3: value: 16 bytes announced, 2 hex digits given"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\noperand 3 TENSOR_FLOAT32"
     " 0 0 1 4\noperation 14 LOGISTIC 1 0 1 1\ninputs 1 0\noutputs 1 1\nend\n",
     ["--out", "/nonexistent/dir"], 6, "/nonexistent/dir/nnapi-sample_quant.json: cannot be"
     " written"),
    ("torch-nnapi-probe-model 1\noperand 3 TENSOR_FLOAT32 0 0 1 4\noperand 5"
     " TENSOR_QUANT8_ASYMM 0 0 1 4\noperation 14 LOGISTIC 1 0 1 1\ninputs 1 0\noutputs 1 1"
     "\nend\n", [], 7, "the library rejects operand 1 (ANeuralNetworksModel_addOperand"
     " returned 4)"),
    ("torch-nnapi-probe-model 1\nend\n", ["--performance", "fast"], 4,
     "--performance: expected two positive numbers"),
])
def test_bad_input_is_one_line_and_a_documented_exit_code(probe, tmp_path, content, args,
                                                          code, message):
    path = tmp_path / ("missing.txt" if content is None else "model.txt")
    if content is not None:
        path.write_text(content)
    result = _run(probe, *args, str(path), devices="nnapi-sample_quant")
    assert result.returncode == code, result.stderr
    # the probe's one line (a usage error adds the usage); before it, what the library logs
    last = result.stderr.splitlines()[-2 if code == 4 else -1]
    assert last.startswith("nnapi_probe: ") and message in last


def test_a_library_that_cannot_be_loaded_is_named(probe, tmp_path):
    result = subprocess.run([str(probe), "--library", str(tmp_path / "libnone.so")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 5
    assert result.stderr.startswith(f"nnapi_probe: {tmp_path / 'libnone.so'}: cannot be loaded")
    assert len(result.stderr.splitlines()) == 1


def test_a_profile_is_valid_json_with_escaped_strings(probe, tmp_path):
    model_file = tmp_path / "mixed.txt"
    write_probe_model(mixed_model(), model_file)
    result = _run(probe, "--out", str(tmp_path), str(model_file), devices="nnapi-sample_all")
    assert result.returncode == 0, result.stderr
    data = json.loads((tmp_path / "nnapi-sample_all.json").read_text())
    assert data["format"] == "torch-nnapi-device-profile/1"
    assert len(data["supportedOperations"]) == 9  # one rule per distinct operation
