"""torchvision through the ExecuTorch back-end: the smallest member of every classification
family and LR-ASPP segmentation lowered by ``to_pte`` at classification.py's small sizes,
saved, then all run in one fresh process through ExecuTorch's runtime with NnapiBackend on
torch-nnapi's libneuralnetworks.so, each within 1e-4 of eager's magnitude, each one NNAPI
delegate with no operator left to ExecuTorch's kernels. Slow (``-m slow``, run by .ci/run;
about 6 minutes on two cores): the default suite's ExecuTorch cases are the small models of
tests/convert/executorch."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("executorch", reason="ExecuTorch is not installed (pip install"
                    " '.[executorch]' -c constraints.txt, README: \"ExecuTorch\")")

import torch  # noqa: E402

from .checks import nontrivial_weights  # noqa: E402
from .classification import build  # noqa: E402
from .executorch_matrix import (  # noqa: E402
    RELATIVE_TOLERANCE,
    Lowered,
    lower,
    nested_outputs,
    relative_error,
    run_all,
)
from .test_segmentation import build as build_segmentation  # noqa: E402

# family -> its smallest member
FAMILIES = {
    "alexnet": "alexnet", "convnext": "convnext_tiny", "densenet": "densenet121",
    "efficientnet": "efficientnet_b0", "efficientnet_v2": "efficientnet_v2_s",
    "googlenet": "googlenet", "inception": "inception_v3", "maxvit": "maxvit_t",
    "mnasnet": "mnasnet0_5", "mobilenet_v2": "mobilenet_v2",
    "mobilenet_v3": "mobilenet_v3_small", "regnet": "regnet_y_400mf", "resnet": "resnet18",
    "resnext": "resnext50_32x4d", "shufflenet_v2": "shufflenet_v2_x0_5",
    "squeezenet": "squeezenet1_1", "swin": "swin_t", "swin_v2": "swin_v2_t",
    "vgg": "vgg11", "vit": "vit_b_32", "wide_resnet": "wide_resnet50_2",
}
SEGMENTATION = "lraspp_mobilenet_v3_large"
SEGMENTATION_SIZE = 64

Matrix = tuple[Path, dict[str, Lowered]]


def _lower_one(directory: Path, name: str, threads: int | None = None) -> Lowered:
    """``name`` built and lowered to DIR/NAME.pte (in a worker process when ``threads`` is
    given: torch then uses that many)."""
    if threads is not None:
        torch.set_num_threads(threads)
    if name == SEGMENTATION:
        x = torch.randn(1, 3, SEGMENTATION_SIZE, SEGMENTATION_SIZE,
                        generator=torch.Generator().manual_seed(0))
        # the dict itself, not Segmenter's ["out"]: it must come back as a dict
        model = build_segmentation(name).model
        assert isinstance(model, torch.nn.Module)
    else:
        model, x = build(name)
        model = nontrivial_weights(model)  # ViT's zero head would hide any error
    made = lower(directory, name, model, (x,))
    print(f"{name}: lowered in {made.seconds:.1f} s")
    return made


def _lower_and_run(directory: Path, names: list[str]) -> Matrix:
    """Lowered one per core (lowering is mostly single-threaded Python: the matrix takes
    half the time on two cores), then all run in one fresh process."""
    workers = min(len(names), os.cpu_count() or 1)
    if workers <= 1:
        lowered = {name: _lower_one(directory, name) for name in names}
    else:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=spawn) as pool:
            futures = {name: pool.submit(_lower_one, directory, name, 1) for name in names}
            lowered = {name: future.result() for name, future in futures.items()}
    run_all(directory, names)
    return directory, lowered


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    return _lower_and_run(tmp_path_factory.mktemp("torchvision_pte"),
                          [*FAMILIES.values(), SEGMENTATION])


def _check(results: Matrix, name: str) -> None:
    directory, lowered = results
    error = relative_error(directory, name, lowered[name])
    made = lowered[name]
    print(f"{name}: max error {error:.3g} of the magnitude, {made.delegates} delegate(s),"
          f" kernels {made.kernels}, lowered in {made.seconds:.1f} s")
    assert error <= RELATIVE_TOLERANCE, f"{name}: {error:.3g} of the output's magnitude"
    assert made.delegates == 1 and made.kernels == [], (made.delegates, made.kernels)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_classification_family_runs_through_executorch(matrix: Matrix, family: str) -> None:
    _check(matrix, FAMILIES[family])


@pytest.mark.slow
def test_segmentation_dict_comes_back_as_a_dict(matrix: Matrix) -> None:
    directory, lowered = matrix
    _check(matrix, SEGMENTATION)
    got = nested_outputs(directory, SEGMENTATION)
    assert isinstance(got, dict) and list(got) == ["out"]
    assert got["out"].shape == (1, 5, SEGMENTATION_SIZE, SEGMENTATION_SIZE)
