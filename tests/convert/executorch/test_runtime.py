"""End to end: models lowered to .pte files with NnapiBackend, saved, and run in a fresh
process through ExecuTorch's runtime on torch-nnapi's libneuralnetworks.so, against eager
PyTorch (within 1e-4 of the outputs' magnitude), the PT2E model (within one quantum) or the
host runtime (the NNAPI models built directly: per-channel quantization, IF, WHILE). The
transformers run small here, and at full size in the slow suite.
Mismatched inputs and a corrupted blob give ExecuTorch errors, never a crash."""

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
from torch_nnapi.convert.executorch.blob import (  # noqa: E402
    Conversion,
    Flag,
    ScalarType,
    ValueKind,
    read_blob,
)
from torch_nnapi.convert.executorch.pte import to_pte  # noqa: E402
from torch_nnapi.nnapi import OperandType  # noqa: E402

from .cases import Case, SmallCnn, cases, transformer_cases  # noqa: E402

RUNNER = Path(__file__).with_name("run_pte.py")
CORRUPTED = "cnn_corrupted"
NO_DEVICE = "cnn_on_a_missing_device"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Case], str]:
    """Every case lowered and saved, then run by one fresh process; its stderr."""
    directory = tmp_path_factory.mktemp("pte")
    made = {name: make() for name, make in cases().items()}
    save(directory, made)
    corrupted = bytearray(made["cnn"].pte)
    at = corrupted.find(b"TNNAPIET")  # the blob, inside the .pte
    assert at > 0
    corrupted[at + 200] ^= 0x10
    (directory / f"{CORRUPTED}.pte").write_bytes(bytes(corrupted))
    torch.save(made["cnn"].inputs, directory / f"{CORRUPTED}.inputs.pt")
    for name, bad in ((NO_DEVICE, to_pte(SmallCnn(), made["cnn"].inputs,
                                         devices=("npu-that-is-not-there",))),):
        (directory / f"{name}.pte").write_bytes(bad)
        torch.save(made["cnn"].inputs, directory / f"{name}.inputs.pt")
    return directory, made, run_fresh(directory, [*made, CORRUPTED, NO_DEVICE])


def save(directory: Path, made: dict[str, Case]) -> None:
    for name, case in made.items():
        (directory / f"{name}.pte").write_bytes(case.pte)
        torch.save(case.inputs, directory / f"{name}.inputs.pt")


def run_fresh(directory: Path, names: list[str]) -> str:
    """Runs the saved .pte files ``names`` in a fresh process (run_pte.py); its stderr."""
    cache = directory / "nnapi-cache"  # compilations ask NNAPI to cache there
    cache.mkdir()
    run = subprocess.run([sys.executable, str(RUNNER), str(directory), *names],
                         capture_output=True, text=True,
                         env=package_env(TORCH_NNAPI_CACHE_DIR=str(cache)), timeout=900,
                         check=False)
    assert run.returncode == 0 and "done" in run.stdout, run.stderr[-4000:]
    return run.stderr


@pytest.fixture(scope="module")
def full_size(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Case], str]:
    """The transformers at full size, run alike."""
    directory = tmp_path_factory.mktemp("pte_full")
    made = {name: make() for name, make in transformer_cases(full=True).items()}
    save(directory, made)
    return directory, made, run_fresh(directory, list(made))


def _matches(results: tuple[Path, dict[str, Case], str], name: str) -> None:
    directory, made, _ = results
    error = directory / f"{name}.error.txt"
    assert not error.exists(), error.read_text()
    outputs = torch.load(directory / f"{name}.outputs.pt")
    case = made[name]
    assert len(outputs) == len(case.expected)
    for got, want in zip(outputs, case.expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        difference = (got.double() - want.double()).abs().max().item() if got.numel() else 0
        assert difference <= case.tolerance, f"{name}: max error {difference:g}"
        print(f"{name}: max error {difference:.3g} (tolerance {case.tolerance:.3g})")


@pytest.mark.parametrize("name", list(cases()))
def test_executorch_matches_the_reference(results: tuple[Path, dict[str, Case], str],
                                          name: str) -> None:
    _matches(results, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(transformer_cases(full=True)))
def test_full_size_transformers_match_eager(full_size: tuple[Path, dict[str, Case], str],
                                            name: str) -> None:
    _matches(full_size, name)
    program = deserialize_pte_binary(full_size[1][name].pte).program
    assert len(program.backend_delegate_data) == 1


@pytest.mark.parametrize("name", ["cnn", "mixed_dtypes", "float16"])
def test_mismatched_inputs_are_errors(results: tuple[Path, dict[str, Case], str],
                                      name: str) -> None:
    directory, _, _ = results
    attempts = (directory / f"{name}.mismatch.txt").read_text().splitlines()
    assert len(attempts) == 3 and not any(a == "accepted" for a in attempts), attempts


def test_a_corrupted_blob_is_refused_at_load(results: tuple[Path, dict[str, Case], str]
                                            ) -> None:
    directory, _, stderr = results
    error = (directory / f"{CORRUPTED}.error.txt").read_text()
    assert error.endswith("0x:23") or error.endswith("0x23"), error  # Error::InvalidProgram
    assert "NnapiBackend: invalid blob: header: CRC-32 mismatch" in stderr


def test_a_missing_device_fails_the_load_naming_those_there_are(
        results: tuple[Path, dict[str, Case], str]) -> None:
    directory, _, stderr = results
    error = (directory / f"{NO_DEVICE}.error.txt").read_text()
    assert error.endswith("0x:30") or error.endswith("0x30"), error  # InvalidCompatibility
    assert ("NnapiBackend: no NNAPI device is named npu-that-is-not-there (there are:"
            " nnapi-reference)") in stderr


# What each case is about, as its blob says: (operand types present, input conversions).
ABOUT = {
    "cnn_nhwc": ({OperandType.TENSOR_FLOAT32}, [(ScalarType.FLOAT, (0, 2, 3, 1))]),
    "cnn_nchw": ({OperandType.TENSOR_FLOAT32}, [(ScalarType.FLOAT, (0, 1, 2, 3))]),
    "quant_uint8": ({OperandType.TENSOR_QUANT8_ASYMM}, None),
    "quant_int8": ({OperandType.TENSOR_QUANT8_ASYMM_SIGNED}, None),
    "float16": ({OperandType.TENSOR_FLOAT16}, [(ScalarType.HALF, (0, 1))]),
    "mixed_dtypes": ({OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8},
                     [(ScalarType.FLOAT, (0, 1)), (ScalarType.BOOL, (0, 1))]),
    "per_channel": ({OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL}, None),
    "quant_per_channel_uint8": ({OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                                 OperandType.TENSOR_QUANT8_ASYMM}, None),
    "quant_per_channel_int8": ({OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL,
                                OperandType.TENSOR_QUANT8_ASYMM_SIGNED}, None),
    "while": ({OperandType.MODEL}, None),
    "mlp": ({OperandType.TENSOR_FLOAT32}, None),
    "relaxed": ({OperandType.TENSOR_FLOAT32}, None),
}


@pytest.mark.parametrize("name", list(ABOUT))
def test_the_blob_carries_what_the_case_is_about(results: tuple[Path, dict[str, Case], str],
                                                 name: str) -> None:
    _, made, _ = results
    (delegate,) = deserialize_pte_binary(made[name].pte).program.backend_delegate_data
    blob = read_blob(delegate.data)
    types, inputs = ABOUT[name]
    present = {o.type for m in blob.models for o in m.operands}
    assert types <= present, present
    if inputs is not None:
        assert [(t.dtype, t.layout) for t in blob.inputs] == inputs
    if name == "mlp":  # its weights are over the threshold: in the named data map
        kinds = [o.value.kind for o in blob.models[0].operands]
        assert kinds.count(ValueKind.NAMED) == 1 and ValueKind.INLINE in kinds  # 8 KiB, 2.5
    if name == "relaxed":
        assert blob.models[0].relax_float32_to_float16
        assert blob.settings.flags & Flag.RELAX_FP32_TO_FP16
    if name == "mlp":
        assert not blob.settings.flags & (Flag.BURST | Flag.CACHING)
    if name == "mixed_dtypes":
        assert [t.conversion for t in blob.inputs] == [Conversion.COPY, Conversion.BOOL_INT32]
        assert [t.conversion for t in blob.outputs] == [Conversion.COPY,
                                                        Conversion.INT64_INT32]


@pytest.mark.parametrize("name", [*transformer_cases(), "lstm"])
def test_a_transformer_or_lstm_is_one_delegate(results: tuple[Path, dict[str, Case], str],
                                               name: str) -> None:
    """Attention as ExecuTorch decomposes it, LSTM cells as matrix products: all on NNAPI,
    nothing left to ExecuTorch's kernels between the layers."""
    _, made, _ = results
    program = deserialize_pte_binary(made[name].pte).program
    assert len(program.backend_delegate_data) == 1
    (plan,) = (p for p in program.execution_plan if p.name == "forward")
    assert [op.name for op in plan.operators] == []  # no ExecuTorch kernel runs
