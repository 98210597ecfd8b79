"""Many threads running executions of one compilation at once, through the C library."""

from __future__ import annotations

import threading
from ctypes import byref, c_void_p

import numpy as np

from .clib import add_then_multiply_model, bind, compile_model, expect, new_execution

THREADS = 8
RUNS_PER_THREAD = 20
SHAPE = (64, 64)


def _run(lib, compilation: c_void_p, how: str, burst: c_void_p, a, b) -> np.ndarray:
    out = np.zeros_like(a)
    execution = new_execution(lib, compilation)
    try:
        bind(lib, execution, [a, b], [out])
        if how == "compute":
            expect(lib.ANeuralNetworksExecution_compute(execution))
        elif how == "burst":
            expect(lib.ANeuralNetworksExecution_burstCompute(execution, burst))
        else:
            event = c_void_p()
            expect(lib.ANeuralNetworksExecution_startCompute(execution, byref(event)))
            expect(lib.ANeuralNetworksEvent_wait(event))
            lib.ANeuralNetworksEvent_free(event)
    finally:
        lib.ANeuralNetworksExecution_free(execution)
    return out


def test_threads_share_one_compilation(lib):
    compilation = compile_model(lib, add_then_multiply_model(lib, SHAPE))
    start = threading.Barrier(THREADS)
    failures: list[str] = []
    done = [0] * THREADS

    def worker(k: int) -> None:
        rng = np.random.default_rng(k)
        burst = c_void_p()
        try:
            expect(lib.ANeuralNetworksBurst_create(compilation, byref(burst)))
            start.wait()
            for run in range(RUNS_PER_THREAD):
                a = rng.standard_normal(SHAPE, dtype=np.float32)
                b = rng.standard_normal(SHAPE, dtype=np.float32)
                how = ("compute", "burst", "event")[(k + run) % 3]
                out = _run(lib, compilation, how, burst, a, b)
                if not np.array_equal(out, (a + b) * b):
                    failures.append(f"thread {k} run {run} ({how}): wrong result")
                done[k] += 1
        except AssertionError as e:
            failures.append(f"thread {k}: {e}")
        finally:
            lib.ANeuralNetworksBurst_free(burst)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not failures, failures
    assert done == [RUNS_PER_THREAD] * THREADS
