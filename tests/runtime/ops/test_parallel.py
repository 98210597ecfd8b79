"""Row-block splitting over threads (runtime/ops/_parallel.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from torch_nnapi.runtime.ops import _parallel


@pytest.fixture()
def fresh_pool(monkeypatch):
    """A process-wide pool of the module's own, restored afterwards."""
    monkeypatch.setattr(_parallel, "_pool", None)
    monkeypatch.setattr(_parallel, "_pool_size", 0)


def test_blocks_cover_every_row_once(monkeypatch, fresh_pool):
    monkeypatch.setenv("TORCH_NNAPI_NUM_THREADS", "3")
    rows = 1000
    hits = np.zeros(rows, np.int64)
    lock = threading.Lock()

    def work(start: int, stop: int) -> None:
        with lock:
            hits[start:stop] += 1

    _parallel.for_row_blocks(rows, 1 << 12, work)
    assert (hits == 1).all()


def test_a_replaced_pool_still_takes_work(fresh_pool):
    """An execution that got the pool before another execution needed a bigger one submits to
    the old pool afterwards: it must not have been shut down under it ("cannot schedule new
    futures after shutdown", about 1% of concurrent executions with 4 threads)."""
    small = _parallel._workers(1)
    bigger = _parallel._workers(3)
    assert bigger is not small
    assert small.submit(lambda: 42).result(timeout=10) == 42


def test_concurrent_calls_with_growing_thread_counts(monkeypatch, fresh_pool):
    counts = iter(range(2, 10**6))
    count_lock = threading.Lock()

    def next_count() -> int:  # every call asks for more threads: the pool keeps growing
        with count_lock:
            return next(counts) % 6 + 2

    monkeypatch.setattr(_parallel, "thread_count", next_count)
    errors: list[BaseException] = []

    def caller() -> None:
        try:
            for _ in range(30):
                _parallel.for_row_blocks(64, 1 << 16, lambda start, stop: None)
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=caller) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
