"""Timed runs a ratio can be built on (``bench`` and ``demo``).

Two sides timed in one process share the cores with each other's thread pools: PyTorch's
OpenMP workers spin for a while after eager work, the native kernels' pool after NNAPI work.
:func:`quiet_pools` gives each side the same thread count with the other side's pool idle;
:func:`contention` reads a side's timings for the signs that something else had the cores
(runs far slower than the fastest, or the process given the cores only part of the wall time),
so that a ratio is refused rather than printed from such a measurement.

``TORCH_NNAPI_BENCH_CONTEND=SIDE`` (``nnapi``, ``eager`` or both, comma-separated) is for
testing: it records every timed run of that side but the fastest as four times slower, as a
competing process would make it, so that the refusal can be seen end to end.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from .threads import num_threads

# A side whose median run is this many times its fastest run was slowed by something else
# (a quiet machine keeps the median within some 20% of the fastest run).
SPREAD_LIMIT = 1.5
# A side whose process ran on a core less than this share of the wall time waited for cores
# another process held.
STARVED_SHARE = 0.6
# Busy cores beyond the side's threads by more than this: another pool spun beside it.
SPIN_SLACK = 0.5
# Pause before a side is timed, so that the other side's spinning workers go to sleep.
SETTLE_SECONDS = 0.05
# Untimed calls before timing: TorchScript's profiling executor optimizes a function only
# after its first couple of calls, which are several times slower.
WARMUP = 2

CONTEND_VARIABLE = "TORCH_NNAPI_BENCH_CONTEND"
_INJECTED_SLOWDOWN = 4.0


@dataclass
class Latency:
    seconds: list[float]
    # process CPU time of each run (every thread), beside its wall time in ``seconds``
    cpu_seconds: list[float] = field(default_factory=list)
    threads: int = 0  # the thread count the side ran with (0: not recorded)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def p90(self) -> float:
        """The 90th percentile (nearest rank)."""
        ordered = sorted(self.seconds)
        return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]

    @property
    def minimum(self) -> float:
        return min(self.seconds)

    @property
    def busy_cores(self) -> float | None:
        """The median run's process CPU time over its wall time (None: not recorded); the
        median, as for the latency, so that a few preempted runs do not decide it."""
        shares = [cpu / wall for cpu, wall in zip(self.cpu_seconds, self.seconds, strict=False)
                  if wall > 0]
        return statistics.median(shares) if shares else None

    def to_json(self) -> dict[str, float]:
        data = {"runs": len(self.seconds), "median_ms": self.median * 1e3,
                "p90_ms": self.p90 * 1e3, "min_ms": self.minimum * 1e3,
                "mean_ms": statistics.fmean(self.seconds) * 1e3}
        if self.threads:
            data["threads"] = self.threads
        if self.busy_cores is not None:
            data["busy_cores"] = self.busy_cores
        return data


def time_calls(call: Callable[[], object], runs: int, warmup: int = WARMUP, *,
               side: str = "") -> Latency:
    """Wall and process CPU time of ``runs`` calls of ``call``, after ``warmup`` untimed
    ones. ``side`` names the side for ``TORCH_NNAPI_BENCH_CONTEND``."""
    for _ in range(warmup):
        call()
    seconds, cpu = [], []
    for _ in range(max(1, runs)):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        cpu.append(time.process_time() - start_cpu)
        seconds.append(time.perf_counter() - start)
    if side and side in _contended_sides():
        fastest = seconds.index(min(seconds))
        seconds = [s if k == fastest else s * _INJECTED_SLOWDOWN for k, s in enumerate(seconds)]
    return Latency(seconds, cpu)


def _contended_sides() -> set[str]:
    value = os.environ.get(CONTEND_VARIABLE, "")
    return {part.strip() for part in value.split(",") if part.strip()}


def contention(latency: Latency) -> list[str]:
    """Why this side's timings cannot be trusted (empty: they can)."""
    reasons = []
    if latency.minimum > 0 and latency.median > SPREAD_LIMIT * latency.minimum:
        reasons.append(f"its median run took {latency.median / latency.minimum:.1f}x its"
                       " fastest")
    busy = latency.busy_cores
    if busy is not None and busy < STARVED_SHARE:
        reasons.append(f"the process had a core only {busy:.0%} of the wall time")
    if busy is not None and latency.threads and busy > latency.threads + SPIN_SLACK:
        reasons.append(f"{busy:.1f} cores were busy for {latency.threads} threads")
    return reasons


@contextmanager
def quiet_pools(threads: int, *, torch_threads: int | None = None) -> Iterator[None]:
    """The body runs with ``threads`` threads for the runtime's kernels and NumPy's BLAS and
    ``torch_threads`` (default ``threads``) for PyTorch's intra-op pool, after a pause that
    lets the other side's spinning workers go to sleep."""
    with num_threads(threads):
        previous = torch.get_num_threads()
        torch.set_num_threads(torch_threads or threads)
        time.sleep(SETTLE_SECONDS)
        try:
            yield
        finally:
            torch.set_num_threads(previous)


ADVICE = ("rerun when the machine is idle, with --threads 1, or with OMP_WAIT_POLICY=PASSIVE"
          " set so that PyTorch's workers sleep instead of spinning")


def refusal(sides: dict[str, Latency | None]) -> str:
    """Why no ratio of these sides can be printed (empty: it can)."""
    timed = {name: latency for name, latency in sides.items() if latency is not None}
    threads = {latency.threads for latency in timed.values()}
    if len(threads) > 1:
        counts = ", ".join(f"{name} on {latency.threads}" for name, latency in timed.items())
        return f"the sides ran on different thread counts ({counts})"
    contended = [f"the {name} runs were contended ({'; '.join(reasons)})"
                 for name, latency in timed.items() if (reasons := contention(latency))]
    if not contended:
        return ""
    return "; ".join(contended) + ": another process or thread pool competed for the cores; " \
        + ADVICE


__all__ = ["ADVICE", "CONTEND_VARIABLE", "Latency", "contention", "quiet_pools", "refusal",
           "time_calls"]
