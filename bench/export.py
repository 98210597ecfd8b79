"""torch.export and PT2E quantization: how long they take, and what the quantized model runs at.

For torchvision's MobileNetV2, MobileNetV3-large, ResNet-18 and ResNet-50 (random weights,
random calibration data): the time ``torch_nnapi.convert`` takes through TorchScript tracing
and through torch.export; the time ``torch_nnapi.quantize`` takes (export, PT2E preparation,
calibration, ``convert_pt2e``) and converting its result; then the latency of the quantized
NNAPI model on the host runtime (through PyTorch's NNAPI runtime and torch-nnapi's
libneuralnetworks.so when it is built) against the float model in eager PyTorch, both on 2
threads, as a ratio. ``--target-level 4`` quantizes to int8 signed (Android 11), lower levels
to uint8; at level 4 the same model is also quantized for level 3 (uint8, same calibration)
and both run in turn in this process: the last column is int8 time / uint8 time, which the
native int8 kernels keep within 1.1.

    PYTHONPATH=src:. python3 bench/export.py [--size 224] [--runs 5] [--calibration 8]
        [--target-level 3] [--threads 2]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TypeVar  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._timing import (  # noqa: E402
    alternating_medians,
    backend_name,
    median_time,
    torch_runtime_available,
)
from tests.realmodels.classification import build  # noqa: E402
from torch_nnapi.convert import set_num_threads  # noqa: E402
from torch_nnapi.convert.api import convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.host import run_on_host  # noqa: E402
from torch_nnapi.quantization import quantize_with_details  # noqa: E402

T = TypeVar("T")
MODELS = ("mobilenet_v2", "mobilenet_v3_large", "resnet18", "resnet50")
SIGNED_LEVEL = 4  # int8 activations from this level on; uint8 below
UNSIGNED_LEVEL = 3


def _timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _runner(module: torch.jit.ScriptModule, x: torch.Tensor,
            through_torch: bool) -> Callable[[], object]:
    return (lambda: module(x)) if through_torch else (lambda: run_on_host(module, x))


def _measure(name: str, args: argparse.Namespace, through_torch: bool) -> str:
    """One table row: conversion and quantization times, then latencies."""
    model, _ = build(name)
    x = torch.randn(1, 3, args.size, args.size)
    traced, _ = _timed(lambda: convert_with_details(model, (x,), capture="trace"))
    exported, _ = _timed(lambda: convert_with_details(model, (x,), capture="export"))
    calibration = [torch.randn(1, 3, args.size, args.size) for _ in range(args.calibration)]
    details = quantize_with_details(model, (x,), calibration, observer=args.observer,
                                    target_level=args.target_level)
    converting, conversion = _timed(lambda: convert_with_details(details.model, (x,)))
    with torch.no_grad():
        eager = median_time(lambda: model(x), args.runs)
    run = _runner(conversion.module, x, through_torch)
    row = (f"{name:20} {traced:8.1f} {exported:9.1f} {details.seconds:11.1f}"
           f" {converting:12.1f} {eager * 1e3:9.1f}")
    if args.target_level < SIGNED_LEVEL:
        latency = median_time(run, args.runs)
        return f"{row} {latency * 1e3:8.1f} {latency / eager:5.1f}x"
    unsigned = quantize_with_details(model, (x,), calibration, observer=args.observer,
                                     target_level=UNSIGNED_LEVEL)
    baseline = _runner(convert_with_details(unsigned.model, (x,)).module, x, through_torch)
    latency, unsigned_latency = alternating_medians((run, baseline), args.runs)
    return (f"{row} {latency * 1e3:8.1f} {latency / eager:5.1f}x"
            f" {unsigned_latency * 1e3:8.1f} {latency / unsigned_latency:9.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="input height and width")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per latency")
    parser.add_argument("--calibration", type=int, default=8, help="calibration batches")
    parser.add_argument("--observer", default="histogram", choices=["histogram", "minmax"])
    parser.add_argument("--target-level", type=int, default=3, choices=[1, 2, 3, 4],
                        help="the quantizer's feature level (4: int8 signed, else uint8)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of PyTorch, the runtime's kernels and NumPy's BLAS")
    args = parser.parse_args()
    set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    through_torch = torch_runtime_available()
    print(f"images 1x3x{args.size}x{args.size}, {args.calibration} calibration batches"
          f" ({args.observer} observers), quantized for feature level {args.target_level},"
          f" {args.threads} thread(s), converted models on the"
          f" {backend_name(through_torch)}")
    header = (f"{'model':20} {'trace s':>8} {'export s':>9} {'quantize s':>11} {'q-convert s':>12}"
              f" {'eager ms':>9} {'8-bit ms':>8} {'ratio':>6}")
    if args.target_level >= SIGNED_LEVEL:
        header += f" {'uint8 ms':>8} {'int8/uint8':>9}"
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        print(_measure(name, args, through_torch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
