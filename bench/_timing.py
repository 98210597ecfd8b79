"""What the benchmark scripts share: median wall-clock time of a call, and whether converted
modules can run through PyTorch's NNAPI runtime on torch-nnapi's library."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence

import torch

from torch_nnapi.convert.tools.host import run_on_host


def median_time(fn: Callable[[], object], runs: int, warmup: int = 1) -> float:
    """Median seconds of ``runs`` calls after ``warmup`` untimed ones (a converted module
    compiles on its first call; oneDNN's first recurrent calls take seconds each)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_runtime_available() -> bool:
    """True when libneuralnetworks.so is built, so PyTorch's NNAPI runtime can load it."""
    try:
        import torch_nnapi

        return os.path.exists(torch_nnapi.library_path())
    except Exception:  # noqa: BLE001 - an unbuilt or broken install means the host runtime
        return False


def backend_name(through_torch: bool) -> str:
    """Where converted modules run, for the scripts' headers."""
    return ("torch NNAPI runtime + libneuralnetworks.so" if through_torch
            else "host runtime")


def eager_and_converted(model: Callable[..., object], module: torch.jit.ScriptModule,
                        inputs: Sequence[torch.Tensor], runs: int, through_torch: bool,
                        warmup: int = 1) -> tuple[float, float]:
    """Median seconds of eager PyTorch and of the converted module on the same inputs: through
    PyTorch's NNAPI runtime when it loads, else on the host runtime."""
    with torch.no_grad():
        eager = median_time(lambda: model(*inputs), runs, warmup)
    if through_torch:
        return eager, median_time(lambda: module(*inputs), runs, warmup)
    return eager, median_time(lambda: run_on_host(module, *inputs), runs, warmup)


def alternating_medians(fns: Sequence[Callable[[], object]], runs: int,
                        warmup: int = 1) -> list[float]:
    """Median seconds of each of ``fns``, called in turn (one call of each per round), so
    that a change of the machine's load during the measurement reaches all of them alike."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, spent in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]
