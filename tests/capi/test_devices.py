"""The devices of libneuralnetworks.so under TORCH_NNAPI_DEVICES, through the C API: every
device's getSupportedOperationsForDevices and every compilation's plan, for each preference,
as AOSP's sample drivers and Android 11's partitioner give them (the oracle), and the
outputs of partitioned compilations byte for byte those of nnapi-reference alone."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from torch_nnapi.conformance.spec import build_model
from torch_nnapi.nnapi import NnapiError, OperationType, PreferenceCode
from torch_nnapi.runtime import Compilation

from ..conformance.cts_cases import cts_tests
from ..conftest import package_env
from ..realmodels.test_device_partitioning import nnapi_model
from ..runtime import android_oracle as oracle
from ..runtime.partition_support import chain, if_model

SAMPLES = ("nnapi-sample_float_fast", "nnapi-sample_float_slow", "nnapi-sample_quant",
           "nnapi-sample_minimal", "nnapi-sample_all")
ADD, MUL, SUB = OperationType.ADD, OperationType.MUL, OperationType.SUB
ROOT = Path(__file__).resolve().parents[2]
# The conformance specs with IF, WHILE or SELECT, or relaxed to float16: what the drivers
# and the partitioner treat specially (the others are single operations the oracle test of
# tests/runtime covers, every one).
SPECIAL = ("if_", "while_", "select", "relaxed")


@cache
def _cts_specs() -> dict[str, Any]:
    specs, seen = {}, set()
    for test_id, test in cts_tests():
        if test.path in seen or not any(word in test_id for word in SPECIAL):
            continue
        seen.add(test.path)
        spec = test.load()[0]
        try:
            Compilation(build_model(spec))
        except NnapiError:  # a model the CTS expects to be refused
            continue
        specs[test_id] = spec
    return specs


@cache
def library_report(tmp: Path) -> dict[str, Any]:
    """The devices client's report for the models below, with every sample driver listed."""
    specs = {"add-mul-add": oracle.as_spec(chain([ADD, MUL, ADD])),
             "mul-add-mul-sub": oracle.as_spec(chain([MUL, ADD, MUL, SUB])),
             "if": oracle.as_spec(if_model([ADD, MUL], [MUL])),
             "unknown-temporaries": oracle.as_spec(chain([ADD, MUL, ADD], unknown_middle=True)),
             **{name: oracle.as_spec(nnapi_model(name))
                for name in ("squeezenet1_1", "quantized mobilenet_v3_small")},
             **_cts_specs()}
    run = [name for name in specs if name not in _cts_specs()]  # the CTS runs those
    path = tmp / "specs.json"
    path.write_text(json.dumps({"specs": specs, "run": run}))
    env = package_env(TORCH_NNAPI_DEVICES=",".join(SAMPLES))
    result = subprocess.run([sys.executable, "-m", "tests.capi.devices_client", str(path)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr
    return {"specs": specs, **json.loads(result.stdout)}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, Any]:
    return library_report(tmp_path_factory.mktemp("devices"))


def _normalized(plan: list[Any] | str) -> list[Any] | str:
    if isinstance(plan, str):
        return {"BadDataError": "BAD_DATA", "OpFailedError": "OP_FAILED"}[plan]
    return [[device, sorted(ops), [[role, _normalized(steps)] for role, steps in called]]
            for device, ops, called in plan]


def test_the_library_lists_the_drivers_then_the_cpu(report):
    assert report["devices"] == [*SAMPLES, oracle.CPU]


def test_supported_operations_are_the_drivers(report):
    for name, answers in report["models"].items():
        spec = report["specs"][name]
        for device, supported in answers["supported"].items():
            assert supported == oracle.supported(device, spec), f"{name} on {device}"


def test_plans_are_androids(report):
    devices = [*SAMPLES, oracle.CPU]
    compared = 0
    for name, answers in report["models"].items():
        spec = report["specs"][name]
        for key, got in answers["plans"].items():
            label, preference = key.split("/")
            listed = devices if label == "all" else [label]
            expected = oracle.plan(spec, listed, int(PreferenceCode[preference]),
                                   fallback=label == "all")
            assert got == _normalized(expected), f"{name}: {key}"
            compared += 1
    assert compared >= 100


def test_partitioned_outputs_equal_the_cpus(report):
    several = [name for name, answers in report["models"].items()
               if any(isinstance(p, list) and len(p) > 1 for p in answers["plans"].values())]
    assert {"add-mul-add", "squeezenet1_1", "quantized mobilenet_v3_small"} <= set(several)
    for name, answers in report["models"].items():
        assert answers["equal"], name


@pytest.mark.slow
def test_the_conformance_suite_passes_on_the_sample_drivers(cts_dir):
    """`torch-nnapi cts --backend capi` with every sample driver listed: models the drivers
    support run there, partitioned where they must be, and every result is still right."""
    env = package_env(TORCH_NNAPI_DEVICES=",".join(SAMPLES))
    result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "cts", str(cts_dir),
                             "--backend", "capi"], env=env, capture_output=True, text=True,
                            timeout=3600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.rstrip().endswith(" passed, 0 failed")
