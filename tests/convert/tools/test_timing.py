"""Whether timed runs can carry a ratio: contention read from injected timings."""

from __future__ import annotations

import torch

from torch_nnapi.convert.tools.timing import (
    CONTEND_VARIABLE,
    Latency,
    contention,
    quiet_pools,
    refusal,
    time_calls,
)


def _steady(threads: int = 2) -> Latency:
    return Latency([0.010, 0.0105, 0.011, 0.0102], [0.019, 0.020, 0.021, 0.020], threads)


def test_steady_runs_on_the_cores_are_believed():
    assert contention(_steady()) == []
    assert refusal({"NNAPI": _steady(), "eager": _steady()}) == ""


def test_runs_far_slower_than_the_fastest_are_contended():
    # the MobileNetV2: eager median 880 ms against a fastest run of 199 ms
    slowed = Latency([0.199, 0.880, 0.900, 0.870, 0.210], threads=2)
    [reason] = contention(slowed)
    assert "median run took 4.4x its fastest" in reason


def test_a_process_kept_off_the_cores_is_contended():
    starved = Latency([0.010, 0.010, 0.011], [0.003, 0.004, 0.003], threads=1)
    [reason] = contention(starved)
    assert "had a core only 30% of the wall time" in reason


def test_more_cores_busy_than_threads_means_another_pool_spun():
    spinning = Latency([0.010, 0.010, 0.010], [0.025, 0.026, 0.024], threads=1)
    [reason] = contention(spinning)
    assert "2.5 cores were busy for 1 threads" in reason


def test_no_ratio_from_a_contended_side_or_different_thread_counts():
    contended = Latency([0.001, 0.004, 0.004], [0.001, 0.004, 0.004], threads=2)
    why = refusal({"NNAPI": _steady(), "eager": contended})
    assert why.startswith("the eager runs were contended (its median run took 4.0x")
    assert "NNAPI runs" not in why and "--threads 1" in why and "OMP_WAIT_POLICY" in why
    why = refusal({"NNAPI": _steady(2), "eager": _steady(1)})
    assert why == "the sides ran on different thread counts (NNAPI on 2, eager on 1)"


def test_the_testing_knob_slows_the_named_side_only(monkeypatch):
    import itertools
    import time

    clock = itertools.count(step=0.001)  # every call of the fake clock: 1 ms later
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    monkeypatch.setenv(CONTEND_VARIABLE, "eager")
    eager = time_calls(lambda: None, 4, side="eager")
    nnapi = time_calls(lambda: None, 4, side="nnapi")
    assert [round(s * 1e3, 6) for s in nnapi.seconds] == [1, 1, 1, 1]
    assert [round(s * 1e3, 6) for s in eager.seconds] == [1, 4, 4, 4]
    assert contention(eager) and len(eager.cpu_seconds) == 4


def test_quiet_pools_sets_and_restores_pytorchs_threads():
    before = torch.get_num_threads()
    with quiet_pools(1, torch_threads=1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
