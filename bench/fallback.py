"""The CPU fallback: region counts and latency of partitioned models against eager PyTorch.

For each model: conversion with ``fallback=True`` (and the knobs given below), the NNAPI
regions and CPU nodes it gives, then the median latency of the converted module (regions
through PyTorch's NNAPI runtime on torch-nnapi's libneuralnetworks.so, CPU nodes in
TorchScript) against eager PyTorch in the same process (the two timed in turn), with the
regions and the CPU nodes also timed apart (``torch-nnapi bench`` does the same for one
saved module).
``--threads`` sets PyTorch's, the runtime's and BLAS's pools together (on a machine other
processes keep busy, 1 thread avoids OpenMP pools spinning against them).

- ``ssdlite``: torchvision's SSDLite320 (MobileNetV3 backbone, random weights with varied
  scores; tests/convert/fallback_detection.py), its post-processing on the CPU.
- ``faster_rcnn``: torchvision's fasterrcnn_mobilenet_v3_large_320_fpn the same way; the
  RPN's proposal filters and the whole second stage (on the proposals it kept) on the CPU.
- ``ssd300``, ``retinanet``, ``fcos``, ``faster_rcnn_r50``, ``mask_rcnn`` (and the heavier
  ``retinanet_v2``, ``faster_rcnn_r50_v2``, ``keypoint_rcnn``, ``mask_rcnn_v2``): the other
  torchvision detectors as the slow tests run them (tests/convert/fallback/test_detection.py:
  320x320 images, 100 proposals in the two-stage ones). Their eager roi_align is the test
  helper's Python operator (torchvision's C++ one cannot load with the CPU torch), on both
  sides of the ratio.
- ``mobilenet_v2_pool``: MobileNetV2 of the test zoo with ``fallback_ops`` keeping the global
  average pool on the CPU (two regions: the features, the classifier).
- ``resnet18_relu``: ResNet-18 with every ReLU kept on the CPU and ``max_regions=4``: many
  small regions, most of the network on the CPU.

    PYTHONPATH=src python3 bench/fallback.py [--runs 10] [--threads 2] [--models ssdlite,...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypedDict

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.convert import zoo  # noqa: E402
from torch_nnapi.convert.api import convert_with_details  # noqa: E402
from torch_nnapi.convert.fallback.convert import PartitionedConversion  # noqa: E402
from torch_nnapi.convert.tools.bench import bench_module  # noqa: E402
from torch_nnapi.convert.tools.threads import num_threads  # noqa: E402


class Options(TypedDict, total=False):
    """The convert_with_details options a model is benchmarked with (beside fallback=True)."""

    fallback_ops: list[str]
    max_regions: int
    nhwc: bool


Case = tuple[torch.nn.Module, torch.Tensor, Options]


def _detector(name: str, size: int | None = None, proposals: int | None = None) -> Case:
    from tests.convert.fallback_detection import detector, image

    return detector(name, size=size, proposals=proposals), image(0), {}


def _mask_detector(name: str) -> Case:
    from tests.convert.fallback_detection import image, mask_detector

    return mask_detector(name, size=320, proposals=100), image(0), {}


def _ssdlite() -> Case:
    return _detector("ssdlite320_mobilenet_v3_large")


def _faster_rcnn() -> Case:
    return _detector("fasterrcnn_mobilenet_v3_large_320_fpn")


def _mobilenet_v2_pool() -> Case:
    model = zoo.randomize_batchnorm(zoo.MobileNetV2(num_classes=1000))
    return model, torch.randn(1, 3, 224, 224), {
        "fallback_ops": ["aten::adaptive_avg_pool2d"], "nhwc": True}


def _resnet18_relu() -> Case:
    model = zoo.randomize_batchnorm(zoo.ResNet18(num_classes=1000))
    return model, torch.randn(1, 3, 224, 224), {
        "fallback_ops": ["aten::relu", "aten::relu_"], "max_regions": 4, "nhwc": True}


MODELS: dict[str, Callable[[], Case]] = {
    "ssdlite": _ssdlite, "faster_rcnn": _faster_rcnn,
    "ssd300": partial(_detector, "ssd300_vgg16"),
    "retinanet": partial(_detector, "retinanet_resnet50_fpn", 320),
    "fcos": partial(_detector, "fcos_resnet50_fpn", 320),
    "faster_rcnn_r50": partial(_detector, "fasterrcnn_resnet50_fpn", 320, 100),
    "mask_rcnn": partial(_mask_detector, "maskrcnn_resnet50_fpn"),
    "mobilenet_v2_pool": _mobilenet_v2_pool,
    "resnet18_relu": _resnet18_relu}
# Minutes each to convert and time: run by name (--models retinanet_v2,...).
HEAVY: dict[str, Callable[[], Case]] = {
    "retinanet_v2": partial(_detector, "retinanet_resnet50_fpn_v2", 320),
    "faster_rcnn_r50_v2": partial(_detector, "fasterrcnn_resnet50_fpn_v2", 320, 100),
    "keypoint_rcnn": partial(_detector, "keypointrcnn_resnet50_fpn", 320, 100),
    "mask_rcnn_v2": partial(_mask_detector, "maskrcnn_resnet50_fpn_v2")}


def _interleaved(first: Callable[[], object], second: Callable[[], object],
                 runs: int) -> tuple[float, float]:
    """Median times of two calls timed in turn, so that a busy machine slows both alike."""
    for _ in range(2):
        first()
        second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for call, found in zip((first, second), times, strict=True):
            start = time.perf_counter()
            call()
            found.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per latency")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    header = (f"{'model':18} {'regions':>7} {'ops':>5} {'cpu nodes':>9} {'convert s':>9}"
              f" {'eager ms':>9} {'nnapi ms':>9} {'ratio':>6} {'regions ms':>10}"
              f" {'cpu ms':>7}")
    print(f"{args.threads} threads; nnapi: the partitioned module (regions through PyTorch's NNAPI"
          " runtime on libneuralnetworks.so); regions and cpu: timed apart")
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        torch.manual_seed(0)
        model, x, options = {**MODELS, **HEAVY}[name]()
        model.eval()
        start = time.perf_counter()
        conversion = convert_with_details(model, x, fallback=True, **options)
        seconds = time.perf_counter() - start
        if not isinstance(conversion, PartitionedConversion):
            raise TypeError(f"{name}: fallback=True gave a {type(conversion).__name__}")
        report = conversion.report
        module = conversion.module
        with num_threads(args.threads), torch.no_grad():
            eager, nnapi = _interleaved(partial(model, x), partial(module, x), args.runs)
        bench = bench_module(module, (x,), runs=args.runs, threads=args.threads,
                             profile_runs=0)
        parts = bench.parts
        if parts.cpu is None:
            raise TypeError(f"{name}: the benchmark of a partitioned module times its CPU nodes")
        regions = sum(r.latency.median for r in parts.regions)
        print(f"{name:18} {len(report.regions):>7} {report.operation_count:>5}"
              f" {len(report.cpu):>9} {seconds:>9.1f} {eager * 1e3:>9.2f} {nnapi * 1e3:>9.2f}"
              f" {nnapi / eager:>6.2f} {regions * 1e3:>10.2f} {parts.cpu.median * 1e3:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
